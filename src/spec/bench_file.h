#pragma once
// `dtsim-bench/1` files: what tools/dtsim-bench measured on one GPU (tools/dtsim-bench/main.cc
// writes them with --json). `dtsim calibrate` fits profile fields from them.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "spec/calibration.h"
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

/// One size of a `dtsim-bench nccl` sweep: the slowest rank's mean time, out-of-place and in-place.
struct NcclPoint {
  std::int64_t size_bytes = 0;    ///< nccl-tests' size column
  double out_of_place_us = 0;
  std::optional<double> in_place_us;
};

/// One collective's sweep.
struct NcclSweep {
  Collective collective = Collective::all_reduce;
  std::vector<NcclPoint> points;
};

/// A `dtsim-bench nccl` run: one communicator, one sweep per collective.
struct NcclRun {
  std::int64_t ranks = 0, ranks_per_node = 0;
  std::string version;            ///< NCCL's, e.g. "2.28.9"
  std::vector<NcclSweep> sweeps;
};

struct BenchFile {
  std::string path;
  std::string device;             ///< the GPU's name as the driver reports it
  std::int64_t sm_count = 0;
  std::optional<GemmSweep> gemm;
  std::vector<CopyPoint> copy;    ///< empty when the file holds no copy sweep
  std::optional<NcclRun> nccl;
};

/// Parses a dtsim-bench file; throws SpecError (file + JSON pointer) on a malformed one.
[[nodiscard]] BenchFile parse_bench_file(const std::string& text, const std::string& file);
/// Reads and parses a file; `flag` names the option in errors about the path.
[[nodiscard]] BenchFile load_bench_file(const std::string& path, const std::string& flag = "--bench");

}  // namespace dtsim::spec
