// dtsim's own model format (models/*.json). Hugging Face configs: hf_config.cc.
#include <limits>
#include <numeric>

#include "core/errors.h"
#include "spec/json_reader.h"
#include "spec/load.h"
#include "spec/model_rules.h"
#include "spec/pipeline_layout.h"

namespace dtsim::spec {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int32_t>::max();

void read_moe(ObjectReader& r, Model& m) {
  m.moe_experts = r.optional_integer("moe_experts", 1, 1 << 16).value_or(0);
  m.moe_topk = r.optional_integer("moe_topk", 1, 1 << 16).value_or(0);
  m.moe_ffn_hidden = r.optional_integer("moe_ffn_hidden", 1, kMax).value_or(0);
  m.moe_shared_ffn_hidden = r.optional_integer("moe_shared_ffn_hidden", 1, kMax).value_or(0);
  // One expert is a dense model written oddly; keep the representation unique.
  if (m.moe_experts == 1) r.fail("moe_experts", "expected an integer >= 2 or null, got 1");
  if (m.moe_experts > 0 && m.moe_topk == 0) r.fail("moe_topk", "missing required key (moe_experts is set)");
  if (m.moe_experts > 0 && m.moe_ffn_hidden == 0)
    r.fail("moe_ffn_hidden", "missing required key (moe_experts is set)");
  if (m.moe_experts == 0 && (m.moe_topk > 0 || m.moe_ffn_hidden > 0 || m.moe_shared_ffn_hidden > 0))
    r.fail("moe_experts", "missing required key (moe_topk or moe_ffn_hidden is set)");
  m.moe_latent = r.optional_integer("moe_latent", 1, kMax).value_or(0);
  if (m.moe_latent > 0 && !m.is_moe()) r.fail("moe_latent", "expected moe_experts for a latent expert width, got a dense model");
}

// The layouts the model's recipe uses, keyed by (pp, vp); each must hold the model's layers.
void read_layouts(ObjectReader& r, Model& m) {
  if (!r.has("pipeline_layouts")) return;
  const nlohmann::json& arr = r.array("pipeline_layouts");
  for (std::size_t i = 0; i < arr.size(); ++i) {
    ObjectReader e(arr[i], r.file(), r.pointer("pipeline_layouts") + "/" + std::to_string(i));
    ReferenceLayout l{.pp = e.integer("pp", 2, 65536), .vp = e.integer("vp", 1, 1024), .text = e.string("layout")};
    e.finish();
    if (m.reference_layout(l.pp, l.vp) != nullptr)
      e.fail("pp", "expected one layout per (pp, vp), got a second for pp " + std::to_string(l.pp) + " vp " +
                       std::to_string(l.vp));
    l.chunk_layers = parse_pipeline_layout(l.text, m, l.pp, l.vp, e.where("layout"));
    m.pipeline_layouts.push_back(std::move(l));
  }
}

// A hybrid model: its pattern (one character per layer) and its Mamba mixer. The pattern's
// blocks must be ones the model can build: 'E' needs experts, 'M' the mixer, and a pattern with
// experts needs an 'E'.
void read_hybrid(ObjectReader& r, Model& m) {
  if (r.has("mamba")) {
    ObjectReader a = r.object("mamba");
    m.mamba = read_mamba(a, {"heads", "head_dim", "state", "groups", "conv", "chunk"});
    a.finish();
  }
  auto pattern = r.optional_string("hybrid_pattern");
  if (!pattern) {
    if (m.mamba.on()) r.fail("hybrid_pattern", "missing required key (mamba is set)");
    return;
  }
  m.hybrid_pattern = *pattern;
  check_hybrid_pattern(m, r, "hybrid_pattern");
}

Model read_native(ObjectReader& r) {
  Model m;
  m.name = r.string("name");
  m.source = r.optional_string("source").value_or("");
  m.layers = r.integer("layers", 1, 100000);
  m.hidden = r.integer("hidden", 1, kMax);
  m.heads = r.integer("heads", 1, kMax);
  m.kv_heads = r.integer("kv_heads", 1, kMax);
  m.head_dim = r.optional_integer("head_dim", 1, kMax).value_or(0);
  m.ffn_hidden = r.integer("ffn_hidden", 1, kMax);
  m.activation = static_cast<Activation>(
      r.choice("activation", {"gelu", "relu", "squared_relu", "swiglu", "gated_gelu"}));
  m.vocab = r.integer("vocab", 1, kMax);
  m.position_embedding =
      static_cast<PositionEmbedding>(r.choice("position_embedding", {"learned", "rotary", "alibi", "none"}));
  m.max_position = r.optional_integer("max_position", 1, kMax).value_or(0);
  m.tied_embeddings = r.boolean("tied_embeddings");
  m.norm = static_cast<Norm>(r.choice("norm", {"layernorm", "rmsnorm"}));
  m.linear_bias = static_cast<LinearBias>(r.choice("linear_bias", {"none", "qkv", "all"}));
  m.qk_norm = r.optional_boolean("qk_norm").value_or(false);
  read_moe(r, m);
  m.moe_dense_layers = r.optional_integer("moe_dense_layers", 0, m.layers).value_or(0);
  if (m.moe_dense_layers > 0 && !m.is_moe())
    r.fail("moe_dense_layers", "expected 0 or absent for a dense model (no moe_experts), got " +
                                   std::to_string(m.moe_dense_layers));
  if (m.is_moe() && m.moe_dense_layers == m.layers)
    r.fail("moe_dense_layers", "expected fewer than layers (" + std::to_string(m.layers) + "), got " +
                                   std::to_string(m.moe_dense_layers));
  if (r.has("mla")) {
    ObjectReader a = r.object("mla");
    m.mla.q_lora_rank = a.optional_integer("q_lora_rank", 1, kMax).value_or(0);
    m.mla.kv_lora_rank = a.integer("kv_lora_rank", 1, kMax);
    m.mla.qk_nope_head_dim = a.integer("qk_nope_head_dim", 1, kMax);
    m.mla.qk_rope_head_dim = a.integer("qk_rope_head_dim", 1, kMax);
    m.mla.v_head_dim = a.integer("v_head_dim", 1, kMax);
    a.finish();
  }
  m.mtp_layers = r.optional_integer("mtp_layers", 0, 64).value_or(0);
  m.mtp_pattern = r.optional_string("mtp_pattern").value_or("");
  m.mtp_shared_weights = r.optional_boolean("mtp_shared_weights").value_or(false);
  m.mtp_bf16 = r.optional_boolean("mtp_bf16").value_or(false);
  if ((m.mtp_shared_weights || m.mtp_bf16) && m.mtp_layers == 0)
    r.fail(m.mtp_shared_weights ? "mtp_shared_weights" : "mtp_bf16", "expected mtp_layers >= 1 for MTP settings, got none");
  m.sliding_window = r.optional_integer("sliding_window", 1, kMax).value_or(0);
  m.sliding_window_full_every = r.optional_integer("sliding_window_full_every", 1, kMax).value_or(0);
  if (m.sliding_window_full_every > 0 && m.sliding_window == 0)
    r.fail("sliding_window", "missing required key (sliding_window_full_every is set)");
  m.activation_clamp = r.optional_positive("activation_clamp").value_or(0);
  if (m.activation_clamp > 0 && !m.gated())
    r.fail("activation_clamp", std::string("expected a gated activation (swiglu, gated_gelu) to clamp, got ") +
                                   to_string(m.activation));
  m.rope_mscale = r.optional_positive("rope_mscale").value_or(1.0);
  if (m.rope_mscale != 1.0 && m.position_embedding != PositionEmbedding::rotary)
    r.fail("rope_mscale", std::string("expected rotary position embeddings to scale, got position_embedding ") +
                              to_string(m.position_embedding));
  m.hidden_dropout = read_probability(r, "hidden_dropout").value_or(0.1);
  m.attention_dropout = read_probability(r, "attention_dropout").value_or(0.1);
  read_hybrid(r, m);
  check_mtp_pattern(m, r, "mtp_pattern");
  read_layouts(r, m);
  r.finish();
  return m;
}

}  // namespace

