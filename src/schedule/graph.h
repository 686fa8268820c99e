#pragma once
// The op graph of one training step: streams of representative ranks, tasks with
// dependencies, and the categories step time splits into. Built by the schedule, run by the engine.
#include <array>
#include <initializer_list>
#include <span>
#include <stdexcept>
#include <cstdint>
#include <string>
#include <vector>

#include "core/sim_time.h"
#include "core/units.h"
#include "spec/calibration.h"
#include "topology/placement.h"

namespace dtsim::schedule {

/// Where step time goes (DESIGN.md: the `breakdown` of `dtsim simulate`).
enum class Category : std::uint8_t {
  compute, recompute, tp_comm, cp_comm, ep_comm, pp_comm, pp_bubble, dp_comm_exposed, optimizer, host, other
};
inline constexpr std::size_t kCategories = 11;
[[nodiscard]] const char* to_string(Category c);

/// Communication a pass's busy time includes (the exposed part of its TP, CP and EP collectives
/// and of ZeRO-3's per-layer gathers): the event-driven engine can hand it to a network that
/// replays it (engine::Transfers::carries_pass_comm).
[[nodiscard]] constexpr bool pass_comm(Category c) {
  return c == Category::tp_comm || c == Category::cp_comm || c == Category::ep_comm || c == Category::dp_comm_exposed;
}

/// Seconds (as clock ticks) per category.
using Breakdown = std::array<SimTime, kCategories>;

using TaskId = std::int32_t;
using StreamId = std::int32_t;

/// Part of a task's busy time, by category.
struct Segment {
  Category category = Category::compute;
  SimTime duration = 0;
};

/// What a task is for the overlap model.
enum class TaskKind : std::uint8_t {
  compute,  ///< runs on the SMs; slowed while communication kernels run beside it
  comm,     ///< a communication kernel (slows concurrent compute)
  marker    ///< zero-cost synchronisation point
};

/// Which communicator a collective runs on: topology::GroupKind, the one group enum of every layer.
using Group = topology::GroupKind;

/// A collective the engine's network backend prices (nccl-tests size convention). Its operation is
/// spec::Collective, the one collective enum of every layer (calibration tables, cost, network).
struct Comm {
  using Op = spec::Collective;
  Op op = Op::all_reduce;
  Group group = Group::dp;
  Bytes size;
};

/// Prices collectives; the engine's network backends implement it.
class CommPricer {
 public:
  virtual ~CommPricer() = default;
  /// Time of `comm` on the group it names.
  [[nodiscard]] virtual Seconds time(const Comm& comm) const = 0;
};

/// What a task is, for traces and reports; the text is built only when asked for.
struct Label {
  enum class Kind : std::uint8_t {
    forward, backward, send_activations, send_gradients, grad_bucket, grad_reduce, param_gather,
    tied_embedding, grad_norm, optimizer, step_end, other
  };
  Kind kind = Kind::other;
  std::int32_t chunk = -1;
  std::int32_t microbatch = -1;
  std::int32_t part = -1;
};
/// "F chunk 0 mb 3", "grad bucket 2", ...
[[nodiscard]] std::string to_string(const Label& l);

/// Index of an interned list of segments (a pass's busy time by category); -1 = none.
using CostId = std::int32_t;
/// Index of an interned collective; -1 = none.
using CommId = std::int32_t;

/// One unit of work on one stream. A task starts when its stream's previous task and all its
/// dependencies have finished; streams run their tasks in the order they were added.
struct Task {
  StreamId stream = 0;
  TaskKind kind = TaskKind::compute;
  CostId cost = -1;                   ///< busy time by category (compute tasks, markers)
  /// For comm tasks: the collective the network backend prices (Graph::comm); its time goes to
  /// `comm_category`.
  CommId comm = -1;
  Category comm_category = Category::dp_comm_exposed;
  /// How idle time on a stream is called when it waits for this task: pp_comm (a p2p transfer;
  /// the remainder of the wait is pp_bubble), dp_comm_exposed, pp_bubble, ...
  Category wait_category = Category::pp_bubble;
  Label label;
};

/// A stream of one representative rank (compute, or one NCCL communicator's stream).
struct Stream {
  std::int32_t rank = 0;
  std::string name;
};

/// Streams, tasks in issue order, their dependencies and interned costs. Tasks may only
/// depend on tasks added before them. Flat storage: building a step allocates O(1) times per task.
class Graph {
 public:
  /// Adds a stream for `rank`; returns its id.
  StreamId add_stream(std::int32_t rank, std::string name);
  /// Interns a list of segments (one per distinct pass); returns its id.
  CostId add_cost(std::span<const Segment> segments);
  CostId add_cost(std::initializer_list<Segment> segments) {
    return add_cost(std::span<const Segment>(segments.begin(), segments.size()));
  }
  /// Interns a collective; the same op, group and size gives the same id.
  CommId add_comm(const Comm& c);
  /// The collective `id` names.
  [[nodiscard]] const Comm& comm(CommId id) const { return comms_[static_cast<std::size_t>(id)]; }
  /// Number of distinct collectives.
  [[nodiscard]] std::size_t comm_count() const { return comms_.size(); }
  /// Appends a task to its stream; throws std::logic_error on a dependency not yet added.
  TaskId add_task(const Task& task, std::span<const TaskId> deps = {});
  TaskId add_task(const Task& task, std::initializer_list<TaskId> deps) {
    return add_task(task, std::span<const TaskId>(deps.begin(), deps.size()));
  }
  /// Appends a default task on `stream` and returns it to be filled in place (no copy: the
  /// builder's hot path). Same checks as add_task; the cost id is checked by the simulator.
  Task& emplace_task(StreamId stream, std::span<const TaskId> deps);
  /// Id of the task emplace_task returned last.
  [[nodiscard]] TaskId last_task() const { return static_cast<TaskId>(tasks_.size()) - 1; }
  /// Empties the graph, keeping its storage for the next build.
  void clear();
  /// Reserves room for `tasks` tasks and `deps` dependency edges.
  void reserve(std::size_t tasks, std::size_t deps);

