#include <catch2/catch.hpp>

#include "helpers.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "spec/validation_file.h"

using namespace dtsim::spec;
using Catch::Matchers::Equals;
using Catch::Matchers::VectorContains;

namespace {
// A stack whose recipes set nothing: the validation README's generic rules fill every null.
const Stack kGeneric{.name = "generic", .version = "1", .since = "2020-01"};
}  // namespace

namespace {

// One case in the shape of ../shared/validation/README.md: SC'21 Table 1's GPT 1.7B row
// (Narayanan et al. 2021: 24 layers, hidden 2304, 24 heads, 32 GPUs, gbs 512, seq 2048),
// with the fields the tests null out written explicitly. {X} replaced per test.
const std::string kFile = R"({"schema": "dtsim-validation-cases/1", "cases": [{
  "id": "c0", "tier": "dense16", "source": {"paper": "SC'21"},
  "model": {"name": "GPT 1.7B", "layers": 24, "hidden": 2304, "heads": 24, "kv_heads": 24,
            "ffn_hidden": 9216, "activation": "gelu", "vocab": 51200,
            "moe_experts": null, "moe_topk": null, "moe_ffn_hidden": null},
  "cluster": "dgx-a100", "gpus": 32, "gpus_per_node": 8,
  "parallel": {"tp": 2, "pp": 1, "dp": 16, "cp": 1, "ep": 1, "vp": 1, "zero_stage": 0, "sequence_parallel": false},
  "training": {"micro_batch": 16, "global_batch": 512, "seq_len": 2048, "recompute": "full", "precision": "fp16"},
  "measured": {"iteration_s": 3.5, "derivation": "given", "confidence": "high", "tflops_per_gpu": 137},
  "notes": "test"
}]})";

std::string with(std::string t, const std::string& from, const std::string& to) {
  return dtsim::test::replaced(std::move(t), from, to);
}
std::string with(const std::string& from, const std::string& to) { return with(kFile, from, to); }

}  // namespace

TEST_CASE("spec::parse_validation_file: reads a case as written", "[spec]") {
  ValidationFile f = parse_validation_file(kFile, "v.json");
  REQUIRE(f.cases.size() == 1);
  const ValidationCase& c = f.cases[0];
  CHECK(c.id == "c0");
  CHECK(c.pointer == "/cases/0");
  CHECK(c.tp == 2);
  CHECK(c.dp == 16);
  CHECK(c.zero_stage == 0);
  CHECK(c.sequence_parallel == false);
  CHECK(c.precision == Dtype::fp16);
  CHECK(c.recompute == Recompute::full);
  CHECK(c.measured_s == 3.5);
  CHECK(c.ignored.empty());  // "measured" tolerates extra keys such as tflops_per_gpu
  ResolvedCase r = resolve_case(c, "v.json", kGeneric);
  CHECK(r.par.zero_stage == 0);
  CHECK_FALSE(r.par.sequence_parallel);
  CHECK(r.train.micro_batch == 16);
  CHECK_FALSE(r.auto_recompute);
  // Only the family inference is assumed when nothing is null.
  CHECK(r.assumptions ==
        std::vector<std::string>{"architecture: Megatron GPT (learned positions, tied embeddings, LayerNorm, biases)"});
}

TEST_CASE("spec::parse_validation_file: error texts name file and pointer", "[spec]") {
  // A malformed file is an error...
  CHECK_THROWS_WITH(parse_validation_file(with("dtsim-validation-cases/1", "x"), "v.json"),
                    Equals("v.json:/schema: expected \"dtsim-validation-cases/1\", got \"x\""));
  CHECK_THROWS_WITH(parse_validation_file(with(R"("schema")", R"("version": 2, "schema")"), "v.json"),
                    Equals("v.json:/version: unknown key (expected one of: cases, schema)"));
  CHECK_THROWS_WITH(parse_validation_file(R"({"schema": "dtsim-validation-cases/1", "cases": {}})", "v.json"),
                    Equals("v.json:/cases: expected an array, got an object"));
  // ... a malformed case is reported in its place with the same kind of text, the file still read.
  auto invalid = [](const std::string& text) { return parse_validation_file(text, "v.json").cases.at(0).invalid; };
  CHECK_THAT(invalid(with(R"("vp": 1,)", R"("vp": 1, "fsdp": 2,)")),
             Equals("v.json:/cases/0/parallel/fsdp: unknown key (expected one of: cp, dp, ep, pp, "
                    "sequence_parallel, tp, vp, zero_stage)"));
  CHECK_THAT(invalid(with(R"("zero_stage": 0)", R"("zero_stage": 4)")),
             Equals("v.json:/cases/0/parallel/zero_stage: expected an integer in [0, 3], got 4"));
  CHECK_THAT(invalid(with(R"("iteration_s": 3.5)", R"("iteration_s": -1)")),
             Equals("v.json:/cases/0/measured/iteration_s: expected a number > 0, got -1"));
  CHECK_THAT(invalid(with(R"("recompute": "full")", R"("recompute": "auto")")),
             Equals("v.json:/cases/0/training/recompute: expected one of none, selective, full, got \"auto\""));
  CHECK_THAT(invalid(with(R"("layers": 24, )", "")), Equals("v.json:/cases/0/model/layers: missing required key"));
  CHECK(parse_validation_file(with(R"("layers": 24, )", ""), "v.json").cases.at(0).id == "c0");  // still named
}

