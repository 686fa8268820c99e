#pragma once
// One simulated optimizer step: build the op graph, run it, and derive the headline numbers.
#include <cstdint>
#include <vector>

#include "cost/memory.h"
#include "engine/network.h"
#include "engine/simulator.h"
#include "schedule/step.h"

namespace dtsim::engine {

/// What `dtsim simulate` reports.
struct StepResult {
  Seconds step_time;
  std::array<Seconds, schedule::kCategories> breakdown{};  ///< sums to step_time
  std::int64_t critical_stage = 0;
  double tokens_per_s = 0;
  double model_tflops_per_gpu = 0;  ///< Megatron-LM model FLOPs / step time / GPUs
  double mfu = 0;                   ///< vs the dense peak of the training precision
  double hfu = 0;                   ///< counting recompute FLOPs too
  double pace = 1;                  ///< kernel-time multiplier of the job's slowest GPU (cost::slowest_gpu_pace)
  std::int64_t microbatches = 0;
  std::size_t tasks = 0;
};

/// A run with its graph and timeline (for traces).
struct Simulation {
  schedule::StepGraph step;
  Timeline timeline;
  StepResult result;
};

/// Storage reused by repeated simulations on one thread (the planner keeps one per worker).
struct Workspace {
  schedule::StepGraph step;
  Timeline timeline;
};

/// Simulates one step into `ws` (graph and timeline stay there) and returns its figures.
[[nodiscard]] StepResult simulate_into(const schedule::StepSpec& s, const NetworkBackend& net, Workspace& ws);

/// The figures of a step whose graph and timeline are in `ws` (however the timeline was run).
[[nodiscard]] StepResult summarize(const schedule::StepSpec& s, const Workspace& ws);

/// Simulates one step of `s` with `net` pricing collectives.
[[nodiscard]] Simulation simulate_step(const schedule::StepSpec& s, const NetworkBackend& net);

/// Like simulate_step().result, but when the step has more than `max_microbatches`
/// micro-batches it simulates two shorter steps (m1 and m2 micro-batches, both past the
/// pipeline's warm-up, multiples of pp for the interleaved schedule) and extrapolates each
/// breakdown category linearly: in 1F1B and interleaved 1F1B every extra micro-batch in steady
/// state adds the same work to the critical stage, so step time is affine in m there
/// (tests/engine/estimate_test.cc checks it against exact runs). The planner uses this.
[[nodiscard]] StepResult estimate_step(const schedule::StepSpec& s, const NetworkBackend& net,
                                       std::int64_t max_microbatches, Workspace& ws);
/// estimate_step with a temporary workspace.
[[nodiscard]] StepResult estimate_step(const schedule::StepSpec& s, const NetworkBackend& net,
                                       std::int64_t max_microbatches);

}  // namespace dtsim::engine
