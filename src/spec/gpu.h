#pragma once
// One GPU type, numbers from its datasheet (sources kept beside them in the JSON).
#include <cstdint>
#include <string>

#include "core/units.h"

namespace dtsim::spec {

/// Element types. fp8 stands for every 8-bit float recipe (per-tensor, MXFP8 blocks), fp4 for
/// NVFP4 (Blackwell): which GEMMs run in them is the training recipe's (spec::Fp8Recipe).
enum class Dtype { fp32, tf32, fp16, bf16, fp8, fp4 };

/// Peak dense tensor throughput, capacity and HBM bandwidth of one GPU.
struct Gpu {
  std::string name;
  FlopsPerSecond peak_fp32;
  FlopsPerSecond peak_tf32;
  FlopsPerSecond peak_fp16;
  FlopsPerSecond peak_bf16;
  FlopsPerSecond peak_fp8;       ///< zero where the GPU has no fp8 tensor cores (A100)
  FlopsPerSecond peak_fp4;       ///< zero where the GPU has no fp4 tensor cores (before Blackwell)
  Bytes memory;                  ///< HBM capacity
  BytesPerSecond hbm_bandwidth;
  std::int64_t sm_count = 0;     ///< streaming multiprocessors (kernels that reserve SMs take a share)
  double power_w = 0;            ///< board (module) power limit in watts; 0 when the file does not say
  /// SM clock at the rated CUDA-core (fp32) peak, in GHz: with sm_count, the rate at which the SMs
  /// issue work that neither tensor cores nor HBM bound; 0 when the file does not say.
  double boost_clock_ghz = 0;

  /// Peak dense throughput for `d`; zero when unsupported.
  [[nodiscard]] FlopsPerSecond peak(Dtype d) const;
  bool operator==(const Gpu&) const = default;
};

[[nodiscard]] const char* to_string(Dtype d);
/// Bytes of one element of `d`.
[[nodiscard]] double dtype_bytes(Dtype d);

}  // namespace dtsim::spec
