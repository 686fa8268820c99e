#pragma once
// The transformer architecture: a value, valid once it exists (parse_model validates).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dtsim::spec {

enum class Activation { gelu, relu, squared_relu, swiglu, gated_gelu };
enum class PositionEmbedding { learned, rotary, alibi, none };
enum class Norm { layernorm, rmsnorm };
/// Which linear layers carry a bias: none (Llama), qkv only (Qwen2), all (GPT-2/3, NeoX).
enum class LinearBias { none, qkv, all };

/// Multi-head latent attention (DeepSeek-V2/V3, Kimi K2; DeepSeek-AI 2024, arXiv:2405.04434 sec.
/// 2.1): queries and keys/values pass through low-rank latents; each head's query and key have
/// qk_nope + qk_rope dimensions, its value v_head_dim. Absent (all zero) for standard attention.
struct Mla {
  std::int64_t q_lora_rank = 0;  ///< 0: queries projected directly (DeepSeek-V2 Lite)
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  [[nodiscard]] bool on() const { return kv_lora_rank > 0; }
  bool operator==(const Mla&) const = default;
};

/// Mamba-2's selective state-space mixer (Dao & Gu 2024, "Transformers are SSMs", arXiv:2405.21060;
/// Megatron-Core megatron/core/ssm/mamba_mixer.py): `heads` heads of `head_dim` channels (the inner
/// width d_inner = heads x head_dim), a state of `state` per channel, B and C shared by each of
/// `groups` groups of heads, a causal depthwise convolution of width `conv` over x, B and C, and the
/// SSD algorithm's chunks of `chunk` tokens. Absent (zero heads) for attention-only models.
struct Mamba {
  std::int64_t heads = 0;
  std::int64_t head_dim = 0;
  std::int64_t state = 0;
  std::int64_t groups = 0;
  std::int64_t conv = 4;
  std::int64_t chunk = 128;
  [[nodiscard]] bool on() const { return heads > 0; }
  [[nodiscard]] std::int64_t inner() const { return heads * head_dim; }
  bool operator==(const Mamba&) const = default;
};

/// What one layer holds. A transformer layer is attention and an MLP (or experts); a hybrid
/// model's layers are one block each (Megatron-Core's MambaModel: a Mamba mixer, an attention, an
/// MLP or an MoE layer, each with its pre-norm and residual add).
enum class Block { transformer, attention, mlp, mamba };

