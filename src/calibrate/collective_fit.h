#pragma once
// Fitting a profile's collective tables to measured collective times (nccl-tests logs or
// dtsim-bench nccl sweeps): per collective and per link class, least squares on log time over
// the parameters of cost::collective_time, keeping its NCCL-style choice of the fastest
// algorithm and protocol.
#include <cstdint>
#include <string>
#include <vector>

#include "core/units.h"
#include "spec/calibration.h"
#include "spec/cluster.h"

namespace dtsim::calibrate {

/// One measured call of a collective, with nccl-tests' conventions (`bytes` is its size column:
/// the whole buffer for all_gather / reduce_scatter, the per-rank buffer for all_to_all).
struct CollectiveSample {
  spec::Collective op = spec::Collective::all_reduce;
  std::int64_t ranks = 0;
  std::int64_t ranks_per_node = 0;
  double bytes = 0;
  Seconds time;
  std::string source;  ///< "FILE:LINE (out-of-place)" and the like, for reports
};

/// One fitted parameter of one (algorithm, protocol) entry.
struct FittedParam {
  spec::CollAlgo algo = spec::CollAlgo::ring;
  spec::Protocol protocol = spec::Protocol::simple;
  std::string field;         ///< "base_latency_us", "bandwidth_efficiency" or "step_latency_us"
  double before = 0, after = 0;
  bool at_bound = false;     ///< the fit pushed it to a limit (efficiency 1: the links are slower than measured)
};

/// Measured against predicted time of one sample, before and after the fit.
struct SampleFit {
  CollectiveSample sample;
  Seconds before, after;
  spec::CollAlgo algo = spec::CollAlgo::ring;  ///< what the fitted model picks
  spec::Protocol protocol = spec::Protocol::simple;
  bool hierarchical = false;
};

/// The fit of one collective on one link class (one node, or across nodes).
struct ScopeFit {
  spec::Collective op = spec::Collective::all_reduce;
  bool inter_node = false;
  std::vector<FittedParam> params;
  std::vector<SampleFit> samples;
  double rms_log_before = 0, rms_log_after = 0;  ///< root mean square of ln(predicted / measured) time
};

/// The calibration with every fitted table in place, and how each fit went.
struct CollectiveFit {
  spec::CollectiveCalibration calibration;
  std::vector<ScopeFit> scopes;  ///< one-node scopes first, in Collective order, then multi-node ones
};

/// Weight of the pull of each log-parameter towards the base profile's value, relative to one
/// sample's squared log residual: small, so the data decide every entry they can see, and an
/// entry that never wins keeps its base value.
inline constexpr double kPriorWeight = 1e-3;

/// Fits the tables of every (collective, link class) the samples cover, one-node classes first
/// (the multi-node fits then see the fitted NVLink side). Free per entry the collective can use:
/// ln(base_latency) and ln(bandwidth_efficiency) (at most 1); the entries' step latencies scale
/// by one fitted factor only when the samples hold two or more group shapes (on one shape they
/// are indistinguishable from the base latency). Starts from the base profile's shared table
/// (not an earlier fit of the same collective, so a refit reproduces itself), assigns each
/// sample to the entry that wins it and fits each entry to its samples, repeats, then refines
/// all together with Nelder-Mead. Fitted values are rounded to 3 significant digits, as the
/// profile stores them, and the reported times use the rounded values. Throws SpecError naming
/// `flag` when a sample's shape does not fit `cluster` or the base has no entry to fit.
[[nodiscard]] CollectiveFit fit_collectives(const std::vector<CollectiveSample>& samples, const spec::Cluster& cluster,
                                            const spec::CollectiveCalibration& base, const std::string& flag);

/// nccl-tests' bus bandwidth of a sample's size over `t` (doc/PERFORMANCE.md), bytes per second.
[[nodiscard]] double bus_bandwidth(const CollectiveSample& s, Seconds t);

/// Median over samples of at least `min_bytes` of |fitted busbw / measured busbw - 1|, or of
/// the base profile's (`after` false); 0 when no sample is that large.
[[nodiscard]] double median_busbw_error(const ScopeFit& f, double min_bytes, bool after = true);

}  // namespace dtsim::calibrate
