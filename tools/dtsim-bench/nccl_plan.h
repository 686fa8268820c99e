#pragma once
// What `dtsim-bench nccl` will run, decided without a device: the collectives, the size sweep and
// each size's element counts, and the bus-bandwidth factors, all as NVIDIA's nccl-tests defines
// them (src/common.cu and one file per collective; doc/PERFORMANCE.md for the factors).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim::bench {

/// The collectives, named as dtsim names them (spec::Collective); nccl-tests' binaries differ.
enum class NcclCollective { all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv };

/// Element types, named as nccl-tests prints them.
enum class NcclDtype { float32, float16, bfloat16 };

/// dtsim's name of a collective ("all_to_all").
[[nodiscard]] const char* to_string(NcclCollective c);
/// The nccl-tests binary that measures it ("alltoall_perf").
[[nodiscard]] const char* nccl_tests_binary(NcclCollective c);
/// nccl-tests' redop column: "sum" for the reductions and for sendrecv_perf, else "none".
[[nodiscard]] const char* redop_name(NcclCollective c);
/// nccl-tests' root column: 0 for broadcast (its default root), -1 for the others.
[[nodiscard]] int root_of(NcclCollective c);
/// Inverse of to_string(NcclCollective); nullopt for an unknown name.
[[nodiscard]] std::optional<NcclCollective> parse_collective_name(std::string_view name);
/// Every collective, in the order `--op all` runs them.
[[nodiscard]] const std::vector<NcclCollective>& all_collectives();

/// nccl-tests' type name: "float", "half", "bfloat16".
[[nodiscard]] const char* to_string(NcclDtype t);
/// Inverse of to_string(NcclDtype); nullopt for an unknown name.
[[nodiscard]] std::optional<NcclDtype> parse_dtype_name(std::string_view name);
/// Bytes per element.
[[nodiscard]] std::size_t type_size(NcclDtype t);

/// The sweep as nccl-tests walks it: from `min_bytes`, times `step_factor` when it is > 1, else
/// plus `step_bytes`, while <= `max_bytes`. Throws std::logic_error if it would not advance.
[[nodiscard]] std::vector<std::int64_t> sweep_sizes(std::int64_t min_bytes, std::int64_t max_bytes,
                                                    std::int64_t step_factor, std::int64_t step_bytes);

/// One size of a sweep as nccl-tests sets it up (getCollByteCount): counts are elements.
struct NcclCounts {
  std::int64_t size_bytes = 0;          ///< the size column: the larger of the send and receive buffers
  std::int64_t count = 0;               ///< the count column: the count passed to NCCL (per rank)
  std::int64_t send_count = 0;          ///< elements each rank sends from
  std::int64_t recv_count = 0;          ///< elements each rank receives into
  std::int64_t send_inplace_offset = 0;  ///< in place, the input sits at recvbuff + this x rank
  std::int64_t recv_inplace_offset = 0;  ///< in place, the output sits at recvbuff + this x rank
  bool operator==(const NcclCounts&) const = default;
};

/// Counts for a requested size: size/type_size elements, divided by `nranks` and rounded down
/// for all_gather, reduce_scatter and all_to_all (their size is the whole buffer).
[[nodiscard]] NcclCounts nccl_counts(NcclCollective c, std::int64_t requested_bytes, NcclDtype t, int nranks);

/// busbw / algbw for `nranks` ranks (nccl-tests doc/PERFORMANCE.md, "Summary").
[[nodiscard]] double bus_factor(NcclCollective c, int nranks);

/// Algorithm bandwidth in GB/s (1e9 bytes/s, as nccl-tests): size / time; 0 when time is 0.
[[nodiscard]] double algbw_gbps(std::int64_t size_bytes, double time_us);

/// One collective's sweep, counted for a number of ranks.
struct NcclSweepPlan {
  NcclCollective collective = NcclCollective::all_reduce;
  std::vector<NcclCounts> sizes;
};

/// The sweeps of each collective for `nranks` ranks.
[[nodiscard]] std::vector<NcclSweepPlan> plan_sweeps(const std::vector<NcclCollective>& ops,
                                                     const std::vector<std::int64_t>& sizes, NcclDtype t,
                                                     int nranks);

}  // namespace dtsim::bench
