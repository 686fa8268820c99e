#pragma once
// (Not named nccl.h: this directory is on the include path, and <nccl.h> must find NCCL's.)
// `dtsim-bench nccl`: NCCL collectives over a size sweep, measured as NVIDIA's nccl-tests measures
// them (warm-up, then per size an out-of-place and an in-place loop timed on the host around the
// launches and a stream synchronise, the slowest rank's mean per iteration, then one checked run).
#include "nccl_options.h"

namespace dtsim::bench {

/// Runs the command with checked options: the plan (--dry-run, no device), or the sweeps on the
/// launcher's ranks with rank 0 printing nccl-tests' tables or the JSON. Returns the exit code
/// (0, or 1 when a check found wrong elements); throws on CUDA, NCCL or launch failures.
[[nodiscard]] int run_nccl_command(const NcclOptions& o);

}  // namespace dtsim::bench
