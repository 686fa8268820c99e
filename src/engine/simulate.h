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
  std::int64_t microbatches = 0;
  std::size_t tasks = 0;
};

/// A run with its graph and timeline (for traces).
struct Simulation {
  schedule::StepGraph step;
  Timeline timeline;
  StepResult result;
};

/// Simulates one step of `s` with `net` pricing collectives.
[[nodiscard]] Simulation simulate_step(const schedule::StepSpec& s, const NetworkBackend& net);

}  // namespace dtsim::engine
