#include <catch2/catch.hpp>

#include "helpers.h"

#include "core/errors.h"
#include "cost/model_stats.h"
#include "spec/load.h"

using dtsim::SpecError;
using dtsim::spec::parse_model;
using Catch::Matchers::Equals;

namespace {

// GPT-3 175B (Brown et al. 2020, Table 2.1) in dtsim's format, with {X} replaced per test.
std::string gpt3(const std::string& extra = "", const std::string& drop = "") {
  std::string keys[] = {R"("name": "GPT-3 175B")", R"("layers": 96)", R"("hidden": 12288)", R"("heads": 96)",
                        R"("kv_heads": 96)", R"("ffn_hidden": 49152)", R"("activation": "gelu")",
                        R"("vocab": 51200)", R"("position_embedding": "learned")", R"("max_position": 2048)",
                        R"("tied_embeddings": true)", R"("norm": "layernorm")", R"("linear_bias": "all")"};
  return dtsim::test::json_object(keys, extra, drop);
}

}  // namespace

TEST_CASE("spec::parse_model: reads dtsim's model format", "[spec]") {
  auto m = parse_model(gpt3(), "m.json");
  CHECK(m.layers == 96);
  CHECK(m.head_dim == 128);  // hidden / heads = 12288 / 96
  CHECK(m.tied_embeddings);
  CHECK_FALSE(m.is_moe());
}

TEST_CASE("spec::parse_model: error texts name file, pointer, expected and found", "[spec]") {
  CHECK_THROWS_WITH(parse_model(gpt3(R"("foo": 1)"), "m.json"),
                    Catch::Matchers::StartsWith("m.json:/foo: unknown key (expected one of: "));
  CHECK_THROWS_WITH(parse_model(gpt3("", "layers"), "m.json"), Equals("m.json:/layers: missing required key"));
  CHECK_THROWS_WITH(parse_model(gpt3(R"("head_dim": -5)"), "m.json"),
                    Equals("m.json:/head_dim: expected an integer in [1, 2147483647], got -5"));
  CHECK_THROWS_WITH(parse_model(gpt3(R"("qk_norm": "yes")"), "m.json"),
                    Equals("m.json:/qk_norm: expected true or false, got \"yes\""));
  CHECK_THROWS_WITH(parse_model("{\"name\": \"x\",", "m.json"),
                    Catch::Matchers::StartsWith("m.json: malformed JSON at line 1, column 14: "));
  CHECK_THROWS_WITH(parse_model("[1, 2]", "m.json"), Equals("m.json:/: expected an object, got an array"));
}

TEST_CASE("spec::parse_model: wrong types and ranges", "[spec]") {
  std::string s = gpt3();
  auto with = [&](const std::string& from, const std::string& to) { return dtsim::test::replaced(s, from, to); };
  CHECK_THROWS_WITH(parse_model(with(R"("layers": 96)", R"("layers": "96")"), "m.json"),
                    Equals("m.json:/layers: expected an integer in [1, 100000], got \"96\""));
  CHECK_THROWS_WITH(parse_model(with(R"("hidden": 12288)", R"("hidden": -1)"), "m.json"),
                    Equals("m.json:/hidden: expected an integer in [1, 2147483647], got -1"));
  CHECK_THROWS_WITH(parse_model(with(R"("hidden": 12288)", R"("hidden": 1.5)"), "m.json"),
                    Equals("m.json:/hidden: expected an integer in [1, 2147483647], got 1.5"));
  CHECK_THROWS_WITH(parse_model(with(R"("activation": "gelu")", R"("activation": "tanh")"), "m.json"),
                    Equals("m.json:/activation: expected one of gelu, relu, squared_relu, swiglu, gated_gelu, got \"tanh\""));
  CHECK_THROWS_WITH(parse_model(with(R"("layers": 96)", R"("layers": null)"), "m.json"),
                    Equals("m.json:/layers: expected a value, got null"));
}

