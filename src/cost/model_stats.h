#pragma once
// Parameter counts and model FLOPs of a transformer, independent of how it is parallelised.
#include <cstdint>

#include "core/units.h"
#include "spec/job.h"
#include "spec/model.h"

namespace dtsim::cost {

/// Parameters of one transformer layer, by part.
struct LayerParams {
  double attention = 0;  ///< q, k, v, output projections and their biases, q/k norms
  double mlp = 0;        ///< dense MLP, or all experts plus router and shared experts
  double mlp_active = 0; ///< MLP parameters one token touches (top-k experts + shared + router)
  double mlp_shared = 0; ///< of mlp: the always-on shared expert(s), sharded like a dense MLP
  double mlp_latent = 0; ///< of mlp: LatentMoE's two projections, replicated on the TP ranks like the router
  double norms = 0;      ///< the two pre-norms (one in a hybrid model's block)
  double mamba = 0;      ///< a Mamba-2 mixer: in_proj, conv1d, dt bias, A, D, gated norm, out_proj
  [[nodiscard]] double total() const { return attention + mlp + norms + mamba; }
  [[nodiscard]] double active() const { return attention + mlp_active + norms + mamba; }
};

/// Whole-model parameter counts.
struct ModelParams {
  LayerParams layer;        ///< a layer (an MoE layer in MoE models)
  LayerParams dense_layer;  ///< a leading dense layer of an MoE model (moe_dense_layers)
  std::int64_t dense_layers = 0;
  double mtp = 0;           ///< multi-token-prediction modules: layer, 2h -> h projection, norms
  double embedding = 0;   ///< token embedding (vocab x hidden)
  double position = 0;    ///< learned position table
  double final_norm = 0;
  double lm_head = 0;     ///< 0 when tied to the embedding
  /// A hybrid model's layers (spec::Model::hybrid_pattern) summed block by block: the whole and
  /// one token's path; `layer` and `dense_layer` are then zero.
  double hybrid_layers = 0, hybrid_layers_active = 0;
  [[nodiscard]] double total(std::int64_t layers) const;
  [[nodiscard]] double active(std::int64_t layers) const;
};

/// Counts parameters the way the model's framework allocates them (unpadded vocabulary).
[[nodiscard]] ModelParams count_params(const spec::Model& m);

/// Every layer's parameters summed by part (an MoE model's leading dense layers with their own
/// MLP, a hybrid model's blocks each with its own parts).
[[nodiscard]] LayerParams all_layer_params(const spec::Model& m);

/// Model FLOPs of one token's forward pass at sequence length `seq`, by Megatron-LM's
/// count (megatron/training/training.py num_floating_point_operations divided by 3):
/// every GEMM at 2 FLOPs per multiply-add, attention scores and values over the full
/// sequence (no causal discount), logits; element-wise ops are not counted.
struct TokenFlops {
  Flops attention_proj;  ///< q, k, v and output projections
  Flops attention_core;  ///< QK^T and softmax(QK^T)V
  Flops mlp;             ///< active MLP GEMMs (top-k experts for MoE)
  Flops logits;          ///< LM head
  /// A hybrid model's Mamba mixers (Megatron's hybrid count: in_proj, the scan at 7 x inner x
  /// state, out_proj). Each part of a hybrid model is its blocks' mean over all layers.
  Flops mamba;
  std::int64_t layers = 0;
  /// Forward FLOPs of one token through the whole model.
  [[nodiscard]] Flops forward() const {
    return (attention_proj + attention_core + mlp + mamba) * static_cast<double>(layers) + logits;
  }
  /// Backward = 2x forward (data and weight gradients), Narayanan et al. SC'21 appendix.
  [[nodiscard]] Flops backward() const { return forward() * 2.0; }
};

/// Per-layer forward FLOPs of one token (see TokenFlops).
[[nodiscard]] TokenFlops token_flops(const spec::Model& m, std::int64_t seq);

/// Megatron-LM model FLOPs of one optimizer step (3x forward, no recompute) for `tokens` tokens
/// of a job's training: packed samples' attention over their own length (spec::Training::
/// sample_len), and with frozen base weights (LoRA) no weight gradients, so the backward is 1x
/// forward (the adapters' FLOPs, under 1% at rank 32, are left out).
[[nodiscard]] Flops step_model_flops(const spec::Model& m, const spec::Training& t, double tokens);

}  // namespace dtsim::cost
