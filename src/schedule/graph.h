#pragma once
// The op graph of one training step: streams of representative ranks, tasks with
// dependencies, and the categories step time splits into. Built by the schedule, run by the engine.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/sim_time.h"
#include "core/units.h"

namespace dtsim::schedule {

/// Where step time goes (DESIGN.md: the `breakdown` of `dtsim simulate`).
enum class Category {
  compute, recompute, tp_comm, cp_comm, ep_comm, pp_comm, pp_bubble, dp_comm_exposed, optimizer, other
};
inline constexpr std::size_t kCategories = 10;
[[nodiscard]] const char* to_string(Category c);

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
enum class TaskKind {
  compute,  ///< runs on the SMs; slowed while communication kernels run beside it
  comm,     ///< a communication kernel (slows concurrent compute)
  marker    ///< zero-cost synchronisation point
};

/// Which communicator a collective runs on (the group kinds of topology::placement).
enum class Group { tp, cp, dp, dp_cp, ep, pp, pp_ends, model };

/// A collective the engine's network backend prices (nccl-tests size convention).
struct Comm {
  enum class Op { all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv } op = Op::all_reduce;
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

/// One unit of work on one stream. A task starts when its stream's previous task and all its
/// dependencies have finished; streams run their tasks in the order they were added.
struct Task {
  StreamId stream = 0;
  TaskKind kind = TaskKind::compute;
  std::vector<Segment> segments;      ///< busy time by category (compute tasks, markers)
  /// For comm tasks: what the network backend prices; the task's time goes to `comm_category`.
  Comm comm;
  Category comm_category = Category::dp_comm_exposed;
  std::vector<TaskId> deps;
  /// How idle time on a stream is called when it waits for this task: pp_comm (a p2p transfer;
  /// the remainder of the wait is pp_bubble), dp_comm_exposed, pp_bubble, ...
  Category wait_category = Category::pp_bubble;
  std::string name;                   ///< for traces: layer, micro-batch, collective
  [[nodiscard]] SimTime duration() const;
};

/// A stream of one representative rank (compute, or one NCCL communicator's stream).
struct Stream {
  std::int32_t rank = 0;
  std::string name;
};

/// Streams and tasks in issue order. Tasks may only depend on tasks added before them.
class Graph {
 public:
  /// Adds a stream for `rank`; returns its id.
  StreamId add_stream(std::int32_t rank, std::string name);
  /// Appends a task to its stream; throws std::logic_error on a dependency not yet added.
  TaskId add_task(Task task);
  [[nodiscard]] const std::vector<Task>& tasks() const { return tasks_; }
  [[nodiscard]] const std::vector<Stream>& streams() const { return streams_; }
  /// Tasks of stream `s` in issue order.
  [[nodiscard]] const std::vector<TaskId>& stream_tasks(StreamId s) const { return order_[static_cast<std::size_t>(s)]; }
  /// Index of task `t` in its stream.
  [[nodiscard]] std::int32_t position(TaskId t) const { return position_[static_cast<std::size_t>(t)]; }

 private:
  std::vector<Stream> streams_;
  std::vector<std::vector<TaskId>> order_;
  std::vector<Task> tasks_;
  std::vector<std::int32_t> position_;
};

}  // namespace dtsim::schedule
