#pragma once
// Output of `dtsim calibrate`: fitted compute fields, how well they fit, and the profile snippet.
#include <string>

#include "calibrate/fit.h"
#include "spec/gpu.h"

namespace dtsim::report {

/// Text (a table per GEMM sweep, then the profile fields as JSON to paste) or one JSON object
/// {gpu, device, sm_count, gemm: {DTYPE: {max_efficiency, mn_half, k_half, rms_log_error,
/// points: [{m, n, k, measured_tflops, fitted_tflops}]}}, memory_efficiency, best_copy_gb_per_s,
/// profile_compute: {gemm: {...}, memory_efficiency}}.
[[nodiscard]] std::string calibrate_report(const calibrate::Fitted& f, const spec::Gpu& gpu, bool json);

}  // namespace dtsim::report
