#include <algorithm>

#include <catch2/catch.hpp>

#include "engine/analytical.h"
#include "engine/simulate.h"
#include "schedule/pass_cost.h"
#include "cost/memory.h"
#include <tuple>
#include "spec/calibration.h"
#include "spec/load.h"
#include "spec/stack.h"

using namespace dtsim;
using Catch::Matchers::WithinRel;

namespace {

// Communication costs nothing: what remains is compute and the pipeline's own idle time.
struct FreeNetwork final : engine::NetworkBackend {
  Seconds time(const schedule::Comm&) const override { return Seconds{0}; }
};

// A GPT-like model with a tiny vocabulary, so the embedding and LM head barely unbalance stages.
spec::Model small_model() {
  return spec::Model{.name = "test", .layers = 48, .hidden = 4096, .heads = 32, .kv_heads = 32, .head_dim = 128,
                     .ffn_hidden = 16384, .vocab = 128, .max_position = 2048, .tied_embeddings = true};
}

double bubble_fraction(std::int64_t p, std::int64_t v, std::int64_t m, bool overlap_p2p = true) {
  spec::Model model = small_model();
  spec::Cluster cluster = spec::load_cluster(std::string(DTSIM_SOURCE_DIR) + "/topologies/dgx-a100.json");
  spec::Calibration cal = spec::load_calibration(std::string(DTSIM_SOURCE_DIR) + "/calibration/dgx-a100.json");
  spec::Software sw = spec::load_stack("megatron-lm@2021").software;
  sw.overlap_p2p_comm = overlap_p2p;
  schedule::StepSpec s{&model, &cluster, spec::Parallel{.tp = 1, .pp = p, .dp = 1, .vp = v},
                       spec::Training{.micro_batch = 1, .global_batch = m, .seq_len = 2048}, &cal, sw};
  FreeNetwork net;
  auto r = engine::simulate_step(s, net).result;
  auto at = [&r](schedule::Category c) { return r.breakdown[static_cast<std::size_t>(c)].value(); };
  return at(schedule::Category::pp_bubble) / at(schedule::Category::compute);
}

}  // namespace

TEST_CASE("schedule::build_step: 1F1B bubble fraction (p-1)/m on a compute-only pipeline", "[schedule]") {
  // Narayanan et al. SC'21 sec. 2.2: bubble time / ideal time = (p-1)/m for 1F1B.
  CHECK_THAT(bubble_fraction(4, 1, 8), WithinRel(3.0 / 8.0, 0.05));
  CHECK_THAT(bubble_fraction(8, 1, 32), WithinRel(7.0 / 32.0, 0.05));
}

TEST_CASE("schedule::build_step: interleaving divides the bubble by v", "[schedule]") {
  // SC'21 sec. 2.2.2: (p-1)/(v*m) with v model chunks per stage.
  CHECK_THAT(bubble_fraction(4, 2, 8), WithinRel(3.0 / 16.0, 0.05));
  CHECK_THAT(bubble_fraction(4, 4, 16), WithinRel(3.0 / 64.0, 0.05));
}

TEST_CASE("engine::simulate_step: breakdown sums to the step time, DP size does not change the cost", "[engine]") {
  spec::Model model = spec::load_model(std::string(DTSIM_SOURCE_DIR) + "/models/gpt3-175b.json");
  spec::Cluster cluster = spec::load_cluster(std::string(DTSIM_SOURCE_DIR) + "/topologies/dgx-a100.json");
  spec::Calibration cal = spec::load_calibration(std::string(DTSIM_SOURCE_DIR) + "/calibration/dgx-a100.json");
  auto run = [&](std::int64_t dp) {
    schedule::StepSpec s{&model, &cluster, spec::Parallel{.tp = 8, .pp = 16, .dp = dp, .zero_stage = 1},
                         spec::Training{.micro_batch = 1, .global_batch = 64 * dp, .seq_len = 2048,
                                        .precision = spec::Dtype::fp16},
                         &cal, spec::load_stack("megatron-lm@2021").software};
    engine::AnalyticalNetwork net(cluster, s.par, cal.collectives);
    return engine::simulate_step(s, net);
  };
  auto a = run(8), b = run(128);
  double sum = 0;
  for (Seconds x : a.result.breakdown) sum += x.value();
  CHECK_THAT(sum, WithinRel(a.result.step_time.value(), 1e-12));
  // Scale by symmetry: one representative rank per stage, whatever the data-parallel size. (The
  // graph may even shrink: Megatron's DP bucket is max(40M, 1M x dp) parameters, so fewer buckets.)
  CHECK(b.step.graph.tasks().size() <= a.step.graph.tasks().size());
}

