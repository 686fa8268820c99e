#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "calibrate/cases.h"
#include "calibrate/step_fit.h"
#include "core/errors.h"
#include "helpers.h"
#include "spec/load.h"
#include "spec/validation_file.h"

using namespace dtsim;
using calibrate::StepParam;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;

namespace {

// One small GPT run on dgx-a100 in the validation schema; ID, layout and measured time vary.
std::string run(const std::string& id, int gpus, int tp, int pp, int dp, int mbs, int gbs, double measured) {
  auto n = [](int v) { return std::to_string(v); };
  return R"({"id": ")" + id + R"(", "model": {"name": "GPT 1.3B", "layers": 24, "hidden": 2048, "heads": 16,
    "kv_heads": 16, "ffn_hidden": 8192, "activation": "gelu", "vocab": 51200, "moe_experts": null, "moe_topk": null,
    "moe_ffn_hidden": null}, "cluster": "dgx-a100", "gpus": )" + n(gpus) + R"(, "gpus_per_node": 8,
    "parallel": {"tp": )" + n(tp) + R"(, "pp": )" + n(pp) + R"(, "dp": )" + n(dp) + R"(, "cp": 1, "ep": 1, "vp": 1,
                 "zero_stage": 1, "sequence_parallel": false},
    "training": {"micro_batch": )" + n(mbs) + R"(, "global_batch": )" + n(gbs) + R"(, "seq_len": 2048,
                 "recompute": "none", "precision": "bf16"},
    "measured": {"iteration_s": )" + std::to_string(measured) + "}}";
}

// Runs of different shapes (data-parallel only, TP, PP; few and many micro-batches), each
// "measured" as dtsim predicts it with `truth` -- a fit from the base must get back to it.
std::vector<calibrate::PreparedCase> runs_measured_with(const spec::Calibration& base, const spec::Calibration& truth) {
  std::string text = R"({"schema": "dtsim-validation-cases/1", "cases": [)" + run("dp8", 8, 1, 1, 8, 4, 64, 1) + ", " +
                     run("tp2", 8, 2, 1, 4, 2, 32, 1) + ", " + run("pp2", 16, 1, 2, 8, 1, 64, 1) + ", " +
                     run("tp4pp2", 16, 4, 2, 2, 1, 16, 1) + ", " + run("dp16", 16, 1, 1, 16, 8, 128, 1) + "]}";
  spec::ValidationFile f = spec::parse_validation_file(text, "runs.json");
  std::vector<calibrate::PreparedCase> out;
  for (const spec::ValidationCase& c : f.cases) {
    calibrate::PreparedCase p = calibrate::prepare_case(c, "runs.json", base);
    REQUIRE(p.runnable());
    p.outcome.measured_s = *calibrate::simulate_case(p, truth).predicted_s;
    out.push_back(p);
  }
  return out;
}

}  // namespace

TEST_CASE("calibrate::fit_steps: recovers the compute efficiency the runs were made with", "[calibrate]") {
  spec::Calibration base = spec::load_calibration(test::source_path("calibration/dgx-a100.json"));
  // The truth: GEMMs and attention 10% slower than the profile says (factor 0.9).
  spec::Calibration truth = calibrate::with_step_params(base, {StepParam::compute_efficiency}, {0.9});
  auto cases = runs_measured_with(base, truth);
  calibrate::StepFit f = calibrate::fit_steps(cases, base, {StepParam::compute_efficiency}, "--steps");
  REQUIRE(f.params.size() == 1);
  CHECK_THAT(f.params[0].after, WithinAbs(0.9, 0.002));  // printed to 3 decimals
  CHECK(f.params[0].before == 1.0);
  CHECK(f.before.median_pct > 3.0);   // the base profile is 10% fast on compute
  CHECK(f.in_sample.max_pct < 0.5);
  REQUIRE(f.loo);                      // 5 runs, 1 parameter: leave-one-out is possible
  CHECK(f.loo->max_pct < 0.5);         // one knob shared by all runs predicts each from the others
  REQUIRE(f.cases.size() == 5);
  // The fitted profile carries the factor in its curves.
  CHECK_THAT(f.calibration.compute.curve(spec::Dtype::bf16).max_efficiency,
             WithinAbs(0.9 * base.compute.curve(spec::Dtype::bf16).max_efficiency, 1e-4));
}

TEST_CASE("calibrate::fit_steps: three parameters at once, and leave-one-out", "[calibrate]") {
  spec::Calibration base = spec::load_calibration(test::source_path("calibration/dgx-a100.json"));
  std::vector<StepParam> all = calibrate::default_step_params();
  spec::Calibration truth = calibrate::with_step_params(base, all, {0.92, 8.0, 0.3});
  auto cases = runs_measured_with(base, truth);
  calibrate::StepFit f = calibrate::fit_steps(cases, base, all, "--steps");
  CHECK(f.in_sample.max_pct < 1.0);  // whatever the split between the knobs, the runs are reproduced
  REQUIRE(f.loo);                     // 5 runs >= 3 parameters + 2
  // Out of sample it is worse: with 5 runs and 3 knobs, leaving out the run that pins a knob lets
  // it drift (3.7% here, whatever the effort the search is given). That is what it is printed for.
  CHECK(f.loo->max_pct > f.in_sample.max_pct);
  CHECK(f.loo->max_pct < 10.0);
  CHECK_THAT(f.params[0].after, WithinAbs(0.92, 0.03));
}

TEST_CASE("calibrate::fit_steps: too few runs, and runs that cannot be simulated", "[calibrate]") {
  spec::Calibration base = spec::load_calibration(test::source_path("calibration/dgx-a100.json"));
  std::string text = R"({"schema": "dtsim-validation-cases/1", "cases": [)" + run("ok", 8, 1, 1, 8, 4, 64, 1.0) +
                     ", " + run("bad-tp", 8, 3, 1, 8, 1, 8, 1.0) + "]}";  // 3 divides neither 16 heads nor 8 GPUs
  spec::ValidationFile f = spec::parse_validation_file(text, "runs.json");
  std::vector<calibrate::PreparedCase> cases;
  for (const auto& c : f.cases) cases.push_back(calibrate::prepare_case(c, "runs.json", base));
  CHECK_THROWS_WITH(calibrate::fit_steps(cases, base, calibrate::default_step_params(), "--steps"),
                    Equals("--steps: expected at least 3 runs that simulate to fit 3 parameters, got 1"));
  calibrate::StepFit one = calibrate::fit_steps(cases, base, {StepParam::compute_efficiency}, "--steps");
  REQUIRE(one.skipped.size() == 1);
  CHECK_THAT(one.skipped[0], Contains("bad-tp: runs.json:/cases/1/parallel/dp: expected tp*pp*dp*cp = gpus (8)"));
  CHECK_FALSE(one.loo);  // 1 run < 1 parameter + 2
}

TEST_CASE("calibrate::parse_step_param: names", "[calibrate]") {
  for (StepParam p : calibrate::default_step_params()) CHECK(calibrate::parse_step_param(calibrate::to_string(p)) == p);
  CHECK_FALSE(calibrate::parse_step_param("kernel_overhead"));
}
