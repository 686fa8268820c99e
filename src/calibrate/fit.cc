#include "calibrate/fit.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "calibrate/stats.h"
#include "core/errors.h"

namespace dtsim::calibrate {
namespace {

struct Cell {
  double log_mn_half = 0, log_k_half = 0, log_max = 0, sse = 0;
};

// Least squares on ln(eff) for fixed shape terms: ln(max) is the mean residual.
Cell evaluate(const std::vector<double>& log_eff, const std::vector<double>& mn, const std::vector<double>& k,
              double log_mn_half, double log_k_half) {
  double a = std::exp(log_mn_half), b = std::exp(log_k_half);
  std::size_t n = log_eff.size();
  std::vector<double> r(n);
  double mean = 0;
  for (std::size_t i = 0; i < n; ++i) {
    r[i] = log_eff[i] - std::log(mn[i] / (mn[i] + a)) - std::log(k[i] / (k[i] + b));
    mean += r[i] / static_cast<double>(n);
  }
  double sse = 0;
  for (double x : r) sse += (x - mean) * (x - mean);
  return {log_mn_half, log_k_half, mean, sse};
}

// The best cell of a (2*steps+1)^2 grid around (c_mn, c_k) with the given log spacing.
Cell search(const std::vector<double>& log_eff, const std::vector<double>& mn, const std::vector<double>& k,
            double c_mn, double c_k, double half_width_mn, double half_width_k, int steps) {
  Cell best{.sse = INFINITY};
  for (int i = -steps; i <= steps; ++i)
    for (int j = -steps; j <= steps; ++j) {
      Cell c = evaluate(log_eff, mn, k, c_mn + half_width_mn * i / steps, c_k + half_width_k * j / steps);
      if (c.sse < best.sse) best = c;
    }
  return best;
}

}  // namespace

double rounded_efficiency(double e) { return std::round(e * 1000) / 1000; }

spec::GemmCurve rounded(const spec::GemmCurve& c) {
  return {.max_efficiency = rounded_efficiency(c.max_efficiency), .mn_half = significant(c.mn_half, 3),
          .k_half = significant(c.k_half, 3)};
}

GemmFit fit_gemm_curve(const std::vector<spec::GemmPoint>& points, FlopsPerSecond peak, const std::string& flag) {
  std::set<double> distinct_mn, distinct_k;
  std::vector<double> log_eff, mn, k;
  GemmFit fit;
  for (const spec::GemmPoint& p : points) {
    double e = p.tflops * 1e12 / peak.value();
    fit.measured_eff.push_back(e);
    log_eff.push_back(std::log(e));
    mn.push_back(static_cast<double>(p.m) * static_cast<double>(p.n));
    k.push_back(static_cast<double>(p.k));
    distinct_mn.insert(mn.back());
    distinct_k.insert(k.back());
  }
  if (distinct_mn.size() < 2 || distinct_k.size() < 2)
    throw SpecError(flag, "expected GEMM shapes with at least two different m*n and two different k, got " +
                              std::to_string(distinct_mn.size()) + " and " + std::to_string(distinct_k.size()));
  // mn_half over 1e2..1e10 output elements, k_half over 1..1e6: a coarse grid (ln steps of 0.05),
  // then two refinements around the best cell. Deterministic: the same points give the same fit.
  double c_mn = std::log(1e6), c_k = std::log(1e3);
  Cell best = search(log_eff, mn, k, c_mn, c_k, std::log(1e4), std::log(1e3), 180);
  for (double w : {0.1, 0.005}) best = search(log_eff, mn, k, best.log_mn_half, best.log_k_half, w, w, 20);
  fit.curve = {.max_efficiency = std::exp(best.log_max), .mn_half = std::exp(best.log_mn_half),
               .k_half = std::exp(best.log_k_half)};
  if (fit.curve.max_efficiency > 1)
    throw SpecError(flag, "expected GEMM rates below the GPU's peak (" + std::to_string(peak.value() / 1e12) +
                              " TFLOP/s), got a fitted asymptote of " + std::to_string(fit.curve.max_efficiency) +
                              " x peak (measured on another GPU, or in another dtype?)");
  for (std::size_t i = 0; i < points.size(); ++i) fit.fitted_eff.push_back(fit.curve.at(mn[i], k[i]));
  double sq = 0;
  for (std::size_t i = 0; i < points.size(); ++i) sq += std::pow(std::log(fit.fitted_eff[i] / fit.measured_eff[i]), 2);
  fit.rms_log_error = std::sqrt(sq / static_cast<double>(points.size()));
  return fit;
}

double fit_memory_efficiency(const std::vector<spec::CopyPoint>& points, BytesPerSecond hbm, const std::string& flag) {
  double best = 0;
  for (const spec::CopyPoint& p : points) best = std::max(best, p.gb_per_s * 1e9);
  double e = best / hbm.value();
  if (e > 1)
    throw SpecError(flag, "expected copy bandwidth below the GPU's HBM bandwidth (" +
                              std::to_string(hbm.value() / 1e9) + " GB/s), got " + std::to_string(best / 1e9) +
                              " GB/s (measured on another GPU?)");
  return e * kKernelShareOfCopy;
}

Fitted fit_bench_files(const std::vector<spec::BenchFile>& files, const spec::Gpu& gpu, const std::string& flag) {
  Fitted out;
  std::vector<spec::CopyPoint> copy;
  for (const spec::BenchFile& f : files) {
    if (out.device.empty()) {
      out.device = f.device;
      out.sm_count = f.sm_count;
    } else if (f.device != out.device || f.sm_count != out.sm_count) {
      throw SpecError(flag, "expected files measured on one kind of GPU, got \"" + out.device + "\" and \"" +
                                f.device + "\" (" + f.path + ")");
    }
    if (f.gemm) {
      for (const auto& [sweep, fit] : out.gemm)
        if (sweep.dtype == f.gemm->dtype)
          throw SpecError(flag, std::string("expected one GEMM sweep per dtype, got two of ") +
                                    spec::to_string(f.gemm->dtype) + " (" + f.path + ")");
      FlopsPerSecond peak = gpu.peak(f.gemm->dtype);
      if (peak.value() <= 0)
        throw SpecError(flag, std::string("expected a dtype ") + gpu.name + " has tensor cores for, got " +
                                  spec::to_string(f.gemm->dtype) + " (" + f.path + ")");
      out.gemm.emplace_back(*f.gemm, fit_gemm_curve(f.gemm->points, peak, flag + " " + f.path));
    }
    copy.insert(copy.end(), f.copy.begin(), f.copy.end());
  }
  if (!copy.empty()) {
    out.memory_efficiency = fit_memory_efficiency(copy, gpu.hbm_bandwidth, flag);
    out.best_copy_gb_per_s = *out.memory_efficiency / kKernelShareOfCopy * gpu.hbm_bandwidth.value() / 1e9;
  }
  return out;
}

spec::ProfilePatch compute_patch(const Fitted& f) {
  spec::ProfilePatch p;
  for (const auto& [sweep, fit] : f.gemm) p.gemm.emplace_back(sweep.dtype, rounded(fit.curve));
  if (f.memory_efficiency) p.memory_efficiency = rounded_efficiency(*f.memory_efficiency);
  return p;
}

}  // namespace dtsim::calibrate
