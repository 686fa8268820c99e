#pragma once
// `dtsim simulate` and `dtsim memory` outputs: a readable table, or one JSON object; and
// Chrome traces (Perfetto) of a simulated step.
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "calibrate/residuals.h"
#include "cost/memory.h"
#include "engine/simulate.h"
#include "spec/calibration.h"
#include "spec/stack.h"
#include "spec/cluster.h"
#include "spec/job.h"
#include "spec/model.h"

namespace dtsim::report {

/// The job as the user asked for it (echoed in every report).
struct JobView {
  const spec::Model* model = nullptr;
  const spec::Cluster* cluster = nullptr;
  std::string calibration;
  std::int64_t gpus = 0;
  spec::Parallel par;
  spec::Training train;
  spec::Software software;
  std::string stack;               ///< the software stack's label, "nemo@24.11"
  double speed_spread = 0;         ///< the calibration's GPU-to-GPU speed spread
  std::vector<std::string> notes;  ///< assumptions and derived values
  std::string network = "analytical";  ///< the backend that priced the collectives
  std::string engine = "longest-path";  ///< the engine that ran the op graph (longest-path or events)
};

/// The busiest expert-parallel rank's tokens over the mean (cost::moe_busiest_rank), and the
/// line that says which routing is assumed.
[[nodiscard]] double moe_busiest_rank_factor(const JobView& job);
[[nodiscard]] std::string moe_routing_text(const JobView& job);

/// "kernels x1.039: the slowest of 128 GPUs (speed_spread 1.5% in dgx-h100)": the pace a job
/// runs at (engine::StepResult::pace) and where it comes from.
[[nodiscard]] std::string pace_text(double pace, std::int64_t gpus, double speed_spread, const std::string& profile);

/// The interval of a predicted step of `step_s` seconds, for one line of text: "8.553-9.712 s:
/// measured -4% / +9% of the prediction on 19 comparable published runs (h100-sxm5-80gb, nemo,
/// 16-bit, 64-2048 GPUs)", or "none: " and why.
[[nodiscard]] std::string uncertainty_text(const calibrate::Uncertainty& u, double step_s);
/// {"low_pct", "high_pct", "runs", "family": {"gpu", "framework", "precision", "gpus_min",
/// "gpus_max"}, "relaxed": [...], "reason"}: null members where there is nothing to say.
[[nodiscard]] nlohmann::json uncertainty_json(const calibrate::Uncertainty& u);

/// Memory of the most loaded GPU as a table, or JSON {parameters, memory: {...}}; with `peak`, the
/// interval of the predicted peak (memory.uncertainty in JSON).
[[nodiscard]] std::string memory_report(const JobView& job, const cost::MemoryEstimate& mem, bool json,
                                        const calibrate::Uncertainty* peak = nullptr);
/// Step time and its interval (`u`), throughput, MFU, memory (with its interval, `peak`) and the
/// breakdown; JSON per DESIGN.md.
[[nodiscard]] std::string simulate_report(const JobView& job, const engine::StepResult& r,
                                          const cost::MemoryEstimate& mem, const calibrate::Uncertainty& u,
                                          bool json, const calibrate::Uncertainty* peak = nullptr);
/// Chrome trace JSON: one process per pipeline stage, one thread per stream.
[[nodiscard]] std::string chrome_trace(const engine::Simulation& sim);

}  // namespace dtsim::report
