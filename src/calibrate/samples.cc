#include "calibrate/samples.h"

#include <cmath>

#include "core/errors.h"

namespace dtsim::calibrate {
namespace {

// The time a sample stands for: the geometric mean of the out-of-place and in-place timings
// (one error in ln(time) for each), or the one there is.
double sample_time_us(double out_of_place, std::optional<double> in_place) {
  return in_place ? std::sqrt(out_of_place * *in_place) : out_of_place;
}

}  // namespace

std::vector<CollectiveSample> samples_from_log(const NcclTestsLog& log, const std::string& flag) {
  if (!log.ranks_per_node)
    throw SpecError(flag, log.path + ": expected the GPUs per node from the file's device list or a launcher line, "
                                     "got neither; pass --gpus-per-node K");
  std::vector<CollectiveSample> out;
  for (const NcclTestsRow& r : log.rows) {
    std::optional<double> ip;
    if (r.in_place) ip = r.in_place->time_us;
    out.push_back({log.collective, log.ranks, *log.ranks_per_node, static_cast<double>(r.size_bytes),
                   us(sample_time_us(r.out_of_place.time_us, ip)), log.path + ":" + std::to_string(r.line)});
  }
  return out;
}

std::vector<CollectiveSample> samples_from_bench(const spec::BenchFile& f) {
  std::vector<CollectiveSample> out;
  if (!f.nccl) return out;
  for (std::size_t i = 0; i < f.nccl->sweeps.size(); ++i)
    for (const spec::NcclPoint& p : f.nccl->sweeps[i].points)
      out.push_back({f.nccl->sweeps[i].collective, f.nccl->ranks, f.nccl->ranks_per_node,
                     static_cast<double>(p.size_bytes), us(sample_time_us(p.out_of_place_us, p.in_place_us)),
                     f.path + ":/nccl/sweeps/" + std::to_string(i)});
  return out;
}

}  // namespace dtsim::calibrate
