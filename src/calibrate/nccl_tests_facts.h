#pragma once
// Deciding what one nccl-tests table measured -- the collective, the rank count, the ranks per
// node, the NCCL version -- from what its text says and the arithmetic nccl-tests guarantees, with
// a note for each fact saying where it came from. Internal to src/calibrate (calibrate/nccl_tests.h).
#include <string>
#include <vector>

#include "calibrate/nccl_tests.h"
#include "calibrate/nccl_tests_scan.h"

namespace dtsim::calibrate::detail {

/// One table as read: its scan and its sweep.
struct Table {
  Scan scan;
  std::vector<NcclTestsRow> rows;      ///< sweep(scan)
  std::vector<std::string> row_notes;  ///< what sweep noted
};

/// "all_reduce_perf on line 3", "the wrapper flag -t all_gather on line 1".
[[nodiscard]] std::string mention_text(const Mention& m);

/// What a message asks for when the text cannot decide the collective.
inline constexpr const char* kPassCollective = "pass --collective NAME";

/// The table's log: rows, collective, ranks, ranks per node, devices, version and notes. `hints`
/// override the text (noted). Throws SpecError(s.at, "cannot tell the collective (...); " +
/// `remedy`) or SpecError(s.at, "rank count not in ...; pass --ranks N") when it cannot decide,
/// SpecError("FILE:LINE") for a binary dtsim does not model or for rows whose sizes break the arithmetic.
[[nodiscard]] NcclTestsLog decide_log(const Table& t, const NcclTestsHints& hints,
                                      const std::string& remedy = kPassCollective);

}  // namespace dtsim::calibrate::detail
