// `dtsim calibrate`: fits a calibration profile to measurements of one cluster. GEMM curves and
// memory efficiency from dtsim-bench gemm/copy, collective tables from nccl-tests logs (or
// dtsim-bench nccl), then the software-stack parameters from measured step times; each stage
// starts from what the previous one fitted.
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibrate/cases.h"
#include "spec/json_reader.h"
#include "calibrate/collective_fit.h"
#include "calibrate/fit.h"
#include "calibrate/samples.h"
#include "calibrate/step_fit.h"
#include "cli/commands.h"
#include "core/errors.h"
#include "report/calibrate_report.h"
#include "report/fit_report.h"
#include "spec/bench_file.h"
#include "spec/calibration.h"
#include "spec/load.h"
#include "spec/validation_file.h"

namespace dtsim::cli {
namespace {

struct CalibrateArgs {
  std::vector<std::string> bench, nccl_tests;
  std::string steps;
  std::string gpu, cluster, profile, name = "calibrated", derivation, output;
  std::string collective;
  std::int64_t ranks = 0, gpus_per_node = 0;
  std::vector<std::string> fit;
  bool json = false;
};

// What was fitted, stage by stage, and the profile it adds up to.
struct Outcome {
  std::optional<calibrate::Fitted> gemm;
  std::optional<spec::Gpu> gpu;
  std::optional<calibrate::CollectiveFit> collectives;
  std::optional<calibrate::StepFit> steps;
  std::string base;                 ///< the profile the fits started from (empty: GEMM fields only)
  spec::Calibration calibration;    ///< base with everything fitted written in
};

calibrate::NcclTestsHints hints(const CalibrateArgs& a) {
  calibrate::NcclTestsHints h;
  if (!a.collective.empty()) {
    h.collective = spec::parse_collective(a.collective);
    if (!h.collective)
      throw SpecError("--collective", "expected one of all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, "
                                      "send_recv, got \"" + a.collective + "\"");
  }
  if (a.ranks > 0) h.ranks = a.ranks;
  if (a.gpus_per_node > 0) h.gpus_per_node = a.gpus_per_node;
  return h;
}

std::vector<calibrate::StepParam> step_params(const CalibrateArgs& a) {
  if (a.fit.empty()) return calibrate::default_step_params();
  std::vector<calibrate::StepParam> out;
  for (const std::string& n : a.fit) {
    auto p = calibrate::parse_step_param(n);
    if (!p) throw SpecError("--fit", "expected compute_efficiency, kernel_overhead_us or overlap_slowdown, got \"" + n + "\"");
    out.push_back(*p);
  }
  return out;
}

// The runs of --steps, prepared with the profile fitted so far. One profile describes one
// cluster: every run must name --cluster's preset (or, without it, the first run's).
std::vector<calibrate::PreparedCase> prepare_runs(const spec::ValidationFile& f, const spec::Calibration& cal,
                                                  const std::optional<spec::Cluster>& cluster) {
  std::string want = cluster ? cluster->name : f.cases.front().cluster;
  std::vector<calibrate::PreparedCase> out;
  for (const spec::ValidationCase& c : f.cases) {
    std::string where = f.path + ":" + c.pointer + "/cluster";
    std::string got = cluster ? spec::load_cluster(c.cluster, where).name : c.cluster;
    if (got != want)
      throw SpecError(where, "expected runs of one cluster (" + want + ") to fit one profile, got \"" + c.cluster + "\"");
    out.push_back(calibrate::prepare_case(c, f.path, cal));
  }
  return out;
}

Outcome fit_all(const CalibrateArgs& a) {
  if (a.bench.empty() && a.nccl_tests.empty() && a.steps.empty())
    throw SpecError("--bench, --nccl-tests or --steps", "expected at least one measurement to fit, got none");
  std::optional<spec::Cluster> cluster;
  if (!a.cluster.empty()) cluster = spec::load_cluster(a.cluster, "--cluster");
  std::optional<spec::ValidationFile> runs;
  if (!a.steps.empty()) {
    runs = spec::load_validation_file(a.steps);
    if (runs->cases.empty()) throw SpecError(a.steps, "expected at least one run in \"cases\", got none");
  }
  // The base: --profile, else the cluster's profile, else the runs' cluster's.
  std::string base = a.profile;
  if (base.empty() && cluster) base = cluster->calibration;
  if (base.empty() && runs) base = spec::load_cluster(runs->cases.front().cluster, a.steps + ":/cases/0/cluster").calibration;
  Outcome o{.base = base};
  if (!base.empty()) o.calibration = spec::load_calibration(base, a.profile.empty() ? "--cluster" : "--profile");

  std::vector<spec::BenchFile> files;  // gemm and copy sweeps; nccl sweeps join the nccl-tests logs
  std::vector<calibrate::CollectiveSample> samples;
  for (const std::string& path : a.bench) {
    spec::BenchFile f = spec::load_bench_file(path, "--bench");
    auto s = calibrate::samples_from_bench(f);
    samples.insert(samples.end(), s.begin(), s.end());
    if (f.gemm || !f.copy.empty()) files.push_back(std::move(f));
  }
  if (!files.empty()) {
    if (a.gpu.empty() && !cluster) throw SpecError("--gpu", "expected the GPU preset the runs used (or --cluster), got none");
    o.gpu = a.gpu.empty() ? cluster->gpu : spec::load_gpu(a.gpu, "--gpu");
    o.gemm = calibrate::fit_bench_files(files, *o.gpu, "--bench");
    o.calibration = spec::apply_patch(o.calibration, calibrate::compute_patch(*o.gemm));
  }
  for (const std::string& path : a.nccl_tests)
    for (const calibrate::NcclTestsLog& log : calibrate::load_nccl_tests_all(path, hints(a))) {
      auto s = calibrate::samples_from_log(log, "--nccl-tests");
      samples.insert(samples.end(), s.begin(), s.end());
    }
  if (!samples.empty()) {
    if (!cluster) throw SpecError("--cluster", "expected the cluster the collectives ran on, got none");
    o.collectives = calibrate::fit_collectives(samples, *cluster, o.calibration.collectives, "--nccl-tests");
    o.calibration.collectives = o.collectives->calibration;
  }
  if (runs) {
    std::vector<calibrate::PreparedCase> cases = prepare_runs(*runs, o.calibration, cluster);
    o.steps = calibrate::fit_steps(cases, o.calibration, step_params(a), "--steps");
    o.calibration = o.steps->calibration;
  }
  return o;
}

std::string report_text(const Outcome& o) {
  std::string out;
  if (o.gemm) out += report::calibrate_report(*o.gemm, *o.gpu, false);
  if (o.collectives) out += (out.empty() ? "" : "\n") + report::collective_fit_text(*o.collectives);
  if (o.steps) out += (out.empty() ? "" : "\n") + report::step_fit_text(*o.steps);
  return out;
}

std::string report_json(const Outcome& o) {
  nlohmann::json j = o.gemm ? nlohmann::json::parse(report::calibrate_report(*o.gemm, *o.gpu, true))
                            : nlohmann::json::object();
  if (o.collectives) j["collectives"] = report::collective_fit_json(*o.collectives);
  if (o.steps) j["steps"] = report::step_fit_json(*o.steps);
  return spec::json_text(j) + "\n";
}

// The base profile with everything fitted written in, saying where the fields came from.
std::string profile_text(const CalibrateArgs& a, const Outcome& o, const std::string& base) {
  spec::ProfilePatch patch = spec::profile_patch(spec::load_calibration(base, "--profile"), o.calibration);
  std::string& by = patch.calibrated_by;
  by = "dtsim calibrate";
  for (const std::string& p : a.bench) by += " --bench " + p;
  for (const std::string& p : a.nccl_tests) by += " --nccl-tests " + p;
  if (!a.steps.empty()) by += " --steps " + a.steps;
  if (!a.cluster.empty()) by += " --cluster " + a.cluster;
  if (!a.gpu.empty()) by += " --gpu " + a.gpu;
  if (!a.collective.empty()) by += " --collective " + a.collective;
  if (a.ranks > 0) by += " --ranks " + std::to_string(a.ranks);
  if (a.gpus_per_node > 0) by += " --gpus-per-node " + std::to_string(a.gpus_per_node);
  for (const std::string& f : a.fit) by += " --fit " + f;
  by += " --profile " + base + " --name " + a.name;
  if (!a.derivation.empty()) {
    patch.derivation = a.derivation;
    by += " --derivation " + a.derivation;
  }
  return spec::patched_profile_text(base, patch, a.name, "--profile");
}

int run(const CalibrateArgs& a) {
  Outcome o = fit_all(a);
  if (!a.output.empty()) {
    if (o.base.empty())
      throw SpecError("--output", "expected --profile or --cluster to name the profile to write, got neither");
    std::string text = profile_text(a, o, o.base);
    spec::write_text_file("--output", a.output, text);
    std::cout << (a.json ? report_json(o) : report_text(o));
    return 0;
  }
  if (!a.profile.empty()) {
    std::string text = profile_text(a, o, a.profile);
    if (!a.json) std::cerr << report_text(o);
    std::cout << text;
    return 0;
  }
  std::cout << (a.json ? report_json(o) : report_text(o));
  return 0;
}

}  // namespace

void add_calibrate(CLI::App& app, Action& action) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate", "Fit a calibration profile to measurements: dtsim-bench, nccl-tests logs, measured step times");
  cmd->add_option("--bench", args->bench, "dtsim-bench --json output: gemm, copy, nccl (repeat for more sweeps)");
  cmd->add_option("--nccl-tests", args->nccl_tests,
                  "nccl-tests output as printed or posted, one or more tables (repeat for more logs)");
  cmd->add_option("--steps", args->steps,
                  "A dtsim-validation-cases/1 file of runs measured on this cluster and software stack: fits "
                  "compute_efficiency, kernel_overhead_us and overlap_slowdown");
  cmd->add_option("--fit", args->fit, "With --steps: the parameters to fit (default: all three)")->delimiter(',');
  cmd->add_option("--cluster", args->cluster, "Cluster preset or file the measurements ran on (needed for collectives)");
  cmd->add_option("--gpu", args->gpu, "GPU preset or file of dtsim-bench gemm/copy runs (default: the cluster's)");
  cmd->add_option("--collective", args->collective, "Collective of nccl-tests logs that do not say");
  cmd->add_option("--ranks", args->ranks, "Rank count of nccl-tests logs that do not say")->check(CLI::Range(2, 1 << 24));
  cmd->add_option("--gpus-per-node", args->gpus_per_node, "Ranks per node of nccl-tests logs that do not say")
      ->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--profile", args->profile,
                  "Print this profile (preset or file) with the fitted fields replaced, as a new profile "
                  "(the fit report goes to stderr)");
  cmd->add_option("--name", args->name, "The new profile's name (default: calibrated)");
  cmd->add_option("--derivation", args->derivation,
                  "Where the new profile's derivation is written, its \"derivation\" field (default: the base profile's)");
  cmd->add_option("--output", args->output, "Write the new profile to this file and print the fit report");
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->callback([args, &action] { action = [args] { return run(*args); }; });
}

}  // namespace dtsim::cli
