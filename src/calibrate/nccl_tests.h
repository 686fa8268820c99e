#pragma once
// Importing nccl-tests output (NVIDIA/nccl-tests, src/common.cu) as people post it: with launcher
// prefixes, a '#' lost to a docs renderer, NCCL INFO lines, the older table without a root column.
// Besides the rows it decides the collective, the rank count and the ranks per node, from what the
// text says or from the arithmetic nccl-tests guarantees, and notes where each fact came from. A
// file may hold several tables one after another (parse_nccl_tests_all). The parts, internal to
// src/calibrate: nccl_tests_text (words, numbers), nccl_tests_vocab (what nccl-tests prints),
// nccl_tests_lines (prefixes, headers, rows), nccl_tests_scan (one pass over lines), nccl_tests_sweep
// (the rows and their arithmetic), nccl_tests_facts (deciding one table), nccl_tests_tables (several).
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
  int first_line = 0, last_line = 0;           ///< the lines of the file its table was read from (1-based)
};

/// Facts the user supplies on the command line; each overrides the file (a disagreement is noted).
struct NcclTestsHints {
  std::optional<spec::Collective> collective;
  std::optional<std::int64_t> ranks, gpus_per_node;
};

/// Parses nccl-tests output text holding one table (pasted twice it is read once; a second sweep is
/// an error: parse_nccl_tests_all reads several). Throws SpecError("FILE:LINE", "expected ..., got
/// ...") for a line that looks like a table row but is malformed, or SpecError("FILE", "...; pass
/// --ranks N") (or --collective NAME) when the text cannot decide a fact; SpecError("--ranks" or
/// "--gpus-per-node") for a hint below 1.
[[nodiscard]] NcclTestsLog parse_nccl_tests(const std::string& text, const std::string& file,
                                            const NcclTestsHints& hints = {});
/// Reads and parses a file; SpecError("--nccl-tests", "cannot read FILE (...)") when it cannot be read.
[[nodiscard]] NcclTestsLog load_nccl_tests(const std::string& path, const NcclTestsHints& hints = {});

/// Parses text holding one nccl-tests table or several one after another (the output of several
/// binaries concatenated, or `dtsim-bench nccl --op all`): one log per table, in file order. A file
/// of one table gives parse_nccl_tests' log, notes and errors.
///  - After rows, a new table starts at the first line that names a binary ("mpirun ...
///    all_gather_perf", "Collective test starting: all_gather_perf", a wrapper's "-t all_gather";
///    a command continued with '\' from its first line), a run header ("# nThread ...", "# nccl-tests
///    version ... nccl-headers=..."), a launcher with a process count, or a column header.
///    "Collective test concluded: X" ends a table and starts none. A table's section runs to the
///    line before the next one starts (first_line, last_line; noted "table 2 of 3: lines 40-77").
///  - Each table's facts come from its own section. One without a device list, a command line or
///    an NCCL version of its own takes the one the file says once for all, before the first row,
///    binary name, run header and column header (noted): `mpirun -np 16 bash -c 'for t in ...'`
///    on top counts for every table.
///  - A table with the same rows as an earlier one is dropped (noted on the earlier); lines after the
///    last table that start a run but hold no rows are ignored (noted). Within a table, a size
///    again with other numbers is an error as in parse_nccl_tests.
///  - --ranks and --gpus-per-node apply to every table. With several tables (repeats dropped),
///    --collective applies only when no table's section names a binary; else it is not used (noted
///    on every log), and a table whose rows cannot decide its collective is an error asking to split
///    the file.
/// Throws as parse_nccl_tests; with several tables, what concerns a whole table is located at its
/// section: SpecError("FILE:FIRST-LAST", "cannot tell the collective (...); split the file: ...").
[[nodiscard]] std::vector<NcclTestsLog> parse_nccl_tests_all(const std::string& text, const std::string& file,
                                                             const NcclTestsHints& hints = {});
/// Reads a file and parses it with parse_nccl_tests_all; SpecError("--nccl-tests", "cannot read FILE
/// (...)") when it cannot be read.
[[nodiscard]] std::vector<NcclTestsLog> load_nccl_tests_all(const std::string& path,
                                                            const NcclTestsHints& hints = {});

/// `token` in double quotes for an error message: bytes that are not printable ASCII or valid UTF-8
/// escaped as \xNN, '"' and '\' backslash-escaped, cut after 40 bytes ("..." and the length follow).
[[nodiscard]] std::string quoted_token(const std::string& token);

}  // namespace dtsim::calibrate
