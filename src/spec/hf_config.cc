// Hugging Face transformers config.json import. Field names and defaults follow the
// configuration classes of transformers (models/<family>/configuration_<family>.py):
// a key a config class defaults is read with that same default, and the family's
// architecture facts (norm, bias, positions) come from its modeling_<family>.py.
#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "core/errors.h"
#include "spec/model_rules.h"

namespace dtsim::spec {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int32_t>::max();

Activation gated_activation(ObjectReader& r, const std::string& key) {
  // Llama-family MLPs are gated: act(x W_gate) * (x W_up); silu gives SwiGLU.
  std::string act = r.optional_string(key).value_or("silu");
  if (act == "silu" || act == "swish") return Activation::swiglu;
  if (act == "gelu" || act == "gelu_pytorch_tanh" || act == "gelu_new") return Activation::gated_gelu;
  r.fail(key, "expected one of silu, swish, gelu, gelu_pytorch_tanh, gelu_new, got \"" + act + "\"");
}

// YaRN's concentration factor on cos and sin (transformers modeling_rope_utils.py
// _compute_yarn_parameters): attention_factor if given; else, with both mscale and
// mscale_all_dim (DeepSeek-V3, Kimi K2), get_mscale(factor, mscale) / get_mscale(factor,
// mscale_all_dim); else get_mscale(factor) = 0.1 ln(factor) + 1 (gpt-oss: 1.347). Other rope
// scalings (Llama 3's, linear, dynamic) leave cos and sin unscaled: 1.
double rope_mscale(ObjectReader& r) {
  if (!r.has("rope_scaling")) return 1.0;
  ObjectReader s = r.object("rope_scaling");
  std::string type = s.optional_string("rope_type").value_or(s.optional_string("type").value_or(""));
  if (type != "yarn") return 1.0;
  double factor = s.positive("factor");
  auto get_mscale = [&](double m) { return factor <= 1 ? 1.0 : 0.1 * m * std::log(factor) + 1.0; };
  if (auto a = s.optional_positive("attention_factor")) return *a;
  std::optional<double> mscale = s.optional_positive("mscale", true), all = s.optional_positive("mscale_all_dim", true);
  if (mscale && all && *mscale != 0 && *all != 0) return get_mscale(*mscale) / get_mscale(*all);
  return get_mscale(1.0);
}

// The keys every rotary, RMSNorm decoder family names alike (Llama and its descendants,
// DeepSeek-V3, gpt-oss): sizes, vocabulary, positions, tying.
Model read_rotary_decoder(ObjectReader& r) {
  Model m;
  m.layers = r.integer("num_hidden_layers", 1, 100000);
  m.hidden = r.integer("hidden_size", 1, kMax);
  m.heads = r.integer("num_attention_heads", 1, kMax);
  m.kv_heads = r.optional_integer("num_key_value_heads", 1, kMax).value_or(m.heads);
  m.head_dim = r.optional_integer("head_dim", 1, kMax).value_or(0);
  m.ffn_hidden = r.integer("intermediate_size", 1, kMax);
  m.vocab = r.integer("vocab_size", 1, kMax);
  m.position_embedding = PositionEmbedding::rotary;
  m.max_position = r.optional_integer("max_position_embeddings", 1, kMax).value_or(0);
  m.tied_embeddings = r.optional_boolean("tie_word_embeddings").value_or(false);
  m.rope_mscale = rope_mscale(r);
  m.norm = Norm::rmsnorm;
  // These families' modeling code has attention dropout only (on the softmax, default 0.0).
  m.hidden_dropout = 0;
  m.attention_dropout = read_probability(r, "attention_dropout").value_or(0.0);
  return m;
}

// Llama, Mistral, Mixtral, Qwen2, Qwen3 (and their MoE variants) share one layout.
Model read_llama_like(ObjectReader& r, const std::string& type) {
  Model m = read_rotary_decoder(r);
  m.activation = gated_activation(r, "hidden_act");
  bool attention_bias = r.optional_boolean("attention_bias").value_or(false);
  // Qwen2 hard-codes bias=True on q/k/v projections (modeling_qwen2.py Qwen2Attention).
  m.linear_bias = (type == "qwen2" || type == "qwen2_moe" || attention_bias) ? LinearBias::qkv : LinearBias::none;
  m.qk_norm = type == "qwen3" || type == "qwen3_moe";
  if (type == "mixtral") {
    m.moe_experts = r.integer("num_local_experts", 2, 1 << 16);
    m.moe_topk = r.integer("num_experts_per_tok", 1, 1 << 16);
    m.moe_ffn_hidden = m.ffn_hidden;
  } else if (type == "qwen2_moe" || type == "qwen3_moe") {
    m.moe_experts = r.integer("num_experts", 2, 1 << 16);
    m.moe_topk = r.integer("num_experts_per_tok", 1, 1 << 16);
    m.moe_ffn_hidden = r.integer("moe_intermediate_size", 1, kMax);
    m.moe_shared_ffn_hidden = r.optional_integer("shared_expert_intermediate_size", 1, kMax).value_or(0);
  }
  return m;
}

// GPT-2 (configuration_gpt2.py): learned positions, tied embeddings, biases, LayerNorm, 4h MLP.
Model read_gpt2(ObjectReader& r) {
  Model m;
  m.layers = r.integer("n_layer", 1, 100000);
  m.hidden = r.integer("n_embd", 1, kMax);
  m.heads = r.integer("n_head", 1, kMax);
  m.kv_heads = m.heads;
  m.ffn_hidden = r.optional_integer("n_inner", 1, kMax).value_or(4 * m.hidden);
  std::string act = r.optional_string("activation_function").value_or("gelu_new");
  m.activation = act == "relu" ? Activation::relu : Activation::gelu;
  m.vocab = r.integer("vocab_size", 1, kMax);
  m.position_embedding = PositionEmbedding::learned;
  m.max_position = r.integer("n_positions", 1, kMax);
  m.tied_embeddings = r.optional_boolean("tie_word_embeddings").value_or(true);
  m.norm = Norm::layernorm;
  m.linear_bias = LinearBias::all;
  m.hidden_dropout = read_probability(r, "resid_pdrop").value_or(0.1);
  m.attention_dropout = read_probability(r, "attn_pdrop").value_or(0.1);
  return m;
}

// GPT-NeoX (configuration_gpt_neox.py): rotary, LayerNorm, biases, untied by default.
Model read_gpt_neox(ObjectReader& r) {
  Model m;
  m.layers = r.integer("num_hidden_layers", 1, 100000);
  m.hidden = r.integer("hidden_size", 1, kMax);
  m.heads = r.integer("num_attention_heads", 1, kMax);
  m.kv_heads = m.heads;
  m.ffn_hidden = r.integer("intermediate_size", 1, kMax);
  std::string act = r.optional_string("hidden_act").value_or("gelu");
  m.activation = act == "relu" ? Activation::relu : Activation::gelu;
  m.vocab = r.integer("vocab_size", 1, kMax);
  m.position_embedding = PositionEmbedding::rotary;
  m.max_position = r.optional_integer("max_position_embeddings", 1, kMax).value_or(0);
  m.tied_embeddings = r.optional_boolean("tie_word_embeddings").value_or(false);
  m.norm = Norm::layernorm;
  m.linear_bias = LinearBias::all;
  // transformers' keys hidden_dropout / attention_dropout (default 0.0); GPT-NeoX 20B's own config
  // spells them hidden_dropout_prob / attention_probs_dropout_prob.
  m.hidden_dropout = r.has("hidden_dropout") ? *read_probability(r, "hidden_dropout")
                                             : read_probability(r, "hidden_dropout_prob").value_or(0.0);
  m.attention_dropout = r.has("attention_dropout") ? *read_probability(r, "attention_dropout")
                                                   : read_probability(r, "attention_probs_dropout_prob").value_or(0.0);
  return m;
}

// DeepSeek-V3 (configuration_deepseek_v3.py) and Kimi K2 (its DeepseekV3 architecture, model_type
// "kimi_k2"): MLA attention, first_k_dense_replace dense layers, then routed experts with
// n_shared_experts shared ones of moe_intermediate_size each, num_nextn_predict_layers MTP modules.
Model read_deepseek_v3(ObjectReader& r) {
  Model m = read_rotary_decoder(r);
  m.activation = gated_activation(r, "hidden_act");
  m.linear_bias = r.optional_boolean("attention_bias").value_or(false) ? LinearBias::qkv : LinearBias::none;
  m.mla.q_lora_rank = r.optional_integer("q_lora_rank", 1, kMax).value_or(0);  // null: a direct q projection
  m.mla.kv_lora_rank = r.integer("kv_lora_rank", 1, kMax);
  m.mla.qk_nope_head_dim = r.integer("qk_nope_head_dim", 1, kMax);
  m.mla.qk_rope_head_dim = r.integer("qk_rope_head_dim", 1, kMax);
  m.mla.v_head_dim = r.integer("v_head_dim", 1, kMax);
  m.head_dim = m.mla.v_head_dim;
  m.moe_experts = r.integer("n_routed_experts", 2, 1 << 16);
  m.moe_topk = r.integer("num_experts_per_tok", 1, 1 << 16);
  m.moe_ffn_hidden = r.integer("moe_intermediate_size", 1, kMax);
  m.moe_shared_ffn_hidden = r.optional_integer("n_shared_experts", 0, 1 << 16).value_or(0) * m.moe_ffn_hidden;
  m.moe_dense_layers = r.optional_integer("first_k_dense_replace", 0, m.layers - 1).value_or(0);
  m.mtp_layers = r.optional_integer("num_nextn_predict_layers", 0, 64).value_or(0);
  return m;
}

// NVIDIA Nemotron-H and Nemotron 3 (configuration_nemotron_h.py, model_type "nemotron_h"): layers by
// hybrid_override_pattern, a Mamba-2 mixer of mamba_num_heads x mamba_head_dim, squared-ReLU MLPs
// (mlp_hidden_act relu2) and, in Nemotron 3, routed experts with n_shared_experts shared ones of
// moe_shared_expert_intermediate_size. Megatron-Core trains it without position embeddings
// (Megatron-Bridge nemotron_h_bridge.py: position_embedding_type "none").
Model read_nemotron_h(ObjectReader& r) {
  Model m = read_rotary_decoder(r);
  m.position_embedding = PositionEmbedding::none;
  m.max_position = 0;
  m.rope_mscale = 1.0;
  std::string act = r.optional_string("mlp_hidden_act").value_or("relu2");
  if (act != "relu2") r.fail("mlp_hidden_act", "expected \"relu2\" (squared ReLU), got \"" + act + "\"");
  m.activation = Activation::squared_relu;
  m.linear_bias = LinearBias::none;
  if (auto experts = r.optional_integer("n_routed_experts", 2, 1 << 16)) {
    m.moe_experts = *experts;
    m.moe_topk = r.integer("num_experts_per_tok", 1, 1 << 16);
    m.moe_ffn_hidden = r.integer("moe_intermediate_size", 1, kMax);
    std::int64_t shared = r.optional_integer("n_shared_experts", 0, 1 << 16).value_or(0);
    m.moe_shared_ffn_hidden = shared * r.optional_integer("moe_shared_expert_intermediate_size", 1, kMax).value_or(0);
    m.moe_latent = r.optional_integer("moe_latent_size", 1, kMax).value_or(0);  // Nemotron 3 Super: LatentMoE
  }
  m.mamba = read_mamba(r, {"mamba_num_heads", "mamba_head_dim", "ssm_state_size", "n_groups", "conv_kernel", "chunk_size"});
  m.hybrid_pattern = r.string("hybrid_override_pattern");
  check_hybrid_pattern(m, r, "hybrid_override_pattern");
  // Nemotron 3 Super's MTP: num_nextn_predict_layers modules of mtp_hybrid_override_pattern's blocks.
  m.mtp_layers = r.optional_integer("num_nextn_predict_layers", 0, 64).value_or(0);
  m.mtp_pattern = r.optional_string("mtp_hybrid_override_pattern").value_or("");
  check_mtp_pattern(m, r, "mtp_hybrid_override_pattern");
  return m;
}

// gpt-oss (configuration_gpt_oss.py): every layer MoE, experts of intermediate_size with biases
// (attention_bias), sliding-window and full attention per layer_types.
Model read_gpt_oss(ObjectReader& r) {
  Model m = read_rotary_decoder(r);
  m.activation = Activation::swiglu;  // clamped SwiGLU (modeling_gpt_oss.py GptOssExperts)
  m.activation_clamp = r.optional_positive("swiglu_limit").value_or(7.0);
  m.linear_bias = r.optional_boolean("attention_bias").value_or(true) ? LinearBias::all : LinearBias::none;
  m.moe_experts = r.integer("num_local_experts", 2, 1 << 16);
  m.moe_topk = r.optional_integer("num_experts_per_tok", 1, 1 << 16).value_or(4);
  m.moe_ffn_hidden = m.ffn_hidden;
  m.sliding_window = r.optional_integer("sliding_window", 1, kMax).value_or(0);
  if (m.sliding_window > 0 && r.has("layer_types")) {
    const nlohmann::json& types = r.array("layer_types");
    std::int64_t full = 0;
    for (const nlohmann::json& t : types) full += t.is_string() && t.get<std::string>() == "full_attention" ? 1 : 0;
    // Full-attention layers evenly spread among windowed ones: one every layers/full.
    if (full > 0) m.sliding_window_full_every = static_cast<std::int64_t>(types.size()) / full;
  }
  return m;
}

std::string model_type(ObjectReader& r) {
  if (auto t = r.optional_string("model_type")) return *t;
  const nlohmann::json& arch = r.array("architectures");
  std::string a = arch.empty() || !arch[0].is_string() ? "" : arch[0].get<std::string>();
  if (a.rfind("Llama", 0) == 0) return "llama";
  if (a.rfind("Mixtral", 0) == 0) return "mixtral";
  if (a.rfind("Mistral", 0) == 0) return "mistral";
  if (a.rfind("GPT2", 0) == 0) return "gpt2";
  if (a.rfind("GPTNeoX", 0) == 0) return "gpt_neox";
  if (a.rfind("DeepseekV3", 0) == 0) return "deepseek_v3";
  if (a.rfind("GptOss", 0) == 0) return "gpt_oss";
  if (a.rfind("Qwen3Moe", 0) == 0) return "qwen3_moe";
  r.fail("model_type", "missing required key (architectures[0] " + describe(arch.empty() ? nlohmann::json() : arch[0]) +
                           " is not a known family)");
}

}  // namespace

Model read_hf_config(ObjectReader& r) {
  std::string type = model_type(r);
  Model m;
  if (type == "llama" || type == "mistral" || type == "mixtral" || type == "qwen2" || type == "qwen2_moe" ||
      type == "qwen3" || type == "qwen3_moe") {
    m = read_llama_like(r, type);
  } else if (type == "deepseek_v3" || type == "kimi_k2") {
    m = read_deepseek_v3(r);
  } else if (type == "gpt_oss") {
    m = read_gpt_oss(r);
  } else if (type == "nemotron_h") {
    m = read_nemotron_h(r);
  } else if (type == "gpt2") {
    m = read_gpt2(r);
  } else if (type == "gpt_neox") {
    m = read_gpt_neox(r);
  } else {
    r.fail("model_type",
           "expected one of llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, deepseek_v3, kimi_k2, gpt_oss, "
           "nemotron_h, gpt2, gpt_neox, got \"" +
               type + "\"");
  }
  auto name = r.optional_string("_name_or_path");
  m.name = name && !name->empty() ? *name : type + " (Hugging Face config)";
  m.source = "Hugging Face config.json (" + r.file() + ")";
  return m;
}

}  // namespace dtsim::spec
