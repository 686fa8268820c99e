#include "report/calibrate_report.h"
#include "spec/json_reader.h"

#include <nlohmann/json.hpp>

#include "report/table.h"

namespace dtsim::report {
namespace {

nlohmann::json profile_compute(const calibrate::Fitted& f) {
  spec::ProfilePatch patch = calibrate::compute_patch(f);
  nlohmann::json p;
  for (const auto& [dtype, c] : patch.gemm)
    p["gemm"][spec::to_string(dtype)] = {{"max_efficiency", c.max_efficiency}, {"mn_half", c.mn_half},
                                         {"k_half", c.k_half}};
  if (patch.memory_efficiency) p["memory_efficiency"] = *patch.memory_efficiency;
  return p;
}

}  // namespace

std::string calibrate_report(const calibrate::Fitted& f, const spec::Gpu& gpu, bool json) {
  if (json) {
    nlohmann::json j{{"gpu", gpu.name}, {"device", f.device}, {"sm_count", f.sm_count},
                     {"profile_compute", profile_compute(f)}};
    j["gemm"] = nlohmann::json::object();
    for (const auto& [sweep, fit] : f.gemm) {
      double peak = gpu.peak(sweep.dtype).value() / 1e12;
      nlohmann::json pts = nlohmann::json::array();
      for (std::size_t i = 0; i < sweep.points.size(); ++i) {
        const spec::GemmPoint& p = sweep.points[i];
        pts.push_back({{"m", p.m}, {"n", p.n}, {"k", p.k}, {"measured_tflops", p.tflops},
                       {"fitted_tflops", fit.fitted_eff[i] * peak}});
      }
      j["gemm"][spec::to_string(sweep.dtype)] = {{"max_efficiency", fit.curve.max_efficiency},
                                                 {"mn_half", fit.curve.mn_half},
                                                 {"k_half", fit.curve.k_half},
                                                 {"rms_log_error", fit.rms_log_error},
                                                 {"points", pts}};
    }
    if (f.memory_efficiency) {
      j["memory_efficiency"] = *f.memory_efficiency;
      j["best_copy_gb_per_s"] = f.best_copy_gb_per_s;
    }
    return spec::json_text(j) + "\n";
  }
  std::string out = f.device + " (" + std::to_string(f.sm_count) + " SMs) fitted against " + gpu.name + "\n";
  for (const auto& [sweep, fit] : f.gemm) {
    double peak = gpu.peak(sweep.dtype).value() / 1e12;
    out += "\n" + std::string(spec::to_string(sweep.dtype)) + " GEMM (peak " + fixed(peak, 1) +
           " TFLOP/s): eff = " + fixed(fit.curve.max_efficiency, 3) + " * mn/(mn + " + fixed(fit.curve.mn_half, 0) +
           ") * k/(k + " + fixed(fit.curve.k_half, 0) + "); rms error " + fixed(100 * fit.rms_log_error, 1) +
           "% over " + std::to_string(sweep.points.size()) + " shapes\n";
    Table t({"m", "n", "k", "measured TFLOP/s", "fitted TFLOP/s", "error"});
    for (std::size_t i = 0; i < sweep.points.size(); ++i) {
      const spec::GemmPoint& p = sweep.points[i];
      double err = 100 * (fit.fitted_eff[i] / fit.measured_eff[i] - 1);
      t.add({std::to_string(p.m), std::to_string(p.n), std::to_string(p.k), fixed(p.tflops, 1),
             fixed(fit.fitted_eff[i] * peak, 1), (err >= 0 ? "+" : "") + fixed(err, 1) + "%"});
    }
    out += t.render();
  }
  if (f.memory_efficiency)
    out += "\nmemory_efficiency " + fixed(*f.memory_efficiency, 3) + ": best copy " + fixed(f.best_copy_gb_per_s, 0) +
           " GB/s (read + write) of " + fixed(gpu.hbm_bandwidth.value() / 1e9, 0) + " GB/s, times " +
           fixed(calibrate::kKernelShareOfCopy, 2) + ", the share of a copy's rate that training's memory-bound kernels reach\n";
  out += "\nprofile fields (the \"compute\" section of a calibration profile, calibration/README.md):\n" +
         spec::json_text(profile_compute(f)) + "\n";
  return out;
}

}  // namespace dtsim::report
