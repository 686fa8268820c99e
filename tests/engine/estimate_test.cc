#include <catch2/catch.hpp>

#include "cost/compute.h"
#include "engine/analytical.h"
#include "engine/simulate.h"
#include "spec/calibration.h"
#include "spec/load.h"
#include "spec/stack.h"

using namespace dtsim;
using Catch::Matchers::WithinRel;

namespace {

struct Setup {
  spec::Model model;
  spec::Cluster cluster;
  spec::Calibration cal;
};

// The software of the A100 runs these cases come from: Megatron-LM of 2021.
spec::Software a100_stack() { return spec::load_stack("megatron-lm@2021").software; }

Setup gpt3_a100() {
  std::string root = DTSIM_SOURCE_DIR;
  Setup s{spec::load_model(root + "/models/gpt3-175b.json"), spec::load_cluster(root + "/topologies/dgx-a100.json"),
          spec::load_calibration(root + "/calibration/dgx-a100.json")};
  return s;
}

// Exact simulation and the two-point extrapolation the planner uses, on the same step.
void compare(const Setup& st, spec::Parallel par, std::int64_t m, std::int64_t mbs, spec::Recompute rc) {
  spec::Training t{.micro_batch = mbs, .global_batch = m * mbs * par.dp, .seq_len = 2048,
                   .recompute = rc, .precision = spec::Dtype::fp16};
  schedule::StepSpec s{&st.model, &st.cluster, par, t, &st.cal, a100_stack()};
  engine::AnalyticalNetwork net(st.cluster, par, st.cal.collectives);
  auto exact = engine::simulate_step(s, net).result;
  auto fast = engine::estimate_step(s, net, 0);
  INFO("tp " << par.tp << " pp " << par.pp << " vp " << par.vp << " dp " << par.dp << " m " << m);
  // Steady-state 1F1B adds the same work per micro-batch: the extrapolation is exact up to
  // picosecond rounding of the clock.
  CHECK_THAT(fast.step_time.value(), WithinRel(exact.step_time.value(), 1e-6));
  for (std::size_t c = 0; c < schedule::kCategories; ++c)
    CHECK(std::abs(fast.breakdown[c].value() - exact.breakdown[c].value()) <= 1e-6 * exact.step_time.value());
  CHECK_THAT(fast.mfu, WithinRel(exact.mfu, 1e-6));
  CHECK_THAT(fast.hfu, WithinRel(exact.hfu, 1e-6));
  CHECK(fast.microbatches == exact.microbatches);
}

}  // namespace

TEST_CASE("engine::estimate_step: extrapolation equals the exact simulation", "[engine]") {
  Setup st = gpt3_a100();
  compare(st, {.tp = 8, .pp = 16, .dp = 8, .zero_stage = 1}, 192, 1, spec::Recompute::none);
  compare(st, {.tp = 8, .pp = 8, .dp = 16, .vp = 3, .zero_stage = 1, .sequence_parallel = true}, 96, 1,
          spec::Recompute::selective);
  compare(st, {.tp = 4, .pp = 4, .dp = 64, .vp = 24, .zero_stage = 2, .sequence_parallel = true}, 48, 2,
          spec::Recompute::full);
  compare(st, {.tp = 2, .pp = 32, .dp = 16, .zero_stage = 0}, 96, 1, spec::Recompute::full);
  compare(st, {.tp = 8, .pp = 2, .dp = 64, .zero_stage = 3, .sequence_parallel = true}, 40, 1, spec::Recompute::full);
  compare(st, {.tp = 1, .pp = 64, .dp = 16, .zero_stage = 1}, 96, 1, spec::Recompute::full);
  compare(st, {.tp = 4, .pp = 16, .dp = 16, .vp = 6, .zero_stage = 1, .sequence_parallel = true}, 96, 1,
          spec::Recompute::selective);
}

TEST_CASE("engine::simulate_step: kernels run at the pace of the job's slowest GPU", "[engine]") {
  Setup st = gpt3_a100();
  auto run = [&st](double spread, std::int64_t dp) {
    spec::Calibration cal = st.cal;
    cal.compute.speed_spread = spread;
    spec::Parallel par{.tp = 8, .pp = 4, .dp = dp, .zero_stage = 1};
    spec::Training t{.micro_batch = 1, .global_batch = 16 * dp, .seq_len = 2048, .precision = spec::Dtype::fp16};
    schedule::StepSpec s{&st.model, &st.cluster, par, t, &cal, a100_stack()};
    engine::AnalyticalNetwork net(st.cluster, par, cal.collectives);
    return engine::simulate_step(s, net).result;
  };
  auto compute = [](const engine::StepResult& r) {
    return r.breakdown[static_cast<std::size_t>(schedule::Category::compute)].value();
  };
  engine::StepResult even = run(0.0, 16), spread = run(0.02, 16);
  CHECK(even.pace == 1);
  CHECK_THAT(spread.pace, WithinRel(cost::slowest_gpu_pace(0.02, 8 * 4 * 16), 1e-12));
  // Every kernel stretches by the pace; collectives do not.
  CHECK_THAT(compute(spread), WithinRel(compute(even) * spread.pace, 1e-6));
  CHECK(spread.step_time.value() < even.step_time.value() * spread.pace);
  // More GPUs, a slower slowest one.
  CHECK(run(0.02, 64).pace > spread.pace);
  CHECK(run(0.0, 64).pace == 1);
}
