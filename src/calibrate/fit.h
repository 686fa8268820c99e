#pragma once
// Fitting a calibration profile's compute fields to dtsim-bench measurements.
#include <optional>
#include <string>
#include <vector>

#include "core/units.h"
#include "spec/bench_file.h"
#include "spec/calibration.h"

namespace dtsim::calibrate {

/// A GEMM curve fitted to measured shapes, with how well it fits.
struct GemmFit {
  spec::GemmCurve curve;
  double rms_log_error = 0;           ///< root mean square of ln(fitted / measured)
  std::vector<double> measured_eff;   ///< per point, measured TFLOP/s / peak
  std::vector<double> fitted_eff;     ///< per point, the curve's efficiency
};

/// Fits eff = max * mn/(mn + mn_half) * k/(k + k_half) (spec::GemmCurve) to measured efficiencies
/// by least squares on ln(eff), the way calibration/dgx-h100.md fitted XLA's table: for each
/// (mn_half, k_half) on a log grid, ln(max) is the mean residual in closed form; the best cell is
/// refined on a finer grid. Throws SpecError naming `flag` when the points cannot determine the
/// curve (fewer than two distinct m*n or k) or the asymptote exceeds the peak (a wrong --gpu).
[[nodiscard]] GemmFit fit_gemm_curve(const std::vector<spec::GemmPoint>& points, FlopsPerSecond peak,
                                     const std::string& flag);

/// The share of a device copy's bandwidth that a training step's memory-bound kernels reach
/// (softmax, norms, activations, dropout, casts, the optimizer: framework kernels, not tuned
/// streaming loops). On one A100 40GB SXM both are published: Megatron's and PyTorch's unfused
/// attention forward, which streams its score matrices, fits memory_efficiency 0.70 (FlashAttention,
/// Dao et al. 2022, App. E.6 Tables 18-19; docs/research/unfused-attention-a100.md) where a copy
/// reaches 1,311 of 1,555 GB/s (0.843, pc2/GPUInspector.jl docs/src/devices/a100_sxm2.md):
/// 0.70 / 0.843 = 0.83.
inline constexpr double kKernelShareOfCopy = 0.83;

/// memory_efficiency: the best copy bandwidth (read + write) over the GPU's HBM bandwidth, times
/// kKernelShareOfCopy. Throws SpecError naming `flag` when the copy exceeds the preset's bandwidth.
[[nodiscard]] double fit_memory_efficiency(const std::vector<spec::CopyPoint>& points, BytesPerSecond hbm,
                                           const std::string& flag);

/// A curve as a profile writes it: max_efficiency to 3 decimals, mn_half and k_half to 3
/// significant digits (the fit does not pin them closer).
[[nodiscard]] spec::GemmCurve rounded(const spec::GemmCurve& c);
/// An efficiency as a profile writes it: 3 decimals.
[[nodiscard]] double rounded_efficiency(double e);

/// Everything fitted from a set of dtsim-bench files for one GPU preset.
struct Fitted {
  std::string device;   ///< the GPU name the files report
  std::int64_t sm_count = 0;
  std::vector<std::pair<spec::GemmSweep, GemmFit>> gemm;  ///< one per dtype measured
  std::optional<double> memory_efficiency;               ///< when a copy sweep was given
  double best_copy_gb_per_s = 0;
};

/// Fits every sweep in `files` against `gpu`'s peaks and bandwidth. Throws SpecError naming `flag`
/// when the files come from different GPUs or measure one dtype twice.
[[nodiscard]] Fitted fit_bench_files(const std::vector<spec::BenchFile>& files, const spec::Gpu& gpu,
                                     const std::string& flag);

/// The profile fields of `f`, rounded, to patch into a profile (spec::patched_profile_text).
[[nodiscard]] spec::ProfilePatch compute_patch(const Fitted& f);

}  // namespace dtsim::calibrate
