#pragma once
// The analytical network backend: collectives priced by src/cost's NCCL-style alpha-beta
// model on the shape each group takes on the real topology (topology::group_shape).
#include <vector>

#include "engine/network.h"
#include "spec/calibration.h"
#include "spec/cluster.h"
#include "spec/job.h"
#include "topology/placement.h"

namespace dtsim::engine {

/// Prices collectives analytically. Keeps a per-instance cache: use one instance per thread.
class AnalyticalNetwork final : public NetworkBackend {
 public:
  AnalyticalNetwork(const spec::Cluster& c, const spec::Parallel& par, const spec::CollectiveCalibration& cal);
  /// Time of `comm`; zero for a group of one rank.
  [[nodiscard]] Seconds time(const schedule::Comm& comm) const override;
  /// The shape a group kind takes (for reports).
  [[nodiscard]] const topology::GroupShape& shape(schedule::Group g) const;

 private:
  const spec::Cluster& cluster_;
  const spec::CollectiveCalibration& cal_;
  std::array<topology::GroupShape, topology::kGroupKinds> shapes_{};  ///< by GroupKind
  /// A step prices a handful of distinct collectives many times: a flat list beats a map.
  struct Cached {
    schedule::Comm comm;
    Seconds time;
  };
  mutable std::vector<Cached> cache_;
};

}  // namespace dtsim::engine
