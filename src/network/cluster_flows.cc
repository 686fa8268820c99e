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

FlowSpec ClusterFlows::port(std::int64_t rank, bool out, double bytes) {
  return {.path = {link("gpu" + std::to_string(rank) + (out ? ".nvl.out" : ".nvl.in"), intra_)}, .bytes = bytes};
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
  const spec::ProtocolCost& intra = cal.at(op, false, CollAlgo::ring, Protocol::simple);
  const spec::ProtocolCost& net = cal.at(op, true, CollAlgo::ring, Protocol::simple);
  // The communicator's ranks sit ranks_per_node to a node, on the first GPUs of each; nodes fill
  // NVLink domains (an NVL72 rack's trays share one). Across domains NCCL splits the data over
  // channels, one ring per NIC a node's ranks reach: ring j visits each node's ranks from local
  // rank j round to j - 1 and leaves through the NIC of that last one, so every NIC carries one
  // ring out and one in (NCCL graph/rings.cc connects rings rail to rail).
  std::int64_t nodes = (ranks + ranks_per_node - 1) / ranks_per_node;
  ClusterFlows net_flows(c, nodes * c.gpus_per_node, intra.bandwidth_efficiency, net.bandwidth_efficiency);
  bool inter = net_flows.domain_of((nodes - 1) * c.gpus_per_node) != 0;
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

namespace {

// Members grouped by NVLink domain (or host), each list ascending.
std::map<std::int64_t, std::vector<std::int64_t>> by_domain(const ClusterFlows& net, const std::vector<std::int64_t>& members) {
  std::map<std::int64_t, std::vector<std::int64_t>> out;
  for (std::int64_t r : members) out[net.domain_of(r)].push_back(r);
  return out;
}

// The parent of position r in NCCL's first binary tree over n positions (src/graph/trees.cc
// ncclGetBtree): from r's lowest set bit b, (r ^ b) | 2b, or r ^ b when that is n or more; the
// second tree mirrors the first (n even) or shifts it by one position (n odd).
std::int64_t btree_parent(std::int64_t r, std::int64_t n, int tree) {
  auto mirror = [&](std::int64_t p) { return tree == 0 ? p : n % 2 == 0 ? n - 1 - p : (p + n - 1) % n; };
  auto unmirror = [&](std::int64_t p) { return tree == 0 ? p : n % 2 == 0 ? n - 1 - p : (p + 1) % n; };
  std::int64_t p = mirror(r);
  if (p == 0) return -1;
  std::int64_t bit = p & -p, up = (p ^ bit) | (bit << 1);
  return unmirror(up < n ? up : p ^ bit);
}

// Up and down flows of `bytes` each way along binary tree `tree` over `ends` (one rank per domain).
void add_btree(ClusterFlows& net, const std::vector<std::int64_t>& ends, int tree, double bytes,
               std::vector<FlowSpec>& out) {
  auto n = static_cast<std::int64_t>(ends.size());
  for (std::int64_t r = 0; r < n; ++r) {
    std::int64_t p = btree_parent(r, n, tree);
    if (p < 0) continue;
    auto a = ends[static_cast<std::size_t>(r)], b = ends[static_cast<std::size_t>(p)];
    out.push_back(net.flow(a, b, bytes));
    out.push_back(net.flow(b, a, bytes));
  }
}

}  // namespace

void add_all_to_all(ClusterFlows& net, const std::vector<std::int64_t>& members, double bytes, std::vector<FlowSpec>& out) {
  double share = bytes / static_cast<double>(members.size());
  auto domains = by_domain(net, members);
  for (const auto& [d, in] : domains) {
    auto m = static_cast<std::int64_t>(in.size());
    std::int64_t slots = std::min(m - 1, kAllToAllPeers);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 1; j <= slots; ++j) {
        double rounds = static_cast<double>((m - 1 - j) / slots + 1);  // rounds j, j + slots, ... < m
        out.push_back(net.flow(in[static_cast<std::size_t>(i)], in[static_cast<std::size_t>((i + j) % m)], share * rounds));
      }
  }
  if (domains.size() < 2) return;
  std::map<std::int64_t, std::vector<std::int64_t>> hosts;
  for (std::int64_t r : members) hosts[net.host_of(r)].push_back(r);
  const std::int64_t per_host = net.gpus_per_host();
  for (const auto& [h, senders] : hosts) {
    std::map<std::pair<std::int64_t, std::int64_t>, double> hop;  // (sender, relay) -> bytes over NVLink
    for (std::int64_t b : members) {
      if (net.domain_of(b) == net.domain_of(senders.front())) continue;
      std::int64_t relay = h * per_host + b % per_host;
      out.push_back(net.flow(relay, b, share * static_cast<double>(senders.size())));
      for (std::int64_t a : senders)
        if (a != relay) hop[{a, relay}] += share;
    }
    for (const auto& [ends, b] : hop) out.push_back(net.flow(ends.first, ends.second, b));
  }
}

void add_tree(ClusterFlows& net, const std::vector<std::int64_t>& members, double bytes, std::vector<FlowSpec>& out) {
  auto domains = by_domain(net, members);
  for (int t = 0; t < 2; ++t) {
    std::vector<std::int64_t> ends;
    for (const auto& [d, in] : domains) {
      // The chain enters the domain at member t (mod k) and runs through the others in order.
      std::size_t k = in.size(), first = static_cast<std::size_t>(t) % k;
      ends.push_back(in[first]);
      for (std::size_t i = 0; i + 1 < k; ++i) {
        std::int64_t a = in[(first + i) % k], b = in[(first + i + 1) % k];
        out.push_back(net.flow(a, b, bytes / 2));
        out.push_back(net.flow(b, a, bytes / 2));
      }
    }
    if (ends.size() > 1) add_btree(net, ends, t, bytes / 2, out);
  }
}

void add_nvls(ClusterFlows& net, const std::vector<std::int64_t>& members, double bytes, std::vector<FlowSpec>& out) {
  auto domains = by_domain(net, members);
  std::size_t k = domains.begin()->second.size();
  for (const auto& [d, in] : domains)
    for (std::int64_t r : in) {
      double through = bytes * static_cast<double>(in.size() + 1) / static_cast<double>(in.size());
      out.push_back(net.port(r, true, through));
      out.push_back(net.port(r, false, through));
    }
  if (domains.size() < 2) return;
  for (std::size_t j = 0; j < k; ++j) {
    std::vector<std::int64_t> ends;
    for (const auto& [d, in] : domains) ends.push_back(in[j % in.size()]);
    for (int t = 0; t < 2; ++t) add_btree(net, ends, t, bytes / static_cast<double>(2 * k), out);
  }
}

void add_hierarchical(ClusterFlows& net, const spec::Cluster& c, const std::vector<std::int64_t>& members,
                      double bytes, std::vector<FlowSpec>& out) {
  auto domains = by_domain(net, members);
  std::size_t k = domains.begin()->second.size();
  for (const auto& [d, in] : domains)
    if (in.size() > 1) add_ring(net, c, in, bytes, out);
  if (domains.size() < 2) return;
  for (std::size_t j = 0; j < k; ++j) {
    std::vector<std::int64_t> across;
    for (const auto& [d, in] : domains) across.push_back(in[j % in.size()]);
    add_ring(net, c, across, bytes / static_cast<double>(k), out);
  }
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
