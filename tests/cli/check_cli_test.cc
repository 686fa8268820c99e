// dtsim check: scenarios run in-process, compared by JSON pointer; exit 0 / 1 / 2; --update,
// --junit, --json.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "cli_helpers.h"
#include "helpers.h"
#include "spec/check_file.h"

using namespace dtsim::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using nlohmann::json;

namespace {

const char* kRun = R"(["simulate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "64"])";

std::string file_with(const std::string& expect) {
  return std::string(R"({"schema": "dtsim-check/1", "scenarios": [{"name": "llama3-8b-on-8-h100", "run": )") + kRun +
         (expect.empty() ? "" : ", \"expect\": " + expect) + "}]}";
}

}  // namespace

TEST_CASE("cli check: holds, regresses, and records", "[cli]") {
  TempDir tmp;
  double step = run_json("simulate --model llama3-8b --cluster dgx-h100 --gpus 8 --gbs 64 --json").at("step_time_s");
  // Within 1% (the default tolerance): exit 0, a row per pointer.
  std::string near = tmp.write("near.json", file_with(R"({"/step_time_s": {"value": )" + std::to_string(step * 1.009) +
                                                      R"(}, "/config/tp": {"value": 1}})"));
  auto ok = run_dtsim("check '" + near + "'");
  CHECK(ok.status == 0);
  CHECK_THAT(ok.out, Contains("/step_time_s") && Contains("-0.89%") && Contains("ok"));
  // 2% off with the default tolerance: exit 1 naming the scenario and the pointer; a tolerance
  // of 3% holds it.
  std::string far = tmp.write("far.json", file_with(R"({"/step_time_s": {"value": )" + std::to_string(step * 1.02) + "}}"));
  auto bad = run_dtsim("check '" + far + "'");
  CHECK(bad.status == 1);
  CHECK_THAT(bad.out, Contains("regression: llama3-8b-on-8-h100 /step_time_s: expected "));
  std::string loose = tmp.write("loose.json", file_with(R"({"/step_time_s": {"value": )" + std::to_string(step * 1.02) +
                                                        R"(, "tolerance_pct": 3}})"));
  CHECK(run_dtsim("check '" + loose + "'").status == 0);
  // Strings and booleans compare exactly; a pointer the output lacks is a regression.
  std::string missing = tmp.write("missing.json", file_with(R"({"/no/such/key": {"value": 1}})"));
  auto m = run_dtsim("check '" + missing + "' --json");
  CHECK(m.status == 1);
  json mj = json::parse(m.out);
  CHECK(mj.at("status") == "regressed");
  CHECK(mj.at("scenarios").at(0).at("checks").at(0).at("got") == "(missing)");
  // --update records the defaults (simulate: step time and peak memory) and keeps a tolerance.
  std::string none = tmp.write("none.json", file_with(""));
  REQUIRE(run_dtsim("check '" + none + "' --update").status == 0);
  dtsim::spec::CheckFile rec = dtsim::spec::parse_check_file(read_text(none), none);
  REQUIRE(rec.scenarios.at(0).expect.size() == 2);
  CHECK(rec.scenarios[0].expect[0].pointer == "/memory/peak_bytes_per_gpu");
  CHECK(rec.scenarios[0].expect[1].pointer == "/step_time_s");
  CHECK_THAT(rec.scenarios[0].expect[1].value.get<double>(), Catch::Matchers::WithinRel(step, 1e-5));
  REQUIRE(run_dtsim("check '" + loose + "' --update").status == 0);
  std::string again = read_text(loose);
  CHECK_THAT(again, Contains(R"("tolerance_pct": 3)"));
  CHECK(run_dtsim("check '" + loose + "' --update").status == 0);
  CHECK(read_text(loose) == again);  // stable: a second update changes nothing
  // --junit: one testcase per scenario, the failure's message naming the pointer.
  std::string xml = tmp.dir.string() + "/junit.xml";
  CHECK(run_dtsim("check '" + far + "' --junit '" + xml + "'").status == 1);
  std::string x = read_text(xml);
  CHECK_THAT(x, StartsWith("<?xml") && Contains(R"(tests="1" failures="1" errors="0")") &&
                    Contains(R"(<testcase classname="dtsim.check" name="llama3-8b-on-8-h100")") &&
                    Contains(R"(<failure message="/step_time_s: expected )"));
}

TEST_CASE("cli check: a bad file or a rejected scenario exits 2", "[cli]") {
  TempDir tmp;
  auto bad = [&](const std::string& name, const std::string& text, const std::string& line) {
    std::string f = tmp.write(name, text);
    check_bad("check '" + f + "'", StartsWith("dtsim: " + f + line));
  };
  bad("schema.json", R"({"schema": "dtsim-check/2", "scenarios": []})", R"(:/schema: expected "dtsim-check/1", got)");
  bad("cmd.json", R"({"schema": "dtsim-check/1", "scenarios": [{"name": "x", "run": ["check", "y"]}]})",
      ":/scenarios/0/run/0: expected a subcommand (simulate, plan, memory, collective, show, validate), got \"check\"");
  bad("ptr.json", file_with(R"({"step_time_s": {"value": 1}})"), ":/scenarios/0/expect/step_time_s: expected a JSON pointer");
  bad("tol.json", file_with(R"({"/step_time_s": {"value": 1, "tolerance_pct": -1}})"),
      ":/scenarios/0/expect/~1step_time_s/tolerance_pct: expected a number >= 0");
  bad("key.json", file_with(R"({"/step_time_s": {"value": 1, "tolerance": 2}})"),
      ":/scenarios/0/expect/~1step_time_s/tolerance: unknown key");
  std::string rejected = std::string(R"({"schema": "dtsim-check/1", "scenarios": [{"name": "tp7", "run": )") +
                         R"(["simulate", "--model", "llama3-8b", "--cluster", "dgx-h100", "--gpus", "8", "--gbs", "64", "--tp", "7"]}]})";
  bad("rejected.json", rejected, ":/scenarios/0/run: expected arguments dtsim accepts, got an error for scenario \"tp7\": --gpus: ");
  check_bad("check /nonexistent/checks.json", StartsWith("dtsim: FILE: expected an existing dtsim-check/1 file"));
}
