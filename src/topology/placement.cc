#include "topology/placement.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include "topology/links.h"

namespace dtsim::topology {
namespace {

// A group kind as an arithmetic progression of global ranks: base + i*stride, i < size.
struct Layout {
  std::int64_t stride = 1;
  std::int64_t size = 1;
};

Layout layout(const spec::Parallel& p, GroupKind k) {
  switch (k) {
    case GroupKind::tp: return {1, p.tp};
    case GroupKind::cp: return {p.tp, p.cp};
    case GroupKind::dp: return {p.tp * p.cp, p.dp};
    case GroupKind::dp_cp: return {p.tp, p.cp * p.dp};
    case GroupKind::ep: return {p.expert_tp(), p.ep};  // folded: etp fastest, then ep
    case GroupKind::pp: return {p.tp * p.cp * p.dp, p.pp};
    case GroupKind::pp_ends: return {p.tp * p.cp * p.dp * std::max<std::int64_t>(1, p.pp - 1), p.pp > 1 ? 2 : 1};
    case GroupKind::edp: return {p.expert_tp() * p.ep, p.expert_dp()};  // above etp and ep in the fold
    case GroupKind::stage: return {1, p.tp * p.cp * p.dp};
    case GroupKind::model: break;  // tp x pp: not one progression (group_members, group_shape)
  }
  throw std::logic_error("topology::layout: unknown GroupKind");
}

void check_ep(const spec::Parallel& p) {
  if (p.ep < 1 || (p.tp * p.cp * p.dp) % (p.ep * p.expert_tp()) != 0)
    throw std::invalid_argument("ep*etp " + std::to_string(p.ep * p.expert_tp()) + " does not divide tp*cp*dp " +
                                std::to_string(p.tp * p.cp * p.dp));
}

void check_rank(const spec::Parallel& p, std::int64_t rank) {
  if (rank < 0 || rank >= world_size(p))
    throw std::out_of_range("rank " + std::to_string(rank) + " outside [0, " + std::to_string(world_size(p)) + ")");
}

// Where one group's members sit: nodes touched, fewest members on one of them, node span.
struct Footprint {
  std::int64_t nodes = 1;
  std::int64_t fewest = 1;
  std::int64_t span = 1;
};

Footprint footprint(std::int64_t base, Layout l, std::int64_t g) {
  Footprint f{0, l.size, 0};
  std::int64_t prev = -1, run = 0;
  for (std::int64_t i = 0; i <= l.size; ++i) {
    std::int64_t node = i < l.size ? (base + i * l.stride) / g : -2;
    if (node == prev) { ++run; continue; }
    if (run > 0) f.fewest = std::min(f.fewest, run);
    if (node >= 0) ++f.nodes;
    prev = node;
    run = 1;
  }
  f.span = (base + (l.size - 1) * l.stride) / g - base / g + 1;
  return f;
}

// Worse = more nodes, then fewer members on a node (fewer NICs), then a wider span.
bool worse(const Footprint& a, const Footprint& b) {
  if (a.nodes != b.nodes) return a.nodes > b.nodes;
  if (a.fewest != b.fewest) return a.fewest < b.fewest;
  return a.span > b.span;
}

// The worst group of a layout. Closed form when groups tile nodes evenly (every real
// Megatron config: power-of-two degrees on 4- or 8-GPU nodes), else every group is visited.
Footprint worst_footprint(Layout l, std::int64_t world, std::int64_t g) {
  std::int64_t s = l.stride, n = l.size;
  if (s >= g) return {n, 1, (n - 1) * s / g + 1};  // consecutive members >= one node apart
  if (g % s == 0 && (g % (s * n) == 0 || (s * n) % g == 0)) {
    std::int64_t per = std::min(n, g / s);
    return {n / per, per, n / per};
  }
  Footprint w{0, 0, 0};
  for (std::int64_t base = 0; base < world; ++base) {
    if ((base / s) % n != 0) continue;
    Footprint f = footprint(base, l, g);
    if (w.nodes == 0 || worse(f, w)) w = f;
  }
  return w;
}

// Most local GPUs mapped to one NIC among the first `active` GPUs of a node.
std::int64_t nic_sharing(const spec::Cluster& c, std::int64_t active) {
  if (c.gpu_to_nic.empty()) {
    std::int64_t nics = std::max<std::int64_t>(1, c.nics_per_node);
    return (active + nics - 1) / nics;
  }
  std::map<std::int64_t, std::int64_t> per_nic;
  std::int64_t most = 0;
  for (std::int64_t l = 0; l < active && l < static_cast<std::int64_t>(c.gpu_to_nic.size()); ++l)
    most = std::max(most, ++per_nic[c.gpu_to_nic[static_cast<std::size_t>(l)]]);
  return most;
}

// `f` counts NVLink domains of `domain` ranks; the fat tree connects hosts, `domain` /
// gpus_per_node of them per domain (one for a DGX).
GroupShape make_shape(const spec::Cluster& c, std::int64_t ranks, Footprint f, std::int64_t sharing,
                      std::int64_t domain) {
  GroupShape s{.ranks = ranks, .ranks_per_node = f.fewest, .nodes = f.nodes};
  if (f.nodes > 1) {
    s.fabric_levels = levels_spanned(c, f.span * std::max<std::int64_t>(1, domain / c.gpus_per_node));
    s.nic_sharing = sharing;
  }
  return s;
}

}  // namespace

const char* to_string(GroupKind k) {
  switch (k) {
    case GroupKind::tp: return "tp";
    case GroupKind::cp: return "cp";
    case GroupKind::dp: return "dp";
    case GroupKind::dp_cp: return "dp_cp";
    case GroupKind::ep: return "ep";
    case GroupKind::pp: return "pp";
    case GroupKind::pp_ends: return "pp_ends";
    case GroupKind::model: return "model";
    case GroupKind::edp: return "edp";
    case GroupKind::stage: return "stage";
  }
  return "?";
}

std::int64_t world_size(const spec::Parallel& p) { return p.tp * p.cp * p.dp * p.pp; }

RankCoord rank_coord(const spec::Parallel& p, std::int64_t rank) {
  check_rank(p, rank);
  return {.tp = rank % p.tp, .cp = (rank / p.tp) % p.cp, .dp = (rank / (p.tp * p.cp)) % p.dp,
          .pp = rank / (p.tp * p.cp * p.dp)};
}

std::int64_t rank_of(const spec::Parallel& p, const RankCoord& c) {
  return c.tp + p.tp * (c.cp + p.cp * (c.dp + p.dp * c.pp));
}

std::int64_t ep_index(const spec::Parallel& p, std::int64_t rank) {
  check_ep(p);
  check_rank(p, rank);
  return (rank % (p.tp * p.cp * p.dp)) / p.expert_tp() % p.ep;
}

std::vector<std::int64_t> group_members(const spec::Parallel& p, GroupKind kind, std::int64_t rank) {
  check_rank(p, rank);
  if (kind == GroupKind::ep || kind == GroupKind::edp) check_ep(p);
  if (kind == GroupKind::model) {  // this rank's cp and dp coordinates, every tp rank of every stage
    RankCoord c = rank_coord(p, rank);
    std::vector<std::int64_t> members;
    for (std::int64_t s = 0; s < p.pp; ++s)
      for (std::int64_t t = 0; t < p.tp; ++t) members.push_back(rank_of(p, {.tp = t, .cp = c.cp, .dp = c.dp, .pp = s}));
    return members;
  }
  Layout l = layout(p, kind);
  std::int64_t base = rank - ((rank / l.stride) % l.size) * l.stride;
  std::vector<std::int64_t> members;
  for (std::int64_t i = 0; i < l.size; ++i) members.push_back(base + i * l.stride);
  return members;
}

GroupShape group_shape(const spec::Cluster& c, const spec::Parallel& p, GroupKind kind) {
  // Locality is the NVLink domain (a DGX, or the job's share of an NVL72 rack).
  std::int64_t g = c.domain_ranks(world_size(p)), host = std::min(g, c.gpus_per_node);
  if (kind == GroupKind::pp) {
    // Brief's rule for the representative neighbour pair: stage stride tp*cp*dp >= one domain.
    if (p.pp <= 1) return GroupShape{};
    std::int64_t stride = p.tp * p.cp * p.dp;
    Footprint f = stride >= g ? Footprint{2, 1, stride / g + 1} : Footprint{1, 2, 1};
    return make_shape(c, 2, f, nic_sharing(c, host), g);
  }
  if (kind == GroupKind::pp_ends) return group_shape(c, p, GroupKind::pp);  // a pipeline-distance pair too
  if (kind == GroupKind::model) {
    // One value all-reduced over tp x pp ranks, latency-bound: tp ranks share a domain, the
    // stages are as many domains apart (the NIC count does not matter for 8 bytes).
    GroupShape s;
    s.ranks = p.tp * p.pp;
    if (s.ranks <= 1) return GroupShape{};
    s.ranks_per_node = std::min(p.tp, g);
    s.nodes = (s.ranks + s.ranks_per_node - 1) / s.ranks_per_node;
    s.fabric_levels = levels_spanned(c, s.nodes);
    s.nic_sharing = s.nodes > 1 ? 1 : 0;
    return s;
  }
  if (kind == GroupKind::ep || kind == GroupKind::edp) check_ep(p);
  Layout l = layout(p, kind);
  if (l.size <= 1) return GroupShape{};
  // Every GPU of a host is in some group of this kind, and all of them talk at once.
  return make_shape(c, l.size, worst_footprint(l, world_size(p), g), nic_sharing(c, host), g);
}

GroupShape pp_boundary_shape(const spec::Cluster& c, const spec::Parallel& p, std::int64_t stage) {
  if (stage < 0 || stage + 1 >= p.pp)
    throw std::out_of_range("pipeline boundary " + std::to_string(stage) + " outside [0, " +
                            std::to_string(p.pp - 1) + ")");
  std::int64_t g = c.domain_ranks(world_size(p)), stride = p.tp * p.cp * p.dp, span = 1;
  std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> senders_per_nic;  // (host, NIC)
  std::int64_t most = 0;
  for (std::int64_t r = stage * stride; r < (stage + 1) * stride; ++r) {
    std::int64_t from = r / g, to = (r + stride) / g;
    if (from == to) continue;
    span = std::max(span, to - from + 1);
    std::int64_t local = (r % g) % c.gpus_per_node;
    std::int64_t nic = c.gpu_to_nic.empty() ? local / c.gpus_per_nic() : c.gpu_to_nic[static_cast<std::size_t>(local)];
    most = std::max(most, ++senders_per_nic[{r / c.gpus_per_node, nic}]);
  }
  if (most == 0) return GroupShape{.ranks = 2, .ranks_per_node = 2, .nodes = 1};
  return make_shape(c, 2, Footprint{2, 1, span}, most, g);
}

GroupShape flat_group_shape(const spec::Cluster& c, std::int64_t ranks, std::int64_t ranks_per_node) {
  if (ranks_per_node < 1 || ranks_per_node > std::min(ranks, c.gpus_per_node) || ranks % ranks_per_node != 0)
    throw std::invalid_argument("ranks_per_node " + std::to_string(ranks_per_node) + " must divide ranks " +
                                std::to_string(ranks) + " and be at most " + std::to_string(c.gpus_per_node));
  // Hosts fill NVLink domains (one host each on a DGX, up to 18 trays of an NVL72 rack), evenly:
  // the most hosts per domain that divide the communicator's hosts (Cluster::domain_ranks' rule).
  std::int64_t hosts = ranks / ranks_per_node, per_domain = 1;
  for (std::int64_t h = std::min(hosts, std::max<std::int64_t>(1, c.nvlink_domain / c.gpus_per_node)); h >= 1; --h)
    if (hosts % h == 0) {
      per_domain = h;
      break;
    }
  std::int64_t domains = hosts / per_domain;
  return make_shape(c, ranks, Footprint{domains, ranks_per_node * per_domain, domains}, nic_sharing(c, ranks_per_node),
                    per_domain * c.gpus_per_node);
}

std::vector<std::vector<std::int64_t>> groups_of(const spec::Parallel& par, GroupKind kind, std::int64_t first,
                                                std::int64_t last) {
  std::vector<std::vector<std::int64_t>> out;
  std::vector<bool> placed(static_cast<std::size_t>(std::max<std::int64_t>(0, last - first)), false);
  for (std::int64_t r = first; r < last; ++r) {
    if (placed[static_cast<std::size_t>(r - first)]) continue;
    std::vector<std::int64_t> members = group_members(par, kind, r);
    for (std::int64_t m : members)
      if (m >= first && m < last) placed[static_cast<std::size_t>(m - first)] = true;
    out.push_back(std::move(members));
  }
  return out;
}

}  // namespace dtsim::topology
