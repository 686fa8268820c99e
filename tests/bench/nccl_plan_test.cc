// The sweep dtsim-bench nccl plans (tools/dtsim-bench/nccl_plan.h), against nccl-tests' rules:
// src/common.cu walks the sizes, each src/<collective>.cu's GetCollByteCount sets the counts, and
// doc/PERFORMANCE.md gives the bus-bandwidth factors.
#include <catch2/catch.hpp>

#include "nccl_plan.h"

using namespace dtsim::bench;
using Catch::Matchers::WithinRel;

TEST_CASE("bench::sweep_sizes: nccl-tests -b 8 -e 128M -f 2", "[bench]") {
  std::vector<std::int64_t> s = sweep_sizes(8, 128 << 20, 2, 0);
  REQUIRE(s.size() == 25);  // 2^3 .. 2^27
  CHECK(s.front() == 8);
  CHECK(s[1] == 16);
  CHECK(s.back() == 134217728);
}

TEST_CASE("bench::sweep_sizes: -f 3 stops below -e; -i steps by bytes", "[bench]") {
  CHECK(sweep_sizes(8, 100, 3, 0) == std::vector<std::int64_t>{8, 24, 72});
  CHECK(sweep_sizes(1 << 20, 4 << 20, 1, 1 << 20) == std::vector<std::int64_t>{1 << 20, 2 << 20, 3 << 20, 4 << 20});
  CHECK(sweep_sizes(64, 64, 2, 0) == std::vector<std::int64_t>{64});
  CHECK_THROWS_AS(sweep_sizes(8, 64, 1, 0), std::logic_error);  // would never advance
}

TEST_CASE("bench::nccl_counts: all_reduce, broadcast, send_recv keep the whole size", "[bench]") {
  // 1 MiB of float: 262144 elements on every rank, in and out.
  for (NcclCollective c : {NcclCollective::all_reduce, NcclCollective::broadcast, NcclCollective::send_recv}) {
    NcclCounts k = nccl_counts(c, 1 << 20, NcclDtype::float32, 16);
    CHECK(k == NcclCounts{.size_bytes = 1 << 20, .count = 262144, .send_count = 262144, .recv_count = 262144});
  }
  // 10 bytes of half: 5 elements; of float: 2 elements, 8 bytes (rounded down to whole elements).
  CHECK(nccl_counts(NcclCollective::all_reduce, 10, NcclDtype::float16, 16).size_bytes == 10);
  CHECK(nccl_counts(NcclCollective::all_reduce, 10, NcclDtype::float32, 16).size_bytes == 8);
}

TEST_CASE("bench::nccl_counts: all_gather at 16 ranks splits the whole buffer", "[bench]") {
  // 1000 bytes of float = 250 elements; 250 / 16 = 15 per rank; the size is 15 x 16 x 4 = 960.
  NcclCounts k = nccl_counts(NcclCollective::all_gather, 1000, NcclDtype::float32, 16);
  CHECK(k == NcclCounts{.size_bytes = 960, .count = 15, .send_count = 15, .recv_count = 240,
                        .send_inplace_offset = 15, .recv_inplace_offset = 0});
  // 32 bytes = 8 floats < 16 ranks: nothing per rank, a row of size 0 as nccl-tests prints it.
  CHECK(nccl_counts(NcclCollective::all_gather, 32, NcclDtype::float32, 16).size_bytes == 0);
  // 64 bytes = 16 floats: one element per rank.
  CHECK(nccl_counts(NcclCollective::all_gather, 64, NcclDtype::float32, 16).count == 1);
}

TEST_CASE("bench::nccl_counts: reduce_scatter and all_to_all at 16 ranks", "[bench]") {
  // 128 MiB of bfloat16 = 67108864 elements; / 16 = 4194304 per rank, whole again: 128 MiB.
  NcclCounts rs = nccl_counts(NcclCollective::reduce_scatter, 128 << 20, NcclDtype::bfloat16, 16);
  CHECK(rs == NcclCounts{.size_bytes = 128 << 20, .count = 4194304, .send_count = 67108864, .recv_count = 4194304,
                         .send_inplace_offset = 0, .recv_inplace_offset = 4194304});
  // 100 bytes of float = 25 elements; 25 / 16 = 1 per peer; 16 elements, 64 bytes in and out.
  NcclCounts a2a = nccl_counts(NcclCollective::all_to_all, 100, NcclDtype::float32, 16);
  CHECK(a2a == NcclCounts{.size_bytes = 64, .count = 1, .send_count = 16, .recv_count = 16});
}

