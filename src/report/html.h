#pragma once
// Reports people look at (issue #18): SVG charts of a simulated step and of a plan, and
// self-contained HTML pages holding them (inline SVG and CSS; no scripts, no external resources).
// Pure: value in, string out. Text from the input is XML-escaped, every number is finite and
// formatted without the locale, and nothing depends on the clock, so one input gives one page.
#include <cstddef>
#include <string>

#include "calibrate/residuals.h"
#include "cost/memory.h"
#include "engine/simulate.h"
#include "plan/planner.h"
#include "report/simulate_report.h"

namespace dtsim::report {

/// Width in px of the timeline's time axis: tasks narrower than 1 px of it are merged.
inline constexpr double kTimelineWidthPx = 1200;

/// The step breakdown (seconds by schedule::Category) as one horizontal stacked bar with a legend
/// entry per non-zero category and the total ("total 0.8345 s"); a standalone SVG document.
[[nodiscard]] std::string breakdown_svg(const engine::StepResult& r, const std::string& title);

/// The step's timeline: a row per pipeline stage (its compute stream; backward passes show their
/// recomputation first) and a thinner row per communication stream that ran anything, a rectangle
/// per task coloured by kind, x = seconds on an axis `width_px` wide. Runs of tasks narrower than
/// 1 px are merged (svg::pack_row), so a step of any size stays O(rows x width_px) rectangles;
/// each rectangle's tooltip names its task or what was merged. Standalone SVG.
[[nodiscard]] std::string timeline_svg(const engine::Simulation& sim, const std::string& title,
                                       double width_px = kTimelineWidthPx);

/// Every ranked config of `p` as a point (x = peak memory per GPU in GiB, y = step time in s);
/// the Pareto-optimal ones (no other config is no slower and no larger, and better in one) are
/// highlighted and joined, and the best ranked labelled with its layout. Configs that fall on one
/// pixel are drawn once (Pareto points always). An empty plan gives an SVG that says "no
/// configuration fits". Standalone SVG.
[[nodiscard]] std::string pareto_svg(const plan::Plan& p, const std::string& title);

/// A simulate run as one HTML page: title, the job, key numbers (step time, tokens/s, MFU, peak
/// memory against capacity), the interval `u`, the breakdown bar and the timeline. The inputs are
/// simulate_report's, with the whole Simulation (graph and timeline) instead of its result.
[[nodiscard]] std::string simulate_html(const JobView& job, const engine::Simulation& sim,
                                        const cost::MemoryEstimate& mem, const calibrate::Uncertainty& u);

/// A plan as one HTML page: the request, what was pruned, the `top` best configs as a table, the
/// interval `u` of the best and the Pareto front; "no configuration fits" when `p` ranked none.
/// The inputs are plan_report's; the search's wall time is left out, so the page is reproducible.
[[nodiscard]] std::string plan_html(const plan::Request& r, const plan::Plan& p, const plan::Options& o,
                                    const calibrate::Uncertainty& u, std::size_t top);

}  // namespace dtsim::report
