#include "engine/analytical.h"

#include <algorithm>

#include "cost/collective.h"
#include "topology/links.h"

namespace dtsim::engine {
namespace {

using schedule::Comm;
using schedule::Group;

// The grad-norm all-reduce spans the model-parallel ranks (tp x pp): one value, latency-bound.
topology::GroupShape model_parallel_shape(const spec::Cluster& c, const spec::Parallel& par) {
  topology::GroupShape s;
  s.ranks = par.tp * par.pp;
  s.ranks_per_node = std::min(par.tp, c.domain_ranks(par.tp * par.cp * par.dp * par.pp));
  s.nodes = (s.ranks + s.ranks_per_node - 1) / s.ranks_per_node;
  s.fabric_levels = topology::levels_spanned(c, s.nodes);
  s.nic_sharing = s.nodes > 1 ? 1 : 0;
  return s;
}

}  // namespace

AnalyticalNetwork::AnalyticalNetwork(const spec::Cluster& c, const spec::Parallel& par,
                                     const spec::CollectiveCalibration& cal)
    : cluster_(c), cal_(cal) {
  using topology::GroupKind;
  auto at = [this](Group g) -> topology::GroupShape& { return shapes_[static_cast<std::size_t>(g)]; };
  at(Group::tp) = topology::group_shape(c, par, GroupKind::tp);
  at(Group::cp) = topology::group_shape(c, par, GroupKind::cp);
  at(Group::dp) = topology::group_shape(c, par, GroupKind::dp);
  at(Group::dp_cp) = topology::group_shape(c, par, GroupKind::dp_cp);
  at(Group::ep) = topology::group_shape(c, par, GroupKind::ep);
  at(Group::pp) = topology::group_shape(c, par, GroupKind::pp);
  // The tied-embedding pair (first and last stage) is a pipeline-distance pair too.
  at(Group::pp_ends) = at(Group::pp);
  at(Group::model) = model_parallel_shape(c, par);
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
