#pragma once
// The engine clock: one integer type, so event ordering is exact and reproducible.
#include <cmath>
#include <cstdint>

#include "core/units.h"

namespace dtsim {

/// Simulated time in integer picoseconds (int64 covers ~106 days).
using SimTime = std::int64_t;

/// Rounds a duration to the clock's resolution (1 ps); negative durations are a bug.
[[nodiscard]] inline SimTime to_sim_time(Seconds s) {
  return static_cast<SimTime>(std::llround(s.value() * 1e12));
}
/// Converts the clock back to seconds.
[[nodiscard]] constexpr Seconds to_seconds(SimTime t) { return Seconds(static_cast<double>(t) * 1e-12); }

}  // namespace dtsim
