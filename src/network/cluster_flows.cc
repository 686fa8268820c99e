#include "network/cluster_flows.h"

#include <algorithm>
#include <stdexcept>

namespace dtsim::network {

ClusterFlows::ClusterFlows(const spec::Cluster& c, std::int64_t gpus, double intra_efficiency, double inter_efficiency)
    : c_(c), domain_(c.domain_ranks(gpus)) {
  intra_ = c.intra.bandwidth.value() * intra_efficiency;
  inter_ = c.nic_bandwidth.value() * inter_efficiency;
  // Level 0 of the fat tree: a leaf's radix split into down and up ports by its oversubscription.
  const spec::FabricLevel& leaf = c.fabric.front();
  double down = static_cast<double>(leaf.switch_radix) * leaf.oversubscription / (1.0 + leaf.oversubscription);
  nics_per_leaf_ = std::max<std::int64_t>(1, static_cast<std::int64_t>(down));
  leaf_up_ = static_cast<double>(nics_per_leaf_) * inter_ / leaf.oversubscription;
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

std::int64_t ClusterFlows::leaf_of(std::int64_t rank) const {
  std::int64_t host = host_of(rank);
  // Rail-optimized: a leaf of rail k takes NIC k of nics_per_leaf hosts; otherwise a leaf takes
  // whole hosts, nics_per_leaf NICs of them.
  if (c_.rail_optimized) return nic_of(rank) * 1000000 + host / nics_per_leaf_;
  return host / std::max<std::int64_t>(1, nics_per_leaf_ / std::max<std::int64_t>(1, c_.nics_per_node));
}

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
  std::int64_t a = leaf_of(src), b = leaf_of(dst);
  if (a != b) {
    f.path.push_back(link("leaf" + std::to_string(a) + ".up", leaf_up_));
    f.path.push_back(link("leaf" + std::to_string(b) + ".down", leaf_up_));
  }
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
