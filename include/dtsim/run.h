#pragma once
// The functions: each runs what the CLI subcommand of its name runs, in this process.
#include <string>
#include <vector>

#include "dtsim/job.h"
#include "dtsim/results.h"

namespace dtsim {

/// Simulates one step of `job` (`dtsim simulate`). Throws dtsim::Error for bad input.
[[nodiscard]] StepResult simulate(const Job& job);
/// Per-GPU memory of `job`'s layout (`dtsim memory`). Throws dtsim::Error.
[[nodiscard]] MemoryResult memory(const Job& job);
/// Searches layouts for `job`'s model, cluster, GPUs and batch (`dtsim plan`); layout fields of
/// `job` are ignored (fix them with `options.fix`). Throws dtsim::Error.
[[nodiscard]] PlanResult plan(const Job& job, const PlanOptions& options = {});
/// Predicts every case of a dtsim-validation-cases/1 file (`dtsim validate FILE`; `flags` as
/// its options, e.g. {"--no-recipes"}). Throws dtsim::Error.
[[nodiscard]] ValidateResult validate(const std::string& path, const std::vector<std::string>& flags = {});
/// Any subcommand with --json added: its JSON text (`args` starts with the subcommand, e.g.
/// {"show", "model", "gpt3-175b"}, {"calibrate", "--nccl-tests", "log.txt", "--cluster", "dgx-h100"}).
/// Throws dtsim::Error for bad input.
[[nodiscard]] std::string run_json(const std::vector<std::string>& args);
/// The dtsim version ("0.1.0").
[[nodiscard]] std::string version();

}  // namespace dtsim
