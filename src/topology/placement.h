#pragma once
// Rank placement in Megatron-LM order and the shape of each kind of parallel group on the
// cluster: how many ranks, how many per node, how many nodes, how high in the fat tree, and how
// many concurrently talking GPUs share one NIC.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "spec/cluster.h"
#include "spec/job.h"

namespace dtsim::topology {

/// The kinds of communicator a training job uses -- the one group enum of every layer (the op
/// graph's schedule::Group is this type). dp_cp is the combined data x context group that gradient
/// reduction and ZeRO sharding use; pp is the point-to-point neighbour pair; pp_ends the first and
/// last stage (the tied embedding's gradient); model the model-parallel ranks tp x pp (the
/// gradient-norm sync); edp the expert-data-parallel ranks that hold the same experts and reduce
/// their gradients (Megatron-Core parallel_state expert_data_parallel_group: within a pipeline
/// stage the tp*cp*dp ranks fold as etp fastest, then ep, then edp, so an edp group strides
/// etp*ep ranks; without experts it is dp_cp). stage is every rank of one pipeline stage, tp x cp x
/// dp (Megatron-Core's amax-reduction group for fp8 delayed scaling, parallel_state.py).
enum class GroupKind { tp, cp, dp, dp_cp, ep, pp, pp_ends, model, edp, stage };
/// How many GroupKinds there are (arrays indexed by kind).
inline constexpr std::size_t kGroupKinds = 10;

/// Position of one rank along each parallel dimension (ep is derived from cp and dp).
struct RankCoord {
  std::int64_t tp = 0;
  std::int64_t cp = 0;
  std::int64_t dp = 0;
  std::int64_t pp = 0;
  bool operator==(const RankCoord&) const = default;
};

/// What one group of a kind looks like on the cluster. Every group of a kind runs its
/// collective at the same time (all DP groups reduce gradients together), which is what
/// nic_sharing accounts for.
struct GroupShape {
  std::int64_t ranks = 1;           ///< members of the group
  std::int64_t ranks_per_node = 1;  ///< members on one node (fewest, when uneven: the NIC bottleneck)
  std::int64_t nodes = 1;           ///< nodes the group touches
  int fabric_levels = 0;            ///< fat-tree levels its traffic climbs (0 = inside one node)
  std::int64_t nic_sharing = 0;     ///< GPUs talking across nodes that share one NIC (0 if one node)
  bool operator==(const GroupShape&) const = default;
};

/// Name of a group kind ("tp", "cp", "dp", "dp_cp", "ep", "pp").
[[nodiscard]] const char* to_string(GroupKind k);

/// tp*cp*dp*pp: the number of ranks (GPUs) of the job.
[[nodiscard]] std::int64_t world_size(const spec::Parallel& par);

/// Coordinates of `rank` in Megatron-LM order: tp fastest, then cp, then dp, then pp
/// (megatron/core/parallel_state.py, order "tp-cp-ep-dp-pp"). Throws std::out_of_range for a
/// rank outside [0, world_size).
[[nodiscard]] RankCoord rank_coord(const spec::Parallel& par, std::int64_t rank);

/// Inverse of rank_coord: rank = tp + TP*(cp + CP*(dp + DP*pp)).
[[nodiscard]] std::int64_t rank_of(const spec::Parallel& par, const RankCoord& c);

/// Expert-parallel index of `rank`: EP groups are consecutive blocks of ep ranks in the dp*cp
/// index j = cp + CP*dp (stride tp in global ranks). Throws std::invalid_argument when ep does
/// not divide dp*cp.
[[nodiscard]] std::int64_t ep_index(const spec::Parallel& par, std::int64_t rank);

/// Global ranks of the group of `kind` that holds `rank`, in ascending order; for pp the whole
/// pipeline (all stages). Throws like rank_coord and ep_index.
[[nodiscard]] std::vector<std::int64_t> group_members(const spec::Parallel& par, GroupKind kind,
                                                      std::int64_t rank);

/// The distinct groups of `kind` holding ranks first .. last - 1 (each once, ordered by their
/// lowest rank), found in O(ranks): a rank already placed in a group is not asked again.
[[nodiscard]] std::vector<std::vector<std::int64_t>> groups_of(const spec::Parallel& par, GroupKind kind,
                                                              std::int64_t first, std::int64_t last);

/// Shape of the groups of `kind` on cluster `c`, the worst group when they differ. For pp it is
/// the neighbour pair: 2 ranks (1 when pp = 1), crossing nodes iff tp*cp*dp >= gpus_per_node.
/// Throws std::invalid_argument when ep does not divide dp*cp.
[[nodiscard]] GroupShape group_shape(const spec::Cluster& c, const spec::Parallel& par, GroupKind kind);

/// Shape of the pipeline boundary between `stage` and `stage + 1` (ranks of stage s are
/// s*S .. s*S + S-1 with S = tp*cp*dp): crossing nodes when any sender and its receiver sit on
/// different nodes. Throws std::out_of_range unless 0 <= stage < pp - 1.
[[nodiscard]] GroupShape pp_boundary_shape(const spec::Cluster& c, const spec::Parallel& par, std::int64_t stage);

/// One communicator of `ranks` consecutive ranks, `ranks_per_node` of them on each node (as
/// nccl-tests runs): only those GPUs talk, so nic_sharing counts the first `ranks_per_node`
/// local GPUs per NIC. Nodes fill the cluster's NVLink domains evenly (an NVL72 rack holds up to
/// 18 trays), and the shape counts domains as group_shape does: 64 ranks on 16 trays of one rack
/// are one domain of 64 ranks, priced over NVLink. Throws std::invalid_argument unless 1 <= ranks_per_node <=
/// min(ranks, gpus_per_node) and ranks_per_node divides ranks.
[[nodiscard]] GroupShape flat_group_shape(const spec::Cluster& c, std::int64_t ranks, std::int64_t ranks_per_node);

}  // namespace dtsim::topology
