// The data check's values (tools/dtsim-bench/nccl_check.h): exact in each type, and the segments
// each rank writes and expects, at nccl-tests' in-place offsets.
#include <catch2/catch.hpp>

#include <cstring>

#include "nccl_check.h"

using namespace dtsim::bench;

TEST_CASE("bench::value_bits: IEEE encodings of small integers", "[bench]") {
  CHECK(value_bits(NcclDtype::float32, 1) == 0x3F800000u);  // 1.0f
  CHECK(value_bits(NcclDtype::float32, 0) == 0u);
  CHECK(value_bits(NcclDtype::bfloat16, 1) == 0x3F80u);     // the float's top 16 bits
  CHECK(value_bits(NcclDtype::bfloat16, 256) == 0x4380u);   // 2^8: exponent 127 + 8 = 135
  CHECK(value_bits(NcclDtype::float16, 1) == 0x3C00u);      // exponent 15, mantissa 0
  CHECK(value_bits(NcclDtype::float16, 3) == 0x4200u);      // 1.5 x 2^1: exponent 16, mantissa 0x200
  CHECK(value_bits(NcclDtype::float16, 2048) == 0x6800u);   // 2^11: exponent 26
  CHECK_THROWS_AS(value_bits(NcclDtype::bfloat16, 257), std::logic_error);  // needs 9 significant bits
  CHECK_THROWS_AS(value_bits(NcclDtype::float16, -1), std::logic_error);
}

TEST_CASE("bench::sum_input: every partial sum stays exact", "[bench]") {
  // float, 16 ranks: 1..16, total 136 (far below 2^24).
  CHECK(sum_input(0, 16, NcclDtype::float32) == 1);
  CHECK(sum_input(15, 16, NcclDtype::float32) == 16);
  CHECK(sum_total(16, NcclDtype::float32) == 136);
  // bfloat16 (exact to 256), 64 ranks: m = 256 / 64 = 4, values 1..4, total 16 x (1+2+3+4) = 160.
  CHECK(sum_input(5, 64, NcclDtype::bfloat16) == 2);
  CHECK(sum_total(64, NcclDtype::bfloat16) == 160);
  // bfloat16, 512 ranks: even 512 ones would not be exact; rank 0 adds 1, the rest 0.
  CHECK(sum_input(0, 512, NcclDtype::bfloat16) == 1);
  CHECK(sum_input(1, 512, NcclDtype::bfloat16) == 0);
  CHECK(sum_total(512, NcclDtype::bfloat16) == 1);
  // Property: the total is exact for every rank count up to 4096, in every type.
  for (NcclDtype t : {NcclDtype::float32, NcclDtype::float16, NcclDtype::bfloat16})
    for (int n = 1; n <= 4096; n = n * 3 + 1) CHECK(sum_total(n, t) <= exact_integer_limit(t));
}

TEST_CASE("bench::check_plan: all_reduce out of place", "[bench]") {
  NcclCounts k = nccl_counts(NcclCollective::all_reduce, 64, NcclDtype::float32, 4);  // 16 floats
  NcclCheckPlan p = check_plan(NcclCollective::all_reduce, k, false, 2, 4, NcclDtype::float32);
  CHECK(p.checked);
  // Zero the receive buffer, rank 2 sends 3s, everyone expects 1+2+3+4 = 10.
  CHECK(p.fills == std::vector<NcclSegment>{{true, 0, 16, 0}, {false, 0, 16, 3}});
  CHECK(p.expect == std::vector<NcclSegment>{{true, 0, 16, 10}});
}

TEST_CASE("bench::check_plan: all_gather in place writes at rank x count", "[bench]") {
  NcclCounts k = nccl_counts(NcclCollective::all_gather, 48, NcclDtype::float32, 4);  // 3 floats per rank
  NcclCheckPlan p = check_plan(NcclCollective::all_gather, k, true, 2, 4, NcclDtype::float32);
  CHECK(p.fills == std::vector<NcclSegment>{{true, 0, 12, 0}, {true, 6, 3, 3}});  // tag of rank 2 is 3
  CHECK(p.expect ==
        std::vector<NcclSegment>{{true, 0, 3, 1}, {true, 3, 3, 2}, {true, 6, 3, 3}, {true, 9, 3, 4}});
}

