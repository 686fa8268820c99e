#include <catch2/catch.hpp>

#include "cost/memory.h"
#include "cost/partition.h"
#include "spec/load.h"

using namespace dtsim;
using Catch::Matchers::WithinRel;

TEST_CASE("cost::model_state_bytes: ZeRO paper Figure 1", "[cost]") {
  // Rajbhandari et al. SC'20 Figure 1: Psi = 7.5B, N_d = 64, K = 12, fp16 params and grads.
  // Baseline (2+2+12)*7.5B = 120 GB; P_os 4*7.5 + 12*7.5/64 = 31.40625; P_os+g 2*7.5 + 14*7.5/64 =
  // 16.640625; P_os+g+p 16*7.5/64 = 1.875 (the figure prints 120, 31.4, 16.6, 1.9).
  cost::StateBytes zero{.weights = 2, .gradients = 2, .optimizer = 12};
  const double expected[] = {120e9, 31.40625e9, 16.640625e9, 1.875e9};
  const double printed[] = {120e9, 31.4e9, 16.6e9, 1.9e9};
  for (int stage = 0; stage < 4; ++stage) {
    double got = cost::model_state_bytes(7.5e9, stage, 64, zero).value();
    CHECK_THAT(got, WithinRel(expected[stage], 1e-12));
    CHECK(std::abs(got - printed[stage]) <= 0.05e9);  // equals the figure to its printed digits
  }
}

TEST_CASE("cost::model_state_bytes: ZeRO Figure 1 from a 7.5B preset's own parameter count", "[cost]") {
  // sc21-7.5b counts 7.468B parameters (dtsim show model sc21-7.5b); each stage's model states
  // must be within 1% of (2+2+12)*Psi scaled as in Figure 1 for Psi = 7.5B.
  spec::Model m = spec::load_model(std::string(DTSIM_SOURCE_DIR) + "/models/sc21-7.5b.json");
  spec::Parallel par{.tp = 1, .pp = 1, .dp = 64};
  spec::Training t{.micro_batch = 1, .global_batch = 64, .seq_len = 2048, .precision = spec::Dtype::fp16,
                   .grad_dtype = spec::Dtype::fp16};
  spec::Cluster c = spec::load_cluster(std::string(DTSIM_SOURCE_DIR) + "/topologies/dgx-a100.json");
  const double fig1[] = {120e9, 31.40625e9, 16.640625e9, 1.875e9};
  for (int stage = 0; stage < 4; ++stage) {
    par.zero_stage = stage;
    auto est = cost::estimate_memory(m, c, par, t, spec::Software{});
    const auto& s = est.peak();
    double states = (s.weights + s.gradients + s.optimizer).value();
    CHECK_THAT(states, WithinRel(fig1[stage], 0.01));
  }
}

TEST_CASE("cost::state_bytes: Megatron-LM's 18 bytes per parameter", "[cost]") {
  // Megatron-LM dist_optimizer.md: fp16/bf16 params + fp32 grads = 2 + 4 + 12 = 18 bytes.
  auto b = cost::state_bytes(spec::Training{}, 1);
  CHECK(b.weights + b.gradients + b.optimizer == 18.0);
  CHECK(cost::model_state_bytes(1e9, 0, 8, b).value() == 18e9);
}

TEST_CASE("cost::state_bytes: fp32 remainders instead of master weights (apex DistributedFusedAdam)", "[cost]") {
  // NeMo 1.x's store_param_remainders: m, v and the low 16 bits of the fp32 master beside the bf16
  // weights, 10 bytes of optimizer state per parameter; only with the distributed optimizer.
  spec::Training t;
  t.precision = spec::Dtype::bf16;
  spec::Software nemo;
  nemo.param_remainders = true;
  t.param_remainders = spec::param_remainders(nemo, t);
  REQUIRE(t.param_remainders);
  CHECK(cost::state_bytes(t, 1).optimizer == 10.0);
  CHECK(cost::state_bytes(t, 0).optimizer == 12.0);
  // fp16 models and fp8 parameters keep fp32 masters; so does a stack that does not store remainders.
  spec::Training fp16 = t, fp8p = t;
  fp16.precision = spec::Dtype::fp16;
  fp8p.precision = spec::Dtype::fp8;
  fp8p.fp8_params = true;
  CHECK_FALSE(spec::param_remainders(nemo, fp16));
  CHECK_FALSE(spec::param_remainders(nemo, fp8p));
  CHECK_FALSE(spec::param_remainders(spec::Software{}, t));
}

