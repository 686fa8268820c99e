#include "report/plan_shard.h"

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "spec/json_reader.h"

namespace dtsim::report {
namespace {

using nlohmann::json;

json result_json(const plan::Result& r) {
  const engine::StepResult& s = r.step;
  json breakdown = json::array();
  for (Seconds b : s.breakdown) breakdown.push_back(b.value());
  return {{"candidate", r.candidate}, {"objective", r.objective}, {"step_time_s", s.step_time.value()},
          {"breakdown_s", breakdown}, {"critical_stage", s.critical_stage}, {"tokens_per_s", s.tokens_per_s},
          {"model_tflops_per_gpu", s.model_tflops_per_gpu}, {"mfu", s.mfu}, {"hfu", s.hfu}, {"pace", s.pace},
          {"microbatches", s.microbatches}, {"tasks", s.tasks}, {"peak_bytes", r.peak_memory.value()},
          {"capacity_bytes", r.capacity.value()}};
}

// A number as written (zero allowed, any sign: breakdowns and objectives are what the run found).
double number(spec::ObjectReader& r, const json& j, const char* key) {
  if (!j.contains(key) || !j.at(key).is_number()) r.fail(key, "expected a number, got " + (j.contains(key) ? spec::describe(j.at(key)) : std::string("none")));
  r.skip(key);
  return j.at(key).get<double>();
}

plan::Result read_result(const json& j, const std::string& file, const std::string& at, std::int64_t candidates) {
  spec::ObjectReader r(j, file, at);
  plan::Result x;
  x.candidate = r.integer("candidate", 0, candidates - 1);
  x.objective = number(r, j, "objective");
  engine::StepResult& s = x.step;
  s.step_time = Seconds(number(r, j, "step_time_s"));
  const json& b = r.array("breakdown_s");
  if (b.size() != s.breakdown.size())
    r.fail("breakdown_s", "expected " + std::to_string(s.breakdown.size()) + " categories, got " + std::to_string(b.size()));
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (!b[i].is_number())
      throw SpecError(file + ":" + at + "/breakdown_s/" + std::to_string(i), "expected a number, got " + spec::describe(b[i]));
    s.breakdown[i] = Seconds(b[i].get<double>());
  }
  s.critical_stage = r.integer("critical_stage", 0, 1 << 20);
  s.tokens_per_s = number(r, j, "tokens_per_s");
  s.model_tflops_per_gpu = number(r, j, "model_tflops_per_gpu");
  s.mfu = number(r, j, "mfu");
  s.hfu = number(r, j, "hfu");
  s.pace = number(r, j, "pace");
  s.microbatches = r.integer("microbatches", 0, std::int64_t{1} << 40);
  s.tasks = static_cast<std::size_t>(r.integer("tasks", 0, std::int64_t{1} << 40));
  x.peak_memory = Bytes(number(r, j, "peak_bytes"));
  x.capacity = Bytes(number(r, j, "capacity_bytes"));
  r.finish();
  return x;
}

}  // namespace

std::string plan_shard_text(const PlanShard& s) {
  json j{{"schema", "dtsim-plan-shard/1"}, {"shard", s.shard}, {"shards", s.shards}, {"candidates", s.candidates},
         {"args", s.args}};
  j["results"] = json::array();
  for (const plan::Result& r : s.results) j["results"].push_back(result_json(r));
  return spec::json_text(j, -1) + "\n";
}

PlanShard parse_plan_shard(const std::string& text, const std::string& file) {
  json j = spec::parse_json_text(text, file);
  spec::ObjectReader r(j, file, "");
  std::string schema = r.string("schema");
  if (schema != "dtsim-plan-shard/1") r.fail("schema", "expected \"dtsim-plan-shard/1\", got \"" + schema + "\"");
  PlanShard s;
  s.shards = r.integer("shards", 1, 1 << 20);
  s.shard = r.integer("shard", 0, s.shards - 1);
  s.candidates = r.integer("candidates", 0, std::int64_t{1} << 40);
  const json& args = r.array("args");
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!args[i].is_string()) throw SpecError(file + ":/args/" + std::to_string(i), "expected a string, got " + spec::describe(args[i]));
    s.args.push_back(args[i].get<std::string>());
  }
  const json& results = r.array("results");
  for (std::size_t i = 0; i < results.size(); ++i)
    s.results.push_back(read_result(results[i], file, "/results/" + std::to_string(i), s.candidates));
  r.finish();
  return s;
}

}  // namespace dtsim::report
