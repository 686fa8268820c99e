#include "network/replay.h"

#include <simgrid/s4u.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <queue>
#include <set>
#include <stdexcept>

#include "engine/analytical.h"
#include "engine/events.h"
#include "network/cluster_flows.h"
#include "network/sg_child.h"
#include "topology/placement.h"

namespace dtsim::network {
namespace {

namespace sg4 = simgrid::s4u;
using schedule::Comm;
using schedule::Graph;
using schedule::Group;
using schedule::Label;
using schedule::Task;
using schedule::TaskId;
using schedule::TaskKind;

struct PlannedFlow {
  std::size_t route = 0;  ///< index into Plan::routes
  double bytes = 0;
};

// What the child replays: distinct routes over the real fabric's links, and per comm task its
// flows (none: a fixed delay) and its time alone on the non-blocking fabric.
struct Plan {
  std::vector<LinkSpec> links;
  std::vector<std::vector<std::size_t>> routes;
  std::vector<std::vector<PlannedFlow>> flows;  ///< by task id
  std::vector<SimTime> alone;                   ///< by task id
};

bool ring_op(Comm::Op op) {
  return op == Comm::Op::all_reduce || op == Comm::Op::all_gather || op == Comm::Op::reduce_scatter;
}

// The groups of `kind` holding the ranks of pipeline stage `stage` (ranks s*S .. s*S + S - 1).
std::set<std::vector<std::int64_t>> stage_groups(const spec::Parallel& par, Group kind, std::int64_t stage) {
  std::int64_t per_stage = par.tp * par.cp * par.dp;
  std::set<std::vector<std::int64_t>> groups;
  for (std::int64_t r = stage * per_stage; r < (stage + 1) * per_stage; ++r) groups.insert(topology::group_members(par, kind, r));
  return groups;
}

class Planner {
 public:
  Planner(const spec::Cluster& c, const spec::Parallel& par, const spec::CollectiveCalibration& cal)
      : c_(c), flat_(non_blocking(c)), par_(par), analytical_(flat_, par, cal) {
    const spec::ProtocolCost& intra = cal.at(spec::Collective::all_reduce, false, spec::CollAlgo::ring, spec::Protocol::simple);
    const spec::ProtocolCost& inter = cal.at(spec::Collective::all_reduce, true, spec::CollAlgo::ring, spec::Protocol::simple);
    intra_ = intra.bandwidth_efficiency;
    inter_ = inter.bandwidth_efficiency;
    real_ = std::make_unique<ClusterFlows>(c_, topology::world_size(par), intra_, inter_);
  }

  Plan plan(const Graph& g) {
    Plan p;
    const auto& tasks = g.tasks();
    p.flows.resize(tasks.size());
    p.alone.assign(tasks.size(), 0);
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const Task& t = tasks[i];
      if (t.kind != TaskKind::comm || t.comm < 0) continue;
      const Comm& comm = g.comm(t.comm);
      SimTime alone = to_sim_time(analytical_.time(comm));
      p.alone[i] = alone;
      if (alone == 0) continue;
      std::int64_t stage = g.streams()[static_cast<std::size_t>(t.stream)].rank;
      int dir = t.label.kind == Label::Kind::send_gradients ? -1 : 1;
      const Unit* u = unit(comm, stage, dir);
      if (u == nullptr) continue;  // a fixed delay
      double scale = to_seconds(alone).value() / u->alone_s;
      for (const PlannedFlow& f : u->flows) p.flows[i].push_back({f.route, f.bytes * scale});
    }
    p.links = real_->links();
    p.routes = routes_;
    return p;
  }

 private:
  // A transfer's flows at 1 GiB per group member, and one group's time alone on the flat fabric.
  struct Unit {
    std::vector<PlannedFlow> flows;
    double alone_s = 0;
  };

