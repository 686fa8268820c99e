#pragma once
// Collective samples for the fit from what users measure: nccl-tests logs and dtsim-bench
// nccl sweeps.
#include <string>
#include <vector>

#include "calibrate/collective_fit.h"
#include "calibrate/nccl_tests.h"
#include "spec/bench_file.h"

namespace dtsim::calibrate {

/// One sample per row of `log`: its size and the geometric mean of the out-of-place and in-place
/// times (the out-of-place time alone when the row has no in-place one). Throws SpecError naming
/// `flag` when the log does not say how many ranks share a node (pass --gpus-per-node).
[[nodiscard]] std::vector<CollectiveSample> samples_from_log(const NcclTestsLog& log, const std::string& flag);

/// One sample per size of every sweep of a `dtsim-bench nccl` file, timed as samples_from_log.
[[nodiscard]] std::vector<CollectiveSample> samples_from_bench(const spec::BenchFile& f);

}  // namespace dtsim::calibrate
