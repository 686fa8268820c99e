#include <catch2/catch.hpp>

#include "helpers.h"

#include "core/errors.h"
#include "spec/bench_file.h"

using namespace dtsim::spec;
using Catch::Matchers::Equals;
using Catch::Matchers::StartsWith;

namespace {

// What tools/dtsim-bench writes with --json (device.cc, gemm.cc, copy.cc), two shapes and one size.
const std::string kFile = R"({"schema": "dtsim-bench/1",
  "device": {"name": "NVIDIA H100 80GB HBM3", "sm_count": 132, "compute_capability": "9.0",
             "memory_bytes": 85520809984, "l2_bytes": 52428800, "max_sm_clock_mhz": 1980,
             "max_memory_clock_mhz": 2619, "cuda_driver": 13000, "cuda_runtime": 13000, "cublaslt": 130000},
  "gemm": {"dtype": "bf16", "layout": "TN", "warmup_s": 10, "seconds_per_shape": 2, "workspace_bytes": 33554432,
           "warmup_shape": [8192, 8192, 8192],
           "results": [{"m": 8192, "n": 8192, "k": 8192, "tflops": 745.1, "tflops_min": 740, "tflops_max": 750,
                        "iterations": 1000, "seconds": 2.01},
                       {"m": 512, "n": 9216, "k": 12288, "tflops": 601.5, "tflops_min": 600, "tflops_max": 603,
                        "iterations": 9000, "seconds": 2.0}]},
  "copy": {"seconds_per_size": 2, "counts": "bytes read + bytes written",
           "results": [{"bytes": 1073741824, "gb_per_s": 2950.5, "iterations": 2800, "seconds": 2.0}]}})";

std::string with(const std::string& from, const std::string& to) { return dtsim::test::replaced(kFile, from, to); }

}  // namespace

TEST_CASE("spec::parse_bench_file: dtsim-bench --json output", "[spec]") {
  BenchFile f = parse_bench_file(kFile, "b.json");
  CHECK(f.device == "NVIDIA H100 80GB HBM3");
  CHECK(f.sm_count == 132);
  REQUIRE(f.gemm);
  CHECK(f.gemm->dtype == Dtype::bf16);
  REQUIRE(f.gemm->points.size() == 2);
  CHECK(f.gemm->points[1].m == 512);
  CHECK(f.gemm->points[1].n == 9216);
  CHECK(f.gemm->points[1].k == 12288);
  CHECK(f.gemm->points[1].tflops == 601.5);
  REQUIRE(f.copy.size() == 1);
  CHECK(f.copy[0].gb_per_s == 2950.5);
  // Either sweep alone is a file too.
  std::string copy_only = R"({"schema": "dtsim-bench/1", "device": {"name": "X", "sm_count": 1},
    "copy": {"results": [{"bytes": 1024, "gb_per_s": 1.5}]}})";
  BenchFile c = parse_bench_file(copy_only, "c.json");
  CHECK_FALSE(c.gemm);
  REQUIRE(c.copy.size() == 1);
  CHECK(c.copy[0].bytes == 1024);
}

TEST_CASE("spec::parse_bench_file: errors name the file and pointer", "[spec]") {
  CHECK_THROWS_WITH(parse_bench_file(with("dtsim-bench/1", "dtsim-bench/2"), "b.json"),
                    Equals("b.json:/schema: expected \"dtsim-bench/1\", got \"dtsim-bench/2\""));
  CHECK_THROWS_WITH(parse_bench_file(with(R"("dtype": "bf16")", R"("dtype": "int8")"), "b.json"),
                    StartsWith("b.json:/gemm/dtype: expected one of "));
  CHECK_THROWS_WITH(parse_bench_file(with(R"("k": 12288, "tflops": 601.5)", R"("k": 12288, "tflops": -1)"), "b.json"),
                    Equals("b.json:/gemm/results/1/tflops: expected a number > 0, got -1"));
  CHECK_THROWS_WITH(parse_bench_file(with(R"("m": 512,)", R"("m": 512, "mm": 1,)"), "b.json"),
                    StartsWith("b.json:/gemm/results/1/mm: unknown key"));
  CHECK_THROWS_WITH(parse_bench_file(with(R"("sm_count": 132,)", ""), "b.json"),
                    Equals("b.json:/device/sm_count: missing required key"));
  // An accumulation sweep (dtsim-bench gemm --accumulate-fp32) is read but not fitted as the curve.
  CHECK(parse_bench_file(with(R"("dtype": "bf16",)", R"("dtype": "bf16", "accumulate": "none",)"), "b.json").gemm);
  CHECK_THROWS_WITH(parse_bench_file(with(R"("dtype": "bf16",)", R"("dtype": "bf16", "accumulate": "fp32",)"), "b.json"),
                    Equals("b.json:/gemm/accumulate: expected \"none\" (the GEMM curve is fitted to D = A B sweeps), "
                           "got \"fp32\""));
  std::string no_sweeps = R"({"schema": "dtsim-bench/1", "device": {"name": "X", "sm_count": 1}})";
  CHECK_THROWS_WITH(parse_bench_file(no_sweeps, "b.json"),
                    Equals("b.json:/gemm: expected a \"gemm\", \"copy\" or \"nccl\" sweep, got none"));
  CHECK_THROWS_WITH(load_bench_file("/nonexistent/b.json"),
                    Equals("--bench: expected an existing dtsim-bench JSON file, got \"/nonexistent/b.json\" (no such file)"));
}

