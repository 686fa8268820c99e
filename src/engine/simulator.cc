#include "engine/simulator.h"

#include <algorithm>
#include <queue>
#include <stdexcept>

namespace dtsim::engine {
namespace {

using schedule::Category;
using schedule::Graph;
using schedule::Task;
using schedule::TaskId;
using schedule::TaskKind;

struct Pending {
  SimTime start;
  std::uint64_t seq;
  TaskId task;
  bool operator>(const Pending& o) const { return start != o.start ? start > o.start : seq > o.seq; }
};

// Running communication kernels, as [start, end) intervals, pruned as time advances.
class CommWindows {
 public:
  void add(SimTime start, SimTime end) { windows_.emplace_back(start, end); }
  /// Time in [t, t + d) covered by windows that started at or before t.
  [[nodiscard]] SimTime covered_from(SimTime t, SimTime d) {
    std::erase_if(windows_, [t](const auto& w) { return w.second <= t; });
    SimTime reach = t;
    for (const auto& w : windows_) {
      if (w.first <= t) reach = std::max(reach, w.second);
    }
    return std::min(d, reach - t);
  }

 private:
  std::vector<std::pair<SimTime, SimTime>> windows_;
};

// Reverse edges in compressed rows: dependents of task t are pool[begin[t] .. begin[t+1]).
struct Dependents {
  std::vector<std::int32_t> begin;
  std::vector<TaskId> pool;
  [[nodiscard]] std::span<const TaskId> of(TaskId t) const {
    auto i = static_cast<std::size_t>(t);
    return {pool.data() + begin[i], static_cast<std::size_t>(begin[i + 1] - begin[i])};
  }
};

// Builds the reverse edges and, per task, unfinished dependencies plus an unfinished stream predecessor.
Dependents reverse_edges(const Graph& g, std::vector<std::int32_t>& waiting) {
  const std::size_t n = g.tasks().size();
  Dependents d;
  d.begin.assign(n + 1, 0);
  waiting.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    auto deps = g.deps(static_cast<TaskId>(i));
    for (TaskId x : deps) ++d.begin[static_cast<std::size_t>(x) + 1];
    waiting[i] = static_cast<std::int32_t>(deps.size()) + (g.position(static_cast<TaskId>(i)) > 0 ? 1 : 0);
  }
  for (std::size_t i = 0; i < n; ++i) d.begin[i + 1] += d.begin[i];
  d.pool.resize(static_cast<std::size_t>(d.begin[n]));
  std::vector<std::int32_t> fill(d.begin.begin(), d.begin.end() - 1);
  for (std::size_t i = 0; i < n; ++i)
    for (TaskId x : g.deps(static_cast<TaskId>(i))) d.pool[static_cast<std::size_t>(fill[static_cast<std::size_t>(x)]++)] = static_cast<TaskId>(i);
  return d;
}

}  // namespace

Timeline Simulator::run(const Graph& g) const {
  const auto& tasks = g.tasks();
  const std::size_t n = tasks.size();
  Timeline tl;
  tl.tasks.assign(n, {});
  std::vector<std::int32_t> waiting;
  Dependents dependents = reverse_edges(g, waiting);
  std::vector<SimTime> ready(n, 0);
  std::vector<Pending> heap;
  heap.reserve(g.streams().size() * 2 + 16);
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> queue(std::greater<>{}, std::move(heap));
  std::uint64_t seq = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (waiting[i] == 0) queue.push({0, seq++, static_cast<TaskId>(i)});
  auto release = [&](TaskId t, SimTime at) {
    auto u = static_cast<std::size_t>(t);
    ready[u] = std::max(ready[u], at);
    if (--waiting[u] == 0) queue.push({ready[u], seq++, t});
  };
  CommWindows comm;
  std::size_t done = 0;
  while (!queue.empty()) {
    Pending p = queue.top();
    queue.pop();
    const Task& task = tasks[static_cast<std::size_t>(p.task)];
    TaskTiming& timing = tl.tasks[static_cast<std::size_t>(p.task)];
    SimTime d = g.duration(task);
    if (task.kind == TaskKind::comm) {
      timing.comm = to_sim_time(network_.time(task.comm));
      d += timing.comm;
    }
    if (task.kind == TaskKind::compute && overlap_slowdown_ > 0 && d > 0)
      timing.contention = static_cast<SimTime>(static_cast<double>(comm.covered_from(p.start, d)) * overlap_slowdown_);
    timing.start = p.start;
    timing.end = p.start + d + timing.contention;
    if (task.kind == TaskKind::comm && d > 0) comm.add(timing.start, timing.end);
    tl.makespan = std::max(tl.makespan, timing.end);
    ++done;
    const auto& stream = g.stream_tasks(task.stream);
    auto next = static_cast<std::size_t>(g.position(p.task)) + 1;
    if (next < stream.size()) release(stream[next], timing.end);
    for (TaskId t : dependents.of(p.task)) release(t, timing.end);
  }
  if (done != n) throw std::logic_error("engine: dependency cycle, " + std::to_string(n - done) + " tasks never ran");
  return tl;
}

Breakdown attribute(const Graph& g, const Timeline& tl, schedule::StreamId stream) {
  Breakdown b{};
  auto add = [&b](Category c, SimTime t) { b[static_cast<std::size_t>(c)] += t; };
  const auto& tasks = g.tasks();
  SimTime cursor = 0;
  for (TaskId id : g.stream_tasks(stream)) {
    const Task& task = tasks[static_cast<std::size_t>(id)];
    const TaskTiming& t = tl.tasks[static_cast<std::size_t>(id)];
    if (t.start > cursor) {
      // The dependency that finished last is the one the stream waited for.
      TaskId binding = -1;
      for (TaskId d : g.deps(id)) {
        if (binding < 0 || tl.tasks[static_cast<std::size_t>(d)].end > tl.tasks[static_cast<std::size_t>(binding)].end)
          binding = d;
      }
      SimTime gap = t.start - cursor;
      Category c = binding < 0 ? Category::other : tasks[static_cast<std::size_t>(binding)].wait_category;
      if (c == Category::pp_comm) {
        // Only the part of the gap during which the transfer ran is communication.
        const TaskTiming& bt = tl.tasks[static_cast<std::size_t>(binding)];
        SimTime comm = std::clamp<SimTime>(bt.end - std::max(bt.start, cursor), 0, gap);
        add(Category::pp_comm, comm);
        add(Category::pp_bubble, gap - comm);
      } else {
        add(c, gap);
      }
    }
    for (const schedule::Segment& s : g.segments(task)) add(s.category, s.duration);
    if (t.comm > 0) add(task.comm_category, t.comm);
    // Compute slowed by concurrent communication kernels is time lost to (mostly DP) communication.
    if (t.contention > 0) add(Category::dp_comm_exposed, t.contention);
    cursor = t.end;
  }
  return b;
}

}  // namespace dtsim::engine
