#pragma once
// One registration function per subcommand; main.cc holds the table.
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace dtsim::cli {

/// What a subcommand does once its flags are parsed: writes to stdout, returns the exit code.
using Action = std::function<int()>;

/// Registers `dtsim show model|cluster|gpu NAME-or-FILE [--json]`.
void add_show(CLI::App& app, Action& action);
/// Registers `dtsim simulate` (one step: time, breakdown, MFU, memory, --trace).
void add_simulate(CLI::App& app, Action& action);
/// Registers `dtsim memory` (per-GPU memory breakdown and fits verdict).
void add_memory(CLI::App& app, Action& action);
/// Registers `dtsim validate FILE` (predicted vs measured step times).
void add_validate(CLI::App& app, Action& action);
/// Registers `dtsim plan` (configuration search, ranking and explanation).
void add_plan(CLI::App& app, Action& action);
/// Registers `dtsim bench` (simulation speed figures and ratios).
void add_bench(CLI::App& app, Action& action);
/// Registers `dtsim calibrate`: GEMM curves and memory efficiency fitted to dtsim-bench output.
void add_calibrate(CLI::App& app, Action& action);
/// Registers `dtsim collective`: predicted time and bus bandwidth of NCCL collectives.
void add_collective(CLI::App& app, Action& action);
/// Registers `dtsim merge FILE...`: the shards of `plan --shard I/N` combined into the plan.
void add_merge(CLI::App& app, Action& action);
/// Registers `dtsim check FILE`: dtsim-check/1 scenarios run in this process and compared.
void add_check(CLI::App& app, Action& action);

/// Every subcommand (`check` only when `with_check`: scenarios run the others, not check itself).
void add_commands(CLI::App& app, Action& action, bool with_check = true);

/// Runs `dtsim ARGS` (the subcommand first; any but `check`) in this process, its stdout captured
/// into `out`; returns its exit status. Throws what the command line would end on: CLI::Error
/// (parse errors, --help) and SpecError (bad input).
int run_in_process(const std::vector<std::string>& args, std::string& out);

}  // namespace dtsim::cli
