#include "report/validate_report.h"
#include "spec/json_reader.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "report/kernels.h"
#include "report/simulate_report.h"
#include "report/table.h"

namespace dtsim::report {
namespace {

nlohmann::json summary_json(const ErrorSummary& s) {
  return {{"n", s.n}, {"mape", s.mape}, {"median_abs_pct", s.median_abs_pct}, {"max_abs_pct", s.max_abs_pct}};
}

std::string summary_line(const std::string& name, const ErrorSummary& s) {
  return "  " + name + ": n=" + std::to_string(s.n) + "  mean |err| " + fixed(s.mape, 2) + "%  median |err| " +
         fixed(s.median_abs_pct, 2) + "%  max |err| " + fixed(s.max_abs_pct, 2) + "%\n";
}

// The categories a prediction spends time in, largest first: "compute 9.195 s (88%), ep_comm 0.835 s (8%)".
std::string breakdown_text(const std::array<double, schedule::kCategories>& b) {
  double total = 0;
  for (double s : b) total += std::max(s, 0.0);
  std::vector<std::size_t> order;
  for (std::size_t k = 0; k < b.size(); ++k)
    if (b[k] >= 0.0005) order.push_back(k);  // what rounds to 0.000 s is left out
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return b[x] > b[y]; });
  std::string out;
  for (std::size_t k : order) {
    if (!out.empty()) out += ", ";
    out += std::string(schedule::to_string(static_cast<schedule::Category>(k))) + " " + fixed(b[k], 3) + " s (" +
           fixed(100 * b[k] / total, 0) + "%)";
  }
  return out.empty() ? "no time" : out;
}

// Whether the measured step lies between the fastest and the slowest prediction the case's taken
// value and `field`'s alternatives give (those that fit in memory: the run did): then that unstated
// setting alone can account for the whole miss. Empty when the case has no alternative for it.
std::optional<bool> measured_within(const CaseOutcome& c, const std::string& field) {
  if (!c.predicted_s) return std::nullopt;
  double lo = *c.predicted_s, hi = *c.predicted_s;
  bool any = false;
  for (const calibrate::Alternative& a : c.unstated) {
    if (a.field != field) continue;
    any = true;
    if (a.predicted_s && a.fits) lo = std::min(lo, *a.predicted_s), hi = std::max(hi, *a.predicted_s);
  }
  if (!any) return std::nullopt;
  return lo <= c.measured_s && c.measured_s <= hi;
}

const char* const kUnstatedFields[] = {"micro_batch", "recompute"};

std::string signed_pct(double e) { return (e >= 0 ? "+" : "") + fixed(e, 1) + "%"; }

// Each case's unstated alternatives, one line each under the case with the value it took.
std::string unstated_text(const std::vector<CaseOutcome>& cases) {
  std::string out;
  std::map<std::string, std::pair<std::size_t, std::size_t>> within;  // field -> (within, cases)
  for (const CaseOutcome& c : cases) {
    if (c.unstated.empty()) continue;
    for (const char* f : kUnstatedFields)
      if (auto w = measured_within(c, f)) within[f].first += *w ? 1 : 0, ++within[f].second;
    out += "  " + c.id + ": measured " + fixed(c.measured_s, 2) + " s, predicted " +
           (c.predicted_s ? fixed(*c.predicted_s, 2) + " s (" + signed_pct(*c.error_pct()) + ") at " + c.layout
                          : std::string("-")) +
           "\n";
    for (const calibrate::Alternative& a : c.unstated) {
      out += "    " + a.field + " " + a.value + ": ";
      if (auto e = c.error_pct(a))
        out += fixed(*a.predicted_s, 2) + " s (" + signed_pct(*e) + ")" + (a.fits ? "" : ", exceeds memory");
      else
        out += "not predicted (" + a.failure + ")";
      out += "\n";
    }
  }
  if (out.empty()) return "";
  out = "\nunstated fields: each other value of a null micro-batch or recompute, simulated in place of the one "
        "taken\n" + out;
  for (const auto& [field, n] : within)
    out += "  measured within the range " + field + "'s values that fit in memory span: " + std::to_string(n.first) +
           " of " + std::to_string(n.second) + " cases\n";
  return out;
}

// The cases whose source prints the run's peak memory, against the memory model's peak.
std::string peak_memory_text(const std::vector<CaseOutcome>& cases) {
  Table t({"case", "measured GiB", "predicted GiB", "error"});
  for (const CaseOutcome& c : cases)
    if (c.measured_peak_gib)
      t.add({c.id, fixed(*c.measured_peak_gib, 1), c.peak_gib ? fixed(*c.peak_gib, 1) : "-",
             c.peak_error_pct() ? signed_pct(*c.peak_error_pct()) : "not predicted"});
  ErrorSummary s = summarize_peak(cases);
  if (s.n == 0) return "";
  return "\npeak memory per GPU (the cases whose source prints it)\n" + t.render() + summary_line("peak memory", s);
}

