#include "report/plan_report.h"
#include "spec/json_reader.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "report/simulate_report.h"
#include "report/table.h"

namespace dtsim::report {
namespace {

const char* recompute_name(spec::Recompute r) { return spec::to_string(r); }

nlohmann::json config_json(const plan::Result& x) {
  const spec::Parallel& p = x.config.par;
  nlohmann::json j{{"tp", p.tp}, {"pp", p.pp}, {"dp", p.dp}, {"cp", p.cp}, {"ep", p.ep}, {"etp", p.expert_tp()}, {"vp", p.vp},
                   {"zero_stage", p.zero_stage}, {"sequence_parallel", p.sequence_parallel},
                   {"micro_batch", x.config.train.micro_batch}, {"recompute", recompute_name(x.config.train.recompute)},
                   {"step_time_s", x.step.step_time.value()}, {"tokens_per_s", x.step.tokens_per_s},
                   {"mfu", x.step.mfu}, {"peak_bytes_per_gpu", x.peak_memory.value()}, {"objective", x.objective}};
  for (std::size_t c = 0; c < schedule::kCategories; ++c)
    j["breakdown"][schedule::to_string(static_cast<schedule::Category>(c))] = x.step.breakdown[c].value();
  return j;
}

std::string layout(const plan::Result& x) {
  const spec::Parallel& p = x.config.par;
  auto n = [](std::int64_t v) { return std::to_string(v); };
  return "tp " + n(p.tp) + " pp " + n(p.pp) + " dp " + n(p.dp) + " cp " + n(p.cp) + " ep " + n(p.ep) + (p.ep > 1 ? " etp " + n(p.expert_tp()) : "") + " vp " + n(p.vp) +
         " mbs " + n(x.config.train.micro_batch) + " zero " + std::to_string(p.zero_stage) + " sp " +
         (p.sequence_parallel ? "on" : "off") + " recompute " + recompute_name(x.config.train.recompute);
}

std::string csv(const plan::Plan& p, std::size_t top) {
  std::string out = "rank,tp,pp,dp,cp,ep,vp,micro_batch,zero_stage,sequence_parallel,recompute,step_time_s,"
                    "tokens_per_s,mfu,peak_bytes_per_gpu,objective\n";
  for (std::size_t i = 0; i < std::min(top, p.ranked.size()); ++i) {
    const plan::Result& x = p.ranked[i];
    const spec::Parallel& q = x.config.par;
    out += std::to_string(i + 1) + "," + std::to_string(q.tp) + "," + std::to_string(q.pp) + "," + std::to_string(q.dp) +
           "," + std::to_string(q.cp) + "," + std::to_string(q.ep) + "," + std::to_string(q.vp) + "," +
           std::to_string(x.config.train.micro_batch) + "," + std::to_string(q.zero_stage) + "," +
           (q.sequence_parallel ? "1" : "0") + "," + recompute_name(x.config.train.recompute) + "," +
           fixed(x.step.step_time.value(), 6) + "," + fixed(x.step.tokens_per_s, 1) + "," + fixed(x.step.mfu, 5) + "," +
           fixed(x.peak_memory.value(), 0) + "," + fixed(x.objective, 6) + "\n";
  }
  return out;
}

}  // namespace

std::string explain(const plan::Result& a, const plan::Result& b) {
  std::vector<std::pair<double, std::size_t>> diffs;
  for (std::size_t c = 0; c < schedule::kCategories; ++c)
    diffs.push_back({b.step.breakdown[c].value() - a.step.breakdown[c].value(), c});
  std::sort(diffs.begin(), diffs.end(), [](auto x, auto y) { return std::fabs(x.first) > std::fabs(y.first); });
  double gap = b.step.step_time.value() - a.step.step_time.value();
  std::string out = "why #1 beats #2 (" + fixed(gap, 3) + " s per step, " +
                    fixed(100 * gap / b.step.step_time.value(), 1) + "% faster):\n";
  for (std::size_t i = 0; i < 3 && i < diffs.size(); ++i) {
    if (std::fabs(diffs[i].first) < 1e-9) break;
    auto cat = static_cast<schedule::Category>(diffs[i].second);
    out += "  " + std::string(schedule::to_string(cat)) + ": " + fixed(a.step.breakdown[diffs[i].second].value(), 3) +
           " s vs " + fixed(b.step.breakdown[diffs[i].second].value(), 3) + " s\n";
  }
  double headroom = (a.capacity - a.peak_memory).value();
  out += "memory headroom of #1: " + gib_text(headroom) + " of " + gib_text(a.capacity.value()) + " (peak " +
         gib_text(a.peak_memory.value()) + ")\n";
  return out;
}

std::string plan_report(const plan::Request& r, const plan::Plan& p, const plan::Options& o,
                        const calibrate::Uncertainty& u, std::size_t top, PlanFormat f) {
  if (f == PlanFormat::csv) return csv(p, top);
  if (f == PlanFormat::json) {
    nlohmann::json j{{"evaluated", p.ranked.size()}, {"considered", p.space.considered}, {"pruned", p.space.pruned},
                     {"objective", o.objective == plan::Objective::step_time ? "step_time" : "cost_per_token"},
                     {"pace", p.ranked.empty() ? 1.0 : p.ranked.front().step.pace}};
    if (p.seconds) j["seconds"] = *p.seconds;
    j["configs"] = nlohmann::json::array();
    nlohmann::json interval = uncertainty_json(u);
    for (std::size_t i = 0; i < std::min(top, p.ranked.size()); ++i) {
      j["configs"].push_back(config_json(p.ranked[i]));
      j["configs"].back()["uncertainty"] = interval;
    }
    return spec::json_text(j) + "\n";
  }
  std::string out = r.model->name + " on " + std::to_string(r.gpus) + " x " + r.cluster->gpu.name + ", gbs " +
                    std::to_string(r.train.global_batch) + ", seq " + std::to_string(r.train.seq_len) + ", " +
                    spec::to_string(r.train.precision) + "\n";
  if (!p.ranked.empty() && p.ranked.front().step.pace > 1)
    out += "every layout: " +
           pace_text(p.ranked.front().step.pace, r.gpus, r.calibration->compute.speed_spread, r.calibration->name) +
           "\n";
  out += "evaluated " + std::to_string(p.ranked.size()) + " configurations";
  if (p.seconds)
    out += " in " + fixed(*p.seconds, 3) + " s (" +
           fixed(static_cast<double>(p.ranked.size()) / std::max(*p.seconds, 1e-9), 0) + " per second)";
  out += "; pruned:\n";
  for (const auto& [why, n] : p.space.pruned) out += "  " + why + ": " + std::to_string(n) + "\n";
  if (p.ranked.empty()) return out + "no configuration is valid and fits in memory\n";
  Table t({"#", "layout", "step s", "MFU", "peak GiB", o.objective == plan::Objective::step_time ? "" : "$ per Mtok"});
  for (std::size_t i = 0; i < std::min(top, p.ranked.size()); ++i) {
    const plan::Result& x = p.ranked[i];
    t.add({std::to_string(i + 1), layout(x), fixed(x.step.step_time.value(), 3), fixed(100 * x.step.mfu, 1) + "%",
           fixed(to_gib(x.peak_memory), 1), o.objective == plan::Objective::step_time ? "" : fixed(x.objective, 4)});
  }
  out += "\n" + t.render() + "interval of #1 " + uncertainty_text(u, p.ranked.front().step.step_time.value()) + "\n";
  if (p.ranked.size() > 1) out += "\n" + explain(p.ranked[0], p.ranked[1]);
  return out;
}

}  // namespace dtsim::report
