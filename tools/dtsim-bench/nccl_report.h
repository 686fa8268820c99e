#pragma once
// What `dtsim-bench nccl` measured, and its two outputs: nccl-tests' text tables (the 2.17 layout:
// "# Collective test starting:", "# Using devices", one row per size, "# Avg bus bandwidth") and
// the dtsim-bench/1 JSON. Pure functions of a result value, so they are tested without a GPU.
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "nccl_options.h"
#include "nccl_plan.h"

namespace dtsim::bench {

/// One rank as nccl-tests' "Using devices" lists it; fixed-size so ranks exchange it as bytes.
struct RankInfo {
  std::int32_t rank = 0, pid = 0, device = 0;
  std::int32_t pci_domain = 0, pci_bus = 0, pci_device = 0;
  char host[128] = {};  ///< NUL-terminated, truncated
  char name[128] = {};  ///< the GPU's name, NUL-terminated
};
static_assert(std::is_trivially_copyable_v<RankInfo>);

/// Copies `text` into a fixed field, truncating and NUL-terminating it.
void set_field(char (&field)[128], const std::string& text);

/// One timing of one size: out of place or in place.
struct NcclCell {
  double time_us = 0;                 ///< the slowest rank's mean per iteration
  double algbw_gbps = 0;              ///< size / time, GB = 1e9 bytes
  double busbw_gbps = 0;              ///< algbw x bus_factor
  std::optional<std::int64_t> wrong;  ///< wrong elements summed over ranks; nullopt: not checked
};

/// A cell from a time, with its bandwidths.
[[nodiscard]] NcclCell make_cell(NcclCollective c, const NcclCounts& k, int nranks, double time_us,
                                 std::optional<std::int64_t> wrong);

/// One size of a sweep: its counts and its two timings.
struct NcclRow {
  NcclCounts counts;
  NcclCell out_of_place, in_place;
};

/// One collective's rows, smallest size first.
struct NcclSweepResult {
  NcclCollective collective = NcclCollective::all_reduce;
  std::vector<NcclRow> rows;
};

/// A whole run: how it ran and what each sweep measured.
struct NcclRun {
  NcclOptions options;
  int nccl_library_code = 0;   ///< ncclGetVersion()
  int nccl_header_code = 0;    ///< NCCL_VERSION_CODE dtsim-bench was built with
  int nranks = 0;
  int gpus_per_process = 0;    ///< nccl-tests' nGpus
  std::vector<RankInfo> ranks;  ///< in rank order
  std::vector<NcclSweepResult> sweeps;
};

/// "2.28.9" from an NCCL version code (NCCL_VERSION: X*10000+Y*100+Z from 2.9, X*1000+Y*100+Z before).
[[nodiscard]] std::string nccl_version_string(int code);

/// A number in `width` columns as nccl-tests prints time (7) and bandwidth (6): two decimals
/// while they fit, then one, then none, then exponent notation (util.cu getFloatStr).
[[nodiscard]] std::string format_float_field(double value, int width);

/// The hosts in order of first appearance, and ranks per host when every host has as many.
struct HostSummary {
  std::vector<std::string> hosts;
  std::optional<int> ranks_per_node;
};

/// Groups ranks by host name.
[[nodiscard]] HostSummary summarize_hosts(const std::vector<RankInfo>& ranks);

/// nccl-tests' output for one sweep, from "# Collective test starting" to "concluded".
[[nodiscard]] std::string format_table(const NcclRun& run, const NcclSweepResult& sweep);

/// Every sweep's table, one after another.
[[nodiscard]] std::string format_text(const NcclRun& run);

/// {"schema": "dtsim-bench/1", "device": device, "nccl": {...}} (the schema in main.cc's help).
[[nodiscard]] nlohmann::json nccl_document(const NcclRun& run, const nlohmann::json& device);

/// The --dry-run plan: launcher, ranks, iterations, and each collective's sizes and counts.
[[nodiscard]] std::string format_plan(const NcclOptions& o, int nranks);

}  // namespace dtsim::bench
