#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/errors.h"
#include "helpers.h"
#include "imports/imports.h"

using dtsim::imports::from_deepspeed;
using dtsim::imports::Imported;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;
using Catch::Matchers::VectorContains;
using Flags = std::vector<std::string>;

TEST_CASE("imports::from_deepspeed: the ZeRO-3 config", "[imports]") {
  std::string path = dtsim::test::source_path("examples/imports/deepspeed-zero3.json");
  Imported r = from_deepspeed(dtsim::test::read_text(path), path);
  // dp = train_batch_size / (micro x accumulation) = 1024 / (4 x 4) = 64; stage 3; bf16;
  // overlap_comm: true overlaps the gradient reduce-scatter with the backward.
  CHECK_THAT(r.flags, Equals(Flags{"--dp", "64", "--mbs", "4", "--gbs", "1024", "--precision", "bf16", "--zero", "3",
                                   "--overlap-grad-reduce", "on", "--framework", "deepspeed"}));
  CHECK_FALSE(r.model.has_value());
  CHECK_THAT(r.notes, VectorContains(std::string(
                          "dp = train_batch_size / (train_micro_batch_size_per_gpu x gradient_accumulation_steps) = "
                          "1024 / (4 x 4) = 64")));
  CHECK_THAT(r.ignored, VectorContains(std::string(
                            "zero_optimization.offload_optimizer (cpu: dtsim does not model optimizer offload)")));
  CHECK_THAT(r.ignored, VectorContains(std::string("optimizer (no effect on step time)")));
  CHECK_THAT(r.ignored, VectorContains(std::string("zero_optimization.stage3_prefetch_bucket_size (not read by dtsim)")));
  // offload_param's device is "none": nothing to ignore.
  for (const std::string& i : r.ignored) CHECK(i.find("offload_param") == std::string::npos);
}

TEST_CASE("imports::from_deepspeed: batch sizes without the DP size", "[imports]") {
  // 256 = 2 x accumulation x dp: two unknowns, so neither is derived.
  Imported two = from_deepspeed(R"({"train_batch_size": 256, "train_micro_batch_size_per_gpu": 2})", "ds.json");
  CHECK_THAT(two.flags, Equals(Flags{"--mbs", "2", "--gbs", "256", "--zero", "0", "--framework", "deepspeed"}));
  CHECK_THAT(two.notes, VectorContains(std::string("zero = 0 (no zero_optimization: DeepSpeed's default stage 0)")));
  Imported micro = from_deepspeed(R"({"train_micro_batch_size_per_gpu": 2, "gradient_accumulation_steps": 8})", "ds.json");
  CHECK_THAT(micro.notes, VectorContains(std::string(
                              "gbs = train_micro_batch_size_per_gpu x gradient_accumulation_steps x dp = 16 x dp; pass --gbs")));
  // The Hugging Face Trainer's "auto" is filled in at launch.
  Imported hf = from_deepspeed(R"({"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
                                   "fp16": {"enabled": "auto", "loss_scale": 0}, "zero_optimization": {"stage": 2}})",
                               "ds.json");
  CHECK_THAT(hf.flags, Equals(Flags{"--zero", "2", "--framework", "deepspeed"}));
  CHECK_THAT(hf.notes, VectorContains(std::string(
                           "train_batch_size: \"auto\" in ds.json:/train_batch_size (filled in at launch by the Hugging Face Trainer)")));
  CHECK_THAT(hf.ignored, VectorContains(std::string("fp16.loss_scale (loss scaling: no effect on step time)")));
}

TEST_CASE("imports::from_deepspeed: bad input names the JSON pointer", "[imports]") {
  // 4 x 8 = 32 sequences per DP rank and step; 100 is not a multiple of 32.
  REQUIRE_THROWS_WITH(
      from_deepspeed(R"({"train_batch_size": 100, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 8})",
                     "ds.json"),
      "ds.json:/train_batch_size: expected a multiple of train_micro_batch_size_per_gpu x gradient_accumulation_steps "
      "(4 x 8 = 32), as train_batch_size = micro x accumulation x dp, got 100");
  REQUIRE_THROWS_WITH(from_deepspeed(R"({"zero_optimization": {"stage": 4}})", "ds.json"),
                      "ds.json:/zero_optimization/stage: expected an integer in [0, 3], got 4");
  REQUIRE_THROWS_WITH(from_deepspeed(R"({"train_micro_batch_size_per_gpu": "four"})", "ds.json"),
                      "ds.json:/train_micro_batch_size_per_gpu: expected an integer in [1, 1073741824], got \"four\"");
  REQUIRE_THROWS_WITH(from_deepspeed(R"({"fp16": {"enabled": true}, "bf16": {"enabled": true}})", "ds.json"),
                      "ds.json:/bf16/enabled: expected fp16 or bf16 enabled, not both (DeepSpeed refuses), got both");
  REQUIRE_THROWS_WITH(from_deepspeed(R"({"zero_optimization": {"offload_optimizer": "cpu"}})", "ds.json"),
                      "ds.json:/zero_optimization/offload_optimizer: expected an object, got \"cpu\"");
  REQUIRE_THROWS_WITH(from_deepspeed("[1]", "ds.json"), "ds.json:/: expected an object, got an array");
  REQUIRE_THROWS_WITH(from_deepspeed("{\"fp16\": ", "ds.json"), Contains("ds.json: malformed JSON at line 1"));
}