TEST_CASE("spec::parse_model: cross-field rules", "[spec]") {
  std::string s = gpt3();
  auto with = [&](const std::string& from, const std::string& to) { return dtsim::test::replaced(s, from, to); };
  CHECK_THROWS_WITH(parse_model(with(R"("kv_heads": 96)", R"("kv_heads": 7)"), "m.json"),
                    Equals("m.json:/kv_heads: expected a divisor of heads (96), got 7"));
  CHECK_THROWS_WITH(parse_model(with(R"("heads": 96)", R"("heads": 100)"), "m.json"),
                    Equals("m.json:/kv_heads: expected a divisor of heads (100), got 96"));
  std::string seven = with(R"("heads": 96)", R"("heads": 7)");
  seven.replace(seven.find(R"("kv_heads": 96)"), 14, R"("kv_heads": 7)");
  CHECK_THROWS_WITH(parse_model(seven, "m.json"),
                    Equals("m.json:/heads: expected a divisor of hidden (12288) or an explicit head_dim, got 7"));
  CHECK_THROWS_WITH(parse_model(gpt3("", "max_position"), "m.json"),
                    Equals("m.json:/max_position: missing required key (position_embedding is \"learned\")"));
  CHECK_THROWS_WITH(parse_model(gpt3(R"("moe_experts": 8)"), "m.json"),
                    Equals("m.json:/moe_topk: missing required key (moe_experts is set)"));
  CHECK_THROWS_WITH(parse_model(gpt3(R"("moe_experts": 8, "moe_topk": 9, "moe_ffn_hidden": 100)"), "m.json"),
                    Equals("m.json:/moe_topk: expected at most moe_experts (8), got 9"));
}

TEST_CASE("spec::load_model: missing files and unknown presets", "[spec]") {
  CHECK_THROWS_WITH(dtsim::spec::load_model("/nonexistent/m.json"),
                    Equals("--model: expected an existing file, got \"/nonexistent/m.json\" (no such file)"));
  CHECK_THROWS_WITH(dtsim::spec::load_model("no-such-model"),
                    Catch::Matchers::StartsWith("--model: expected a preset name (") &&
                        Catch::Matchers::EndsWith(") or a file path, got \"no-such-model\""));
}

