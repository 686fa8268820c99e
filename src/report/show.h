#pragma once
// Renders `dtsim show` facts as text or JSON.
#include <cstdint>
#include <string>

#include "spec/cluster.h"
#include "spec/model.h"
#include "spec/stack.h"

namespace dtsim::report {

/// Parameters, active parameters, FLOPs per token at `seq`, and per-layer breakdown.
[[nodiscard]] std::string show_model(const spec::Model& m, std::int64_t seq, bool json);
/// Peak throughput per dtype, memory, HBM bandwidth.
[[nodiscard]] std::string show_gpu(const spec::Gpu& g, bool json);
/// One version of a software stack: its switches, the defaults it fills in for fields a run leaves
/// unset, and what its recipes set per GPU.
[[nodiscard]] std::string show_stack(const spec::Stack& s, bool json);
/// Node count for `gpus` GPUs and bandwidth/latency of each link class.
[[nodiscard]] std::string show_cluster(const spec::Cluster& c, std::int64_t gpus, bool json);

}  // namespace dtsim::report
