#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "core/errors.h"
#include "cost/model_stats.h"
#include "helpers.h"
#include "spec/load.h"

using dtsim::spec::load_model;
using dtsim::spec::parse_model;
using Catch::Matchers::Equals;
using Catch::Matchers::WithinRel;

namespace {

std::string fixture(const std::string& name) {
  return dtsim::test::source_path("tests/fixtures/hf/" + name + "/config.json");
}

double total_params(const dtsim::spec::Model& m) { return dtsim::cost::count_params(m).total(m.layers); }

// A minimal Llama config.json (Llama-3-8B's architecture keys, Meta's model card), {X} appended.
std::string llama(const std::string& extra = "", const std::string& drop = "") {
  std::string keys[] = {R"("model_type": "llama")",         R"("num_hidden_layers": 32)",
                        R"("hidden_size": 4096)",           R"("num_attention_heads": 32)",
                        R"("num_key_value_heads": 8)",      R"("intermediate_size": 14336)",
                        R"("vocab_size": 128256)",          R"("hidden_act": "silu")"};
  return dtsim::test::json_object(keys, extra, drop);
}

}  // namespace

TEST_CASE("spec::load_model: every Hugging Face fixture matches its published parameter count", "[spec]") {
  struct Published {
    const char* fixture;
    double total;
    const char* source;
  };
  // Published totals; the 1% tolerance covers rounding to three significant digits.
  const Published published[] = {
      {"llama3-8b", 8.03e9, "Meta Llama 3 8B model card / Hugging Face hub count: 8.03B"},
      {"mixtral-8x7b", 46.7e9, "Mistral AI, 'Mixtral of experts' announcement: 46.7B total parameters"},
      // The Qwen2 announcement's 7.07B leaves out the untied LM head (152064*3584 = 0.545B).
      {"qwen2-7b", 7.62e9, "Qwen/Qwen2-7B Hugging Face hub count: 7.62B"},
      {"qwen3-8b", 8.19e9, "Qwen3-8B model card: 8.2B (hub count 8.19B)"},
      {"gpt2", 124e6, "GPT-2 small: 124M (the paper's Table 2 says 117M, an older count)"},
      {"gpt-neox-20b", 20556201984.0, "EleutherAI GPT-NeoX-20B model card: 20,556,201,984 parameters"},
      {"mistral-7b", 7.24e9, "Mistral-7B-v0.1 hub count 7.24B (announcement rounds to 7.3B)"},
  };
  for (const Published& p : published) {
    INFO(p.fixture << " (" << p.source << ")");
    auto m = load_model(fixture(p.fixture));
    CHECK(m.source == "Hugging Face config.json (" + fixture(p.fixture) + ")");
    CHECK_THAT(total_params(m), WithinRel(p.total, 0.01));
  }
}

TEST_CASE("spec::load_model: a Hugging Face checkout directory reads its config.json", "[spec]") {
  // Llama-3-8B by hand: per layer attention 2*4096*4096 + 2*4096*1024 = 41,943,040,
  // MLP 3*4096*14336 = 176,160,768, norms 2*4096 = 8,192 -> 218,112,000 x 32 = 6,979,584,000;
  // embedding and untied LM head 2*128256*4096 = 1,050,673,152; final norm 4,096.
  // Sum 8,030,261,248 = Meta's "8.03B".
  auto m = load_model(dtsim::test::source_path("tests/fixtures/hf/llama3-8b"));
  CHECK(total_params(m) == 8030261248.0);
}