  const Unit* unit(const Comm& comm, std::int64_t stage, int dir) {
    auto key = std::make_tuple(static_cast<int>(comm.op), static_cast<int>(comm.group), stage, dir);
    if (auto it = units_.find(key); it != units_.end()) return it->second ? &*it->second : nullptr;
    std::optional<Unit>& slot = units_[key];
    const double gib = 1073741824.0;
    std::vector<FlowSpec> all;
    std::vector<std::int64_t> one;  // the members of one group, for the alone reference
    bool a2a = comm.op == Comm::Op::all_to_all;
    if (comm.op == Comm::Op::send_recv && comm.group == Group::pp) {
      std::int64_t per_stage = par_.tp * par_.cp * par_.dp, peer = stage + dir;
      if (peer < 0 || peer >= par_.pp) return nullptr;
      for (std::int64_t r = stage * per_stage; r < (stage + 1) * per_stage; ++r) {
        std::int64_t to = r + dir * per_stage;
        all.push_back(real_->flow(r, to, gib));
        if (one.empty() || real_->host_of(one[0]) == real_->host_of(one[1])) one = {r, to};
      }
    } else if ((ring_op(comm.op) || a2a) && comm.group != Group::model && comm.group != Group::pp) {
      for (const auto& members : stage_groups(par_, comm.group, stage)) {
        if (members.size() < 2) continue;
        if (a2a) add_all_to_all(*real_, members, gib, all);
        else add_ring(*real_, c_, members, gib, all);
        if (one.empty()) one = members;
      }
      if (all.empty()) return nullptr;
    } else {
      return nullptr;
    }
    // The reference: one group (or one crossing pair) alone on the non-blocking fabric.
    ClusterFlows flat(c_, topology::world_size(par_), intra_, inter_, true);
    std::vector<FlowSpec> ref;
    if (comm.op == Comm::Op::send_recv) ref.push_back(flat.flow(one[0], one[1], gib));
    else if (a2a) add_all_to_all(flat, one, gib, ref);
    else add_ring(flat, flat_, one, gib, ref);
    std::vector<double> t = simulate_flows(flat.links(), ref);
    Unit u;
    u.alone_s = *std::max_element(t.begin(), t.end());
    for (const FlowSpec& f : all) {
      auto [it, fresh] = route_index_.try_emplace(f.path, routes_.size());
      if (fresh) routes_.push_back(f.path);
      u.flows.push_back({it->second, f.bytes});
    }
    slot = std::move(u);
    return &*slot;
  }

  const spec::Cluster& c_;
  spec::Cluster flat_;
  spec::Parallel par_;
  engine::AnalyticalNetwork analytical_;
  double intra_ = 1, inter_ = 1;
  std::unique_ptr<ClusterFlows> real_;
  std::vector<std::vector<std::size_t>> routes_;
  std::map<std::vector<std::size_t>, std::size_t> route_index_;
  std::map<std::tuple<int, int, std::int64_t, int>, std::optional<Unit>> units_;
};

// The network seam over a running SimGrid engine (inside its actor): a transfer's flows start as
// SimGrid communications, and the engine's clock waits on them.
class SimgridTransfers final : public engine::Transfers {
 public:
  SimgridTransfers(const Plan& p, const std::vector<std::pair<sg4::Host*, sg4::Host*>>& ends)
      : plan_(p), ends_(ends), remaining_(p.flows.size(), 0), projected_(p.flows.size(), 0) {}

  void start(const Graph&, TaskId task, SimTime now) override {
    auto i = static_cast<std::size_t>(task);
    projected_[i] = now + plan_.alone[i];
    if (plan_.flows[i].empty()) {
      delays_.emplace(now + plan_.alone[i], task);
      return;
    }
    for (const PlannedFlow& f : plan_.flows[i]) {
      const auto& [src, dst] = ends_[f.route];
      active_.push_back(sg4::Comm::sendto_async(src, dst, static_cast<std::uint64_t>(std::max(1.0, f.bytes))));
      owner_.push_back(task);
      ++flows_;
    }
    remaining_[i] = static_cast<std::int32_t>(plan_.flows[i].size());
  }

  [[nodiscard]] SimTime projected_end(TaskId task) const override { return projected_[static_cast<std::size_t>(task)]; }

