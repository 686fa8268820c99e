#include "schedule/graph.h"

#include <stdexcept>

namespace dtsim::schedule {

const char* to_string(Category c) {
  static constexpr const char* kNames[kCategories] = {"compute",   "recompute", "tp_comm",   "cp_comm",
                                                      "ep_comm",   "pp_comm",   "pp_bubble", "dp_comm_exposed",
                                                      "optimizer", "host", "other"};
  return kNames[static_cast<std::size_t>(c)];
}

std::string to_string(const Label& l) {
  auto cm = [&l] { return "chunk " + std::to_string(l.chunk) + " mb " + std::to_string(l.microbatch); };
  switch (l.kind) {
    case Label::Kind::forward: return "F " + cm() + (l.part >= 0 ? " part " + std::to_string(l.part) : "");
    case Label::Kind::backward: return "B " + cm() + (l.part >= 0 ? " part " + std::to_string(l.part) : "");
    case Label::Kind::send_activations: return "send activations " + cm();
    case Label::Kind::send_gradients: return "send gradients " + cm();
    case Label::Kind::grad_bucket: return "grad bucket " + std::to_string(l.part) + " chunk " + std::to_string(l.chunk);
    case Label::Kind::grad_reduce: return "grad reduce chunk " + std::to_string(l.chunk);
    case Label::Kind::param_gather:
      return "param all-gather " + (l.part >= 0 ? "bucket " + std::to_string(l.part) + " " : std::string()) + "chunk " +
             std::to_string(l.chunk);
    case Label::Kind::tied_embedding: return "tied embedding grad all-reduce";
    case Label::Kind::grad_norm: return "grad norm all-reduce";
    case Label::Kind::optimizer: return "optimizer step";
    case Label::Kind::step_end: return "step end";
    case Label::Kind::other: break;
  }
  return "task";
}

StreamId Graph::add_stream(std::int32_t rank, std::string name) {
  streams_.push_back(Stream{rank, std::move(name)});
  stream_last_.push_back(-1);
  return static_cast<StreamId>(streams_.size() - 1);
}

CostId Graph::add_cost(std::span<const Segment> segments) {
  SimTime total = 0;
  for (const Segment& s : segments) total += s.duration;
  segment_pool_.insert(segment_pool_.end(), segments.begin(), segments.end());
  cost_begin_.push_back(static_cast<std::int32_t>(segment_pool_.size()));
  cost_total_.push_back(total);
  return static_cast<CostId>(cost_total_.size() - 1);
}

CommId Graph::add_comm(const Comm& c) {
  for (std::size_t i = 0; i < comms_.size(); ++i)
    if (comms_[i].op == c.op && comms_[i].group == c.group && comms_[i].size == c.size) return static_cast<CommId>(i);
  comms_.push_back(c);
  return static_cast<CommId>(comms_.size() - 1);
}

void Graph::clear() {
  comms_.clear();
  streams_.clear();
  stream_last_.clear();
  tasks_.clear();
  dep_begin_.clear();
  dep_pool_.clear();
  segment_pool_.clear();
  cost_begin_.assign(1, 0);
  cost_total_.clear();
}

void Graph::reserve(std::size_t tasks, std::size_t deps) {
  tasks_.reserve(tasks);
  dep_begin_.reserve(tasks + 1);
  dep_pool_.reserve(deps);
}

TaskId Graph::add_task(const Task& task, std::span<const TaskId> deps) {
  if (task.cost >= static_cast<CostId>(cost_total_.size())) throw std::logic_error("schedule: unknown cost id");
  emplace_task(task.stream, deps) = task;
  return last_task();
}

std::span<const Segment> Graph::segments(const Task& t) const { return segments(t.cost); }

std::span<const Segment> Graph::segments(CostId id) const {
  if (id < 0) return {};
  auto c = static_cast<std::size_t>(id);
  return {segment_pool_.data() + cost_begin_[c], static_cast<std::size_t>(cost_begin_[c + 1] - cost_begin_[c])};
}

}  // namespace dtsim::schedule
