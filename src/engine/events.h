#pragma once
// The event-driven engine: an event queue over the op graph, an integer clock (SimTime) and
// deterministic tie-breaks, with communication handed to a network that runs transfers and
// reports when they complete. The longest-path pass (simulator.h) is its fast path for networks
// whose transfers do not interact: on such a network both give identical timelines (tested).
#include <cstdint>
#include <limits>
#include <queue>
#include <utility>
#include <vector>

#include "engine/network.h"
#include "engine/simulator.h"
#include "schedule/graph.h"

namespace dtsim::engine {

/// No event: later than any time the clock reaches.
inline constexpr SimTime kNever = std::numeric_limits<SimTime>::max();

/// The network seam of the event-driven engine. The engine starts each communication task of
/// the graph as a transfer at its clock and asks for completions in time order; between two
/// events the network may let running transfers share links (SimGrid), or run each alone.
class Transfers {
 public:
  virtual ~Transfers() = default;
  /// Starts the transfer of comm task `task` (its collective: `g.comm(task.comm)`) at `now`.
  virtual void start(const schedule::Graph& g, schedule::TaskId task, SimTime now) = 0;
  /// When a running transfer would end if nothing else started: the overlap model reads it when
  /// compute starts beside the transfer.
  [[nodiscard]] virtual SimTime projected_end(schedule::TaskId task) const = 0;
  /// Moves the network's clock to its first completion at or before `limit` and appends the
  /// transfers that complete then to `done`, in ascending task order; returns that time. With no
  /// completion by `limit`, moves to `limit`, appends nothing and returns `limit` (kNever: no
  /// transfer is running).
  virtual SimTime advance(SimTime limit, std::vector<schedule::TaskId>& done) = 0;
  /// True when the network also replays the communication inside passes (schedule::pass_comm
  /// segments): the engine then hands such a compute task over whole with start_pass, and the
  /// network runs its compute and its communication interleaved as the pass issues them;
  /// TaskTiming::comm gets the time the task took beyond its compute.
  [[nodiscard]] virtual bool carries_pass_comm() const { return false; }
  /// Starts compute task `task` whose pass communication the network replays, at `now`: its
  /// `compute` (its other segments and their contention) and its communication, interleaved. It
  /// completes through advance() like a transfer. Only called when carries_pass_comm().
  virtual void start_pass(const schedule::Graph& g, schedule::TaskId task, SimTime now, SimTime compute);
};

/// Transfers that each take the time a CommPricer gives their collective, whatever else runs:
/// the analytical network as the event-driven engine sees it.
class PricedTransfers final : public Transfers {
 public:
  explicit PricedTransfers(const NetworkBackend& net) : net_(net) {}
  void start(const schedule::Graph& g, schedule::TaskId task, SimTime now) override;
  [[nodiscard]] SimTime projected_end(schedule::TaskId task) const override;
  SimTime advance(SimTime limit, std::vector<schedule::TaskId>& done) override;

 private:
  const NetworkBackend& net_;
  std::vector<SimTime> priced_;  ///< by CommId, -1 = not yet priced
  std::vector<SimTime> end_;     ///< by task id
  std::priority_queue<std::pair<SimTime, schedule::TaskId>, std::vector<std::pair<SimTime, schedule::TaskId>>,
                      std::greater<>>
      running_;
};

/// Runs op graphs event by event. Ties are broken by task id: at one instant, tasks start in
/// the order they were added to the graph, and completions release their successors into that
/// order, so the same graph and network always give the same timeline.
class EventSimulator {
 public:
  explicit EventSimulator(double overlap_slowdown) : overlap_slowdown_(overlap_slowdown) {}
  /// Runs all tasks of `g` over `net` into `out`. TaskTiming::comm of a comm task is the time
  /// its transfer took. Throws std::logic_error when tasks remain that can never start.
  void run(const schedule::Graph& g, Transfers& net, Timeline& out) const;
  /// Events processed by the last run (task starts and completions), for benchmarks.
  [[nodiscard]] std::int64_t events() const { return events_; }

 private:
  double overlap_slowdown_;
  mutable std::int64_t events_ = 0;
};

}  // namespace dtsim::engine
