#pragma once
// What nccl-tests (NVIDIA/nccl-tests, src/common.cu and one file per collective) names and prints:
// its data types, its binaries and which columns each collective fills how. Internal to
// src/calibrate (calibrate/nccl_tests.h).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "spec/calibration.h"

namespace dtsim::calibrate::detail {

/// More ranks than any cluster has: larger counts in a file are not taken.
inline constexpr std::int64_t kMaxRanks = 10'000'000;

/// Bytes per element of an nccl-tests type name ("float" -> 4), or nullopt.
[[nodiscard]] std::optional<std::int64_t> type_bytes(std::string_view name);

/// An nccl-tests binary: stem + "_perf", and the collective dtsim models it as (if any).
struct Binary {
  std::string_view stem;
  std::optional<spec::Collective> op;
};

/// The binaries dtsim models, for error messages.
inline constexpr const char* kModelled =
    "all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf, broadcast_perf, sendrecv_perf";

/// The binary with this stem ("all_reduce"), or nullptr.
[[nodiscard]] const Binary* binary(std::string_view stem);
/// The nccl-tests binary a word runs or names ("/opt/nccl-tests/build/all_reduce_perf"), or nullptr.
[[nodiscard]] const Binary* binary_of(std::string_view word);

/// all_gather, reduce_scatter and alltoall print the per-rank count: size = nranks x count x type size.
[[nodiscard]] bool per_rank_count(spec::Collective c);
/// all_gather, alltoall and broadcast print redop "none".
[[nodiscard]] bool prints_none(spec::Collective c);
/// dtsim's name of a collective ("all_reduce").
[[nodiscard]] std::string name(spec::Collective c);

}  // namespace dtsim::calibrate::detail