TEST_CASE("spec::parse_validation_file: nulls a generic rule fills are filled and noted", "[spec]") {
  // GPT with heads, ffn_hidden, activation, tp, pp, dp, cp, ep, vp, gpus_per_node and seq_len null.
  std::string t = with(with(with(with(R"("heads": 24)", R"("heads": null)"), R"("ffn_hidden": 9216)", R"("ffn_hidden": null)"),
                            R"("tp": 2)", R"("tp": null)"),
                       R"("dp": 16)", R"("dp": null)");
  ValidationCase c = parse_validation_file(t, "v.json").cases.at(0);
  REQUIRE(c.invalid.empty());
  CHECK(c.model.heads == 2304 / 128);       // head dimension 128
  CHECK(c.model.ffn_hidden == 4 * 2304);    // 4h for a GeLU MLP
  CHECK(c.tp == 1);
  CHECK(c.dp == 32);                         // gpus / (tp pp cp) = 32 / 1
  CHECK_THAT(c.filled, VectorContains(std::string("heads null -> 18 (head dimension 128)")));
  CHECK_THAT(c.filled, VectorContains(std::string("dp null -> 32 (gpus / (tp pp cp))")));
  // Gated MLPs take Llama's rule: h = 4096 -> 256 * ceil(8 * 4096 / 3 / 256) = 11008 (Llama 2 7B).
  std::string llama = with(with(with(t, R"("hidden": 2304)", R"("hidden": 4096)"), R"("activation": "gelu")",
                                R"("activation": "swiglu")"), R"("heads": null)", R"("heads": 32)");
  CHECK(parse_validation_file(llama, "v.json").cases.at(0).model.ffn_hidden == 11008);
}

TEST_CASE("spec::parse_validation_file: a null tp or pp beside a stated dp comes from the GPUs", "[spec]") {
  // 32 GPUs, dp 16: tp = 32 / (pp 1 x dp 16) = 2, as written in the case.
  ValidationCase c = parse_validation_file(with(R"("tp": 2)", R"("tp": null)"), "v.json").cases.at(0);
  CHECK(c.tp == 2);
  CHECK_THAT(c.filled, VectorContains(std::string("tp null -> 2 (gpus / (the other degrees))")));
  std::string pp = with(with(R"("pp": 1)", R"("pp": null)"), R"("dp": 16)", R"("dp": 4)");
  c = parse_validation_file(pp, "v.json").cases.at(0);
  CHECK(c.pp == 4);  // 32 / (tp 2 x dp 4)
  // GPUs that do not divide evenly leave the generic rule (and the layout check reports the case).
  c = parse_validation_file(with(with(R"("tp": 2)", R"("tp": null)"), R"("dp": 16)", R"("dp": 5)"), "v.json").cases.at(0);
  CHECK(c.tp == 1);
  CHECK_THAT(c.filled, VectorContains(std::string("tp null -> 1 (no tensor parallelism)")));
}

TEST_CASE("spec::parse_validation_file: unknown top-level case keys are kept, not dropped", "[spec]") {
  ValidationFile f = parse_validation_file(with(R"("notes": "test")", R"("notes": "test", "mfu": 0.4)"), "v.json");
  REQUIRE(f.cases.size() == 1);
  CHECK(f.cases[0].ignored == std::vector<std::string>{"mfu"});
  ResolvedCase r = resolve_case(f.cases[0], "v.json", kGeneric);
  CHECK_THAT(r.assumptions, VectorContains(std::string("ignored unknown field \"mfu\"")));
}

