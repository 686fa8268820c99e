#pragma once
// `dtsim validate` output: predicted vs measured per case, and a summary.
#include <optional>
#include <string>
#include <vector>

#include "calibrate/cases.h"

namespace dtsim::report {

// The outcome types live with the code that produces them (calibrate/cases.h).
using calibrate::CaseOutcome;
using calibrate::ErrorSummary;
using calibrate::summarize;

/// A case's assumptions as printed: its own, then the pace it ran at when above 1.
[[nodiscard]] std::vector<std::string> printed_assumptions(const CaseOutcome& c);

/// Table (with per-tier summaries) or JSON {"cases":[...],"summary":{...}} per DESIGN.md.
[[nodiscard]] std::string validate_report(const std::vector<CaseOutcome>& cases, bool json, bool verbose);

}  // namespace dtsim::report