TEST_CASE("schedule::build_step: a p2p transfer starts once the receiver has posted its recv", "[schedule]") {
  spec::Model model = small_model();
  spec::Cluster cluster = spec::load_cluster(std::string(DTSIM_SOURCE_DIR) + "/topologies/dgx-a100.json");
  spec::Calibration cal = spec::load_calibration(std::string(DTSIM_SOURCE_DIR) + "/calibration/dgx-a100.json");
  for (bool overlap : {false, true})
    for (std::int64_t v : {1, 2}) {
      spec::Software sw = spec::load_stack("megatron-lm@2021").software;
      sw.overlap_p2p_comm = overlap;
      schedule::StepSpec s{&model, &cluster, spec::Parallel{.tp = 1, .pp = 4, .dp = 1, .vp = v},
                           spec::Training{.micro_batch = 1, .global_batch = 8, .seq_len = 2048}, &cal, sw};
      FreeNetwork net;
      schedule::StepGraph step = schedule::build_step(s, net);
      const schedule::Graph& g = step.graph;
      INFO("vp " << v << " overlap_p2p_comm " << overlap);
      std::size_t sends = 0, rendezvous = 0, awaited = 0;
      for (std::size_t t = 0; t < g.tasks().size(); ++t) {
        const schedule::Task& task = g.tasks()[t];
        auto kind = task.label.kind;
        if (kind != schedule::Label::Kind::send_activations && kind != schedule::Label::Kind::send_gradients) continue;
        ++sends;
        std::int32_t rank = g.streams()[static_cast<std::size_t>(task.stream)].rank;
        bool producer = false, receiver = false;
        for (schedule::TaskId d : g.deps(static_cast<schedule::TaskId>(t))) {
          const schedule::Task& dt = g.tasks()[static_cast<std::size_t>(d)];
          std::int32_t r = g.streams()[static_cast<std::size_t>(dt.stream)].rank;
          producer |= r == rank && dt.kind == schedule::TaskKind::compute;
          receiver |= r != rank && dt.kind == schedule::TaskKind::compute;
        }
        CHECK(producer);
        rendezvous += receiver ? 1 : 0;
        // Some later pass of the sender waits for the send to complete.
        for (std::size_t u = t + 1; u < g.tasks().size(); ++u) {
          const schedule::Task& later = g.tasks()[u];
          if (later.kind != schedule::TaskKind::compute ||
              g.streams()[static_cast<std::size_t>(later.stream)].rank != rank)
            continue;
          auto deps = g.deps(static_cast<schedule::TaskId>(u));
          if (std::find(deps.begin(), deps.end(), static_cast<schedule::TaskId>(t)) != deps.end()) {
            ++awaited;
            break;
          }
        }
      }
      // 8 micro-batches cross 4v - 1 boundaries each way.
      CHECK(sends == static_cast<std::size_t>(2 * 8 * (4 * v - 1)));
      // Only the receivers' very first forward has no earlier pass to post its recv after.
      CHECK(rendezvous >= sends - 4);
      // All but the last sends of each stage are awaited by a later pass.
      CHECK(awaited >= sends - 8);
    }
}

