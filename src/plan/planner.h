#pragma once
// `dtsim plan`: evaluate the pruned space in parallel and rank it.
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "engine/simulate.h"
#include "plan/space.h"

namespace dtsim::plan {

/// What to minimise.
enum class Objective { step_time, cost_per_token };

/// One simulated configuration.
struct Result {
  Candidate config;
  engine::StepResult step;
  Bytes peak_memory;
  Bytes capacity;
  double objective = 0;  ///< seconds per step, or dollars per million tokens
  std::int64_t candidate = -1;  ///< index of `config` in the Space's candidates
};

/// Evaluation settings.
struct Options {
  Objective objective = Objective::step_time;
  double price_per_gpu_hour = 0;  ///< dollars, for cost_per_token
  unsigned threads = 0;           ///< 0 = hardware concurrency
  /// Called with (done, total) from worker threads, at most every 1% of progress; may be empty.
  std::function<void(std::size_t, std::size_t)> progress;
  /// Evaluate only candidates whose index i has i mod shards == shard (a partial result that
  /// merge() completes; `dtsim plan --shard`).
  std::int64_t shard = 0, shards = 1;
  /// Record the wall time in Plan::seconds (off: reports without timing, byte-reproducible).
  bool timed = true;
};

/// The whole search: the space's bookkeeping plus every evaluated result, best first.
struct Plan {
  Space space;
  std::vector<Result> ranked;
  std::optional<double> seconds;  ///< wall time of enumeration plus evaluation, when timed
};

/// Simulates every candidate (each thread owns its network backend and simulator state) and
/// ranks by the objective; ties broken by peak memory, then a fixed order of the layout fields, so the ranking is
/// identical for any thread count.
[[nodiscard]] std::vector<Result> evaluate(const Request& r, const std::vector<Candidate>& cands, const Options& o);

/// Sorts results best first: by objective, ties by peak memory (less first), then by a fixed
/// order of the layout fields.
void rank(std::vector<Result>& results);

/// enumerate() then evaluate() (of the options' shard).
[[nodiscard]] Plan plan(const Request& r, const Options& o);

/// The plan of all shards: `results` of shards 0..N-1 of the same request, their `candidate`
/// indices into enumerate(r)'s candidates (config and all). Throws std::invalid_argument for an
/// index out of range or seen twice; the caller checks the shards' provenance.
[[nodiscard]] Plan merge(const Request& r, std::vector<Result> results);

}  // namespace dtsim::plan
