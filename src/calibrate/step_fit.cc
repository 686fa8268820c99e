#include "calibrate/step_fit.h"

#include <algorithm>
#include <cmath>

#include "calibrate/minimize.h"
#include "calibrate/stats.h"
#include "core/errors.h"

namespace dtsim::calibrate {
namespace {

// The search moves each parameter in units of about one typical change, so one simplex step
// fits all: ln of the efficiency factor by 0.1, the kernel overhead by 2 us, the slowdown by 0.05.
double unit(StepParam p) {
  switch (p) {
    case StepParam::compute_efficiency: return 0.1;
    case StepParam::kernel_overhead: return 2.0;
    case StepParam::overlap_slowdown: return 0.05;
  }
  return 1.0;
}

// The largest efficiency the factor scales; the factor may not push it past 1.
double top_efficiency(const spec::ComputeCalibration& c) {
  double top = std::max(c.flash_fwd_efficiency, c.flash_bwd_efficiency);
  for (const spec::GpuFlashCurve& g : c.flash_by_gpu) top = std::max({top, g.curve.fwd, g.curve.bwd});
  for (const spec::GemmCurve& g : c.gemm) top = std::max(top, g.max_efficiency);
  for (const spec::GpuGemmCurve& g : c.gemm_by_gpu) top = std::max(top, g.curve.max_efficiency);
  return top;
}

struct Bounds {
  double lo, hi;
};

Bounds bounds(StepParam p, const spec::Calibration& base) {
  switch (p) {
    case StepParam::compute_efficiency: return {0.2, 1.0 / top_efficiency(base.compute)};
    case StepParam::kernel_overhead: return {0.0, 200.0};
    case StepParam::overlap_slowdown: return {0.0, 1.0};
  }
  return {0.0, 1.0};
}

double current(StepParam p, const spec::Calibration& base) {
  switch (p) {
    case StepParam::compute_efficiency: return 1.0;
    case StepParam::kernel_overhead: return to_us(base.compute.kernel_overhead);
    case StepParam::overlap_slowdown: return base.compute.overlap_slowdown;
  }
  return 0.0;
}

// Search coordinates <-> parameter values (the factor is searched in log space).
double to_value(StepParam p, double x) {
  return p == StepParam::compute_efficiency ? std::exp(x * unit(p)) : x * unit(p);
}
double to_coord(StepParam p, double v) {
  return p == StepParam::compute_efficiency ? std::log(v) / unit(p) : v / unit(p);
}

StepErrors errors(const std::vector<double>& pred, const std::vector<double>& meas) {
  std::vector<double> e;
  for (std::size_t i = 0; i < pred.size(); ++i) e.push_back(std::fabs(pred[i] / meas[i] - 1.0) * 100.0);
  if (e.empty()) return {};
  double sum = 0;
  for (double v : e) sum += v;
  return {sum / static_cast<double>(e.size()), median(e), *std::max_element(e.begin(), e.end())};
}

class StepProblem {
 public:
  StepProblem(std::vector<const PreparedCase*> cases, const spec::Calibration& base, std::vector<StepParam> params)
      : cases_(std::move(cases)), base_(base), params_(std::move(params)), workspaces_(cases_.size()) {
    for (StepParam p : params_) start_.push_back(to_coord(p, current(p, base_)));
  }

  [[nodiscard]] std::vector<double> values(const std::vector<double>& x) const {
    std::vector<double> v;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      Bounds b = bounds(params_[i], base_);
      v.push_back(std::clamp(to_value(params_[i], x[i]), b.lo, b.hi));
    }
    return v;
  }

  [[nodiscard]] double predict(std::size_t i, const std::vector<double>& x) const {
    return estimate_case(*cases_[i], with_step_params(base_, params_, values(x)), workspaces_[i]);
  }

  // Sum of squared log errors over all cases but `skip`, and a faint pull to the base values
  // (only decisive for a parameter the runs cannot see, e.g. overlap with nothing to overlap).
  [[nodiscard]] double objective(const std::vector<double>& x, std::size_t skip) const {
    double sse = 0;
    for (std::size_t i = 0; i < cases_.size(); ++i) {
      if (i == skip) continue;
      double r = std::log(predict(i, x) / cases_[i]->outcome.measured_s);
      sse += r * r;
    }
    for (std::size_t i = 0; i < x.size(); ++i) {
      Bounds b = bounds(params_[i], base_);
      double v = to_value(params_[i], x[i]);
      double out = v < b.lo ? b.lo - v : v > b.hi ? v - b.hi : 0.0;  // outside the bounds: steep
      sse += 1e-4 * (x[i] - start_[i]) * (x[i] - start_[i]) + 100.0 * out * out / (unit(params_[i]) * unit(params_[i]));
    }
    return sse;
  }

  // From `from` with simplex edge `step` (the leave-one-out fits start at the full fit, close by).
  [[nodiscard]] std::vector<double> fit(std::size_t skip, const std::vector<double>& from, double step,
                                        int evaluations) const {
    return nelder_mead([&](const std::vector<double>& x) { return objective(x, skip); }, from,
                       {.step = step, .max_evaluations = evaluations, .restarts = 1, .tolerance = 1e-9})
        .x;
  }

