#pragma once
// `dtsim plan` output: ranked table, JSON or CSV, and why the winner wins.
#include <string>

#include "calibrate/residuals.h"
#include "plan/planner.h"

namespace dtsim::report {

enum class PlanFormat { text, json, csv };

/// The top `top` configs of `p`, pruning counts and (text) the winner's explanation and interval;
/// `u` is the job's interval (it depends on the job's family only, so every config shares it).
[[nodiscard]] std::string plan_report(const plan::Request& r, const plan::Plan& p, const plan::Options& o,
                                      const calibrate::Uncertainty& u, std::size_t top, PlanFormat f);

/// Why `a` beats `b`: the breakdown categories that differ most, and `a`'s memory headroom.
[[nodiscard]] std::string explain(const plan::Result& a, const plan::Result& b);

}  // namespace dtsim::report
