#pragma once
// A table's rows as one sweep, and what their numbers say: nccl-tests prints size, count and the
// bandwidths by fixed rules per collective (src/*.cu, doc/PERFORMANCE.md), so the rows alone can
// rule collectives out and bound the rank count. Internal to src/calibrate (calibrate/nccl_tests.h).
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "calibrate/nccl_tests.h"
#include "calibrate/nccl_tests_scan.h"

namespace dtsim::calibrate::detail {

/// Rows `a` and `b` equal but for their line numbers.
[[nodiscard]] bool same_numbers(NcclTestsRow a, NcclTestsRow b);

/// The scan's rows by ascending size, identical repeats and size-0 rows dropped (noted). Throws
/// SpecError(s.at) without rows, SpecError("FILE:LINE") where a second sweep starts: a size again
/// with other numbers, or another data type or redop.
[[nodiscard]] std::vector<NcclTestsRow> sweep(const Scan& s, std::vector<std::string>& notes);

/// What the rows' numbers say, whatever the collective.
struct Arithmetic {
  std::optional<std::int64_t> multiple;  ///< size / (count x type size), the same on every row
  int multiple_line = 0;
  std::int64_t type_bytes = 0;
  std::string type, redop;
  std::optional<bool> rooted;                ///< some root >= 0; nullopt without a root column
  double ratio_lo = 0, ratio_hi = INFINITY;  ///< busbw/algbw that every printed timing allows
  int timings = 0;                           ///< timings that bound the ratio (algbw printed > 0)
};

/// The arithmetic of a sweep's rows; throws SpecError("FILE:LINE") for a size that is no whole
/// multiple of count x type size, or another multiple than on earlier rows.
[[nodiscard]] Arithmetic arithmetic(const std::vector<NcclTestsRow>& rows, const std::string& file);

/// Rank counts [lo, hi]; hi unbounded when the ratio cannot cap it.
struct Range {
  std::int64_t lo = 2, hi = 0;
  bool bounded = true;
  [[nodiscard]] bool empty() const { return bounded && lo > hi; }
  [[nodiscard]] bool unique() const { return bounded && lo == hi; }
  [[nodiscard]] bool contains(std::int64_t n) const { return n >= lo && (!bounded || n <= hi); }
};

/// The rank counts the rows allow for collective `c`; nullopt when its busbw = algbw says nothing.
[[nodiscard]] std::optional<Range> arithmetic_ranks(spec::Collective c, const Arithmetic& a);
/// The rows' evidence in words: "size = count x 4 B, redop sum, root -1, busbw/algbw in [...]".
[[nodiscard]] std::string evidence(const Arithmetic& a);
/// What the rows say about the rank count for `c`, for notes and errors.
[[nodiscard]] std::string ranks_text(spec::Collective c, const Range& r, const Arithmetic& a);
/// Why the rows cannot come from `c`'s binary, or "" when they can.
[[nodiscard]] std::string misfit(spec::Collective c, const Arithmetic& a);

}  // namespace dtsim::calibrate::detail
