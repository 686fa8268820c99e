#include <catch2/catch.hpp>

#include <optional>
#include <string>

#include "cost/compute.h"
#include "cost/layer_shape.h"
#include "cost/memory.h"
#include "helpers.h"
#include "schedule/pass_cost.h"
#include "spec/load.h"
#include "spec/stack.h"

using namespace dtsim;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {

// Every collective takes `t` seconds: what the TP pricing does with it is then plain arithmetic.
struct FlatNetwork : schedule::CommPricer {
  Seconds t;
  explicit FlatNetwork(double seconds) : t(seconds) {}
  [[nodiscard]] Seconds time(const schedule::Comm&) const override { return t; }
};

// Every collective takes its bytes x `per_byte` seconds.
struct ByteNetwork : schedule::CommPricer {
  double per_byte;
  explicit ByteNetwork(double seconds_per_byte) : per_byte(seconds_per_byte) {}
  [[nodiscard]] Seconds time(const schedule::Comm& c) const override { return Seconds{c.size.value() * per_byte}; }
};

struct Job {
  spec::Model model = spec::load_model(test::source_path("models/gpt3-175b.json"));
  spec::Cluster cluster = spec::load_cluster(test::source_path("topologies/dgx-a100.json"));
  spec::Calibration cal = spec::load_calibration(test::source_path("calibration/dgx-a100.json"));
  spec::Software sw = spec::load_stack("megatron-lm@2021").software;
  schedule::StepSpec spec(spec::Parallel par, spec::Dtype precision = spec::Dtype::fp16) const {
    spec::Training t{.micro_batch = 1, .global_batch = 8, .seq_len = 2048, .precision = precision};
    t.grad_dtype = spec::main_grad_dtype(sw, precision);
    return {&model, &cluster, par, t, &cal, sw};
  }
};

// An MoE job on one DGX B200 (x86 host: 22.96 us per PyTorch op, 61.65 us per TE module) as
// Megatron-Bridge 25.11 runs it: EP 8, micro-batch 8 (GPU-bound: the host runs ahead of it).
struct MoeJob {
  spec::Model model;
  spec::Cluster cluster = spec::load_cluster(test::source_path("topologies/dgx-b200.json"));
  spec::Calibration cal = spec::load_calibration(test::source_path("calibration/dgx-b200.json"));
  spec::Software sw = spec::load_stack("nemo-megatron-bridge@25.11").software;
  spec::Parallel par{.tp = 1, .pp = 1, .dp = 8, .ep = 8, .zero_stage = 1};
  spec::Training t{.micro_batch = 8, .global_batch = 64, .seq_len = 4096};
  explicit MoeJob(const char* preset) : model(spec::load_model(test::source_path(std::string("models/") + preset + ".json"))) {}
  [[nodiscard]] schedule::StepSpec spec() const { return {&model, &cluster, par, t, &cal, sw}; }
};

double seconds(const schedule::PassCost& p, schedule::Category c) {
  double total = 0;  // a full recompute's segments all carry Category::recompute
  for (const auto& s : p.segments)
    if (s.category == c) total += to_seconds(s.duration).value();
  return total;
}

// A ZeRO-3 layer's exposed data-parallel time on GPT-3 175B with stack `sw`, every collective
// taking `collective_s`.
double zero3_exposed(const spec::Software& sw, const spec::Parallel& par, double collective_s, bool backward) {
  Job k;
  k.sw = sw;
  schedule::LayerCost lc = schedule::layer_cost(k.spec(par), FlatNetwork(collective_s));
  return seconds(backward ? lc.backward : lc.forward, schedule::Category::dp_comm_exposed);
}

}  // namespace

TEST_CASE("schedule::layer_cost: without gradient-accumulation fusion the backward adds the main-grad update",
          "[schedule]") {
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  Job j;
  FlatNetwork net(0);
  spec::Parallel par{.tp = 8, .pp = 8, .dp = 1, .zero_stage = 0};
  double unfused = seconds(schedule::layer_cost(j.spec(par), net).backward, schedule::Category::compute);
  j.sw.grad_accumulation_fusion = spec::GradAccumFusion::on;
  double fused = seconds(schedule::layer_cost(j.spec(par), net).backward, schedule::Category::compute);
  // Unfused, fp16 main grads (Megatron-LM 2021 --fp16): 2 + 2 x 2 = 6 bytes per parameter of the
  // layer on one TP rank, at the profile's HBM rate, plus 12 kernels' fixed cost; times the pace.
  double params = cost::local_layer_params(j.model, par).total();
  cost::ComputeContext ctx = schedule::compute_context(j.spec(par));
  double update = (6.0 * params / (ctx.gpu->hbm_bandwidth.value() * j.cal.compute.memory_efficiency) +
                   12 * j.cal.compute.kernel_overhead.value()) * ctx.pace;
  // Fused, the weight-gradient GEMMs read and write the fp16 main grads in their epilogue instead.
  cost::LayerShape sh = cost::layer_shape(j.model, par, 1, 2048);
  auto backward = [&](std::optional<spec::Dtype> acc) {
    return cost::ops_time(cost::layer_backward(sh, j.sw.attention, spec::Dtype::fp16, {}, acc), ctx).value();
  };
  double epilogues = backward(spec::Dtype::fp16) - backward(std::nullopt);
  CHECK(epilogues > 0);
  CHECK_THAT(unfused - fused, WithinRel(update - epilogues, 1e-6));  // the clock's picosecond ticks
  // ZeRO-2 accumulates into the 1/dp shard: not priced.
  j.sw.grad_accumulation_fusion = spec::GradAccumFusion::off;
  spec::Parallel z2{.tp = 8, .pp = 8, .dp = 2, .zero_stage = 2};
  double sharded = seconds(schedule::layer_cost(j.spec(z2), net).backward, schedule::Category::compute);
  cost::LayerShape sh2 = cost::layer_shape(j.model, z2, 1, 2048);
  cost::ComputeContext ctx2 = schedule::compute_context(j.spec(z2));
  CHECK_THAT(sharded, WithinRel(cost::ops_time(cost::layer_backward(sh2, j.sw.attention, spec::Dtype::fp16), ctx2).value(), 1e-9));
}

