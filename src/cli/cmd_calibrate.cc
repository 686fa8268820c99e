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
#include "spec/load.h"

namespace dtsim::cli {
namespace {

struct CalibrateArgs {
  std::vector<std::string> bench;
  std::string gpu;
  bool json = false;
};

int run(const CalibrateArgs& a) {
  spec::Gpu gpu = spec::load_gpu(a.gpu, "--gpu");
  std::vector<spec::BenchFile> files;
  for (const std::string& path : a.bench) files.push_back(spec::load_bench_file(path, "--bench"));
  calibrate::Fitted f = calibrate::fit_bench_files(files, gpu, "--bench");
  std::cout << report::calibrate_report(f, gpu, a.json);
  return 0;
}

}  // namespace

void add_calibrate(CLI::App& app, Action& action) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* cmd = app.add_subcommand("calibrate", "Fit a profile's GEMM curves and memory efficiency to dtsim-bench output");
  cmd->add_option("--bench", args->bench, "dtsim-bench --json output (repeat for more sweeps)")->required();
  cmd->add_option("--gpu", args->gpu, "GPU preset (topologies/gpus/NAME.json) or file the runs used")->required();
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->callback([args, &action] { action = [args] { return run(*args); }; });
}

}  // namespace dtsim::cli
