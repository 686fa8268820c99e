#include "cost/model_stats.h"

namespace dtsim::cost {
namespace {

using spec::LinearBias;
using spec::Model;

double norm_params(const Model& m, double width) { return m.norm == spec::Norm::layernorm ? 2 * width : width; }

double attention_params(const Model& m) {
  double h = m.hidden, q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
  double weights = h * q + 2 * h * kv + q * h;
  double bias = m.linear_bias == LinearBias::none ? 0 : q + 2 * kv;
  if (m.linear_bias == LinearBias::all) bias += h;
  double qk_norm = m.qk_norm ? 2.0 * m.head_dim : 0;  // Qwen3: RMSNorm weights over head_dim
  return weights + bias + qk_norm;
}

// One MLP of intermediate size f: gated MLPs have gate, up and down projections.
double mlp_params(const Model& m, double f) {
  double h = m.hidden;
  double matrices = m.gated() ? 3 : 2;
  double bias = m.linear_bias == LinearBias::all ? (matrices - 1) * f + h : 0;
  return matrices * h * f + bias;
}

}  // namespace

double ModelParams::total(std::int64_t layers) const {
  return layer.total() * static_cast<double>(layers) + embedding + position + final_norm + lm_head;
}

double ModelParams::active(std::int64_t layers) const {
  return layer.active() * static_cast<double>(layers) + embedding + position + final_norm + lm_head;
}

ModelParams count_params(const Model& m) {
  ModelParams p;
  p.layer.attention = attention_params(m);
  p.layer.norms = 2 * norm_params(m, m.hidden);
  if (m.is_moe()) {
    double router = static_cast<double>(m.hidden) * m.moe_experts;
    double shared = m.moe_shared_ffn_hidden > 0 ? mlp_params(m, m.moe_shared_ffn_hidden) : 0;
    double expert = mlp_params(m, m.moe_ffn_hidden);
    p.layer.mlp = router + shared + expert * m.moe_experts;
    p.layer.mlp_active = router + shared + expert * m.moe_topk;
    p.layer.mlp_shared = shared;
  } else {
    p.layer.mlp = p.layer.mlp_active = mlp_params(m, m.ffn_hidden);
  }
  p.embedding = static_cast<double>(m.vocab) * m.hidden;
  if (m.position_embedding == spec::PositionEmbedding::learned)
    p.position = static_cast<double>(m.max_position) * m.hidden;
  p.final_norm = norm_params(m, m.hidden);
  p.lm_head = m.tied_embeddings ? 0 : static_cast<double>(m.vocab) * m.hidden;
  return p;
}

TokenFlops token_flops(const Model& m, std::int64_t seq) {
  // Megatron-LM num_floating_point_operations: 2 FLOPs per multiply-add, forward only.
  double h = m.hidden, q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
  double gated = m.gated() ? 3 : 2;
  double ffn_active = m.is_moe() ? static_cast<double>(m.moe_ffn_hidden) * m.moe_topk + m.moe_shared_ffn_hidden
                                 : static_cast<double>(m.ffn_hidden);
  TokenFlops f;
  f.layers = m.layers;
  f.attention_proj = flops(2 * (h * q + 2 * h * kv + q * h));
  f.attention_core = flops(2 * 2 * static_cast<double>(seq) * q);  // QK^T and AV, full sequence
  f.mlp = flops(2 * gated * h * ffn_active);
  f.logits = flops(2 * h * static_cast<double>(m.vocab));
  return f;
}

Flops step_model_flops(const Model& m, std::int64_t seq, double tokens) {
  TokenFlops f = token_flops(m, seq);
  return (f.forward() + f.backward()) * tokens;
}

}  // namespace dtsim::cost
