#pragma once
// The order in which one pipeline stage runs forward and backward passes (Megatron-LM
// megatron/core/pipeline_parallel/schedules.py; Narayanan et al. SC'21 sec. 2.2).
#include <cstdint>
#include <vector>

#include "spec/job.h"

namespace dtsim::schedule {

/// One forward or backward pass of one micro-batch through one model chunk.
struct PassRef {
  bool forward = true;
  std::int64_t chunk = 0;        ///< virtual chunk on this stage (0..vp-1)
  std::int64_t microbatch = 0;
  bool operator==(const PassRef&) const = default;
};

/// The schedule a Parallel config implies: interleaved 1F1B when vp > 1, else 1F1B.
[[nodiscard]] spec::PipelineSchedule default_schedule(const spec::Parallel& par);

/// The passes of one stage in issue order, computed on demand (the builder walks thousands of
/// schedules; no list is stored). See stage_order for the order.
class StageOrder {
 public:
  StageOrder(spec::PipelineSchedule schedule, std::int64_t pp, std::int64_t vp, std::int64_t m, std::int64_t stage);
  /// Number of passes: 2 x m x vp.
  [[nodiscard]] std::int64_t size() const { return 2 * total_; }
  /// Pass `i` (0 <= i < size()).
  [[nodiscard]] PassRef operator[](std::int64_t i) const;

 private:
  [[nodiscard]] PassRef pass(bool forward, std::int64_t k) const;
  std::int64_t pp_, vp_, total_, warmup_;
};

/// Passes of stage `stage` (0..pp-1) in issue order for `m` micro-batches.
/// GPipe: all forwards, then all backwards. 1F1B: min(p-stage-1, m) warm-up forwards, then
/// alternating, then cool-down backwards. Interleaved: warm-up (p-stage-1)*2 + (v-1)*p chunk
/// passes (all of them when m == p); forward pass k runs chunk (k mod pv) div p on micro-batch
/// (k div pv)*p + k mod p; backward chunks in reverse.
[[nodiscard]] std::vector<PassRef> stage_order(spec::PipelineSchedule schedule, std::int64_t pp, std::int64_t vp,
                                               std::int64_t m, std::int64_t stage);

}  // namespace dtsim::schedule
