// Fine-tuning: LoRA over frozen base weights and packed samples.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include "core/errors.h"
#include "cost/compute.h"
#include "cost/layer_shape.h"
#include "cost/memory.h"
#include "cost/model_stats.h"
#include "engine/analytical.h"
#include "engine/simulate.h"
#include "helpers.h"
#include "spec/load.h"
#include "spec/stack.h"

using namespace dtsim;
using Catch::Matchers::WithinRel;

namespace {

bool has(const std::vector<cost::Op>& ops, const std::string& name) {
  return std::any_of(ops.begin(), ops.end(), [&](const cost::Op& op) { return op.name == name; });
}

double total_flops(const std::vector<cost::Op>& ops) {
  double f = 0;
  for (const cost::Op& op : ops) f += op.flops.value();
  return f;
}

double flops_of(const std::vector<cost::Op>& ops, const std::string& name) {
  for (const cost::Op& op : ops)
    if (op.name == name) return op.flops.value();
  return 0;
}

spec::Training lora(std::uint32_t targets, std::int64_t rank = 32) {
  spec::Training t{.micro_batch = 1, .global_batch = 32, .seq_len = 4096, .precision = spec::Dtype::bf16};
  t.peft = spec::Peft::lora;
  t.lora_rank = rank;
  t.lora_targets = targets;
  return t;
}

struct Llama7b {
  spec::Model model = spec::load_model(test::source_path("models/llama2-7b.json"));
  spec::Cluster cluster = spec::load_cluster(test::source_path("topologies/dgx-h100.json"));
  spec::Calibration cal = spec::load_calibration(test::source_path("calibration/dgx-h100.json"));
  spec::Software sw = spec::load_stack("nemo@24.07").software;
  spec::Parallel par{.tp = 1, .pp = 1, .dp = 8, .zero_stage = 1};
  [[nodiscard]] engine::StepResult run(spec::Training t) const {
    t.grad_dtype = spec::main_grad_dtype(sw, t.precision);
    schedule::StepSpec s{&model, &cluster, par, t, &cal, sw};
    engine::AnalyticalNetwork net(cluster, par, cal.collectives);
    return engine::simulate_step(s, net).result;
  }
};

}  // namespace

TEST_CASE("spec::parse_lora_targets: Megatron-Core module names, round trip and clear errors", "[spec]") {
  namespace lt = spec::lora_target;
  CHECK(spec::parse_lora_targets("linear_qkv", "x") == lt::linear_qkv);
  std::uint32_t all = spec::parse_lora_targets("linear_qkv,linear_proj,linear_fc1,linear_fc2", "x");
  CHECK(all == (lt::linear_qkv | lt::linear_proj | lt::linear_fc1 | lt::linear_fc2));
  CHECK(spec::lora_targets_text(all) == "linear_qkv,linear_proj,linear_fc1,linear_fc2");
  CHECK_THROWS_WITH(spec::parse_lora_targets("attention_qkv", "--lora-targets"),
                    Catch::Matchers::Contains("--lora-targets") &&
                        Catch::Matchers::Contains("expected distinct targets among linear_qkv") &&
                        Catch::Matchers::Contains("got \"attention_qkv\""));
  CHECK_THROWS_AS(spec::parse_lora_targets("linear_qkv,linear_qkv", "x"), SpecError);
}

TEST_CASE("cost::flash: packed samples attend within themselves", "[cost]") {
  // Causal attention over seq/l samples of l tokens: seq*l/2 query-key pairs against seq^2/2.
  spec::Model m = spec::load_model(test::source_path("models/llama2-7b.json"));
  spec::Parallel par;
  spec::Training whole{.micro_batch = 1, .global_batch = 8, .seq_len = 4096};
  spec::Training packed = whole;
  packed.sample_len = 128;
  cost::LayerShape a = cost::layer_shape(m, par, whole), b = cost::layer_shape(m, par, packed);
  CHECK(a.attention_span() == 4096);
  CHECK(b.attention_span() == 128);
  auto fa = cost::layer_forward(a, spec::AttentionKernel::flash, spec::Dtype::bf16, {}, {});
  auto fb = cost::layer_forward(b, spec::AttentionKernel::flash, spec::Dtype::bf16, {}, {});
  CHECK_THAT(flops_of(fb, "attn.core"), WithinRel(flops_of(fa, "attn.core") * 128.0 / 4096.0, 1e-12));
  // The GEMMs still run on every position of the pack.
  CHECK(flops_of(fb, "attn.qkv") == flops_of(fa, "attn.qkv"));
  // Megatron-LM's unfused attention packs with a mask over the whole sequence: no saving.
  auto ua = cost::layer_forward(a, spec::AttentionKernel::unfused, spec::Dtype::bf16, {}, {});
  auto ub = cost::layer_forward(b, spec::AttentionKernel::unfused, spec::Dtype::bf16, {}, {});
  CHECK(total_flops(ua) == total_flops(ub));
}

