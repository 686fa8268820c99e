#pragma once
// The SimGrid network backend of the step simulator (`simulate --network simgrid`): each
// collective keeps the analytical model's algorithm and calibration on the cluster made
// non-blocking, and SimGrid measures how much the real fabric and the job's concurrent traffic
// slow it -- every group of the collective's kind runs its ring at once over the cluster's links
// (every data-parallel group crossing the spine, not one representative), against one group's ring
// on the non-blocking fabric. On a non-blocking fabric the factor is 1 and the backend equals the
// analytical one; oversubscribed leaves and shared NICs make it larger, never smaller.
#include <map>
#include <tuple>

#include "engine/analytical.h"
#include "network/cluster_flows.h"

namespace dtsim::network {

class SimgridNetwork final : public engine::NetworkBackend {
 public:
  /// `cotenant_gpus`: another job on the hosts after this one's, all-reducing over all its GPUs
  /// without pause (NCCL rings, one per NIC): its flows load the links the two jobs share (a
  /// spine's tapered uplinks; never a non-blocking fabric's). 0: the job is alone.
  SimgridNetwork(const spec::Cluster& c, const spec::Parallel& par, const spec::CollectiveCalibration& cal,
                 std::int64_t cotenant_gpus = 0);
  /// The analytical time of `comm` times its contention factor (rings: all_reduce, all_gather,
  /// reduce_scatter; all_to_all over its groups; pipeline send_recv; broadcasts and the model-wide
  /// grad-norm sync keep the analytical time).
  [[nodiscard]] Seconds time(const schedule::Comm& comm) const override;
  /// contended / alone for a ring of `op` over every group of `g` at once (1 for a one-rank group).
  [[nodiscard]] double contention(schedule::Comm::Op op, schedule::Group g) const;
  /// contended / alone for the pipeline's point-to-point transfers: every rank sending to its
  /// next-stage peer at once on the real fabric, against one crossing pair on the non-blocking one.
  [[nodiscard]] double pipeline_contention() const;
  /// Adds the co-tenant job's flows (ranks after this job's) to `flows`.
  void add_cotenant(ClusterFlows& net, std::vector<FlowSpec>& flows) const;
  /// SimGrid runs so far (each a child process).
  [[nodiscard]] int runs() const { return runs_; }

 private:
  const spec::Cluster& cluster_;
  spec::Cluster flat_;  ///< the cluster with every fabric level at 1:1
  spec::Parallel par_;
  const spec::CollectiveCalibration& cal_;
  std::int64_t cotenant_ = 0;
  engine::AnalyticalNetwork analytical_;
  mutable std::map<std::pair<int, int>, double> factors_;
  mutable int runs_ = 0;
};

}  // namespace dtsim::network