TEST_CASE("bench::bus_factor: nccl-tests doc/PERFORMANCE.md", "[bench]") {
  // AllReduce: each element needs n-1 additions and n assignments over n links, 2(n-1)/n.
  CHECK_THAT(bus_factor(NcclCollective::all_reduce, 8), WithinRel(2.0 * 7 / 8));   // 1.75
  CHECK_THAT(bus_factor(NcclCollective::all_reduce, 16), WithinRel(2.0 * 15 / 16));  // 1.875
  // ReduceScatter, AllGather, AlltoAll: half of AllReduce's transfers, (n-1)/n.
  CHECK_THAT(bus_factor(NcclCollective::reduce_scatter, 16), WithinRel(15.0 / 16));
  CHECK_THAT(bus_factor(NcclCollective::all_gather, 16), WithinRel(15.0 / 16));
  CHECK_THAT(bus_factor(NcclCollective::all_to_all, 16), WithinRel(15.0 / 16));
  // Broadcast: all data leaves the root over its one link, t = S/B, factor 1; send/recv likewise.
  CHECK(bus_factor(NcclCollective::broadcast, 16) == 1.0);
  CHECK(bus_factor(NcclCollective::send_recv, 16) == 1.0);
  // One rank moves nothing across a bus.
  CHECK(bus_factor(NcclCollective::all_reduce, 1) == 0.0);
}

TEST_CASE("bench::algbw_gbps: size / time in 1e9 bytes per second", "[bench]") {
  // 1 GiB in 10 ms: 1073741824 / 0.01 / 1e9 = 107.374 GB/s.
  CHECK_THAT(algbw_gbps(std::int64_t{1} << 30, 10000.0), WithinRel(107.3741824));
  CHECK(algbw_gbps(0, 12.5) == 0.0);
  CHECK(algbw_gbps(8, 0.0) == 0.0);
}

TEST_CASE("bench::nccl names: dtsim's and nccl-tests'", "[bench]") {
  CHECK(std::string(to_string(NcclCollective::all_to_all)) == "all_to_all");
  CHECK(std::string(nccl_tests_binary(NcclCollective::all_to_all)) == "alltoall_perf");
  CHECK(std::string(nccl_tests_binary(NcclCollective::send_recv)) == "sendrecv_perf");
  CHECK(std::string(redop_name(NcclCollective::all_gather)) == "none");
  CHECK(std::string(redop_name(NcclCollective::reduce_scatter)) == "sum");
  CHECK(root_of(NcclCollective::broadcast) == 0);
  CHECK(root_of(NcclCollective::all_reduce) == -1);
  for (NcclCollective c : all_collectives()) CHECK(parse_collective_name(to_string(c)) == c);
  CHECK_FALSE(parse_collective_name("alltoall"));
  CHECK(parse_dtype_name("half") == NcclDtype::float16);
  CHECK(type_size(NcclDtype::bfloat16) == 2);
}

TEST_CASE("bench::plan_sweeps: one sweep per collective, every size counted", "[bench]") {
  std::vector<NcclSweepPlan> p =
      plan_sweeps({NcclCollective::all_gather, NcclCollective::broadcast}, {8, 64}, NcclDtype::float32, 16);
  REQUIRE(p.size() == 2);
  CHECK(p[0].collective == NcclCollective::all_gather);
  CHECK(p[0].sizes[0].size_bytes == 0);   // 2 floats over 16 ranks
  CHECK(p[0].sizes[1].size_bytes == 64);  // 16 floats, one per rank
  CHECK(p[1].sizes[1].count == 16);
}