TEST_CASE("schedule::build_step: DeepSpeed's pipeline sends whole gradients and exchanges one direction at a time",
          "[schedule]") {
  // Megatron: each TP rank sends 1/tp of the b x s x h activation (or its gradient). DeepSpeed's
  // 2021 PipelineEngine sends gradients whole from every TP rank, and its blocking send and recv
  // share the stage pair's stream, so a pass waits for both directions of its step's exchange.
  spec::Model model = small_model();
  spec::Cluster cluster = spec::load_cluster(std::string(DTSIM_SOURCE_DIR) + "/topologies/dgx-a100.json");
  spec::Calibration cal = spec::load_calibration(std::string(DTSIM_SOURCE_DIR) + "/calibration/dgx-a100.json");
  auto sizes = [&](const spec::Software& sw) {
    schedule::StepSpec s{&model, &cluster, spec::Parallel{.tp = 4, .pp = 4, .dp = 1},
                         spec::Training{.micro_batch = 1, .global_batch = 8, .seq_len = 2048}, &cal, sw};
    FreeNetwork net;
    schedule::StepGraph step = schedule::build_step(s, net);
    double fwd = -1, bwd = -1;
    for (const schedule::Task& t : step.graph.tasks()) {
      if (t.label.kind == schedule::Label::Kind::send_activations) fwd = step.graph.comm(t.comm).size.value();
      if (t.label.kind == schedule::Label::Kind::send_gradients) bwd = step.graph.comm(t.comm).size.value();
    }
    return std::pair{fwd, bwd};
  };
  double act = 2048.0 * 4096 * 2 / 4;  // b s h x 2 bytes over 4 TP ranks
  auto [mf, mb] = sizes(spec::load_stack("megatron-lm@2021").software);
  CHECK_THAT(mf, WithinRel(act, 1e-12));
  CHECK_THAT(mb, WithinRel(act, 1e-12));
  spec::Software ds = spec::load_stack("megatron-deepspeed@2021").software;
  REQUIRE(ds.pp_p2p_serial);
  REQUIRE_FALSE(ds.pp_grad_partitioned);
  spec::Software whole = ds;
  whole.pp_p2p_serial = false;
  auto [wf, wb] = sizes(whole);
  CHECK_THAT(wf, WithinRel(act, 1e-12));
  CHECK_THAT(wb, WithinRel(4 * act, 1e-12));
  auto [sf, sb] = sizes(ds);  // each pass waits for the activation and the whole gradient in turn
  CHECK_THAT(sf, WithinRel(5 * act, 1e-12));
  CHECK_THAT(sb, WithinRel(5 * act, 1e-12));
  CHECK(spec::load_stack("megatron-deepspeed@2022").software.pp_grad_partitioned);
  // Megatron-Core sends the whole tensor from every TP rank unless SP already split it.
  spec::Software core = spec::load_stack("megatron-core").software;
  REQUIRE_FALSE(core.pp_scatter_gather);
  auto [cf, cb] = sizes(core);
  CHECK_THAT(cf, WithinRel(4 * act, 1e-12));
  CHECK_THAT(cb, WithinRel(4 * act, 1e-12));
}

namespace {
// Only TP all-gathers take time (1 ms each): what a step spends on them.
struct TpGatherNetwork final : engine::NetworkBackend {
  Seconds time(const schedule::Comm& c) const override {
    return Seconds{c.op == schedule::Comm::Op::all_gather && c.group == schedule::Group::tp ? 1e-3 : 0.0};
  }
};
}  // namespace

TEST_CASE("schedule::build_step: scatter-gather pipelines all-gather what they receive over TP", "[schedule]") {
  // Megatron-LM 2021-22 (--scatter-gather-tensors-in-pipeline): each received piece is rebuilt by
  // an all-gather over the receiver's TP group before its pass -- every forward but the first
  // stage's and every backward but the last stage's. Sequence parallelism needs none.
  spec::Model model = small_model();
  spec::Cluster cluster = spec::load_cluster(std::string(DTSIM_SOURCE_DIR) + "/topologies/dgx-a100.json");
  spec::Calibration cal = spec::load_calibration(std::string(DTSIM_SOURCE_DIR) + "/calibration/dgx-a100.json");
  auto pp_comm = [&](const char* stack, bool sp) {
    spec::Software sw = spec::load_stack(stack).software;
    sw.tp_comm_overlap = false;
    schedule::StepSpec s{&model, &cluster, spec::Parallel{.tp = 4, .pp = 4, .dp = 1, .sequence_parallel = sp},
                         spec::Training{.micro_batch = 1, .global_batch = 8, .seq_len = 2048}, &cal, sw};
    TpGatherNetwork net;
    auto r = engine::simulate_step(s, net).result;
    return r.breakdown[static_cast<std::size_t>(schedule::Category::pp_comm)].value();
  };
  REQUIRE(spec::load_stack("megatron-lm@2021").software.pp_scatter_gather);
  // The critical stage, the first or the last (embedding, LM head), receives one way only: its 8
  // backward (first) or forward (last) passes each wait for one gather.
  CHECK_THAT(pp_comm("megatron-lm@2021", false), WithinRel(8e-3, 1e-6));
  CHECK(pp_comm("megatron-lm@2022", true) == 0.0);
  CHECK(pp_comm("megatron-core", false) == 0.0);
}

