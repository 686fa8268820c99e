#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "core/errors.h"
#include "helpers.h"
#include "spec/stack.h"

using namespace dtsim::spec;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;
using Catch::Matchers::StartsWith;

namespace {

// Two versions of a stack, {X} replaced per test.
const std::string kStack = R"({"name": "toy", "description": "test",
  "versions": [
    {"version": "1", "since": "2021-01",
     "software": {"attention": "unfused", "tp_comm_overlap": false, "tp_async_backward": false,
                  "overlap_grad_reduce": false, "overlap_param_gather": false, "overlap_p2p_comm": false,
                  "main_grads": "param", "grad_accumulation_fusion": "off"},
     "defaults": {"recompute": "full", "precision": "fp16"}},
    {"version": "2", "since": "2022-06",
     "software": {"attention": "flash", "tp_comm_overlap": true, "tp_async_backward": true,
                  "overlap_grad_reduce": true, "overlap_param_gather": true, "overlap_p2p_comm": true,
                  "main_grads": "fp32_if_bf16", "grad_accumulation_fusion": "fp32_only"},
     "defaults": {}}]})";

std::string with(const std::string& from, const std::string& to) { return dtsim::test::replaced(kStack, from, to); }

}  // namespace

TEST_CASE("spec::parse_stack_family: versions, defaults and errors", "[spec]") {
  StackFamily f = parse_stack_family(kStack, "toy.json");
  REQUIRE(f.versions.size() == 2);
  CHECK(f.versions[0].label() == "toy@1");
  CHECK(f.versions[0].defaults.recompute == Recompute::full);
  CHECK(f.versions[0].software.grad_accumulation_fusion == GradAccumFusion::off);
  CHECK_FALSE(f.versions[1].defaults.recompute);
  CHECK_THROWS_WITH(parse_stack_family(with(R"("since": "2022-06")", R"("since": "2020-06")"), "toy.json"),
                    Equals("toy.json:/versions/1/since: expected versions oldest first (since >= 2021-01), got "
                           "\"2020-06\""));
  CHECK_THROWS_WITH(parse_stack_family(with(R"("since": "2021-01")", R"("since": "2021")"), "toy.json"),
                    Equals("toy.json:/versions/0/since: expected a month YYYY-MM, got \"2021\""));
  CHECK_THROWS_WITH(parse_stack_family(with(R"("version": "2")", R"("version": "1")"), "toy.json"),
                    Equals("toy.json:/versions/1/version: expected a new version, got \"1\" twice"));
  CHECK_THROWS_WITH(parse_stack_family(with(R"("main_grads": "param")", R"("main_grads": "fp16")"), "toy.json"),
                    StartsWith("toy.json:/versions/0/software/main_grads: expected one of fp32, param, fp32_if_bf16"));
  // Optional switches: absent means Megatron's fused kernels, no ZeRO-3 host costs.
  const Software& sw = f.versions[0].software;
  CHECK(sw.bias_activation_fusion);
  CHECK(sw.rmsnorm_fusion);
  CHECK_FALSE(sw.zero3_list_collectives);
  CHECK(sw.zero3_gather == Zero3Gather::layer);
  StackFamily eager = parse_stack_family(with(R"("grad_accumulation_fusion": "off"})",
                                              R"("grad_accumulation_fusion": "off", "rope_fusion": false,
                                                 "zero3_gather": "module", "zero3_list_collectives": true})"),
                                         "toy.json");
  CHECK_FALSE(eager.versions[0].software.rope_fusion);
  CHECK(eager.versions[0].software.zero3_gather == Zero3Gather::module);
  CHECK(eager.versions[0].software.zero3_list_collectives);
  // A per-rank list cost needs list-form collectives.
  CHECK_THROWS_WITH(parse_stack_family(with(R"("grad_accumulation_fusion": "off"})",
                                            R"("grad_accumulation_fusion": "off", "zero3_list_build_us": 2.6})"),
                                       "toy.json"),
                    Equals("toy.json:/versions/0/software/zero3_list_build_us: expected 0 unless zero3_list_collectives "
                           "is true (a per-rank list cost), got 2.6"));
  CHECK_THROWS_WITH(parse_stack_family(with(R"("grad_accumulation_fusion": "off"})",
                                            R"("grad_accumulation_fusion": "off", "rope_fusion": "no"})"),
                                       "toy.json"),
                    Equals("toy.json:/versions/0/software/rope_fusion: expected true or false, got \"no\""));
}