TEST_CASE("cost::layer_shape: a windowed layer of packed samples attends within window and sample", "[cost]") {
  spec::Model m = spec::load_model(test::source_path("models/gpt-oss-120b.json"));  // window 128, every other layer
  REQUIRE(m.sliding_window == 128);
  spec::Parallel par;
  spec::Training t{.micro_batch = 1, .global_batch = 8, .seq_len = 4096};
  t.sample_len = 1024;
  cost::LayerShape s = cost::layer_shape(m, par, t);
  // Pairs of the windowed layer over the sequence: 4 samples x (128 x (1024 - 128) + 128^2 / 2).
  double pairs = 4.0 * (128.0 * (1024 - 128) + 128.0 * 128.0 / 2);
  CHECK_THAT(s.window_share, WithinRel(pairs / (4096.0 * 4096.0 / 2), 1e-12));
  t.sample_len = 64;  // samples shorter than the window: plain causal attention within each
  s = cost::layer_shape(m, par, t);
  CHECK_THAT(s.window_share, WithinRel(64.0 / 4096.0, 1e-12));
}

TEST_CASE("cost::layer_backward: frozen base weights take no weight gradients; adapters do", "[cost]") {
  namespace lt = spec::lora_target;
  spec::Model m = spec::load_model(test::source_path("models/llama2-7b.json"));
  spec::Parallel par{.tp = 2};
  spec::Training full{.micro_batch = 1, .global_batch = 8, .seq_len = 4096};
  cost::LayerShape base = cost::layer_shape(m, par, full);
  cost::LayerShape frozen = cost::layer_shape(m, par, lora(lt::linear_qkv));
  REQUIRE(frozen.frozen);
  auto bf = cost::layer_backward(base, spec::AttentionKernel::flash, spec::Dtype::bf16, {}, std::nullopt, {});
  auto bl = cost::layer_backward(frozen, spec::AttentionKernel::flash, spec::Dtype::bf16, {}, std::nullopt, {});
  CHECK(has(bf, "attn.qkv.wgrad"));
  CHECK_FALSE(has(bl, "attn.qkv.wgrad"));
  CHECK_FALSE(has(bl, "mlp.fc2.wgrad"));
  CHECK(has(bl, "mlp.fc2.dgrad"));
  // The adapter's two GEMMs: data and weight gradients of both, and the input gradients' sum.
  for (const char* n : {"lora.qkv.a.dgrad", "lora.qkv.a.wgrad", "lora.qkv.b.dgrad", "lora.qkv.b.wgrad", "lora.qkv.add.bwd"})
    CHECK(has(bl, n));
  CHECK_FALSE(has(bl, "lora.fc1.a.wgrad"));
  // Forward: Y = X W + (X A) B on the column-parallel QKV: A reads the whole hidden state (4096 ->
  // 32), B writes this rank's QKV shard (32 -> 3 x 4096 / 2).
  auto fl = cost::layer_forward(frozen, spec::AttentionKernel::flash, spec::Dtype::bf16, {}, {});
  CHECK(flops_of(fl, "lora.qkv.a") == 2.0 * 4096 * 32 * 4096);
  CHECK(flops_of(fl, "lora.qkv.b") == 2.0 * 4096 * (3 * 4096 / 2) * 32);
  // Adapter parameters on this rank: 32 x (4096 + 6144).
  CHECK(cost::local_lora_params(m, par, lora(lt::linear_qkv)).dense == 32.0 * (4096 + 6144));
  // Without adapters there are no lora ops at all.
  CHECK(cost::lora_ops(base, false).empty());
}

