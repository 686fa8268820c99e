#pragma once
// HBM bandwidth of device-to-device copies: the reference for a profile's memory_efficiency.
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtsim::bench {

/// Copies each size (bytes) device to device for `seconds`; reports GB/s counting bytes read and
/// written: {"results": [{bytes, gb_per_s, iterations, seconds}]}.
[[nodiscard]] nlohmann::json run_copy(const std::vector<std::int64_t>& sizes, double seconds);

}  // namespace dtsim::bench