namespace {

struct Fig1Case {
  const char* model;
  std::int64_t tp, pp, vp, mbs, gbs;
  double none_gib, seqsel_gib;  // ../shared/validation/memory_cases.json (Korthikanti Fig. 1)
};

double stage0_layer_activations_gib(const spec::Model& m, const spec::Parallel& par, const spec::Training& t) {
  auto layers = cost::stage_layers(m, par);
  double inflight = cost::inflight_microbatches(par, t.global_batch / (t.micro_batch * par.dp), 0);
  double b = cost::layer_activation_bytes(m, par, t, spec::AttentionKernel::unfused).value();
  return b * static_cast<double>(layers[0]) * inflight / 1073741824.0;
}

}  // namespace

TEST_CASE("cost::layer_activation_bytes: Korthikanti et al. Figure 1 within 3%", "[cost]") {
  // Per-layer sbh(10 + 24/t + 5as/(ht)) (TP only) and 34sbh/t (SP + selective), times the first
  // stage's in-flight micro-batches; e.g. 22B: s=2048, b=4, h=6144, a=64, t=8, L=48:
  // 50,331,648 * 26.333 * 48 = 63,619,203,072 B = 59.25 GiB.
  const Fig1Case cases[] = {{"korthikanti-22b", 8, 1, 1, 4, 4, 59.25, 9.5625},
                            {"gpt3-175b", 8, 8, 3, 1, 64, 66.84375, 12.3515625},
                            {"mt-nlg-530b", 8, 35, 3, 1, 280, 114.0234375, 23.076171875},
                            {"sc21-1t", 8, 64, 1, 1, 512, 131.25, 26.5625}};
  for (const Fig1Case& c : cases) {
    spec::Model m = spec::load_model(std::string(DTSIM_SOURCE_DIR) + "/models/" + c.model + ".json");
    spec::Parallel par{.tp = c.tp, .pp = c.pp, .dp = 1, .vp = c.vp};
    spec::Training t{.micro_batch = c.mbs, .global_batch = c.gbs, .seq_len = 2048, .recompute = spec::Recompute::none};
    INFO(c.model);
    CHECK_THAT(stage0_layer_activations_gib(m, par, t), WithinRel(c.none_gib, 0.03));
    par.sequence_parallel = true;
    t.recompute = spec::Recompute::selective;
    CHECK_THAT(stage0_layer_activations_gib(m, par, t), WithinRel(c.seqsel_gib, 0.03));
  }
}

TEST_CASE("cost::layer_activation_bytes: recompute never costs more memory", "[cost]") {
  spec::Model m = spec::load_model(std::string(DTSIM_SOURCE_DIR) + "/models/gpt3-175b.json");
  spec::Parallel par{.tp = 8, .pp = 8, .dp = 1, .sequence_parallel = true};
  spec::Training t{.micro_batch = 1, .global_batch = 64, .seq_len = 2048};
  double none = cost::layer_activation_bytes(m, par, t, spec::AttentionKernel::unfused).value();
  t.recompute = spec::Recompute::selective;
  double sel = cost::layer_activation_bytes(m, par, t, spec::AttentionKernel::unfused).value();
  t.recompute = spec::Recompute::full;
  double full = cost::layer_activation_bytes(m, par, t, spec::AttentionKernel::unfused).value();
  CHECK(none > sel);
  CHECK(sel > full);
  // Full recompute keeps the layer input: 2sbh/t = 2*2048*12288/8 bytes.
  CHECK(full == 2.0 * 2048 * 12288 / 8);
}

TEST_CASE("cost::layer_activation_bytes: selective recompute modules drop what they recompute", "[cost]") {
  namespace rm = spec::recompute_module;
  spec::Model oss = spec::load_model(std::string(DTSIM_SOURCE_DIR) + "/models/gpt-oss-120b.json");
  spec::Parallel par{.tp = 1, .pp = 1, .dp = 8, .cp = 1, .ep = 8};
  spec::Training t{.micro_batch = 1, .global_batch = 64, .seq_len = 4096};
  auto bytes_with = [&](std::uint32_t modules) {
    spec::Training s = t;
    s.recompute = modules ? spec::Recompute::selective : spec::Recompute::none;
    s.recompute_modules = modules;
    return cost::layer_activation_bytes(oss, par, s, spec::AttentionKernel::flash).value();
  };
  double none = bytes_with(0), tokens = 4096, routed = tokens * 4;
  // moe_act: the activation's output (2 B x 2880 per routed copy) and the clamped copy of the FC1
  // output (2 B x 5760) are not kept.
  CHECK_THAT(none - bytes_with(rm::moe_act), WithinRel(routed * (2 * 2880 + 2 * 5760), 1e-9));
  // layernorm: the norm before the experts drops its output (2 B x 2880 per token).
  CHECK_THAT(none - bytes_with(rm::layernorm), WithinRel(tokens * 2 * 2880, 1e-9));
  // moe: nothing of the experts is kept; more modules never keep more.
  CHECK(bytes_with(rm::moe) < bytes_with(rm::moe_act));
  CHECK(bytes_with(rm::layernorm | rm::moe_act) < bytes_with(rm::moe_act));
  // With flash attention core_attn saves nothing (the kernel keeps no scores).
  CHECK(bytes_with(rm::core_attn) == none);
}

