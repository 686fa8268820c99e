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

/// Host (CPU) time to issue one layer's forward, by block in issue order (layer_host_blocks in
/// pass_cost.cc says what each block issues and where its per-call costs come from). Zero where
/// CUDA graphs capture the block or the cluster states no host costs.
struct HostBlocks {
  Seconds attention{0}, router{0}, preprocess{0}, dispatch{0}, fc1{0}, act{0}, fc2{0}, shared{0}, combine{0};
  Seconds backward_gemms{0};  ///< what the backward issues beyond the forward's blocks
  [[nodiscard]] Seconds total() const {
    return attention + router + preprocess + dispatch + fc1 + act + fc2 + shared + combine;
  }
  /// What the backward issues: the forward's blocks but the dispatcher's preprocess (token counts
  /// and split sizes, which have no gradient), and its extra GEMM calls.
  [[nodiscard]] Seconds backward() const { return total() - preprocess + backward_gemms; }
};
[[nodiscard]] HostBlocks layer_host_blocks(const StepSpec& s, const cost::LayerShape& sh);

/// The kernels of one layer's passes on one rank, and how they are priced.
struct LayerKernels {
  cost::LayerShape shape;  ///< the rank's shapes (MoE experts: the busiest rank's tokens)
  cost::ComputeContext ctx;
  std::vector<cost::Op> forward, backward;
  std::vector<cost::Op> recompute;  ///< re-run inside backward (full: the forward; selective: attention)
  /// Once per micro-batch beside the layers: the word embedding on the first stage, and the final
  /// norm, LM head and cross-entropy on the last (what embedding_cost and head_cost price). Filled
  /// by listed_kernels only: the step prices them in embedding_cost and head_cost.
  std::vector<cost::Op> embedding_forward, embedding_backward, head_forward, head_backward;
  HostBlocks host;  ///< what the CPU spends issuing the layer
  /// A hybrid model's listing (listed_kernels): the block kinds it holds one layer of, in order,
  /// each kernel named "C:kernel" by its block's pattern character; empty otherwise.
  std::string blocks;
};
[[nodiscard]] LayerKernels layer_kernels(const StepSpec& s);
/// layer_kernels with the kernels beside the layers too: what `--kernels` lists.
[[nodiscard]] LayerKernels listed_kernels(const StepSpec& s);

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

/// Transformer Engine quantizes each Linear's weight once per step, on the first micro-batch, and
/// reuses that copy for the others (transformer_engine/pytorch/module/linear.py: the weight
/// workspace is refreshed when is_first_microbatch is True, cached otherwise; Megatron-Core sets
/// the flag per step, MegatronModule.set_is_first_microbatch; docs/research/low-precision-training.md
/// sec. 2.1). What quantizing `elems` weights in `tensors` tensors costs one rank, as a standalone
/// tensor of the run's recipe (cost::quant_cost: Hopper adds the transposed copy its dgrad reads;
/// MXFP8 writes row- and column-wise copies; NVFP4's 2D weight scaling, no Hadamard transform: an
/// amax pass and the cast, ~5 bytes in 2 kernels). With fp8 parameters (fp8_param_gather) the
/// per-tensor-scaled weight is already fp8: what remains is Hopper's transpose (read 1, write 1);
/// MXFP8 parameters are gathered in bf16 and cast on the way out, the full cost. Zero for 16-bit
/// runs.
[[nodiscard]] Seconds weight_quantize_time(const StepSpec& s, double elems, double tensors);

/// Sums per category: `a` + `b` * k.
void accumulate(PassCost& a, const PassCost& b, double k = 1.0);

}  // namespace dtsim::schedule
