// --from-megatron / --from-nemo / --from-deepspeed on simulate, memory and plan: the imported
// flags, the command line winning over them, and the notes on what was ignored.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "cli_helpers.h"
#include "helpers.h"

using namespace dtsim::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using nlohmann::json;

namespace {
std::string example(const char* name) { return "'" + source_path(std::string("examples/imports/") + name) + "'"; }
}  // namespace

TEST_CASE("cli --from-megatron: the GPT-3 175B launch script is the same job as its flags", "[cli]") {
  // The script: TP 8, PP 16, torchrun --nnodes 128 --nproc_per_node 8, --fp16, full recompute,
  // no distributed optimizer (ZeRO 0), no sequence parallelism, 96 x 12288, GPT2BPETokenizer.
  json imported = run_json("simulate --from-megatron " + example("megatron-gpt3-175b.sh") + " --cluster dgx-a100 --json");
  json flags = run_json("simulate --model gpt3-175b --cluster dgx-a100 --gpus 1024 --tp 8 --pp 16 --mbs 1 --gbs 1536 "
                        "--seq 2048 --precision fp16 --recompute full --zero 0 --json");
  CHECK(imported.at("config") == flags.at("config"));
  CHECK(imported.at("step_time_s") == flags.at("step_time_s"));
  bool ignored = false, matched = false;
  for (const json& n : imported.at("notes")) {
    ignored |= n.get<std::string>().find("ignored --") != std::string::npos;
    matched |= n.get<std::string>().find("model = gpt3-175b") != std::string::npos;
  }
  CHECK(ignored);
  CHECK(matched);
  // The command line wins over the script.
  json tp4 = run_json("simulate --from-megatron " + example("megatron-gpt3-175b.sh") + " --cluster dgx-a100 --tp 4 --json");
  CHECK(tp4.at("config").at("tp") == 4);
}

TEST_CASE("cli --from-nemo and --from-deepspeed: recipes and configs as flags", "[cli]") {
  json nemo = run_json("simulate --from-nemo " + example("nemo-llama3-8b.yaml") + " --cluster dgx-h100 --json");
  json same = run_json("simulate --model llama3-8b --cluster dgx-h100 --gpus 64 --cp 2 --gbs 512 --seq 8192 "
                       "--precision bf16 --zero 1 --tp-comm-overlap off --overlap-grad-reduce on --overlap-param-gather on "
                       "--framework nemo --json");
  CHECK(nemo.at("step_time_s") == same.at("step_time_s"));
  // DeepSpeed states no model: --model is still needed, and the batch comes from the config.
  check_bad("memory --from-deepspeed " + example("deepspeed-zero3.json") + " --cluster dgx-h100",
            StartsWith("dtsim: --model: expected a preset name or a file"));
  json ds = run_json("memory --from-deepspeed " + example("deepspeed-zero3.json") + " --model llama3-8b --cluster dgx-h100 --json");
  CHECK(ds.at("config").at("zero_stage") == 3);
  // plan takes the batch, precision and model from the script and searches the layout itself.
  auto plan = run_dtsim("plan --from-megatron " + example("megatron-gpt3-175b.sh") + " --cluster dgx-a100 --top 1 --json");
  CHECK(plan.status == 0);
  check_bad("simulate --from-megatron /nonexistent/run.sh --cluster dgx-a100",
            StartsWith("dtsim: --from-megatron: expected an existing file"));
}
