// `dtsim check FILE`: CI regression of parallelism choices. Runs each scenario of a dtsim-check/1
// file in this process with --json and compares the values its expectations name.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <cstdio>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "spec/json_reader.h"
#include "core/errors.h"
#include "core/text.h"
#include "report/table.h"
#include "spec/check_file.h"
#include "spec/load.h"

namespace dtsim::cli {
namespace {

struct CheckArgs {
  std::string file, junit;
  bool update = false, json = false;
};

// What one scenario's command printed, or why it did not run.
struct Ran {
  nlohmann::json output;
  std::string rejected;  ///< the error dtsim gave (empty: it ran)
  double seconds = 0;
};

Ran run_scenario(const spec::Scenario& s) {
  Ran r;
  std::vector<std::string> args = s.run;
  bool has_json = false;
  for (const std::string& a : args) has_json |= a == "--json";
  if (!has_json) args.emplace_back("--json");
  auto start = std::chrono::steady_clock::now();
  std::string text;
  try {
    if (int status = run_in_process(args, text); status != 0) r.rejected = "exit status " + std::to_string(status);
  } catch (const CLI::CallForHelp&) {
    r.rejected = "--help asks for help, not a result";
  } catch (const CLI::Error& e) {
    r.rejected = e.what();
  } catch (const SpecError& e) {
    r.rejected = e.what();
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!r.rejected.empty()) return r;
  try {
    r.output = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    r.rejected = "the command's output is not one JSON object";
  }
  return r;
}

// One expectation against the output.
struct Compared {
  std::string pointer, expected, got, delta;
  bool ok = false;
};

std::string show(const nlohmann::json& v) {
  return printable(spec::json_text(v, -1));
}

Compared compare(const spec::Expectation& e, const nlohmann::json& out) {
  Compared c{.pointer = e.pointer, .expected = show(e.value)};
  nlohmann::json::json_pointer p(e.pointer);
  if (!out.contains(p)) {
    c.got = "(missing)";
    return c;
  }
  const nlohmann::json& got = out.at(p);
  c.got = show(got);
  if (e.value.is_number() && got.is_number()) {
    double want = e.value.get<double>(), have = got.get<double>();
    double tol = e.tolerance_pct.value_or(spec::kDefaultTolerancePct);
    double pct = want == 0 ? (have == 0 ? 0 : INFINITY) : 100 * (have - want) / std::fabs(want);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%+.2f%%", pct);
    c.delta = std::isfinite(pct) ? buf : "inf";
    c.ok = std::fabs(pct) <= tol * (1 + 1e-12);
  } else {
    c.ok = got == e.value;
  }
  return c;
}

// A number as recorded by --update: 6 significant digits, so files diff well across platforms.
nlohmann::json recorded(const nlohmann::json& v) {
  if (!v.is_number_float()) return v;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v.get<double>());
  double r = std::strtod(buf, nullptr);
  if (r == std::trunc(r) && std::fabs(r) < 9e15) return static_cast<std::int64_t>(r);  // 1.41948e+11 -> 141948000000
  return r;
}

// What --update records for a scenario without expectations.
std::vector<std::string> default_pointers(const spec::Scenario& s) {
  const std::string& cmd = s.run.front();
  if (cmd == "plan") {
    std::vector<std::string> out{"/configs/0/step_time_s"};
    for (const char* k : {"tp", "pp", "dp", "cp", "ep", "etp", "vp", "micro_batch", "zero_stage", "sequence_parallel",
                          "recompute"})
      out.push_back(std::string("/configs/0/") + k);
    return out;
  }
  if (cmd == "simulate") return {"/step_time_s", "/memory/peak_bytes_per_gpu"};
  if (cmd == "memory") return {"/memory/peak_bytes_per_gpu", "/memory/fits"};
  if (cmd == "validate") return {"/summary/median_abs_pct", "/summary/max_abs_pct"};
  return {};
}

std::string xml(const std::string& s) {
  std::string out;
  for (char c : printable(s)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

struct Result {
  const spec::Scenario* scenario = nullptr;
  Ran ran;
  std::vector<Compared> checks;
  [[nodiscard]] bool failed() const {
    for (const Compared& c : checks)
      if (!c.ok) return true;
    return false;
  }
};

std::string junit(const std::vector<Result>& results, const std::string& file) {
  int failures = 0, errors = 0;
  double total = 0;
  for (const Result& r : results) {
    failures += r.ran.rejected.empty() && r.failed();
    errors += !r.ran.rejected.empty();
    total += r.ran.seconds;
  }
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    << "<testsuites>\n  <testsuite name=\"dtsim check " << xml(file) << "\" tests=\"" << results.size()
    << "\" failures=\"" << failures << "\" errors=\"" << errors << "\" time=\"" << total << "\">\n";
  for (const Result& r : results) {
    x << "    <testcase classname=\"dtsim.check\" name=\"" << xml(r.scenario->name) << "\" time=\"" << r.ran.seconds
      << "\"";
    if (!r.ran.rejected.empty()) {
      x << ">\n      <error message=\"" << xml(r.ran.rejected) << "\"/>\n    </testcase>\n";
    } else if (r.failed()) {
      x << ">\n";
      for (const Compared& c : r.checks)
        if (!c.ok)
          x << "      <failure message=\"" << xml(c.pointer + ": expected " + c.expected + ", got " + c.got +
                                                 (c.delta.empty() ? "" : " (" + c.delta + ")"))
            << "\"/>\n";
      x << "    </testcase>\n";
    } else {
      x << "/>\n";
    }
  }
  x << "  </testsuite>\n</testsuites>\n";
  return x.str();
}

int run_check(const CheckArgs& a) {
  spec::require_path("FILE", a.file);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(a.file, ec))
    throw SpecError("FILE", "expected an existing dtsim-check/1 file, got \"" + a.file + "\" (no such file)");
  spec::CheckFile f = spec::parse_check_file(spec::read_spec_text(a.file), a.file);
  if (!a.junit.empty()) spec::require_path("--junit", a.junit);
  std::vector<Result> results;
  for (const spec::Scenario& s : f.scenarios) {
    Result r{.scenario = &s, .ran = run_scenario(s)};
    if (r.ran.rejected.empty())
      for (const spec::Expectation& e : s.expect) r.checks.push_back(compare(e, r.ran.output));
    results.push_back(std::move(r));
  }
  if (!a.junit.empty()) spec::write_text_file("--junit", a.junit, junit(results, a.file));
  // A scenario dtsim rejects is bad input: one line naming it, exit 2 (the JUnit file has it).
  for (std::size_t i = 0; i < results.size(); ++i)
    if (!results[i].ran.rejected.empty())
      throw SpecError(a.file + ":/scenarios/" + std::to_string(i) + "/run",
                      "expected arguments dtsim accepts, got an error for scenario \"" + results[i].scenario->name +
                          "\": " + results[i].ran.rejected);
  int status = 0;
  if (a.update) {
    spec::CheckFile out = f;
    for (std::size_t i = 0; i < out.scenarios.size(); ++i) {
      spec::Scenario& s = out.scenarios[i];
      const nlohmann::json& o = results[i].ran.output;
      if (!s.has_expect || s.expect.empty())
        for (const std::string& p : default_pointers(s)) s.expect.push_back({.pointer = p, .value = nullptr});
      for (spec::Expectation& e : s.expect) {
        nlohmann::json::json_pointer p(e.pointer);
        e.value = o.contains(p) ? recorded(o.at(p)) : nlohmann::json();
      }
      s.has_expect = true;
    }
    spec::write_text_file("FILE", a.file, spec::check_file_text(out));
  }

  nlohmann::json j;
  j["file"] = a.file;
  j["scenarios"] = nlohmann::json::array();
  report::Table t({"scenario", "pointer", "expected", "got", "delta", ""});
  for (const Result& r : results) {
    nlohmann::json sj{{"name", r.scenario->name}, {"seconds", r.ran.seconds}};
    {
      sj["status"] = r.failed() && !a.update ? "regressed" : "ok";
      sj["checks"] = nlohmann::json::array();
      for (const Compared& c : r.checks) {
        sj["checks"].push_back({{"pointer", c.pointer}, {"expected", c.expected}, {"got", c.got},
                                {"delta", c.delta}, {"ok", c.ok}});
        t.add({r.scenario->name, c.pointer, c.expected, c.got, c.delta, c.ok ? "ok" : a.update ? "updated" : "REGRESSED"});
        if (!c.ok && !a.update && status == 0) status = 1;
      }
      if (r.checks.empty()) t.add({r.scenario->name, "(no expectations)", "", "", "", a.update ? "recorded" : "ok"});
    }
    j["scenarios"].push_back(sj);
  }
  j["status"] = status == 0 ? "ok" : "regressed";
  if (a.json) {
    std::cout << spec::json_text(j) << "\n";
  } else {
    std::cout << t.render();
    for (const Result& r : results)
      for (const Compared& c : r.checks)
        if (!c.ok && !a.update)
          std::cout << "regression: " << printable(r.scenario->name) << " " << c.pointer << ": expected " << c.expected
                    << ", got " << c.got << (c.delta.empty() ? "" : " (" + c.delta + ")") << "\n";
    if (a.update) std::cout << "updated " << a.file << "\n";
  }
  return status;
}

}  // namespace

void add_check(CLI::App& app, Action& action) {
  auto a = std::make_shared<CheckArgs>();
  CLI::App* c = app.add_subcommand("check", "Re-run dtsim-check/1 scenarios and compare their results (CI regression)");
  c->add_option("file", a->file, "A dtsim-check/1 JSON file")->required();
  c->add_flag("--update", a->update, "Record the current values into FILE (keeps tolerances)");
  c->add_option("--junit", a->junit, "Also write JUnit XML, one testcase per scenario");
  c->add_flag("--json", a->json, "Print one JSON object");
  c->callback([a, &action] { action = [a] { return run_check(*a); }; });
}

}  // namespace dtsim::cli