TEST_CASE("schedule::layer_cost: an unfused cast before the gradient accumulation (DeepSpeed's bf16 optimizer)",
          "[schedule]") {
  // BLOOM's stack: hp_grad.add_(lp.grad.to(fp32)) after each micro-batch's backward -- a cast to a
  // temporary (read 2, write 4) that the add then reads (4) beside the fp32 main grad (read 4,
  // write 4): 18 bytes per parameter and two kernels per tensor, against a plain add's 10 and one.
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  Job j;
  FlatNetwork net(0);
  spec::Parallel par{.tp = 4, .pp = 12, .dp = 1, .zero_stage = 0};
  j.sw.grad_accumulation_fusion = spec::GradAccumFusion::off;
  j.sw.main_grads = spec::MainGrads::fp32;
  double add = seconds(schedule::layer_cost(j.spec(par, spec::Dtype::bf16), net).backward, schedule::Category::compute);
  j.sw.grad_accumulation_fusion = spec::GradAccumFusion::cast;
  double cast = seconds(schedule::layer_cost(j.spec(par, spec::Dtype::bf16), net).backward, schedule::Category::compute);
  double params = cost::local_layer_params(j.model, par).total();
  cost::ComputeContext ctx = schedule::compute_context(j.spec(par, spec::Dtype::bf16));
  // 8 more bytes per parameter and one more kernel per tensor (12 tensors in a GPT layer with biases).
  double extra = (8.0 * params / (ctx.gpu->hbm_bandwidth.value() * j.cal.compute.memory_efficiency) +
                  12 * j.cal.compute.kernel_overhead.value()) * ctx.pace;
  CHECK_THAT(cast - add, WithinRel(extra, 1e-6));
  CHECK_FALSE(spec::fused_grad_accumulation(j.sw, spec::Dtype::bf16));
  CHECK(std::string(spec::to_string(spec::GradAccumFusion::cast)) == "cast");
}

TEST_CASE("schedule::layer_cost: DeepSpeed's 2021 ZeRO-3 blocks on every collective and pays per rank for its lists",
          "[schedule]") {
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  Job j;
  j.sw = spec::load_stack("deepspeed@0.3").software;
  REQUIRE(j.sw.zero3_list_collectives);
  REQUIRE_FALSE(j.sw.zero3_prefetch);
  spec::Parallel par{.tp = 1, .pp = 1, .dp = 1536, .zero_stage = 3};
  auto exposed = [&](const spec::Software& sw, double collective_s, bool backward) {
    return zero3_exposed(sw, par, collective_s, backward);
  };
  spec::Software bare = j.sw;
  bare.zero3_gather_cpu_us = 0;
  bare.zero3_list_build_us = 0;
  bare.zero3_list_copy_cpu_us = 0;
  bare.zero3_zero_fill = false;  // the fetch's own kernels: the next test
  bare.zero3_fetch_norm = false;
  bare.zero3_grad_path = spec::Zero3GradPath::direct;
  // Blocking: the device-wide synchronize before each gather also waits for the previous
  // module's gradient reduce-scatter, so nothing hides under compute. A GPT layer's four weight
  // matrices each take one gather and, backward, one gather and one reduce-scatter.
  double fwd = exposed(bare, 0.05, false);
  CHECK(fwd > 4 * 0.05);
  CHECK_THAT(exposed(bare, 0.05, true), WithinRel(2 * fwd, 1e-9));
  // Building the list of 1,536 per-rank views in Python precedes every call.
  spec::Software built = bare;
  built.zero3_list_build_us = 2.6;
  CHECK_THAT(exposed(built, 0.05, false) - fwd, WithinRel(4 * 2.6e-6 * 1536, 1e-9));
  // Issuing 1,536 staging copies (7.7 ms) hides behind a 50 ms gather, which they follow ...
  spec::Software copying = bare;
  copying.zero3_list_copy_cpu_us = 5.0;
  CHECK_THAT(exposed(copying, 0.05, false), WithinRel(fwd, 1e-9));
  // ... but not behind a short one, and never before a reduce-scatter, whose input they flatten.
  double short_fwd = exposed(bare, 0.0, false);
  double copy_bound = exposed(copying, 0.0, false) - short_fwd;
  CHECK(copy_bound > 0);
  CHECK(copy_bound <= 4 * 5.0e-6 * 1536);
  CHECK(exposed(copying, 0.05, true) - exposed(bare, 0.05, true) > 0);
  // The shipped stack: 319 us per call plus 7.6 us per rank, where the collective is short.
  CHECK(exposed(j.sw, 0.0, false) >= short_fwd + 4 * (319e-6 + 2.6e-6 * 1536) + copy_bound - 1e-12);
}

TEST_CASE("schedule::layer_cost: torchtitan's per-op checkpointing gathers the sequence-parallel inputs again", "[schedule]") {
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  Job j;
  j.sw = spec::load_stack("pytorch-fsdp@fsdp2").software;
  spec::Parallel par{.tp = 8, .pp = 1, .dp = 1, .zero_stage = 1, .sequence_parallel = true};
  auto tp_backward = [&](std::uint32_t modules, bool overlap) {
    schedule::StepSpec sp = j.spec(par, spec::Dtype::bf16);
    sp.train.recompute = spec::Recompute::selective;
    sp.train.recompute_modules = modules;
    sp.software.tp_comm_overlap = overlap;
    return seconds(schedule::layer_cost(sp, FlatNetwork(1e-3)).backward, schedule::Category::tp_comm);
  };
  namespace rm = spec::recompute_module;
  // Its save list keeps the reduce-scatters' outputs, not the all-gathers': wk and w3 recomputed
  // need the attention's and the MLP's gathered inputs again, two more all-gathers.
  CHECK_THAT(tp_backward(rm::op_sac, false) - tp_backward(rm::core_attn, false), WithinRel(2e-3, 1e-9));
  // Pipelined with the recomputed matmuls (TP overlap), they cost the overlap's slowdown only.
  CHECK_THAT(tp_backward(rm::op_sac, true) - tp_backward(rm::core_attn, true),
             WithinRel(2e-3 * j.cal.compute.overlap_slowdown, 1e-9));
}

