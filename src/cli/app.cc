#include "cli/commands.h"

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
  if (with_check) add_check(app, action);
}

}  // namespace dtsim::cli
