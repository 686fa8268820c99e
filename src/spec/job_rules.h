#pragma once
// Cross-checks of a job layout, as Megatron-LM applies them (megatron/training/arguments.py
// validate_args, megatron/core/parallel_state.py), with errors naming the flag or JSON pointer.
#include <cstdint>
#include <functional>
#include <string>

#include "spec/cluster.h"
#include "spec/job.h"
#include "spec/model.h"

namespace dtsim::spec {

/// Maps a job field ("tp", "gbs", "seq", ...) to where the user wrote it: a flag by default,
/// "file:/cases/3/parallel/tp" for a validation case.
using FieldNamer = std::function<std::string(const std::string& field)>;

/// Names fields as dtsim's command-line flags ("--tp", "--gbs", ...).
[[nodiscard]] FieldNamer flag_namer();

/// The most forward passes (micro-batches x pp x vp) a step may have: the op graph's size.
inline constexpr std::int64_t kMaxPasses = std::int64_t{1} << 21;

/// Throws SpecError for the first rule the job breaks: tp*pp*dp*cp = gpus, heads and kv_heads
/// divisible by tp, layers vs pp*vp, global batch vs micro-batch*dp (at most kMaxPasses passes), ep vs experts and dp*cp,
/// sequence vs cp (and tp with SP), fp8 support of the GPU, the per-stage layer split.
void check_job(const Model& model, const Cluster& cluster, std::int64_t gpus, const Parallel& par,
               const Training& train, const FieldNamer& name = flag_namer());

/// Micro-batches per step per data-parallel replica: gbs / (mbs * dp).
[[nodiscard]] std::int64_t micro_batches(const Parallel& par, const Training& train);

}  // namespace dtsim::spec
