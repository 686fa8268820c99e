#include "engine/simulator.h"

#include "engine/comm_windows.h"

#include <algorithm>
#include <stdexcept>

namespace dtsim::engine {
namespace {

using schedule::Category;
using schedule::Graph;
using schedule::Task;
using schedule::TaskId;
using schedule::TaskKind;

}  // namespace

Timeline Simulator::run(const Graph& g) const {
  Timeline tl;
  run(g, tl);
  return tl;
}

void Simulator::run(const Graph& g, Timeline& tl) const {
  // Tasks only depend on tasks added before them, so id order is a topological order: one pass
  // computes start = max(end of the stream's previous task, ends of the dependencies), the
  // longest-path times an event-ordered simulation yields. Communication on a rank is always
  // added after the compute it follows, so when a compute task is reached every comm kernel
  // that started on its rank before it is already known, as the overlap model needs.
  const auto& tasks = g.tasks();
  const std::size_t n = tasks.size();
  tl.makespan = 0;
  tl.tasks.assign(n, {});
  std::vector<SimTime> stream_free(g.streams().size(), 0);
  std::vector<std::int32_t> rank_of;  // rank of each stream
  rank_of.reserve(g.streams().size());
  std::int32_t ranks = 0;
  for (const auto& st : g.streams()) {
    rank_of.push_back(st.rank);
    ranks = std::max(ranks, st.rank + 1);
  }
  std::vector<CommWindows> comm(static_cast<std::size_t>(ranks));  // per rank: comm slows its own GPU only
  std::vector<SimTime> priced(g.comm_count(), -1);                  // each distinct collective priced once
  for (std::size_t i = 0; i < n; ++i) {
    const Task& task = tasks[i];
    TaskTiming& timing = tl.tasks[i];
    SimTime start = stream_free[static_cast<std::size_t>(task.stream)];
    for (TaskId d : g.deps(static_cast<TaskId>(i))) start = std::max(start, tl.tasks[static_cast<std::size_t>(d)].end);
    SimTime d = g.duration(task);
    if (task.kind == TaskKind::comm && task.comm >= 0) {
      SimTime& p = priced[static_cast<std::size_t>(task.comm)];
      if (p < 0) p = to_sim_time(network_.time(g.comm(task.comm)));
      timing.comm = p;
      d += timing.comm;
    }
    auto& windows = comm[static_cast<std::size_t>(rank_of[static_cast<std::size_t>(task.stream)])];
    if (task.kind == TaskKind::compute && overlap_slowdown_ > 0 && d > 0)
      timing.contention = static_cast<SimTime>(static_cast<double>(windows.covered_from(start, d)) * overlap_slowdown_);
    timing.start = start;
    timing.end = start + d + timing.contention;
    if (task.kind == TaskKind::comm && d > 0) windows.add(timing.start, timing.end);
    stream_free[static_cast<std::size_t>(task.stream)] = timing.end;
    tl.makespan = std::max(tl.makespan, timing.end);
  }
}

Breakdown attribute(const Graph& g, const Timeline& tl, schedule::StreamId stream) {
  Breakdown b{};
  auto add = [&b](Category c, SimTime t) { b[static_cast<std::size_t>(c)] += t; };
  const auto& tasks = g.tasks();
  SimTime cursor = 0;
  // The stream's tasks in issue order: a filtered pass over all tasks (no list is kept per stream).
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const Task& task = tasks[i];
    if (task.stream != stream) continue;
    auto id = static_cast<TaskId>(i);
    const TaskTiming& t = tl.tasks[i];
    if (t.start > cursor) {
      // The dependency that finished last is the one the stream waited for; a marker that
      // joins several tasks passes the wait on to the one of them that finished last.
      auto last_dep = [&](TaskId t) {
        TaskId last = -1;
        for (TaskId d : g.deps(t)) {
          if (last < 0 || tl.tasks[static_cast<std::size_t>(d)].end > tl.tasks[static_cast<std::size_t>(last)].end)
            last = d;
        }
        return last;
      };
      TaskId binding = last_dep(id);
      while (binding >= 0 && tasks[static_cast<std::size_t>(binding)].kind == TaskKind::marker &&
             !g.deps(binding).empty())
        binding = last_dep(binding);
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
    if (task.kind == TaskKind::compute && t.comm > 0) {
      // Its communication was replayed by the network (engine::Transfers::carries_pass_comm):
      // the time it took, split over the pass's communication segments as they were priced.
      SimTime priced = 0, given = 0;
      for (const schedule::Segment& s : g.segments(task)) priced += schedule::pass_comm(s.category) ? s.duration : 0;
      const schedule::Segment* last = nullptr;
      for (const schedule::Segment& s : g.segments(task)) {
        if (!schedule::pass_comm(s.category)) {
          add(s.category, s.duration);
          continue;
        }
        SimTime share = priced > 0 ? static_cast<SimTime>(static_cast<double>(t.comm) * static_cast<double>(s.duration) /
                                                          static_cast<double>(priced))
                                   : 0;
        add(s.category, share);
        given += share;
        last = &s;
      }
      if (last != nullptr) add(last->category, t.comm - given);  // rounding
    } else {
      for (const schedule::Segment& s : g.segments(task)) add(s.category, s.duration);
      if (t.comm > 0) add(task.comm_category, t.comm);
    }
    // Compute slowed by concurrent communication kernels is time lost to (mostly DP) communication.
    if (t.contention > 0) add(Category::dp_comm_exposed, t.contention);
    cursor = t.end;
  }
  return b;
}

}  // namespace dtsim::engine
