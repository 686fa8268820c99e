#pragma once
// `dtsim-bench/1` files: what tools/dtsim-bench measured on one GPU (tools/dtsim-bench/main.cc
// writes them with --json). `dtsim calibrate` fits profile fields from them.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "spec/gpu.h"

namespace dtsim::spec {

/// Sustained throughput of one GEMM shape (D[m x n] = A[m x k] B[k x n]).
struct GemmPoint {
  std::int64_t m = 0, n = 0, k = 0;
  double tflops = 0;
};

struct GemmSweep {
  Dtype dtype = Dtype::bf16;
  std::vector<GemmPoint> points;
};

/// Device-to-device copy bandwidth, bytes read plus bytes written.
struct CopyPoint {
  std::int64_t bytes = 0;
  double gb_per_s = 0;
};

struct BenchFile {
  std::string path;
  std::string device;             ///< the GPU's name as the driver reports it
  std::int64_t sm_count = 0;
  std::optional<GemmSweep> gemm;
  std::vector<CopyPoint> copy;    ///< empty when the file holds no copy sweep
};

/// Parses a dtsim-bench file; throws SpecError (file + JSON pointer) on a malformed one.
[[nodiscard]] BenchFile parse_bench_file(const std::string& text, const std::string& file);
/// Reads and parses a file; `flag` names the option in errors about the path.
[[nodiscard]] BenchFile load_bench_file(const std::string& path, const std::string& flag = "--bench");

}  // namespace dtsim::spec
