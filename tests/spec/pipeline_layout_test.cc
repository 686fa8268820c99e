#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "cost/partition.h"
#include "cli/cli_helpers.h"
#include "helpers.h"
#include "spec/load.h"
#include "spec/pipeline_layout.h"

using dtsim::SpecError;
using dtsim::spec::parse_pipeline_layout;
using Catch::Matchers::Contains;
using V = std::vector<std::int64_t>;

namespace {

dtsim::spec::Model deepseek() { return dtsim::spec::load_model(dtsim::test::source_path("models/deepseek-v3.json")); }

}  // namespace

TEST_CASE("spec::parse_pipeline_layout: Megatron-Bridge's DeepSeek-V3 layouts", "[spec]") {
  dtsim::spec::Model m = deepseek();
  REQUIRE(m.layers == 61);
  REQUIRE(m.mtp_layers == 1);
  // The recipe map's (16,1) entry: [embedding + 4] + 14 x [4] + [1 + MTP + loss].
  V expect(16, 4);
  expect.back() = 1;
  CHECK(parse_pipeline_layout("Et*4|(t*4|)*14tmL", m, 16, 1, "--pipeline-layout") == expect);
  // The same string over 4 ranks is 4 chunks each: virtual stage k runs on rank k % 4, chunk
  // k / 4, so the last rank holds 4 + 4 + 4 + 1 -- its chunks kept apart.
  dtsim::spec::Parallel four{.pp = 4, .vp = 4};
  four.chunk_layers = parse_pipeline_layout("Et*4|(t*4|)*14tmL", m, 4, 4, "x");
  CHECK(four.chunk_layers == expect);
  dtsim::cost::LayerPartition part(m, four);
  CHECK(part.stage_layers() == V{16, 16, 16, 13});
  CHECK(part.layers(3, 3) == 1);
  CHECK(part.layers(3, 2) == 4);
  CHECK(part.first_layer(3, 3) == 60);
  CHECK(part.first_layer(1, 1) == 20);
  // H100: "Et|(tt|)*30mL", 32 virtual stages over pp 8: rank 0 holds 1 + 2 + 2 + 2, rank 7
  // 2 + 2 + 2 + 0 (its last chunk is the MTP module and the loss alone).
  dtsim::spec::Parallel h100{.pp = 8, .vp = 4};
  h100.chunk_layers = parse_pipeline_layout("Et|(tt|)*30mL", m, 8, 4, "x");
  dtsim::cost::LayerPartition h(m, h100);
  CHECK(h.stage_layers() == V{7, 8, 8, 8, 8, 8, 8, 6});
  CHECK(h.layers(0, 0) == 1);
  CHECK(h.layers(7, 3) == 0);
  CHECK(h.layers(7, 2) == 2);
  // Without a layout, each stage's layers spread evenly over its chunks, earlier ones first.
  dtsim::spec::Parallel even{.pp = 8, .vp = 4};
  even.stage_layers = h.stage_layers();
  dtsim::cost::LayerPartition e(m, even);
  CHECK(e.layers(0, 0) == 2);
  CHECK(e.layers(0, 3) == 1);
  CHECK(e.layers(7, 3) == 1);
  CHECK(e.first_layer(7, 3) == 60);
  // Commas are cosmetic, as in Megatron's parser.
  CHECK(parse_pipeline_layout("Et*4|(t*4|)*14,t,m,L", m, 16, 1, "x") == expect);
}

TEST_CASE("spec::parse_pipeline_layout: what Megatron-Core rejects, and a standalone MTP stage", "[spec]") {
  dtsim::spec::Model m = deepseek();
  auto bad = [&](const std::string& layout, std::int64_t pp, const std::string& says) {
    INFO(layout);
    std::int64_t vp = 1;
    CHECK_THROWS_WITH(parse_pipeline_layout(layout, m, pp, vp, "--pipeline-layout"), Contains(says));
    try {
      (void)parse_pipeline_layout(layout, m, pp, vp, "--pipeline-layout");
    } catch (const SpecError& e) {
      CHECK(std::string(e.what()).rfind("--pipeline-layout", 0) == 0);
    }
  };
  bad("Et*4|(t*4|)*14tmL", 3, "expected pp x vp = 3 stages separated by '|' (pp 3, vp 1), got 16");
  bad("Et*4|(t*4|)*14tm", 16, "expected the loss 'L' once, as the last layer");
  bad("t*4|(t*4|)*14tEmL", 16, "expected the embedding 'E' once, as the first layer");
  bad("Et*4|(t*4|)*14ttmL", 16, "expected 61 decoder layers 't' (the model's), got 62");
  bad("Et*4|(t*4|)*14tL", 16, "expected 1 MTP modules 'm' (the model's), got 0");
  bad("Et*4|(t*4|)*13t*4m|tL", 16, "every decoder layer 't' before the MTP modules");
  bad("Et*4|(t*4|)*13t*5m|L", 16, "expected the MTP modules 'm' in the last stage, beside the loss");
  bad("Et*4|(t*4|)*14txL", 16, "got 'x'");
  bad("Et*4|((t*4|)*2)*7tmL", 16, "groups do not nest");
  bad("Et*4|(t*4|)14tmL", 16, "expected \"*n\" after the group");
  bad("Et*|(t*4|)*14tmL", 16, "repeat count");
  bad("E(t)*9999999mL", 1, "repeat count");
  bad("E(t*999999|)*999999mL", 1, "at most 1048576 layers once unrolled");
}

