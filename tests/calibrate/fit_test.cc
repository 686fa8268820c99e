#include <catch2/catch.hpp>

#include <cmath>

#include "calibrate/fit.h"
#include "core/errors.h"
#include "cost/compute.h"
#include "spec/calibration.h"
#include "spec/load.h"

using namespace dtsim;
using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;

namespace {

// dtsim-bench's default sweep without the training shapes: squares and the two curve axes.
std::vector<spec::GemmPoint> sweep(const spec::GemmCurve& c, double peak_tflops, double noise = 0) {
  std::vector<std::array<std::int64_t, 3>> shapes;
  for (std::int64_t d : {1024, 2048, 4096, 6144, 8192, 12288, 16384}) shapes.push_back({d, d, d});
  for (std::int64_t m : {256, 512, 1024, 2048}) shapes.push_back({m, 4096, 8192});
  for (std::int64_t k : {256, 512, 1024, 2048, 4096}) shapes.push_back({8192, 8192, k});
  std::vector<spec::GemmPoint> out;
  int i = 0;
  for (auto [m, n, k] : shapes) {
    double mn = static_cast<double>(m * n), kd = static_cast<double>(k);
    double eff = c.max_efficiency * mn / (mn + c.mn_half) * kd / (kd + c.k_half);
    double wobble = 1 + noise * ((i++ % 3) - 1);  // -noise, 0, +noise in turn
    out.push_back({m, n, k, eff * peak_tflops * wobble});
  }
  return out;
}

}  // namespace

TEST_CASE("calibrate::fit_gemm_curve: recovers the curve the points came from", "[calibrate]") {
  spec::Calibration cal = spec::load_calibration(std::string(DTSIM_SOURCE_DIR) + "/calibration/dgx-h100.json");
  for (spec::Dtype d : {spec::Dtype::bf16, spec::Dtype::fp8}) {
    const spec::GemmCurve& c = cal.compute.curve(d);
    double peak = d == spec::Dtype::fp8 ? 1978.9 : 989.4;
    calibrate::GemmFit fit = calibrate::fit_gemm_curve(sweep(c, peak), FlopsPerSecond(peak * 1e12), "--bench");
    CHECK_THAT(fit.curve.max_efficiency, WithinRel(c.max_efficiency, 1e-3));
    CHECK_THAT(fit.curve.mn_half, WithinRel(c.mn_half, 1e-2));
    CHECK_THAT(fit.curve.k_half, WithinRel(c.k_half, 1e-2));
    CHECK(fit.rms_log_error < 1e-3);
    REQUIRE(fit.fitted_eff.size() == 16);
    // The fitted efficiencies are the curve's (cost::gemm_efficiency evaluates the same formula).
    spec::ComputeCalibration fitted = cal.compute;
    fitted.gemm[static_cast<std::size_t>(d)] = fit.curve;
    CHECK_THAT(fit.fitted_eff[4], WithinRel(cost::gemm_efficiency(fitted, d, 8192, 8192, 8192), 1e-12));
  }
}

TEST_CASE("calibrate::fit_gemm_curve: noisy points give a close curve and report the misfit", "[calibrate]") {
  spec::GemmCurve truth{.max_efficiency = 0.8, .mn_half = 1e6, .k_half = 300};
  calibrate::GemmFit fit = calibrate::fit_gemm_curve(sweep(truth, 989.4, 0.03), FlopsPerSecond(989.4e12), "--bench");
  CHECK_THAT(fit.curve.max_efficiency, WithinRel(0.8, 0.03));
  CHECK_THAT(fit.curve.mn_half, WithinRel(1e6, 0.3));
  CHECK_THAT(fit.curve.k_half, WithinRel(300, 0.3));
  CHECK(fit.rms_log_error > 0.01);
  CHECK(fit.rms_log_error < 0.04);
}

TEST_CASE("calibrate::fit_gemm_curve: refuses points that cannot determine it", "[calibrate]") {
  spec::GemmCurve truth{.max_efficiency = 0.8, .mn_half = 1e6, .k_half = 300};
  std::vector<spec::GemmPoint> squares;
  for (const spec::GemmPoint& p : sweep(truth, 989.4))
    if (p.k == 8192) squares.push_back(p);  // one k only
  CHECK_THROWS_WITH(calibrate::fit_gemm_curve(squares, FlopsPerSecond(989.4e12), "--bench"),
                    Contains("--bench") && Contains("two different k"));
  // Rates above the peak: the file was measured on another GPU or dtype.
  CHECK_THROWS_WITH(calibrate::fit_gemm_curve(sweep(truth, 989.4), FlopsPerSecond(312e12), "--bench"),
                    Contains("below the GPU's peak"));
}

TEST_CASE("calibrate::fit_bench_files: one GPU, one sweep per dtype, copy bandwidth", "[calibrate]") {
  spec::Gpu h100 = spec::load_gpu(std::string(DTSIM_SOURCE_DIR) + "/topologies/gpus/h100-sxm5-80gb.json");
  spec::GemmCurve truth{.max_efficiency = 0.8, .mn_half = 1e6, .k_half = 300};
  spec::BenchFile gemm{.path = "g.json", .device = "H100", .sm_count = 132,
                       .gemm = spec::GemmSweep{spec::Dtype::bf16, sweep(truth, 989.4)}};
  spec::BenchFile copy{.path = "c.json", .device = "H100", .sm_count = 132,
                       .copy = {{1 << 20, 2000}, {1 << 30, 2948}}};
  calibrate::Fitted f = calibrate::fit_bench_files({gemm, copy}, h100, "--bench");
  REQUIRE(f.gemm.size() == 1);
  REQUIRE(f.memory_efficiency);
  // The copy's share of HBM times the share of a copy's rate that a step's memory-bound kernels reach.
  CHECK_THAT(*f.memory_efficiency, WithinRel(2948.0 / 3350.0 * calibrate::kKernelShareOfCopy, 1e-12));
  CHECK_THAT(f.best_copy_gb_per_s, WithinRel(2948.0, 1e-12));
  CHECK_THROWS_WITH(calibrate::fit_bench_files({gemm, gemm}, h100, "--bench"), Contains("two of bf16"));
  spec::BenchFile other = copy;
  other.device = "A100";
  CHECK_THROWS_WITH(calibrate::fit_bench_files({gemm, other}, h100, "--bench"), Contains("one kind of GPU"));
  spec::BenchFile fast = copy;
  fast.copy = {{1 << 30, 4000}};
  CHECK_THROWS_WITH(calibrate::fit_bench_files({fast}, h100, "--bench"), Contains("below the GPU's HBM bandwidth"));
}