TEST_CASE("schedule::build_step: blocking interleaved p2p adds bubble that overlap_p2p_comm hides", "[schedule]") {
  // Without overlap_p2p_comm Megatron exchanges with both neighbours in one blocking call after
  // each backward, so a stage waits for its neighbours to reach the same point; 1F1B's blocking
  // exchanges coincide with its dependencies and cost nothing on a compute-only pipeline.
  CHECK(bubble_fraction(4, 2, 8, false) > 1.05 * bubble_fraction(4, 2, 8, true));
  CHECK_THAT(bubble_fraction(4, 1, 8, false), WithinRel(bubble_fraction(4, 1, 8, true), 1e-9));
}

TEST_CASE("schedule::build_step: an MoE model's leading dense layers and MTP module are priced as such", "[schedule]") {
  // DeepSeek-V3 (3 dense layers, 1 MTP module) on 2 stages: stage 0 holds the dense layers, the
  // last stage the MTP module. Against the same model with every layer MoE and no MTP, stage 0
  // changes by 3 x (dense - MoE layer) and the last stage by one MoE layer and one LM-head pass.
  spec::Model ds = spec::load_model(std::string(DTSIM_SOURCE_DIR) + "/models/deepseek-v3.json");
  spec::Model plain = ds;
  plain.moe_dense_layers = 0;
  plain.mtp_layers = 0;
  spec::Cluster cluster = spec::load_cluster(std::string(DTSIM_SOURCE_DIR) + "/topologies/gb200-nvl72.json");
  spec::Calibration cal = spec::load_calibration(std::string(DTSIM_SOURCE_DIR) + "/calibration/dgx-b200.json");
  auto run = [&](const spec::Model& m) {
    schedule::StepSpec s{&m, &cluster, spec::Parallel{.tp = 1, .pp = 2, .dp = 32, .ep = 32, .etp = 1, .zero_stage = 1},
                         spec::Training{.micro_batch = 1, .global_batch = 128, .seq_len = 4096}, &cal,
                         spec::load_stack("nemo-megatron-bridge").software};
    engine::AnalyticalNetwork net(cluster, s.par, cal.collectives);
    return engine::simulate_step(s, net);
  };
  auto with = run(ds), without = run(plain);
  REQUIRE(with.step.layer.size() == 2);  // the MoE layer, the dense layer
  const schedule::LayerCost &moe = with.step.layer[0], &dense = with.step.layer[1];
  CHECK(dense.forward.total() != moe.forward.total());
  CHECK(without.step.layer.size() == 1);
  CHECK(with.result.step_time.value() != without.result.step_time.value());
}

