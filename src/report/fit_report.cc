#include "report/fit_report.h"

#include <cmath>

#include "cost/collective.h"
#include "report/table.h"

namespace dtsim::report {
namespace {

using calibrate::CollectiveSample;

constexpr double kMiB = 1 << 20;

std::string signed_pct(double v) { return (v >= 0 ? "+" : "") + fixed(v, 1) + "%"; }

double gbps(const CollectiveSample& s, Seconds t) { return calibrate::bus_bandwidth(s, t) / 1e9; }

std::string chosen(const calibrate::SampleFit& s) {
  return std::string(s.hierarchical ? "hierarchical+" : "") + spec::to_string(s.algo) + " " + spec::to_string(s.protocol);
}

std::string scope_title(const calibrate::ScopeFit& f) {
  return std::string(spec::to_string(f.op)) + " -> " + (f.inter_node ? "inter_node" : "intra_node") + " table";
}

nlohmann::json errors_json(const calibrate::StepErrors& e) {
  return {{"mean_abs_pct", e.mean_pct}, {"median_abs_pct", e.median_pct}, {"max_abs_pct", e.max_pct}};
}

std::string errors_line(const std::string& name, const calibrate::StepErrors& e) {
  return "  " + name + ": mean |err| " + fixed(e.mean_pct, 2) + "%  median " + fixed(e.median_pct, 2) + "%  max " +
         fixed(e.max_pct, 2) + "%\n";
}

}  // namespace

std::string collective_fit_text(const calibrate::CollectiveFit& f) {
  std::string out;
  for (const calibrate::ScopeFit& s : f.scopes) {
    out += (out.empty() ? "" : "\n") + scope_title(s) + ": rms ln(time) " + fixed(s.rms_log_before, 3) + " -> " +
           fixed(s.rms_log_after, 3) + "; median |busbw error| over sizes >= 1 MiB " +
           fixed(100 * calibrate::median_busbw_error(s, kMiB, false), 1) + "% -> " +
           fixed(100 * calibrate::median_busbw_error(s, kMiB), 1) + "%\n";
    Table t({"group", "size_B", "measured_us", "busbw", "base_busbw", "fitted_busbw", "error", "picks"});
    for (const calibrate::SampleFit& x : s.samples) {
      const CollectiveSample& m = x.sample;
      double err = 100 * (m.time.value() / x.after.value() - 1);
      t.add({std::to_string(m.ranks / m.ranks_per_node) + "x" + std::to_string(m.ranks_per_node),
             fixed(m.bytes, 0), fixed(to_us(m.time), 2), fixed(gbps(m, m.time), 2), fixed(gbps(m, x.before), 2),
             fixed(gbps(m, x.after), 2), signed_pct(err), chosen(x)});
    }
    out += t.render();
    Table p({"entry", "field", "base", "fitted", ""});
    for (const calibrate::FittedParam& q : s.params)
      p.add({std::string(spec::to_string(q.algo)) + " " + spec::to_string(q.protocol), q.field, fixed(q.before, 3),
             fixed(q.after, 3), q.at_bound ? "at its limit" : ""});
    out += "\n" + p.render();
  }
  return out;
}

nlohmann::json collective_fit_json(const calibrate::CollectiveFit& f) {
  nlohmann::json scopes = nlohmann::json::array();
  for (const calibrate::ScopeFit& s : f.scopes) {
    nlohmann::json samples = nlohmann::json::array(), params = nlohmann::json::array();
    for (const calibrate::SampleFit& x : s.samples) {
      const CollectiveSample& m = x.sample;
      samples.push_back({{"ranks", m.ranks}, {"ranks_per_node", m.ranks_per_node}, {"size_bytes", m.bytes},
                         {"measured_us", to_us(m.time)}, {"busbw_measured_GBps", gbps(m, m.time)},
                         {"busbw_base_GBps", gbps(m, x.before)}, {"busbw_fitted_GBps", gbps(m, x.after)},
                         {"error_pct", 100 * (m.time.value() / x.after.value() - 1)},
                         {"algorithm", std::string(x.hierarchical ? "hierarchical+" : "") + spec::to_string(x.algo)},
                         {"protocol", spec::to_string(x.protocol)}, {"source", m.source}});
    }
    for (const calibrate::FittedParam& q : s.params)
      params.push_back({{"algorithm", spec::to_string(q.algo)}, {"protocol", spec::to_string(q.protocol)},
                        {"field", q.field}, {"before", q.before}, {"after", q.after}, {"at_bound", q.at_bound}});
    scopes.push_back({{"collective", spec::to_string(s.op)}, {"link_class", s.inter_node ? "inter_node" : "intra_node"},
                      {"rms_log_before", s.rms_log_before}, {"rms_log_after", s.rms_log_after},
                      {"median_busbw_error_pct_before", 100 * calibrate::median_busbw_error(s, kMiB, false)},
                      {"median_busbw_error_pct_after", 100 * calibrate::median_busbw_error(s, kMiB)},
                      {"samples", samples}, {"parameters", params}});
  }
  return {{"scopes", scopes}};
}

std::string step_fit_text(const calibrate::StepFit& f) {
  Table t({"run", "measured_s", "base_s", "error", "fitted_s", "error", "loo_s", "error"});
  for (const calibrate::StepFitCase& c : f.cases) {
    auto err = [&](double p) { return signed_pct(100 * (p / c.measured_s - 1)); };
    t.add({c.id, fixed(c.measured_s, 3), fixed(c.before_s, 3), err(c.before_s), fixed(c.fitted_s, 3), err(c.fitted_s),
           c.loo_s ? fixed(*c.loo_s, 3) : "-", c.loo_s ? err(*c.loo_s) : "-"});
  }
  std::string out = t.render();
  for (const std::string& s : f.skipped) out += "  not simulated: " + s + "\n";
  Table p({"parameter", "base", "fitted", ""});
  for (const calibrate::StepParamValue& v : f.params)
    p.add({calibrate::to_string(v.param), fixed(v.before, 3), fixed(v.after, 3), v.at_bound ? "at its limit" : ""});
  out += "\n" + p.render() + "\n|predicted / measured - 1| over " + std::to_string(f.cases.size()) + " runs\n";
  out += errors_line("base profile         ", f.before);
  out += errors_line("fitted, in sample    ", f.in_sample);
  if (f.loo) out += errors_line("fitted, leave-one-out", *f.loo);
  else out += "  leave-one-out: needs at least " + std::to_string(f.params.size() + 2) + " runs\n";
  return out;
}

nlohmann::json step_fit_json(const calibrate::StepFit& f) {
  nlohmann::json runs = nlohmann::json::array(), params = nlohmann::json::array();
  for (const calibrate::StepFitCase& c : f.cases) {
    nlohmann::json r{{"id", c.id}, {"measured_s", c.measured_s}, {"base_s", c.before_s}, {"fitted_s", c.fitted_s}};
    r["loo_s"] = c.loo_s ? nlohmann::json(*c.loo_s) : nlohmann::json();
    runs.push_back(r);
  }
  for (const calibrate::StepParamValue& v : f.params)
    params.push_back({{"name", calibrate::to_string(v.param)}, {"before", v.before}, {"after", v.after},
                      {"at_bound", v.at_bound}});
  nlohmann::json e{{"before", errors_json(f.before)}, {"in_sample", errors_json(f.in_sample)}};
  e["loo"] = f.loo ? errors_json(*f.loo) : nlohmann::json();
  return {{"parameters", params}, {"runs", runs}, {"skipped", f.skipped}, {"errors", e}};
}

}  // namespace dtsim::report
