#pragma once
// Output of `dtsim calibrate --nccl-tests / --bench (nccl) / --steps`: per sample or run the
// measurement, the base profile's prediction and the fitted one, and the fitted parameters.
#include <string>

#include <nlohmann/json.hpp>

#include "calibrate/collective_fit.h"
#include "calibrate/step_fit.h"

namespace dtsim::report {

/// Text: per fitted (collective, link class) a table of size, measured time and bus bandwidth,
/// the base's and the fitted busbw, the residual and the algorithm/protocol picked, then the
/// parameters before and after.
[[nodiscard]] std::string collective_fit_text(const calibrate::CollectiveFit& f);
/// JSON {"scopes": [{collective, link_class, rms_log_before, rms_log_after,
/// median_busbw_error_pct_before, median_busbw_error_pct_after (sizes >= 1 MiB), samples: [...],
/// parameters: [...]}]}.
[[nodiscard]] nlohmann::json collective_fit_json(const calibrate::CollectiveFit& f);

/// Text: per run measured, base, fitted and leave-one-out predictions with their errors, the
/// parameters, and the three error summaries.
[[nodiscard]] std::string step_fit_text(const calibrate::StepFit& f);
/// JSON {"parameters": [...], "runs": [...], "skipped": [...], "errors": {before, in_sample, loo}}.
[[nodiscard]] nlohmann::json step_fit_json(const calibrate::StepFit& f);

}  // namespace dtsim::report
