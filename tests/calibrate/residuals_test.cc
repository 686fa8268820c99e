#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "calibrate/residuals.h"
#include "spec/residuals_file.h"

using namespace dtsim;
using calibrate::Constraint;
using calibrate::JobKey;
using calibrate::PrecisionClass;
using Catch::Matchers::WithinAbs;

namespace {

// Ten runs. Each error e = predicted/measured - 1 is picked so that m = measured/predicted - 1 =
// 1/(1+e) - 1 is round: e +25% -> m -20%; e -20% -> m +25%; e +60% -> m 1/1.6 - 1 = -37.5%;
// e -37.5% -> m 1/0.625 - 1 = +60%; e +400% -> m 1/5 - 1 = -80%; e -50% -> m +100%;
// e +100% -> m -50%; e -75% -> m +300%; e +300% -> m -75%.
const std::string kRuns = R"({"schema": "dtsim-residuals/1", "source": "test", "count": 10, "cases": [
  {"id": "a", "tier": "t", "gpu": "h100-sxm5-80gb", "cluster": "dgx-h100", "framework": "nemo", "gpus": 64, "precision": "bf16", "error_pct": 25},
  {"id": "b", "tier": "t", "gpu": "h100-sxm5-80gb", "cluster": "dgx-h100", "framework": "nemo", "gpus": 128, "precision": "bf16", "error_pct": -20},
  {"id": "c", "tier": "t", "gpu": "h100-sxm5-80gb", "cluster": "dgx-h100", "framework": "nemo", "gpus": 256, "precision": "fp16", "error_pct": 0},
  {"id": "d", "tier": "t", "gpu": "h100-sxm5-80gb", "cluster": "dgx-h100", "framework": "nemo", "gpus": 512, "precision": "bf16", "error_pct": 60},
  {"id": "e", "tier": "t", "gpu": "h100-sxm5-80gb", "cluster": "dgx-h100", "framework": "nemo", "gpus": 1024, "precision": "bf16", "error_pct": -37.5},
  {"id": "f", "tier": "t", "gpu": "h100-sxm5-80gb", "cluster": "dgx-h100", "framework": "nemo", "gpus": 8, "precision": "bf16", "error_pct": 400},
  {"id": "g", "tier": "t", "gpu": "h100-sxm5-80gb", "cluster": "dgx-h100", "framework": "megatron-core", "gpus": 512, "precision": "bf16", "error_pct": -50},
  {"id": "h", "tier": "t", "gpu": "h100-sxm5-80gb", "cluster": "dgx-h100", "framework": "nemo", "gpus": 512, "precision": "fp8", "error_pct": 100},
  {"id": "i", "tier": "t", "gpu": "a100-sxm4-80gb", "cluster": "dgx-a100", "framework": "megatron-lm", "gpus": 1024, "precision": "fp16", "error_pct": -75},
  {"id": "j", "tier": "t", "gpu": "a100-sxm4-80gb", "cluster": "dgx-a100", "framework": "megatron-lm", "gpus": 64, "precision": "fp16", "error_pct": 300}
]})";

const std::vector<spec::ResidualCase>& runs() {
  static const std::vector<spec::ResidualCase> r = spec::parse_residuals_file(kRuns, "runs.json").cases;
  return r;
}

JobKey job(const std::string& gpu, const std::string& framework, PrecisionClass p, std::int64_t gpus) {
  return {.gpu = gpu, .framework = framework, .precision = p, .gpus = gpus};
}

constexpr PrecisionClass k16 = PrecisionClass::sixteen_bit;
constexpr PrecisionClass k8 = PrecisionClass::eight_bit_or_less;

void check_interval(const calibrate::Uncertainty& u, double low, double high) {
  REQUIRE(u.low_pct);
  REQUIRE(u.high_pct);
  CHECK_THAT(*u.low_pct, WithinAbs(low, 1e-9));
  CHECK_THAT(*u.high_pct, WithinAbs(high, 1e-9));
  CHECK(u.missing.empty());
}

}  // namespace