namespace {

// What `dtsim-bench nccl --json` writes (tools/dtsim-bench/nccl_report.cc nccl_document): 2 nodes
// of 8 ranks, one all_reduce size.
const std::string kNccl = R"({"schema": "dtsim-bench/1", "device": {"name": "NVIDIA H100 80GB HBM3", "sm_count": 132},
  "nccl": {"version": "2.28.9", "launcher": "mpi", "ranks": 16, "ranks_per_node": 8, "nodes": 2, "hosts": ["a", "b"],
           "dtype": "float", "warmup_iters": 5, "iters": 20, "check": true,
           "sweeps": [{"collective": "all_reduce", "redop": "sum", "root": -1,
                       "results": [{"size_bytes": 1048576, "count": 262144,
                                    "out_of_place": {"time_us": 90.0, "algbw_GBps": 11.65, "busbw_GBps": 21.85, "wrong": 0},
                                    "in_place": {"time_us": 88.0, "algbw_GBps": 11.92, "busbw_GBps": 22.34, "wrong": null}}]}]}})";

std::string nccl_with(const std::string& from, const std::string& to) { return dtsim::test::replaced(kNccl, from, to); }

}  // namespace

TEST_CASE("spec::parse_bench_file: dtsim-bench nccl sweeps", "[spec]") {
  BenchFile f = parse_bench_file(kNccl, "n.json");
  REQUIRE(f.nccl);
  CHECK(f.nccl->ranks == 16);
  CHECK(f.nccl->ranks_per_node == 8);
  CHECK(f.nccl->version == "2.28.9");
  REQUIRE(f.nccl->sweeps.size() == 1);
  CHECK(f.nccl->sweeps[0].collective == Collective::all_reduce);
  REQUIRE(f.nccl->sweeps[0].points.size() == 1);
  CHECK(f.nccl->sweeps[0].points[0].size_bytes == 1048576);
  CHECK(f.nccl->sweeps[0].points[0].out_of_place_us == 90.0);
  CHECK(f.nccl->sweeps[0].points[0].in_place_us == 88.0);
  // A failed data check is not a measurement; uneven nodes are not a flat communicator.
  CHECK_THROWS_WITH(parse_bench_file(nccl_with(R"("busbw_GBps": 21.85, "wrong": 0)", R"("busbw_GBps": 21.85, "wrong": 3)"), "n.json"),
                    Equals("n.json:/nccl/sweeps/0/results/0/out_of_place/wrong: expected 0 wrong elements (a sweep whose "
                           "data check failed is not a measurement), got 3"));
  CHECK_THROWS_WITH(parse_bench_file(nccl_with(R"("ranks_per_node": 8)", R"("ranks_per_node": null)"), "n.json"),
                    StartsWith("n.json:/nccl/ranks_per_node: expected the same number of ranks on every node"));
  CHECK_THROWS_WITH(parse_bench_file(nccl_with(R"("nodes": 2)", R"("nodes": 3)"), "n.json"),
                    Equals("n.json:/nccl/nodes: expected ranks / ranks_per_node = 2, got 3"));
  CHECK_THROWS_WITH(parse_bench_file(nccl_with(R"("collective": "all_reduce")", R"("collective": "allreduce")"), "n.json"),
                    StartsWith("n.json:/nccl/sweeps/0/collective: expected one of "));
  CHECK_THROWS_WITH(parse_bench_file(nccl_with(R"("time_us": 90.0)", R"("time_us": 0)"), "n.json"),
                    Equals("n.json:/nccl/sweeps/0/results/0/out_of_place/time_us: expected a number > 0, got 0"));
}
