#pragma once
// `dtsim validate` output: predicted vs measured per case, and a summary.
#include <optional>
#include <string>
#include <vector>

namespace dtsim::report {

/// One case's outcome: a prediction, or the reason there is none.
struct CaseOutcome {
  std::string id;
  std::string tier;
  double measured_s = 0;
  std::optional<double> predicted_s;
  std::string failure;                  ///< why no prediction (invalid config, does not fit)
  std::vector<std::string> assumptions;
  std::string layout;                   ///< "tp 8 pp 16 dp 8 ..." as simulated
  std::optional<double> peak_gib;
  bool fits = true;
  [[nodiscard]] std::optional<double> error_pct() const;  ///< (predicted - measured) / measured * 100
};

/// Summary statistics over cases with a prediction.
struct ErrorSummary {
  std::size_t n = 0;
  double mape = 0, median_abs_pct = 0, max_abs_pct = 0;
};

/// Mean, median and max of |error| over `cases` (those with a prediction).
[[nodiscard]] ErrorSummary summarize(const std::vector<CaseOutcome>& cases);

/// Table (with per-tier summaries) or JSON {"cases":[...],"summary":{...}} per DESIGN.md.
[[nodiscard]] std::string validate_report(const std::vector<CaseOutcome>& cases, bool json, bool verbose);

}  // namespace dtsim::report
