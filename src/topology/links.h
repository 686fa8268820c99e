#pragma once
// The cluster as link classes: what one GPU sees when it talks to a peer at a given distance.
#include <cstdint>

#include "core/units.h"
#include "spec/cluster.h"

namespace dtsim::topology {

/// Bandwidth (per GPU, per direction, all GPUs of a node sending at once) and one-way latency.
struct LinkCost {
  BytesPerSecond bandwidth;
  Seconds latency;
  bool operator==(const LinkCost&) const = default;
};

/// Fat-tree levels a group spanning `nodes` consecutive nodes climbs: 0 inside one node,
/// 1 under one leaf switch, 2 through spines, ... A leaf of radix k with oversubscription o
/// gives k*o/(1+o) ports down; upper levels split ports half down, half up, and the top
/// level uses all its ports down (Leiserson 1985; NVIDIA DGX SuperPOD reference
/// architecture: rail-optimized leaves, one leaf per rail per scalable unit).
[[nodiscard]] int levels_spanned(const spec::Cluster& c, std::int64_t nodes);

/// Largest node count the cluster's fabric can connect (all levels used).
[[nodiscard]] std::int64_t max_nodes(const spec::Cluster& c);

/// Inside one node: NVLink/NVSwitch or PCIe, per GPU per direction.
[[nodiscard]] LinkCost intra_node_link(const spec::Cluster& c);

/// Between nodes through `levels` fat-tree levels (>= 1): the GPU's share of its NIC, divided
/// by the worst oversubscription crossed; latency = 2 NIC latencies + (2*levels - 1) switch hops.
[[nodiscard]] LinkCost network_link(const spec::Cluster& c, int levels);

}  // namespace dtsim::topology
