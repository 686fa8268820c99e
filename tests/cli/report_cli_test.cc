// simulate --html/--svg and plan --html/--svg write the report files (their content is tested in
// tests/report/html_test.cc); here: the files exist, are what they say, and bad paths exit 2.
#include <catch2/catch.hpp>

#include <string>

#include "cli_helpers.h"
#include "helpers.h"

using namespace dtsim::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

TEST_CASE("cli simulate --html and --svg: the page and the plots", "[cli]") {
  TempDir tmp;
  std::string html = (tmp.dir / "step.html").string(), prefix = (tmp.dir / "step").string();
  auto r = run_dtsim("simulate --model llama3-8b --cluster dgx-h100 --gpus 16 --pp 2 --gbs 32 --html '" + html +
                     "' --svg '" + prefix + "'");
  REQUIRE(r.status == 0);
  std::string page = read_text(html);
  CHECK_THAT(page, StartsWith("<!DOCTYPE html>") && Contains("<svg") && Contains("stage 1") && Contains("Llama 3 8B"));
  CHECK(page.find("<script") == std::string::npos);  // self-contained, static
  CHECK_THAT(read_text(prefix + "-breakdown.svg"), StartsWith("<svg") && Contains("compute"));
  CHECK_THAT(read_text(prefix + "-timeline.svg"), StartsWith("<svg") && Contains("stage 0"));
  check_bad("simulate --model llama3-8b --cluster dgx-h100 --gpus 8 --gbs 32 --html /nonexistent/dir/x.html",
            StartsWith("dtsim: --html: expected a writable file path"));
}

TEST_CASE("cli plan --html and --svg: the top configurations and the Pareto front", "[cli]") {
  TempDir tmp;
  std::string html = (tmp.dir / "plan.html").string(), prefix = (tmp.dir / "plan").string();
  auto r = run_dtsim("plan --model llama3-8b --cluster dgx-h100 --gpus 16 --gbs 64 --top 5 --json --html '" + html +
                     "' --svg '" + prefix + "'");
  REQUIRE(r.status == 0);
  CHECK_THAT(read_text(html), StartsWith("<!DOCTYPE html>") && Contains("Pareto"));
  CHECK_THAT(read_text(prefix + "-pareto.svg"), StartsWith("<svg") && Contains("#1 tp "));
}