TEST_CASE("schedule::layer_cost: prefetched ZeRO-3 collectives slow the compute they hide behind by the SMs they hold",
          "[schedule]") {
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  spec::Software fsdp = spec::load_stack("pytorch-fsdp@fsdp2").software;
  CHECK(fsdp.zero3_comm_sms == 24);  // one CTA per NCCL ring channel on an 8-GPU NVSwitch node
  spec::Parallel par{.tp = 1, .pp = 1, .dp = 8, .zero_stage = 3};
  // A collective far shorter than the layer's compute hides whole: what it costs is the slowdown.
  const double c = 1e-4;
  spec::Software plain = fsdp;
  plain.zero3_comm_sms = 0;  // the profile's overlap_slowdown (0.15)
  double floor = zero3_exposed(plain, par, c, false), held = zero3_exposed(fsdp, par, c, false);
  const Job j;
  CHECK(j.cluster.gpu.sm_count == 108);
  CHECK_THAT(held / floor, WithinRel((24.0 / (108 - 24)) / j.cal.compute.overlap_slowdown, 1e-6));
  // Holding fewer SMs than the floor prices (NCCL user-buffer kernels) leaves the floor.
  spec::Software few = fsdp;
  few.zero3_comm_sms = 4;
  CHECK_THAT(zero3_exposed(few, par, c, false), WithinRel(floor, 1e-12));
}

TEST_CASE("schedule::layer_cost: DeepSpeed 0.3 zero-fills each gathered parameter, takes its norm, and buckets each gradient",
          "[schedule]") {
  // Before PR #1188 every fetch wrote its full-size buffer with torch.zeros and, after the gather,
  // a debug print evaluated param.norm(): a fill and a reduction over each gathered weight matrix,
  // on the critical path of a blocking fetch, forward and backward alike.
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  const spec::Software v03 = spec::load_stack("deepspeed@0.3").software, v04 = spec::load_stack("deepspeed@0.4").software;
  CHECK((v03.zero3_zero_fill && v03.zero3_fetch_norm && v03.zero3_grad_path == spec::Zero3GradPath::ds_bucket));
  CHECK_FALSE((v04.zero3_zero_fill || v04.zero3_fetch_norm));
  spec::Parallel par{.tp = 1, .pp = 1, .dp = 384, .zero_stage = 3};
  auto exposed = [&](bool fill, bool norm, bool backward) {
    spec::Software sw = v03;
    sw.zero3_zero_fill = fill;
    sw.zero3_fetch_norm = norm;
    return zero3_exposed(sw, par, 0.01, backward);
  };
  double none = exposed(false, false, false);
  // GPT-3 175B's four weight matrices hold 12 h^2 16-bit elements: each op moves 24 h^2 bytes in
  // four kernels.
  const Job j;
  cost::ComputeContext ctx = schedule::compute_context(j.spec(par));
  double h = 12288;
  double one_op = (24 * h * h / (ctx.gpu->hbm_bandwidth.value() * j.cal.compute.memory_efficiency) +
                   4 * j.cal.compute.kernel_overhead.value()) * ctx.pace;
  CHECK_THAT(exposed(true, false, false) - none, WithinRel(one_op, 1e-6));
  CHECK_THAT(exposed(false, true, false) - none, WithinRel(one_op, 1e-6));
  CHECK_THAT(exposed(true, true, false) - none, WithinRel(2 * one_op, 1e-6));
  CHECK_THAT(exposed(true, true, true) - exposed(false, false, true), WithinRel(2 * one_op, 1e-6));
  // Backward, each weight gradient is copied into the flat reduce bucket and divided in place
  // before its reduce-scatter: 8 bytes per element in two kernels per matrix, in the pass's
  // compute; never forward.
  auto compute = [&](spec::Zero3GradPath path, bool backward) {
    Job k;
    k.sw = v03;
    k.sw.zero3_grad_path = path;
    schedule::LayerCost lc = schedule::layer_cost(k.spec(par), FlatNetwork(0.01));
    return seconds(backward ? lc.backward : lc.forward, schedule::Category::compute);
  };
  double bucket = (96 * h * h / (ctx.gpu->hbm_bandwidth.value() * j.cal.compute.memory_efficiency) +
                   8 * j.cal.compute.kernel_overhead.value()) * ctx.pace;
  using spec::Zero3GradPath;
  CHECK_THAT(compute(Zero3GradPath::ds_bucket, true) - compute(Zero3GradPath::direct, true), WithinRel(bucket, 1e-6));
  CHECK_THAT(compute(Zero3GradPath::ds_bucket, false), WithinRel(compute(Zero3GradPath::direct, false), 1e-12));
}

TEST_CASE("schedule::layer_cost: FSDP1 concatenates, casts and pre-divides each unit's gradient before reducing it",
          "[schedule]") {
  // SplitWithSizesBackward writes the flat gradient (r 2, w 2), the post-backward hook casts it to
  // fp32 (r 2, w 4) and _reduce_grad divides it in place (r/w 8): 18 bytes per element in three
  // kernels per layer; a 16-bit reduction skips the cast and divides 16-bit values (8 in two).
  // FULL_SHARD and SHARD_GRAD_OP alike reduce unit by unit; nothing without data parallelism.
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  using spec::Zero3GradPath;
  auto extra = [](int zero, std::int64_t dp, spec::Dtype reduce, bool backward = true) {
    Job k;
    k.sw.zero3_grad_path = Zero3GradPath::direct;
    k.sw.main_grads = reduce == spec::Dtype::fp32 ? spec::MainGrads::fp32 : spec::MainGrads::param;
    spec::Parallel par{.tp = 1, .pp = 1, .dp = dp, .zero_stage = zero};
    auto compute = [&] {
      schedule::LayerCost lc = schedule::layer_cost(k.spec(par, spec::Dtype::bf16), FlatNetwork(0.001));
      return seconds(backward ? lc.backward : lc.forward, schedule::Category::compute);
    };
    double before = compute();
    k.sw.zero3_grad_path = Zero3GradPath::flat_param;
    return compute() - before;
  };
  const Job j;
  spec::Parallel par{.tp = 1, .pp = 1, .dp = 8, .zero_stage = 3};
  cost::ComputeContext ctx = schedule::compute_context(j.spec(par, spec::Dtype::bf16));
  double params = cost::local_layer_params(j.model, par).total();
  auto priced = [&](double bytes, double kernels) {
    return (bytes * params / (ctx.gpu->hbm_bandwidth.value() * j.cal.compute.memory_efficiency) +
            kernels * j.cal.compute.kernel_overhead.value()) * ctx.pace;
  };
  CHECK_THAT(extra(3, 8, spec::Dtype::fp32), WithinRel(priced(18, 3), 1e-6));
  CHECK_THAT(extra(3, 8, spec::Dtype::bf16), WithinRel(priced(8, 2), 1e-6));
  CHECK_THAT(extra(2, 8, spec::Dtype::fp32), WithinRel(priced(18, 3), 1e-6));
  CHECK(extra(1, 8, spec::Dtype::fp32) == 0.0);
  CHECK(extra(3, 1, spec::Dtype::fp32) == 0.0);
  CHECK(extra(3, 8, spec::Dtype::fp32, false) == 0.0);
}

