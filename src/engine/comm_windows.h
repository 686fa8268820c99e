#pragma once
// The overlap model's bookkeeping, shared by both engines: the communication kernels running on
// one rank, as [start, end) windows. A compute task that starts while one runs is slowed by the
// calibrated overlap factor for the covered time.
#include <algorithm>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include "core/sim_time.h"

namespace dtsim::engine {

class CommWindows {
 public:
  void add(SimTime start, SimTime end) { pending_.emplace(start, end); }
  /// Time in [t, t + d) covered by windows that started at or before t. The queries of one rank
  /// come in nondecreasing t (its compute stream runs one task after another), so a window that
  /// has started stays started and only the latest end among started windows matters: each
  /// window is looked at once, however many queued collectives a step keeps in flight (a 1T-parameter
  /// model's thousands of gradient buckets made a list scan per compute task quadratic).
  [[nodiscard]] SimTime covered_from(SimTime t, SimTime d) {
    while (!pending_.empty() && pending_.top().first <= t) {
      reach_ = std::max(reach_, pending_.top().second);
      pending_.pop();
    }
    return std::min(d, std::max(reach_, t) - t);
  }

 private:
  using Window = std::pair<SimTime, SimTime>;
  std::priority_queue<Window, std::vector<Window>, std::greater<>> pending_;  // not started yet, by start
  SimTime reach_ = 0;  // the latest end among started windows
};

}  // namespace dtsim::engine
