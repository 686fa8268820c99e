#pragma once
// `dtsim plan`: evaluate the pruned space in parallel and rank it.
#include <cstdint>
#include <functional>
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
};

/// Evaluation settings.
struct Options {
  Objective objective = Objective::step_time;
  double price_per_gpu_hour = 0;  ///< dollars, for cost_per_token
  unsigned threads = 0;           ///< 0 = hardware concurrency
  /// Called with (done, total) from worker threads, at most every 1% of progress; may be empty.
  std::function<void(std::size_t, std::size_t)> progress;
};

/// The whole search: the space's bookkeeping plus every evaluated result, best first.
struct Plan {
  Space space;
  std::vector<Result> ranked;
  double seconds = 0;  ///< wall time of enumeration plus evaluation
};

/// Simulates every candidate (each thread owns its network backend and simulator state) and
/// ranks by the objective; ties broken by a fixed order of the layout fields, so the ranking is
/// identical for any thread count.
[[nodiscard]] std::vector<Result> evaluate(const Request& r, const std::vector<Candidate>& cands, const Options& o);

/// enumerate() then evaluate().
[[nodiscard]] Plan plan(const Request& r, const Options& o);

}  // namespace dtsim::plan
