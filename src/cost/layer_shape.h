#pragma once
// What one rank sees of a transformer layer once TP, SP, CP and EP have sharded it.
#include "spec/job.h"
#include "spec/model.h"

namespace dtsim::cost {

/// Per-rank dimensions of one layer for one micro-batch (counts, not bytes).
struct LayerShape {
  double batch = 1;        ///< micro-batch b
  double seq = 1;          ///< full sequence s (attention key length)
  double tokens = 1;       ///< tokens this rank computes: b*s/cp
  double hidden = 1;       ///< h
  double heads = 1;        ///< attention heads on this rank: a/tp
  double head_dim = 1;      ///< per head: query/key width (MLA: nope + rope)
  double v_dim = 1;         ///< per head: value width (head_dim, or MLA's v_head_dim)
  // Sliding-window attention (window 0: every layer attends causally to the whole sequence).
  double window = 0;           ///< keys per query in windowed layers
  double full_attn_layers = 1; ///< share of layers with full causal attention
  double window_share = 1;     ///< a windowed layer's query-key pairs against full causal attention
  // Multi-head latent attention (zero otherwise): latent ranks and the per-head widths.
  double q_lora = 0, kv_lora = 0, qk_rope = 0;
  double q_width = 1;      ///< a*d/tp
  double kv_width = 1;     ///< g*d/tp
  double ffn = 1;          ///< dense MLP width on this rank: f/tp
  double gate = 1;         ///< 2 for gated MLPs (gate and up projections), else 1
  double sp = 1;           ///< share of hidden-size element-wise work: 1/tp with SP, else 1
  bool rotary = false;     ///< rotary position embedding applied to Q and K in every layer
  bool rope_scaled = false;  ///< its cos and sin carry YaRN's concentration factor (spec::Model::rope_mscale != 1)
  bool mlp_bias = false;   ///< the MLP and projection linears carry biases (Megatron GPT)
  bool rms_norm = false;   ///< RMSNorm (else LayerNorm)
  bool qk_norm = false;    ///< per-head RMSNorm on the queries and keys (spec::Model::qk_norm)
  bool glu_clamp = false;  ///< a clamped GLU (spec::Model::activation_clamp)
  bool hidden_dropout = true;     ///< dropout after the attention and MLP blocks (a mask each)
  bool attention_dropout = true;  ///< dropout on the attention probabilities
  double tp = 1;
  double cp = 1;
  // MoE (zero experts = dense)
  double experts_local = 0;    ///< experts on this rank: E/ep
  double expert_tokens = 0;    ///< tokens this rank's experts see: tokens*topk (balanced routing)
  double expert_ffn = 0;       ///< expert MLP width on this rank: f_moe/tp (expert TP = tp)
  double shared_ffn = 0;       ///< shared-expert width on this rank
  /// Width of the tokens the experts see, the dispatch and the combine move: the hidden size, or
  /// LatentMoE's latent (spec::Model::moe_latent).
  double expert_width = 0;
  double latent = 0;           ///< LatentMoE's latent width (its projections replicated on the TP ranks); 0 = none
  double experts = 0;          ///< E (router width)
  /// The dispatcher copies the tokens it received into local-expert order after the all-to-all
  /// and back before the combine (Megatron-Core's alltoall dispatcher with more than one local
  /// expert: sort_chunks_by_idxs, or drop-and-pad's transpose().contiguous()).
  bool sort_chunks = false;
  /// Forward kernels of the router's and the dispatcher's bookkeeping over the [tokens x experts]
  /// routing map and the token counts that no other op prices (cost::moe_routing_op; backward is
  /// the top-k's one); set by the schedule from the dispatcher and the routing mode.
  double routing_kernels = 0;
  // A hybrid model's block (spec::Block): which parts the layer holds.
  bool attention = true;  ///< attention with its pre-norm and residual add
  bool mlp = true;        ///< the MLP or the experts with their pre-norm and residual add
  // A Mamba-2 mixer (spec::Mamba) on this rank, zero heads for none: Megatron-Core's MambaMixer
  // splits its heads and groups over TP (mamba_mixer.py: nheads_local_tp, ngroups_local_tp).
  double ssm_heads = 0;     ///< heads / tp
  double ssm_head_dim = 0;  ///< P
  double ssm_state = 0;     ///< N
  double ssm_groups = 0;    ///< groups / tp
  double ssm_conv = 0;      ///< the causal convolution's width
  double ssm_chunk = 0;     ///< SSD chunk length Q
  [[nodiscard]] bool mamba() const { return ssm_heads > 0; }
  /// The mixer's inner width on this rank: heads x head_dim.
  [[nodiscard]] double ssm_inner() const { return ssm_heads * ssm_head_dim; }
  /// What the convolution runs over: x, B and C (inner + 2 groups x state).
  [[nodiscard]] double ssm_conv_width() const { return ssm_inner() + 2 * ssm_groups * ssm_state; }
  /// The input projection's output: z, x, B, C and dt (2 inner + 2 groups x state + heads).
  [[nodiscard]] double ssm_in_width() const { return ssm_inner() + ssm_conv_width() + ssm_heads; }
  double vocab_local = 1;      ///< padded vocabulary / tp
  // Fine-tuning (spec::Training): packed samples and LoRA.
  double sample = 0;           ///< packed sequences: tokens per sample attention runs within (0: seq)
  bool frozen = false;         ///< the base weights are frozen (no weight gradients)
  double lora_rank = 0;        ///< LoRA adapters' rank (0: none)
  std::uint32_t lora_targets = 0;  ///< spec::lora_target bits
  /// Tokens one query of a full-attention layer attends within (its sample, or the sequence).
  [[nodiscard]] double attention_span() const { return sample > 0 ? sample : seq; }
};

/// Megatron-LM pads the vocabulary to a multiple of 128*tp (--make-vocab-size-divisible-by 128).
[[nodiscard]] double padded_vocab(const spec::Model& m, std::int64_t tp);

/// The per-rank shape of one layer for a micro-batch under `par`.
[[nodiscard]] LayerShape layer_shape(const spec::Model& m, const spec::Parallel& par, std::int64_t micro_batch,
                                     std::int64_t seq);

/// The same for a job's micro-batch and sequence, with its packed samples and LoRA adapters.
[[nodiscard]] LayerShape layer_shape(const spec::Model& m, const spec::Parallel& par, const spec::Training& t);

}  // namespace dtsim::cost
