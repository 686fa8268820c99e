// Names of spec enums, as they appear in JSON and on the command line.
#include <algorithm>

#include "core/errors.h"
#include "spec/job.h"
#include "spec/model.h"

namespace dtsim::spec {

const char* to_string(Activation a) {
  switch (a) {
    case Activation::gelu: return "gelu";
    case Activation::relu: return "relu";
    case Activation::squared_relu: return "squared_relu";
    case Activation::swiglu: return "swiglu";
    case Activation::gated_gelu: return "gated_gelu";
  }
  return "?";
}

const char* to_string(PositionEmbedding p) {
  switch (p) {
    case PositionEmbedding::learned: return "learned";
    case PositionEmbedding::rotary: return "rotary";
    case PositionEmbedding::alibi: return "alibi";
    case PositionEmbedding::none: return "none";
  }
  return "?";
}

const char* to_string(Norm n) { return n == Norm::layernorm ? "layernorm" : "rmsnorm"; }

const char* to_string(LinearBias b) {
  switch (b) {
    case LinearBias::none: return "none";
    case LinearBias::qkv: return "qkv";
    case LinearBias::all: return "all";
  }
  return "?";
}

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
    case Recompute::automatic: return "auto";
  }
  return "?";
}

const std::vector<std::pair<std::string, std::uint32_t>>& recompute_module_names() {
  namespace m = recompute_module;
  static const std::vector<std::pair<std::string, std::uint32_t>> names{
      {"core_attn", m::core_attn}, {"layernorm", m::layernorm},     {"mlp", m::mlp},
      {"moe_act", m::moe_act},     {"mla_up_proj", m::mla_up_proj}, {"moe", m::moe},
      {"shared_experts", m::shared_experts}};
  return names;
}

std::string recompute_modules_text(std::uint32_t mask) {
  std::string s;
  for (const auto& [name, bit] : recompute_module_names())
    if (mask & bit) s += (s.empty() ? "" : ",") + name;
  return s;
}

std::uint32_t parse_recompute_modules(const std::string& text, const std::string& where) {
  std::uint32_t mask = 0;
  std::size_t at = 0;
  while (true) {
    std::size_t comma = text.find(',', at);
    std::string name = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    const auto& names = recompute_module_names();
    auto it = std::find_if(names.begin(), names.end(), [&](const auto& n) { return n.first == name; });
    if (it == names.end() || (mask & it->second))
      throw SpecError(where, "expected distinct modules among core_attn, layernorm, mlp, moe_act, mla_up_proj, moe, "
                             "shared_experts joined by commas, got \"" + text + "\"");
    mask |= it->second;
    if (comma == std::string::npos) return mask;
    at = comma + 1;
  }
}

const char* to_string(Optimizer o) { return o == Optimizer::adam ? "adam" : "sgd"; }

}  // namespace dtsim::spec
