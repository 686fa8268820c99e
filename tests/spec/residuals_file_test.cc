#include <catch2/catch.hpp>

#include <string>

#include "core/errors.h"
#include "helpers.h"
#include "spec/residuals_file.h"

using namespace dtsim::spec;
using Catch::Matchers::Equals;

namespace {

// Two cases as `dtsim validate --residuals` writes them; {X} edits replace one field per test.
const std::string kFile = R"({"schema": "dtsim-residuals/1", "source": "dtsim validate runs.json", "count": 2,
  "cases": [
    {"id": "r0", "tier": "dense16", "gpu": "h100-sxm5-80gb", "cluster": "dgx-h100", "framework": "nemo",
     "gpus": 512, "precision": "bf16", "error_pct": -4.25},
    {"id": "r1", "tier": "fp8-or-moe", "gpu": "h100-sxm5-80gb", "cluster": "dgx-h100", "framework": "nemo",
     "gpus": 64, "precision": "fp8", "error_pct": 12}
  ]})";

std::string with(const std::string& from, const std::string& to) { return dtsim::test::replaced(kFile, from, to); }

std::string error_of(const std::string& text) {
  try {
    static_cast<void>(parse_residuals_file(text, "res.json"));
  } catch (const dtsim::SpecError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("spec::parse_residuals_file: reads the cases as written", "[spec]") {
  ResidualsFile f = parse_residuals_file(kFile, "res.json");
  CHECK(f.source == "dtsim validate runs.json");
  REQUIRE(f.cases.size() == 2);
  CHECK(f.cases[0] == ResidualCase{.id = "r0", .tier = "dense16", .gpu = "h100-sxm5-80gb", .cluster = "dgx-h100",
                                   .framework = "nemo", .gpus = 512, .precision = "bf16", .error_pct = -4.25});
  CHECK(f.cases[1].precision == "fp8");
  CHECK(f.cases[1].error_pct == 12);
}

TEST_CASE("spec::residuals_file_text: round-trips, keys sorted, errors rounded to 0.001", "[spec]") {
  ResidualsFile f = parse_residuals_file(kFile, "res.json");
  CHECK(parse_residuals_file(residuals_file_text(f), "res.json") == f);
  // nlohmann orders object keys alphabetically: "cases" < "count" < "schema" < "source".
  std::string text = residuals_file_text(f);
  CHECK(text.find("\"cases\"") < text.find("\"count\""));
  CHECK(text.find("\"count\"") < text.find("\"schema\""));
  // -1.23456 rounds to the nearest 0.001: -1.235 (half away from zero); 7.0004 to 7.
  f.cases[0].error_pct = -1.23456;
  f.cases[1].error_pct = 7.0004;
  ResidualsFile back = parse_residuals_file(residuals_file_text(f), "res.json");
  CHECK(back.cases[0].error_pct == -1.235);
  CHECK(back.cases[1].error_pct == 7.0);
  CHECK(residuals_file_text(back) == residuals_file_text(f));
  // A case's peak-memory error is written only when it has one, and read back.
  CHECK(text.find("peak_error_pct") == std::string::npos);
  f.cases[1].peak_error_pct = -6.0004;
  back = parse_residuals_file(residuals_file_text(f), "res.json");
  CHECK(back.cases[1].peak_error_pct == -6.0);
  CHECK_FALSE(back.cases[0].peak_error_pct);
}

TEST_CASE("spec::parse_residuals_file: errors name the file and the JSON pointer", "[spec]") {
  CHECK_THAT(error_of(with("dtsim-residuals/1", "dtsim-residuals/2")),
             Equals("res.json:/schema: expected \"dtsim-residuals/1\", got \"dtsim-residuals/2\""));
  CHECK_THAT(error_of(with("\"count\": 2", "\"count\": 3")),
             Equals("res.json:/count: expected 2 (the number of cases), got 3"));
  CHECK_THAT(error_of(with("\"gpus\": 512", "\"gpus\": 0")),
             Equals("res.json:/cases/0/gpus: expected an integer in [1, 16777216], got 0"));
  CHECK_THAT(error_of(with("\"precision\": \"fp8\"", "\"precision\": \"int8\"")),
             Equals("res.json:/cases/1/precision: expected one of fp16, bf16, fp8, fp4, got \"int8\""));
  // A prediction of zero is an error of -100%; no run can be predicted that low.
  CHECK_THAT(error_of(with("\"error_pct\": 12", "\"error_pct\": -100")),
             Equals("res.json:/cases/1/error_pct: expected a number > -100 (predicted vs measured, percent), got -100"));
  CHECK_THAT(error_of(with("\"error_pct\": 12", "\"error_pct\": \"12\"")),
             Equals("res.json:/cases/1/error_pct: expected a number > -100 (predicted vs measured, percent), got \"12\""));
  CHECK_THAT(error_of(with(", \"error_pct\": 12", "")), Equals("res.json:/cases/1/error_pct: missing required key"));
  CHECK_THAT(error_of(with("\"tier\": \"dense16\",", "\"tier\": \"dense16\", \"when\": 1,")),
             Equals("res.json:/cases/0/when: unknown key (expected one of: cluster, error_pct, framework, gpu, gpus, "
                    "id, peak_error_pct, precision, tier)"));
  // The optional peak-memory error is checked as the step's is.
  CHECK_THAT(error_of(with("\"error_pct\": 12", "\"error_pct\": 12, \"peak_error_pct\": -100")),
             Equals("res.json:/cases/1/peak_error_pct: expected a number > -100 (predicted vs measured, percent), got -100"));
  CHECK_THAT(error_of(with("\"source\": \"dtsim validate runs.json\", ", "")),
             Equals("res.json:/source: missing required key"));
  // The text ends after its 11 characters: column 12.
  CHECK_THAT(error_of("{\"schema\": "),
             Equals("res.json: malformed JSON at line 1, column 12: syntax error while parsing value - unexpected end "
                    "of input; expected '[', '{', or a literal"));
}