TEST_CASE("schedule::layer_cost: FSDP2 copies each gather out and each gradient into the reduce-scatter input",
          "[schedule]") {
  // foreach_all_gather_copy_out: split_with_sizes_copy of the gathered unit (r 2, w 2) on the
  // compute stream, forward and backward; foreach_reduce: one torch._chunk_cat casting the
  // gradients to fp32 (r 2, w 4), no divide kernel (ReduceOp.AVG inside NCCL).
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  spec::Parallel par{.tp = 1, .pp = 1, .dp = 8, .zero_stage = 3};
  auto compute = [&](bool copy_out, spec::Zero3GradPath path, bool backward) {
    Job k;
    k.sw.main_grads = spec::MainGrads::fp32;
    k.sw.zero3_gather_copy_out = copy_out;
    k.sw.zero3_grad_path = path;
    schedule::LayerCost lc = schedule::layer_cost(k.spec(par, spec::Dtype::bf16), FlatNetwork(0.001));
    return seconds(backward ? lc.backward : lc.forward, schedule::Category::compute);
  };
  const Job j;
  cost::ComputeContext ctx = schedule::compute_context(j.spec(par, spec::Dtype::bf16));
  double params = cost::local_layer_params(j.model, par).total();
  auto priced = [&](double bytes) {
    return (bytes * params / (ctx.gpu->hbm_bandwidth.value() * j.cal.compute.memory_efficiency) +
            j.cal.compute.kernel_overhead.value()) * ctx.pace;
  };
  using spec::Zero3GradPath;
  for (bool backward : {false, true})
    CHECK_THAT(compute(true, Zero3GradPath::direct, backward) - compute(false, Zero3GradPath::direct, backward),
               WithinRel(priced(4), 1e-6));
  CHECK_THAT(compute(false, Zero3GradPath::chunk_cat, true) - compute(false, Zero3GradPath::direct, true),
             WithinRel(priced(6), 1e-6));
  CHECK(compute(false, Zero3GradPath::chunk_cat, false) == compute(false, Zero3GradPath::direct, false));
  // Full recompute re-runs the forward in the backward; DeepSpeed gathers the layer again for it,
  // FSDP recomputes on the backward's gather: the backward differs by the forward's gather (its
  // exposed part and FSDP2's copy-out).
  auto recompute_backward = [&](bool regather) {
    Job k;
    k.sw.zero3_gather_copy_out = true;
    k.sw.zero3_recompute_gathers = regather;
    schedule::StepSpec st = k.spec(par, spec::Dtype::bf16);
    st.train.recompute = spec::Recompute::full;
    schedule::LayerCost lc = schedule::layer_cost(st, FlatNetwork(0.001));
    return std::pair{seconds(lc.backward, schedule::Category::recompute),
                     seconds(lc.forward, schedule::Category::dp_comm_exposed) + priced(4)};
  };
  auto [again, forward_gather] = recompute_backward(true);
  CHECK_THAT(again - recompute_backward(false).first, WithinRel(forward_gather, 1e-6));
  // The shipped stacks: FSDP1 reduces through its flat gradient, FSDP2 through _chunk_cat.
  CHECK(spec::load_stack("pytorch-fsdp@fsdp1").software.zero3_grad_path == Zero3GradPath::flat_param);
  CHECK_FALSE(spec::load_stack("pytorch-fsdp@fsdp1").software.zero3_gather_copy_out);
  CHECK(spec::load_stack("pytorch-fsdp@fsdp2").software.zero3_grad_path == Zero3GradPath::chunk_cat);
  CHECK(spec::load_stack("pytorch-fsdp@fsdp2").software.zero3_gather_copy_out);
}

TEST_CASE("schedule::layer_cost: asynchronous TP backward hides the column layers' reductions", "[schedule]") {
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  Job j;
  spec::Parallel par{.tp = 8, .pp = 8, .dp = 1, .zero_stage = 0};
  // A tiny collective time: all of it hides behind the QKV and FC1 weight-gradient GEMMs.
  FlatNetwork net(1e-6);
  auto tp_backward = [&](bool async) {
    j.sw.tp_async_backward = async;
    return seconds(schedule::layer_cost(j.spec(par), net).backward, schedule::Category::tp_comm);
  };
  // Synchronous (2021): the backward's two all-reduces are exposed.
  CHECK_THAT(tp_backward(false), WithinRel(2e-6, 1e-9));
  // Asynchronous (2022): hidden, apart from the slowdown they cause the GEMMs.
  CHECK_THAT(tp_backward(true), WithinRel(2e-6 * j.cal.compute.overlap_slowdown, 1e-9));
  // The forward's are never hidden.
  j.sw.tp_async_backward = true;
  CHECK_THAT(seconds(schedule::layer_cost(j.spec(par), net).forward, schedule::Category::tp_comm), WithinRel(2e-6, 1e-9));
  // With SP: the row layers' gradient all-gathers are exposed; the column layers' reduce-scatters
  // hide behind their weight gradients and their inputs' second all-gathers behind their data
  // gradients (Megatron-LM 2022 gathers the input again in backward, asynchronously).
  par.sequence_parallel = true;
  CHECK_THAT(seconds(schedule::layer_cost(j.spec(par), net).backward, schedule::Category::tp_comm),
             WithinRel(2e-6 + 4e-6 * j.cal.compute.overlap_slowdown, 1e-9));
}

