#pragma once
// The data check of `dtsim-bench nccl` as plain values: which constant each rank writes where
// before a checked run, and which constant each element of its output must then hold. Every
// value is a small integer, exact in the element type, and every partial sum of a reduction stays
// exact, so outputs are compared bit for bit, whatever order NCCL adds in.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "nccl_plan.h"

namespace dtsim::bench {

/// Largest n such that every integer 0..n is exact in `t`: 2^24 (float), 2^11 (half), 2^8 (bfloat16).
[[nodiscard]] std::int64_t exact_integer_limit(NcclDtype t);

/// Bit pattern (in the low 16 bits for half and bfloat16) of the integer `value` in `t`; throws
/// std::logic_error when `value` is not exact in `t`.
[[nodiscard]] std::uint32_t value_bits(NcclDtype t, std::int64_t value);

/// What rank `rank` of `nranks` adds into a sum: 1 + rank mod m, m as large as keeps the total
/// (and so every partial sum) exact; when even n x 1 is not exact, rank 0 adds 1 and others 0.
[[nodiscard]] std::int64_t sum_input(int rank, int nranks, NcclDtype t);

/// The sum of sum_input over all ranks.
[[nodiscard]] std::int64_t sum_total(int nranks, NcclDtype t);

/// A positive value naming `index` (a rank, or a rank pair as src x n + dst), wrapped to stay exact.
[[nodiscard]] std::int64_t tag_value(std::int64_t index, NcclDtype t);

/// `count` elements from element `offset` of one rank's send or receive buffer, all `value`.
struct NcclSegment {
  bool recv_buffer = true;
  std::int64_t offset = 0;
  std::int64_t count = 0;
  std::int64_t value = 0;
  bool operator==(const NcclSegment&) const = default;
};

/// One rank's checked run: what to write first (in order), what its receive buffer must hold after.
struct NcclCheckPlan {
  bool checked = true;  ///< false where nccl-tests reports N/A: in-place all_to_all and send_recv
  std::vector<NcclSegment> fills;
  std::vector<NcclSegment> expect;
};

/// The check of collective `c` at counts `k` for rank `rank` of `nranks`, out of place or in place
/// (the in-place input and output sit in the receive buffer at nccl-tests' offsets).
[[nodiscard]] NcclCheckPlan check_plan(NcclCollective c, const NcclCounts& k, bool in_place, int rank, int nranks,
                                       NcclDtype t);

/// Elements among `count` (each `elem_bytes` wide, native byte order) whose bits differ from `bits`.
[[nodiscard]] std::int64_t count_mismatches(const unsigned char* data, std::int64_t count, std::size_t elem_bytes,
                                            std::uint32_t bits);

}  // namespace dtsim::bench