TEST_CASE("spec::software_on: a stack's recipes for one GPU", "[spec]") {
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  const std::string recipes = R"("defaults": {}, "gpu_recipes": [{"gpu": "gb200", "moe_dispatcher": "flex",
                                                                 "source": "test"}]}]})";
  StackFamily f = parse_stack_family(with(R"("defaults": {}}]})", recipes), "toy.json");
  const Stack& v2 = f.versions[1];
  REQUIRE(v2.gpu_recipes.size() == 1);
  CHECK(v2.gpu_recipes[0].gpu == "GB200");  // the GPU preset's own name
  CHECK(v2.software.moe_dispatcher == MoeDispatcher::alltoall);
  std::vector<std::string> notes;
  CHECK(software_on(v2, "GB200", true, &notes).moe_dispatcher == MoeDispatcher::flex);
  CHECK(notes == std::vector<std::string>{"moe dispatcher flex (toy@2 recipes on GB200)"});
  notes.clear();
  CHECK(software_on(v2, "GB200", false, &notes).moe_dispatcher == MoeDispatcher::flex);
  CHECK(notes.empty());  // a dense run has nothing to dispatch: nothing to say
  CHECK(software_on(v2, "B200", true, &notes).moe_dispatcher == MoeDispatcher::alltoall);
  CHECK(software_on(f.versions[0], "GB200", true).moe_dispatcher == MoeDispatcher::alltoall);
  CHECK_THROWS_WITH(parse_stack_family(with(R"("defaults": {}}]})", dtsim::test::replaced(recipes, "gb200", "gb900")),
                                       "toy.json"),
                    StartsWith("toy.json:/versions/1/gpu_recipes/0/gpu: "));
  CHECK_THROWS_WITH(
      parse_stack_family(with(R"("defaults": {}}]})", dtsim::test::replaced(recipes, "\"flex\"", "\"deepep\"")),
                         "toy.json"),
      StartsWith("toy.json:/versions/1/gpu_recipes/0/moe_dispatcher: expected one of alltoall, allgather, flex"));
  CHECK_THROWS_WITH(
      parse_stack_family(with(R"("defaults": {}}]})", dtsim::test::replaced(recipes, "\"source\"", "\"cuda\"")),
                         "toy.json"),
      StartsWith("toy.json:/versions/1/gpu_recipes/0/cuda: "));
  CHECK_THROWS_WITH(parse_stack_family(with(R"("defaults": {}}]})",
                                            R"("defaults": {}, "gpu_recipes": [{"gpu": "gb200", "moe_dispatcher": "flex"},
                                                                               {"gpu": "gb200", "moe_dispatcher": "alltoall"}]}]})"),
                                       "toy.json"),
                    Equals("toy.json:/versions/1/gpu_recipes/1/gpu: expected one entry per GPU, got GB200 again"));
  // The shipped Megatron-Bridge 25.11 dispatches MoE tokens with HybridEP on GB200 and GB300 only.
  Stack mb = load_stack("nemo-megatron-bridge@25.11");
  CHECK(software_on(mb, "GB300", true).moe_dispatcher == MoeDispatcher::flex);
  CHECK(software_on(mb, "B200", true).moe_dispatcher == MoeDispatcher::alltoall);
  // PyTorch's SDPA reaches its FlashAttention-2 port on Hopper (cuDNN is opt-in from 2.5.1 to 2.8),
  // and says so; on an A100 the profile's fused attention is FlashAttention-2 already.
  Stack fsdp = load_stack("pytorch-fsdp@fsdp2");
  notes.clear();
  CHECK(software_on(fsdp, "H100-SXM5-80GB", false, &notes).attention == AttentionKernel::flash2);
  CHECK(notes == std::vector<std::string>{"attention flash2 (pytorch-fsdp@fsdp2 recipes on H100-SXM5-80GB)"});
  CHECK(software_on(fsdp, "H100-SXM5-96GB-500W", false).attention == AttentionKernel::flash2);
  CHECK(software_on(fsdp, "A100-SXM4-80GB", false).attention == AttentionKernel::flash);
  CHECK(software_on(load_stack("megatron-core"), "H100-SXM5-80GB", false).attention == AttentionKernel::flash);
  CHECK_THROWS_WITH(
      parse_stack_family(with(R"("defaults": {}}]})", R"("defaults": {}, "gpu_recipes": [{"gpu": "h100-sxm5-80gb",
                                 "attention": "fa3", "source": "s"}]}]})"), "toy.json"),
      StartsWith("toy.json:/versions/1/gpu_recipes/0/attention: expected one of flash, unfused, flash2, flash_triton"));
}

