#pragma once
// Fitting the few software-stack parameters a profile has to measured step times of one
// cluster and stack (`dtsim calibrate --steps RUNS.json`), with leave-one-out cross-validation
// so the error printed is the error to expect on a run the fit has not seen.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "calibrate/cases.h"
#include "spec/calibration.h"

namespace dtsim::calibrate {

/// A profile parameter the step fit can move. One value serves every run: never one per case.
enum class StepParam {
  compute_efficiency,  ///< a factor on every GEMM curve's max_efficiency and the flash efficiencies
  kernel_overhead,     ///< compute.kernel_overhead_us: fixed cost per kernel (launch, tail)
  overlap_slowdown,    ///< compute.overlap_slowdown: compute slowdown under concurrent NCCL kernels
};

/// "compute_efficiency", "kernel_overhead_us", "overlap_slowdown".
[[nodiscard]] const char* to_string(StepParam p);
/// Inverse of to_string; nullopt for an unknown name.
[[nodiscard]] std::optional<StepParam> parse_step_param(std::string_view name);
/// The default set: all three.
[[nodiscard]] std::vector<StepParam> default_step_params();

/// One run: measured, the base profile's prediction, the fitted one, and the prediction of the
/// profile fitted without this run (leave-one-out).
struct StepFitCase {
  std::string id;
  double measured_s = 0, before_s = 0, fitted_s = 0;
  std::optional<double> loo_s;
};

/// A parameter's value before and after (compute_efficiency as the factor applied, 1 before).
struct StepParamValue {
  StepParam param;
  double before = 0, after = 0;
  bool at_bound = false;
};

/// Mean, median and max of |predicted / measured - 1| in percent.
struct StepErrors {
  double mean_pct = 0, median_pct = 0, max_pct = 0;
};

/// The fitted profile and how well it does in and out of sample.
struct StepFit {
  spec::Calibration calibration;
  std::vector<StepParamValue> params;
  std::vector<StepFitCase> cases;        ///< the runs that could be simulated
  std::vector<std::string> skipped;      ///< "ID: reason" for the others
  StepErrors before, in_sample;
  std::optional<StepErrors> loo;         ///< absent with fewer than params + 2 runs
};

/// Fits `params` to the runnable cases (least squares on ln(predicted / measured), one set of
/// values for all), from `base`. The cases must have been prepared with `base`. Throws SpecError
/// naming `flag` when fewer runs than parameters can be simulated.
[[nodiscard]] StepFit fit_steps(const std::vector<PreparedCase>& cases, const spec::Calibration& base,
                                const std::vector<StepParam>& params, const std::string& flag);

/// `base` with the parameters set to `values` (in StepParam units: the factor, microseconds, the
/// fraction), in the order of `params`.
[[nodiscard]] spec::Calibration with_step_params(const spec::Calibration& base, const std::vector<StepParam>& params,
                                                 const std::vector<double>& values);

}  // namespace dtsim::calibrate
