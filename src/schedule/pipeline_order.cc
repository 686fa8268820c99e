#include "schedule/pipeline_order.h"

#include <algorithm>

namespace dtsim::schedule {
namespace {

PassRef interleaved_pass(bool forward, std::int64_t k, std::int64_t p, std::int64_t v) {
  std::int64_t group = p * v;
  std::int64_t chunk = (k % group) / p;
  if (!forward) chunk = v - 1 - chunk;
  return {forward, chunk, (k / group) * p + k % p};
}

std::vector<PassRef> gpipe(std::int64_t m) {
  std::vector<PassRef> out;
  for (std::int64_t j = 0; j < m; ++j) out.push_back({true, 0, j});
  for (std::int64_t j = 0; j < m; ++j) out.push_back({false, 0, j});
  return out;
}

}  // namespace

spec::PipelineSchedule default_schedule(const spec::Parallel& par) {
  return par.vp > 1 ? spec::PipelineSchedule::interleaved : spec::PipelineSchedule::one_f_one_b;
}

std::vector<PassRef> stage_order(spec::PipelineSchedule schedule, std::int64_t pp, std::int64_t vp, std::int64_t m,
                                 std::int64_t stage) {
  std::vector<PassRef> out;
  stage_order(schedule, pp, vp, m, stage, out);
  return out;
}

void stage_order(spec::PipelineSchedule schedule, std::int64_t pp, std::int64_t vp, std::int64_t m, std::int64_t stage,
                 std::vector<PassRef>& out) {
  out.clear();
  if (schedule == spec::PipelineSchedule::gpipe) {
    out = gpipe(m);
    return;
  }
  std::int64_t total = m * vp;
  std::int64_t warmup = 0;
  if (schedule == spec::PipelineSchedule::interleaved)
    warmup = m == pp ? total : std::min((pp - stage - 1) * 2 + (vp - 1) * pp, total);
  else
    warmup = std::min(pp - stage - 1, m);
  auto fwd = [&](std::int64_t k) { return vp > 1 ? interleaved_pass(true, k, pp, vp) : PassRef{true, 0, k}; };
  auto bwd = [&](std::int64_t k) { return vp > 1 ? interleaved_pass(false, k, pp, vp) : PassRef{false, 0, k}; };
  out.reserve(static_cast<std::size_t>(2 * total));
  for (std::int64_t k = 0; k < warmup; ++k) out.push_back(fwd(k));
  for (std::int64_t k = 0; k < total - warmup; ++k) {
    out.push_back(fwd(warmup + k));
    out.push_back(bwd(k));
  }
  for (std::int64_t k = total - warmup; k < total; ++k) out.push_back(bwd(k));
}

}  // namespace dtsim::schedule