nlohmann::json unstated_json(const CaseOutcome& c) {
  nlohmann::json arr = nlohmann::json::array();
  for (const calibrate::Alternative& a : c.unstated) {
    nlohmann::json j{{"field", a.field}, {"value", a.value}, {"fits", a.fits}};
    j["predicted_s"] = a.predicted_s ? nlohmann::json(*a.predicted_s) : nlohmann::json();
    j["error_pct"] = c.error_pct(a) ? nlohmann::json(*c.error_pct(a)) : nlohmann::json();
    if (!a.failure.empty()) j["reason"] = a.failure;
    arr.push_back(j);
  }
  return arr;
}

}  // namespace

std::vector<std::string> printed_assumptions(const CaseOutcome& c) {
  std::vector<std::string> out = c.assumptions;
  if (c.pace > 1) out.push_back(pace_text(c.pace, c.gpus, c.speed_spread, c.profile));
  return out;
}

std::string validate_report(const std::vector<CaseOutcome>& cases, bool json, bool verbose) {
  std::map<std::string, std::vector<CaseOutcome>> by_tier, by_framework;
  for (const CaseOutcome& c : cases) {
    by_tier[c.tier].push_back(c);
    by_framework[c.tier.empty() ? c.framework : c.framework + " " + c.tier].push_back(c);
  }
  if (json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const CaseOutcome& c : cases) {
      nlohmann::json j{{"id", c.id}, {"tier", c.tier}, {"framework", c.framework}, {"measured_s", c.measured_s},
                       {"assumptions", printed_assumptions(c)}, {"layout", c.layout}};
      j["stack"] = c.stack.empty() ? nlohmann::json() : nlohmann::json(c.stack);
      j["predicted_s"] = c.predicted_s ? nlohmann::json(*c.predicted_s) : nlohmann::json();
      j["error_pct"] = c.error_pct() ? nlohmann::json(*c.error_pct()) : nlohmann::json();
      if (!c.failure.empty()) j["reason"] = c.failure;
      if (c.peak_gib) j["peak_gib"] = *c.peak_gib;
      if (c.measured_peak_gib) {
        j["measured_peak_gib"] = *c.measured_peak_gib;
        j["peak_error_pct"] = c.peak_error_pct() ? nlohmann::json(*c.peak_error_pct()) : nlohmann::json();
      }
      if (c.breakdown_s)
        for (std::size_t k = 0; k < c.breakdown_s->size(); ++k)
          j["breakdown_s"][schedule::to_string(static_cast<schedule::Category>(k))] = (*c.breakdown_s)[k];
      j["fits"] = c.fits;
      if (c.kernels) j["kernels"] = kernels_json(*c.kernels);
      if (!c.unstated.empty()) {
        j["unstated"] = unstated_json(c);
        for (const char* f : kUnstatedFields)
          if (auto w = measured_within(c, f)) j["measured_within_unstated"][f] = *w;
      }
      arr.push_back(j);
    }
    nlohmann::json tiers, frameworks;
    for (const auto& [tier, cs] : by_tier) tiers[tier] = summary_json(summarize(cs));
    for (const auto& [key, cs] : by_framework) frameworks[cs.front().framework][cs.front().tier] = summary_json(summarize(cs));
    nlohmann::json out{{"cases", arr}, {"summary", summary_json(summarize(cases))}, {"tiers", tiers},
                       {"frameworks", frameworks}};
    if (ErrorSummary peak = summarize_peak(cases); peak.n > 0) out["peak_memory"] = summary_json(peak);
    return spec::json_text(out) + "\n";
  }
  Table t({"case", "tier", "measured s", "predicted s", "error"});
  std::string failures;  // listed under the table, so a long reason does not widen its columns
  for (const CaseOutcome& c : cases) {
    t.add({c.id, c.tier, fixed(c.measured_s, 2), c.predicted_s ? fixed(*c.predicted_s, 2) : "-",
           c.error_pct() ? (*c.error_pct() >= 0 ? "+" : "") + fixed(*c.error_pct(), 1) + "%" : "not predicted"});
    if (!c.failure.empty()) failures += "  " + c.id + ": " + c.failure + "\n";
  }
  std::string out = t.render();
  if (!failures.empty()) out += "\nnot predicted\n" + failures;
  out += "\nsummary\n";
  for (const auto& [tier, cs] : by_tier) out += summary_line(tier.empty() ? "(no tier)" : tier, summarize(cs));
  out += summary_line("all", summarize(cases));
  out += "\nby framework and tier\n";
  for (const auto& [key, cs] : by_framework) out += summary_line(key, summarize(cs));
  out += peak_memory_text(cases);
  out += unstated_text(cases);
  if (verbose) {
    out += "\nassumptions per case\n";
    for (const CaseOutcome& c : cases) {
      out += "  " + c.id + ": " + c.layout + "\n";
      for (const std::string& a : printed_assumptions(c)) out += "    - " + a + "\n";
      if (c.breakdown_s) out += "    = " + breakdown_text(*c.breakdown_s) + "\n";
    }
  }
  for (const CaseOutcome& c : cases)
    if (c.kernels) out += "\n" + c.id + ": " + c.layout + "\n" + kernels_table(*c.kernels);
  return out;
}

}  // namespace dtsim::report
