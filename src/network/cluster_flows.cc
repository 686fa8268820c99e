#include "network/cluster_flows.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "cost/collective.h"
#include "topology/placement.h"

namespace dtsim::network {

ClusterFlows::ClusterFlows(const spec::Cluster& c, std::int64_t gpus, double intra_efficiency, double inter_efficiency,
                           bool non_blocking)
    : c_(c), domain_(c.domain_ranks(gpus)) {
  intra_ = c.intra.bandwidth.value() * intra_efficiency;
  inter_ = c.nic_bandwidth.value() * inter_efficiency;
  // Level 0 of the fat tree: a leaf's radix split into down and up ports by its oversubscription.
  const spec::FabricLevel& leaf = c.fabric.front();
  double down = static_cast<double>(leaf.switch_radix) * leaf.oversubscription / (1.0 + leaf.oversubscription);
  nics_per_leaf_ = std::max<std::int64_t>(1, static_cast<std::int64_t>(down));
  double up = static_cast<double>(nics_per_leaf_) * inter_ / (non_blocking ? 1.0 : leaf.oversubscription);
  std::int64_t hosts = c.rail_optimized ? nics_per_leaf_
                                        : std::max<std::int64_t>(1, nics_per_leaf_ / std::max<std::int64_t>(1, c.nics_per_node));
  tiers_.push_back({hosts, up});
  // Middle levels (neither the leaf nor the top, which is the root): a switch of level i takes
  // `down` subtrees of level i - 1 (topology::levels_spanned counts reach the same way), and the
  // subtree's uplinks carry its children's uplink capacity cut by level i's oversubscription.
  // Rails merge above the leaves, so a middle subtree holds whole hosts.
  std::int64_t nics = nics_per_leaf_;
  for (std::size_t i = 1; i + 1 < c.fabric.size(); ++i) {
    const spec::FabricLevel& l = c.fabric[i];
    auto children = std::max<std::int64_t>(
        1, static_cast<std::int64_t>(static_cast<double>(l.switch_radix) * l.oversubscription / (1.0 + l.oversubscription)));
    nics *= children;
    up = static_cast<double>(children) * up / (non_blocking ? 1.0 : l.oversubscription);
    tiers_.push_back({std::max<std::int64_t>(1, nics / std::max<std::int64_t>(1, c.nics_per_node)), up});
  }
}

std::size_t ClusterFlows::link(const std::string& name, double bytes_per_s) {
  auto [it, fresh] = index_.try_emplace(name, links_.size());
  if (fresh) links_.push_back({bytes_per_s, 0.0});
  return it->second;
}

std::int64_t ClusterFlows::nic_of(std::int64_t rank) const {
  std::int64_t local = rank % c_.gpus_per_node;
  return c_.gpu_to_nic.empty() ? local / c_.gpus_per_nic() : c_.gpu_to_nic[static_cast<std::size_t>(local)];
}

std::int64_t ClusterFlows::subtree_of(std::int64_t rank, std::size_t level) const {
  std::int64_t host = host_of(rank);
  // Rail-optimized: a leaf of rail k takes NIC k of nics_per_leaf hosts; otherwise a leaf takes
  // whole hosts, nics_per_leaf NICs of them.
  std::int64_t index = host / tiers_[level].hosts;
  return level == 0 && c_.rail_optimized ? nic_of(rank) * 1000000 + index : index;
}

std::int64_t ClusterFlows::leaf_of(std::int64_t rank) const { return subtree_of(rank, 0); }

FlowSpec ClusterFlows::flow(std::int64_t src, std::int64_t dst, double bytes) {
  if (src == dst) throw std::invalid_argument("network::ClusterFlows: a flow from a rank to itself");
  FlowSpec f{.path = {}, .bytes = bytes};
  if (src / domain_ == dst / domain_) {  // one NVLink domain: through its switches, non-blocking
    f.path = {link("gpu" + std::to_string(src) + ".nvl.out", intra_), link("gpu" + std::to_string(dst) + ".nvl.in", intra_)};
    return f;
  }
  auto nic = [&](std::int64_t r, const char* dir) {
    return link("host" + std::to_string(host_of(r)) + ".nic" + std::to_string(nic_of(r)) + dir, inter_);
  };
  f.path.push_back(nic(src, ".out"));
  // Up through every level whose subtrees differ, down the same levels on the other side.
  std::vector<std::size_t> down;
  for (std::size_t i = 0; i < tiers_.size(); ++i) {
    std::int64_t a = subtree_of(src, i), b = subtree_of(dst, i);
    if (a == b) break;
    std::string tier = "t" + std::to_string(i) + ".";
    f.path.push_back(link(tier + std::to_string(a) + ".up", tiers_[i].up));
    down.push_back(link(tier + std::to_string(b) + ".down", tiers_[i].up));
  }
  f.path.insert(f.path.end(), down.rbegin(), down.rend());
  f.path.push_back(nic(dst, ".in"));
  return f;
}

double ring_time(ClusterFlows& net, const std::vector<std::int64_t>& ranks, double bytes_per_rank) {
  if (ranks.size() < 2) return 0.0;
  std::vector<FlowSpec> flows;
  for (std::size_t i = 0; i < ranks.size(); ++i)
    flows.push_back(net.flow(ranks[i], ranks[(i + 1) % ranks.size()], bytes_per_rank));
  std::vector<double> done = simulate_flows(net.links(), flows);
  return *std::max_element(done.begin(), done.end());
}

}  // namespace dtsim::network

