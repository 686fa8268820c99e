#pragma once
// Memory per GPU: model states sharded by ZeRO stage, activations per Korthikanti et al. 2022,
// transient buffers and an allocator allowance, for every pipeline stage.
#include <cstdint>
#include <string>
#include <vector>

#include "core/units.h"
#include "cost/layer_shape.h"
#include "spec/calibration.h"
#include "spec/stack.h"
#include "spec/cluster.h"
#include "spec/job.h"
#include "spec/model.h"

namespace dtsim::cost {

/// Fixed allowance for the CUDA context, cuBLAS/cuDNN workspaces and NCCL buffers (an
/// assumption: PyTorch + NCCL typically hold 1-2 GiB outside the caching allocator).
inline constexpr double kFixedOverheadGiB = 1.5;
/// Allocator reserve: PyTorch's caching allocator fragments; we add this share of activations
/// and transient buffers (an assumption; Megatron-LM's own estimator adds 5% without SP).
inline constexpr double kAllocatorReserve = 0.10;

/// Bytes per parameter of each model state (Megatron-LM docs/source/api-guide/dist_optimizer.md;
/// ZeRO paper sec. 3: 2 + 2 + K with K = 12 for mixed-precision Adam).
struct StateBytes {
  double weights = 2;    ///< 16-bit parameters (FSDP: the fp32 parameters, 4)
  double gradients = 4;  ///< fp32 main grads (Megatron-LM) or 2 (ZeRO paper, --grad-dtype)
  double optimizer = 12; ///< Adam: fp32 master, m, v; SGD with momentum: 8 (FSDP: no master, 8 and 4)
  int weights_shard_stage = 3;  ///< the ZeRO stage from which the weights are sharded (FSDP: 2)
  double gathered = 2;   ///< a gathered parameter (ZeRO-3 layers, FSDP's SHARD_GRAD_OP weights)
};

/// Memory of one GPU on one pipeline stage.
struct StageMemory {
  std::int64_t stage = 0;
  double parameters = 0;    ///< parameter count held (before ZeRO-3 sharding)
  Bytes weights;
  Bytes gradients;
  Bytes optimizer;
  Bytes activations;
  Bytes other;              ///< transient buffers, fixed overhead, allocator reserve
  [[nodiscard]] Bytes total() const { return weights + gradients + optimizer + activations + other; }
};

/// Memory of the whole job: every stage, and the most loaded one.
struct MemoryEstimate {
  std::vector<StageMemory> stages;
  std::size_t peak_stage = 0;
  Bytes capacity;
  [[nodiscard]] const StageMemory& peak() const { return stages[peak_stage]; }
  [[nodiscard]] bool fits() const { return peak().total() <= capacity; }
};

/// Parameters one tensor-parallel rank holds of one layer: weight matrices split by tp (experts
/// also by ep), norms and the router replicated.
struct LocalLayerParams {
  double dense = 0;   ///< sharded over the full dp*cp group by ZeRO
  double expert = 0;  ///< expert weights, sharded over the expert-data-parallel group dp*cp/ep
  [[nodiscard]] double total() const { return dense + expert; }
};

/// What one rank holds of one layer under `par`.
[[nodiscard]] LocalLayerParams local_layer_params(const spec::Model& m, const spec::Parallel& par);

/// LoRA adapter parameters one rank holds of one layer (spec::Training::peft), by how ZeRO shards
/// them: attention and dense-MLP adapters with the dense part, expert adapters with the experts.
[[nodiscard]] LocalLayerParams local_lora_params(const spec::Model& m, const spec::Parallel& par,
                                                 const spec::Training& t);
/// The same from a layer's shape (LayerShape::lora_rank, lora_targets).
[[nodiscard]] LocalLayerParams lora_params(const LayerShape& s);

/// Parameters outside the layers that stage `stage` holds: embedding (+ learned positions) on the
/// first, final norm and LM head on the last; a tied embedding is also kept on the last stage
/// when pp > 1 (Megatron-LM keeps a copy and all-reduces its gradient). Vocabulary padded.
[[nodiscard]] double non_layer_params(const spec::Model& m, const spec::Parallel& par, std::int64_t stage);

/// State bytes for a training config (grad dtype, optimizer) under a stack (FSDP's fp32 parameters).
[[nodiscard]] StateBytes state_bytes(const spec::Training& t, int zero_stage, const spec::Software& sw = {});

/// Model-state bytes per GPU for `params` parameters sharded over `dp` ranks at ZeRO `stage`
/// (Rajbhandari et al. SC'20, Figure 1 and sec. 5).
[[nodiscard]] Bytes model_state_bytes(double params, int stage, double dp, const StateBytes& b);
/// The weights' part of it.
[[nodiscard]] Bytes weight_state_bytes(double params, int stage, double dp, const StateBytes& b);

/// Activation bytes of one layer for one micro-batch (Korthikanti et al. 2022 sec. 4, generalised
/// to GQA, gated MLPs and any ffn size): sbh(10 + 24/t + 5as/(ht)) for GPT without SP; with SP the
/// 10sbh share is divided by t; selective recompute or flash attention drops the 5as/h term;
/// full recompute keeps the layer input 2sbh (/t with SP); torchtitan's per-op policy (op_sac)
/// keeps the block's input and the outputs of the operations it saves. `tp_saves_gathered`: the
/// stack keeps the sequence-parallel input its column-parallel linears gather whole for their
/// backward (spec::Software::tp_saves_gathered_input), not the local shard.
[[nodiscard]] Bytes layer_activation_bytes(const spec::Model& m, const spec::Parallel& par,
                                           const spec::Training& t, spec::AttentionKernel attn,
                                           bool tp_saves_gathered = false);

/// Micro-batches' worth of activations stage `stage` keeps in flight: 1F1B min(p - stage, m),
/// times (1 + (p-1)/(p*v)) on the first stage with interleaving (Korthikanti et al. sec. 4.2.3);
/// GPipe keeps all m.
[[nodiscard]] double inflight_microbatches(const spec::Parallel& par, std::int64_t microbatches, std::int64_t stage);

/// Full estimate for every stage of the job.
/// The least recomputation with which the job fits (the validation README's rule, and `--recompute
/// auto`): none, then selective, then full recompute of the first N layers of each pipeline chunk
/// for N = 1, 2, ... (Megatron's block method, as recipes tune recompute_num_layers), then all of
/// them. Returns `t` with recompute and recompute_layers set (full of every layer if nothing fits).
[[nodiscard]] spec::Training least_recompute_that_fits(const spec::Model& m, const spec::Cluster& c,
                                                       const spec::Parallel& par, spec::Training t,
                                                       const spec::Software& sw);
/// "none", "selective", "full", or "full (first N layers of each chunk)".
[[nodiscard]] std::string recompute_text(const spec::Training& t);

/// `sw`: the stack's attention kernel, cross-entropy and how its ZeRO keeps parameters.
[[nodiscard]] MemoryEstimate estimate_memory(const spec::Model& m, const spec::Cluster& c, const spec::Parallel& par,
                                             const spec::Training& t, const spec::Software& sw);
/// Bytes per logit the LM head's cross-entropy holds at its peak, beside the 16-bit logits' own
/// (cost::estimate_memory's transient on the last stage).
[[nodiscard]] double cross_entropy_peak_bytes(spec::CrossEntropy ce);

}  // namespace dtsim::cost