TEST_CASE("cost::stage_layers: uneven pipelines as Llama 3 trained them", "[cost]") {
  // 126 layers on 16 stages: ceil = 8, shortfall 2 taken from the first and last stage (7 ... 7).
  spec::Model m{.layers = 126};
  spec::Parallel par{.pp = 16};
  auto l = cost::stage_layers(m, par);
  CHECK(l.front() == 7);
  CHECK(l.back() == 7);
  CHECK(l[1] == 8);
  CHECK(cost::uneven_split(l));
  // 1F1B keeps p - stage micro-batches in flight, never more than m.
  spec::Parallel p4{.pp = 4};
  CHECK(cost::inflight_microbatches(p4, 8, 0) == 4);
  CHECK(cost::inflight_microbatches(p4, 8, 3) == 1);
  CHECK(cost::inflight_microbatches(p4, 2, 0) == 2);
}

TEST_CASE("cost::layer_activation_bytes: dropout masks are kept only with dropout", "[cost]") {
  // GPT-3 175B at TP 8 with SP, mbs 1, s 2048: hidden dropout keeps two 1-byte masks per token and
  // hidden element (2sbh/t); unfused attention dropout keeps its mask and output (3as^2b/t) beside
  // the softmax output (2as^2b/t). Without dropout neither is kept.
  spec::Model m = spec::load_model(std::string(DTSIM_SOURCE_DIR) + "/models/gpt3-175b.json");
  REQUIRE(m.hidden_dropout == 0.1);
  REQUIRE(m.attention_dropout == 0.1);
  spec::Parallel par{.tp = 8, .pp = 1, .dp = 1, .sequence_parallel = true};
  spec::Training t{.micro_batch = 1, .global_batch = 1, .seq_len = 2048, .recompute = spec::Recompute::none};
  auto bytes = [&](const spec::Model& x, spec::AttentionKernel k) {
    return cost::layer_activation_bytes(x, par, t, k).value();
  };
  spec::Model plain = m;
  plain.hidden_dropout = 0;
  double sbh = 2048.0 * 12288;
  CHECK(bytes(m, spec::AttentionKernel::flash) - bytes(plain, spec::AttentionKernel::flash) == 2 * sbh / 8);
  plain.attention_dropout = 0;
  double scores = 96.0 / 8 * 2048 * 2048;  // a/t heads of s x s
  CHECK(bytes(m, spec::AttentionKernel::unfused) - bytes(plain, spec::AttentionKernel::unfused) ==
        2 * sbh / 8 + 3 * scores);
  // Flash attention regenerates its dropout mask: attention dropout alone changes nothing.
  spec::Model attn_only = m;
  attn_only.hidden_dropout = 0;
  CHECK(bytes(attn_only, spec::AttentionKernel::flash) == bytes(plain, spec::AttentionKernel::flash));
}

TEST_CASE("cost::layer_activation_bytes: torchtitan's per-op policy keeps what it saves", "[cost]") {
  // torchtitan's op SAC (parallelize_llama.py @0596be3a): the block's input, wq's and wv's outputs
  // (mm 1 and 3), SDPA's output and fp32 log-sum-exp, w1's and w2's outputs (mm 5 and 7); wk, wo
  // and w3 (mm 2, 4, 6) and every element-wise op are recomputed. Llama 3 8B, one 8192-token
  // sequence: 2 x (4096 + 4096 + 1024 + 4096 + 14336 + 4096) + 4 x 32 bytes per token.
  spec::Model m = spec::load_model(std::string(DTSIM_SOURCE_DIR) + "/models/llama3-8b.json");
  spec::Parallel par{.tp = 1, .pp = 1, .dp = 8};
  spec::Training t{.micro_batch = 1, .global_batch = 8, .seq_len = 8192, .recompute = spec::Recompute::selective,
                   .recompute_modules = spec::recompute_module::op_sac};
  double sac = cost::layer_activation_bytes(m, par, t, spec::AttentionKernel::flash).value();
  CHECK(sac == 8192.0 * (2 * (4096 + 4096 + 1024 + 4096 + 14336 + 4096) + 4 * 32));
  spec::Training none = t;
  none.recompute = spec::Recompute::none;
  CHECK(sac < 0.5 * cost::layer_activation_bytes(m, par, none, spec::AttentionKernel::flash).value());
  // With sequence-parallel TP: the input and the two reduce-scatter outputs are split over the TP
  // ranks, the matmul outputs over the heads and the FFN, but w2's output is the whole hidden width
  // (the partial sum its reduce-scatter takes).
  spec::Parallel tp8{.tp = 8, .pp = 1, .dp = 1, .sequence_parallel = true};
  double sharded = cost::layer_activation_bytes(m, tp8, t, spec::AttentionKernel::flash).value();
  CHECK(sharded == 8192.0 * (2 * 3 * 4096 / 8.0 + 2 * (4096 + 1024 + 4096 + 14336) / 8.0 + 4 * 4 + 2 * 4096));
}