TEST_CASE("cli simulate --pipeline-layout: the layout's stages, and a clear error", "[cli]") {
  std::string job = "simulate --model deepseek-v3 --cluster dgx-b200 --gpus 256 --pp 16 --ep 8 --mbs 1 --gbs 2048 "
                    "--precision fp8 --fp8-recipe mxfp8 --json";
  auto run = [&](const std::string& flags) { return dtsim::test::run_json(job + " " + flags); };
  nlohmann::json layout = run("--pipeline-layout 'Et*4|(t*4|)*14tmL'");
  V expect(16, 4);
  expect.back() = 1;
  CHECK(layout.at("config").at("stage_layers").get<V>() == expect);
  CHECK(run("--stage-layers " + std::string("4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,1")).at("step_time_s") ==
        layout.at("step_time_s"));
  dtsim::test::Run both = dtsim::test::run_dtsim(job + " --pipeline-layout 'Et*4|(t*4|)*14tmL' --stage-layers 4,4");
  CHECK(both.status == 2);
  CHECK_THAT(both.err, Contains("--pipeline-layout: expected it or --stage-layers, not both"));
  dtsim::test::Run vp = dtsim::test::run_dtsim(job + " --pipeline-layout 'Et|(tt|)*30mL'");
  CHECK(vp.status == 2);
  CHECK_THAT(vp.err, Contains("--pipeline-layout: expected pp x vp = 16 stages separated by '|' (pp 16, vp 1), got 32"));
}

TEST_CASE("cli simulate --pipeline-layout: each model chunk keeps its own layers", "[cli]") {
  // DeepSeek-V3's H100 layout gives the last rank's last chunk no decoder layer: the MTP module,
  // LM head and loss alone weigh about what two layers do elsewhere. The same layers per rank
  // spread evenly would put a layer beside them (2,2,1,1+MTP), the heaviest virtual stage, which
  // paces the interleaved schedule: the layout's bubble is the smaller.
  std::string job = "simulate --model deepseek-v3 --cluster dgx-h100 --gpus 1024 --tp 2 --pp 8 --vp 4 --ep 64 "
                    "--etp 1 --sp --mbs 1 --gbs 8192 --seq 4096 --precision fp8 --json";
  auto run = [&](const std::string& flags) { return dtsim::test::run_json(job + " " + flags); };
  nlohmann::json layout = run("--pipeline-layout 'Et|(tt|)*30mL'");
  nlohmann::json even = run("--stage-layers 7,8,8,8,8,8,8,6");
  V chunks(32, 2);
  chunks.front() = 1;
  chunks.back() = 0;
  CHECK(layout.at("config").at("chunk_layers").get<V>() == chunks);
  CHECK(layout.at("config").at("stage_layers") == even.at("config").at("stage_layers"));
  CHECK(even.at("config").at("chunk_layers").get<V>().back() == 1);
  double bubble_layout = layout.at("breakdown").at("pp_bubble").get<double>();
  double bubble_even = even.at("breakdown").at("pp_bubble").get<double>();
  CHECK(bubble_layout < 0.8 * bubble_even);
  CHECK(layout.at("step_time_s").get<double>() < even.at("step_time_s").get<double>());
}

TEST_CASE("cli simulate: DeepSeek-V3 takes its recipe's layout when the job names none", "[cli]") {
  // Megatron-Bridge's DeepSeek-V3 recipe lays 61 layers + MTP over (pp 16, vp 1) as [embedding + 4]
  // + 14 x [4] + [1 + MTP + loss] (models/deepseek-v3.json pipeline_layouts); without it dtsim's even
  // split would put 3 layers beside the MTP module and the LM head on the last rank.
  std::string job = "simulate --model deepseek-v3 --cluster dgx-b200 --gpus 256 --pp 16 --ep 8 --mbs 1 --gbs 2048 "
                    "--precision fp8 --fp8-recipe mxfp8";
  nlohmann::json none = dtsim::test::run_json(job + " --json");
  nlohmann::json given = dtsim::test::run_json(job + " --json --pipeline-layout 'Et*4|(t*4|)*14tmL'");
  V expect(16, 4);
  expect.back() = 1;
  CHECK(none.at("config").at("chunk_layers").get<V>() == expect);
  CHECK(none.at("step_time_s") == given.at("step_time_s"));
  dtsim::test::Run text = dtsim::test::run_dtsim(job);
  CHECK(text.status == 0);
  CHECK_THAT(text.out, Contains("note: pipeline layout Et*4|(t*4|)*14tmL: DeepSeek-V3's reference for pp 16 x vp 1"));
  // A split by stage of the job's own replaces it; a (pp, vp) the recipe has no layout for keeps
  // dtsim's even split.
  nlohmann::json staged = dtsim::test::run_json(job + " --json --stage-layers 3,3,4,4,4,4,4,4,4,4,4,4,4,4,4,3");
  CHECK(staged.at("config").at("chunk_layers").get<V>().back() == 3);
  CHECK(staged.at("step_time_s").get<double>() > none.at("step_time_s").get<double>());
  nlohmann::json pp2 = dtsim::test::run_json(
      "simulate --model deepseek-v3 --cluster gb200-nvl72 --gpus 256 --pp 2 --vp 4 --ep 32 --mbs 1 --gbs 2048 --json");
  CHECK(pp2.at("config").at("stage_layers").get<V>() == V{30, 31});
}
