// The model shape a Megatron-LM script declares, with the defaults megatron/training/arguments.py
// applies: ffn_hidden_size 4h (with --swiglu int(4h * 2/3 / 64) * 64), kv_channels h / heads,
// num_query_groups 1 under --group-query-attention, moe_router_topk 2, learned absolute positions,
// tied embeddings, LayerNorm, biases on every linear layer; the vocabulary padded by
// _vocab_size_with_padding to a multiple of make_vocab_size_divisible_by (128) x TP.
#include <limits>
#include <string>

#include "core/errors.h"
#include "imports/megatron.h"

namespace dtsim::imports::megatron {
namespace {

constexpr std::int64_t kMaxSize = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t kGpt2Vocab = 50257;  // GPT-2 BPE (Radford et al. 2019), Megatron's GPT2BPETokenizer

void read_heads(Args& a, ModelDraft& d) {
  d.layers = a.sized("--num-layers", 1, 100000);
  d.hidden = a.sized("--hidden-size", 1, kMaxSize);
  d.heads = a.sized("--num-attention-heads", 1, kMaxSize);
  d.head_dim = a.sized("--kv-channels", 1, kMaxSize);
  bool gqa = a.flag("--group-query-attention");
  std::optional<Sized> groups = a.sized("--num-query-groups", 1, kMaxSize);
  if (gqa) d.kv_heads = groups ? *groups : Sized{1, a.where("--group-query-attention"), "--num-query-groups (default 1)"};
  else if (groups) a.ignore("--num-query-groups", "used only with --group-query-attention");
}

void read_mlp(Args& a, ModelDraft& d, Imported& out) {
  bool swiglu = a.flag("--swiglu"), squared_relu = a.flag("--squared-relu");
  d.activation = swiglu ? spec::Activation::swiglu
                 : squared_relu ? spec::Activation::squared_relu
                                : spec::Activation::gelu;
  d.ffn_hidden = a.sized("--ffn-hidden-size", 1, kMaxSize);
  if (d.ffn_hidden || !d.hidden) return;
  std::int64_t h = d.hidden->value;
  // Python's int(4 * h * 2 / 3 / 64) * 64 truncates once; for positive h that is floor(8h / 192) * 64.
  std::int64_t ffn = swiglu ? 8 * h / 192 * 64 : 4 * h;
  if (ffn < 1 || ffn > kMaxSize)
    throw SpecError(d.hidden->where, "expected --ffn-hidden-size with --hidden-size " + std::to_string(h) +
                                         " (the default would be " + std::to_string(ffn) + "), got none");
  d.ffn_hidden = Sized{ffn, d.hidden->where, "--ffn-hidden-size"};
  out.notes.push_back("ffn_hidden = " + std::string(swiglu ? "8 x hidden / 3 rounded down to a multiple of 64" : "4 x hidden") +
                      " = " + std::to_string(ffn) + " (Megatron-LM's default without --ffn-hidden-size)");
}

void read_positions(Args& a, ModelDraft& d, const JobDraft& j, Imported& out) {
  auto type = a.choice("--position-embedding-type", {"learned_absolute", "rope", "mrope", "yarn", "relative", "none"});
  bool old_rope = a.flag("--use-rotary-position-embeddings"), old_none = a.flag("--no-position-embedding");
  using P = spec::PositionEmbedding;
  if (type) d.position_embedding = *type == "learned_absolute" ? P::learned : (*type == "none" || *type == "relative") ? P::none : P::rotary;
  else if (old_rope) d.position_embedding = P::rotary;
  else if (old_none) d.position_embedding = P::none;
  if (type == "relative") out.notes.push_back("position embedding: relative (T5 bias buckets) taken as none: a tiny table");
  d.max_position = a.sized("--max-position-embeddings", 1, kMaxSize);
  if (!d.max_position && d.position_embedding == P::learned && j.seq) {
    d.max_position = Sized{*j.seq, a.where("--seq-length"), "--seq-length"};
    out.notes.push_back("max_position = --seq-length (" + std::to_string(*j.seq) + "; no --max-position-embeddings)");
  }
}

void read_layers(Args& a, ModelDraft& d) {
  d.tied_embeddings = !a.flag("--untie-embeddings-and-output-weights");
  d.norm = a.choice("--normalization", {"LayerNorm", "RMSNorm"}) == "RMSNorm" ? spec::Norm::rmsnorm : spec::Norm::layernorm;
  bool no_bias = a.flag("--disable-bias-linear"), qkv_bias = a.flag("--add-qkv-bias");
  d.linear_bias = !no_bias ? spec::LinearBias::all : qkv_bias ? spec::LinearBias::qkv : spec::LinearBias::none;
  d.qk_norm = a.flag("--qk-layernorm");
  d.hidden_dropout = a.probability("--hidden-dropout").value_or(0.1);
  d.attention_dropout = a.probability("--attention-dropout").value_or(0.1);
}

void read_moe(Args& a, ModelDraft& d) {
  d.moe_experts = a.sized("--num-experts", 2, 1 << 16);
  std::optional<Sized> topk = a.sized("--moe-router-topk", 1, 1 << 16);
  d.moe_ffn_hidden = a.sized("--moe-ffn-hidden-size", 1, kMaxSize);
  d.moe_shared_ffn_hidden = a.sized("--moe-shared-expert-intermediate-size", 1, kMaxSize);
  if (!d.moe_experts) {
    for (const char* name : {"--moe-router-topk", "--moe-ffn-hidden-size", "--moe-shared-expert-intermediate-size"})
      a.ignore(name, "no --num-experts: a dense model");
    d.moe_ffn_hidden = d.moe_shared_ffn_hidden = std::nullopt;
    return;
  }
  d.moe_topk = topk ? *topk : Sized{2, a.where("--num-experts"), "--moe-router-topk (default 2)"};
}

void read_vocab(Args& a, ModelDraft& d, const JobDraft& j, Imported& out) {
  std::optional<Sized> size = a.sized("--vocab-size", 1, kMaxSize);
  std::optional<std::string> tokenizer = a.text("--tokenizer-type");
  std::int64_t divisible = a.integer("--make-vocab-size-divisible-by", 1, std::int64_t{1} << 20).value_or(128);
  std::int64_t vocab = 0;
  std::string how, where = a.where("--tokenizer-type");
  if (tokenizer == "GPT2BPETokenizer" || (!tokenizer && a.has("--merge-file"))) {
    vocab = kGpt2Vocab;
    how = tokenizer ? "GPT2BPETokenizer's 50257" : "GPT-2 BPE's 50257, a --merge-file without --tokenizer-type";
  } else if (size) {
    bool null = tokenizer == "NullTokenizer";  // its vocab_size is --vocab-size + 1 (the end-of-document id)
    vocab = size->value + (null ? 1 : 0);
    how = null ? "NullTokenizer's --vocab-size + 1 = " + std::to_string(vocab)
               : "--vocab-size " + std::to_string(vocab) + ", taken as the tokenizer's size";
    where = size->where;
  } else {
    d.vocab_unknown =
        tokenizer ? "tokenizer " + quoted(*tokenizer) + " takes its size from its files" : "no --tokenizer-type or --vocab-size";
    return;
  }
  std::int64_t tp = j.tp.value_or(1), multiple = divisible * tp;
  std::int64_t padded = (vocab + multiple - 1) / multiple * multiple;
  d.vocab = Sized{padded, where, "vocab"};
  out.notes.push_back("vocab = " + std::to_string(padded) + " (" + how + ", padded to a multiple of " +
                      std::to_string(divisible) + " x " + std::to_string(tp) + " = " + std::to_string(multiple) +
                      " as Megatron-LM pads)");
}

}  // namespace

ModelDraft read_shape(Args& a, const JobDraft& j, Imported& out) {
  ModelDraft d;
  d.origin = "the script";
  read_heads(a, d);
  read_mlp(a, d, out);
  read_positions(a, d, j, out);
  read_layers(a, d);
  read_moe(a, d);
  read_vocab(a, d, j, out);
  return d;
}

}  // namespace dtsim::imports::megatron
