#include "cli/commands.h"

#include <iostream>
#include <sstream>

namespace dtsim::cli {

void add_commands(CLI::App& app, Action& action, bool with_check) {
  add_show(app, action);
  add_plan(app, action);
  add_simulate(app, action);
  add_memory(app, action);
  add_validate(app, action);
  add_bench(app, action);
  add_collective(app, action);
  add_calibrate(app, action);
  add_merge(app, action);
  if (with_check) add_check(app, action);
}

int run_in_process(const std::vector<std::string>& args, std::string& out) {
  // Sends std::cout to a string until it goes out of scope, however the command ends.
  struct Capture {
    std::ostringstream text;
    std::streambuf* old = std::cout.rdbuf(text.rdbuf());
    ~Capture() { std::cout.rdbuf(old); }
  } capture;
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes the vector last-first
  CLI::App app{"dtsim"};
  app.require_subcommand(1);
  Action action;
  add_commands(app, action, false);
  app.parse(reversed);
  int status = action ? action() : 2;
  out = capture.text.str();
  return status;
}

}  // namespace dtsim::cli
