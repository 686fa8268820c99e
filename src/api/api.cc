// The public API (include/dtsim/) over the CLI's subcommands, run in this process with --json:
// results are read from the very JSON the command line prints.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/errors.h"
#include "dtsim/dtsim.h"

namespace dtsim {
namespace {

using nlohmann::json;

double num(const json& j, const char* key) { return j.contains(key) && j.at(key).is_number() ? j.at(key).get<double>() : 0.0; }
std::int64_t count(const json& j, const char* key) {
  return j.contains(key) && j.at(key).is_number() ? j.at(key).get<std::int64_t>() : 0;
}

// Runs a subcommand with --json; bad input becomes dtsim::Error with the CLI's line.
std::string run(std::vector<std::string> args) {
  args.emplace_back("--json");
  std::string out;
  try {
    if (int status = cli::run_in_process(args, out); status != 0)
      throw Error(args.front() + ": exit status " + std::to_string(status));
  } catch (const SpecError& e) {
    throw Error(e.what());
  } catch (const CLI::Error& e) {
    throw Error(std::string(e.get_name()) + ": " + e.what());
  }
  return out;
}

Memory memory_of(const json& m) {
  return {.parameters = num(m, "parameters_bytes"), .gradients = num(m, "gradients_bytes"),
          .optimizer = num(m, "optimizer_bytes"), .activations = num(m, "activations_bytes"),
          .other = num(m, "other_bytes"), .peak = num(m, "peak_bytes_per_gpu"), .capacity = num(m, "capacity_bytes"),
          .fits = m.contains("fits") && m.at("fits").is_boolean() && m.at("fits").get<bool>()};
}

ErrorSummary summary_of(const json& s) {
  return {.n = count(s, "n"), .mape = num(s, "mape"), .median_abs_pct = num(s, "median_abs_pct"),
          .max_abs_pct = num(s, "max_abs_pct")};
}

std::vector<std::string> with(std::vector<std::string> head, const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

}  // namespace

std::vector<std::string> Job::args(bool layout) const {
  std::vector<std::string> a{"--model", model, "--cluster", cluster};
  auto put = [&](const char* flag, const auto& v) {
    static const std::vector<std::string> layout_flags = {"--tp", "--pp", "--dp", "--cp", "--ep", "--etp", "--vp",
                                                         "--zero", "--mbs", "--recompute"};
    if (!v || (!layout && std::find(layout_flags.begin(), layout_flags.end(), flag) != layout_flags.end())) return;
    a.emplace_back(flag);
    if constexpr (std::is_same_v<std::decay_t<decltype(*v)>, std::string>) a.push_back(*v);
    else a.push_back(std::to_string(*v));
  };
  put("--gpus", gpus); put("--tp", tp); put("--pp", pp); put("--dp", dp); put("--cp", cp); put("--ep", ep);
  put("--etp", etp); put("--vp", vp); put("--zero", zero); put("--mbs", mbs); put("--gbs", gbs); put("--seq", seq);
  put("--precision", precision); put("--recompute", recompute); put("--framework", framework);
  put("--calibration", calibration);
  if (layout && sp && *sp) a.emplace_back("--sp");
  for (const auto& [name, value] : options) {
    a.push_back("--" + name);
    if (!value.empty()) a.push_back(value);
  }
  return a;
}

StepResult simulate(const Job& job) {
  StepResult r;
  r.json = run(with({"simulate"}, job.args()));
  json j = json::parse(r.json);
  r.step_time_s = num(j, "step_time_s");
  r.tokens_per_s = num(j, "tokens_per_s");
  r.mfu = num(j, "mfu");
  r.model_tflops_per_gpu = num(j, "model_tflops_per_gpu");
  for (const auto& [k, v] : j.at("breakdown").items()) r.breakdown_s[k] = v.get<double>();
  r.memory = memory_of(j.at("memory"));
  for (const json& n : j.at("notes")) r.notes.push_back(n.get<std::string>());
  return r;
}

MemoryResult memory(const Job& job) {
  MemoryResult r;
  r.json = run(with({"memory"}, job.args()));
  json j = json::parse(r.json);
  r.memory = memory_of(j.at("memory"));
  r.parameters = num(j, "parameters");
  return r;
}

PlanResult plan(const Job& job, const PlanOptions& o) {
  std::vector<std::string> a = with({"plan"}, job.args(false));
  a.insert(a.end(), {"--top", std::to_string(o.top)});
  for (const auto& [k, v] : o.fix) a.insert(a.end(), {"--fix", k + "=" + v});
  if (o.objective) a.insert(a.end(), {"--objective", *o.objective});
  if (o.price_per_gpu_hour) a.insert(a.end(), {"--price-per-gpu-hour", std::to_string(*o.price_per_gpu_hour)});
  if (o.threads) a.insert(a.end(), {"--threads", std::to_string(*o.threads)});
  PlanResult r;
  r.json = run(a);
  json j = json::parse(r.json);
  r.evaluated = count(j, "evaluated");
  r.considered = count(j, "considered");
  for (const auto& [k, v] : j.at("pruned").items()) r.pruned[k] = v.get<std::int64_t>();
  for (const json& c : j.at("configs"))
    r.configs.push_back({.tp = count(c, "tp"), .pp = count(c, "pp"), .dp = count(c, "dp"), .cp = count(c, "cp"),
                         .ep = count(c, "ep"), .etp = count(c, "etp"), .vp = count(c, "vp"),
                         .micro_batch = count(c, "micro_batch"), .zero_stage = count(c, "zero_stage"),
                         .sequence_parallel = c.at("sequence_parallel").get<bool>(),
                         .recompute = c.at("recompute").get<std::string>(), .step_time_s = num(c, "step_time_s"),
                         .tokens_per_s = num(c, "tokens_per_s"), .mfu = num(c, "mfu"),
                         .peak_bytes_per_gpu = num(c, "peak_bytes_per_gpu"), .objective = num(c, "objective")});
  return r;
}

ValidateResult validate(const std::string& path, const std::vector<std::string>& flags) {
  ValidateResult r;
  r.json = run(with({"validate", path}, flags));
  json j = json::parse(r.json);
  for (const json& c : j.at("cases")) {
    bool predicted = c.at("predicted_s").is_number();
    r.cases.push_back({.id = c.at("id").get<std::string>(),
                       .tier = c.contains("tier") && c.at("tier").is_string() ? c.at("tier").get<std::string>() : "",
                       .measured_s = num(c, "measured_s"), .predicted_s = num(c, "predicted_s"),
                       .predicted = predicted, .error_pct = num(c, "error_pct")});
  }
  r.summary = summary_of(j.at("summary"));
  for (const auto& [tier, s] : j.at("tiers").items()) r.tiers[tier] = summary_of(s);
  return r;
}

std::string run_json(const std::vector<std::string>& args) {
  if (args.empty()) throw Error("expected a subcommand, got none");
  return run(args);
}

std::string version() { return DTSIM_VERSION; }

}  // namespace dtsim