Model parse_model(const std::string& text, const std::string& file) {
  nlohmann::json j = parse_json_text(text, file);
  ObjectReader r(j, file, "");
  Model m = (r.has("model_type") || r.has("architectures")) ? read_hf_config(r) : read_native(r);
  check_model(m, r);
  return m;
}

std::int64_t Model::count_blocks(char c, std::int64_t first, std::int64_t n) const {
  if (!hybrid()) return c == 'T' ? n : 0;
  std::int64_t k = 0;
  for (std::int64_t i = first; i < first + n; ++i) k += layer_block(i) == c ? 1 : 0;
  return k;
}

Model block_variant(const Model& m, char c) {
  if (c == 'T') return m;
  Model v = c == 'E' ? m : dense_variant(m);
  v.block = c == 'M' ? Block::mamba : c == '*' ? Block::attention : Block::mlp;
  v.mtp_layers = 0;  // the model's MTP modules are the whole model's, priced from their blocks
  v.mtp_pattern.clear();
  v.mtp_shared_weights = v.mtp_bf16 = false;
  return v;
}

const char* to_string(Block b) {
  switch (b) {
    case Block::transformer: return "transformer";
    case Block::attention: return "attention";
    case Block::mlp: return "mlp";
    case Block::mamba: return "mamba";
  }
  return "?";
}

Model dense_variant(const Model& m) {
  Model d = m;
  d.moe_experts = d.moe_topk = d.moe_ffn_hidden = d.moe_shared_ffn_hidden = d.moe_dense_layers = d.moe_latent = 0;
  return d;
}

double Model::windowed_attention_share(std::int64_t seq) const {
  if (sliding_window == 0 || sliding_window >= seq) return 1.0;
  // Causal full attention: seq^2/2 query-key pairs; a window w: w*(seq - w) + w^2/2.
  double s = static_cast<double>(seq), w = static_cast<double>(sliding_window);
  return (w * (s - w) + w * w / 2) / (s * s / 2);
}

double Model::attention_share(std::int64_t seq) const {
  if (sliding_window == 0 || sliding_window >= seq) return 1.0;
  double full = sliding_window_full_every > 0 ? 1.0 / static_cast<double>(sliding_window_full_every) : 0.0;
  return full + (1 - full) * windowed_attention_share(seq);
}

const ReferenceLayout* Model::reference_layout(std::int64_t pp, std::int64_t vp) const {
  for (const ReferenceLayout& l : pipeline_layouts)
    if (l.pp == pp && l.vp == vp &&
        std::accumulate(l.chunk_layers.begin(), l.chunk_layers.end(), std::int64_t{0}) == layers)
      return &l;
  return nullptr;
}

Model load_model(const std::string& name_or_path, const std::string& flag) {
  return load_spec("models", name_or_path, flag, parse_model);
}

}  // namespace dtsim::spec
