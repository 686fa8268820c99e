#include "spec/bench_file.h"

#include <filesystem>

#include "core/errors.h"
#include "spec/json_reader.h"
#include "spec/load.h"

namespace dtsim::spec {
namespace {

constexpr std::int64_t kMaxDim = std::int64_t{1} << 20;  // dtsim-bench's --shapes limit

void read_device(ObjectReader r, BenchFile& f) {
  f.device = r.string("name");
  f.sm_count = r.integer("sm_count", 1, 1 << 20);
  // The rest describes the run (tools/dtsim-bench/device.cc) and is not fitted.
  for (const char* k : {"compute_capability", "memory_bytes", "l2_bytes", "max_sm_clock_mhz", "max_memory_clock_mhz",
                        "cuda_driver", "cuda_runtime", "cublaslt"})
    r.skip(k);
  r.finish();
}

GemmSweep read_gemm(ObjectReader r) {
  GemmSweep g;
  constexpr Dtype kDtypes[] = {Dtype::bf16, Dtype::fp16, Dtype::fp8};
  g.dtype = kDtypes[r.choice("dtype", {"bf16", "fp16", "fp8"})];
  // `dtsim-bench gemm --accumulate-fp32` measures weight-gradient GEMMs that add into fp32 main
  // grads: a different kernel from the curve's D = A B, so it is not fitted as one.
  if (r.optional_choice("accumulate", {"none", "fp32"}).value_or(0) != 0)
    r.fail("accumulate", "expected \"none\" (the GEMM curve is fitted to D = A B sweeps), got \"fp32\"");
  for (const char* k : {"layout", "warmup_s", "seconds_per_shape", "workspace_bytes", "warmup_shape"}) r.skip(k);
  const nlohmann::json& results = r.array("results");
  r.finish();
  if (results.empty()) r.fail("results", "expected at least one measured shape, got an empty array");
  for (std::size_t i = 0; i < results.size(); ++i) {
    ObjectReader p(results[i], r.file(), r.pointer("results") + "/" + std::to_string(i));
    GemmPoint pt{.m = p.integer("m", 1, kMaxDim), .n = p.integer("n", 1, kMaxDim), .k = p.integer("k", 1, kMaxDim),
                 .tflops = p.positive("tflops")};
    for (const char* k : {"tflops_min", "tflops_max", "iterations", "seconds"}) p.skip(k);
    p.finish();
    g.points.push_back(pt);
  }
  return g;
}

std::vector<CopyPoint> read_copy(ObjectReader r) {
  for (const char* k : {"seconds_per_size", "counts"}) r.skip(k);
  const nlohmann::json& results = r.array("results");
  r.finish();
  if (results.empty()) r.fail("results", "expected at least one measured size, got an empty array");
  std::vector<CopyPoint> out;
  for (std::size_t i = 0; i < results.size(); ++i) {
    ObjectReader p(results[i], r.file(), r.pointer("results") + "/" + std::to_string(i));
    out.push_back({.bytes = p.integer("bytes", 1, std::int64_t{1} << 50), .gb_per_s = p.positive("gb_per_s")});
    for (const char* k : {"iterations", "seconds"}) p.skip(k);
    p.finish();
  }
  return out;
}

}  // namespace

BenchFile parse_bench_file(const std::string& text, const std::string& file) {
  nlohmann::json j = parse_json_text(text, file);
  ObjectReader r(j, file, "");
  expect_schema(r, "dtsim-bench/1");
  BenchFile f{.path = file};
  read_device(r.object("device"), f);
  if (r.has("gemm")) f.gemm = read_gemm(r.object("gemm"));
  else r.skip("gemm");
  if (r.has("copy")) f.copy = read_copy(r.object("copy"));
  else r.skip("copy");
  r.finish();
  if (!f.gemm && f.copy.empty()) r.fail("gemm", "expected a \"gemm\" or a \"copy\" sweep, got neither");
  return f;
}

BenchFile load_bench_file(const std::string& path, const std::string& flag) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw SpecError(flag, "expected an existing dtsim-bench JSON file, got \"" + path + "\" (no such file)");
  return parse_bench_file(read_spec_text(path), path);
}

}  // namespace dtsim::spec