TEST_CASE("schedule::layer_cost: TP overlap collective by collective: a pipelined reduce-scatter exposes its last chunk",
          "[schedule]") {
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  Job j;
  j.sw.tp_comm_overlap = true;
  spec::Parallel par{.tp = 4, .pp = 8, .dp = 1, .zero_stage = 0, .sequence_parallel = true};
  auto forward = [&](const char* rs, double t) {
    j.sw.tp_overlap_rs = spec::parse_tp_overlap_rs(rs, "test");
    FlatNetwork net(t);
    return seconds(schedule::layer_cost(j.spec(par), net).forward, schedule::Category::tp_comm);
  };
  // Collectives far shorter than their GEMM chunks: Transformer Engine's split_overlap_rs runs the
  // projection's and FC2's last reduce-scatter chunk after the last GEMM chunk (2 x t); ring
  // exchanges hide every step behind the next chunk.
  CHECK_THAT(forward("24,20", 1e-6), WithinRel(2e-6, 1e-9));
  CHECK_THAT(forward("ring,20", 1e-6), WithinRel(1e-6, 1e-9));
  CHECK(forward("ring,ring", 1e-6) == 0);
  // Collectives far longer: each exposes what its tp-1 exchanges (or splits-1 chunks plus the
  // last) outlast the GEMM chunks beside them, GEMM by GEMM.
  j.sw.tp_overlap_rs = spec::parse_tp_overlap_rs("ring,ring", "test");
  schedule::LayerKernels k = schedule::layer_kernels(j.spec(par));
  double hidden = 0;
  for (const cost::Op& op : k.forward)
    if (op.name == "attn.qkv" || op.name == "attn.proj" || op.name == "mlp.fc1" || op.name == "mlp.fc2")
      hidden += cost::op_time(op, k.ctx).value() * 3.0 / 4.0;
  CHECK_THAT(forward("ring,ring", 1.0), WithinRel(4.0 - hidden, 1e-9));
  double proj = 0;
  for (const cost::Op& op : k.forward)
    if (op.name == "attn.proj") proj = cost::op_time(op, k.ctx).value();
  j.sw.tp_overlap_rs = spec::parse_tp_overlap_rs("24,ring", "test");
  schedule::LayerKernels p = schedule::layer_kernels(j.spec(par));
  double piped = 0;
  for (const cost::Op& op : p.forward)
    if (op.name == "attn.proj") piped = cost::op_time(op, p.ctx).value();
  // The pipelined projection (4 chunks on 108 SMs): 3 x (1 - piped/4) + 1 in place of the ring's
  // 3 x (1/3 - proj/4).
  CHECK_THAT(forward("24,ring", 1.0), WithinRel(4.0 - hidden + 3.0 * proj / 4.0 + 3.0 - 3.0 * piped / 4.0, 1e-9));
  // Backward: the projection's and FC2's gradient all-gathers by ring exchange (hidden), and four
  // bulk collectives beside QKV's and FC1's GEMMs -- their inputs all-gathered again for the weight
  // gradients, their data gradients reduce-scattered -- each slowing its GEMM while it runs.
  FlatNetwork net(1e-6);
  double backward = seconds(schedule::layer_cost(j.spec(par), net).backward, schedule::Category::tp_comm);
  CHECK_THAT(backward, WithinRel(4e-6 * j.cal.compute.overlap_slowdown, 1e-9));
  // PyTorch's micro-pipeline TP: the same forward; backward, the output gradients' all-gathers
  // fused into the projection's and FC2's data-gradient matmuls (hidden), the QKV and FC1 input
  // gradients' reduce-scatters whole after their matmuls, and no inputs gathered again.
  j.sw.tp_overlap_impl = spec::TpOverlapImpl::micro_pipeline;
  CHECK_THAT(seconds(schedule::layer_cost(j.spec(par), net).backward, schedule::Category::tp_comm), WithinRel(2e-6, 1e-9));
  CHECK_THAT(forward("ring,ring", 1.0), WithinRel(4.0 - hidden, 1e-9));
  j.sw.tp_overlap_impl = spec::TpOverlapImpl::userbuffers;
  // fp8: the all-gathers move the 1-byte data the GEMMs read (TE's fp8 userbuffers), the
  // reduce-scatters 16-bit outputs. With collectives far longer than any GEMM the forward exposes
  // two 1-byte gathers and two 2-byte reduce-scatters of the b*s x h activation.
  double act = 1.0 * 2048 * j.model.hidden;  // elements
  ByteNetwork slow(1e-7);  // 10 MB/s: seconds per collective, against GEMMs of milliseconds
  auto fp8_forward = [&](spec::Fp8Recipe r) {
    j.sw.fp8_recipe = r;
    return seconds(schedule::layer_cost(j.spec(par, spec::Dtype::fp8), slow).forward, schedule::Category::tp_comm);
  };
  CHECK_THAT(fp8_forward(spec::Fp8Recipe::delayed), WithinRel((2 * act + 2 * 2 * act) * 1e-7, 1e-3));
  // MXFP8 (Blackwell): the userbuffer carries the data, a blocking NCCL all-gather the E8M0 scales
  // (a byte per 32 elements) before each gathered GEMM.
  j.cluster = spec::load_cluster(test::source_path("topologies/dgx-b200.json"));
  j.cal = spec::load_calibration(test::source_path("calibration/dgx-b200.json"));
  CHECK_THAT(fp8_forward(spec::Fp8Recipe::mxfp8) - fp8_forward(spec::Fp8Recipe::current), WithinRel(2 * act / 32 * 1e-7, 1e-3));
  // MXFP8's GEMMs are block-scaled (the profile's mxfp8_gemm_time applies); a bf16 run's are not,
  // whatever its recipe field says.
  j.sw.fp8_recipe = spec::Fp8Recipe::mxfp8;
  CHECK(schedule::compute_context(j.spec(par, spec::Dtype::fp8)).mxfp8);
  CHECK_FALSE(schedule::compute_context(j.spec(par, spec::Dtype::bf16)).mxfp8);
  j.sw.fp8_recipe = spec::Fp8Recipe::current;
  CHECK_FALSE(schedule::compute_context(j.spec(par, spec::Dtype::fp8)).mxfp8);
}

