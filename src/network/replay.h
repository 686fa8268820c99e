#pragma once
// The step replayed on SimGrid by the event-driven engine: every communication task of the op
// graph (gradient reductions and parameter gathers, pipeline sends, the tied-embedding sync)
// becomes the flows its collective sends -- for every group of its kind in the task's pipeline
// stage at once, since the graph's representative rank stands for all ranks of its stage -- and
// transfers that overlap in time share links max-min, whatever their kind: a pipeline send and a
// data-parallel all-reduce on the same NIC slow each other. Communication folded into pass
// durations (TP, CP, EP) keeps the price the graph was built with.
#include <cstdint>

#include "engine/simulator.h"
#include "schedule/step.h"
#include "spec/calibration.h"
#include "spec/cluster.h"
#include "spec/job.h"

namespace dtsim::network {

struct ReplayStats {
  std::int64_t transfers = 0;  ///< comm tasks replayed as flows
  std::int64_t flows = 0;      ///< SimGrid flows started
  std::int64_t events = 0;     ///< engine events
};

/// Runs `step` on SimGrid into `out` (its timeline). Each transfer's flows are scaled so that one
/// group alone on the cluster made non-blocking takes the analytical time of its collective there
/// (alpha-beta terms and calibration kept); on the real fabric, and beside other transfers, it
/// takes what SimGrid finds. Collectives without a flow model (broadcasts, the model-wide
/// grad-norm sync) take their analytical time. One SimGrid engine per process: the replay runs in
/// a child process. Throws std::runtime_error when it fails.
void replay_step(const schedule::StepGraph& step, const spec::Cluster& c, const spec::Parallel& par,
                 const spec::CollectiveCalibration& cal, double overlap_slowdown, engine::Timeline& out,
                 ReplayStats* stats = nullptr);

}  // namespace dtsim::network