TEST_CASE("spec::resolve_case: nulls follow the README's rules and say so", "[spec]") {
  std::string t = kFile;
  t = with(t, R"("zero_stage": 0)", R"("zero_stage": null)");
  t = with(t, R"("sequence_parallel": false)", R"("sequence_parallel": null)");
  t = with(t, R"("micro_batch": 16)", R"("micro_batch": null)");
  t = with(t, R"("precision": "fp16")", R"("precision": null)");
  t = with(t, R"("recompute": "full")", R"("recompute": null)");
  t = with(t, R"("vocab": 51200)", R"("vocab": null)");
  t = with(t, R"("kv_heads": 24)", R"("kv_heads": null)");
  ValidationFile f = parse_validation_file(t, "v.json");
  ResolvedCase r = resolve_case(f.cases[0], "v.json", kGeneric);
  // shared/validation/README.md: zero_stage null -> Megatron's distributed optimizer (stage 1).
  CHECK(r.par.zero_stage == 1);
  CHECK_THAT(r.assumptions, VectorContains(std::string("zero_stage null -> 1 (Megatron distributed optimizer)")));
  // sequence_parallel null -> on when tp > 1 (tp is 2 here).
  CHECK(r.par.sequence_parallel);
  CHECK_THAT(r.assumptions, VectorContains(std::string("sequence_parallel null -> on")));
  // micro_batch null -> 1; precision null -> bf16; recompute null -> least that fits.
  CHECK(r.train.micro_batch == 1);
  CHECK_THAT(r.assumptions, VectorContains(std::string("micro_batch null -> 1")));
  CHECK(r.train.precision == Dtype::bf16);
  CHECK_THAT(r.assumptions, VectorContains(std::string("precision null -> bf16")));
  CHECK(r.auto_recompute);
  CHECK_THAT(r.assumptions, VectorContains(std::string("recompute null -> least that fits")));
  // gelu -> Megatron GPT, GPT-2 BPE padded to 51,200 (Megatron-LM README, SC'21).
  CHECK(r.model.vocab == 51200);
  CHECK_THAT(r.assumptions, VectorContains(std::string("vocab null -> 51200 (the family's tokenizer)")));
  CHECK(r.model.position_embedding == PositionEmbedding::learned);
  CHECK(r.model.max_position == 2048);  // the case's seq_len
  CHECK(r.model.kv_heads == 24);        // null kv_heads: multi-head attention
  CHECK(r.model.head_dim == 96);        // 2304 / 24

  // tp = 1: sequence parallelism has nothing to split, so null -> off.
  std::string tp1 = with(with(t, R"("tp": 2)", R"("tp": 1)"), R"("dp": 16)", R"("dp": 32)");
  ResolvedCase r1 = resolve_case(parse_validation_file(tp1, "v.json").cases[0], "v.json", kGeneric);
  CHECK_FALSE(r1.par.sequence_parallel);
  CHECK_THAT(r1.assumptions, VectorContains(std::string("sequence_parallel null -> off")));
  // swiglu -> Llama family, 32,000-token SentencePiece vocabulary (Llama 2).
  std::string llama = with(t, R"("activation": "gelu")", R"("activation": "swiglu")");
  ResolvedCase rl = resolve_case(parse_validation_file(llama, "v.json").cases[0], "v.json", kGeneric);
  CHECK(rl.model.vocab == 32000);
  CHECK(rl.model.norm == Norm::rmsnorm);
}

// resolve_case checks the model against an empty reader; the error must still name the case's
// own key "kv_heads" (it once said "num_key_value_heads", the Hugging Face spelling).
TEST_CASE("spec::resolve_case: an invalid model names the case's own key", "[spec]") {
  ValidationFile f = parse_validation_file(with(R"("kv_heads": 24)", R"("kv_heads": 7)"), "v.json");
  CHECK_THROWS_WITH(resolve_case(f.cases[0], "v.json", kGeneric),
                    Equals("v.json:/cases/0/model/kv_heads: expected a divisor of heads (24), got 7"));
}