  SimTime advance(SimTime limit, std::vector<TaskId>& done) override {
    SimTime next_delay = delays_.empty() ? engine::kNever : delays_.top().first;
    SimTime until = std::min(limit, next_delay);
    if (active_.empty()) {
      if (until == engine::kNever) return engine::kNever;
      sg4::this_actor::sleep_until(to_seconds(until).value());
      return finish_delays(until, done);
    }
    double timeout = until == engine::kNever ? -1.0 : std::max(0.0, to_seconds(until).value() - sg4::Engine::get_clock());
    ssize_t k = sg4::Comm::wait_any_for(active_, timeout);
    if (k < 0) return finish_delays(until, done);
    SimTime t = std::min(until, std::max(now_, to_sim_time(Seconds(sg4::Engine::get_clock()))));
    std::vector<TaskId> ended;
    auto retire = [&](std::size_t j) {
      TaskId owner = owner_[j];
      if (--remaining_[static_cast<std::size_t>(owner)] == 0) ended.push_back(owner);
      active_[j] = active_.back(), active_.pop_back();
      owner_[j] = owner_.back(), owner_.pop_back();
    };
    retire(static_cast<std::size_t>(k));
    // Flows that ended at the same instant.
    for (std::size_t j = active_.size(); j-- > 0;)
      if (active_[j]->test()) retire(j);
    now_ = t;
    if (next_delay == t) finish_delays(t, ended);
    std::sort(ended.begin(), ended.end());
    done.insert(done.end(), ended.begin(), ended.end());
    return t;
  }

  [[nodiscard]] std::int64_t flows() const { return flows_; }

 private:
  SimTime finish_delays(SimTime t, std::vector<TaskId>& done) {
    now_ = t;
    while (!delays_.empty() && delays_.top().first == t) {
      done.push_back(delays_.top().second);
      delays_.pop();
    }
    return t;
  }

  const Plan& plan_;
  const std::vector<std::pair<sg4::Host*, sg4::Host*>>& ends_;
  std::vector<std::int32_t> remaining_;
  std::vector<SimTime> projected_;
  std::vector<sg4::CommPtr> active_;
  std::vector<TaskId> owner_;
  std::priority_queue<std::pair<SimTime, TaskId>, std::vector<std::pair<SimTime, TaskId>>, std::greater<>> delays_;
  SimTime now_ = 0;
  std::int64_t flows_ = 0;
};

}  // namespace

void replay_step(const schedule::StepGraph& step, const spec::Cluster& c, const spec::Parallel& par,
                 const spec::CollectiveCalibration& cal, double overlap_slowdown, engine::Timeline& out,
                 ReplayStats* stats) {
  Planner planner(c, par, cal);
  Plan plan = planner.plan(step.graph);
  const std::size_t n = step.graph.tasks().size();
  constexpr std::size_t kFields = 4;
  std::vector<char> raw = detail::in_child("network::replay_step", (n * kFields + 3) * sizeof(std::int64_t), [&](int fd) {
    sg4::Engine& engine = detail::make_engine();
    auto ends = detail::make_platform(plan.links, plan.routes);
    engine::Timeline tl;
    std::int64_t flows = 0, events = 0;
    sg4::Actor::create("engine", ends.front().first, [&] {
      SimgridTransfers net(plan, ends);
      engine::EventSimulator sim(overlap_slowdown);
      sim.run(step.graph, net, tl);
      flows = net.flows();
      events = sim.events();
    });
    engine.run();
    std::vector<std::int64_t> buf;
    buf.reserve(n * kFields + 3);
    for (const engine::TaskTiming& t : tl.tasks) buf.insert(buf.end(), {t.start, t.end, t.comm, t.contention});
    std::int64_t transfers = 0;
    for (const auto& f : plan.flows) transfers += f.empty() ? 0 : 1;
    buf.insert(buf.end(), {transfers, flows, events});
    detail::write_all(fd, buf.data(), buf.size() * sizeof(std::int64_t));
  });
  std::vector<std::int64_t> buf(n * kFields + 3);
  std::memcpy(buf.data(), raw.data(), raw.size());
  out.tasks.assign(n, {});
  out.makespan = 0;
  for (std::size_t i = 0; i < n; ++i) {
    out.tasks[i] = {buf[i * kFields], buf[i * kFields + 1], buf[i * kFields + 2], buf[i * kFields + 3]};
    out.makespan = std::max(out.makespan, out.tasks[i].end);
  }
  if (stats != nullptr) *stats = {buf[n * kFields], buf[n * kFields + 1], buf[n * kFields + 2]};
}

}  // namespace dtsim::network