TEST_CASE("schedule::build_step: expert gradients reduce over the expert-data-parallel group", "[schedule]") {
  // Qwen3-30B-A3B on 64 H100s, DP 64: with EP 8 each expert lives on 8 ranks one node apart, so
  // its gradients cross one NIC per rank (edp ring) instead of riding the dp ring's 8 NICs per
  // node; with EP 64 no rank shares an expert and only the dense gradients are reduced.
  spec::Model m = spec::load_model(std::string(DTSIM_SOURCE_DIR) + "/models/qwen3-30b-a3b.json");
  spec::Cluster cluster = spec::load_cluster(std::string(DTSIM_SOURCE_DIR) + "/topologies/dgx-h100.json");
  spec::Calibration cal = spec::load_calibration(std::string(DTSIM_SOURCE_DIR) + "/calibration/dgx-h100.json");
  spec::Software sw = spec::load_stack("nemo-megatron-bridge").software;
  sw.overlap_grad_reduce = false;  // every reduction exposed after the last backward
  sw.overlap_param_gather = false;
  auto run = [&](std::int64_t ep) {
    schedule::StepSpec s{&m, &cluster, spec::Parallel{.tp = 1, .pp = 1, .dp = 64, .ep = ep, .etp = 1, .zero_stage = 1},
                         spec::Training{.micro_batch = 1, .global_batch = 64, .seq_len = 4096}, &cal, sw};
    engine::AnalyticalNetwork net(cluster, s.par, cal.collectives);
    auto sim = engine::simulate_step(s, net);
    // What the graph's dp-stream collectives move, by group.
    double edp_bytes = 0, dp_bytes = 0;
    for (const schedule::Task& t : sim.step.graph.tasks()) {
      if (t.kind != schedule::TaskKind::comm) continue;
      const schedule::Comm& c = sim.step.graph.comm(t.comm);
      if (c.group == schedule::Group::edp) edp_bytes += c.size.value();
      if (c.group == schedule::Group::dp_cp) dp_bytes += c.size.value();
    }
    return std::tuple{sim.result.breakdown[static_cast<std::size_t>(schedule::Category::dp_comm_exposed)].value(),
                      edp_bytes, dp_bytes};
  };
  auto [ep8, ep8_edp, ep8_dp] = run(8);
  auto [ep64, ep64_edp, ep64_dp] = run(64);
  cost::LocalLayerParams lp = cost::local_layer_params(m, spec::Parallel{.tp = 1, .dp = 64, .ep = 8, .etp = 1});
  // A reduce-scatter of the gradients (in the grad type) and an all-gather of the 16-bit
  // parameters of every expert the rank holds.
  double per_param = spec::dtype_bytes(spec::Training{}.grad_dtype) + 2.0;
  CHECK_THAT(ep8_edp, WithinRel(per_param * lp.expert * static_cast<double>(m.layers), 1e-9));
  CHECK(ep64_edp == 0);
  CHECK(ep8_dp == ep64_dp);  // the dense part does not depend on ep
  // 8 x the experts per rank at EP 8, over one NIC instead of eight: far more exposed traffic.
  CHECK(ep8 > 4 * ep64);
}

TEST_CASE("schedule::build_step: up to layers + 2 virtual stages, the embedding's and the loss's chunks empty", "[schedule]") {
  // 46 layers on pp 4 x vp 12 = 48 virtual stages (Megatron-Core --account-for-embedding-in-
  // pipeline-split --account-for-loss-in-pipeline-split): stages of 11, 12, 12 and 11 layers, the
  // first and last stage each with a chunk that holds no transformer layer.
  spec::Model model = small_model();
  model.layers = 46;
  spec::Cluster cluster = spec::load_cluster(std::string(DTSIM_SOURCE_DIR) + "/topologies/dgx-a100.json");
  spec::Calibration cal = spec::load_calibration(std::string(DTSIM_SOURCE_DIR) + "/calibration/dgx-a100.json");
  spec::Software sw = spec::load_stack("megatron-lm@2021").software;
  auto compute = [&](std::int64_t vp) {
    schedule::StepSpec s{&model, &cluster, spec::Parallel{.tp = 1, .pp = 4, .dp = 1, .vp = vp},
                         spec::Training{.micro_batch = 1, .global_batch = 8, .seq_len = 2048}, &cal, sw};
    FreeNetwork net;
    auto r = engine::simulate_step(s, net).result;
    return r.breakdown[static_cast<std::size_t>(schedule::Category::compute)].value();
  };
  // The critical stage holds 12 layers either way: the same compute as with 2 chunks of 6 (chunks
  // of zero layers add no work).
  CHECK_THAT(compute(12), WithinRel(compute(2), 0.01));
  CHECK(compute(12) > 0);
}

