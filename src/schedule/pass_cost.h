#pragma once
// What one forward or backward pass of one micro-batch through one model chunk costs on one
// rank, split into the categories of the breakdown.
#include <cstdint>
#include <vector>

#include "cost/compute.h"
#include "schedule/graph.h"
#include "spec/calibration.h"
#include "spec/cluster.h"
#include "spec/job.h"
#include "spec/model.h"

namespace dtsim::schedule {

/// Everything a step's costs depend on.
struct StepSpec {
  const spec::Model* model = nullptr;
  const spec::Cluster* cluster = nullptr;
  spec::Parallel par;
  spec::Training train;
  const spec::Calibration* cal = nullptr;
  spec::Software software;  ///< profile defaults with the user's overrides applied
};

/// How `s` prices kernels: its GPU and profile, at the pace of the job's slowest GPU.
[[nodiscard]] cost::ComputeContext compute_context(const StepSpec& s);

/// Seconds per category of one pass.
struct PassCost {
  std::vector<Segment> segments;
  [[nodiscard]] SimTime total() const;
};

/// Costs of one layer's passes on one rank (all layers of a model are alike).
struct LayerCost {
  PassCost forward;   ///< compute + tp/cp/ep communication
  PassCost backward;  ///< recompute + compute + communication
  Flops forward_flops;     ///< hardware FLOPs of the forward (for HFU)
  Flops recompute_flops;
  /// What offloading this layer's activations adds to its forward (copy out) and backward (copy
  /// back): the part of the copy its compute does not hide (copy engines, no SMs).
  PassCost offload_forward, offload_backward;
};

/// The kernels of one layer's passes on one rank, and how they are priced.
struct LayerKernels {
  cost::LayerShape shape;  ///< the rank's shapes (MoE experts: the busiest rank's tokens)
  cost::ComputeContext ctx;
  std::vector<cost::Op> forward, backward;
  std::vector<cost::Op> recompute;  ///< re-run inside backward (full: the forward; selective: attention)
};
[[nodiscard]] LayerKernels layer_kernels(const StepSpec& s);

/// Prices one layer for `s` (see pass_cost.cc for each term's source).
[[nodiscard]] LayerCost layer_cost(const StepSpec& s, const CommPricer& net);

/// Extra forward/backward work of the first chunk of stage 0 (embedding) and the last chunk of
/// the last stage (final norm, LM head, cross-entropy), including their TP collectives.
[[nodiscard]] PassCost embedding_cost(const StepSpec& s, const CommPricer& net, bool backward);
[[nodiscard]] PassCost head_cost(const StepSpec& s, const CommPricer& net, bool backward);
/// fp8 with delayed scaling (Transformer Engine DelayedScaling, reduce_amax on): leaving a chunk's
/// fp8_autocast region (its forward) and finishing its backward, the host all-reduces the amaxes of
/// every fp8 tensor of the region over the stage's tp x cp x dp ranks with a blocking call, then
/// updates the scales (transformer_engine/pytorch/fp8.py, FP8GlobalStateManager.
/// reduce_and_update_fp8_tensors; Megatron-Core's fp8_group is its amax-reduction group): once per
/// pass, priced as `other`. `tensors` is how many fp8 tensors the pass has. Nothing for other
/// recipes and precisions.
[[nodiscard]] PassCost fp8_amax_reduction(const StepSpec& s, const CommPricer& net, double tensors);

/// Sums per category: `a` + `b` * k.
void accumulate(PassCost& a, const PassCost& b, double k = 1.0);

}  // namespace dtsim::schedule
