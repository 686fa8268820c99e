#pragma once
// One GPU type, numbers from its datasheet (sources kept beside them in the JSON).
#include <cstdint>
#include <string>

#include "core/units.h"

namespace dtsim::spec {

enum class Dtype { fp32, tf32, fp16, bf16, fp8 };

/// Peak dense tensor throughput, capacity and HBM bandwidth of one GPU.
struct Gpu {
  std::string name;
  FlopsPerSecond peak_fp32;
  FlopsPerSecond peak_tf32;
  FlopsPerSecond peak_fp16;
  FlopsPerSecond peak_bf16;
  FlopsPerSecond peak_fp8;       ///< zero where the GPU has no fp8 tensor cores (A100)
  Bytes memory;                  ///< HBM capacity
  BytesPerSecond hbm_bandwidth;
  std::int64_t sm_count = 0;     ///< streaming multiprocessors (kernels that reserve SMs take a share)

  /// Peak dense throughput for `d`; zero when unsupported.
  [[nodiscard]] FlopsPerSecond peak(Dtype d) const;
  bool operator==(const Gpu&) const = default;
};

[[nodiscard]] const char* to_string(Dtype d);
/// Bytes of one element of `d`.
[[nodiscard]] double dtype_bytes(Dtype d);

}  // namespace dtsim::spec