TEST_CASE("schedule::build_step: a chunk's first forward waits for its parameters bucket by bucket", "[schedule]") {
  // Megatron-Core's distributed optimizer with overlap_param_gather: the first bucket's all-gather
  // is launched at the step's start (zero_grad), and each module's forward pre-hook waits for its
  // bucket's gather and then dispatches the next one's (finish_param_sync,
  // next_param_gather_bucket_group). Nemotron-4 15B as its report trained it: TP 8, DP 96, four
  // sequences per replica (arXiv:2402.16819 Table 2); the buckets hold max(40M, 1M x dp) = 96M
  // parameters, so ~1.96B local parameters make 20 of them.
  spec::Model model = spec::load_model(std::string(DTSIM_SOURCE_DIR) + "/models/nemotron4-15b.json");
  spec::Cluster cluster = spec::load_cluster(std::string(DTSIM_SOURCE_DIR) + "/topologies/dgx-h100.json");
  spec::Calibration cal = spec::load_calibration(std::string(DTSIM_SOURCE_DIR) + "/calibration/dgx-h100.json");
  schedule::StepSpec s{&model, &cluster,
                       spec::Parallel{.tp = 8, .pp = 1, .dp = 96, .zero_stage = 1, .sequence_parallel = true},
                       spec::Training{.micro_batch = 1, .global_batch = 384, .seq_len = 4096}, &cal,
                       spec::load_stack("megatron-core").software};
  engine::AnalyticalNetwork net(cluster, s.par, cal.collectives);
  auto sim = engine::simulate_step(s, net);
  const auto& tasks = sim.step.graph.tasks();
  std::vector<std::size_t> gathers, pieces;
  double gathered = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const schedule::Label& l = tasks[i].label;
    if (l.kind == schedule::Label::Kind::param_gather) {
      gathers.push_back(i);
      gathered += sim.step.graph.comm(tasks[i].comm).size.value();
    }
    if (l.kind == schedule::Label::Kind::forward && l.microbatch == 0) pieces.push_back(i);
  }
  REQUIRE(gathers.size() == 20);
  REQUIRE(pieces.size() == gathers.size());
  // The gathers move the whole of the rank's 16-bit parameters, as one gather did.
  cost::LocalLayerParams lp = cost::local_layer_params(model, s.par);
  CHECK(gathered > 2.0 * lp.total() * static_cast<double>(model.layers));
  auto& tl = sim.timeline.tasks;
  for (std::size_t k = 0; k < pieces.size(); ++k) {
    INFO("bucket " << k);
    CHECK(tl[pieces[k]].start >= tl[gathers[k]].end);  // each piece waits for its own bucket
  }
  // The forward starts once the first bucket is in, long before the last one is.
  CHECK(tl[pieces[0]].start == tl[gathers[0]].end);
  CHECK(tl[pieces[0]].start * 10 < tl[gathers.back()].end);
  // Later micro-batches' forwards are one task each.
  std::size_t later = 0;
  for (const schedule::Task& t : tasks)
    if (t.label.kind == schedule::Label::Kind::forward && t.label.microbatch > 0) {
      ++later;
      CHECK(t.label.part == -1);
    }
  CHECK(later == 3);
}

TEST_CASE("schedule::build_step: fp8 weights are quantized once per step, on each chunk's first micro-batch", "[schedule]") {
  // Transformer Engine refreshes a Linear's fp8 weight copy when is_first_microbatch is True and
  // reuses it for the step's other micro-batches (module/linear.py, get_weight_workspace;
  // Megatron-Core's set_is_first_microbatch): one quantization per chunk per step.
  spec::Model model = spec::load_model(std::string(DTSIM_SOURCE_DIR) + "/models/llama3-70b.json");
  spec::Cluster cluster = spec::load_cluster(std::string(DTSIM_SOURCE_DIR) + "/topologies/dgx-h100.json");
  spec::Calibration cal = spec::load_calibration(std::string(DTSIM_SOURCE_DIR) + "/calibration/dgx-h100.json");
  spec::Software sw = spec::load_stack("megatron-core").software;
  sw.fp8_recipe = spec::Fp8Recipe::current;
  spec::Training train{.micro_batch = 1, .global_batch = 8, .seq_len = 4096, .precision = spec::Dtype::fp8};
  schedule::StepSpec s{&model, &cluster,
                       spec::Parallel{.tp = 8, .pp = 2, .dp = 1, .vp = 2, .zero_stage = 1, .sequence_parallel = true},
                       train, &cal, sw};
  auto busy = [](const engine::Simulation& sim, std::int32_t chunk, std::int32_t mb) {
    SimTime t = 0;
    const schedule::Graph& g = sim.step.graph;
    for (const schedule::Task& task : g.tasks())
      if (task.label.kind == schedule::Label::Kind::forward && task.label.chunk == chunk && task.label.microbatch == mb &&
          task.stream == sim.step.compute[0])
        t += g.duration(task);
    return to_seconds(t).value();
  };
  FreeNetwork net;
  auto sim = engine::simulate_step(s, net);
  // Stage 0 holds 20 layers in each of its 2 chunks (80 layers over pp 2 x vp 2), all in fp8 (no
  // bf16 edge layers set here); a layer's weights are QKV, projection, FC1 and FC2.
  cost::LocalLayerParams lp = cost::local_layer_params(model, s.par);
  double tensors_per_layer = 4.0;
  for (std::int32_t chunk = 0; chunk < 2; ++chunk) {
    INFO("chunk " << chunk);
    double extra = busy(sim, chunk, 0) - busy(sim, chunk, 1);
    double expected = schedule::weight_quantize_time(s, lp.total() * 20.0, tensors_per_layer * 20.0).value();
    CHECK(expected > 0);
    CHECK_THAT(extra, WithinRel(expected, 1e-6));
    CHECK(busy(sim, chunk, 1) == busy(sim, chunk, 3));  // the other micro-batches reuse the copy
  }
  // 16-bit runs quantize nothing.
  schedule::StepSpec bf16 = s;
  bf16.train.precision = spec::Dtype::bf16;
  CHECK(schedule::weight_quantize_time(bf16, 1e9, 10).value() == 0);
}

