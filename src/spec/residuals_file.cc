#include "spec/residuals_file.h"

#include <cmath>
#include <limits>

#include "spec/json_reader.h"
#include "spec/load.h"

namespace dtsim::spec {
namespace {

constexpr const char* kSchema = "dtsim-residuals/1";

// A signed percentage: any finite number above -100 (a prediction of zero or less is no prediction).
// nullopt when an optional key is absent.
std::optional<double> error_pct(ObjectReader& e, const nlohmann::json& element, const char* key, bool required) {
  e.skip(key);
  auto it = element.find(key);
  if (it == element.end()) {
    if (required) e.fail(key, "missing required key");
    return std::nullopt;
  }
  if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() <= -100)
    e.fail(key, "expected a number > -100 (predicted vs measured, percent), got " + describe(*it));
  return it->get<double>();
}

ResidualCase parse_case(const nlohmann::json& element, const std::string& file, const std::string& pointer) {
  ObjectReader e(element, file, pointer);
  ResidualCase c;
  c.id = e.string("id");
  c.tier = e.string("tier");
  c.gpu = e.string("gpu");
  c.cluster = e.string("cluster");
  c.framework = e.string("framework");
  c.gpus = e.integer("gpus", 1, std::int64_t{1} << 24);
  static const char* const kPrecisions[] = {"fp16", "bf16", "fp8", "fp4"};
  c.precision = kPrecisions[e.choice("precision", {"fp16", "bf16", "fp8", "fp4"})];
  c.error_pct = *error_pct(e, element, "error_pct", true);
  c.peak_error_pct = error_pct(e, element, "peak_error_pct", false);
  e.finish();
  return c;
}

// 0.001 percentage points: far below what the interval prints, and stable against the last bits
// of a double.
double rounded(double pct) { return std::round(pct * 1000.0) / 1000.0; }

}  // namespace

ResidualsFile parse_residuals_file(const std::string& text, const std::string& file) {
  nlohmann::json j = parse_json_text(text, file);
  ObjectReader r(j, file, "");
  expect_schema(r, kSchema);
  ResidualsFile out;
  out.source = r.string("source");
  std::int64_t count = r.integer("count", 0, std::numeric_limits<std::int64_t>::max());
  const nlohmann::json& cases = r.array("cases");
  r.finish();
  for (std::size_t i = 0; i < cases.size(); ++i)
    out.cases.push_back(parse_case(cases[i], file, r.pointer("cases") + "/" + std::to_string(i)));
  if (static_cast<std::size_t>(count) != out.cases.size())
    r.fail("count", "expected " + std::to_string(out.cases.size()) + " (the number of cases), got " +
                        std::to_string(count));
  return out;
}

ResidualsFile load_residuals_file(const std::string& path) { return parse_residuals_file(read_spec_text(path), path); }

std::string residuals_file_text(const ResidualsFile& f) {
  nlohmann::json cases = nlohmann::json::array();
  for (const ResidualCase& c : f.cases) {
    nlohmann::json one{{"id", c.id}, {"tier", c.tier}, {"gpu", c.gpu}, {"cluster", c.cluster},
                       {"framework", c.framework}, {"gpus", c.gpus}, {"precision", c.precision},
                       {"error_pct", rounded(c.error_pct)}};
    if (c.peak_error_pct) one["peak_error_pct"] = rounded(*c.peak_error_pct);
    cases.push_back(one);
  }
  nlohmann::json j{{"schema", kSchema}, {"source", f.source}, {"count", f.cases.size()}, {"cases", cases}};
  return spec::json_text(j) + "\n";
}

}  // namespace dtsim::spec