TEST_CASE("cost::estimate_memory: PyTorch FSDP keeps fp32 parameters and no 16-bit copy", "[cost]") {
  spec::Model m = spec::load_model(std::string(DTSIM_SOURCE_DIR) + "/models/llama3-8b.json");
  spec::Cluster c = spec::load_cluster(std::string(DTSIM_SOURCE_DIR) + "/topologies/dgx-h100.json");
  spec::Training t{.micro_batch = 1, .global_batch = 8, .seq_len = 8192};
  spec::Software fsdp;
  fsdp.fsdp_fp32_params = true;
  auto states = [&](const spec::Parallel& par, const spec::Software& sw) {
    cost::StageMemory s = cost::estimate_memory(m, c, par, t, sw).peak();
    return (s.weights + s.gradients + s.optimizer).value() / s.parameters;
  };
  // FULL_SHARD over 8 GPUs: fp32 parameters 4 + fp32 gradients 4 + Adam's m and v 8, sharded; a
  // Megatron-style ZeRO-3 adds a 16-bit copy beside an fp32 master (2 + 4 + 12).
  spec::Parallel z3{.tp = 1, .pp = 1, .dp = 8, .zero_stage = 3};
  CHECK_THAT(states(z3, fsdp), WithinRel(16.0 / 8, 1e-12));
  CHECK_THAT(states(z3, spec::Software{}), WithinRel(18.0 / 8, 1e-12));
  // SHARD_GRAD_OP shards the fp32 parameters as well and keeps the gathered bf16 ones.
  spec::Parallel z2 = z3;
  z2.zero_stage = 2;
  CHECK_THAT(states(z2, fsdp), WithinRel(16.0 / 8 + 2, 1e-12));
  // A pipeline stage that stays gathered (torchtitan under PP) also holds its bf16 weights and its
  // unsharded fp32 gradients.
  spec::Parallel pp{.tp = 1, .pp = 4, .dp = 2, .zero_stage = 3};
  spec::Software titan = fsdp;
  titan.zero3_pp_gathered = true;
  CHECK_THAT(states(pp, titan) - states(pp, fsdp), WithinRel(2.0 + 4.0, 1e-12));
  // torch's cross-entropy over fp32 logits holds 12 B per logit at its peak, the others 6.
  CHECK(cost::cross_entropy_peak_bytes(spec::CrossEntropy::torch) == 12.0);
  CHECK(cost::cross_entropy_peak_bytes(spec::CrossEntropy::te) == 6.0);
}

TEST_CASE("cost::layer_activation_bytes: PyTorch's TP keeps the gathered input whole", "[cost]") {
  // torchtitan's plan gathers the sequence-parallel norm output once before the attention and once
  // before the MLP; the matmuls keep it for their weight gradients: 2 x 2h bytes per token of the
  // whole sequence on every TP rank, where Megatron keeps the 1/tp shard.
  spec::Model m = spec::load_model(std::string(DTSIM_SOURCE_DIR) + "/models/llama3-8b.json");
  spec::Parallel tp8{.tp = 8, .pp = 1, .dp = 1, .sequence_parallel = true};
  spec::Training t{.micro_batch = 1, .global_batch = 8, .seq_len = 8192};
  double megatron = cost::layer_activation_bytes(m, tp8, t, spec::AttentionKernel::flash).value();
  double pytorch = cost::layer_activation_bytes(m, tp8, t, spec::AttentionKernel::flash, true).value();
  CHECK_THAT(pytorch - megatron, WithinRel(8192.0 * 2 * 2 * 4096 * (1 - 1.0 / 8), 1e-12));
  // Without SP there is nothing to gather; full recompute keeps only the block input either way.
  spec::Parallel no_sp = tp8;
  no_sp.sequence_parallel = false;
  CHECK(cost::layer_activation_bytes(m, no_sp, t, spec::AttentionKernel::flash, true) ==
        cost::layer_activation_bytes(m, no_sp, t, spec::AttentionKernel::flash));
  t.recompute = spec::Recompute::full;
  CHECK(cost::layer_activation_bytes(m, tp8, t, spec::AttentionKernel::flash, true) ==
        cost::layer_activation_bytes(m, tp8, t, spec::AttentionKernel::flash));
}
