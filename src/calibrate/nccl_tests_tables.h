#pragma once
// Several nccl-tests tables in one file: where each starts, what the file says once for all of
// them, and one log per table (the rules are parse_nccl_tests_all's, calibrate/nccl_tests.h).
// Internal to src/calibrate.
#include <span>
#include <string>
#include <vector>

#include "calibrate/nccl_tests.h"
#include "calibrate/nccl_tests_lines.h"

namespace dtsim::calibrate::detail {

/// One table's lines, 1-based and inclusive.
struct Section {
  int first = 0, last = 0;
};

/// Where the tables of a text lie.
struct Split {
  std::vector<Section> sections;  ///< at least one; together they cover every line
  int preamble_last = 0;          ///< lines 1 to this come before the first row and the first table start
};

/// Splits `lines` where a new table starts after rows; never throws.
[[nodiscard]] Split split_tables(std::span<const Line> lines, const std::string& file);

/// One log per table of `lines`, as parse_nccl_tests_all documents.
[[nodiscard]] std::vector<NcclTestsLog> parse_tables(std::span<const Line> lines, const std::string& file,
                                                     const NcclTestsHints& hints);

}  // namespace dtsim::calibrate::detail
