#include "spec/model_rules.h"

#include <initializer_list>
#include <limits>
#include <sstream>
#include <string>

namespace dtsim::spec {
namespace {

// The key the file itself uses for a field: dtsim's name first, then Hugging Face spellings.
std::string key(const ObjectReader& r, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (r.has(n)) return n;
  return *names.begin();
}

}  // namespace

std::optional<double> read_probability(ObjectReader& r, const std::string& name) {
  std::optional<double> p = r.optional_positive(name, true);
  if (p && *p >= 1.0) {
    std::ostringstream got;
    got << *p;  // as written: 1, 1.5
    r.fail(name, "expected a probability in [0, 1), got " + got.str());
  }
  return p;
}

Mamba read_mamba(ObjectReader& r, const MambaKeys& k) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int32_t>::max();
  Mamba m;
  m.heads = r.integer(k.heads, 1, kMax);
  m.head_dim = r.integer(k.head_dim, 1, kMax);
  m.state = r.integer(k.state, 1, kMax);
  m.groups = r.integer(k.groups, 1, kMax);
  m.conv = r.optional_integer(k.conv, 1, 64).value_or(4);
  m.chunk = r.optional_integer(k.chunk, 1, 1 << 16).value_or(128);
  check_mamba(m, r, k.groups);
  return m;
}

void check_mamba(const Mamba& mamba, const ObjectReader& r, const std::string& groups_key) {
  if (mamba.heads % mamba.groups != 0)
    r.fail(groups_key, "expected a divisor of heads (" + std::to_string(mamba.heads) + "), got " +
                           std::to_string(mamba.groups));
}

namespace {

// A pattern's letters, each a block the model can build: 'E' needs experts, 'M' the mixer.
void check_blocks(const Model& m, const ObjectReader& r, const std::string& k, const std::string& p) {
  if (p.empty()) r.fail(k, "expected a pattern of M, *, - and E (one per layer), got \"\"");
  for (char c : p)
    if (c != 'M' && c != '*' && c != '-' && c != 'E')
      r.fail(k, std::string("expected only M (Mamba), * (attention), - (MLP) and E (MoE), got '") + c + "' in \"" + p + "\"");
  if (p.find('E') != std::string::npos && !m.is_moe()) r.fail(k, "expected moe_experts for its E layers, got a dense model");
  if (p.find('M') != std::string::npos && !m.mamba.on()) r.fail(k, "expected a mamba mixer for its M layers, got none");
}

}  // namespace

void check_hybrid_pattern(Model& m, const ObjectReader& r, const std::string& k) {
  const std::string& p = m.hybrid_pattern;
  check_blocks(m, r, k, p);
  auto n = static_cast<std::int64_t>(p.size());
  if (m.layers == 0) m.layers = n;
  if (n != m.layers)
    r.fail(k, "expected one character per layer (" + std::to_string(m.layers) + "), got " + std::to_string(n));
  if (p.find('E') == std::string::npos && m.is_moe())
    r.fail(k, "expected an E layer for the model's experts, got none in \"" + p + "\"");
  if (p.find('M') == std::string::npos && m.mamba.on())
    r.fail(k, "expected an M layer for the mamba mixer, got none in \"" + p + "\"");
  if (m.moe_dense_layers > 0) r.fail(k, "expected no moe_dense_layers with a pattern (write its - layers), got " +
                                           std::to_string(m.moe_dense_layers));
  if (m.sliding_window > 0) r.fail(k, "expected no sliding_window with a pattern (not modelled), got " +
                                          std::to_string(m.sliding_window));
}

void check_mtp_pattern(const Model& m, const ObjectReader& r, const std::string& k) {
  if (!m.hybrid()) {
    if (!m.mtp_pattern.empty()) r.fail(k, "expected no MTP pattern without a hybrid_pattern, got \"" + m.mtp_pattern + "\"");
    return;
  }
  if (m.mtp_layers == 0) {
    if (!m.mtp_pattern.empty()) r.fail(k, "expected mtp_layers >= 1 for an MTP pattern, got none");
    return;
  }
  if (m.mtp_pattern.empty()) r.fail(k, "missing required key (a hybrid model's MTP modules need their blocks)");
  check_blocks(m, r, k, m.mtp_pattern);
}

void check_model(Model& m, const ObjectReader& r) {
  std::string heads = key(r, {"heads", "num_attention_heads", "n_head"});
  if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0)
    r.fail(key(r, {"kv_heads", "num_key_value_heads"}),
           "expected a divisor of heads (" + std::to_string(m.heads) + "), got " + std::to_string(m.kv_heads));
  if (m.head_dim == 0) {
    if (m.hidden % m.heads != 0)
      r.fail(heads, "expected a divisor of hidden (" + std::to_string(m.hidden) + ") or an explicit head_dim, got " +
                        std::to_string(m.heads));
    m.head_dim = m.hidden / m.heads;
  }
  if (m.position_embedding == PositionEmbedding::learned && m.max_position == 0)
    r.fail(key(r, {"max_position", "n_positions"}), "missing required key (position_embedding is \"learned\")");
  if (m.moe_latent > m.hidden)  // a projection down from the hidden size (moe_layer.py fc1_latent_proj)
    r.fail(key(r, {"moe_latent", "moe_latent_size"}),
           "expected at most hidden (" + std::to_string(m.hidden) + "), got " + std::to_string(m.moe_latent));
  if (m.is_moe() && m.moe_topk > m.moe_experts)
    r.fail(key(r, {"moe_topk", "num_experts_per_tok"}),
           "expected at most moe_experts (" + std::to_string(m.moe_experts) + "), got " + std::to_string(m.moe_topk));
}

}  // namespace dtsim::spec