TEST_CASE("spec::load_model: Hugging Face family facts", "[spec]") {
  using namespace dtsim::spec;
  SECTION("Llama 3: GQA 32/8, SwiGLU, RMSNorm, rotary, untied, no biases") {
    auto m = load_model(fixture("llama3-8b"));
    CHECK(m.heads == 32);
    CHECK(m.kv_heads == 8);
    CHECK(m.head_dim == 128);  // 4096 / 32
    CHECK(m.activation == Activation::swiglu);
    CHECK(m.norm == Norm::rmsnorm);
    CHECK(m.position_embedding == PositionEmbedding::rotary);
    CHECK_FALSE(m.tied_embeddings);
    CHECK(m.linear_bias == LinearBias::none);
    CHECK_FALSE(m.is_moe());
  }
  SECTION("Qwen2: bias on q, k, v only (modeling_qwen2.py Qwen2Attention, bias=True)") {
    auto m = load_model(fixture("qwen2-7b"));
    CHECK(m.linear_bias == LinearBias::qkv);
    CHECK_FALSE(m.qk_norm);
    CHECK(m.kv_heads == 4);
  }
  SECTION("Qwen3: per-head q/k RMSNorm, explicit head_dim 128, no bias") {
    auto m = load_model(fixture("qwen3-8b"));
    CHECK(m.qk_norm);
    CHECK(m.head_dim == 128);
    CHECK(m.linear_bias == LinearBias::none);
  }
  SECTION("GPT-2: learned positions (n_positions 1024), tied embeddings, LayerNorm, biases") {
    auto m = load_model(fixture("gpt2"));
    CHECK(m.position_embedding == PositionEmbedding::learned);
    CHECK(m.max_position == 1024);
    CHECK(m.tied_embeddings);
    CHECK(m.norm == Norm::layernorm);
    CHECK(m.linear_bias == LinearBias::all);
    CHECK(m.ffn_hidden == 4 * 768);  // n_inner null -> 4 * n_embd (configuration_gpt2.py)
    CHECK(m.head_dim == 64);         // 768 / 12
    // GPT-2 small: 124,439,808 parameters, the count transformers prints for "gpt2":
    // 12 * (attention 4*768^2 + 4*768 = 2,362,368; MLP 2*768*3072 + 3072 + 768 = 4,722,432;
    // norms 4*768 = 3,072) = 85,054,464; wte 50257*768 = 38,597,376; wpe 1024*768 = 786,432;
    // ln_f 1,536.
    CHECK(total_params(m) == 124439808.0);
    CHECK(m.hidden_dropout == 0.1);     // resid_pdrop
    CHECK(m.attention_dropout == 0.1);  // attn_pdrop
  }
  SECTION("GPT-NeoX: rotary, LayerNorm, biases, untied") {
    auto m = load_model(fixture("gpt-neox-20b"));
    CHECK(m.position_embedding == PositionEmbedding::rotary);
    CHECK(m.norm == Norm::layernorm);
    CHECK(m.linear_bias == LinearBias::all);
    CHECK_FALSE(m.tied_embeddings);
    CHECK(m.head_dim == 96);  // 6144 / 64
    CHECK(m.hidden_dropout == 0);     // hidden_dropout_prob 0
    CHECK(m.attention_dropout == 0);  // attention_probs_dropout_prob 0
  }
  SECTION("Mixtral: 8 experts, top-2, expert width = intermediate_size") {
    auto m = load_model(fixture("mixtral-8x7b"));
    CHECK(m.is_moe());
    CHECK(m.moe_experts == 8);
    CHECK(m.moe_topk == 2);
    CHECK(m.moe_ffn_hidden == 14336);
    // Mistral AI: "12.9B active parameters per token".
    CHECK_THAT(dtsim::cost::count_params(m).active(m.layers), WithinRel(12.9e9, 0.01));
  }
  SECTION("Mistral 7B: same layer as Llama-3-8B, 32000-token vocabulary") {
    auto m = load_model(fixture("mistral-7b"));
    CHECK(m.vocab == 32000);
    CHECK(m.kv_heads == 8);
  }
}

TEST_CASE("spec::parse_model: family from architectures when model_type is absent", "[spec]") {
  std::string no_type = llama("", "model_type");
  no_type.insert(1, R"("architectures": ["LlamaForCausalLM"],)");
  auto m = parse_model(no_type, "config.json");
  CHECK(m.norm == dtsim::spec::Norm::rmsnorm);
  CHECK(m.name == "llama (Hugging Face config)");  // no _name_or_path
  std::string t5 = llama("", "model_type");
  t5.insert(1, R"("architectures": ["T5ForConditionalGeneration"],)");
  CHECK_THROWS_WITH(parse_model(t5, "config.json"),
                    Equals("config.json:/model_type: missing required key (architectures[0] "
                           "\"T5ForConditionalGeneration\" is not a known family)"));
}

TEST_CASE("spec::parse_model: Hugging Face error texts name the file and pointer", "[spec]") {
  CHECK_THROWS_WITH(parse_model(R"({"model_type": "t5", "num_layers": 6, "d_model": 512})", "config.json"),
                    Equals("config.json:/model_type: expected one of llama, mistral, mixtral, qwen2, qwen2_moe, "
                           "qwen3, qwen3_moe, deepseek_v3, kimi_k2, gpt_oss, nemotron_h, gpt2, gpt_neox, got \"t5\""));
  CHECK_THROWS_WITH(parse_model(llama("", "num_hidden_layers"), "config.json"),
                    Equals("config.json:/num_hidden_layers: missing required key"));
  std::string wrong = llama("", "hidden_size");
  wrong.insert(1, R"("hidden_size": "4096",)");
  CHECK_THROWS_WITH(parse_model(wrong, "config.json"),
                    Equals("config.json:/hidden_size: expected an integer in [1, 2147483647], got \"4096\""));
  CHECK_THROWS_WITH(parse_model(llama(R"("tie_word_embeddings": "no")"), "config.json"),
                    Equals("config.json:/tie_word_embeddings: expected true or false, got \"no\""));
  std::string act = llama("", "hidden_act");
  act.insert(1, R"("hidden_act": "tanh",)");
  CHECK_THROWS_WITH(parse_model(act, "config.json"),
                    Equals("config.json:/hidden_act: expected one of silu, swish, gelu, gelu_pytorch_tanh, "
                           "gelu_new, got \"tanh\""));
  std::string moe = llama("", "model_type");
  moe.insert(1, R"("model_type": "mixtral",)");
  CHECK_THROWS_WITH(parse_model(moe, "config.json"),
                    Equals("config.json:/num_local_experts: missing required key"));
  // Cross-field rules apply to imported configs too: 32 heads, 7 kv heads.
  std::string gqa = llama("", "num_key_value_heads");
  gqa.insert(1, R"("num_key_value_heads": 7,)");
  CHECK_THROWS_WITH(parse_model(gqa, "config.json"),
                    Equals("config.json:/num_key_value_heads: expected a divisor of heads (32), got 7"));
}

