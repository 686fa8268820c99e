#pragma once
// The links a job's transfers cross on a cluster, and their paths, for the SimGrid backend: each
// GPU's NVLink port into its NVLink domain's switches (non-blocking inside), each host NIC, and the
// uplinks of each fabric level's subtrees below the top (leaf switches, then the pods of middle
// levels), each cut by its level's oversubscription; the top level is non-blocking. Ranks sit in Megatron order on hosts of gpus_per_node, NVLink domains as
// spec::Cluster::domain_ranks places them, GPU-to-NIC as the cluster maps them; with a
// rail-optimized fabric NIC k of every host hangs off the leaves of rail k.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "network/flows.h"
#include "spec/calibration.h"
#include "spec/cluster.h"

namespace dtsim::network {

class ClusterFlows {
 public:
  /// `gpus`: the job's size (its placement over NVLink domains). Link rates are the cluster's
  /// times `intra_efficiency` (NVLink) and `inter_efficiency` (NICs and fabric): the share of the
  /// wire a collective's protocol reaches (the calibration's bandwidth_efficiency).
  /// `non_blocking`: the same switches and partitioning (which hosts share a leaf), every
  /// uplink as wide as the ports below it -- the reference contention is measured against.
  ClusterFlows(const spec::Cluster& c, std::int64_t gpus, double intra_efficiency, double inter_efficiency,
               bool non_blocking = false);

  /// A flow of `bytes` from rank `src` to rank `dst` (both < gpus, distinct).
  [[nodiscard]] FlowSpec flow(std::int64_t src, std::int64_t dst, double bytes);
  [[nodiscard]] const std::vector<LinkSpec>& links() const { return links_; }
  /// A flow of `bytes` between rank `rank`'s GPU and its NVLink switches (`out`: into the switch),
  /// for collectives the switch reduces or multicasts (NVLS).
  [[nodiscard]] FlowSpec port(std::int64_t rank, bool out, double bytes);
  /// Host (NIC-owning node) and leaf switch of a rank, for tests and reports.
  [[nodiscard]] std::int64_t host_of(std::int64_t rank) const { return rank / c_.gpus_per_node; }
  [[nodiscard]] std::int64_t gpus_per_host() const { return c_.gpus_per_node; }
  /// The NVLink domain of a rank for this job (spec::Cluster::domain_ranks).
  [[nodiscard]] std::int64_t domain_of(std::int64_t rank) const { return rank / domain_; }
  [[nodiscard]] std::int64_t leaf_of(std::int64_t rank) const;

 private:
  std::size_t link(const std::string& name, double bytes_per_s);
  std::int64_t nic_of(std::int64_t rank) const;
  /// The subtree of `rank` at fabric level `level` (0: its leaf switch).
  std::int64_t subtree_of(std::int64_t rank, std::size_t level) const;

  struct Tier {
    std::int64_t hosts = 1;  ///< hosts under one subtree of this level (per rail at the leaves)
    double up = 0;           ///< the subtree's uplink capacity per direction, bytes/s
  };

  const spec::Cluster& c_;
  std::int64_t domain_ = 1;         ///< ranks per NVLink domain for this job
  std::int64_t nics_per_leaf_ = 1;  ///< NICs one leaf switch connects downward
  double intra_ = 0, inter_ = 0;    ///< link rates, bytes/s
  std::vector<Tier> tiers_;         ///< the leaves, then the middle levels (the top is the root)
  std::vector<LinkSpec> links_;
  std::map<std::string, std::size_t> index_;
};

/// Time of a ring collective over `ranks` (in ring order) moving `bytes_per_rank` from each rank
/// to the next, all at once (the ring's steps fused into one flow per rank: its bandwidth share
/// is that of every step): the slowest flow's completion.
[[nodiscard]] double ring_time(ClusterFlows& net, const std::vector<std::int64_t>& ranks, double bytes_per_rank);

}  // namespace dtsim::network

