#pragma once
// The op graph of one optimizer step: one representative rank per pipeline stage (all
// data-parallel replicas and tensor/context-parallel peers behave alike, DESIGN.md "Scale by
// symmetry"), each with a compute stream and the communication streams NCCL would use.
#include <cstdint>
#include <vector>

#include "schedule/graph.h"
#include "schedule/pass_cost.h"
#include "schedule/pipeline_order.h"

namespace dtsim::schedule {

/// Scratch arrays of the builder, kept with the graph so repeated builds reuse their storage.
struct BuildScratch {
  std::vector<TaskId> sends;  ///< per (direction, virtual stage, micro-batch): the p2p transfer, -1 = not yet
  std::vector<StageOrder> order;
  /// One pass of a stage's order: what it is, its neighbours of the same direction (-1 = none)
  /// and its (last) compute task once added (-1 = not yet). Kept in one record: the builder
  /// reads them together.
  struct Slot {
    std::int32_t chunk = 0, microbatch = 0, prev_same = -1, next_same = -1;
    TaskId task = -1;
    /// Transfers whose producer was added before this pass, their receiver's post point:
    /// (stage, position) of each producer, added once this pass is.
    std::int32_t pending_stage[2] = {-1, -1}, pending_pos[2] = {-1, -1};
    /// Where the receiver of this pass's output posts its recv: a position on the receiver's
    /// stage, -1 = before its first pass (no wait).
    std::int32_t receiver_post = -1;
    bool forward = true;
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
  std::vector<std::int64_t> stage_layers;
  BuildScratch scratch;           ///< builder storage, reused by the next build
};

/// Builds the step for `s`. Throws std::logic_error on an internal inconsistency.
[[nodiscard]] StepGraph build_step(const StepSpec& s, const CommPricer& net);
/// Same, into `out`, reusing its storage (the planner builds thousands of steps per thread).
void build_step(const StepSpec& s, const CommPricer& net, StepGraph& out);

}  // namespace dtsim::schedule
