#include "spec/check_file.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/errors.h"
#include "spec/json_reader.h"

namespace dtsim::spec {

namespace {

// RFC 6901 section 3: "" or "/" followed by tokens in which '~' is only "~0" or "~1".
bool valid_pointer(const std::string& p) {
  if (p.empty()) return true;
  if (p.front() != '/') return false;
  for (std::size_t i = 0; i < p.size(); ++i)
    if (p[i] == '~' && (i + 1 >= p.size() || (p[i + 1] != '0' && p[i + 1] != '1'))) return false;
  return true;
}

Expectation read_expectation(const std::string& pointer, const nlohmann::json& v, const std::string& file,
                             const std::string& where) {
  ObjectReader r(v, file, where);
  Expectation e;
  e.pointer = pointer;
  if (!v.contains("value")) r.fail("value", "expected the value to keep, got none");
  e.value = v.at("value");
  r.skip("value");
  if (e.value.is_number_float() && !std::isfinite(e.value.get<double>()))
    r.fail("value", "expected a finite number, got " + describe(e.value));
  if (r.has("tolerance_pct")) {
    double t = r.positive("tolerance_pct", true);
    if (t > 1000) r.fail("tolerance_pct", "expected a percentage in [0, 1000], got " + describe(v.at("tolerance_pct")));
    e.tolerance_pct = t;
  } else {
    r.skip("tolerance_pct");
  }
  r.finish();
  return e;
}

}  // namespace

const std::vector<std::string>& checkable_commands() {
  static const std::vector<std::string> names = {"simulate", "plan", "memory", "collective", "show", "validate"};
  return names;
}

CheckFile parse_check_file(const std::string& text, const std::string& file) {
  nlohmann::json j = parse_json_text(text, file);
  ObjectReader top(j, file, "");
  std::string schema = top.string("schema");
  if (schema != "dtsim-check/1") top.fail("schema", "expected \"dtsim-check/1\", got \"" + schema + "\"");
  const nlohmann::json& list = top.array("scenarios");
  top.finish();
  CheckFile f;
  std::set<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    std::string at = "/scenarios/" + std::to_string(i);
    ObjectReader r(list[i], file, at);
    Scenario s;
    s.name = r.string("name");
    if (s.name.empty()) r.fail("name", "expected a non-empty name, got \"\"");
    if (!names.insert(s.name).second) r.fail("name", "expected a name no other scenario has, got \"" + s.name + "\" twice");
    const nlohmann::json& run = r.array("run");
    if (run.empty()) r.fail("run", "expected dtsim's arguments, the subcommand first, got []");
    for (std::size_t k = 0; k < run.size(); ++k) {
      if (!run[k].is_string())
        throw SpecError(file + ":" + at + "/run/" + std::to_string(k), "expected a string, got " + describe(run[k]));
      s.run.push_back(run[k].get<std::string>());
    }
    const auto& ok = checkable_commands();
    if (std::find(ok.begin(), ok.end(), s.run.front()) == ok.end()) {
      std::string known;
      for (const std::string& n : ok) known += (known.empty() ? "" : ", ") + n;
      throw SpecError(file + ":" + at + "/run/0", "expected a subcommand (" + known + "), got \"" + s.run.front() + "\"");
    }
    if (r.has("expect")) {
      s.has_expect = true;
      ObjectReader ex = r.object("expect");
      for (const auto& [pointer, v] : list[i].at("expect").items()) {
        std::string where = at + "/expect/" + escape_pointer_token(pointer);
        if (!valid_pointer(pointer))
          throw SpecError(file + ":" + where, "expected a JSON pointer (\"/key/0/...\", RFC 6901), got \"" + pointer + "\"");
        s.expect.push_back(read_expectation(pointer, v, file, where));
        ex.skip(pointer);
      }
      ex.finish();
    } else {
      r.skip("expect");
    }
    r.finish();
    f.scenarios.push_back(std::move(s));
  }
  return f;
}

std::string check_file_text(const CheckFile& f) {
  // One line per scenario field and per expectation, so a changed value is a one-line diff.
  auto dump = [](const nlohmann::json& v) { return json_text(v, -1); };
  std::string out = "{\n  \"schema\": \"dtsim-check/1\",\n  \"scenarios\": [";
  for (std::size_t i = 0; i < f.scenarios.size(); ++i) {
    const Scenario& s = f.scenarios[i];
    out += std::string(i == 0 ? "" : ",") + "\n    {\"name\": " + dump(s.name) + ",\n     \"run\": " +
           dump(nlohmann::json(s.run)) + ",\n     \"expect\": {";
    std::vector<Expectation> expect = s.expect;  // by pointer, as they read back
    std::sort(expect.begin(), expect.end(), [](const auto& a, const auto& b) { return a.pointer < b.pointer; });
    for (std::size_t k = 0; k < expect.size(); ++k) {
      const Expectation& e = expect[k];
      std::string value = "{\"value\": " + dump(e.value);
      if (e.tolerance_pct) value += ", \"tolerance_pct\": " + dump(*e.tolerance_pct);
      out += std::string(k == 0 ? "" : ",") + "\n       " + dump(e.pointer) + ": " + value + "}";
    }
    out += s.expect.empty() ? "}}" : "\n     }}";
  }
  return out + "\n  ]\n}\n";
}

}  // namespace dtsim::spec
