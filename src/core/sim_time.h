#pragma once
// The engine clock: one integer type, so event ordering is exact and reproducible.
#include <cmath>
#include <cstdint>

#include "core/units.h"

namespace dtsim {

/// Simulated time in integer picoseconds (int64 covers ~106 days).
using SimTime = std::int64_t;

/// Rounds a duration to the clock's resolution (1 ps), half away from zero.
[[nodiscard]] inline SimTime to_sim_time(Seconds s) {
  double ps = s.value() * 1e12;
  return static_cast<SimTime>(ps >= 0 ? ps + 0.5 : ps - 0.5);
}
/// Converts the clock back to seconds.
[[nodiscard]] constexpr Seconds to_seconds(SimTime t) { return Seconds(static_cast<double>(t) * 1e-12); }

}  // namespace dtsim
