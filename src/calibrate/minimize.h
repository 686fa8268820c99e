#pragma once
// Derivative-free minimisation for the calibration fits, whose objectives are piecewise smooth
// (NCCL's tuner takes the fastest of several algorithms, so predicted time is a minimum).
#include <functional>
#include <vector>

namespace dtsim::calibrate {

/// Settings of nelder_mead.
struct MinimizeOptions {
  double step = 0.3;              ///< initial simplex edge along each axis
  int max_evaluations = 20000;    ///< per restart
  int restarts = 3;               ///< rebuilds of the simplex around the best point after the first run
  double tolerance = 1e-12;       ///< stop when the simplex's values differ by less (relative)
};

/// The best point found and its value.
struct Minimum {
  std::vector<double> x;
  double value = 0;
  int evaluations = 0;
};

/// Minimises `f` from `x0` by the Nelder-Mead simplex method (Nelder and Mead, Computer Journal
/// 7:308, 1965) with the standard coefficients reflection 1, expansion 2, contraction 1/2 and
/// shrink 1/2 (Lagarias et al., SIAM J. Optim. 9:112, 1998, sec. 2). A restart rebuilds the
/// simplex around the best point, which undoes a simplex collapsed onto a subspace. Deterministic:
/// the same f and x0 always give the same point. Throws std::invalid_argument for an empty x0.
[[nodiscard]] Minimum nelder_mead(const std::function<double(const std::vector<double>&)>& f,
                                  const std::vector<double>& x0, const MinimizeOptions& opt = {});

}  // namespace dtsim::calibrate