TEST_CASE("spec::load_validation_file: the shared measured runs parse", "[spec]") {
  std::string path = std::string(DTSIM_SHARED_DIR) + "/validation/measured_runs.json";
  if (!std::filesystem::exists(path)) {
    WARN("skipped: " << path << " not found");
    return;
  }
  ValidationFile f = load_validation_file(path);
  // Every entry of the file's "cases" array, read independently of the parser under test.
  CHECK(f.cases.size() == nlohmann::json::parse(dtsim::test::read_text(path)).at("cases").size());
  CHECK(f.cases.size() >= 64);  // the file only grows
  std::set<std::string> ids;
  for (const ValidationCase& c : f.cases) {
    INFO(c.id);
    CHECK(ids.insert(c.id).second);  // unique ids
    CHECK(c.measured_s > 0);
    CHECK(c.tp * c.pp * c.dp * c.cp == c.gpus);
  }
}

TEST_CASE("spec::apply_recipes: fills nulls with their source, never overrides", "[spec]") {
  std::string t = with(with(R"("recompute": "full")", R"("recompute": null)"), R"("zero_stage": 0)", R"("zero_stage": null)");
  ValidationFile f = parse_validation_file(t, "v.json");
  RecipesFile r = parse_recipes_file(R"({"schema": "dtsim-validation-recipes/1", "cases": {
      "c0": {"recompute": "full", "zero_stage": 0, "source": "run.sh @ abc: --checkpoint-activations"},
      "other": {"recompute": "none", "source": "elsewhere"}}})",
                                     "r.json");
  CHECK_THAT(apply_recipes(f, r), Equals(std::vector<std::string>{"other"}));  // unmatched ids returned
  ResolvedCase rc = resolve_case(f.cases[0], "v.json", kGeneric);
  CHECK(rc.train.recompute == Recompute::full);
  CHECK_FALSE(rc.auto_recompute);  // the recipe decides, not "least that fits"
  CHECK(rc.par.zero_stage == 0);
  CHECK_THAT(rc.assumptions,
             VectorContains(std::string("recompute null -> full (recipe)")));
  CHECK_THAT(rc.assumptions, VectorContains(std::string("zero_stage null -> 0 (recipe)")));
  // The entry's source is said once, before the fields it filled.
  auto at = [&](const std::string& a) { return std::find(rc.assumptions.begin(), rc.assumptions.end(), a); };
  auto source = at("recipe source: run.sh @ abc: --checkpoint-activations");
  REQUIRE(source != rc.assumptions.end());
  CHECK(source < at("zero_stage null -> 0 (recipe)"));
  CHECK(source < at("recompute null -> full (recipe)"));
  CHECK(std::count_if(rc.assumptions.begin(), rc.assumptions.end(),
                      [](const std::string& a) { return a.rfind("recipe source: ", 0) == 0; }) == 1);

  // A recipe for a field the case sets is an error naming the recipe file's pointer.
  ValidationFile set = parse_validation_file(kFile, "v.json");
  RecipesFile clash = parse_recipes_file(
      R"({"schema": "dtsim-validation-recipes/1", "cases": {"c0": {"recompute": "none", "source": "s"}}})", "r.json");
  CHECK_THROWS_WITH(apply_recipes(set, clash),
                    Equals("r.json:/cases/c0/recompute: expected a field the case leaves null, but case c0 sets it"));
}

TEST_CASE("spec::parse_recipes_file: every entry names a source; unknown keys are rejected", "[spec]") {
  CHECK_THROWS_WITH(parse_recipes_file(R"({"schema": "dtsim-validation-recipes/1", "cases": {"c0": {"recompute": "full"}}})",
                                       "r.json"),
                    Equals("r.json:/cases/c0/source: missing required key"));
  CHECK_THROWS_AS(parse_recipes_file(
                      R"({"schema": "dtsim-validation-recipes/1", "cases": {"c0": {"source": "s", "tp": 8}}})", "r.json"),
                  dtsim::SpecError);
  // The shipped file parses.
  RecipesFile shipped = load_recipes_file(std::string(DTSIM_SOURCE_DIR) + "/calibration/validation-recipes.json");
  CHECK_FALSE(shipped.cases.empty());
}

