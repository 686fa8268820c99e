#pragma once
// Per-op FLOPs, bytes and time of a transformer layer's forward and backward passes on one
// rank. Time is a roofline: the larger of FLOPs / (peak x GEMM efficiency) and bytes /
// (HBM bandwidth x memory efficiency), plus a fixed cost per kernel.
#include <cstdint>
#include <string>
#include <optional>
#include <vector>

#include "core/units.h"
#include "cost/layer_shape.h"
#include "spec/calibration.h"
#include "spec/stack.h"
#include "spec/gpu.h"

namespace dtsim::cost {

enum class OpKind { gemm, attention, memory };

/// Which of a linear layer's three GEMMs an op is: forward, data gradient, weight gradient.
enum class GemmPass { fprop, dgrad, wgrad };

/// One kernel (or a group of identical kernels) on one rank.
struct Op {
  std::string name;
  OpKind kind = OpKind::memory;
  double m = 0, n = 0, k = 0;  ///< GEMM dimensions (output m x n, reduction k)
  double batch = 1;            ///< independent GEMMs of that shape (heads, local experts)
  Flops flops;                 ///< 2 per multiply-add
  Bytes bytes;                 ///< HBM traffic
  double kernels = 1;
  bool backward = false;       ///< attention: use the backward efficiency
  double sm_share = 1;         ///< share of the GPU's SMs the kernel runs on (others reserved)
  double elem_bytes = 0;       ///< GEMM: bytes per operand element (2 for 16 bits, 1.5 for fp8)
  /// GEMM output traffic per element relative to a 16-bit store: 2 x main-grad bytes / 2 when
  /// the weight-gradient GEMM accumulates into the main grads (reads and writes them).
  double epilogue = 1;
  /// Attention: multiplies the calibrated efficiency (below 1 for work the FLOPs do not count:
  /// dropout's random numbers inside fused attention).
  double efficiency_scale = 1;
  /// Attention: FlashAttention-2's kernels, at the profile's flash2 ratio of its flash curve.
  bool flash2 = false;
  /// Attention: FlashAttention in Triton, FlashAttention-2's time x kTritonFwd / kTritonBwd.
  bool flash_triton = false;
  /// GEMM outside Transformer Engine's fp8/fp4 autocast (Megatron-Core's LM head and MoE router):
  /// it runs in bf16 whatever the run's precision.
  bool bf16_only = false;
  /// GEMM: the `batch` matrices are one strided-batched kernel (torch.bmm / baddbmm: cuBLAS
  /// gemmStridedBatched), whose grid holds every matrix's output tiles at once, so tile
  /// parallelism (the curve's mn term) sees batch x m x n; otherwise each of the batch is priced
  /// as its own launch (TP-overlap chunks run one after another).
  bool strided_batch = false;
  /// GEMM: which of a linear layer's three GEMMs this is (gemm_backward sets dgrad and wgrad).
  GemmPass pass = GemmPass::fprop;
  /// Memory op: work bound by the SMs' issue rate (instructions neither the tensor cores' fast
  /// path nor HBM limits), in SM cycles: it takes at least sm_cycles / (sm_count x clock).
  double sm_cycles = 0;
};

/// How Transformer Engine's userbuffer TP overlap reshapes the layer's GEMMs (TE
/// `initialize_ub` defaults, transformer_engine/pytorch/module/base.py): "ring_exchange" GEMMs
/// (QKV and FC1 forward, projection and FC2 data gradients) run as `ring_splits` = tp chunks of
/// tokens/tp rows, each overlapped with a copy-engine p2p step; "pipeline" GEMMs (projection and
/// FC2 forward, reduce-scatter overlap) run as `pipeline_splits` = 4 chunks on the SMs left after
/// `num_sm` = 16 are reserved for the communication kernel (`set_sm_margin`). The
/// remaining ("bulk") overlaps keep their GEMM whole and share the SMs.
struct TpOverlapShape {
  double ring_splits = 1;
  /// The projection's and FC2's forward GEMMs: chunks and share of the SMs (spec::TpOverlapRs).
  double proj_splits = 1, proj_sm_share = 1;
  double fc2_splits = 1, fc2_sm_share = 1;
  bool proj_ring = false, fc2_ring = false;  ///< by ring exchange (its partial chunks summed after)
};

/// Which element-wise chains the stack runs as one kernel (Megatron-LM --bias-gelu-fusion,
/// --bias-dropout-fusion, Megatron-Core apply_rope_fusion; Transformer Engine), or as the separate
/// PyTorch ops of eager model code (torchtitan, Hugging Face): each intermediate is written and
/// read back, one kernel per op.
struct Fusions {
  bool activation = true;  ///< bias + activation (and the gate's multiply)
  bool residual = true;    ///< bias + dropout + residual add
  bool rope = true;        ///< rotary embedding of Q and K
  bool rms_norm = true;    ///< RMSNorm (PyTorch's LayerNorm is one native kernel either way)
  /// The linears add their biases in the GEMM's epilogue (PyTorch nn.Linear: addmm, cuBLASLt's bias
  /// epilogue), each bias gradient a reduction of the output gradient of its own; false: the bias
  /// is added by the activation or bias-dropout-add (Megatron's skip_bias_add), fused or not.
  bool bias_in_gemm = false;
  /// The attention runs FlashAttention's varlen kernel on unpadded rows (flash_attn.bert_padding):
  /// Q, K and V gathered into packed rows and the output scattered back, every layer.
  bool attention_unpad = false;
  /// fp8 runs: the scaling recipe, and whether the GPU's fp8 GEMMs need transposed operand copies
  /// (Hopper; see fp8_needs_transpose). They decide the quantization kernels (quantize_ops).
  spec::Fp8Recipe fp8_recipe = spec::Fp8Recipe::delayed;
  bool fp8_transpose = true;
  bool operator==(const Fusions&) const = default;
};

/// fp8 tensor-core GEMMs on Hopper (sm_90) take only the TN operand layout, so Transformer Engine
/// keeps a transposed copy of each quantized operand for dgrad and wgrad; Blackwell (sm_100, the
/// first generation with fp4 tensor cores) takes every layout (docs/research/low-precision-training.md).
[[nodiscard]] bool fp8_needs_transpose(const spec::Gpu& gpu);

/// Quantizing `elements` weights held in `tensors` tensors once, as Transformer Engine does on a
/// step's first micro-batch (schedule::weight_quantize_time): a standalone tensor of `recipe`
/// (with the transposed copy where `transpose`), NVFP4's 2D-scaled weights, or with fp8
/// parameters (`fp8_params`) only Hopper's transpose -- MXFP8 parameters, gathered in bf16, take
/// the full cast. No bytes for 16-bit precisions.
[[nodiscard]] Op weight_quantize_op(spec::Dtype precision, spec::Fp8Recipe recipe, bool transpose, bool fp8_params,
                                    double elements, double tensors);

/// The quantization kernels of an fp8 or fp4 (NVFP4) layer pass (Transformer Engine, per Linear):
/// each GEMM input quantized in forward (its producer -- a norm or the activation -- fused where TE
/// fuses it), each output gradient in backward; weights are quantized once per step (weight_quantize_op).
[[nodiscard]] std::vector<Op> quantize_ops(const LayerShape& s, const Fusions& f, bool backward,
                                           spec::Dtype precision = spec::Dtype::fp8);

/// The TpOverlapShape of a job: none when tp == 1 or overlap is off.
[[nodiscard]] TpOverlapShape tp_overlap_shape(std::int64_t tp, bool tp_comm_overlap, std::int64_t sm_count,
                                              const spec::TpOverlapRs& rs = {});

/// What the ops are priced with.
struct ComputeContext {
  const spec::Gpu* gpu = nullptr;
  const spec::ComputeCalibration* cal = nullptr;
  spec::Dtype precision = spec::Dtype::bf16;  ///< GEMM input type (fp8 = Transformer Engine recipe)
  double pace = 1;  ///< multiplies every kernel's time: the job's slowest GPU (slowest_gpu_pace)
  bool mxfp8 = false;  ///< fp8 GEMMs are block-scaled (MXFP8): ComputeCalibration::mxfp8_gemm_time
};

/// MoE: the busiest of `ep` expert-parallel ranks' tokens over the mean when each of its
/// `mean_slots` routed token-slots per micro-batch picks an expert uniformly (force-balanced
/// routing: random logits, Megatron-Core moe_router_force_load_balancing): a rank's count is
/// Binomial(ep x mean_slots, 1/ep), the busiest mean + sd x E[max of ep normals], so
/// 1 + expected_max_normal(ep) x sqrt((1 - 1/ep) / mean_slots); times (1 + `skew`) for routing a
/// trained router leaves uneven. Every rank waits for the busiest at the combine all-to-all.
[[nodiscard]] double moe_busiest_rank(std::int64_t ep, double mean_slots, double skew);

/// Expected maximum of n independent standard normal variables, by Blom's (1958) order-statistic
/// approximation Phi^-1((n - 3/8) / (n + 1/4)); 0 for n = 1.
[[nodiscard]] double expected_max_normal(std::int64_t n);

/// Kernel-time multiplier of a synchronous job on `gpus` GPUs whose compute speeds spread with
/// relative standard deviation `spread` around the profile's (one typical GPU's) speed: every
/// TP, CP, PP and DP group waits for its slowest member each step, so the job runs at the pace of
/// its slowest GPU, 1 + spread * E[max of `gpus` standard normals].
[[nodiscard]] double slowest_gpu_pace(double spread, std::int64_t gpus);

/// GEMM efficiency from the profile's curve (GPU `gpu`'s own when the profile has one); falls back
/// to the bf16 curve for fp16 and vice versa.
[[nodiscard]] double gemm_efficiency(const spec::ComputeCalibration& cal, spec::Dtype d, double m, double n, double k,
                                     double epilogue = 1.0, std::string_view gpu = {});

/// The roofline terms of one op: its math at the priced efficiency, its HBM traffic, the fixed
/// cost of its kernels; `total` = (max(compute, memory) + overhead) x pace (see file comment).
struct OpTiming {
  Seconds compute{0}, memory{0}, overhead{0}, total{0};
  double efficiency = 0;  ///< GEMM / attention: the fraction of the peak its math runs at
  bool sm_bound = false;  ///< a memory op whose SM cycles (Op::sm_cycles) outlast its traffic
  [[nodiscard]] bool memory_bound() const { return memory > compute; }
};
[[nodiscard]] OpTiming op_timing(const Op& op, const ComputeContext& ctx);
/// Roofline time of one op: op_timing(op, ctx).total.
[[nodiscard]] Seconds op_time(const Op& op, const ComputeContext& ctx);
/// Sum of op_time over `ops`.
[[nodiscard]] Seconds ops_time(const std::vector<Op>& ops, const ComputeContext& ctx);

/// One LoRA-adapted linear of a layer on one rank: rows it computes, its rank-local input and
/// output widths, and how many adapters it holds (one per local expert for expert linears).
struct LoraTarget {
  std::string name;
  double rows = 0, in = 0, out = 0, adapters = 1;
  bool expert = false;  ///< an expert linear (its adapters shard with the experts)
  /// Adapter weights: A (in x r) and B (r x out) per adapter.
  [[nodiscard]] double params(double rank) const { return rank * (in + out) * adapters; }
};
/// The adapted linears of a layer (LayerShape::lora_rank, lora_targets); empty without LoRA.
[[nodiscard]] std::vector<LoraTarget> lora_targets(const LayerShape& s);

/// LoRA adapter ops of one layer's targeted linears, forward or backward; empty without adapters.
[[nodiscard]] std::vector<Op> lora_ops(const LayerShape& s, bool backward);

/// Forward ops of one layer: norms, QKV, attention core, projection, residuals, MLP or MoE.
[[nodiscard]] std::vector<Op> layer_forward(const LayerShape& s, spec::AttentionKernel attn, spec::Dtype precision,
                                            const TpOverlapShape& overlap = {}, const Fusions& fusions = {});
/// Backward ops: data and weight gradients of each GEMM, attention backward, element-wise grads.
/// `accumulate_into`: the main-grad type the weight-gradient GEMMs accumulate into (gradient-
/// accumulation fusion: C += A B in the GEMM's epilogue), none when they write a fresh 16-bit output.
[[nodiscard]] std::vector<Op> layer_backward(const LayerShape& s, spec::AttentionKernel attn, spec::Dtype precision,
                                             const TpOverlapShape& overlap = {},
                                             std::optional<spec::Dtype> accumulate_into = std::nullopt,
                                             const Fusions& fusions = {});
/// The ops of a layer's `forward` that selective recompute re-runs inside the backward, for the
/// Megatron-Core modules in `modules` (spec::recompute_module bits; core_attn is the attention core
/// of Korthikanti et al. 2022 sec. 5). Only kernels: the collectives of a recomputed block (TP
/// around a dense MLP, EP around an MoE block) are the caller's.
[[nodiscard]] std::vector<Op> selective_recompute(const std::vector<Op>& forward, const LayerShape& s,
                                                  std::uint32_t modules);

/// Embedding lookup forward (first stage) and its gradient scatter-add.
[[nodiscard]] std::vector<Op> embedding_ops(const LayerShape& s, bool backward);
/// The LM head's cross-entropy over `logits` elements (tokens x local vocabulary, bf16), forward or
/// backward, as implementation `ce` runs it (spec::CrossEntropy).
[[nodiscard]] Op cross_entropy_op(double logits, spec::CrossEntropy ce, bool backward);
/// LM head GEMM, softmax cross-entropy (last stage), forward or backward.
[[nodiscard]] std::vector<Op> logits_ops(const LayerShape& s, spec::CrossEntropy ce, bool backward,
                                         std::optional<spec::Dtype> accumulate_into = std::nullopt);
/// Adding one micro-batch's weight gradients of `params` parameters into main grads of type
/// `main_grad` when the wgrad GEMM does not (no gradient-accumulation fusion): read the 16-bit
/// gradient, read and write the main grad, 2 + 2 x main bytes per parameter (6 for fp16 main
/// grads, 10 for fp32), one kernel per parameter tensor (Megatron-LM 2021's backward hook
/// `main_grad.add_(grad)`: docs/research/software-stacks.md sec. 2). With `cast`, the gradient is
/// first cast to a temporary of the main type (`grad.to(main)`: read 2, write main) that the add
/// then reads: 2 + 4 x main bytes (18 for fp32), two kernels per tensor.
[[nodiscard]] Op grad_accumulation_op(double params, spec::Dtype main_grad, double tensors, bool cast = false);
/// The device copies of a collective called with a list of one 16-bit tensor per rank (PyTorch
/// ProcessGroupNCCL allgather / reduce_scatter): `params` elements through a flat staging buffer,
/// one copy kernel per rank.
[[nodiscard]] Op list_collective_copies_op(double params, double ranks);
/// A ZeRO-3 fetch's own kernels on one gathered 16-bit parameter of `params` elements, as DeepSpeed
/// ran them before its PR #1188: `zero_fill`, the output buffer's torch.zeros (a fill writing 2
/// bytes per element); `norm`, the debug print's param.norm() (a reduction reading 2 bytes per
/// element). One kernel each.
[[nodiscard]] std::vector<Op> zero3_fetch_ops(double params, bool zero_fill, bool norm);
/// The kernels a stack runs on one layer's unsharded 16-bit weight gradient of `params` elements
/// on its way to the ZeRO-3 / FSDP reduce-scatter in `reduce` precision (spec::Zero3GradPath);
/// none for `direct`.
[[nodiscard]] std::vector<Op> zero3_grad_ops(double params, spec::Zero3GradPath path, spec::Dtype reduce);
/// FSDP2's copy of one gathered unit of `params` 16-bit elements out of the all-gather buffer into
/// its parameters (spec::Software::zero3_gather_copy_out).
[[nodiscard]] Op zero3_gather_copy_out_op(double params);
/// Optimizer step over `params` locally owned parameters (Adam or SGD with momentum, fp32
/// master weights; multi-tensor apply kernels) as the stack's optimizer runs it (spec::OptimizerImpl:
/// which passes, over which gradient type), memory-bound.
[[nodiscard]] Op optimizer_op(double params, const spec::Training& t, spec::OptimizerImpl impl);
/// Muon's Newton-Schulz GEMMs for one layer's weight matrices on one rank, per optimizer step, split
/// by who owns them: the dense matrices (over the data-parallel ranks) and the local experts' (over
/// the expert-data-parallel ranks).
struct MuonOps {
  std::vector<Op> dense, expert;
};
/// Megatron-Core's TensorParallelMuon (Emerging-Optimizers muon_utils.py newton_schulz, 5 "quintic"
/// steps in bf16): each 2-D weight of the layer -- the GEMM weights of its forward, the router and
/// each expert's apart, as their rank holds them (blockwise under TP) -- taken as a x b with a <= b,
/// runs per step A = X X^T (a x a, reduction b), A A (a x a x a) and the update's B X (a x b,
/// reduction a): 5 (4 a^2 b + 2 a^3) FLOPs (docs/research/muon-optimizer.md sec. 4.1).
[[nodiscard]] MuonOps muon_ops(const LayerShape& s);

/// Bytes per parameter the optimizer step moves (optimizer_op's traffic).
[[nodiscard]] double optimizer_bytes_per_param(const spec::Training& t, spec::OptimizerImpl impl);

}  // namespace dtsim::cost
