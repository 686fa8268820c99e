// `dtsim calibrate`: fits a calibration profile's compute fields (GEMM curves per dtype,
// memory_efficiency) to dtsim-bench measurements of one GPU.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "calibrate/fit.h"
#include "cli/commands.h"
#include "report/calibrate_report.h"
#include "spec/bench_file.h"
#include "spec/calibration.h"
#include "spec/load.h"

namespace dtsim::cli {
namespace {

struct CalibrateArgs {
  std::vector<std::string> bench;
  std::string gpu, profile, name = "calibrated";
  bool json = false;
};

int run(const CalibrateArgs& a) {
  spec::Gpu gpu = spec::load_gpu(a.gpu, "--gpu");
  std::vector<spec::BenchFile> files;
  for (const std::string& path : a.bench) files.push_back(spec::load_bench_file(path, "--bench"));
  calibrate::Fitted f = calibrate::fit_bench_files(files, gpu, "--bench");
  if (a.profile.empty()) {
    std::cout << report::calibrate_report(f, gpu, a.json);
    return 0;
  }
  // A whole profile: the base with the measured fields replaced, saying where they came from.
  spec::ComputePatch patch = calibrate::compute_patch(f);
  patch.derivation = "dtsim calibrate on " + f.device + " (" + std::to_string(f.sm_count) + " SMs) against GPU preset " +
                     gpu.name + ", from";
  for (const std::string& path : a.bench) patch.derivation += " " + path;
  patch.derivation += "; other fields from profile " + a.profile;
  std::cout << spec::patched_profile_text(a.profile, patch, a.name, "--profile");
  return 0;
}

}  // namespace

void add_calibrate(CLI::App& app, Action& action) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand("calibrate", "Fit a profile's GEMM curves and memory efficiency to dtsim-bench output");
  cmd->add_option("--bench", args->bench, "dtsim-bench --json output (repeat for more sweeps)")->required();
  cmd->add_option("--gpu", args->gpu, "GPU preset (topologies/gpus/NAME.json) or file the runs used")->required();
  cmd->add_option("--profile", args->profile,
                  "Print this profile (preset or file) with the fitted fields replaced, as a new profile");
  cmd->add_option("--name", args->name, "The new profile's name (with --profile; default: calibrated)");
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->callback([args, &action] { action = [args] { return run(*args); }; });
}

}  // namespace dtsim::cli
