// dtsim's own model format (models/*.json). Hugging Face configs: hf_config.cc.
#include <limits>

#include "core/errors.h"
#include "spec/json_reader.h"
#include "spec/load.h"
#include "spec/model_rules.h"

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

Model load_model(const std::string& name_or_path, const std::string& flag) {
  return load_spec("models", name_or_path, flag, parse_model);
}

}  // namespace dtsim::spec
