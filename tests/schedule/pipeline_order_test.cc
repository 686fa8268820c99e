#include <catch2/catch.hpp>

#include <map>

#include "schedule/pipeline_order.h"

using namespace dtsim;
using schedule::PassRef;
using schedule::stage_order;
using spec::PipelineSchedule;

namespace {

// Largest number of (chunk, micro-batch) forwards whose backward has not run yet.
std::int64_t max_in_flight(const std::vector<PassRef>& order) {
  std::int64_t live = 0, peak = 0;
  for (const PassRef& p : order) {
    live += p.forward ? 1 : -1;
    peak = std::max(peak, live);
  }
  return peak;
}

}  // namespace

TEST_CASE("schedule::stage_order: every pass once, forward before its backward", "[schedule]") {
  for (auto sched : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b, PipelineSchedule::interleaved}) {
    std::int64_t p = 4, v = sched == PipelineSchedule::interleaved ? 3 : 1, m = 8;
    for (std::int64_t stage = 0; stage < p; ++stage) {
      auto order = stage_order(sched, p, v, m, stage);
      REQUIRE(order.size() == static_cast<std::size_t>(2 * m * v));
      std::map<std::pair<std::int64_t, std::int64_t>, int> seen;
      for (const PassRef& r : order) {
        auto& s = seen[{r.chunk, r.microbatch}];
        if (r.forward) CHECK(s == 0);
        else CHECK(s == 1);
        s += 1;
      }
      CHECK(seen.size() == static_cast<std::size_t>(m * v));
    }
  }
}

TEST_CASE("schedule::stage_order: 1F1B keeps at most p - stage micro-batches in flight", "[schedule]") {
  // Narayanan et al. SC'21 sec. 2.2.1: stage i holds at most p - i in-flight micro-batches.
  std::int64_t p = 8, m = 32;
  for (std::int64_t stage = 0; stage < p; ++stage)
    CHECK(max_in_flight(stage_order(PipelineSchedule::one_f_one_b, p, 1, m, stage)) == p - stage);
  // GPipe keeps all m.
  CHECK(max_in_flight(stage_order(PipelineSchedule::gpipe, p, 1, m, 0)) == m);
}

TEST_CASE("schedule::stage_order: Megatron interleaved chunk order", "[schedule]") {
  // p = 2, v = 2, m = 4: forward k runs chunk (k mod 4) div 2 on micro-batch (k div 4)*2 + k mod 2;
  // stage 0 warm-up (p-1)*2 + (v-1)*p = 4 passes.
  auto order = stage_order(PipelineSchedule::interleaved, 2, 2, 4, 0);
  std::vector<PassRef> warmup(order.begin(), order.begin() + 4);
  CHECK(warmup == std::vector<PassRef>{{true, 0, 0}, {true, 0, 1}, {true, 1, 0}, {true, 1, 1}});
  CHECK(order[5] == PassRef{false, 1, 0});  // first backward runs the last chunk
}
