#pragma once
// The overlap model's bookkeeping, shared by both engines: the communication kernels running on
// one rank, as [start, end) windows, pruned as time advances. A compute task that starts while
// one runs is slowed by the calibrated overlap factor for the covered time.
#include <algorithm>
#include <utility>
#include <vector>

#include "core/sim_time.h"

namespace dtsim::engine {

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

}  // namespace dtsim::engine
