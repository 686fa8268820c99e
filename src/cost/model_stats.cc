#include "cost/model_stats.h"

#include <algorithm>

namespace dtsim::cost {
namespace {

using spec::LinearBias;
using spec::Model;

double norm_params(const Model& m, double width) { return m.norm == spec::Norm::layernorm ? 2 * width : width; }

// Multi-head latent attention (DeepSeek-V3 config.json, Megatron-Core MLASelfAttention): query
// down/up projections with an RMSNorm on the q latent (or one direct projection), a joint kv down
// projection that also yields the shared rope key, an RMSNorm on the kv latent, the kv up
// projection to per-head nope keys and values, and the output projection.
double mla_params(const Model& m) {
  const spec::Mla& a = m.mla;
  double h = m.hidden, heads = m.heads, qk = a.qk_nope_head_dim + a.qk_rope_head_dim;
  double q = a.q_lora_rank > 0 ? h * a.q_lora_rank + a.q_lora_rank + a.q_lora_rank * heads * qk : h * heads * qk;
  double kv = h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank +
              a.kv_lora_rank * heads * (a.qk_nope_head_dim + a.v_head_dim);
  return q + kv + heads * a.v_head_dim * h;
}

double attention_params(const Model& m) {
  if (m.mla.on()) return mla_params(m);
  double h = m.hidden, q = m.heads * m.head_dim, kv = m.kv_heads * m.head_dim;
  double weights = h * q + 2 * h * kv + q * h;
  double bias = m.linear_bias == LinearBias::none ? 0 : q + 2 * kv;
  if (m.linear_bias == LinearBias::all) bias += h;
  double qk_norm = m.qk_norm ? 2.0 * m.head_dim : 0;  // Qwen3: RMSNorm weights over head_dim
  return weights + bias + qk_norm;
}

// One MLP of intermediate size f on tokens of `width` (the hidden size, or an expert's latent
// width): gated MLPs have gate, up and down projections.
double mlp_params(const Model& m, double f, double width) {
  double h = width;
  double matrices = m.gated() ? 3 : 2;
  double bias = m.linear_bias == LinearBias::all ? (matrices - 1) * f + h : 0;
  return matrices * h * f + bias;
}

// A Mamba-2 mixer (Megatron-Core MambaMixer): in_proj h -> 2 inner + 2 groups x state + heads, the
// depthwise convolution's weights and biases over x, B and C, dt_bias, A_log and D per head, the
// gated norm's weight, out_proj inner -> h.
double mamba_params(const Model& m) {
  const spec::Mamba& a = m.mamba;
  double h = m.hidden, inner = a.inner(), conv = inner + 2.0 * a.groups * a.state, heads = a.heads;
  return h * (inner + conv + heads) + conv * (a.conv + 1) + 3 * heads + inner + inner * h;
}

// DeepSeek-V3 MTP module (arXiv:2412.19437 sec. 2.2): a transformer layer (`layer`), or a hybrid
// model's blocks of mtp_pattern, the projection of [h; embedding] (2h -> h), two RMSNorms on its
// inputs and one on its output; embedding and head are shared with the main model. One set per
// module, or one for all when the modules repeat it (mtp_shared_weights).
double mtp_params(const Model& m, const LayerParams& layer) {
  if (m.mtp_layers == 0) return 0;
  double blocks = 0;
  for (char c : m.mtp_blocks()) blocks += c == 'T' ? layer.total() : count_params(spec::block_variant(m, c)).layer.total();
  return static_cast<double>(m.mtp_weight_sets()) * (blocks + 2.0 * m.hidden * m.hidden + 3 * norm_params(m, m.hidden));
}

}  // namespace

double ModelParams::total(std::int64_t layers) const {
  return layer.total() * static_cast<double>(layers - dense_layers) + dense_layer.total() * static_cast<double>(dense_layers) +
         hybrid_layers + embedding + position + final_norm + lm_head + mtp;
}

// Active parameters as model cards count them: one token's path, without the MTP modules.
double ModelParams::active(std::int64_t layers) const {
  return layer.active() * static_cast<double>(layers - dense_layers) +
         dense_layer.active() * static_cast<double>(dense_layers) + hybrid_layers_active + embedding + position +
         final_norm + lm_head;
}

ModelParams count_params(const Model& m) {
  ModelParams p;
  if (m.hybrid() && m.block == spec::Block::transformer) {
    // Block by block; the non-layer parts as any model's.
    for (char c : {'M', '*', '-', 'E'}) {
      double n = static_cast<double>(m.count_blocks(c, 0, m.layers));
      if (n == 0) continue;
      LayerParams b = count_params(spec::block_variant(m, c)).layer;
      p.hybrid_layers += b.total() * n;
      p.hybrid_layers_active += b.active() * n;
    }
    ModelParams rest = count_params(spec::block_variant(m, 'M'));
    p.embedding = rest.embedding, p.position = rest.position, p.final_norm = rest.final_norm, p.lm_head = rest.lm_head;
    p.mtp = mtp_params(m, p.layer);
    return p;
  }
  if (m.block == spec::Block::mamba) {
    p.layer.mamba = mamba_params(m);
    p.layer.norms = norm_params(m, m.hidden);
  }
  if (m.moe_dense_layers > 0) {
    p.dense_layer = count_params(spec::dense_variant(m)).layer;
    p.dense_layers = m.moe_dense_layers;
  }
  if (m.has_attention()) p.layer.attention = attention_params(m);
  if (m.block != spec::Block::mamba)
    p.layer.norms = (m.has_attention() && m.has_mlp() ? 2 : 1) * norm_params(m, m.hidden);
  if (!m.has_mlp()) {
    // an attention or Mamba block: no MLP
  } else if (m.is_moe()) {
    double router = static_cast<double>(m.hidden) * m.moe_experts;
    double shared = m.moe_shared_ffn_hidden > 0 ? mlp_params(m, m.moe_shared_ffn_hidden, m.hidden) : 0;
    double expert = mlp_params(m, m.moe_ffn_hidden, static_cast<double>(m.expert_width()));
    // LatentMoE's two projections, hidden -> latent and back, no bias (Megatron-Core MoELayer
    // fc1_latent_proj / fc2_latent_proj).
    double latent = m.moe_latent > 0 ? 2.0 * m.hidden * m.moe_latent : 0.0;
    p.layer.mlp = router + latent + shared + expert * m.moe_experts;
    p.layer.mlp_active = router + latent + shared + expert * m.moe_topk;
    p.layer.mlp_shared = shared;
    p.layer.mlp_latent = latent;
  } else {
    p.layer.mlp = p.layer.mlp_active = mlp_params(m, m.ffn_hidden, m.hidden);
  }
  p.embedding = static_cast<double>(m.vocab) * m.hidden;
  if (m.position_embedding == spec::PositionEmbedding::learned)
    p.position = static_cast<double>(m.max_position) * m.hidden;
  p.final_norm = norm_params(m, m.hidden);
  p.lm_head = m.tied_embeddings ? 0 : static_cast<double>(m.vocab) * m.hidden;
  p.mtp = mtp_params(m, p.layer);
  return p;
}

LayerParams all_layer_params(const Model& m) {
  LayerParams sum;
  auto add = [&](const LayerParams& l, double n) {
    sum.attention += l.attention * n, sum.mlp += l.mlp * n, sum.mlp_active += l.mlp_active * n;
    sum.mlp_shared += l.mlp_shared * n, sum.norms += l.norms * n, sum.mamba += l.mamba * n;
  };
  if (m.hybrid() && m.block == spec::Block::transformer) {
    for (char c : {'M', '*', '-', 'E'})
      if (std::int64_t n = m.count_blocks(c, 0, m.layers)) add(count_params(spec::block_variant(m, c)).layer, static_cast<double>(n));
    return sum;
  }
  ModelParams p = count_params(m);
  add(p.layer, static_cast<double>(m.layers - p.dense_layers));
  add(p.dense_layer, static_cast<double>(p.dense_layers));
  return sum;
}

namespace {

// One MoE layer's forward FLOPs per token: the top-k experts in their width (LatentMoE's latent),
// the shared expert in the hidden width, LatentMoE's two projections (Megatron-Bridge flop_utils.py:
// 4 b s latent ffn topk + 4 b s h latent for a non-gated MLP, plus the shared term).
double moe_token_flops(const Model& m) {
  double gated = m.gated() ? 3 : 2, h = m.hidden, w = static_cast<double>(m.expert_width());
  double routed = 2 * gated * w * static_cast<double>(m.moe_ffn_hidden) * static_cast<double>(m.moe_topk);
  double latent = m.moe_latent > 0 ? 4 * h * static_cast<double>(m.moe_latent) : 0.0;
  return routed + 2 * gated * h * static_cast<double>(m.moe_shared_ffn_hidden) + latent;
}

// A hybrid model's forward FLOPs per token, part by part, each the mean over its layers, as
// Megatron-Core's hybrid branch counts them (megatron/training/training.py and Megatron-Bridge
// flop_utils.py: attention 4 b s h p (h + h g / n_h + s/2), the causal half of the scores, unlike its
// GPT formula's full s): attention on its '*' layers, the MLP on '-' (ffn_hidden) and 'E' (top-k experts and the shared one), Mamba
// on 'M' as Megatron's hybrid count prices a mixer (megatron/training/training.py
// mamba_layer_flops: in_proj, the scan at 7 x inner x state per token, out_proj) -- with the
// mixer's own inner width heads x head_dim where Megatron writes 2 x hidden (the same for
// Nemotron 3 Super; Nano's 4,096 against 5,376).
TokenFlops hybrid_token_flops(const Model& m, std::int64_t seq) {
  TokenFlops f;
  f.layers = m.layers;
  double layers = static_cast<double>(m.layers), mtp = static_cast<double>(m.mtp_layers);
  // Megatron-Bridge's hybrid count adds the MTP modules' blocks (mtp_hybrid_override_pattern, once
  // per depth) and one more LM head per depth: it reproduces Nemotron 3 Super's published
  // 84.73 GFLOP per token (docs/research/nemotron3-arch.md sec. 5).
  auto share = [&](char c) {
    return (static_cast<double>(m.count_blocks(c, 0, m.layers)) + mtp * static_cast<double>(m.mtp_count(c))) / layers;
  };
  Model attn = spec::block_variant(m, '*');
  TokenFlops a = token_flops(attn, seq);
  f.attention_proj = a.attention_proj * share('*');
  f.attention_core = a.attention_core * (0.5 * share('*'));  // Megatron's hybrid branch counts the causal half (s/2)
  double gated = m.gated() ? 3 : 2, h = m.hidden;
  f.mlp = flops(2 * gated * h * static_cast<double>(m.ffn_hidden) * share('-') + moe_token_flops(m) * share('E'));
  const spec::Mamba& s = m.mamba;
  double inner = s.inner(), in_width = 2 * inner + 2.0 * s.groups * s.state + s.heads;
  f.mamba = flops((2 * h * in_width + 7 * inner * s.state + 2 * inner * h) * share('M'));
  f.logits = a.logits * (1 + mtp);
  return f;
}

}  // namespace

TokenFlops token_flops(const Model& m, std::int64_t seq) {
  if (m.hybrid() && m.block == spec::Block::transformer) return hybrid_token_flops(m, seq);
  // Megatron-LM num_floating_point_operations: 2 FLOPs per multiply-add, forward only.
  // Per layer averages: leading dense layers count their dense MLP (MoE models' moe_dense_layers),
  // MLA its projections (the weight matrices' parameters, norms aside), the MTP modules are left out.
  double h = m.hidden, heads = static_cast<double>(m.heads);
  double gated = m.gated() ? 3 : 2;
  double layers = static_cast<double>(m.layers), dense = static_cast<double>(m.moe_dense_layers);
  double dense_mlp = 2 * gated * h * static_cast<double>(m.ffn_hidden);
  double moe_mlp = m.is_moe() ? moe_token_flops(m) : dense_mlp;
  double proj = m.mla.on() ? attention_params(m) : h * heads * m.head_dim * 2 + 2 * h * m.kv_heads * m.head_dim;
  TokenFlops f;
  f.layers = m.layers;
  f.attention_proj = flops(2 * proj);
  // QK^T and AV over the full sequence (query/key and value widths per head).
  f.attention_core = flops(2 * static_cast<double>(seq) * heads * static_cast<double>(m.qk_head_dim() + m.v_head_dim()));
  f.mlp = flops((moe_mlp * (layers - dense) + dense_mlp * dense) / layers);
  f.logits = flops(2 * h * static_cast<double>(m.vocab));
  return f;
}

Flops step_model_flops(const Model& m, const spec::Training& t, double tokens) {
  TokenFlops f = token_flops(m, t.sample_len > 0 ? std::min(t.sample_len, t.seq_len) : t.seq_len);
  return (f.forward() + (t.frozen_base() ? f.forward() : f.backward())) * tokens;
}

}  // namespace dtsim::cost