namespace dtsim::network {

/// A ring collective (all_reduce, all_gather or reduce_scatter) of `size` bytes over a flat
/// communicator of `ranks` GPUs, `ranks_per_node` on each node (as nccl-tests runs; nodes fill
/// NVLink domains as topology::flat_group_shape places them), priced on
/// SimGrid: link rates cut by the profile's ring/Simple bandwidth efficiency for `op` (NVLink and
/// network entries), the ring's steps fused into one flow per rank, plus the profile's base and
/// per-step latencies -- the analytical ring's terms, with the bandwidth shared by SimGrid
/// instead of assumed. Throws std::invalid_argument for another collective.
[[nodiscard]] double ring_collective_time(const spec::Cluster& c, const spec::CollectiveCalibration& cal,
                                          spec::Collective op, double size, std::int64_t ranks,
                                          std::int64_t ranks_per_node);

}  // namespace dtsim::network

namespace dtsim::network {

/// `c` with every fabric level at 1:1 (the reference a transfer's contention is measured against).
[[nodiscard]] spec::Cluster non_blocking(spec::Cluster c);

/// The flows of one all-to-all over `members`, every member sending an equal share of `bytes` to
/// every other, as NCCL sends them:
/// - inside an NVLink domain as rounds in which every member sends to one peer and receives from
///   another (NCCL's peer-to-peer schedule, src/init.cc p2pSchedule), here member i sending to
///   i + j in round j, the rounds fused kAllToAllPeers at a time into one flow per member and
///   peer slot: every NVLink port carries the bytes of the full mesh, in min(n - 1,
///   kAllToAllPeers) flows instead of n - 1;
/// - across domains with PXN (NCCL 2.12, on by default: NVIDIA technical blog "Doubling all2all
///   Performance with NVIDIA Collective Communication Library 2.12", 2022): a GPU hands what it
///   sends to a member of another domain to the GPU of its own host on the destination's rail
///   (NVLink), which sends everything its host has for that member in one flow, rail to rail.
void add_all_to_all(ClusterFlows& net, const std::vector<std::int64_t>& members, double bytes, std::vector<FlowSpec>& out);

/// Peer slots an all-to-all's fused rounds keep in flight per member inside an NVLink domain: the
/// flow count of an EP 64 all-to-all drops 8x, the bytes on every port stay those of the mesh.
inline constexpr std::int64_t kAllToAllPeers = 8;

/// The flows of one double binary tree all-reduce over `members` moving `bytes` per member (NCCL
/// 2.4; src/graph/trees.cc builds the trees): across NVLink domains two binary trees over the
/// domains, each carrying half the data up (reduce) and down (broadcast); inside each domain a
/// chain from the member the tree enters through (a different one, hence NIC, per tree).
void add_tree(ClusterFlows& net, const std::vector<std::int64_t>& members, double bytes, std::vector<FlowSpec>& out);

/// The flows of one NVLS all-reduce (NVLink SHARP) over `members` moving `bytes` per member: each
/// member sends its buffer into its NVLink switches, which reduce it (multimem.ld_reduce), and
/// receives the result they multicast: S(k+1)/k each way through its own port, k members per
/// domain (cost/collective.cc nvls_pass). Across domains (NCCL's NVLSTree) the k-th member of
/// each domain all-reduces its 1/k shard over a double binary tree of the domains.
void add_nvls(ClusterFlows& net, const std::vector<std::int64_t>& members, double bytes, std::vector<FlowSpec>& out);

/// The flows of a hierarchical all-reduce: a ring inside each NVLink domain (reduce-scatter, then
/// all-gather) and a ring across the domains through each domain's k-th member for its shard.
void add_hierarchical(ClusterFlows& net, const spec::Cluster& c, const std::vector<std::int64_t>& members,
                      double bytes, std::vector<FlowSpec>& out);

/// The flows of one ring collective over `members` (ascending global ranks) moving `bytes` per
/// rank: NCCL's channels, one ring per NIC a host's members reach, each ring rotated so it leaves
/// every host through the next NIC (NCCL graph/rings.cc connects rings rail to rail).
void add_ring(ClusterFlows& net, const spec::Cluster& c, const std::vector<std::int64_t>& members, double bytes,
              std::vector<FlowSpec>& out);

}  // namespace dtsim::network
