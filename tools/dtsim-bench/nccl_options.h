#pragma once
// `dtsim-bench nccl` flags: nccl-tests' own (-b -e -f -i -w -n -c -g) plus the launch mode,
// parsed and checked without a device so a bad command line exits 2 before any CUDA call.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "nccl_plan.h"

namespace CLI {
class App;
}

namespace dtsim::bench {

/// A flag's value is wrong; the message reads "--flag: expected X, got Y" (main exits 2).
struct OptionError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// How the ranks start: one process driving every GPU of a node, one MPI process per GPU, or one
/// process per GPU started by anything (srun, a script) meeting through a file.
enum class NcclLauncher { single_process, mpi, file };

/// "single-process", "mpi", "file".
[[nodiscard]] const char* to_string(NcclLauncher l);

/// What `dtsim-bench nccl` was asked to do; exists only valid (resolve_nccl_options).
struct NcclOptions {
  std::vector<NcclCollective> ops = all_collectives();
  std::int64_t min_bytes = 8;
  std::int64_t max_bytes = std::int64_t{128} << 20;
  std::int64_t step_factor = 2;            ///< > 1: multiply; 1: add step_bytes (nccl-tests' rule)
  std::int64_t step_bytes = std::int64_t{1} << 20;
  NcclDtype dtype = NcclDtype::float32;
  int warmup_iters = 5;
  int iters = 20;
  bool check = true;
  NcclLauncher launcher = NcclLauncher::single_process;
  std::optional<int> gpus;                 ///< single-process: GPUs to use (nullopt: all visible)
  std::optional<int> rank;                 ///< file: this process's rank; mpi: the environment's, for --dry-run
  std::optional<int> nranks;               ///< file: ranks in all; mpi: from the environment, for --dry-run
  std::optional<int> device;               ///< mpi, file: CUDA device (nullopt: the local rank)
  std::string bootstrap_file;              ///< file: where rank 0 publishes the NCCL unique id
  int bootstrap_timeout_s = 120;
  bool json = false;
  bool dry_run = false;
  bool operator==(const NcclOptions&) const = default;
};

/// The flags as given: long name ("--min-bytes") to its text, for the flags present only.
struct NcclArgs {
  std::map<std::string, std::string> given;
  bool json = false;
  bool dry_run = false;
};

/// Reads an environment variable (tests pass a fake).
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

/// The process environment (getenv).
[[nodiscard]] EnvLookup process_env();

/// Declares the flags on the `nccl` subcommand, recording each given one into `args`.
void add_nccl_options(CLI::App& sub, NcclArgs& args);

/// Checks and converts the flags, filling defaults from `env` (OMPI_COMM_WORLD_* first, then
/// SLURM_*); `have_mpi` says whether this binary has the MPI launcher. Throws OptionError.
[[nodiscard]] NcclOptions resolve_nccl_options(const NcclArgs& args, const EnvLookup& env, bool have_mpi);

/// A size in bytes: digits with an optional K, M or G suffix (1024-based), 1 to 1T. `flag`
/// names the option in the OptionError thrown for anything else.
[[nodiscard]] std::int64_t parse_size(const std::string& flag, const std::string& text);

/// A decimal integer in [lo, hi]; throws OptionError naming `flag` otherwise.
[[nodiscard]] int parse_int(const std::string& flag, const std::string& text, int lo, int hi);

/// The ranks a plan is counted for: -g, --nranks or the environment's; nullopt when unknown.
[[nodiscard]] std::optional<int> planned_ranks(const NcclOptions& o);

}  // namespace dtsim::bench