  [[nodiscard]] const std::vector<Task>& tasks() const { return tasks_; }
  [[nodiscard]] const std::vector<Stream>& streams() const { return streams_; }
  /// The last task added to stream `s`, -1 if none.
  [[nodiscard]] TaskId last_task_on(StreamId s) const { return stream_last_[static_cast<std::size_t>(s)]; }
  /// Dependencies of task `t`.
  [[nodiscard]] std::span<const TaskId> deps(TaskId t) const;
  /// Busy segments of a task (empty for comm tasks and markers without a cost).
  [[nodiscard]] std::span<const Segment> segments(const Task& t) const;
  /// The segments of interned cost `id` (empty for -1); valid until the next add_cost.
  [[nodiscard]] std::span<const Segment> segments(CostId id) const;
  /// Sum of a task's segments.
  [[nodiscard]] SimTime duration(const Task& t) const {
    return t.cost < 0 ? 0 : cost_total_[static_cast<std::size_t>(t.cost)];
  }

 private:
  std::vector<Stream> streams_;
  std::vector<TaskId> stream_last_;
  std::vector<Task> tasks_;
  std::vector<std::int32_t> dep_begin_;  ///< tasks_.size() + 1 offsets into dep_pool_
  std::vector<TaskId> dep_pool_;
  std::vector<Comm> comms_;
  std::vector<Segment> segment_pool_;
  std::vector<std::int32_t> cost_begin_{0};  ///< costs + 1 offsets into segment_pool_
  std::vector<SimTime> cost_total_;
};

// Inline: the builder and the simulator call these once per task.
inline Task& Graph::emplace_task(StreamId stream_id, std::span<const TaskId> deps) {
  auto id = static_cast<TaskId>(tasks_.size());
  if (stream_id < 0 || stream_id >= static_cast<StreamId>(streams_.size())) throw std::logic_error("schedule: unknown stream");
  if (dep_begin_.empty()) dep_begin_.push_back(0);
  // One element at a time: deps are one to three ids, and a range insert costs a memcpy call.
  for (TaskId d : deps) {
    if (d < 0 || d >= id) {
      dep_pool_.resize(static_cast<std::size_t>(dep_begin_.back()));  // leave the graph as it was
      throw std::logic_error("schedule: dependency on a task not yet added");
    }
    dep_pool_.push_back(d);
  }
  stream_last_[static_cast<std::size_t>(stream_id)] = id;
  dep_begin_.push_back(static_cast<std::int32_t>(dep_pool_.size()));
  Task& t = tasks_.emplace_back();
  t.stream = stream_id;
  return t;
}

inline std::span<const TaskId> Graph::deps(TaskId t) const {
  auto i = static_cast<std::size_t>(t);
  return {dep_pool_.data() + dep_begin_[i], static_cast<std::size_t>(dep_begin_[i + 1] - dep_begin_[i])};
}

}  // namespace dtsim::schedule
