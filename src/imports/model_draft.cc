// A model shape read from a config: checked like a model file (spec/model_rules.cc), then matched
// against the shipped presets so that a familiar architecture imports as `--model NAME`.
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "imports/draft.h"
#include "spec/load.h"

namespace dtsim::imports {
namespace {

[[noreturn]] void fail(const Sized& s, const std::string& message) { throw SpecError(s.where, message); }

std::string possessive(const std::string& origin) { return origin + "'s"; }

// The fields without which there is no model, by the config's own names where it has them.
std::vector<std::string> missing_fields(const ModelDraft& d) {
  std::vector<std::string> out;
  if (!d.layers) out.push_back("layers");
  if (!d.hidden) out.push_back("hidden size");
  if (!d.heads) out.push_back("attention heads");
  if (!d.ffn_hidden) out.push_back("FFN hidden size");
  if (d.position_embedding == spec::PositionEmbedding::learned && !d.max_position)
    out.push_back("max position embeddings (learned positions)");
  return out;
}

void check_heads(const ModelDraft& d, const spec::Model& m) {
  if (d.kv_heads && (m.kv_heads > m.heads || m.heads % m.kv_heads != 0))
    fail(*d.kv_heads, "expected a divisor of " + d.heads->name + " (" + std::to_string(m.heads) + ") for " +
                          d.kv_heads->name + ", got " + std::to_string(m.kv_heads));
  if (m.head_dim == 0 && m.hidden % m.heads != 0)
    fail(*d.heads, "expected a divisor of " + d.hidden->name + " (" + std::to_string(m.hidden) + ") for " +
                       d.heads->name + ", got " + std::to_string(m.heads));
}

void read_moe(const ModelDraft& d, spec::Model& m) {
  if (!d.moe_experts) return;
  m.moe_experts = d.moe_experts->value;
  m.moe_topk = d.moe_topk ? d.moe_topk->value : 0;
  m.moe_ffn_hidden = d.moe_ffn_hidden ? d.moe_ffn_hidden->value : m.ffn_hidden;
  m.moe_shared_ffn_hidden = d.moe_shared_ffn_hidden ? d.moe_shared_ffn_hidden->value : 0;
  if (m.moe_topk == 0) fail(*d.moe_experts, "expected a router top-k with " + d.moe_experts->name + ", got none");
  if (m.moe_topk > m.moe_experts)
    fail(*d.moe_topk, "expected at most " + d.moe_experts->name + " (" + std::to_string(m.moe_experts) + ") for " +
                          d.moe_topk->name + ", got " + std::to_string(m.moe_topk));
}

spec::Model build(const ModelDraft& d, const std::string& file) {
  spec::Model m;
  m.name = "imported from " + file;
  m.source = file;
  m.layers = d.layers->value;
  m.hidden = d.hidden->value;
  m.heads = d.heads->value;
  m.kv_heads = d.kv_heads ? d.kv_heads->value : m.heads;
  m.head_dim = d.head_dim ? d.head_dim->value : 0;
  m.ffn_hidden = d.ffn_hidden->value;
  m.activation = d.activation;
  m.vocab = d.vocab ? d.vocab->value : 0;
  m.position_embedding = d.position_embedding;
  m.max_position = d.max_position ? d.max_position->value : 0;
  m.tied_embeddings = d.tied_embeddings;
  m.norm = d.norm;
  m.linear_bias = d.linear_bias;
  m.qk_norm = d.qk_norm;
  m.hidden_dropout = d.hidden_dropout;
  m.attention_dropout = d.attention_dropout;
  check_heads(d, m);
  if (m.head_dim == 0) m.head_dim = m.hidden / m.heads;
  read_moe(d, m);
  return m;
}

// `m` as it compares with preset `p`: name and source are not shape, max_position only counts for a
// learned position table, and an unknown vocabulary takes the preset's.
spec::Model comparable(spec::Model m, const spec::Model& p, bool vocab_known) {
  m.name = p.name;
  m.source = p.source;
  if (!vocab_known) m.vocab = p.vocab;
  if (m.position_embedding != spec::PositionEmbedding::learned &&
      p.position_embedding != spec::PositionEmbedding::learned)
    m.max_position = p.max_position;
  return m;
}

// What differs between `m` and preset `p`, for a note ("vocab 50304 (preset 51200)").
std::vector<std::string> differences(const spec::Model& m, const spec::Model& p) {
  std::vector<std::string> out;
  auto num = [&](const char* key, std::int64_t a, std::int64_t b) {
    if (a != b) out.push_back(std::string(key) + " " + std::to_string(a) + " (preset " + std::to_string(b) + ")");
  };
  auto word = [&](const char* key, const std::string& a, const std::string& b) {
    if (a != b) out.push_back(std::string(key) + " " + a + " (preset " + b + ")");
  };
  auto yes = [](bool b) { return std::string(b ? "true" : "false"); };
  num("layers", m.layers, p.layers);
  num("hidden", m.hidden, p.hidden);
  num("heads", m.heads, p.heads);
  num("kv_heads", m.kv_heads, p.kv_heads);
  num("head_dim", m.head_dim, p.head_dim);
  num("ffn_hidden", m.ffn_hidden, p.ffn_hidden);
  word("activation", to_string(m.activation), to_string(p.activation));
  num("vocab", m.vocab, p.vocab);
  word("position_embedding", to_string(m.position_embedding), to_string(p.position_embedding));
  num("max_position", m.max_position, p.max_position);
  word("tied_embeddings", yes(m.tied_embeddings), yes(p.tied_embeddings));
  word("norm", to_string(m.norm), to_string(p.norm));
  word("linear_bias", to_string(m.linear_bias), to_string(p.linear_bias));
  word("qk_norm", yes(m.qk_norm), yes(p.qk_norm));
  num("moe_experts", m.moe_experts, p.moe_experts);
  num("moe_topk", m.moe_topk, p.moe_topk);
  num("moe_ffn_hidden", m.moe_ffn_hidden, p.moe_ffn_hidden);
  num("moe_shared_ffn_hidden", m.moe_shared_ffn_hidden, p.moe_shared_ffn_hidden);
  num("moe_dense_layers", m.moe_dense_layers, p.moe_dense_layers);
  word("mla", yes(m.mla.on()), yes(p.mla.on()));
  num("mtp_layers", m.mtp_layers, p.mtp_layers);
  num("sliding_window", m.sliding_window, p.sliding_window);
  auto prob = [&](const char* key, double a, double b) {
    auto text = [](double v) {
      std::ostringstream o;
      o << v;  // 0.1, 0
      return o.str();
    };
    if (a != b) out.push_back(std::string(key) + " " + text(a) + " (preset " + text(b) + ")");
  };
  prob("hidden_dropout", m.hidden_dropout, p.hidden_dropout);
  prob("attention_dropout", m.attention_dropout, p.attention_dropout);
  return out;
}

struct Nearest {
  std::string name;
  std::vector<std::string> diffs;
};

// The shipped presets (a preset that does not load is skipped: matching is a convenience).
std::vector<std::pair<std::string, spec::Model>> presets() {
  std::vector<std::pair<std::string, spec::Model>> out;
  for (const std::string& name : spec::preset_names("models")) {
    try {
      out.emplace_back(name, spec::load_model(name));
    } catch (const SpecError&) {
    }
  }
  return out;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

void resolve_model(const ModelDraft& d, const std::string& file, JobDraft& job, Imported& out) {
  if (!d.layers && !d.hidden && !d.heads) {
    out.notes.push_back("model: " + d.origin + " does not define the architecture; pass --model");
    return;
  }
  if (std::vector<std::string> missing = missing_fields(d); !missing.empty()) {
    out.notes.push_back("model: " + d.origin + " gives only part of the architecture (no " + join(missing) +
                        "); pass --model");
    return;
  }
  spec::Model m = build(d, file);
  std::optional<Nearest> nearest;
  for (const auto& [name, preset] : presets()) {
    spec::Model x = comparable(m, preset, d.vocab.has_value());
    if (x == preset) {
      job.model = name;
      out.notes.push_back("model = " + name + " (" + possessive(d.origin) + " shape matches the preset" +
                          (d.vocab ? ")" : "; vocab " + std::to_string(preset.vocab) + " from the preset, " +
                                               d.vocab_unknown + ")"));
      return;
    }
    std::vector<std::string> diffs = differences(x, preset);
    if (!nearest || diffs.size() < nearest->diffs.size()) nearest = Nearest{name, diffs};
  }
  std::string near = nearest && nearest->diffs.size() <= 3
                         ? "; nearest preset " + nearest->name + " differs in " + join(nearest->diffs)
                         : "";
  if (!d.vocab) {
    out.notes.push_back("model: no preset has " + possessive(d.origin) + " shape and the vocabulary size is unknown (" +
                        d.vocab_unknown + near + "); pass --model or a model file");
    return;
  }
  out.model = m;
  out.notes.push_back("model: the architecture " + d.origin + " defines (no preset has its shape" + near + ")");
}

}  // namespace dtsim::imports