  [[nodiscard]] const std::vector<double>& start() const { return start_; }
  [[nodiscard]] const std::vector<const PreparedCase*>& cases() const { return cases_; }

 private:
  std::vector<const PreparedCase*> cases_;
  const spec::Calibration& base_;
  std::vector<StepParam> params_;
  std::vector<double> start_;
  mutable std::vector<engine::Workspace> workspaces_;  // one per case: simulations reuse their storage
};

}  // namespace

const char* to_string(StepParam p) {
  switch (p) {
    case StepParam::compute_efficiency: return "compute_efficiency";
    case StepParam::kernel_overhead: return "kernel_overhead_us";
    case StepParam::overlap_slowdown: return "overlap_slowdown";
  }
  return "?";
}

std::optional<StepParam> parse_step_param(std::string_view name) {
  for (StepParam p : default_step_params())
    if (name == to_string(p)) return p;
  return std::nullopt;
}

std::vector<StepParam> default_step_params() {
  return {StepParam::compute_efficiency, StepParam::kernel_overhead, StepParam::overlap_slowdown};
}

spec::Calibration with_step_params(const spec::Calibration& base, const std::vector<StepParam>& params,
                                   const std::vector<double>& values) {
  spec::Calibration c = base;
  for (std::size_t i = 0; i < params.size(); ++i) {
    double v = values[i];
    switch (params[i]) {
      case StepParam::compute_efficiency:
        for (spec::GemmCurve& g : c.compute.gemm) g.max_efficiency *= v;
        for (spec::GpuGemmCurve& g : c.compute.gemm_by_gpu) g.curve.max_efficiency *= v;
        c.compute.flash_fwd_efficiency *= v;
        c.compute.flash_bwd_efficiency *= v;
        for (spec::GpuFlashCurve& g : c.compute.flash_by_gpu) g.curve.fwd *= v, g.curve.bwd *= v;
        break;
      case StepParam::kernel_overhead: c.compute.kernel_overhead = us(v); break;
      case StepParam::overlap_slowdown: c.compute.overlap_slowdown = v; break;
    }
  }
  return c;
}

StepFit fit_steps(const std::vector<PreparedCase>& cases, const spec::Calibration& base,
                  const std::vector<StepParam>& params, const std::string& flag) {
  StepFit out;
  std::vector<const PreparedCase*> runnable;
  for (const PreparedCase& c : cases) {
    if (c.runnable()) runnable.push_back(&c);
    else out.skipped.push_back(c.outcome.id + ": " + c.outcome.failure);
  }
  if (runnable.size() < params.size())
    throw SpecError(flag, "expected at least " + std::to_string(params.size()) + " runs that simulate to fit " +
                              std::to_string(params.size()) + " parameters, got " + std::to_string(runnable.size()));
  StepProblem sp(runnable, base, params);
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::vector<double> x = sp.fit(kNone, sp.start(), 1.0, 300);
  std::vector<double> v = sp.values(x);
  for (std::size_t i = 0; i < params.size(); ++i)  // as the profile prints them
    v[i] = params[i] == StepParam::kernel_overhead ? std::round(v[i] * 10) / 10 : std::round(v[i] * 1000) / 1000;
  out.calibration = with_step_params(base, params, v);
  auto four = [](double e) { return std::round(e * 1e4) / 1e4; };  // scaled efficiencies, as printed
  for (spec::GemmCurve& g : out.calibration.compute.gemm) g.max_efficiency = four(g.max_efficiency);
  for (spec::GpuGemmCurve& g : out.calibration.compute.gemm_by_gpu) g.curve.max_efficiency = four(g.curve.max_efficiency);
  out.calibration.compute.flash_fwd_efficiency = four(out.calibration.compute.flash_fwd_efficiency);
  out.calibration.compute.flash_bwd_efficiency = four(out.calibration.compute.flash_bwd_efficiency);
  for (spec::GpuFlashCurve& g : out.calibration.compute.flash_by_gpu)
    g.curve.fwd = four(g.curve.fwd), g.curve.bwd = four(g.curve.bwd);
  for (std::size_t i = 0; i < params.size(); ++i) {
    Bounds b = bounds(params[i], base);
    out.params.push_back({params[i], current(params[i], base), v[i], v[i] <= b.lo + 1e-9 || v[i] >= b.hi - 1e-9});
  }
  std::vector<double> meas, before, fitted, loo;
  bool do_loo = runnable.size() >= params.size() + 2;
  for (std::size_t i = 0; i < runnable.size(); ++i) {
    const PreparedCase& c = *runnable[i];
    StepFitCase r{.id = c.outcome.id, .measured_s = c.outcome.measured_s};
    r.before_s = *simulate_case(c, base).predicted_s;
    r.fitted_s = *simulate_case(c, out.calibration).predicted_s;
    if (do_loo) r.loo_s = sp.predict(i, sp.fit(i, x, 0.3, 80));  // starts next to its optimum
    meas.push_back(r.measured_s);
    before.push_back(r.before_s);
    fitted.push_back(r.fitted_s);
    if (r.loo_s) loo.push_back(*r.loo_s);
    out.cases.push_back(r);
  }
  out.before = errors(before, meas);
  out.in_sample = errors(fitted, meas);
  if (do_loo) out.loo = errors(loo, meas);
  return out;
}

}  // namespace dtsim::calibrate
