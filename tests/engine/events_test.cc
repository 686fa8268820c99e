#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include "engine/analytical.h"
#include "engine/events.h"
#include "engine/simulate.h"
#include "engine/simulator.h"
#include "spec/calibration.h"
#include "spec/load.h"
#include "spec/stack.h"

using namespace dtsim;

namespace {

// The step of `par` on `model` and `cluster`, run by the longest-path pass and by the
// event-driven engine over the analytical network: every task's start, end, transfer time and
// overlap slowdown must be the same picosecond.
void same_timelines(const std::string& model, const std::string& cluster, spec::Parallel par, std::int64_t m,
                    spec::Dtype precision, const std::string& stack) {
  std::string root = DTSIM_SOURCE_DIR;
  spec::Model mo = spec::load_model(root + "/models/" + model + ".json");
  spec::Cluster c = spec::load_cluster(root + "/topologies/" + cluster + ".json");
  spec::Calibration cal = spec::load_calibration(c.calibration);
  spec::Training t{.micro_batch = 1, .global_batch = m * par.dp, .seq_len = 4096, .precision = precision};
  schedule::StepSpec s{&mo, &c, par, t, &cal, spec::load_stack(stack).software};
  engine::AnalyticalNetwork net(c, par, cal.collectives);
  schedule::StepGraph g = schedule::build_step(s, net);
  engine::Timeline fast, events;
  engine::Simulator(net, cal.compute.overlap_slowdown).run(g.graph, fast);
  engine::PricedTransfers priced(net);
  engine::EventSimulator sim(cal.compute.overlap_slowdown);
  sim.run(g.graph, priced, events);
  INFO(model << " tp " << par.tp << " pp " << par.pp << " vp " << par.vp << " dp " << par.dp << " zero "
             << par.zero_stage << " tasks " << g.graph.tasks().size());
  REQUIRE(events.tasks.size() == fast.tasks.size());
  std::size_t differ = 0;
  for (std::size_t i = 0; i < fast.tasks.size(); ++i) {
    const auto &a = fast.tasks[i], &b = events.tasks[i];
    differ += a.start != b.start || a.end != b.end || a.comm != b.comm || a.contention != b.contention;
  }
  CHECK(differ == 0);
  CHECK(events.makespan == fast.makespan);
  CHECK(sim.events() == 2 * static_cast<std::int64_t>(fast.tasks.size()));
}

}  // namespace

TEST_CASE("engine::EventSimulator: identical to the longest-path pass on the analytical network", "[engine]") {
  same_timelines("llama3-8b", "dgx-h100", {.tp = 1, .pp = 1, .dp = 8, .zero_stage = 1}, 4, spec::Dtype::bf16,
                 "megatron-core");
  same_timelines("llama3-70b", "dgx-h100",
                 {.tp = 4, .pp = 4, .dp = 4, .cp = 2, .vp = 5, .zero_stage = 1, .sequence_parallel = true}, 16,
                 spec::Dtype::fp8, "nemo@24.11");
  same_timelines("gpt3-175b", "dgx-a100", {.tp = 8, .pp = 16, .dp = 4, .zero_stage = 1}, 32, spec::Dtype::fp16,
                 "megatron-lm@2021");
  same_timelines("llama3-8b", "dgx-a100", {.tp = 2, .pp = 2, .dp = 16, .zero_stage = 3}, 8, spec::Dtype::bf16,
                 "pytorch-fsdp");
  same_timelines("qwen3-30b-a3b", "dgx-h100", {.tp = 1, .pp = 2, .dp = 8, .ep = 8, .etp = 1, .vp = 6, .zero_stage = 1},
                 8, spec::Dtype::bf16, "nemo-megatron-bridge@25.11");
}

TEST_CASE("engine::EventSimulator: a cycle that can never start is an error", "[engine]") {
  // Two streams whose first tasks each wait for the other's second (impossible to build through
  // Graph, which only takes dependencies on earlier tasks): a Transfers that never completes
  // stands in, leaving the comm task forever running.
  struct Stuck final : engine::Transfers {
    void start(const schedule::Graph&, schedule::TaskId, SimTime) override {}
    SimTime projected_end(schedule::TaskId) const override { return engine::kNever - 1; }
    SimTime advance(SimTime, std::vector<schedule::TaskId>&) override { return engine::kNever; }
  } stuck;
  schedule::Graph g;
  auto s = g.add_stream(0, "comm");
  schedule::Task t;
  t.stream = s;
  t.kind = schedule::TaskKind::comm;
  t.comm = g.add_comm({});
  g.add_task(t);
  engine::Timeline tl;
  CHECK_THROWS_AS(engine::EventSimulator(0.0).run(g, stuck, tl), std::logic_error);
}
