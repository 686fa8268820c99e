// dtsim: the only place that prints errors or chooses exit codes.
// 0 success, 2 bad input (one line on stderr), 1 internal error.
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>

#include "cli/commands.h"
#include "core/errors.h"
#include "core/text.h"

namespace {

// Follows argv down the subcommand tree; describes the first word that is not a subcommand of
// the level it appears at (empty when every word matched).
std::string unknown_subcommand(CLI::App& app, int argc, char** argv) {
  CLI::App* level = &app;
  std::string path;
  auto names = [](CLI::App* a) {
    std::string out;
    for (CLI::App* sub : a->get_subcommands({})) out += (out.empty() ? "" : ", ") + sub->get_name();
    return out;
  };
  for (int i = 1; i < argc && argv[i][0] != '-'; ++i) {
    if (level->get_subcommands({}).empty()) return "";
    CLI::App* next = nullptr;
    for (CLI::App* sub : level->get_subcommands({}))
      if (sub->get_name() == argv[i]) next = sub;
    if (next == nullptr) return path + "expected a subcommand (" + names(level) + "), got \"" + argv[i] + "\"";
    level = next;
    path += level->get_name() + ": ";
  }
  if (level->get_subcommands({}).empty()) return "";
  return path + "expected a subcommand (" + names(level) + "), got nothing";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dtsim: distributed-training simulator and cost modeler"};
  app.require_subcommand(1);
  dtsim::cli::Action action;
  dtsim::cli::add_commands(app, action);
  try {
    app.parse(argc, argv);
    return action();
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::RequiredError& e) {
    // CLI11 says only "A subcommand is required"; name what was expected and what was found.
    if (std::string msg = unknown_subcommand(app, argc, argv); !msg.empty()) {
      std::cerr << "dtsim: " << dtsim::printable(msg) << "\n";
      return 2;
    }
    std::cerr << "dtsim: " << dtsim::printable(e.what()) << " (see --help)\n";
    return 2;
  } catch (const CLI::ParseError& e) {
    std::cerr << "dtsim: " << dtsim::printable(e.what()) << " (see --help)\n";
    return 2;
  } catch (const dtsim::SpecError& e) {
    std::cerr << "dtsim: " << dtsim::printable(e.what()) << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "dtsim: internal error: " << dtsim::printable(e.what()) << "\n";
    return 1;
  }
}
