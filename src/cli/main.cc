// dtsim: the only place that prints errors or chooses exit codes.
// 0 success, 2 bad input (one line on stderr), 1 internal error.
#include <cstdio>
#include <exception>
#include <iostream>

#include "cli/commands.h"
#include "core/errors.h"

int main(int argc, char** argv) {
  CLI::App app{"dtsim: distributed-training simulator and cost modeler"};
  app.require_subcommand(1);
  dtsim::cli::Action action;
  dtsim::cli::add_show(app, action);
  dtsim::cli::add_simulate(app, action);
  dtsim::cli::add_memory(app, action);
  dtsim::cli::add_validate(app, action);
  dtsim::cli::add_bench(app, action);
  dtsim::cli::add_collective(app, action);
  try {
    app.parse(argc, argv);
    return action();
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "dtsim: " << e.what() << " (see --help)\n";
    return 2;
  } catch (const dtsim::SpecError& e) {
    std::cerr << "dtsim: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "dtsim: internal error: " << e.what() << "\n";
    return 1;
  }
}