TEST_CASE("cost::estimate_memory: LoRA keeps the base weights but no gradients or optimizer states for them", "[cost]") {
  namespace lt = spec::lora_target;
  spec::Model m = spec::load_model(test::source_path("models/llama2-13b.json"));
  spec::Cluster c = spec::load_cluster(test::source_path("topologies/dgx-h100.json"));
  spec::Parallel par{.tp = 1, .pp = 1, .dp = 8, .zero_stage = 0};
  spec::Training full{.micro_batch = 1, .global_batch = 32, .seq_len = 4096, .precision = spec::Dtype::bf16,
                      .grad_dtype = spec::Dtype::fp32};
  spec::Training t = lora(lt::linear_qkv);
  t.grad_dtype = spec::Dtype::fp32;
  auto a = cost::estimate_memory(m, c, par, full, spec::Software{}).peak();
  auto b = cost::estimate_memory(m, c, par, t, spec::Software{}).peak();
  double adapters = cost::local_lora_params(m, par, t).total() * static_cast<double>(m.layers);
  CHECK_THAT(b.weights.value(), WithinRel(a.weights.value() + 2.0 * adapters, 1e-12));
  CHECK_THAT(b.gradients.value(), WithinRel(4.0 * adapters, 1e-12));   // fp32 main grads of the adapters
  CHECK_THAT(b.optimizer.value(), WithinRel(12.0 * adapters, 1e-12));  // Adam: master, m, v
  // A frozen linear keeps no input for a weight gradient (Transformer Engine saves it only when
  // the weight requires grad): FC1's (2h bytes per token) and FC2's (2 x 13,824) inputs go; the
  // adapted QKV's input stays, kept by its adapter. 40 layers, one micro-batch of 4,096 tokens.
  CHECK_THAT(a.activations.value() - b.activations.value(), WithinRel(4096.0 * (2 * 5120 + 2 * 13824) * 40, 1e-12));
  // 13B in bf16 with full states does not fit 80 GB at dp 8 without ZeRO; with LoRA it does.
  CHECK_FALSE(cost::estimate_memory(m, c, par, full, spec::Software{}).fits());
  CHECK(cost::estimate_memory(m, c, par, t, spec::Software{}).fits());
}

TEST_CASE("engine::simulate_step: LoRA drops the weight gradients and the data-parallel reduction", "[engine]") {
  namespace lt = spec::lora_target;
  Llama7b j;
  spec::Training full{.micro_batch = 1, .global_batch = 32, .seq_len = 4096, .precision = spec::Dtype::bf16};
  engine::StepResult f = j.run(full);
  engine::StepResult l = j.run(lora(lt::linear_qkv));
  auto at = [](const engine::StepResult& r, schedule::Category c) { return r.breakdown[static_cast<std::size_t>(c)]; };
  // Forward + data gradients is 2/3 of forward + data + weight gradients in GEMM FLOPs; attention
  // and element-wise kernels keep their full backward, so the step lands between 2/3 and 1.
  double ratio = l.step_time.value() / f.step_time.value();
  CHECK(ratio > 0.6);
  CHECK(ratio < 0.8);
  CHECK(at(l, schedule::Category::optimizer).value() < at(f, schedule::Category::optimizer).value() / 100);
  CHECK(at(l, schedule::Category::dp_comm_exposed).value() <= at(f, schedule::Category::dp_comm_exposed).value());
  // Model FLOPs: forward and data gradients only (2 x forward against 3 x).
  CHECK_THAT(l.model_tflops_per_gpu * l.step_time.value(), WithinRel(f.model_tflops_per_gpu * f.step_time.value() * 2 / 3, 1e-9));
  // Packed samples of 128 tokens make the step shorter still (attention over 128, not 4096).
  spec::Training packed = lora(lt::linear_qkv);
  packed.sample_len = 128;
  CHECK(j.run(packed).step_time.value() < l.step_time.value());
}