TEST_CASE("calibrate::measured_vs_predicted_pct: the inverse of the prediction error", "[calibrate]") {
  // Predicted 20% low (e = -20%): measured = predicted / 0.8, i.e. +25% of the prediction.
  CHECK_THAT(calibrate::measured_vs_predicted_pct(-20), WithinAbs(25, 1e-12));
  // Predicted 25% high: measured = predicted / 1.25 = 0.8 x predicted, -20%.
  CHECK_THAT(calibrate::measured_vs_predicted_pct(25), WithinAbs(-20, 1e-12));
  CHECK(calibrate::measured_vs_predicted_pct(0) == 0);
  // Property: applying it twice gives back the error (the map m = 1/(1+e) - 1 is its own inverse).
  for (double e : {-90.0, -3.3, 7.0, 250.0})
    CHECK_THAT(calibrate::measured_vs_predicted_pct(calibrate::measured_vs_predicted_pct(e)), WithinAbs(e, 1e-9));
}

TEST_CASE("calibrate::precision_class and gpu_preset", "[calibrate]") {
  CHECK(calibrate::precision_class(spec::Dtype::bf16) == k16);
  CHECK(calibrate::precision_class(spec::Dtype::fp16) == k16);
  CHECK(calibrate::precision_class(spec::Dtype::fp8) == k8);
  CHECK(calibrate::precision_class("fp4") == k8);
  CHECK(calibrate::precision_class("fp16") == k16);
  spec::Cluster c;  // (assigned, not designated: GCC 12 warns -Wmaybe-uninitialized on the latter)
  c.gpu_name = "h100-sxm5-80gb";
  CHECK(calibrate::gpu_preset(c) == "h100-sxm5-80gb");
  c.gpu_name = "../gpus/h100-sxm5-80gb.json";  // a cluster file naming its GPU by path
  CHECK(calibrate::gpu_preset(c) == "h100-sxm5-80gb");
}

TEST_CASE("calibrate::uncertainty: the full family when it has 5 runs", "[calibrate]") {
  // H100, nemo, 16-bit, 512 GPUs: scale window 512/8 = 64 .. 512*8 = 4096 GPUs, both ends in.
  // Runs a (64), b, c (fp16 is 16-bit), d, e: m = -20, +25, 0, -37.5, +60. f (8 GPUs) is out of
  // scale, g another stack, h fp8, i and j A100.
  calibrate::Uncertainty u = calibrate::uncertainty(runs(), job("h100-sxm5-80gb", "nemo", k16, 512));
  CHECK(u.runs == 5);
  CHECK(u.relaxed.empty());
  check_interval(u, -37.5, 60);
  REQUIRE(u.family);
  CHECK(u.family == calibrate::Family{.gpu = "h100-sxm5-80gb", .framework = "nemo", .precision = k16,
                                      .gpus_min = 64, .gpus_max = 1024});
}

TEST_CASE("calibrate::uncertainty: relaxes scale first", "[calibrate]") {
  // 8192 GPUs: window 1024 .. 65536 holds e only (1 < 5), so scale goes: a-f, 8 to 1024 GPUs,
  // m = -20, +25, 0, -37.5, +60, -80.
  calibrate::Uncertainty u = calibrate::uncertainty(runs(), job("h100-sxm5-80gb", "nemo", k16, 8192));
  CHECK(u.runs == 6);
  CHECK(u.relaxed == std::vector<Constraint>{Constraint::scale});
  check_interval(u, -80, 60);
  CHECK(u.family->gpus_min == 8);
  CHECK(u.family->gpus_max == 1024);
  CHECK(u.family->framework == "nemo");
}

TEST_CASE("calibrate::uncertainty: then the stack, then precision, then the GPU", "[calibrate]") {
  // megatron-core 16-bit on H100: g alone with and without scale; without the stack a-g (7 runs),
  // m adds g's +100 to a-f's: -80 .. +100.
  calibrate::Uncertainty u = calibrate::uncertainty(runs(), job("h100-sxm5-80gb", "megatron-core", k16, 512));
  CHECK(u.runs == 7);
  CHECK(u.relaxed == std::vector<Constraint>{Constraint::scale, Constraint::framework});
  check_interval(u, -80, 100);
  CHECK(!u.family->framework);
  CHECK(u.family->precision == k16);
  // megatron-core fp8: no run, then h alone (fp8 on any stack), then every H100 run a-h (8): h's
  // m -50 lies inside -80 .. +100.
  u = calibrate::uncertainty(runs(), job("h100-sxm5-80gb", "megatron-core", k8, 512));
  CHECK(u.runs == 8);
  CHECK(u.relaxed == std::vector<Constraint>{Constraint::scale, Constraint::framework, Constraint::precision});
  check_interval(u, -80, 100);
  CHECK(!u.family->precision);
  CHECK(u.family->gpu == "h100-sxm5-80gb");
  // A GPU with no runs: every constraint goes, all 10 runs; i and j widen it to -80 .. +300.
  u = calibrate::uncertainty(runs(), job("b200", "megatron-core", k16, 64));
  CHECK(u.runs == 10);
  CHECK(u.relaxed.size() == 4);
  check_interval(u, -80, 300);
  CHECK(u.family == calibrate::Family{.gpus_min = 8, .gpus_max = 1024});
}

