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

// A timing cell {time_us, algbw_GBps, busbw_GBps, wrong}: the time, refused when the data
// check found wrong elements (the run measured something broken).
double read_timing(ObjectReader r) {
  double t = r.positive("time_us");
  if (std::int64_t wrong = r.optional_integer("wrong", 0, std::int64_t{1} << 62).value_or(0); wrong != 0)
    r.fail("wrong", "expected 0 wrong elements (a sweep whose data check failed is not a measurement), got " +
                        std::to_string(wrong));
  r.skip("algbw_GBps");
  r.skip("busbw_GBps");
  r.finish();
  return t;
}

NcclSweep read_sweep(ObjectReader r) {
  NcclSweep s;
  s.collective = kCollectives[r.choice("collective", {"all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                                                       "broadcast", "send_recv"})];
  r.skip("redop");
  r.skip("root");
  const nlohmann::json& results = r.array("results");
  r.finish();
  if (results.empty()) r.fail("results", "expected at least one measured size, got an empty array");
  for (std::size_t i = 0; i < results.size(); ++i) {
    ObjectReader p(results[i], r.file(), r.pointer("results") + "/" + std::to_string(i));
    NcclPoint pt{.size_bytes = p.integer("size_bytes", 1, std::int64_t{1} << 50)};
    p.skip("count");
    pt.out_of_place_us = read_timing(p.object("out_of_place"));
    if (p.has("in_place")) pt.in_place_us = read_timing(p.object("in_place"));
    else p.skip("in_place");
    p.finish();
    s.points.push_back(pt);
  }
  return s;
}

NcclRun read_nccl(ObjectReader r) {
  NcclRun n;
  n.version = r.string("version");
  n.ranks = r.integer("ranks", 1, std::int64_t{1} << 24);
  if (!r.has("ranks_per_node"))
    r.fail("ranks_per_node", "expected the same number of ranks on every node (dtsim prices flat communicators), "
                             "got null (nodes with different rank counts)");
  n.ranks_per_node = r.integer("ranks_per_node", 1, n.ranks);
  std::int64_t nodes = r.integer("nodes", 1, n.ranks);
  if (nodes * n.ranks_per_node != n.ranks)
    r.fail("nodes", "expected ranks / ranks_per_node = " + std::to_string(n.ranks / n.ranks_per_node) + ", got " +
                        std::to_string(nodes));
  for (const char* k : {"launcher", "hosts", "dtype", "warmup_iters", "iters", "check"}) r.skip(k);
  const nlohmann::json& sweeps = r.array("sweeps");
  r.finish();
  if (sweeps.empty()) r.fail("sweeps", "expected at least one collective's sweep, got an empty array");
  for (std::size_t i = 0; i < sweeps.size(); ++i)
    n.sweeps.push_back(read_sweep(ObjectReader(sweeps[i], r.file(), r.pointer("sweeps") + "/" + std::to_string(i))));
  return n;
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
  if (r.has("nccl")) f.nccl = read_nccl(r.object("nccl"));
  else r.skip("nccl");
  r.finish();
  if (!f.gemm && f.copy.empty() && !f.nccl)
    r.fail("gemm", "expected a \"gemm\", \"copy\" or \"nccl\" sweep, got none");
  return f;
}

BenchFile load_bench_file(const std::string& path, const std::string& flag) {
  require_path(flag, path);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw SpecError(flag, "expected an existing dtsim-bench JSON file, got \"" + path + "\" (no such file)");
  return parse_bench_file(read_spec_text(path), path);
}

}  // namespace dtsim::spec