TEST_CASE("schedule::build_step: ZeRO-3 reduces the layers in their passes, the embedding at the step's ends", "[schedule]") {
  // Under ZeRO-3 / FSDP each layer's gradients are reduce-scattered inside its backward (the pass
  // costs), so the last backward adds no gradient buckets; what remains is FSDP's root unit -- the
  // word embedding and final norm -- gathered before the first forward and reduce-scattered after
  // the last backward, when its gradients are complete. Llama 3 8B on 8 H100s, FSDP1, two
  // micro-batches.
  spec::Model model = spec::load_model(std::string(DTSIM_SOURCE_DIR) + "/models/llama3-8b.json");
  spec::Cluster cluster = spec::load_cluster(std::string(DTSIM_SOURCE_DIR) + "/topologies/dgx-h100.json");
  spec::Calibration cal = spec::load_calibration(std::string(DTSIM_SOURCE_DIR) + "/calibration/dgx-h100.json");
  schedule::StepSpec s{&model, &cluster, spec::Parallel{.tp = 1, .pp = 1, .dp = 8, .zero_stage = 3},
                       spec::Training{.micro_batch = 1, .global_batch = 16, .seq_len = 4096}, &cal,
                       spec::load_stack("pytorch-fsdp@fsdp1").software};
  s.train.grad_dtype = spec::Dtype::fp32;
  engine::AnalyticalNetwork net(cluster, s.par, cal.collectives);
  auto sim = engine::simulate_step(s, net);
  const auto& tasks = sim.step.graph.tasks();
  const auto& tl = sim.timeline.tasks;
  double extras = cost::non_layer_params(model, s.par, 0);
  std::size_t gathers = 0, reduces = 0, buckets = 0;
  double first_forward = -1, last_backward = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const schedule::Label& l = tasks[i].label;
    if (l.kind == schedule::Label::Kind::grad_bucket) ++buckets;
    if (l.kind == schedule::Label::Kind::forward && first_forward < 0) first_forward = static_cast<double>(tl[i].start);
    if (l.kind == schedule::Label::Kind::backward) last_backward = std::max(last_backward, static_cast<double>(tl[i].end));
  }
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const schedule::Label& l = tasks[i].label;
    if (l.kind == schedule::Label::Kind::param_gather) {
      ++gathers;
      CHECK_THAT(sim.step.graph.comm(tasks[i].comm).size.value(), WithinRel(2.0 * extras, 1e-9));
      CHECK(static_cast<double>(tl[i].end) <= first_forward);
    }
    if (l.kind == schedule::Label::Kind::grad_reduce) {
      ++reduces;
      CHECK_THAT(sim.step.graph.comm(tasks[i].comm).size.value(), WithinRel(4.0 * extras, 1e-9));
      CHECK(static_cast<double>(tl[i].start) >= last_backward);
    }
  }
  CHECK(buckets == 0);
  CHECK(gathers == 1);
  CHECK(reduces == 1);
}
