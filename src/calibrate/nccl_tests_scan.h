#pragma once
// One pass over nccl-tests output: its rows, and what the lines around them say -- devices,
// command lines, binary names, the run header, NCCL versions -- each with the line it is on, for
// the facts (nccl_tests_facts.h) to weigh. Internal to src/calibrate (calibrate/nccl_tests.h).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/nccl_tests.h"
#include "calibrate/nccl_tests_lines.h"
#include "calibrate/nccl_tests_vocab.h"

namespace dtsim::calibrate::detail {

/// "Rank  0 Group  0 Pid  66421 on HOST device  0 [0x00] NVIDIA A100-SXM4-80GB".
struct Device {
  std::int64_t rank = 0;
  std::string host, name;
  int line = 0;
};

/// A binary the text names: "all_reduce_perf", or a wrapper's "-t all_gather".
struct Mention {
  const Binary* binary = nullptr;
  int line = 0;
  bool wrapper = false;
};

/// One command line that runs nccl-tests.
struct Launch {
  int line = 0;
  std::string launcher;  ///< "mpirun", "srun", ...; empty when the binary runs directly
  std::string program;   ///< the binary or script
  std::optional<std::int64_t> np, per_node, nodes;
  std::int64_t threads = 1, gpus = 1;  ///< the binary's -t and -g
};

/// The run header "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 ...".
struct Params {
  int line = 0;
  std::int64_t threads = 1, gpus = 1;
  std::optional<std::int64_t> max_bytes;
};

/// What a pass over some lines read.
struct Scan {
  std::string file;
  std::string at;                  ///< where an error about the whole table points: the file, or "FILE:A-B"
  std::string scope = "the file";  ///< where a fact was looked for, in messages: "the file" or "the table"
  bool locate_only = false;        ///< rows and starts only: no row is read, nothing throws
  std::vector<NcclTestsRow> rows;  ///< in file order
  std::vector<int> row_lines;      ///< the line of every row, read or not
  std::vector<int> starts;         ///< lines where a table starts, ascending (see scan)
  std::vector<int> launch_starts;  ///< launchers with a process count and no binary, ascending (see scan)
  std::optional<Layout> layout, first_layout;
  std::vector<Device> devices;
  std::vector<int> ellipses;  ///< "..." lines before the first row
  std::optional<Params> params;
  std::optional<std::pair<std::string, int>> version, library;
  std::vector<Mention> mentions;
  std::vector<Launch> launches;
  std::string command;  ///< a command continued with '\'
  int command_line = 0;
  int nccl_lines = 0, comment_lines = 0, other_lines = 0, bare_header = 0;
  Prefixes prefixes;
};

/// Reads `lines` of `file`. Throws SpecError("FILE:LINE", "expected ..., got ...") for a malformed
/// row or header unless `locate_only`. Records as starts the lines that begin a table: a binary
/// named (the first line of its command; "Collective test concluded" excepted), a run header
/// ("nThread ...", "nccl-tests version ... nccl-headers=...") or a column header; as launch starts,
/// a launcher given a process count that names no binary ("mpirun -np 16 bash -c 'for t in ...'"),
/// which begins a new run after rows but may also precede every table.
[[nodiscard]] Scan scan(std::span<const Line> lines, const std::string& file, bool locate_only = false);

}  // namespace dtsim::calibrate::detail
