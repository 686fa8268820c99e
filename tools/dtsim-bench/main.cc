// dtsim-bench: measures what a calibration profile's compute section describes, on the GPU it
// runs on (`dtsim calibrate --bench FILE` fits a profile from its --json output), and NCCL
// collectives as nccl-tests does (the nccl subcommand, where NCCL was found at build time).
#include <cstdio>
#include <iostream>
#include <memory>
#include <stdexcept>

#include <CLI/CLI.hpp>

#include "copy.h"
#include "device.h"
#include "gemm.h"
#ifdef DTSIM_BENCH_HAVE_NCCL
#include "nccl_bench.h"
#include "nccl_options.h"
#endif

namespace {

using nlohmann::json;

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

void print_gemm(const json& dev, const json& g) {
  std::cout << dev.at("name").get<std::string>() << " (" << dev.at("sm_count").get<int>() << " SMs), "
            << g.at("dtype").get<std::string>() << " GEMM"
            << (g.at("accumulate").get<std::string>() == "fp32" ? " accumulating into fp32" : "") << ", TN, " << fixed(g.at("seconds_per_shape").get<double>(), 1)
            << " s per shape after " << fixed(g.at("warmup_s").get<double>(), 1) << " s of warm-up\n\n";
  std::printf("%8s %8s %8s %10s %10s %10s\n", "m", "n", "k", "TFLOP/s", "min", "max");
  for (const json& r : g.at("results"))
    std::printf("%8lld %8lld %8lld %10.1f %10.1f %10.1f\n", r.at("m").get<long long>(), r.at("n").get<long long>(),
                r.at("k").get<long long>(), r.at("tflops").get<double>(), r.at("tflops_min").get<double>(),
                r.at("tflops_max").get<double>());
}

void print_copy(const json& dev, const json& c) {
  std::cout << dev.at("name").get<std::string>() << ", device-to-device copy (GB/s counting read + write)\n\n";
  std::printf("%14s %10s\n", "bytes", "GB/s");
  for (const json& r : c.at("results"))
    std::printf("%14lld %10.1f\n", r.at("bytes").get<long long>(), r.at("gb_per_s").get<double>());
}

json envelope(const json& dev) { return {{"schema", "dtsim-bench/1"}, {"device", dev}}; }

#ifdef DTSIM_BENCH_HAVE_NCCL
#ifdef DTSIM_BENCH_HAVE_MPI
constexpr bool kHaveMpi = true;  // the mpi launcher is compiled in (CMake found MPI)
#else
constexpr bool kHaveMpi = false;
#endif
#endif

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dtsim-bench: GEMM, HBM and NCCL microbenchmarks for dtsim calibration profiles"};
  app.require_subcommand(1);

  dtsim::bench::GemmOptions gopt;
  std::string shapes;
  double workspace_mib = 32;
  bool gemm_json = false;
  CLI::App* gemm = app.add_subcommand("gemm", "Sustained cuBLASLt GEMM TFLOP/s per shape");
  gemm->add_option("--dtype", gopt.dtype, "bf16|fp16|fp8 (e4m3 inputs, bf16 output)")
      ->check(CLI::IsMember({"bf16", "fp16", "fp8"}));
  gemm->add_flag("--accumulate-fp32", gopt.accumulate_fp32,
                 "D = D + A B into fp32 D (weight gradients accumulated into fp32 main grads); bf16/fp16 only");
  gemm->add_option("--shapes", shapes, "m,n,k;m,n,k;... (default: squares, curve axes and training shapes)");
  gemm->add_option("--warmup", gopt.warmup_s, "Seconds the largest shape runs before measuring")
      ->check(CLI::Range(0.0, 600.0));
  gemm->add_option("--seconds", gopt.seconds, "Measured seconds per shape")->check(CLI::Range(0.01, 600.0));
  gemm->add_option("--workspace-mib", workspace_mib, "cuBLASLt workspace")->check(CLI::Range(0.0, 4096.0));
  gemm->add_flag("--json", gemm_json, "Print one JSON object");

  std::vector<std::int64_t> sizes{std::int64_t{64} << 20, std::int64_t{256} << 20, std::int64_t{1} << 30};
  double copy_seconds = 2;
  bool copy_json = false;
  CLI::App* copy = app.add_subcommand("copy", "Device-to-device copy bandwidth");
  copy->add_option("--bytes", sizes, "Sizes to copy, comma separated")->delimiter(',')->check(CLI::Range(
      std::int64_t{1}, std::int64_t{1} << 36));
  copy->add_option("--seconds", copy_seconds, "Measured seconds per size")->check(CLI::Range(0.01, 600.0));
  copy->add_flag("--json", copy_json, "Print one JSON object");

#ifdef DTSIM_BENCH_HAVE_NCCL
  dtsim::bench::NcclArgs nccl_args;
  CLI::App* nccl = app.add_subcommand("nccl", "NCCL collectives over a size sweep, measured and printed as nccl-tests");
  dtsim::bench::add_nccl_options(*nccl, nccl_args);
#endif

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "dtsim-bench: " << e.what() << "\n";
    return 2;
  }
  if (gopt.accumulate_fp32 && gopt.dtype == "fp8") {  // checked before any device call
    std::cerr << "dtsim-bench: --accumulate-fp32: expected --dtype bf16 or fp16, got \"fp8\"\n";
    return 2;
  }
  try {
#ifdef DTSIM_BENCH_HAVE_NCCL
    if (nccl->parsed())  // flags checked (exit 2) before any device call
      return dtsim::bench::run_nccl_command(
          dtsim::bench::resolve_nccl_options(nccl_args, dtsim::bench::process_env(), kHaveMpi));
#endif
    // One JSON object (the envelope plus this run's section) or the text table.
    auto emit = [](const char* key, const json& section, bool as_json, void (*print)(const json&, const json&),
                   const json& dev) {
      if (!as_json) return print(dev, section);
      json out = envelope(dev);
      out[key] = section;
      std::cout << out.dump(2) << "\n";
    };
    if (gemm->parsed()) {
      std::vector<dtsim::bench::GemmShape> list =
          shapes.empty() ? dtsim::bench::default_gemm_shapes() : dtsim::bench::parse_gemm_shapes(shapes);
      gopt.workspace = static_cast<std::size_t>(workspace_mib * (1 << 20));
      json dev = dtsim::bench::device_info();
      emit("gemm", dtsim::bench::run_gemm(list, gopt), gemm_json, print_gemm, dev);
    } else {
      json dev = dtsim::bench::device_info();
      emit("copy", dtsim::bench::run_copy(sizes, copy_seconds), copy_json, print_copy, dev);
    }
  } catch (const std::invalid_argument& e) {
    std::cerr << "dtsim-bench: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "dtsim-bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