/// A pipeline layout the model's reference recipe gives pp ranks of vp chunks (Megatron-Bridge's
/// DeepSeek-V3 recipe keys its layouts by (pp, vp): recipes/deepseek/deepseek_v3.py layout_map).
struct ReferenceLayout {
  std::int64_t pp = 1;
  std::int64_t vp = 1;
  std::string text;                        ///< Megatron-Core's layout string, as the model file gives it
  std::vector<std::int64_t> chunk_layers;  ///< its decoder layers per virtual stage (parse_pipeline_layout)
  bool operator==(const ReferenceLayout&) const = default;
};

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
  /// Leading layers with a dense MLP of ffn_hidden instead of experts (DeepSeek-V3
  /// first_k_dense_replace = 3, Kimi K2 1); 0 when every layer is MoE.
  std::int64_t moe_dense_layers = 0;
  /// LatentMoE (Megatron-Core MoELayer with moe_latent_size; Nemotron 3 Super 1,024): after the
  /// router, which sees the full hidden width, each token is projected hidden -> latent by a linear
  /// replicated on the TP ranks (fc1_latent_proj); the all-to-all, the experts (latent -> ffn ->
  /// latent) and the combine run in the latent width, and a second linear (fc2_latent_proj) maps
  /// the result back before the shared expert's output is added. 0 = experts in the hidden width.
  std::int64_t moe_latent = 0;
  Mla mla;
  /// Multi-token-prediction modules after the last layer (DeepSeek-V3 num_nextn_predict_layers):
  /// each is one more transformer layer, a 2h -> h projection, and another pass of the LM head.
  std::int64_t mtp_layers = 0;
  /// A hybrid model's MTP module: its blocks in hybrid_pattern's letters (Megatron-Core
  /// mtp_hybrid_override_pattern; Nemotron 3 Super "*E", an attention and an MoE block); empty for
  /// a transformer, whose module holds one of its layers.
  std::string mtp_pattern;
  /// The mtp_layers depths run one module's weights again (Megatron-Core mtp_use_repeated_layer:
  /// Nemotron 3 Super's recipe applies its one shared module twice): one set of parameters.
  bool mtp_shared_weights = false;
  /// The MTP modules stay in bf16 in fp8/fp4 runs (Megatron-Bridge keep_mtp_spec_in_bf16).
  bool mtp_bf16 = false;
  /// Sliding-window attention: keys per query in windowed layers (gpt-oss 128); 0 = full.
  std::int64_t sliding_window = 0;
  /// Every n-th layer keeps full attention, the others use the window (gpt-oss: 2, alternating).
  std::int64_t sliding_window_full_every = 0;
  /// A clamped GLU (gpt-oss swiglu_limit 7): the gate clamped from above and the linear half to
  /// [-c, c] before the activation; 0 = no clamp. Needs a gated activation.
  double activation_clamp = 0;
  /// YaRN's concentration factor on the rotary cos and sin (Hugging Face rope_scaling's
  /// attention_factor; Megatron-Core yarn_rotary_pos_embedding.py _yarn_get_concentration_factor:
  /// 0.1 ln(factor) + 1 unless mscale and mscale_all_dim are both given, then their ratio). gpt-oss
  /// 1.347 (factor 32); DeepSeek-V3 and Kimi K2 1 (mscale = mscale_all_dim); 1 = none. Megatron-Core
  /// runs its unfused RoPE when it is not 1 (rope_utils.py apply_rotary_pos_emb: "mscale is not
  /// supported by TE's fused RoPE").
  double rope_mscale = 1.0;
  /// Dropout probabilities (Megatron-LM --hidden-dropout, --attention-dropout; their default 0.1,
  /// what GPT-3-era runs trained with; Llama-era models train with 0). Hidden dropout (after the
  /// attention and MLP blocks, and on the embeddings) keeps a 1-byte mask per element for the
  /// backward; attention dropout keeps a mask of the scores (unfused attention) or regenerates it
  /// from the RNG state inside fused attention, at a cost in time.
  double hidden_dropout = 0.1;
  double attention_dropout = 0.1;
  /// Layouts the model's recipe uses when a job names none (models/*.json pipeline_layouts).
  std::vector<ReferenceLayout> pipeline_layouts;
  /// A hybrid model's layers in order, one character each (Megatron-Core hybrid_override_pattern):
  /// 'M' a Mamba-2 mixer, '*' attention, '-' a dense MLP of ffn_hidden, 'E' an MoE layer. Empty for
  /// a transformer, whose every layer is attention and an MLP. `layers` is its length.
  std::string hybrid_pattern;
  Mamba mamba;
  /// What every layer of this model holds: a transformer's; a hybrid model's block variants
  /// (block_variant) say which block they price.
  Block block = Block::transformer;

  [[nodiscard]] bool is_moe() const { return moe_experts > 0; }
  /// The width the experts, the dispatch and the combine work in: moe_latent, or hidden.
  [[nodiscard]] std::int64_t expert_width() const { return moe_latent > 0 ? moe_latent : hidden; }
  /// The blocks of one MTP module (mtp_pattern, or "T" for a transformer layer).
  [[nodiscard]] std::string mtp_blocks() const { return mtp_pattern.empty() ? std::string("T") : mtp_pattern; }
  /// Blocks of letter `c` in one MTP module.
  [[nodiscard]] std::int64_t mtp_count(char c) const {
    return static_cast<std::int64_t>(std::count(mtp_pattern.begin(), mtp_pattern.end(), c));
  }
  /// Sets of MTP weights the model holds: one per module, or one shared by all (mtp_shared_weights).
  [[nodiscard]] std::int64_t mtp_weight_sets() const { return mtp_shared_weights && mtp_layers > 0 ? 1 : mtp_layers; }
  [[nodiscard]] bool hybrid() const { return !hybrid_pattern.empty(); }
  /// The block of layer `i` (0-based): its hybrid_pattern character, or 'T' for a transformer layer.
  [[nodiscard]] char layer_block(std::int64_t i) const {
    return hybrid() ? hybrid_pattern[static_cast<std::size_t>(i)] : 'T';
  }
  /// Layers of block `c` among [first, first + n) ('T' counts a transformer's layers).
  [[nodiscard]] std::int64_t count_blocks(char c, std::int64_t first, std::int64_t n) const;
  [[nodiscard]] bool has_attention() const { return block == Block::transformer || block == Block::attention; }
  [[nodiscard]] bool has_mlp() const { return block == Block::transformer || block == Block::mlp; }
  /// Layers with experts.
  [[nodiscard]] std::int64_t moe_layers() const { return is_moe() ? layers - moe_dense_layers : 0; }
  /// Per head: query/key width and value width (head_dim, or MLA's).
  [[nodiscard]] std::int64_t qk_head_dim() const { return mla.on() ? mla.qk_nope_head_dim + mla.qk_rope_head_dim : head_dim; }
  [[nodiscard]] std::int64_t v_head_dim() const { return mla.on() ? mla.v_head_dim : head_dim; }
  /// Average keys each query attends to, as a share of a causal full-sequence attention: windowed
  /// layers see at most `sliding_window` keys.
  [[nodiscard]] double attention_share(std::int64_t seq) const;
  /// The same for one windowed layer (1 when the window covers the sequence).
  [[nodiscard]] double windowed_attention_share(std::int64_t seq) const;
  /// The reference layout for pp ranks of vp chunks, if the model gives one that holds its layers
  /// (a job that changes the layer count drops it; one without MTP keeps it: the recipe only drops
  /// its MTP stage); nullptr otherwise.
  [[nodiscard]] const ReferenceLayout* reference_layout(std::int64_t pp, std::int64_t vp) const;
  [[nodiscard]] bool gated() const {
    return activation == Activation::swiglu || activation == Activation::gated_gelu;
  }
  bool operator==(const Model&) const = default;
};

/// The model's leading dense layers as a model of their own: `m` with a dense MLP of
/// ffn_hidden and no experts (every layer of a dense model is already one).
[[nodiscard]] Model dense_variant(const Model& m);

/// The block a hybrid model's layers of pattern character `c` hold, as a model of its own: 'M' a
/// Mamba mixer, '*' an attention, '-' a dense MLP of ffn_hidden, 'E' an MoE layer; no experts
/// unless 'E', no MTP modules. For 'T', `m` itself.
[[nodiscard]] Model block_variant(const Model& m, char c);

[[nodiscard]] const char* to_string(Activation a);
[[nodiscard]] const char* to_string(PositionEmbedding p);
[[nodiscard]] const char* to_string(Norm n);
[[nodiscard]] const char* to_string(LinearBias b);
[[nodiscard]] const char* to_string(Block b);

}  // namespace dtsim::spec
