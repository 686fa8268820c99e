#pragma once
// The op graph of one optimizer step: one representative rank per pipeline stage (all
// data-parallel replicas and tensor/context-parallel peers behave alike, DESIGN.md "Scale by
// symmetry"), each with a compute stream and the communication streams NCCL would use.
#include <cstdint>
#include <vector>

#include "cost/partition.h"
#include "schedule/graph.h"
#include "schedule/pass_cost.h"
#include "schedule/pipeline_order.h"

namespace dtsim::schedule {

/// Scratch arrays of the builder, kept with the graph so repeated builds reuse their storage.
struct BuildScratch {
  std::vector<StageOrder> order;
  /// One pass of a stage's order: what it is, its neighbours of the same direction (-1 = none),
  /// its (last) compute task and the transfer of its output once added (-1 = not yet), and the
  /// passes its pipeline transfers connect it to. One record: the builder reads them together.
  /// Slot indices (`input`, `receiver_post`, `pending`) are stage-major indices into `slots`.
  struct Slot {
    std::int32_t chunk = 0, microbatch = 0, prev_same = -1, next_same = -1;
    TaskId task = -1;
    TaskId send = -1;
    /// The pass whose output this pass consumes, -1 = none (first or last virtual stage).
    std::int32_t input = -1;
    /// Where the receiver of this pass's output posts its recv, -1 = before its first pass (no wait).
    std::int32_t receiver_post = -1;
    /// Producers added before this pass whose receiver posts here: their transfer is added with it.
    std::int32_t pending[2] = {-1, -1};
    bool forward = true;
    bool output = false;  ///< this pass's output goes to another stage
  };
  std::vector<Slot> slots;         ///< stage-major: each stage's passes in issue order
  std::vector<std::int32_t> pos;   ///< stage-major: position of (direction, chunk, micro-batch) in its stage's order
  std::vector<std::vector<TaskId>> grad_done;
  std::vector<std::int64_t> cursor;
};

/// The graph plus what the simulator's caller needs to read results.
struct StepGraph {
  Graph graph;
  std::vector<StreamId> compute;  ///< compute stream of each stage
  std::vector<TaskId> end;        ///< step-end marker of each stage
  std::vector<LayerCost> layer;   ///< per-layer cost (identical for every stage; kept for reports)
  cost::LayerPartition partition;  ///< layers of each stage's chunks
  BuildScratch scratch;           ///< builder storage, reused by the next build
};

/// Builds the step for `s`. Throws std::logic_error on an internal inconsistency.
[[nodiscard]] StepGraph build_step(const StepSpec& s, const CommPricer& net);
/// Same, into `out`, reusing its storage (the planner builds thousands of steps per thread).
void build_step(const StepSpec& s, const CommPricer& net, StepGraph& out);

}  // namespace dtsim::schedule
