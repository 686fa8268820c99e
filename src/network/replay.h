#pragma once
// The step replayed on SimGrid by the event-driven engine. Every communication of the op graph
// becomes the flows its collective sends -- for every group of its kind in the task's pipeline
// stage at once, since the graph's representative rank stands for all ranks of its stage:
//  - communication tasks (gradient reductions and parameter gathers, pipeline sends, the
//    tied-embedding sync) as one transfer each;
//  - the communication a pass's busy time includes (the exposed part of its TP, CP and EP
//    collectives, ZeRO-3's per-layer gathers) as a transfer after its compute, one phase per kind.
// Transfers that overlap in time share links max-min, whatever their kind: a pipeline send and a
// data-parallel all-reduce on the same NIC slow each other, and so do an expert all-to-all and a
// gradient reduce-scatter.
#include <cstdint>

#include "cost/collective.h"
#include "engine/analytical.h"
#include "engine/simulate.h"
#include "schedule/step.h"
#include "spec/calibration.h"
#include "spec/cluster.h"
#include "spec/job.h"

namespace dtsim::network {

struct ReplayStats {
  std::int64_t transfers = 0;  ///< transfers with flows (comm tasks and passes' communication)
  std::int64_t flows = 0;      ///< SimGrid flows started
  std::int64_t events = 0;     ///< engine events
  std::int64_t rounds = 0;     ///< the most rounds a pass's communication ran in (see kMaxPassRounds)
};

/// Prices collectives as the analytical model does on the cluster made non-blocking (every
/// fabric level 1:1): what one group takes alone, the reference the replay scales flows to.
class NonBlockingPricer final : public engine::NetworkBackend {
 public:
  NonBlockingPricer(const spec::Cluster& c, const spec::Parallel& par, const spec::CollectiveCalibration& cal);
  NonBlockingPricer(const NonBlockingPricer&) = delete;
  NonBlockingPricer& operator=(const NonBlockingPricer&) = delete;
  [[nodiscard]] Seconds time(const schedule::Comm& comm) const override { return analytical_.time(comm); }
  /// The algorithm and protocol the analytical model picks for `comm` (its group's shape).
  [[nodiscard]] cost::CollectiveEstimate estimate(const schedule::Comm& comm) const;

 private:
  spec::Cluster flat_;
  const spec::CollectiveCalibration& cal_;
  engine::AnalyticalNetwork analytical_;
};

/// The most flows a replay starts, about a minute of SimGrid at 3 us per ring or p2p flow (Llama
/// 3.1 405B on 2,048 H100s starts 2 million in about 6 s); a larger step (DeepSeek-V3 on 1,024
/// H100s, EP 64 in every pass of 8,192) is refused rather than run for many minutes.
inline constexpr double kMaxReplayFlows = 20e6;
/// The most rounds a pass's communication is replayed in. Each layer of a chunk issues its own
/// collectives after its own compute, so a pass runs as rounds of (compute slice, that slice's
/// share of each communication phase); every round is a flow set of its own, which costs
/// SimGrid its flows again. Up to 8 rounds put each layer's traffic within an eighth of the pass
/// of where it is issued, for at most 8 times the flows of one round; a step whose flows would
/// exceed kMaxReplayFlows gets 4, 2 or 1 rounds instead (Qwen3-235B-A22B, EP 16 on
/// 256 GB300s, 23 layers per chunk, measured here: 0.50 million flows in 4.2 s as one round, 1.49
/// million in 11.5 s as 8, 3.67 million in 44 s as 23; the same step time each).
inline constexpr std::int64_t kMaxPassRounds = 8;
/// An all-to-all flow shares its ports with more flows and costs SimGrid's solver more: measured
/// on this project's machine 7.8-9.6 us per flow (Qwen3-235B-A22B, EP 16 on 256 GB300s: 3.2
/// million in 31 s; EP 32 on 256 H100s: 4.6 million in 36 s) against 3 us for ring and p2p flows.
inline constexpr double kAllToAllFlowCost = 3;

/// Runs `step` (built with a NonBlockingPricer) on SimGrid into `out` (`cotenant_gpus` as replay). Each transfer's flows are
/// scaled so that one group alone on the non-blocking cluster takes the analytical time of its
/// collective there (alpha-beta terms and calibration kept); on the real fabric, and beside other
/// transfers, it takes what SimGrid finds. Collectives without a flow model (broadcasts, the
/// model-wide grad-norm sync) take their analytical time. One SimGrid engine per process: the
/// replay runs in a child process. Throws SpecError naming --engine above kMaxReplayFlows,
/// std::runtime_error when the child fails.
/// `max_flows`: the flow budget (tests use small ones).
void replay_step(const schedule::StepGraph& step, const spec::Cluster& c, const spec::Parallel& par,
                 const spec::CollectiveCalibration& cal, double overlap_slowdown, engine::Timeline& out,
                 ReplayStats* stats = nullptr, std::int64_t cotenant_gpus = 0, double max_flows = kMaxReplayFlows);

/// Builds the step of `s` with a NonBlockingPricer into `ws`, replays it and returns its figures.
/// `cotenant_gpus` (> 1): another job all-reducing over that many GPUs on the hosts after this
/// one's, its ring flows loading the fabric all step.
[[nodiscard]] engine::StepResult replay(const schedule::StepSpec& s, engine::Workspace& ws,
                                        ReplayStats* stats = nullptr, std::int64_t cotenant_gpus = 0);

}  // namespace dtsim::network