TEST_CASE("bench::check_plan: reduce_scatter in place reads the whole, keeps block rank", "[bench]") {
  NcclCounts k = nccl_counts(NcclCollective::reduce_scatter, 32, NcclDtype::float16, 4);  // 4 halves per rank
  NcclCheckPlan p = check_plan(NcclCollective::reduce_scatter, k, true, 1, 4, NcclDtype::float16);
  CHECK(p.fills == std::vector<NcclSegment>{{true, 0, 16, 0}, {true, 0, 16, 2}});
  CHECK(p.expect == std::vector<NcclSegment>{{true, 4, 4, 10}});
}

TEST_CASE("bench::check_plan: all_to_all and the ring", "[bench]") {
  NcclCounts k = nccl_counts(NcclCollective::all_to_all, 32, NcclDtype::float32, 2);  // 4 floats per peer
  NcclCheckPlan a = check_plan(NcclCollective::all_to_all, k, false, 1, 2, NcclDtype::float32);
  // Rank 1 sends block j tagged 1 x 2 + j (values 3, 4); receives block i tagged i x 2 + 1 (2, 4).
  CHECK(a.fills == std::vector<NcclSegment>{{true, 0, 8, 0}, {false, 0, 4, 3}, {false, 4, 4, 4}});
  CHECK(a.expect == std::vector<NcclSegment>{{true, 0, 4, 2}, {true, 4, 4, 4}});
  NcclCounts r = nccl_counts(NcclCollective::send_recv, 16, NcclDtype::float32, 8);
  NcclCheckPlan ring = check_plan(NcclCollective::send_recv, r, false, 0, 8, NcclDtype::float32);
  CHECK(ring.expect == std::vector<NcclSegment>{{true, 0, 4, 8}});  // from rank 7, tagged 8
  // In place, send and receive alias: not checked, as nccl-tests reports N/A.
  CHECK_FALSE(check_plan(NcclCollective::all_to_all, k, true, 1, 2, NcclDtype::float32).checked);
  CHECK_FALSE(check_plan(NcclCollective::send_recv, r, true, 0, 8, NcclDtype::float32).checked);
}

TEST_CASE("bench::check_plan: broadcast from root 0; empty sizes write nothing", "[bench]") {
  NcclCounts k = nccl_counts(NcclCollective::broadcast, 16, NcclDtype::float32, 4);
  CHECK(check_plan(NcclCollective::broadcast, k, false, 0, 4, NcclDtype::float32).fills ==
        std::vector<NcclSegment>{{true, 0, 4, 0}, {false, 0, 4, 1}});
  NcclCheckPlan other = check_plan(NcclCollective::broadcast, k, false, 3, 4, NcclDtype::float32);
  CHECK(other.fills == std::vector<NcclSegment>{{true, 0, 4, 0}});
  CHECK(other.expect == std::vector<NcclSegment>{{true, 0, 4, 1}});
  NcclCounts none = nccl_counts(NcclCollective::all_gather, 8, NcclDtype::float32, 16);
  NcclCheckPlan empty = check_plan(NcclCollective::all_gather, none, false, 0, 16, NcclDtype::float32);
  CHECK(empty.fills.empty());
  CHECK(empty.expect.empty());
}

TEST_CASE("bench::count_mismatches: bit for bit, 4 and 2 bytes wide", "[bench]") {
  float f[4] = {10.0f, 10.0f, 9.0f, -10.0f};
  CHECK(count_mismatches(reinterpret_cast<const unsigned char*>(f), 4, 4, value_bits(NcclDtype::float32, 10)) == 2);
  std::uint16_t h[3] = {0x3C00, 0x3C00, 0x3C01};
  CHECK(count_mismatches(reinterpret_cast<const unsigned char*>(h), 3, 2, 0x3C00) == 1);
}
