// plan --shard I/N and dtsim merge: the merged plan is byte for byte the unsharded one.
#include <catch2/catch.hpp>

#include <string>

#include "cli_helpers.h"
#include "helpers.h"

using namespace dtsim::test;
using Catch::Matchers::Equals;
using Catch::Matchers::StartsWith;

TEST_CASE("cli plan --shard and merge: byte-identical to the unsharded plan", "[cli]") {
  TempDir tmp;
  const std::string plan = "plan --model llama3-8b --cluster dgx-h100 --gpus 16 --gbs 64 --seq 4096 --top 7";
  auto whole_json = run_dtsim(plan + " --no-timing --json"), whole_text = run_dtsim(plan + " --no-timing");
  REQUIRE(whole_json.status == 0);
  std::string parts;
  for (int i = 0; i < 3; ++i) {
    auto part = run_dtsim(plan + " --shard " + std::to_string(i) + "/3");
    REQUIRE(part.status == 0);
    parts += " '" + tmp.write("part" + std::to_string(i) + ".json", part.out) + "'";
  }
  // Any order of the files; the format flag given to merge.
  auto merged_json = run_dtsim("merge" + parts + " --json");
  CHECK(merged_json.status == 0);
  CHECK(merged_json.out == whole_json.out);
  auto merged_text = run_dtsim("merge '" + (tmp.dir / "part2.json").string() + "' '" + (tmp.dir / "part0.json").string() +
                               "' '" + (tmp.dir / "part1.json").string() + "'");
  CHECK(merged_text.out == whole_text.out);
  // One shard alone evaluates about a third of the space.
  auto one = run_dtsim(plan + " --shard 1/3");
  CHECK(one.out.find("\"shard\":1") != std::string::npos);
}

TEST_CASE("cli merge: missing, repeated and foreign shards exit 2", "[cli]") {
  TempDir tmp;
  const std::string plan = "plan --model llama3-8b --cluster dgx-h100 --gpus 8 --gbs 64";
  std::string a = tmp.write("a.json", run_dtsim(plan + " --shard 0/2").out);
  std::string b = tmp.write("b.json", run_dtsim(plan + " --shard 1/2").out);
  std::string other = tmp.write("c.json", run_dtsim(plan + " --seq 4096 --shard 1/2").out);
  check_bad("merge '" + a + "'", Equals("dtsim: FILE: expected all 2 shards, got none for shard 1/2\n"));
  check_bad("merge '" + a + "' '" + a + "' '" + b + "'",
            Equals("dtsim: " + a + ": expected each shard once, got shard 0 twice\n"));
  check_bad("merge '" + a + "' '" + other + "'",
            StartsWith("dtsim: " + other + ": expected a shard of the same plan as " + a));
  check_bad(plan + " --shard 2/2", Equals("dtsim: --shard: expected I/N with 0 <= I < N (e.g. 3/16), got \"2/2\"\n"));
  check_bad(plan + " --shard 1/2 --refine simgrid", StartsWith("dtsim: --shard: expected no --refine with it"));
  std::string broken = tmp.write("broken.json", R"({"schema": "dtsim-plan-shard/1", "shard": 0, "shards": 1,
    "candidates": 3, "args": [], "results": [{"candidate": 7}]})");
  check_bad("merge '" + broken + "'", Equals("dtsim: " + broken + ":/results/0/candidate: expected an integer in [0, 2], got 7\n"));
}
