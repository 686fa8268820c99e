#pragma once
// A discrete-event simulator: streams per representative rank run tasks in issue order,
// gated by dependencies; the same input always gives the same output. Compute tasks that start while communication kernels
// run are slowed by a calibrated factor for the overlapped time.
#include <vector>

#include "engine/network.h"
#include "schedule/graph.h"

namespace dtsim::engine {

/// Start and end of one task.
struct TaskTiming {
  SimTime start = 0;
  SimTime end = 0;
  SimTime comm = 0;        ///< duration priced by the network backend (comm tasks)
  SimTime contention = 0;  ///< extra time from overlapped communication (included in end)
};

/// Result of one run.
struct Timeline {
  std::vector<TaskTiming> tasks;
  SimTime makespan = 0;
};

using schedule::Breakdown;

/// Runs op graphs; owns its queue, so many Simulators may run on different threads at once.
class Simulator {
 public:
  explicit Simulator(const NetworkBackend& network, double overlap_slowdown)
      : network_(network), overlap_slowdown_(overlap_slowdown) {}
  /// Runs all tasks of `g` (a Graph cannot hold a cycle: dependencies point to earlier tasks).
  [[nodiscard]] Timeline run(const schedule::Graph& g) const;
  /// Same, into `out`, reusing its storage.
  void run(const schedule::Graph& g, Timeline& out) const;

 private:
  const NetworkBackend& network_;
  double overlap_slowdown_;
};

/// Per-category time along stream `stream` from 0 to the end of its last task: busy segments,
/// plus each idle gap named after the dependency the next task waited for last.
[[nodiscard]] Breakdown attribute(const schedule::Graph& g, const Timeline& tl, schedule::StreamId stream);

}  // namespace dtsim::engine
