#include "schedule/pipeline_order.h"

#include <algorithm>

namespace dtsim::schedule {

spec::PipelineSchedule default_schedule(const spec::Parallel& par) {
  return par.vp > 1 ? spec::PipelineSchedule::interleaved : spec::PipelineSchedule::one_f_one_b;
}

StageOrder::StageOrder(spec::PipelineSchedule schedule, std::int64_t pp, std::int64_t vp, std::int64_t m,
                       std::int64_t stage)
    : pp_(pp), vp_(vp), total_(m * vp), warmup_(0) {
  if (schedule == spec::PipelineSchedule::gpipe)
    warmup_ = total_;
  else if (schedule == spec::PipelineSchedule::interleaved)
    warmup_ = m == pp ? total_ : std::min((pp - stage - 1) * 2 + (vp - 1) * pp, total_);
  else
    warmup_ = std::min(pp - stage - 1, m);
}

PassRef StageOrder::pass(bool forward, std::int64_t k) const {
  if (vp_ == 1) return {forward, 0, k};
  // Interleaved: pass k of a direction runs chunk (k mod pv) div p (reversed for backward) on
  // micro-batch (k div pv) * p + k mod p.
  std::int64_t group = pp_ * vp_;
  std::int64_t round = k / group, in_round = k - round * group;
  std::int64_t chunk = in_round / pp_;
  std::int64_t mb = round * pp_ + (in_round - chunk * pp_);  // k mod p, as group is a multiple of p
  if (!forward) chunk = vp_ - 1 - chunk;
  return {forward, chunk, mb};
}

PassRef StageOrder::operator[](std::int64_t i) const {
  // Warm-up forwards, then forward/backward pairs, then cool-down backwards.
  if (i < warmup_) return pass(true, i);
  std::int64_t steady_end = 2 * total_ - warmup_;
  if (i < steady_end) {
    std::int64_t j = i - warmup_;
    return j % 2 == 0 ? pass(true, warmup_ + j / 2) : pass(false, j / 2);
  }
  return pass(false, i - total_);
}

std::vector<PassRef> stage_order(spec::PipelineSchedule schedule, std::int64_t pp, std::int64_t vp, std::int64_t m,
                                 std::int64_t stage) {
  StageOrder order(schedule, pp, vp, m, stage);
  std::vector<PassRef> out;
  out.reserve(static_cast<std::size_t>(order.size()));
  for (std::int64_t i = 0; i < order.size(); ++i) out.push_back(order[i]);
  return out;
}

}  // namespace dtsim::schedule