namespace dtsim::network {

double ring_collective_time(const spec::Cluster& c, const spec::CollectiveCalibration& cal, spec::Collective op,
                            double size, std::int64_t ranks, std::int64_t ranks_per_node) {
  using spec::CollAlgo;
  using spec::Protocol;
  double n = static_cast<double>(ranks), share = 0;
  switch (op) {
    case spec::Collective::all_reduce: share = 2 * (n - 1) / n; break;
    case spec::Collective::all_gather:
    case spec::Collective::reduce_scatter: share = (n - 1) / n; break;
    default:
      throw std::invalid_argument(std::string("network::ring_collective_time: ") + spec::to_string(op) +
                                  " is not a ring collective");
  }
  if (ranks < 2) return 0.0;
  bool inter = ranks > ranks_per_node;
  const spec::ProtocolCost& intra = cal.at(op, false, CollAlgo::ring, Protocol::simple);
  const spec::ProtocolCost& net = cal.at(op, true, CollAlgo::ring, Protocol::simple);
  // The communicator's ranks sit ranks_per_node to a node, on the first GPUs of each. Across nodes
  // NCCL splits the data over channels, one ring per NIC a node's ranks reach: ring j visits each
  // node's ranks from local rank j round to j - 1 and leaves through the NIC of that last one, so
  // every NIC carries one ring out and one in (NCCL graph/rings.cc connects rings rail to rail).
  std::int64_t nodes = (ranks + ranks_per_node - 1) / ranks_per_node;
  ClusterFlows net_flows(c, nodes * c.gpus_per_node, intra.bandwidth_efficiency, net.bandwidth_efficiency);
  std::int64_t channels = inter ? std::max<std::int64_t>(1, std::min(c.nics_per_node, ranks_per_node)) : 1;
  std::vector<FlowSpec> flows;
  for (std::int64_t j = 0; j < channels; ++j) {
    std::vector<std::int64_t> ring;
    for (std::int64_t m = 0; m < nodes; ++m)
      for (std::int64_t i = 0; i < ranks_per_node; ++i)
        ring.push_back(m * c.gpus_per_node + (j + i) % ranks_per_node);
    for (std::size_t i = 0; i < ring.size(); ++i)
      flows.push_back(net_flows.flow(ring[i], ring[(i + 1) % ring.size()], share * size / static_cast<double>(channels)));
  }
  std::vector<double> done = simulate_flows(net_flows.links(), flows);
  Seconds latency = cost::ring_latency(op, topology::flat_group_shape(c, ranks, ranks_per_node), c, cal);
  return latency.value() + *std::max_element(done.begin(), done.end());
}

spec::Cluster non_blocking(spec::Cluster c) {
  for (spec::FabricLevel& l : c.fabric) l.oversubscription = 1.0;
  return c;
}

void add_all_to_all(ClusterFlows& net, const std::vector<std::int64_t>& members, double bytes, std::vector<FlowSpec>& out) {
  double share = bytes / static_cast<double>(members.size());
  for (std::int64_t a : members)
    for (std::int64_t b : members)
      if (a != b) out.push_back(net.flow(a, b, share));
}

void add_ring(ClusterFlows& net, const spec::Cluster& c, const std::vector<std::int64_t>& members, double bytes,
              std::vector<FlowSpec>& out) {
  std::map<std::int64_t, std::vector<std::int64_t>> by_host;
  for (std::int64_t r : members) by_host[net.host_of(r)].push_back(r);
  std::int64_t per_host = static_cast<std::int64_t>(by_host.begin()->second.size());
  std::int64_t channels = by_host.size() > 1 ? std::max<std::int64_t>(1, std::min(c.nics_per_node, per_host)) : 1;
  for (std::int64_t j = 0; j < channels; ++j) {
    std::vector<std::int64_t> ring;
    for (const auto& [host, rs] : by_host)
      for (std::size_t i = 0; i < rs.size(); ++i) ring.push_back(rs[(static_cast<std::size_t>(j) + i) % rs.size()]);
    for (std::size_t i = 0; i < ring.size(); ++i)
      out.push_back(net.flow(ring[i], ring[(i + 1) % ring.size()], bytes / static_cast<double>(channels)));
  }
}

}  // namespace dtsim::network
