#pragma once
// NCCL collective time on a group of GPUs: ring, double binary tree, NVLS (NVLink SHARP) and a
// hierarchical all-reduce, each with the LL / LL128 / Simple protocols, priced in the form of
// NCCL's own tuner (src/graph/tuning.cc) and chosen the way it chooses (fastest predicted).
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/units.h"
#include "spec/calibration.h"
#include "spec/cluster.h"
#include "topology/placement.h"

namespace dtsim::cost {

// The collective kinds and their names live with the calibration that prices them (spec).
using spec::Collective;
using spec::parse_collective;
using spec::to_string;

/// nccl-tests bus-bandwidth factor for `n` ranks (doc/PERFORMANCE.md "Summary"): all_reduce
/// 2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n; broadcast and send_recv 1.
[[nodiscard]] double bus_factor(Collective op, std::int64_t n);

/// One priced way of running a collective.
struct CollectiveEstimate {
  Seconds time;                      ///< predicted duration (0 for one rank or zero bytes)
  spec::CollAlgo algo = spec::CollAlgo::ring;  ///< of the inter-node phase when hierarchical
  spec::Protocol protocol = spec::Protocol::simple;
  bool hierarchical = false;         ///< intra reduce-scatter + inter all-reduce + intra all-gather
  BytesPerSecond bus_bandwidth;      ///< nccl-tests busbw: bus_factor * size / time (0 if time is 0)
  bool operator==(const CollectiveEstimate&) const = default;
};

/// Every (algorithm, protocol) the calibration and cluster allow for `op` on `group`, each
/// priced; `size` follows nccl-tests: all_gather / reduce_scatter the full gathered buffer,
/// all_to_all the per-rank send buffer, send_recv the bytes sent. Empty for one rank.
/// The latency terms of the ring/Simple algorithm for `op` on `group` (base, per-step and hop
/// latencies, no bytes): what a flow-level backend adds to the time its flows take.
[[nodiscard]] Seconds ring_latency(Collective op, const topology::GroupShape& group, const spec::Cluster& cluster,
                                   const spec::CollectiveCalibration& cal);

[[nodiscard]] std::vector<CollectiveEstimate> collective_candidates(Collective op, Bytes size,
                                                                    const topology::GroupShape& group,
                                                                    const spec::Cluster& cluster,
                                                                    const spec::CollectiveCalibration& cal);

/// The fastest candidate, as NCCL's tuner picks (src/enqueue.cc topoGetAlgoInfo). One rank or
/// zero bytes costs nothing. Throws SpecError when the calibration offers no usable entry.
[[nodiscard]] CollectiveEstimate collective_time(Collective op, Bytes size, const topology::GroupShape& group,
                                                 const spec::Cluster& cluster,
                                                 const spec::CollectiveCalibration& cal);

}  // namespace dtsim::cost
