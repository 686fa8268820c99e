#include "topology/links.h"

#include <algorithm>

namespace dtsim::topology {
namespace {

// Endpoints (per rail) that one switch at `level` reaches downward.
std::int64_t down_ports(const spec::FabricLevel& l, bool top) {
  if (top) return l.switch_radix;
  double down = static_cast<double>(l.switch_radix) * l.oversubscription / (1.0 + l.oversubscription);
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(down));
}

}  // namespace

int levels_spanned(const spec::Cluster& c, std::int64_t nodes) {
  if (nodes <= 1) return 0;
  std::int64_t reach = 1;
  for (std::size_t i = 0; i < c.fabric.size(); ++i) {
    reach *= down_ports(c.fabric[i], i + 1 == c.fabric.size());
    if (reach >= nodes) return static_cast<int>(i) + 1;
  }
  return static_cast<int>(c.fabric.size());
}

std::int64_t max_nodes(const spec::Cluster& c) {
  std::int64_t reach = 1;
  for (std::size_t i = 0; i < c.fabric.size(); ++i) reach *= down_ports(c.fabric[i], i + 1 == c.fabric.size());
  return reach;
}

LinkCost intra_node_link(const spec::Cluster& c) { return {c.intra.bandwidth, c.intra.latency}; }

LinkCost network_link(const spec::Cluster& c, int levels) {
  levels = std::clamp(levels, 1, static_cast<int>(c.fabric.size()));
  double oversub = 1.0;
  Seconds latency = c.nic_latency * 2.0;
  for (int i = 0; i < levels; ++i) {
    // Traffic leaving level i's subtree goes up through its oversubscribed ports.
    if (i + 1 < levels) oversub = std::max(oversub, c.fabric[static_cast<std::size_t>(i)].oversubscription);
    latency += c.fabric[static_cast<std::size_t>(i)].hop_latency * (i + 1 < levels ? 2.0 : 1.0);
  }
  BytesPerSecond per_gpu = c.nic_bandwidth / static_cast<double>(c.gpus_per_nic());
  return {per_gpu / oversub, latency};
}

}  // namespace dtsim::topology
