#pragma once
// Importing nccl-tests output (NVIDIA/nccl-tests, src/common.cu) as people post it: with launcher
// prefixes, a '#' lost to a docs renderer, NCCL INFO lines, the older table without a root column.
// Besides the rows it decides the collective, the rank count and the ranks per node, from what the
// text says or from the arithmetic nccl-tests guarantees, and notes where each fact came from.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "spec/calibration.h"

namespace dtsim::calibrate {

/// One timing of one size: out-of-place or in-place.
struct NcclTiming {
  double time_us = 0, algbw_GBps = 0, busbw_GBps = 0;
  bool operator==(const NcclTiming&) const = default;
};

/// One data row of an nccl-tests table.
struct NcclTestsRow {
  std::int64_t size_bytes = 0, count = 0;
  std::string type, redop;           ///< as printed: "float", "sum", "none"; redop "" without that column
  std::optional<std::int64_t> root;  ///< absent in the older format without a root column
  NcclTiming out_of_place;
  std::optional<NcclTiming> in_place;  ///< absent if the row has no in-place columns
  int line = 0;                        ///< 1-based line in the file
  bool operator==(const NcclTestsRow&) const = default;
};

/// What the importer read, and how it decided each fact.
struct NcclTestsLog {
  std::string path;
  spec::Collective collective = spec::Collective::all_reduce;
  std::int64_t ranks = 0;
  std::optional<std::int64_t> ranks_per_node;  ///< nullopt when neither the file nor a flag says
  std::string dtype;                           ///< the type column ("float", "half", "bfloat16", ...)
  std::optional<std::string> nccl_version;     ///< "2.16.2+cuda11.6", or "2.26.2" from "nccl-library=22602"
  std::vector<std::string> devices;            ///< GPU names from the "Using devices" lines, one per rank listed
  std::vector<NcclTestsRow> rows;              ///< ascending size, duplicates (identical rows) removed
  std::vector<std::string> notes;              ///< one line per fact: what it is and where it came from
};

/// Facts the user supplies on the command line; each overrides the file (a disagreement is noted).
struct NcclTestsHints {
  std::optional<spec::Collective> collective;
  std::optional<std::int64_t> ranks, gpus_per_node;
};

/// Parses nccl-tests output text. Throws SpecError("FILE:LINE", "expected ..., got ...") for a line
/// that looks like a table row but is malformed, or SpecError("FILE", "...; pass --ranks N") (or
/// --collective NAME) when the text cannot decide a fact; SpecError("--ranks" or "--gpus-per-node")
/// for a hint below 1.
[[nodiscard]] NcclTestsLog parse_nccl_tests(const std::string& text, const std::string& file,
                                            const NcclTestsHints& hints = {});
/// Reads and parses a file; SpecError("--nccl-tests", "cannot read FILE (...)") when it cannot be read.
[[nodiscard]] NcclTestsLog load_nccl_tests(const std::string& path, const NcclTestsHints& hints = {});

/// `token` in double quotes for an error message: bytes that are not printable ASCII or valid UTF-8
/// escaped as \xNN, '"' and '\' backslash-escaped, cut after 40 bytes ("..." and the length follow).
[[nodiscard]] std::string quoted_token(const std::string& token);

}  // namespace dtsim::calibrate
