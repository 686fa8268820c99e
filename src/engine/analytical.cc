#include "engine/analytical.h"

#include <algorithm>

#include "cost/collective.h"
#include "topology/links.h"

namespace dtsim::engine {
AnalyticalNetwork::AnalyticalNetwork(const spec::Cluster& c, const spec::Parallel& par,
                                     const spec::CollectiveCalibration& cal)
    : cluster_(c), cal_(cal) {
  for (std::size_t k = 0; k < shapes_.size(); ++k)
    shapes_[k] = topology::group_shape(c, par, static_cast<topology::GroupKind>(k));
}

const topology::GroupShape& AnalyticalNetwork::shape(schedule::Group g) const {
  return shapes_[static_cast<std::size_t>(g)];
}

Seconds AnalyticalNetwork::time(const schedule::Comm& comm) const {
  const topology::GroupShape& s = shape(comm.group);
  if (s.ranks <= 1 || comm.size.value() <= 0) return Seconds{0};
  for (const Cached& c : cache_)
    if (c.comm.op == comm.op && c.comm.group == comm.group && c.comm.size == comm.size) return c.time;
  Seconds t = cost::collective_time(comm.op, comm.size, s, cluster_, cal_).time;
  cache_.push_back({comm, t});
  return t;
}

}  // namespace dtsim::engine
