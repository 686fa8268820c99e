#include "cost/layer_shape.h"

#include <cmath>

namespace dtsim::cost {

double padded_vocab(const spec::Model& m, std::int64_t tp) {
  double multiple = 128.0 * static_cast<double>(tp);
  return std::ceil(static_cast<double>(m.vocab) / multiple) * multiple;
}

LayerShape layer_shape(const spec::Model& m, const spec::Parallel& par, std::int64_t micro_batch, std::int64_t seq) {
  LayerShape s;
  s.tp = static_cast<double>(par.tp);
  s.cp = static_cast<double>(par.cp);
  s.batch = static_cast<double>(micro_batch);
  s.seq = static_cast<double>(seq);
  s.tokens = s.batch * s.seq / s.cp;
  s.hidden = static_cast<double>(m.hidden);
  s.heads = static_cast<double>(m.heads) / s.tp;
  s.head_dim = static_cast<double>(m.qk_head_dim());
  s.v_dim = static_cast<double>(m.v_head_dim());
  if (m.sliding_window > 0 && m.sliding_window < seq) {
    s.window = static_cast<double>(m.sliding_window);
    s.full_attn_layers = m.sliding_window_full_every > 0 ? 1.0 / static_cast<double>(m.sliding_window_full_every) : 0.0;
    s.window_share = m.windowed_attention_share(seq);
  }
  s.q_width = s.heads * s.head_dim;
  s.kv_width = static_cast<double>(m.kv_heads) * s.head_dim / s.tp;
  if (m.mla.on()) {
    // After the up-projections MLA is multi-head attention with keys of head_dim and values of
    // v_dim per head: kv_width is the per-token K and V width averaged (2*kv_width = K + V).
    s.q_lora = static_cast<double>(m.mla.q_lora_rank);
    s.kv_lora = static_cast<double>(m.mla.kv_lora_rank);
    s.qk_rope = static_cast<double>(m.mla.qk_rope_head_dim);
    s.kv_width = s.heads * (s.head_dim + s.v_dim) / 2;
  }
  s.ffn = static_cast<double>(m.ffn_hidden) / s.tp;
  s.gate = m.gated() ? 2.0 : 1.0;
  s.sp = par.sequence_parallel ? 1.0 / s.tp : 1.0;
  s.rotary = m.position_embedding == spec::PositionEmbedding::rotary;
  s.rope_scaled = s.rotary && m.rope_mscale != 1.0;
  s.mlp_bias = m.linear_bias == spec::LinearBias::all;
  s.rms_norm = m.norm == spec::Norm::rmsnorm;
  s.qk_norm = m.qk_norm;
  s.glu_clamp = m.activation_clamp > 0;
  s.hidden_dropout = m.hidden_dropout > 0;
  s.attention_dropout = m.attention_dropout > 0;
  if (m.is_moe()) {
    s.experts = static_cast<double>(m.moe_experts);
    // Megatron-Core requires SP with TP in MoE models: each rank routes its b*s/(cp*tp) tokens;
    // an expert-TP group of etp ranks gathers its members' tokens and splits the expert FFN width.
    double etp = static_cast<double>(par.expert_tp());
    s.experts_local = s.experts / static_cast<double>(par.ep);
    s.expert_tokens = s.tokens / s.tp * etp * static_cast<double>(m.moe_topk);
    s.expert_ffn = static_cast<double>(m.moe_ffn_hidden) / etp;
    s.shared_ffn = static_cast<double>(m.moe_shared_ffn_hidden) / s.tp;
    s.expert_width = static_cast<double>(m.expert_width());
    s.latent = static_cast<double>(m.moe_latent);
  }
  s.attention = m.has_attention();
  s.mlp = m.has_mlp();
  if (m.block == spec::Block::mamba) {
    s.ssm_heads = static_cast<double>(m.mamba.heads) / s.tp;
    s.ssm_head_dim = static_cast<double>(m.mamba.head_dim);
    s.ssm_state = static_cast<double>(m.mamba.state);
    s.ssm_groups = static_cast<double>(m.mamba.groups) / s.tp;
    s.ssm_conv = static_cast<double>(m.mamba.conv);
    s.ssm_chunk = static_cast<double>(m.mamba.chunk);
  }
  s.vocab_local = padded_vocab(m, par.tp) / s.tp;
  return s;
}

LayerShape layer_shape(const spec::Model& m, const spec::Parallel& par, const spec::Training& t) {
  LayerShape s = layer_shape(m, par, t.micro_batch, t.seq_len);
  if (t.sample_len > 0 && t.sample_len < t.seq_len) {
    s.sample = static_cast<double>(t.sample_len);
    // A windowed layer attends within the window inside each sample: its query-key pairs against
    // full causal attention over the sequence.
    if (m.sliding_window > 0)
      s.window_share = m.sliding_window < t.sample_len ? m.windowed_attention_share(t.sample_len) * s.sample / s.seq
                                                        : s.sample / s.seq;
  }
  s.frozen = t.frozen_base();
  if (t.peft == spec::Peft::lora) {
    s.lora_rank = static_cast<double>(t.lora_rank);
    s.lora_targets = t.lora_targets;
  }
  return s;
}

}  // namespace dtsim::cost
