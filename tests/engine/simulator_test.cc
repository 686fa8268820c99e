#include <catch2/catch.hpp>

#include "engine/comm_windows.h"
#include "engine/simulator.h"

using namespace dtsim;
using namespace dtsim::schedule;

namespace {

struct NoNetwork final : engine::NetworkBackend {
  Seconds time(const Comm& c) const override { return Seconds(c.size.value() * 1e-9); }  // 1 GB/s
};

TaskId compute(Graph& g, StreamId s, SimTime d, std::vector<TaskId> deps = {}) {
  Task t{.stream = s, .kind = TaskKind::compute, .cost = g.add_cost({{Category::compute, d}})};
  return g.add_task(t, deps);
}

}  // namespace

TEST_CASE("engine::Simulator: streams serialise, dependencies gate", "[engine]") {
  Graph g;
  StreamId a = g.add_stream(0, "compute"), b = g.add_stream(1, "compute");
  TaskId a1 = compute(g, a, 100);
  TaskId a2 = compute(g, a, 50);
  TaskId b1 = compute(g, b, 10, {a1});
  NoNetwork net;
  auto tl = engine::Simulator(net, 0.0).run(g);
  CHECK(tl.tasks[static_cast<std::size_t>(a2)].start == 100);
  CHECK(tl.tasks[static_cast<std::size_t>(b1)].start == 100);
  CHECK(tl.makespan == 150);
  // Stream b idles 100 ticks waiting for a1 (a compute task: pipeline bubble), then runs 10.
  auto br = engine::attribute(g, tl, b);
  CHECK(br[static_cast<std::size_t>(Category::pp_bubble)] == 100);
  CHECK(br[static_cast<std::size_t>(Category::compute)] == 10);
}

TEST_CASE("engine::Simulator: overlapped communication slows compute", "[engine]") {
  Graph g;
  StreamId c = g.add_stream(0, "compute"), d = g.add_stream(0, "dp");
  Task comm{.stream = d, .kind = TaskKind::comm};
  comm.comm = g.add_comm(Comm{Comm::Op::all_reduce, Group::dp, bytes(1000)});  // 1000 ns = 1e6 ticks at 1 GB/s
  g.add_task(comm);
  TaskId work = compute(g, c, 2'000'000);
  NoNetwork net;
  auto tl = engine::Simulator(net, 0.1).run(g);
  // The comm covers the first 1e6 ticks of the 2e6-tick compute: 10% of 1e6 extra.
  CHECK(tl.tasks[static_cast<std::size_t>(work)].end == 2'100'000);
}

TEST_CASE("engine::Simulator: same input, same output", "[engine]") {
  Graph g;
  std::vector<StreamId> s;
  for (int i = 0; i < 4; ++i) s.push_back(g.add_stream(i, "compute"));
  TaskId prev = -1;
  for (int k = 0; k < 200; ++k) {
    std::vector<TaskId> deps;
    if (prev >= 0) deps.push_back(prev);
    prev = compute(g, s[static_cast<std::size_t>(k % 4)], 10 + k % 7, k % 3 == 0 ? deps : std::vector<TaskId>{});
  }
  NoNetwork net;
  auto t1 = engine::Simulator(net, 0.05).run(g), t2 = engine::Simulator(net, 0.05).run(g);
  REQUIRE(t1.tasks.size() == t2.tasks.size());
  for (std::size_t i = 0; i < t1.tasks.size(); ++i) CHECK(t1.tasks[i].end == t2.tasks[i].end);
}

TEST_CASE("engine::Simulator: a dependency cycle cannot be built", "[engine]") {
  Graph g;
  StreamId a = g.add_stream(0, "compute");
  CHECK_THROWS_AS(compute(g, a, 1, {5}), std::logic_error);
}

TEST_CASE("engine::CommWindows: the time a compute task spends beside communication", "[engine]") {
  // Windows [10, 50) and [30, 40), added out of order; queries in nondecreasing time, as one
  // rank's compute stream makes them.
  engine::CommWindows w;
  w.add(30, 40);
  w.add(10, 50);
  w.add(200, 300);
  CHECK(w.covered_from(0, 100) == 0);    // nothing started yet
  CHECK(w.covered_from(20, 100) == 30);  // [20, 50)
  CHECK(w.covered_from(45, 2) == 2);     // wholly covered
  CHECK(w.covered_from(60, 100) == 0);   // both ended; [200, 300) not started at 60
  CHECK(w.covered_from(250, 100) == 50); // [250, 300)
  CHECK(w.covered_from(400, 10) == 0);
}