TEST_CASE("schedule::layer_cost: a dropless MoE forward waits for its token counts on the host", "[schedule]") {
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  // Qwen3-30B-A3B, EP 8: 16 local experts, so each GroupedLinear issues 48 host ops before its
  // GEMMs start.
  MoeJob j("qwen3-30b-a3b");
  FlatNetwork net(0);
  auto host = [&](double capacity, bool full_graph) {
    j.t.moe_capacity_factor = capacity;
    j.sw.cuda_graphs.full_iteration = full_graph;
    schedule::LayerCost lc = schedule::layer_cost(j.spec(), net);
    return std::pair{seconds(lc.forward, schedule::Category::host), seconds(lc.backward, schedule::Category::host)};
  };
  auto [dropless_f, dropless_b] = host(0, false);
  auto [padded_f, padded_b] = host(1.0, false);
  // Token drop with padding knows its split sizes: no wait, and with this much GPU work the host
  // runs ahead (no host time). Dropless, the GPU idles while the host issues the dispatch (8 ops;
  // the all-to-all is free on this network) and prepares the first GroupedLinear (a TE module and
  // 3 x 16 + 1 ops), less the sort by local expert and the permutation it runs meanwhile; the
  // backward is unchanged.
  CHECK(padded_f == 0);
  CHECK(dropless_b == padded_b);
  j.t.moe_capacity_factor = 0;
  const spec::Cluster& cluster = *j.spec().cluster;
  double issue = 8 * cluster.host_torch_op.value() + cluster.host_te_module.value() + 49 * cluster.host_torch_op.value();
  REQUIRE(issue > 0);
  schedule::LayerKernels k = schedule::layer_kernels(j.spec());
  double meanwhile = 0;
  for (const cost::Op& op : k.forward)
    if (op.name == "moe.sort_chunks" || op.name == "moe.permute") meanwhile += cost::op_time(op, k.ctx).value() * 0.5;
  REQUIRE(meanwhile > 0);
  CHECK(dropless_f >= issue - meanwhile - 1e-9);
  CHECK(dropless_f <= issue);
  CHECK(dropless_f > 0.3 * issue);
  // A whole-iteration CUDA graph issues nothing from the host (and needs static shapes anyway).
  auto [graph_f, graph_b] = host(1.0, true);
  CHECK(graph_f == 0);
  CHECK(graph_b == 0);
}

TEST_CASE("schedule::layer_kernels: the alltoall dispatcher sorts what it receives by local expert, and back",
          "[schedule]") {
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  // Qwen3-30B-A3B on EP 8: 16 local experts, so the all-to-all's [rank][expert] chunks are copied
  // into [expert][rank] order before the GroupedLinear and back before the combine -- a read and a
  // write of every routed row each way, as many bytes as the permutation itself.
  MoeJob j("qwen3-30b-a3b");
  auto find = [](const std::vector<cost::Op>& ops, const std::string& name) -> const cost::Op* {
    for (const cost::Op& op : ops)
      if (op.name == name) return &op;
    return nullptr;
  };
  schedule::LayerKernels a2a = schedule::layer_kernels(j.spec());
  const cost::Op* sort = find(a2a.forward, "moe.sort_chunks");
  const cost::Op* permute = find(a2a.forward, "moe.permute");
  REQUIRE(sort != nullptr);
  REQUIRE(permute != nullptr);
  CHECK(sort->bytes == permute->bytes);
  CHECK_THAT(sort->bytes.value(), WithinRel(a2a.shape.expert_tokens * 2048 * 8, 1e-12));  // rows x hidden x (2 + 2 bytes) x 2 copies
  CHECK(find(a2a.backward, "moe.sort_chunks.bwd") != nullptr);
  // DeepEP and HybridEP hand each expert its tokens already grouped: no second copy.
  j.sw.moe_dispatcher = spec::MoeDispatcher::flex;
  CHECK(find(schedule::layer_kernels(j.spec()).forward, "moe.sort_chunks") == nullptr);
  // One local expert (Mixtral's 8 on EP 8): nothing to sort.
  MoeJob mixtral("mixtral-8x7b");
  CHECK(find(schedule::layer_kernels(mixtral.spec()).forward, "moe.sort_chunks") == nullptr);
  CHECK(find(schedule::layer_kernels(mixtral.spec()).forward, "moe.permute") != nullptr);
}

