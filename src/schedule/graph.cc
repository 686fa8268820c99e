#include "schedule/graph.h"

#include <stdexcept>

namespace dtsim::schedule {

const char* to_string(Category c) {
  static constexpr const char* kNames[kCategories] = {"compute",   "recompute", "tp_comm",   "cp_comm",
                                                      "ep_comm",   "pp_comm",   "pp_bubble", "dp_comm_exposed",
                                                      "optimizer", "other"};
  return kNames[static_cast<std::size_t>(c)];
}

SimTime Task::duration() const {
  SimTime d = 0;
  for (const Segment& s : segments) d += s.duration;
  return d;
}

StreamId Graph::add_stream(std::int32_t rank, std::string name) {
  streams_.push_back(Stream{rank, std::move(name)});
  order_.emplace_back();
  return static_cast<StreamId>(streams_.size() - 1);
}

TaskId Graph::add_task(Task task) {
  auto id = static_cast<TaskId>(tasks_.size());
  for (TaskId d : task.deps) {
    if (d < 0 || d >= id) throw std::logic_error("schedule: dependency on a task not yet added");
  }
  auto& stream = order_.at(static_cast<std::size_t>(task.stream));
  position_.push_back(static_cast<std::int32_t>(stream.size()));
  stream.push_back(id);
  tasks_.push_back(std::move(task));
  return id;
}

}  // namespace dtsim::schedule
