#pragma once
// How a training job is laid out (Parallel) and what it trains on (Training).
#include <cstdint>
#include <vector>

#include "spec/gpu.h"

namespace dtsim::spec {

enum class Recompute { none, selective, full, automatic };
enum class Optimizer { adam, sgd };
enum class PipelineSchedule { gpipe, one_f_one_b, interleaved };

/// Parallel degrees in Megatron order (tp -> cp -> ep -> dp -> pp).
struct Parallel {
  std::int64_t tp = 1;
  std::int64_t pp = 1;
  std::int64_t dp = 1;
  std::int64_t cp = 1;
  std::int64_t ep = 1;
  std::int64_t vp = 1;                 ///< virtual pipeline chunks per stage (interleaving)
  int zero_stage = 0;                  ///< 0..3; Megatron's distributed optimizer = 1
  bool sequence_parallel = false;
  /// Explicit layers per pipeline stage; empty = balanced (see schedule).
  std::vector<std::int64_t> stage_layers;
  bool operator==(const Parallel&) const = default;
};

/// The batch, sequence, precision and optimizer of one step.
struct Training {
  std::int64_t micro_batch = 1;
  std::int64_t global_batch = 1;
  std::int64_t seq_len = 2048;
  Recompute recompute = Recompute::none;
  Dtype precision = Dtype::bf16;       ///< fp16, bf16 or fp8 (GEMM inputs)
  Dtype grad_dtype = Dtype::fp32;      ///< Megatron keeps fp32 main grads; ZeRO paper: fp16
  Optimizer optimizer = Optimizer::adam;
  bool operator==(const Training&) const = default;
};

[[nodiscard]] const char* to_string(Recompute r);
[[nodiscard]] const char* to_string(Optimizer o);

}  // namespace dtsim::spec