TEST_CASE("schedule::layer_cost: an MoE layer's routing bookkeeping: its small kernels and collectives", "[schedule]") {
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  MoeJob j("qwen3-30b-a3b");  // 128 experts, 16 per rank on EP 8
  auto route = [&](bool backward) -> std::optional<cost::Op> {
    schedule::LayerKernels k = schedule::layer_kernels(j.spec());
    for (const cost::Op& op : backward ? k.backward : k.forward)
      if (op.name == (backward ? "moe.route.bwd" : "moe.route")) return op;
    return std::nullopt;
  };
  // alltoall, dropless, several local experts: the router's 3 (random logits of force-balanced
  // routing, fused top-k), the row-id map's 3, the count reductions' 6, the chunk sorts' 3.
  j.t.moe_capacity_factor = 0;
  REQUIRE(route(false).has_value());
  CHECK(route(false)->kernels == 15);
  CHECK(route(false)->bytes.value() == 4096.0 * 8 * 128 * 8 * 6);  // tokens (mbs 8) x experts x 8 bytes x 6 map kernels
  REQUIRE(route(true).has_value());
  CHECK(route(true)->kernels == 1);
  j.t.moe_capacity_factor = 1.0;  // token drop knows its split sizes: no count reductions
  CHECK(route(false)->kernels == 9);
  j.sw.moe_dispatcher = spec::MoeDispatcher::flex;  // HybridEP permutes inside its dispatch kernel
  CHECK(route(false)->kernels == 3);
  MoeJob mixtral("mixtral-8x7b");  // one expert per rank: nothing to sort
  mixtral.t.moe_capacity_factor = 0;
  schedule::LayerKernels one = schedule::layer_kernels(mixtral.spec());
  CHECK(one.shape.routing_kernels == 12);
  // Collectives, each one unit on a flat network: the tokens' dispatch and combine and the
  // probabilities' all-to-all each pass, and forward only, when dropless, the counts' all-gather.
  FlatNetwork net(1e-3);
  j.sw.moe_dispatcher = spec::MoeDispatcher::alltoall;
  auto ep = [&](double capacity) {
    j.t.moe_capacity_factor = capacity;
    schedule::LayerCost lc = schedule::layer_cost(j.spec(), net);
    return std::pair{seconds(lc.forward, schedule::Category::ep_comm), seconds(lc.backward, schedule::Category::ep_comm)};
  };
  auto [dropless_f, dropless_b] = ep(0);
  auto [drop_f, drop_b] = ep(1.0);
  CHECK_THAT(dropless_f, WithinRel(4e-3, 1e-9));
  CHECK_THAT(dropless_b, WithinRel(3e-3, 1e-9));
  CHECK_THAT(drop_f, WithinRel(3e-3, 1e-9));
  CHECK_THAT(drop_b, WithinRel(3e-3, 1e-9));
}

TEST_CASE("schedule::layer_cost: a clamped GLU's device tensor makes the host wait inside the experts", "[schedule]") {
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  // gpt-oss-120b with token drop (no wait for token counts): Megatron-Core still builds the
  // activation's linear offset on the device each call, so the host waits for FC1 and then issues
  // the activation and the second GroupedLinear (a TE module and 3 ops per local expert) while
  // the GPU idles. Without the clamp there is no such wait.
  MoeJob j("gpt-oss-120b");
  j.t.moe_capacity_factor = 1.0;
  FlatNetwork net(0);
  auto forward_host = [&](const spec::Model& m) {
    j.model = m;
    return seconds(schedule::layer_cost(j.spec(), net).forward, schedule::Category::host);
  };
  spec::Model oss = j.model;
  spec::Model plain = oss;
  plain.activation_clamp = 0;
  CHECK(forward_host(plain) == 0);
  // The GPU runs the activation meanwhile: idle = host (activation, FC2's module and ops) - the
  // activation kernel.
  j.model = oss;
  const spec::Cluster& host = *j.spec().cluster;
  double op = host.host_torch_op.value(), te = host.host_te_module.value();
  REQUIRE(op > 0);
  double fc2_prep = op + te + 3 * 16 * op;
  schedule::LayerKernels k = schedule::layer_kernels(j.spec());
  double act = 0;
  for (const cost::Op& op : k.forward)
    if (op.name == "mlp.act") act = cost::op_time(op, k.ctx).value();
  REQUIRE(act > 0);
  CHECK_THAT(forward_host(oss), WithinRel(fc2_prep - act, 1e-6));
}

TEST_CASE("schedule::layer_host_blocks: the attention block as Megatron-Core's layer spec issues it",
          "[schedule]") {
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  // gpt-oss's scaled cos and sin keep TE's fused kernel out: the attention block issues its three
  // TE modules and four ops, of which the query's and key's one rotary call each become 15.
  MoeJob j("gpt-oss-120b");
  double op = j.cluster.host_torch_op.value(), te = j.cluster.host_te_module.value();
  REQUIRE(op > 0);
  auto attention = [&] { return schedule::layer_kernels(j.spec()).host.attention.value(); };
  CHECK_THAT(attention(), WithinRel(3 * te + (4 + 2 * 14) * op, 1e-12));
  spec::Model oss = j.model;
  j.model.rope_mscale = 1.0;  // unscaled (DeepSeek-V3's mscale = mscale_all_dim): the fused kernel
  CHECK_THAT(attention(), WithinRel(3 * te + 4 * op, 1e-12));
  j.model = oss;
  j.sw.cuda_graphs.attn = true;  // captured with the attention: no host time at all
  CHECK(attention() == 0);
  // Module counts of the attention's layer spec: Qwen3's query and key norms add two TENorm
  // modules; DeepSeek-V3's multi-latent attention is seven modules (norm, two down and two up
  // projections, the attention, the output projection) where a fused QKV's is three.
  for (auto [name, modules] : {std::pair{"qwen3-30b-a3b", 5.0}, std::pair{"deepseek-v3", 7.0}}) {
    INFO(name);
    MoeJob m(name);
    double mop = m.cluster.host_torch_op.value(), mte = m.cluster.host_te_module.value();
    CHECK_THAT(schedule::layer_kernels(m.spec()).host.attention.value(), WithinRel(modules * mte + 4 * mop, 1e-12));
  }
}

TEST_CASE("schedule::layer_cost: an MoE backward issues twice the forward's expert GEMMs", "[schedule]") {
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  // Qwen3-30B-A3B, EP 8 (16 local experts), a micro-batch small enough for both passes to wait on
  // the host, token drop (no forward wait for counts): each pass takes its host time, and the
  // backward's is the forward's plus one GEMM call per local expert in each of the two
  // GroupedLinear modules (dgrad and wgrad against the forward's one GEMM), less the dispatcher's
  // preprocess (6 calls), which has no gradient.
  MoeJob j("qwen3-30b-a3b");
  j.t = {.micro_batch = 1, .global_batch = 8, .seq_len = 128};
  j.t.moe_capacity_factor = 1.0;
  j.sw.moe_dispatcher = spec::MoeDispatcher::alltoall;
  FlatNetwork net(0);
  schedule::LayerCost lc = schedule::layer_cost(j.spec(), net);
  REQUIRE(seconds(lc.forward, schedule::Category::host) > 0);
  REQUIRE(seconds(lc.backward, schedule::Category::host) > 0);
  double op = j.cluster.host_torch_op.value();
  CHECK_THAT(to_seconds(lc.backward.total()).value() - to_seconds(lc.forward.total()).value(),
             WithinRel((2 * 16 - 6) * op, 1e-6));
}