// Cross-field rules (check_model) must name the key the config itself uses, not dtsim's
// ("num_attention_heads", "moe_topk" were reported before model_rules.cc learned the HF spellings).
TEST_CASE("spec::parse_model: cross-field errors point at the config's own key", "[spec]") {
  // GPT-2 names heads "n_head"; 768 is not divisible by 7.
  CHECK_THROWS_WITH(
      parse_model(R"({"model_type": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 7, "vocab_size": 50257,
                      "n_positions": 1024})",
                  "config.json"),
      Equals("config.json:/n_head: expected a divisor of hidden (768) or an explicit head_dim, got 7"));
  // Mixtral names top-k "num_experts_per_tok".
  std::string moe = llama(R"("num_local_experts": 8, "num_experts_per_tok": 9)", "model_type");
  moe.insert(1, R"("model_type": "mixtral",)");
  CHECK_THROWS_WITH(parse_model(moe, "config.json"),
                    Equals("config.json:/num_experts_per_tok: expected at most moe_experts (8), got 9"));
}

TEST_CASE("spec::load_model: YaRN's concentration factor from rope_scaling, as transformers computes it", "[spec]") {
  // gpt-oss: no mscale keys, so 0.1 ln(32) + 1; DeepSeek-V3 and Kimi K2: mscale = mscale_all_dim,
  // so 1; Llama 3 (no rope_scaling in the fixture) 1.
  CHECK_THAT(load_model(fixture("gpt-oss-120b")).rope_mscale, WithinRel(0.1 * std::log(32.0) + 1, 1e-12));
  CHECK(load_model(fixture("deepseek-v3")).rope_mscale == 1.0);
  CHECK(load_model(fixture("kimi-k2")).rope_mscale == 1.0);
  CHECK(load_model(fixture("llama3-8b")).rope_mscale == 1.0);
  dtsim::test::TempDir tmp;
  auto with = [&](const std::string& scaling) {
    std::string cfg = R"({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
        "intermediate_size": 128, "vocab_size": 1000, "rope_scaling": )" + scaling + "}";
    return load_model(tmp.write("config.json", cfg)).rope_mscale;
  };
  CHECK(with(R"({"rope_type": "yarn", "factor": 4.0, "attention_factor": 1.5})") == 1.5);
  CHECK_THAT(with(R"({"type": "yarn", "factor": 40, "mscale": 0.707, "mscale_all_dim": 1.0})"),
             WithinRel((0.1 * 0.707 * std::log(40.0) + 1) / (0.1 * std::log(40.0) + 1), 1e-12));
  CHECK(with(R"({"rope_type": "llama3", "factor": 8.0})") == 1.0);
  CHECK(with("null") == 1.0);
}

TEST_CASE("spec::load_model: MoE configs (DeepSeek-V3, Kimi K2, gpt-oss, Qwen3-MoE) give the presets' models", "[spec]") {
  // Each config reads to the architecture of its preset in models/ (which cites the same keys):
  // same layers, MLA, dense leading layers, MTP, experts, windows; hence the same parameters.
  for (auto [config, preset] : {std::pair{"deepseek-v3", "deepseek-v3"}, std::pair{"kimi-k2", "kimi-k2"},
                                std::pair{"gpt-oss-120b", "gpt-oss-120b"}, std::pair{"qwen3-30b-a3b", "qwen3-30b-a3b"}}) {
    INFO(config);
    dtsim::spec::Model hf = load_model(fixture(config));
    dtsim::spec::Model p = load_model(dtsim::test::source_path(std::string("models/") + preset + ".json"));
    CHECK(hf.layers == p.layers);
    CHECK(hf.mla == p.mla);
    CHECK(hf.moe_experts == p.moe_experts);
    CHECK(hf.moe_topk == p.moe_topk);
    CHECK(hf.moe_ffn_hidden == p.moe_ffn_hidden);
    CHECK(hf.moe_shared_ffn_hidden == p.moe_shared_ffn_hidden);
    CHECK(hf.moe_dense_layers == p.moe_dense_layers);
    CHECK(hf.mtp_layers == p.mtp_layers);
    CHECK(hf.sliding_window == p.sliding_window);
    CHECK(hf.sliding_window_full_every == p.sliding_window_full_every);
    CHECK(hf.qk_norm == p.qk_norm);
    CHECK(hf.activation_clamp == p.activation_clamp);
    CHECK_THAT(hf.rope_mscale, WithinRel(p.rope_mscale, 1e-4));
    CHECK(hf.hidden_dropout == p.hidden_dropout);
    CHECK(hf.attention_dropout == p.attention_dropout);
    CHECK_THAT(dtsim::cost::count_params(hf).total(hf.layers),
               WithinRel(dtsim::cost::count_params(p).total(p.layers), 1e-12));
  }
}