TEST_CASE("spec::load_stack and find_stack: by name, version or date", "[spec]") {
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  CHECK(load_stack("megatron-lm").version == "2022");          // the latest
  CHECK(load_stack("megatron-lm@2021").version == "2021");     // a version as written
  CHECK(load_stack("megatron-lm@2021-11").version == "2021");  // the one out by then
  CHECK(load_stack("megatron-lm@2022-05").version == "2022");
  CHECK_THROWS_WITH(load_stack("megatron-lm@2019-01"),
                    StartsWith("--framework: expected a version of megatron-lm (2021, 2022) or a date YYYY[-MM]"));
  CHECK_THROWS_WITH(load_stack("colossalai"), StartsWith("--framework: expected a preset name ("));
  // A run's framework: its version when the file has it, else its date (a year alone is its middle;
  // a date before every profile takes the oldest).
  CHECK(find_stack("megatron-lm", std::nullopt, std::string("2021-04"), "w").version == "2021");
  CHECK(find_stack("megatron-lm", std::nullopt, std::string("2022"), "w").version == "2022");
  CHECK(find_stack("deepspeed", std::nullopt, std::string("2021"), "w").version == "0.3");
  CHECK(find_stack("deepspeed", std::nullopt, std::string("2021-08"), "w").version == "0.4");
  CHECK(find_stack("nemo", std::nullopt, std::string("2024"), "w").version == "24.07");
  CHECK(find_stack("megatron-lm", std::nullopt, std::string("2019-05"), "w").version == "2021");
  CHECK(find_stack("nemo", std::string("24.07"), std::string("2024-11"), "w").version == "24.07");
  CHECK(find_stack("nemo", std::nullopt, std::nullopt, "w").version == "24.11");
  CHECK_THROWS_WITH(find_stack("colossalai", std::nullopt, std::nullopt, "v.json:/cases/0/framework/name"),
                    StartsWith("v.json:/cases/0/framework/name: expected a framework with a stack profile ("));
  CHECK(kDefaultFramework == std::string("megatron-core"));
  CHECK(load_stack(kDefaultFramework).name == "megatron-core");
}

TEST_CASE("spec: a stack's aliases name the same software", "[spec]") {
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  StackFamily f = parse_stack_family(with(R"("description": "test",)", R"("description": "test", "aliases": ["tt", "toy2"],)"),
                                     "toy.json");
  CHECK(f.aliases == std::vector<std::string>{"tt", "toy2"});
  CHECK(parse_stack_family(kStack, "toy.json").aliases.empty());
  CHECK_THROWS_WITH(parse_stack_family(with(R"("description": "test",)", R"("description": "test", "aliases": ["tt", 3],)"),
                                       "toy.json"),
                    Equals("toy.json:/aliases/1: expected a framework name (a non-empty string), got 3"));
  // torchtitan is PyTorch's FSDP2 trainer: its runs take the pytorch-fsdp stack of their date.
  CHECK(stack_file_for("torchtitan") == std::optional<std::string>("pytorch-fsdp"));
  CHECK(stack_file_for("megatron-lm") == std::optional<std::string>("megatron-lm"));
  CHECK(load_stack("torchtitan").name == "pytorch-fsdp");
  CHECK(load_stack("mcore@2025-06").name == "megatron-core");
  CHECK(!stack_file_for("colossalai"));
  // Sources spell a framework many ways: case, '_' or ' ' for '-', a repository owner.
  CHECK(stack_file_for("Megatron-LM") == std::optional<std::string>("megatron-lm"));
  CHECK(stack_file_for("NVIDIA/Megatron-LM") == std::optional<std::string>("megatron-lm"));
  CHECK(stack_file_for("Megatron_DeepSpeed") == std::optional<std::string>("megatron-deepspeed"));
  CHECK(stack_file_for("NeMo Megatron-Bridge") == std::optional<std::string>("nemo-megatron-bridge"));
  CHECK(stack_file_for("TorchTitan") == std::optional<std::string>("pytorch-fsdp"));
  CHECK(load_stack("DeepSpeed@0.4").name == "deepspeed");
  // No alias is a stack's own name or another stack's alias.
  std::vector<std::string> names = stack_names(), seen;
  for (const std::string& name : names) {
    std::string text = dtsim::test::read_text(dtsim::test::source_path("calibration/stacks/" + name + ".json"));
    for (const std::string& a : parse_stack_family(text, name + ".json").aliases) {
      INFO(a);
      CHECK(std::find(names.begin(), names.end(), a) == names.end());
      CHECK(std::find(seen.begin(), seen.end(), a) == seen.end());
      seen.push_back(a);
    }
  }
  CHECK(seen.size() >= 10);
}

