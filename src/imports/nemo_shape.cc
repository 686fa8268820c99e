// The model shape of a NeMo recipe (model.num_layers ...) or a Megatron-Bridge provider, with
// Megatron-Core TransformerConfig's defaults for what is absent: ffn_hidden_size 4h,
// num_query_groups = heads, learned absolute positions, shared embeddings, LayerNorm, biases.
#include <limits>
#include <string>

#include "core/errors.h"
#include "imports/nemo.h"

namespace dtsim::imports::nemo {
namespace {

constexpr std::int64_t kMaxSize = std::numeric_limits<std::int32_t>::max();
using spec::Activation;

// NeMo 1.x model.activation: gelu, fast-gelu, swiglu, fast-swiglu, geglu, squared-relu, relu...
Activation named_activation(Recipe& r, const std::string& a) {
  bool fast = a.rfind("fast-", 0) == 0 || a.rfind("approx-", 0) == 0;
  std::string base = fast ? a.substr(a.find('-') + 1) : a;
  if (base == "gelu") return Activation::gelu;
  if (base == "swiglu") return Activation::swiglu;
  if (base == "geglu") return Activation::gated_gelu;
  if (base == "squared-relu") return Activation::squared_relu;
  if (base == "relu") return Activation::relu;
  std::optional<Recipe::Found> f = r.find(model_paths("activation"));
  r.fail(*f, "expected one of gelu, fast-gelu, swiglu, fast-swiglu, geglu, fast-geglu, squared-relu, relu for " +
                 f->path + ", got " + quoted(a));
}

// Megatron-Bridge: gated_linear_unit with activation_func (a name, or {_target_: torch...silu}).
Activation function_activation(Recipe& r, bool gated) {
  std::optional<std::string> func = r.text(join_paths(model_paths("activation_func._target_"), model_paths("activation_func")));
  std::string f = func.value_or("gelu");
  if (gated && (f.find("silu") != std::string::npos || f.find("swish") != std::string::npos)) return Activation::swiglu;
  if (gated && f.find("gelu") != std::string::npos) return Activation::gated_gelu;
  if (!gated && f.find("squared_relu") != std::string::npos) return Activation::squared_relu;
  if (!gated && f.find("relu") != std::string::npos) return Activation::relu;
  if (!gated) return Activation::gelu;  // gelu, or another elementwise function priced alike
  std::optional<Recipe::Found> at = r.find(model_paths("gated_linear_unit"));
  r.fail(*at, "expected a gated activation dtsim models (silu, gelu) with " + at->path + ", got " + quoted(f));
}

void read_mlp(Recipe& r, ModelDraft& d, Imported& out) {
  if (auto a = r.text(model_paths("activation")); a) d.activation = named_activation(r, *a);
  else d.activation = function_activation(r, r.boolean(model_paths("gated_linear_unit")).value_or(false));
  d.ffn_hidden = r.sized(model_paths("ffn_hidden_size"), 1, kMaxSize);
  if (d.ffn_hidden || !d.hidden || 4 * d.hidden->value > kMaxSize) return;
  d.ffn_hidden = Sized{4 * d.hidden->value, d.hidden->where, "ffn_hidden_size"};
  out.notes.push_back("ffn_hidden = 4 x hidden = " + std::to_string(d.ffn_hidden->value) +
                      " (Megatron-Core's default without ffn_hidden_size)");
}

void read_positions(Recipe& r, ModelDraft& d, Imported& out) {
  using P = spec::PositionEmbedding;
  auto type = r.choice(model_paths("position_embedding_type"), {"learned_absolute", "rope", "mrope", "yarn", "alibi", "none"});
  if (type) d.position_embedding = *type == "learned_absolute" ? P::learned : *type == "alibi" ? P::alibi : *type == "none" ? P::none : P::rotary;
  d.max_position = r.sized(model_paths("max_position_embeddings"), 1, kMaxSize);
  if (d.max_position || d.position_embedding != P::learned) return;
  if (auto seq = r.sized(join_paths(model_paths("encoder_seq_length"), model_paths("seq_length")), 1, kMaxSize); seq) {
    d.max_position = seq;
    out.notes.push_back("max_position = the sequence length " + std::to_string(seq->value) + " (no max_position_embeddings)");
  }
}

void read_layers(Recipe& r, ModelDraft& d) {
  d.tied_embeddings = r.boolean(model_paths("share_embeddings_and_output_weights")).value_or(true);
  if (auto n = r.choice(model_paths("normalization"),
                        {"layernorm", "LayerNorm", "layernorm1p", "low_precision_layernorm", "rmsnorm", "RMSNorm"});
      n)
    d.norm = (*n == "rmsnorm" || *n == "RMSNorm") ? spec::Norm::rmsnorm : spec::Norm::layernorm;
  bool bias = r.boolean(join_paths(model_paths("bias"), model_paths("add_bias_linear"))).value_or(true);
  bool qkv = r.boolean(model_paths("add_qkv_bias")).value_or(false);
  d.linear_bias = bias ? spec::LinearBias::all : qkv ? spec::LinearBias::qkv : spec::LinearBias::none;
  d.qk_norm = r.boolean(model_paths("qk_layernorm")).value_or(false);
  // Absent: NeMo's megatron_gpt_config.yaml and Megatron-Core's TransformerConfig default, 0.1.
  d.hidden_dropout = r.probability(model_paths("hidden_dropout")).value_or(0.1);
  d.attention_dropout = r.probability(model_paths("attention_dropout")).value_or(0.1);
}

void read_moe(Recipe& r, ModelDraft& d) {
  d.moe_experts = r.sized(model_paths("num_moe_experts"), 2, 1 << 16);
  d.moe_topk = r.sized(model_paths("moe_router_topk"), 1, 1 << 16);
  d.moe_ffn_hidden = r.sized(model_paths("moe_ffn_hidden_size"), 1, kMaxSize);
  d.moe_shared_ffn_hidden = r.sized(model_paths("moe_shared_expert_intermediate_size"), 1, kMaxSize);
  if (d.moe_experts && !d.moe_topk) d.moe_topk = Sized{2, d.moe_experts->where, "moe_router_topk (default 2)"};
}

void read_vocab(Recipe& r, ModelDraft& d, Imported& out) {
  d.vocab = r.sized(join_paths(model_paths("padded_vocab_size"), model_paths("vocab_size")), 1, kMaxSize);
  if (d.vocab) {
    out.notes.push_back("vocab = " + std::to_string(d.vocab->value) + " (" + d.vocab->name + ")");
    return;
  }
  auto tokenizer = r.text({"model.tokenizer.type", "model.tokenizer.tokenizer_model", "tokenizer.tokenizer_model",
                           "data.tokenizer.pretrained_model_name"});
  d.vocab_unknown = tokenizer ? "tokenizer " + quoted(*tokenizer) + " takes its size from its files" : "no vocab_size";
}

}  // namespace

Paths join_paths(Paths a, const Paths& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

ModelDraft read_shape(Recipe& r, Imported& out) {
  ModelDraft d;
  d.origin = "the recipe";
  d.layers = r.sized(model_paths("num_layers"), 1, 100000);
  d.hidden = r.sized(model_paths("hidden_size"), 1, kMaxSize);
  d.heads = r.sized(model_paths("num_attention_heads"), 1, kMaxSize);
  d.kv_heads = r.sized(model_paths("num_query_groups"), 1, kMaxSize);
  d.head_dim = r.sized(model_paths("kv_channels"), 1, kMaxSize);
  read_mlp(r, d, out);
  read_positions(r, d, out);
  read_layers(r, d);
  read_moe(r, d);
  read_vocab(r, d, out);
  return d;
}

}  // namespace dtsim::imports::nemo
