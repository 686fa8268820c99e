#include "spec/model_rules.h"

#include <string>

namespace dtsim::spec {

void check_model(Model& m, const ObjectReader& r) {
  const std::string kv_key = r.has("kv_heads") ? "kv_heads" : "num_key_value_heads";
  if (m.kv_heads > m.heads || m.heads % m.kv_heads != 0)
    r.fail(kv_key, "expected a divisor of heads (" + std::to_string(m.heads) + "), got " +
                       std::to_string(m.kv_heads));
  if (m.head_dim == 0) {
    if (m.hidden % m.heads != 0)
      r.fail(r.has("heads") ? "heads" : "num_attention_heads",
             "expected a divisor of hidden (" + std::to_string(m.hidden) + ") or an explicit head_dim, got " +
                 std::to_string(m.heads));
    m.head_dim = m.hidden / m.heads;
  }
  if (m.position_embedding == PositionEmbedding::learned && m.max_position == 0)
    r.fail("max_position", "missing required key (position_embedding is \"learned\")");
  if (m.is_moe() && m.moe_topk > m.moe_experts)
    r.fail("moe_topk", "expected at most moe_experts (" + std::to_string(m.moe_experts) + "), got " +
                           std::to_string(m.moe_topk));
}

}  // namespace dtsim::spec
