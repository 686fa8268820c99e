#pragma once
// `dtsim simulate --kernels`: one layer's kernels on one rank, each with its shape, work, traffic,
// priced time and what bounds it, so a user sees where a pass's time goes and which calibration
// term (GEMM curve, attention efficiency, HBM efficiency, per-kernel cost) prices it.
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "schedule/pass_cost.h"

namespace dtsim::report {

/// Forward, recompute and backward kernels as tables with a total per pass.
[[nodiscard]] std::string kernels_table(const schedule::LayerKernels& k);
/// {"forward": [...], "recompute": [...], "backward": [...]}: per kernel {name, kind, m, n, k,
/// batch, kernels, flops, bytes, compute_s, memory_s, overhead_s, time_s, efficiency, bound}.
[[nodiscard]] nlohmann::json kernels_json(const schedule::LayerKernels& k);

}  // namespace dtsim::report