TEST_CASE("spec::main_grad_dtype and fused_grad_accumulation: the stacks' rules", "[spec]") {
  Software s;
  s.main_grads = MainGrads::fp32_if_bf16;  // Megatron-LM since 2022 (arguments.py)
  CHECK(main_grad_dtype(s, Dtype::bf16) == Dtype::fp32);
  CHECK(main_grad_dtype(s, Dtype::fp16) == Dtype::fp16);
  CHECK(main_grad_dtype(s, Dtype::fp8) == Dtype::fp32);  // fp8 recipes keep bf16 weights
  s.grad_accumulation_fusion = GradAccumFusion::fp32_only;  // "supported only with fp32 gradient accumulation"
  CHECK(fused_grad_accumulation(s, Dtype::bf16));
  CHECK_FALSE(fused_grad_accumulation(s, Dtype::fp16));
  s.main_grads = MainGrads::param;
  CHECK(main_grad_dtype(s, Dtype::bf16) == Dtype::bf16);
  s.grad_accumulation_fusion = GradAccumFusion::on;
  CHECK(fused_grad_accumulation(s, Dtype::bf16));
  s.grad_accumulation_fusion = GradAccumFusion::off;
  CHECK_FALSE(fused_grad_accumulation(s, Dtype::bf16));
}

TEST_CASE("spec: every shipped stack loads, and names its sources", "[spec]") {
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  for (const std::string& name : stack_names()) {
    INFO(name);
    std::string text = dtsim::test::read_text(dtsim::test::source_path("calibration/stacks/" + name + ".json"));
    StackFamily f = parse_stack_family(text, name + ".json");
    CHECK(f.name == name);
    CHECK_THAT(text, Contains("\"sources\""));
  }
  CHECK(stack_names().size() >= 4);
}

TEST_CASE("spec::current_scaling_bf16_layers: a recipe's bf16 edge layers apply to fp8 current scaling only", "[spec]") {
  StackFamily f = parse_stack_family(with(R"("defaults": {"recompute": "full", "precision": "fp16"})",
                                          R"("defaults": {"recompute": "full", "precision": "fp16",
                                                          "current_scaling_bf16_layers": 1})"),
                                     "toy.json");
  const StackDefaults& d = f.versions[0].defaults;
  CHECK(current_scaling_bf16_layers(d, Dtype::fp8, Fp8Recipe::current) == 1);
  CHECK(current_scaling_bf16_layers(d, Dtype::fp8, Fp8Recipe::mxfp8) == 0);
  CHECK(current_scaling_bf16_layers(d, Dtype::fp8, Fp8Recipe::delayed) == 0);
  CHECK(current_scaling_bf16_layers(d, Dtype::bf16, Fp8Recipe::current) == 0);
  CHECK(current_scaling_bf16_layers(f.versions[1].defaults, Dtype::fp8, Fp8Recipe::current) == 0);  // not stated
  // The shipped Megatron-Bridge stack runs its tables' FP8-CS with every layer in fp8.
  Stack mb = load_stack("nemo-megatron-bridge@25.11");
  CHECK(current_scaling_bf16_layers(mb.defaults, Dtype::fp8, Fp8Recipe::current) == 0);
}

TEST_CASE("spec::apply_compile: torchtitan compiles its loss from April 2025", "[spec]") {
  namespace spec = dtsim::spec;
  // pytorch/torchtitan PR #755 (2024-12-19) turned compiling the loss off; PR #1033 (2025-04-01)
  // compiles it whenever training.compile is set.
  spec::Software before = spec::load_stack("pytorch-fsdp@2025-03").software;
  spec::Software after = spec::load_stack("pytorch-fsdp@2025-06").software;
  CHECK_FALSE(before.compile_loss);
  CHECK(after.compile_loss);
  for (spec::Software* s : {&before, &after}) {
    CHECK(s->cross_entropy == spec::CrossEntropy::torch);
    spec::apply_compile(*s);
    CHECK(s->rmsnorm_fusion);
  }
  CHECK(before.cross_entropy == spec::CrossEntropy::torch);
  CHECK(after.cross_entropy == spec::CrossEntropy::compiled);
  // A stack whose loss is not torch's keeps it.
  spec::Software mcore = spec::load_stack("megatron-core").software;
  mcore.compile_loss = true;
  spec::apply_compile(mcore);
  CHECK(mcore.cross_entropy == spec::CrossEntropy::unfused);
}
