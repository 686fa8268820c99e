#pragma once
// The transformer architecture: a value, valid once it exists (parse_model validates).
#include <cstdint>
#include <optional>
#include <string>

namespace dtsim::spec {

enum class Activation { gelu, relu, squared_relu, swiglu, gated_gelu };
enum class PositionEmbedding { learned, rotary, alibi, none };
enum class Norm { layernorm, rmsnorm };
/// Which linear layers carry a bias: none (Llama), qkv only (Qwen2), all (GPT-2/3, NeoX).
enum class LinearBias { none, qkv, all };

/// A decoder-only transformer. Sizes are counts (not bytes).
struct Model {
  std::string name;
  std::string source;                 ///< citation for the numbers
  std::int64_t layers = 0;
  std::int64_t hidden = 0;
  std::int64_t heads = 0;
  std::int64_t kv_heads = 0;          ///< = heads for multi-head attention, fewer for GQA/MQA
  std::int64_t head_dim = 0;          ///< usually hidden / heads (Qwen3, Mistral-NeMo differ)
  std::int64_t ffn_hidden = 0;        ///< dense MLP intermediate size
  Activation activation = Activation::gelu;
  std::int64_t vocab = 0;
  PositionEmbedding position_embedding = PositionEmbedding::learned;
  std::int64_t max_position = 0;      ///< rows of a learned position table (0 otherwise)
  bool tied_embeddings = false;
  Norm norm = Norm::layernorm;
  LinearBias linear_bias = LinearBias::all;
  bool qk_norm = false;               ///< per-head RMSNorm on q and k (Qwen3)
  std::int64_t moe_experts = 0;       ///< 0 = dense model
  std::int64_t moe_topk = 0;
  std::int64_t moe_ffn_hidden = 0;    ///< expert intermediate size
  std::int64_t moe_shared_ffn_hidden = 0;  ///< always-on shared expert(s), 0 if none

  [[nodiscard]] bool is_moe() const { return moe_experts > 0; }
  [[nodiscard]] bool gated() const {
    return activation == Activation::swiglu || activation == Activation::gated_gelu;
  }
  bool operator==(const Model&) const = default;
};

[[nodiscard]] const char* to_string(Activation a);
[[nodiscard]] const char* to_string(PositionEmbedding p);
[[nodiscard]] const char* to_string(Norm n);
[[nodiscard]] const char* to_string(LinearBias b);

}  // namespace dtsim::spec