TEST_CASE("spec::apply_recipes: an fp8 scaling recipe the case's \"fp8\" leaves open", "[spec]") {
  // The validation schema's "fp8" covers every scaling recipe; a recipes file names the run's.
  ValidationFile f = parse_validation_file(with(R"("precision": "fp16")", R"("precision": "fp8")"), "v.json");
  RecipesFile r = parse_recipes_file(
      R"({"schema": "dtsim-validation-recipes/1", "cases": {"c0": {"fp8_recipe": "mxfp8", "source": "table: FP8-MX"}}})",
      "r.json");
  CHECK(apply_recipes(f, r).empty());
  ResolvedCase rc = resolve_case(f.cases[0], "v.json", kGeneric);
  REQUIRE(rc.fp8_recipe.has_value());
  CHECK(*rc.fp8_recipe == Fp8Recipe::mxfp8);
  CHECK_THAT(rc.assumptions, VectorContains(std::string("fp8_recipe null -> mxfp8 (recipe)")));
  CHECK_THAT(rc.assumptions, VectorContains(std::string("recipe source: table: FP8-MX")));
  // Without a recipe the stack's scaling applies (nothing set here).
  ValidationFile plain = parse_validation_file(kFile, "v.json");
  CHECK_FALSE(resolve_case(plain.cases[0], "v.json", kGeneric).fp8_recipe.has_value());
  CHECK_THROWS_WITH(
      parse_recipes_file(
          R"({"schema": "dtsim-validation-recipes/1", "cases": {"c0": {"fp8_recipe": "blockwise", "source": "s"}}})",
          "r.json"),
      Catch::Matchers::StartsWith("r.json:/cases/c0/fp8_recipe: expected one of"));
}

TEST_CASE("spec::apply_recipes: the run's TP reduce-scatter overlaps (ub config)", "[spec]") {
  ValidationFile f = parse_validation_file(kFile, "v.json");
  RecipesFile r = parse_recipes_file(
      R"({"schema": "dtsim-validation-recipes/1", "cases": {"c0": {"tp_overlap_rs": "24,20", "source": "hydra.yaml"}}})",
      "r.json");
  CHECK(apply_recipes(f, r).empty());
  ResolvedCase rc = resolve_case(f.cases[0], "v.json", kGeneric);
  REQUIRE(rc.tp_overlap_rs.has_value());
  CHECK(rc.tp_overlap_rs->proj_sms == 24);
  CHECK(rc.tp_overlap_rs->fc2_sms == 20);
  CHECK_THAT(rc.assumptions, VectorContains(std::string("tp_overlap_rs null -> 24,20 (recipe)")));
  CHECK_THROWS_WITH(
      parse_recipes_file(
          R"({"schema": "dtsim-validation-recipes/1", "cases": {"c0": {"tp_overlap_rs": "24", "source": "s"}}})", "r.json"),
      Catch::Matchers::StartsWith("r.json:/cases/c0/tp_overlap_rs: expected PROJ,FC2"));
}

TEST_CASE("spec::apply_recipes: torch.compile and TP overlap where the run's config set them", "[spec]") {
  ValidationFile f = parse_validation_file(kFile, "v.json");
  RecipesFile r = parse_recipes_file(
      R"({"schema": "dtsim-validation-recipes/1", "cases": {"c0": {"compile": true, "tp_comm_overlap": false, "source": "8b.toml"}}})",
      "r.json");
  CHECK(apply_recipes(f, r).empty());
  ResolvedCase rc = resolve_case(f.cases[0], "v.json", kGeneric);
  CHECK(rc.compile == std::optional<bool>(true));
  CHECK(rc.tp_comm_overlap == std::optional<bool>(false));
  CHECK_THAT(rc.assumptions, VectorContains(std::string("compile null -> on (recipe)")));
  CHECK_THAT(rc.assumptions, VectorContains(std::string("tp_comm_overlap null -> off (recipe)")));
  ValidationFile plain = parse_validation_file(kFile, "v.json");
  CHECK_FALSE(resolve_case(plain.cases[0], "v.json", kGeneric).compile.has_value());
  CHECK_THROWS_WITH(
      parse_recipes_file(R"({"schema": "dtsim-validation-recipes/1", "cases": {"c0": {"compile": "yes", "source": "s"}}})",
                         "r.json"),
      Catch::Matchers::StartsWith("r.json:/cases/c0/compile: expected"));
}

