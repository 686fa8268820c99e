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

namespace {

using NamedBits = std::vector<std::pair<std::string, std::uint32_t>>;

// Names of the bits set in `mask`, in table order, joined by commas.
std::string mask_text(const NamedBits& names, std::uint32_t mask) {
  std::string s;
  for (const auto& [name, bit] : names)
    if (mask & bit) s += (s.empty() ? "" : ",") + name;
  return s;
}

// The mask of a comma-separated list of distinct names from `names`.
std::uint32_t parse_mask(const NamedBits& names, const std::string& text, const std::string& where,
                         const char* noun, const char* choices) {
  std::uint32_t mask = 0;
  std::size_t at = 0;
  while (true) {
    std::size_t comma = text.find(',', at);
    std::string name = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    auto it = std::find_if(names.begin(), names.end(), [&](const auto& n) { return n.first == name; });
    if (it == names.end() || (mask & it->second))
      throw SpecError(where, std::string("expected distinct ") + noun + " among " + choices + " joined by commas, got \"" +
                                 text + "\"");
    mask |= it->second;
    if (comma == std::string::npos) return mask;
    at = comma + 1;
  }
}

}  // namespace

const std::vector<std::pair<std::string, std::uint32_t>>& recompute_module_names() {
  namespace m = recompute_module;
  static const std::vector<std::pair<std::string, std::uint32_t>> names{
      {"core_attn", m::core_attn}, {"layernorm", m::layernorm},     {"mlp", m::mlp},
      {"moe_act", m::moe_act},     {"mla_up_proj", m::mla_up_proj}, {"moe", m::moe},
      {"shared_experts", m::shared_experts}, {"op_sac", m::op_sac}};
  return names;
}

std::string recompute_modules_text(std::uint32_t mask) { return mask_text(recompute_module_names(), mask); }

std::uint32_t parse_recompute_modules(const std::string& text, const std::string& where) {
  return parse_mask(recompute_module_names(), text, where, "modules",
                    "core_attn, layernorm, mlp, moe_act, mla_up_proj, moe, shared_experts, op_sac");
}

const char* to_string(Optimizer o) {
  switch (o) {
    case Optimizer::adam: return "adam";
    case Optimizer::sgd: return "sgd";
    case Optimizer::muon: return "muon";
  }
  return "?";
}

const char* to_string(Peft p) { return p == Peft::lora ? "lora" : "none"; }

const std::vector<std::pair<std::string, std::uint32_t>>& lora_target_names() {
  namespace t = lora_target;
  static const std::vector<std::pair<std::string, std::uint32_t>> names{
      {"linear_qkv", t::linear_qkv}, {"linear_proj", t::linear_proj}, {"linear_fc1", t::linear_fc1},
      {"linear_fc2", t::linear_fc2}};
  return names;
}

std::string lora_targets_text(std::uint32_t mask) { return mask_text(lora_target_names(), mask); }

std::uint32_t parse_lora_targets(const std::string& text, const std::string& where) {
  return parse_mask(lora_target_names(), text, where, "targets", "linear_qkv, linear_proj, linear_fc1, linear_fc2");
}

}  // namespace dtsim::spec
