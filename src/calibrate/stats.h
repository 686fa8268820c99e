#pragma once
// Summary statistics the fits and their reports share.
#include <algorithm>
#include <cmath>
#include <vector>

namespace dtsim::calibrate {

/// The median of `v` (the mean of the two middle values for an even count); 0 when empty.
[[nodiscard]] inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

/// `v` rounded to `digits` significant digits (0 and negatives unchanged): how profiles print
/// fitted values.
[[nodiscard]] inline double significant(double v, int digits) {
  if (v <= 0) return v;
  double scale = std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(v))));
  return std::round(v * scale) / scale;
}

}  // namespace dtsim::calibrate
