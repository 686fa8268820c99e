// Job flags: the input's lines are the arguments of `dtsim simulate` or `dtsim memory` (first
// line), run in-process as the CLI runs them (the simulation included), stdout discarded.
#include <iostream>
#include <sstream>
#include <vector>

#include "cli/commands.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  dtsim::fuzz::use_source_tree();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args;
  std::string line;
  std::istringstream in(dtsim::fuzz::text(data, size));
  while (std::getline(in, line)) args.push_back(line);
  if (args.empty() || (args[0] != "simulate" && args[0] != "memory")) return 0;
  // No SimGrid (a child process per run) and no files written from a fuzzer.
  for (const std::string& a : args)
    if (a.rfind("--network", 0) == 0 || a.rfind("--trace", 0) == 0 || a.rfind("--engine", 0) == 0 ||
        a.rfind("--residuals", 0) == 0 || a.rfind("--cotenant", 0) == 0)
      return 0;
  std::string out;
  try {
    (void)dtsim::cli::run_in_process(args, out);
  } catch (const CLI::Error&) {
  } catch (const dtsim::SpecError&) {
  }
  return 0;
}
