#pragma once
// How a training job is laid out (Parallel) and what it trains on (Training).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "spec/gpu.h"

namespace dtsim::spec {

enum class Recompute { none, selective, full, automatic };
/// adam: Adam(W) with fp32 master weights; sgd: SGD with momentum; muon: Muon (Jordan et al. 2024;
/// Megatron-Core's TensorParallelMuon with its layer-wise distributed optimizer, "dist_muon"): the
/// 2-D weights of the layers take momentum orthogonalised by Newton-Schulz iterations, the rest
/// Adam (docs/research/muon-optimizer.md).
enum class Optimizer { adam, sgd, muon };
enum class PipelineSchedule { gpipe, one_f_one_b, interleaved };

/// Parallel degrees in Megatron order (tp -> cp -> ep -> dp -> pp).
struct Parallel {
  std::int64_t tp = 1;
  std::int64_t pp = 1;
  std::int64_t dp = 1;
  std::int64_t cp = 1;
  std::int64_t ep = 1;
  /// Expert tensor-parallel degree (Megatron-Core expert_tensor_parallel_size); 0 = tp, Megatron's
  /// default. MoE layers fold their own layout over the same ranks (Liu et al. 2025, "MoE Parallel
  /// Folding", arXiv:2504.14960): etp x ep x edp = tp x cp x dp, so ep need not divide dp.
  std::int64_t etp = 0;
  std::int64_t vp = 1;                 ///< virtual pipeline chunks per stage (interleaving)
  int zero_stage = 0;                  ///< 0..3; Megatron's distributed optimizer = 1
  bool sequence_parallel = false;
  /// Explicit layers per pipeline stage; empty = balanced (cost::stage_layers).
  std::vector<std::int64_t> stage_layers;
  /// Explicit layers per model chunk, pp x vp in Megatron's virtual-stage order (entry k on stage
  /// k % pp, chunk k / pp), as a Megatron-Core pipeline layout gives them; empty = each stage's
  /// layers spread evenly over its chunks (cost::LayerPartition). Not with stage_layers.
  std::vector<std::int64_t> chunk_layers;
  bool operator==(const Parallel&) const = default;
  /// The expert tensor-parallel degree in effect (etp, or tp when 0).
  [[nodiscard]] std::int64_t expert_tp() const { return etp > 0 ? etp : tp; }
  /// Expert data-parallel degree: the ranks of a stage over etp x ep.
  [[nodiscard]] std::int64_t expert_dp() const { return tp * cp * dp / (expert_tp() * ep); }
};

/// Megatron-Core's selective-recompute modules (TransformerConfig.recompute_modules), as bits of a
/// mask: core_attn the attention kernel; layernorm the norms that are modules of their own (before
/// the experts, and before MLA's down-projections; the others are fused into the next Linear);
/// mlp a dense MLP; moe_act the experts' activation; mla_up_proj MLA's up-projections and RoPE;
/// moe the whole MoE block; shared_experts the shared experts. layernorm, moe_act and mla_up_proj
/// discard their outputs and recompute them; the others checkpoint their input. op_sac is not
/// Megatron's: torchtitan's per-op selective checkpointing (selective_ac_option "op"), which saves
/// the outputs of attention and of every odd matmul of a block and recomputes the rest.
namespace recompute_module {
inline constexpr std::uint32_t core_attn = 1u << 0, layernorm = 1u << 1, mlp = 1u << 2, moe_act = 1u << 3,
                               mla_up_proj = 1u << 4, moe = 1u << 5, shared_experts = 1u << 6, op_sac = 1u << 7;
}  // namespace recompute_module

/// The module names, in Megatron-Core's spelling, with their bits.
[[nodiscard]] const std::vector<std::pair<std::string, std::uint32_t>>& recompute_module_names();
/// Names of the modules in `mask`, comma separated ("core_attn,moe_act").
[[nodiscard]] std::string recompute_modules_text(std::uint32_t mask);
/// The mask of a comma-separated module list ("layernorm,moe_act"); throws SpecError at `where`
/// naming the list for an unknown or repeated name.
[[nodiscard]] std::uint32_t parse_recompute_modules(const std::string& text, const std::string& where);

/// Parameter-efficient fine-tuning. lora: the base model's weights are frozen -- no weight
/// gradients, main grads, optimizer states or data-parallel gradient reduction for them -- and a
/// low-rank adapter trains beside each targeted linear, y = W x + B (A x) with A rank x in and
/// B out x rank (Hu et al. 2021, "LoRA", arXiv:2106.09685, sec. 4.1).
enum class Peft { none, lora };

/// The linears LoRA adapts, as bits of a mask, in Megatron-Core's module names (NeMo 2 /
/// Megatron-Bridge LoRA target_modules): linear_qkv, linear_proj, linear_fc1, linear_fc2.
namespace lora_target {
inline constexpr std::uint32_t linear_qkv = 1u << 0, linear_proj = 1u << 1, linear_fc1 = 1u << 2, linear_fc2 = 1u << 3;
}  // namespace lora_target

/// The target names with their bits.
[[nodiscard]] const std::vector<std::pair<std::string, std::uint32_t>>& lora_target_names();
/// Names of the targets in `mask`, comma separated ("linear_qkv,linear_proj").
[[nodiscard]] std::string lora_targets_text(std::uint32_t mask);
/// The mask of a comma-separated target list; throws SpecError at `where` for an unknown or
/// repeated name.
[[nodiscard]] std::uint32_t parse_lora_targets(const std::string& text, const std::string& where);

/// The batch, sequence, precision and optimizer of one step.
struct Training {
  std::int64_t micro_batch = 1;
  std::int64_t global_batch = 1;
  std::int64_t seq_len = 2048;
  Recompute recompute = Recompute::none;
  Dtype precision = Dtype::bf16;       ///< fp16, bf16 or fp8 (GEMM inputs)
  Dtype grad_dtype = Dtype::fp32;      ///< Megatron keeps fp32 main grads; ZeRO paper: fp16
  Optimizer optimizer = Optimizer::adam;
  /// MoE routing skew: the busiest expert-parallel rank receives (1 + moe_imbalance) x the tokens
  /// chance alone gives it. 0: routing balanced by force, as published benchmarks run
  /// (Megatron-Core moe_router_force_load_balancing), leaving only the binomial spread.
  double moe_imbalance = 0;
  /// Expert capacity as a multiple of the balanced share (token-drop runs: Megatron-Core
  /// moe_expert_capacity_factor with moe_pad_expert_input_to_capacity): every expert computes
  /// exactly that many tokens, padded or dropped. 0: dropless (the busiest rank sets the pace).
  double moe_capacity_factor = 0;
  [[nodiscard]] bool moe_dropless() const { return moe_capacity_factor <= 0; }
  /// fp8/fp4 runs: transformer layers at the start and end of the model kept in bf16 (Megatron-Core
  /// --first-last-layers-bf16 with --num-layers-at-start/end-in-bf16; Transformer Engine recipes).
  std::int64_t bf16_layers_start = 0, bf16_layers_end = 0;
  /// fp8 runs: parameters kept in fp8 and all-gathered in fp8 by the distributed optimizer
  /// (Megatron-Core --fp8-param-gather): no 16-bit weight copy, half the parameter all-gather.
  bool fp8_params = false;
  /// Adam keeps each 16-bit parameter's low 16 fp32 bits instead of a whole fp32 master copy
  /// (apex DistributedFusedAdam store_param_remainders): 2 bytes per parameter fewer, with the
  /// distributed optimizer (spec::param_remainders decides it from the stack).
  bool param_remainders = false;
  /// Activations of the model's first `offload_layers` layers moved to host memory after their
  /// forward and back before their backward (Megatron-Core --cpu-offloading-num-layers).
  std::int64_t offload_layers = 0;
  /// With full recompute: how many layers of each pipeline chunk recompute (Megatron-Core
  /// --recompute-method block --recompute-num-layers N: the chunk's first N); 0 = all of them.
  std::int64_t recompute_layers = 0;
  /// With selective recompute: the modules recomputed (recompute_module bits); 0 = Megatron-Core's
  /// default, core_attn.
  std::uint32_t recompute_modules = 0;
  /// Fine-tuning: LoRA freezes the base weights (Peft); its adapters' rank and targets.
  Peft peft = Peft::none;
  std::int64_t lora_rank = 0;
  std::uint32_t lora_targets = 0;  ///< lora_target bits
  /// Packed sequences: each seq_len sequence holds samples of sample_len tokens on average, and
  /// fused attention runs within each sample (Megatron-Core PackedSeqParams, Transformer Engine's
  /// THD format with cu_seqlens). 0: one sample per sequence.
  std::int64_t sample_len = 0;
  [[nodiscard]] bool frozen_base() const { return peft != Peft::none; }
  /// The modules selective recompute recomputes (0 when recompute is not selective).
  [[nodiscard]] std::uint32_t selective_modules() const {
    if (recompute != Recompute::selective) return 0;
    return recompute_modules != 0 ? recompute_modules : recompute_module::core_attn;
  }
  bool operator==(const Training&) const = default;
};

[[nodiscard]] const char* to_string(Recompute r);
[[nodiscard]] const char* to_string(Optimizer o);
[[nodiscard]] const char* to_string(Peft p);

}  // namespace dtsim::spec