TEST_CASE("spec::parse_model: MoE layout fields (dense layers, MLA, MTP, windows)", "[spec]") {
  std::string moe = R"("moe_experts": 8, "moe_topk": 2, "moe_ffn_hidden": 1024)";
  auto m = parse_model(gpt3(moe + R"(, "moe_dense_layers": 3, "mtp_layers": 1, "sliding_window": 128,
      "sliding_window_full_every": 2, "mla": {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128,
      "qk_rope_head_dim": 64, "v_head_dim": 128})"), "m.json");
  CHECK(m.moe_dense_layers == 3);
  CHECK(m.moe_layers() == 93);
  CHECK(m.mtp_layers == 1);
  CHECK(m.mla.on());
  CHECK(m.qk_head_dim() == 192);
  CHECK(m.v_head_dim() == 128);
  CHECK_THROWS_WITH(parse_model(gpt3(R"("moe_dense_layers": 2)"), "m.json"),
                    Equals("m.json:/moe_dense_layers: expected 0 or absent for a dense model (no moe_experts), got 2"));
  CHECK_THROWS_WITH(parse_model(gpt3(moe + R"(, "moe_dense_layers": 96)"), "m.json"),
                    Equals("m.json:/moe_dense_layers: expected fewer than layers (96), got 96"));
  CHECK_THROWS_WITH(parse_model(gpt3(R"("mla": {"kv_lora_rank": 512})"), "m.json"),
                    Equals("m.json:/mla/qk_nope_head_dim: missing required key"));
  CHECK_THROWS_WITH(parse_model(gpt3(R"("sliding_window_full_every": 2)"), "m.json"),
                    Equals("m.json:/sliding_window: missing required key (sliding_window_full_every is set)"));
  CHECK_THROWS_WITH(parse_model(gpt3(R"("activation_clamp": 7)"), "m.json"),
                    Equals("m.json:/activation_clamp: expected a gated activation (swiglu, gated_gelu) to clamp, got gelu"));
  // Dropout: Megatron-LM's 0.1 when absent; a probability in [0, 1).
  CHECK(parse_model(gpt3(R"("moe_dense_layers": 0)"), "m.json").hidden_dropout == 0.1);
  dtsim::spec::Model no_drop = parse_model(gpt3(R"("hidden_dropout": 0, "attention_dropout": 0.05)"), "m.json");
  CHECK(no_drop.hidden_dropout == 0);
  CHECK(no_drop.attention_dropout == 0.05);
  CHECK_THROWS_WITH(parse_model(gpt3(R"("hidden_dropout": 1)"), "m.json"),
                    Equals("m.json:/hidden_dropout: expected a probability in [0, 1), got 1"));
  CHECK_THROWS_WITH(parse_model(gpt3(R"("attention_dropout": -0.1)"), "m.json"),
                    Equals("m.json:/attention_dropout: expected a number >= 0, got -0.1"));
  CHECK_THROWS_WITH(parse_model(gpt3(R"("activation_clamp": -1)"), "m.json"),
                    Equals("m.json:/activation_clamp: expected a number > 0, got -1"));
  CHECK_THROWS_WITH(parse_model(gpt3(R"("mla": {"kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
      "v_head_dim": 128, "rank": 1})"), "m.json"),
                    Catch::Matchers::StartsWith("m.json:/mla/rank: unknown key"));
}

TEST_CASE("spec::parse_model: reference pipeline layouts, keyed by pp and vp", "[spec]") {
  auto m = parse_model(gpt3(R"("pipeline_layouts": [{"pp": 2, "vp": 1, "layout": "Et*47|t*49L"},
                                                     {"pp": 2, "vp": 2, "layout": "E(t*24|)*3t*24L"}])"),
                       "m.json");
  REQUIRE(m.pipeline_layouts.size() == 2);
  REQUIRE(m.reference_layout(2, 1) != nullptr);
  CHECK(m.reference_layout(2, 1)->chunk_layers == std::vector<std::int64_t>{47, 49});
  CHECK(m.reference_layout(2, 2)->chunk_layers == std::vector<std::int64_t>{24, 24, 24, 24});
  CHECK(m.reference_layout(4, 1) == nullptr);
  dtsim::spec::Model fewer = m;  // a job that changes the layer count has no reference layout
  fewer.layers = 48;
  CHECK(fewer.reference_layout(2, 1) == nullptr);
  std::string s = gpt3();
  CHECK_THROWS_WITH(parse_model(gpt3(R"("pipeline_layouts": [{"pp": 2, "vp": 1, "layout": "Et*47|t*48L"}])"), "m.json"),
                    Catch::Matchers::StartsWith("m.json:/pipeline_layouts/0/layout: expected 96 decoder layers 't' "
                                                "(the model's), got 95"));
  CHECK_THROWS_WITH(parse_model(gpt3(R"("pipeline_layouts": [{"pp": 2, "vp": 1, "layout": "Et*47|t*49L"},
                                                              {"pp": 2, "vp": 1, "layout": "Et*48|t*48L"}])"),
                                "m.json"),
                    Equals("m.json:/pipeline_layouts/1/pp: expected one layout per (pp, vp), got a second for pp 2 vp 1"));
  CHECK_THROWS_WITH(parse_model(gpt3(R"("pipeline_layouts": [{"pp": 1, "vp": 1, "layout": "Et*96L"}])"), "m.json"),
                    Equals("m.json:/pipeline_layouts/0/pp: expected an integer in [2, 65536], got 1"));
  CHECK_THROWS_WITH(parse_model(gpt3(R"("pipeline_layouts": [{"pp": 2, "layout": "Et*47|t*49L"}])"), "m.json"),
                    Equals("m.json:/pipeline_layouts/0/vp: missing required key"));
}