TEST_CASE("schedule::layer_cost: the alltoall dispatcher's dropless preprocess costs the host what it measured",
          "[schedule]") {
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  // A host-bound layer (Qwen3-30B-A3B, EP 8, 128 tokens): graphing the dispatcher's preprocess
  // takes its host time out of the forward, call for call, and leaves the backward as it was
  // (the preprocess has no gradient). Dropless with the alltoall dispatcher, it is the in-situ
  // profile's 81 calls (yanring/Megatron-MoE-ModelZoo #7); with token drop, the census's 6.
  auto graphed_saves = [](double capacity, double* backward) {
    MoeJob j("qwen3-30b-a3b");
    j.t = {.micro_batch = 1, .global_batch = 8, .seq_len = 128};
    j.t.moe_capacity_factor = capacity;
    j.sw.moe_dispatcher = spec::MoeDispatcher::alltoall;
    j.sw.cuda_graphs = {};
    FlatNetwork net(0);
    schedule::LayerCost eager = schedule::layer_cost(j.spec(), net);
    j.sw.cuda_graphs.moe_preprocess = true;
    schedule::LayerCost graphed = schedule::layer_cost(j.spec(), net);
    REQUIRE(seconds(graphed.forward, schedule::Category::host) > 0);  // still host-bound
    *backward = to_seconds(eager.backward.total()).value() - to_seconds(graphed.backward.total()).value();
    return (to_seconds(eager.forward.total()).value() - to_seconds(graphed.forward.total()).value()) /
           j.cluster.host_torch_op.value();
  };
  double backward = 1;
  CHECK_THAT(graphed_saves(0, &backward), WithinRel(81.0, 1e-6));
  CHECK_THAT(backward, WithinAbs(0, 1e-12));
  CHECK_THAT(graphed_saves(1.0, &backward), WithinRel(6.0, 1e-6));
  CHECK_THAT(backward, WithinAbs(0, 1e-12));
}

TEST_CASE("schedule::fp8_amax_reduction: delayed scaling all-reduces its amaxes once per pass", "[schedule]") {
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  Job j;
  FlatNetwork net(30e-6);
  spec::Parallel par{.tp = 4, .pp = 8, .dp = 16, .zero_stage = 1, .sequence_parallel = true};
  schedule::StepSpec fp8 = j.spec(par, spec::Dtype::fp8);
  fp8.software.fp8_recipe = spec::Fp8Recipe::delayed;
  // The call (30 us on this network) and two kernels: the amaxes' concatenation and the update.
  CHECK_THAT(seconds(schedule::fp8_amax_reduction(fp8, net, 12), schedule::Category::other),
             WithinRel(30e-6 + 2 * j.cal.compute.kernel_overhead.value(), 1e-9));
  // Current scaling and MXFP8 compute their scales from each tensor: nothing to reduce.
  fp8.software.fp8_recipe = spec::Fp8Recipe::current;
  CHECK(schedule::fp8_amax_reduction(fp8, net, 12).segments.empty());
  CHECK(schedule::fp8_amax_reduction(j.spec(par), net, 12).segments.empty());  // fp16
}

TEST_CASE("schedule::layer_cost: current scaling all-reduces the amax of each sequence-parallel gather", "[schedule]") {
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  Job j;
  FlatNetwork net(20e-6);
  spec::Parallel par{.tp = 8, .pp = 8, .dp = 1, .zero_stage = 1, .sequence_parallel = true};
  auto tp_comm = [&](spec::Fp8Recipe r, bool sp) {
    schedule::StepSpec fp8 = j.spec(par, spec::Dtype::fp8);
    fp8.software.fp8_recipe = r;
    fp8.par.sequence_parallel = sp;
    schedule::LayerCost lc = schedule::layer_cost(fp8, net);
    return std::pair{seconds(lc.forward, schedule::Category::tp_comm), seconds(lc.backward, schedule::Category::tp_comm)};
  };
  // A dense layer: the QKV and FC1 inputs forward, the projection's and FC2's output gradients
  // backward -- two 20 us calls each way more than delayed scaling, none without SP.
  auto [cur_f, cur_b] = tp_comm(spec::Fp8Recipe::current, true);
  auto [del_f, del_b] = tp_comm(spec::Fp8Recipe::delayed, true);
  CHECK_THAT(cur_f - del_f, WithinRel(40e-6, 1e-9));
  CHECK_THAT(cur_b - del_b, WithinRel(40e-6, 1e-9));
  auto [nosp_cur_f, nosp_cur_b] = tp_comm(spec::Fp8Recipe::current, false);
  auto [nosp_del_f, nosp_del_b] = tp_comm(spec::Fp8Recipe::delayed, false);
  CHECK(nosp_cur_f == nosp_del_f);
  CHECK(nosp_cur_b == nosp_del_b);
}

TEST_CASE("schedule::head_cost: the LM head stays in bf16 in fp8 and fp4 runs", "[schedule]") {
  // Megatron-Core's output layer is its own ColumnParallelLinear, outside Transformer Engine's fp8
  // autocast: an fp8 run's LM head costs what a bf16 run's does, not the fp8 peak's share.
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  Job j;
  j.cluster = spec::load_cluster(test::source_path("topologies/dgx-h100.json"));
  j.cal = spec::load_calibration(test::source_path("calibration/dgx-h100.json"));
  FlatNetwork net(0);
  spec::Parallel par{.tp = 4, .pp = 8, .dp = 4, .zero_stage = 1, .sequence_parallel = true};
  for (bool backward : {false, true}) {
    double bf16 = seconds(schedule::head_cost(j.spec(par, spec::Dtype::bf16), net, backward), schedule::Category::compute);
    double fp8 = seconds(schedule::head_cost(j.spec(par, spec::Dtype::fp8), net, backward), schedule::Category::compute);
    REQUIRE(bf16 > 0);
    CHECK_THAT(fp8, WithinRel(bf16, 1e-12));
  }
}
