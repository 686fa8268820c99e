#pragma once
// `dtsim-residuals/1` files: dtsim's signed step-time error on each published run it predicts,
// written by `dtsim validate FILE --residuals OUT.json` (calibration/residuals.json ships one).
// `dtsim simulate` and `dtsim plan` read them to say how far measured runs like the job fell
// from dtsim's predictions (calibrate/residuals.h).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dtsim::spec {

/// One predicted case: where it ran and how far the prediction was off.
struct ResidualCase {
  std::string id;
  std::string tier;
  std::string gpu;        ///< the cluster's GPU preset name ("h100-sxm5-80gb")
  std::string cluster;    ///< cluster preset ("dgx-h100")
  std::string framework;  ///< the stack the case ran on ("nemo")
  std::int64_t gpus = 0;
  std::string precision;  ///< training precision as simulated: "fp16", "bf16", "fp8" or "fp4"
  double error_pct = 0;   ///< (predicted - measured) / measured * 100; > -100
  /// The memory model's peak against the run's measured one, the same way (when the case has one).
  std::optional<double> peak_error_pct;
  bool operator==(const ResidualCase&) const = default;
};

/// The whole file.
struct ResidualsFile {
  std::string source;  ///< the command that wrote it, without date: "dtsim validate FILE"
  std::vector<ResidualCase> cases;
  bool operator==(const ResidualsFile&) const = default;
};

/// Parses a `dtsim-residuals/1` file; throws SpecError (file + JSON pointer) on a malformed one
/// (unknown keys, a "count" that is not the number of cases, error_pct <= -100).
[[nodiscard]] ResidualsFile parse_residuals_file(const std::string& text, const std::string& file);
/// Reads and parses a file; throws SpecError naming it when it cannot be read.
[[nodiscard]] ResidualsFile load_residuals_file(const std::string& path);
/// The file's JSON text: keys sorted, cases in the given order, error_pct rounded to 0.001, so
/// the same residuals always give the same bytes.
[[nodiscard]] std::string residuals_file_text(const ResidualsFile& f);

}  // namespace dtsim::spec