TEST_CASE("calibrate::uncertainty: fewer than 3 runs in the widest family give no interval", "[calibrate]") {
  // Only i and j: even with every constraint relaxed the family has 2 runs.
  std::vector<spec::ResidualCase> two(runs().end() - 2, runs().end());
  calibrate::Uncertainty u = calibrate::uncertainty(two, job("a100-sxm4-80gb", "megatron-lm", k16, 64));
  CHECK(u.runs == 2);
  CHECK(!u.low_pct);
  CHECK(!u.high_pct);
  CHECK(u.missing == "no comparable published runs");
  CHECK(u.relaxed.size() == 4);
  // Three runs are enough for an interval once everything is relaxed: i, j and a
  // (m +300, -75, -20).
  two.push_back(runs().front());
  u = calibrate::uncertainty(two, job("a100-sxm4-80gb", "megatron-lm", k16, 64));
  CHECK(u.runs == 3);
  check_interval(u, -75, 300);
  CHECK(calibrate::uncertainty({}, job("b200", "nemo", k16, 8)).runs == 0);
}

TEST_CASE("calibrate::residuals_file: one entry per predicted case", "[calibrate]") {
  calibrate::PreparedCase p;
  p.outcome = {.id = "x", .tier = "dense16", .measured_s = 10};
  p.cluster.name = "dgx-h100";
  p.cluster.gpu_name = "h100-sxm5-80gb";
  p.stack.name = "nemo";
  p.gpus = 128;
  p.resolved.train.precision = spec::Dtype::fp8;
  calibrate::CaseOutcome predicted = p.outcome;
  predicted.predicted_s = 12;  // (12 - 10) / 10 = +20%
  calibrate::PreparedCase bad = p;
  bad.outcome.id = "y";
  bad.outcome.failure = "does not fit";
  spec::ResidualsFile f = calibrate::residuals_file({p, bad}, {predicted, bad.outcome}, "dtsim validate v.json");
  CHECK(f.source == "dtsim validate v.json");
  REQUIRE(f.cases.size() == 1);
  CHECK(f.cases[0] == spec::ResidualCase{.id = "x", .tier = "dense16", .gpu = "h100-sxm5-80gb", .cluster = "dgx-h100",
                                         .framework = "nemo", .gpus = 128, .precision = "fp8", .error_pct = 20});
  CHECK_THROWS_AS(calibrate::residuals_file({p}, {}, "s"), std::logic_error);
}

TEST_CASE("calibrate::peak_uncertainty: the job's own stack's runs with a measured peak", "[calibrate]") {
  // Peak errors on the nemo runs a-f (e +25, -20, 0, +60, -37.5, +400 -> m -20, +25, 0, -37.5, +60, -80)
  // and on megatron-core's g; the step errors of the same runs are not read.
  std::vector<spec::ResidualCase> r = runs();
  const double peaks[] = {25, -20, 0, 60, -37.5, 400, -50};
  for (std::size_t i = 0; i < 7; ++i) r[i].peak_error_pct = peaks[i];
  // nemo at 512 GPUs: a-e are within 8x of 512 (64-4096), five runs: the full family.
  calibrate::Uncertainty u = calibrate::peak_uncertainty(r, job("h100-sxm5-80gb", "nemo", k16, 512));
  CHECK(u.runs == 5);
  check_interval(u, -37.5, 60);
  // megatron-core has one run with a peak: scale, precision and GPU are relaxed, never the stack.
  u = calibrate::peak_uncertainty(r, job("h100-sxm5-80gb", "megatron-core", k16, 512));
  CHECK(u.runs == 1);
  CHECK_FALSE(u.low_pct);
  CHECK(u.family->framework == "megatron-core");
  CHECK(u.missing == "no published run of this stack with a measured peak");
  // No run of megatron-lm has a measured peak.
  CHECK(calibrate::peak_uncertainty(r, job("a100-sxm4-80gb", "megatron-lm", k16, 64)).runs == 0);
}
