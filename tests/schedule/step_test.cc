#include <catch2/catch.hpp>

#include "engine/analytical.h"
#include "engine/simulate.h"
#include "spec/calibration.h"
#include "spec/load.h"

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

double bubble_fraction(std::int64_t p, std::int64_t v, std::int64_t m) {
  spec::Model model = small_model();
  spec::Cluster cluster = spec::load_cluster(std::string(DTSIM_SOURCE_DIR) + "/topologies/dgx-a100.json");
  spec::Calibration cal = spec::load_calibration(std::string(DTSIM_SOURCE_DIR) + "/calibration/dgx-a100.json");
  schedule::StepSpec s{&model, &cluster, spec::Parallel{.tp = 1, .pp = p, .dp = 1, .vp = v},
                       spec::Training{.micro_batch = 1, .global_batch = m, .seq_len = 2048}, &cal, cal.software};
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
                         &cal, cal.software};
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
