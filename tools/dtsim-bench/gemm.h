#pragma once
// Sustained cuBLASLt GEMM throughput per shape: the measurements behind a calibration profile's
// GEMM curve (calibration/README.md).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtsim::bench {

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;  ///< D[m x n] = A[m x k] B[k x n]
};

struct GemmOptions {
  std::string dtype = "bf16";     ///< bf16, fp16 (16-bit in and out) or fp8 (e4m3 in, bf16 out)
  /// D = D + A B into an fp32 D (beta 1), as the weight-gradient GEMMs of Megatron-LM's gradient
  /// accumulation fusion write fp32 main grads (`wgrad_gemm_accum_fp32`; Transformer Engine's
  /// `fuse_wgrad_accumulation`). 16-bit inputs only.
  bool accumulate_fp32 = false;
  double warmup_s = 10;           ///< time the largest shape runs before any is measured
  double seconds = 2;             ///< measured time per shape
  std::size_t workspace = 32u << 20;  ///< cuBLASLt workspace (Transformer Engine uses 32 MiB on Hopper)
};

/// The default sweep: squares, the fitted curve's m*n and k axes, and transformer training shapes.
[[nodiscard]] std::vector<GemmShape> default_gemm_shapes();

/// Parses "m,n,k;m,n,k;..."; throws std::invalid_argument naming the bad entry.
[[nodiscard]] std::vector<GemmShape> parse_gemm_shapes(const std::string& text);

/// Runs the sweep on the current device: inputs filled with random values (a GEMM's power, and
/// so its clock under the cap, depends on the bits it multiplies), the largest shape held for
/// `warmup_s` so the clock settles where the power cap puts it, then each shape repeated for
/// `seconds` in batches timed by CUDA events. Returns {"dtype", ..., "results": [{m, n, k,
/// tflops (sustained over the window), tflops_min, tflops_max (per batch), iterations, seconds}]}.
[[nodiscard]] nlohmann::json run_gemm(const std::vector<GemmShape>& shapes, const GemmOptions& opt);

}  // namespace dtsim::bench
