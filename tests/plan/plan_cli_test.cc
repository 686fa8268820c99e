#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "helpers.h"

using dtsim::test::run_dtsim;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

TEST_CASE("cli plan: JSON contract of DESIGN.md", "[plan]") {
  auto r = run_dtsim("plan --model llama3-8b --cluster dgx-h100 --gpus 16 --gbs 32 --seq 4096 --max-mbs 2 --top 3 --json");
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("evaluated").get<int>() > 0);
  CHECK(j.at("pruned").is_object());
  REQUIRE(j.at("configs").size() == 3);
  const auto& best = j.at("configs")[0];
  for (const char* k : {"tp", "pp", "dp", "cp", "ep", "vp", "zero_stage", "sequence_parallel", "micro_batch",
                        "recompute", "step_time_s", "mfu", "peak_bytes_per_gpu"})
    CHECK(best.contains(k));
  // Ranked best first; every layout uses all 16 GPUs.
  CHECK(best.at("step_time_s").get<double>() <= j.at("configs")[1].at("step_time_s").get<double>());
  for (const auto& c : j.at("configs"))
    CHECK(c.at("tp").get<int>() * c.at("pp").get<int>() * c.at("dp").get<int>() * c.at("cp").get<int>() == 16);
}

TEST_CASE("cli plan: --speed-spread sets the pace every layout runs at", "[plan]") {
  auto plan = [](const std::string& extra) {
    auto r = run_dtsim("plan --model llama3-8b --cluster dgx-h100 --gpus 16 --gbs 32 --seq 4096 --max-mbs 1 --top 1 --json" +
                       extra);
    REQUIRE(r.status == 0);
    return nlohmann::json::parse(r.out);
  };
  auto even = plan(" --speed-spread 0"), profile = plan(""), wide = plan(" --speed-spread 0.03");
  CHECK(even.at("pace").get<double>() == 1);
  CHECK(profile.at("pace").get<double>() > 1);
  CHECK(wide.at("pace").get<double>() > profile.at("pace").get<double>());
  double t0 = even.at("configs")[0].at("step_time_s").get<double>();
  CHECK(t0 < profile.at("configs")[0].at("step_time_s").get<double>());
  CHECK(profile.at("configs")[0].at("step_time_s").get<double>() < wide.at("configs")[0].at("step_time_s").get<double>());
}

TEST_CASE("cli plan: --fix pins a field, --csv prints one row per config", "[plan]") {
  auto r = run_dtsim("plan --model llama3-8b --cluster dgx-h100 --gpus 16 --gbs 32 --seq 4096 --max-mbs 1 --fix tp=2 --top 2 --csv");
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, StartsWith("rank,tp,pp,dp,cp,ep,vp,micro_batch,zero_stage,sequence_parallel,recompute,"));
  CHECK_THAT(r.out, Contains("\n1,2,") && Contains("\n2,2,"));
}

TEST_CASE("cli plan: bad flags exit 2 naming the flag", "[plan]") {
  auto r = run_dtsim("plan --model llama3-8b --cluster dgx-h100 --gpus 16 --gbs 32 --fix tp:2");
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, StartsWith("dtsim: --fix: expected KEY=VALUE with KEY one of tp, pp, dp, cp, ep, etp, vp, mbs, zero, sp, recompute, got \"tp:2\""));
  r = run_dtsim("plan --model llama3-8b --cluster dgx-h100 --gpus 16 --gbs 32 --objective cost");
  CHECK(r.status == 2);
  CHECK_THAT(r.err, StartsWith("dtsim: --price-per-gpu-hour: expected a price > 0 for --objective cost, got none"));
}
