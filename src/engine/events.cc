#include "engine/events.h"

#include <algorithm>
#include <functional>
#include <stdexcept>

#include "engine/comm_windows.h"

namespace dtsim::engine {

using schedule::Graph;
using schedule::Task;
using schedule::TaskId;
using schedule::TaskKind;

void Transfers::start_pass(const Graph&, TaskId, SimTime, SimTime) {
  throw std::logic_error("engine::Transfers::start_pass: this network does not carry pass communication");
}

void PricedTransfers::start(const Graph& g, TaskId task, SimTime now) {
  const Task& t = g.tasks()[static_cast<std::size_t>(task)];
  if (priced_.size() < g.comm_count()) priced_.resize(g.comm_count(), -1);
  if (end_.size() < g.tasks().size()) end_.resize(g.tasks().size(), 0);
  SimTime& p = priced_[static_cast<std::size_t>(t.comm)];
  if (p < 0) p = to_sim_time(net_.time(g.comm(t.comm)));
  end_[static_cast<std::size_t>(task)] = now + p;
  running_.emplace(now + p, task);
}

SimTime PricedTransfers::projected_end(TaskId task) const { return end_[static_cast<std::size_t>(task)]; }

SimTime PricedTransfers::advance(SimTime limit, std::vector<TaskId>& done) {
  if (running_.empty() || running_.top().first > limit) return limit;
  SimTime t = running_.top().first;
  while (!running_.empty() && running_.top().first == t) {  // ascending task id among equal ends
    done.push_back(running_.top().second);
    running_.pop();
  }
  return t;
}

void EventSimulator::run(const Graph& g, Transfers& net, Timeline& tl) const {
  const auto& tasks = g.tasks();
  const std::size_t n = tasks.size();
  tl.makespan = 0;
  tl.tasks.assign(n, {});
  events_ = 0;
  // Prerequisites of each task: its dependencies and its stream's previous task. Successor
  // lists in one flat array (counting sort by prerequisite).
  std::vector<std::int32_t> pending(n, 0), succ_begin(n + 1, 0);
  std::vector<TaskId> prev_on_stream(n, -1), last(g.streams().size(), -1);
  for (std::size_t i = 0; i < n; ++i) {
    auto id = static_cast<TaskId>(i);
    TaskId& l = last[static_cast<std::size_t>(tasks[i].stream)];
    prev_on_stream[i] = l;
    l = id;
    if (prev_on_stream[i] >= 0) ++succ_begin[static_cast<std::size_t>(prev_on_stream[i]) + 1], ++pending[i];
    for (TaskId d : g.deps(id)) ++succ_begin[static_cast<std::size_t>(d) + 1], ++pending[i];
  }
  for (std::size_t i = 0; i < n; ++i) succ_begin[i + 1] += succ_begin[i];
  std::vector<TaskId> succ(static_cast<std::size_t>(succ_begin[n]));
  {
    std::vector<std::int32_t> fill(succ_begin.begin(), succ_begin.end() - 1);
    for (std::size_t i = 0; i < n; ++i) {
      auto id = static_cast<TaskId>(i);
      if (prev_on_stream[i] >= 0) succ[static_cast<std::size_t>(fill[static_cast<std::size_t>(prev_on_stream[i])]++)] = id;
      for (TaskId d : g.deps(id)) succ[static_cast<std::size_t>(fill[static_cast<std::size_t>(d)]++)] = id;
    }
  }
  std::int32_t ranks = 0;
  for (const auto& st : g.streams()) ranks = std::max(ranks, st.rank + 1);
  std::vector<CommWindows> windows(static_cast<std::size_t>(ranks));
  auto rank_of = [&](const Task& t) { return static_cast<std::size_t>(g.streams()[static_cast<std::size_t>(t.stream)].rank); };

  // Startable tasks, lowest id first; timers (compute ends, and the fixed part of comm tasks
  // after their transfer) by (time, id).
  std::priority_queue<TaskId, std::vector<TaskId>, std::greater<>> startable;
  using Timer = std::pair<SimTime, TaskId>;
  std::priority_queue<Timer, std::vector<Timer>, std::greater<>> timers;
  std::size_t finished = 0;
  SimTime now = 0;
  for (std::size_t i = 0; i < n; ++i)
    if (pending[i] == 0) startable.push(static_cast<TaskId>(i));

  auto complete = [&](TaskId id) {
    TaskTiming& t = tl.tasks[static_cast<std::size_t>(id)];
    t.end = now;
    tl.makespan = std::max(tl.makespan, now);
    ++finished;
    ++events_;
    for (std::int32_t k = succ_begin[static_cast<std::size_t>(id)]; k < succ_begin[static_cast<std::size_t>(id) + 1]; ++k) {
      TaskId s = succ[static_cast<std::size_t>(k)];
      if (--pending[static_cast<std::size_t>(s)] == 0) startable.push(s);
    }
  };
  // The part of a task after its transfer (its own busy time), then its completion.
  auto finish_after = [&](TaskId id, SimTime extra) {
    if (extra == 0) complete(id);
    else timers.emplace(now + extra, id);
  };
  // Compute tasks whose pass communication the network replays: handed over whole, and when
  // their compute alone would have ended (TaskTiming::comm is the time past it).
  const bool pass_comm = net.carries_pass_comm();
  enum : std::uint8_t { kNone, kTransferring };
  std::vector<std::uint8_t> phase(pass_comm ? n : 0, kNone);
  std::vector<SimTime> handed(pass_comm ? n : 0, 0);
  auto comm_part = [&](const Task& t) {
    SimTime c = 0;
    for (const schedule::Segment& seg : g.segments(t))
      if (schedule::pass_comm(seg.category)) c += seg.duration;
    return c;
  };
  std::vector<TaskId> done;
  while (finished < n) {
    while (!startable.empty()) {
      TaskId id = startable.top();
      startable.pop();
      ++events_;
      const Task& task = tasks[static_cast<std::size_t>(id)];
      TaskTiming& timing = tl.tasks[static_cast<std::size_t>(id)];
      timing.start = now;
      SimTime d = g.duration(task);
      CommWindows& w = windows[rank_of(task)];
      if (task.kind == TaskKind::comm && task.comm >= 0) {
        net.start(g, id, now);
        SimTime end = net.projected_end(id);
        if (end + d > now) w.add(now, end + d);
        if (end == now) {  // an instant transfer completes before anything else starts
          done.clear();
          net.advance(now, done);
          for (TaskId c : done) finish_after(c, g.duration(tasks[static_cast<std::size_t>(c)]));
        }
        continue;
      }
      SimTime replayed = pass_comm && task.kind == TaskKind::compute ? comm_part(task) : 0;
      d -= replayed;
      if (task.kind == TaskKind::compute && overlap_slowdown_ > 0 && d > 0)
        timing.contention = static_cast<SimTime>(static_cast<double>(w.covered_from(now, d)) * overlap_slowdown_);
      if (task.kind == TaskKind::comm && d > 0) w.add(now, now + d);
      if (replayed > 0) {  // the network runs its compute and communication interleaved
        phase[static_cast<std::size_t>(id)] = kTransferring;
        handed[static_cast<std::size_t>(id)] = now + d + timing.contention;
        net.start_pass(g, id, now, d + timing.contention);
      } else {
        finish_after(id, d + timing.contention);
      }
    }
    if (finished == n) break;
    SimTime next_timer = timers.empty() ? kNever : timers.top().first;
    done.clear();
    SimTime t = net.advance(next_timer, done);
    if (t == kNever) throw std::logic_error("engine: tasks remain that can never start (a dependency cycle)");
    now = t;
    for (TaskId c : done) {
      TaskTiming& timing = tl.tasks[static_cast<std::size_t>(c)];
      if (pass_comm && phase[static_cast<std::size_t>(c)] == kTransferring) {  // a pass's communication
        timing.comm = std::max<SimTime>(0, now - handed[static_cast<std::size_t>(c)]);
        complete(c);
        continue;
      }
      timing.comm = now - timing.start;
      finish_after(c, g.duration(tasks[static_cast<std::size_t>(c)]));
    }
    while (!timers.empty() && timers.top().first == now) {
      TaskId c = timers.top().second;
      timers.pop();
      complete(c);
    }
  }
}

}  // namespace dtsim::engine