TEST_CASE("spec::apply_recipes: a recipe's layer-wise checkpointing recomputes some of the layers", "[spec]") {
  // torchtitan's "selective layer" checkpointing wraps every N-th block whole: full recompute of
  // 1/N of them, which costs what Megatron's block method does with that many layers.
  ValidationFile f = parse_validation_file(kFile, "v.json");
  RecipesFile r = parse_recipes_file(
      R"({"schema": "dtsim-validation-recipes/1", "cases": {"c0": {"recompute_layers": 48, "source": "pr-125"}}})", "r.json");
  CHECK(apply_recipes(f, r).empty());
  ResolvedCase rc = resolve_case(f.cases[0], "v.json", kGeneric);
  CHECK(rc.train.recompute_layers == 48);
  CHECK_THAT(rc.assumptions, VectorContains(std::string("recompute_layers null -> 48 (recipe)")));
  CHECK(resolve_case(parse_validation_file(kFile, "v.json").cases[0], "v.json", kGeneric).train.recompute_layers == 0);
  std::string text = kFile;
  text.replace(text.find("\"recompute\": \"full\""), 19, "\"recompute\": \"none\"");
  ValidationFile none = parse_validation_file(text, "v.json");
  CHECK_THROWS_WITH(apply_recipes(none, r),
                    Catch::Matchers::StartsWith("r.json:/cases/c0/recompute_layers: expected case c0 to recompute \"full\""));
}

TEST_CASE("spec::apply_recipes: fp8 parameters where the recipe keeps them (NeMo fp8_params)", "[spec]") {
  std::string text = kFile;
  text.replace(text.find("\"precision\": \"fp16\""), 19, "\"precision\": \"fp8\"");
  ValidationFile f = parse_validation_file(text, "v.json");
  RecipesFile r = parse_recipes_file(
      R"({"schema": "dtsim-validation-recipes/1", "cases": {"c0": {"fp8_param_gather": true, "source": "sft.sh"}}})", "r.json");
  CHECK(apply_recipes(f, r).empty());
  ResolvedCase rc = resolve_case(f.cases[0], "v.json", kGeneric);
  CHECK(rc.train.fp8_params);
  CHECK_THAT(rc.assumptions, VectorContains(std::string("fp8_param_gather null -> on (recipe)")));
  CHECK_THAT(rc.assumptions, VectorContains(std::string("recipe source: sft.sh")));
  // Without the recipe the stack's default (the generic one: off) holds.
  ValidationFile plain = parse_validation_file(text, "v.json");
  CHECK_FALSE(resolve_case(plain.cases[0], "v.json", kGeneric).train.fp8_params);
  CHECK_THROWS_WITH(
      parse_recipes_file(R"({"schema": "dtsim-validation-recipes/1", "cases": {"c0": {"fp8_param_gather": 1, "source": "s"}}})",
                         "r.json"),
      Catch::Matchers::StartsWith("r.json:/cases/c0/fp8_param_gather: expected"));
}

TEST_CASE("spec::apply_recipes: a fine-tuning run's LoRA adapters and packed samples", "[spec]") {
  ValidationFile f = parse_validation_file(kFile, "v.json");
  RecipesFile r = parse_recipes_file(R"({"schema": "dtsim-validation-recipes/1", "cases": {"c0": {
      "peft": "lora", "lora_rank": 32, "lora_targets": "linear_qkv", "sample_len": 128, "source": "lora.sh"}}})",
                                     "r.json");
  CHECK(apply_recipes(f, r).empty());
  ResolvedCase rc = resolve_case(f.cases[0], "v.json", kGeneric);
  CHECK(rc.train.peft == Peft::lora);
  CHECK(rc.train.lora_rank == 32);
  CHECK(rc.train.lora_targets == lora_target::linear_qkv);
  CHECK(rc.train.sample_len == 128);
  CHECK_THAT(rc.assumptions, VectorContains(std::string("lora_targets null -> linear_qkv (recipe)")));
  CHECK_THAT(rc.assumptions, VectorContains(std::string("sample_len null -> 128 (recipe)")));
  // Without a recipe: full training, one sample per sequence.
  ValidationFile plain = parse_validation_file(kFile, "v.json");
  ResolvedCase p = resolve_case(plain.cases[0], "v.json", kGeneric);
  CHECK(p.train.peft == Peft::none);
  CHECK(p.train.sample_len == 0);
  CHECK_THROWS_WITH(
      parse_recipes_file(R"({"schema": "dtsim-validation-recipes/1", "cases": {"c0": {"lora_rank": 8, "source": "s"}}})",
                         "r.json"),
      Equals("r.json:/cases/c0/lora_rank: expected \"peft\": \"lora\" beside it, got none"));
  CHECK_THROWS_WITH(
      parse_recipes_file(
          R"({"schema": "dtsim-validation-recipes/1", "cases": {"c0": {"peft": "lora", "lora_targets": "qkv", "source": "s"}}})",
          "r.json"),
      Catch::Matchers::StartsWith("r.json:/cases/c0/lora_targets: expected distinct targets among"));
}
