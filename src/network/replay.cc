#include "network/replay.h"

#include <simgrid/s4u.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <queue>
#include <set>
#include <stdexcept>

#include "core/errors.h"
#include "cost/partition.h"
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

// Which of NCCL's algorithms a transfer's flows follow.
enum class FlowShape : std::uint8_t { ring, tree, nvls, hierarchical, all_to_all };

struct PlannedFlow {
  std::size_t route = 0;  ///< index into Plan::routes
  double bytes = 0;
};

// One step of a transfer: flows (none: a fixed delay) and the time they take alone on the
// non-blocking fabric.
struct Phase {
  std::vector<PlannedFlow> flows;
  SimTime alone = 0;
  const void* unit = nullptr;  ///< while planning: the Planner's flow set for it (none: a delay)
};

// What the child replays: distinct routes over the real fabric's links, and per task the list of
// phases its transfer runs in order (lists shared by tasks that transfer alike; -1 = none).
struct Plan {
  std::vector<LinkSpec> links;
  std::vector<std::vector<std::size_t>> routes;
  std::vector<std::vector<Phase>> lists;
  std::vector<std::int32_t> list_of;  ///< by task id
  /// By task id: the rounds a pass's communication runs in, one per layer of its chunk (each
  /// layer's collectives follow its own compute); 1 for every other task.
  std::vector<std::int32_t> rounds;
  std::int64_t max_rounds = 1;  ///< the most rounds a pass with flows got (see kMaxPassRounds)
  std::vector<PlannedFlow> background;  ///< a co-tenant's flows, running the whole step
};

// The collective whose flows stand for a pass's communication of category `c`.
Comm pass_comm_collective(schedule::Category c) {
  switch (c) {
    case schedule::Category::tp_comm: return {Comm::Op::all_gather, Group::tp, Bytes(0)};
    case schedule::Category::cp_comm: return {Comm::Op::all_gather, Group::cp, Bytes(0)};
    case schedule::Category::ep_comm: return {Comm::Op::all_to_all, Group::ep, Bytes(0)};
    default: return {Comm::Op::all_gather, Group::dp_cp, Bytes(0)};
  }
}

bool ring_op(Comm::Op op) {
  return op == Comm::Op::all_reduce || op == Comm::Op::all_gather || op == Comm::Op::reduce_scatter;
}

// The groups of `kind` holding the ranks of pipeline stage `stage` (ranks s*S .. s*S + S - 1).
std::vector<std::vector<std::int64_t>> stage_groups(const spec::Parallel& par, Group kind, std::int64_t stage) {
  std::int64_t per_stage = par.tp * par.cp * par.dp;
  return topology::groups_of(par, kind, stage * per_stage, (stage + 1) * per_stage);
}

class Planner {
 public:
  Planner(const spec::Cluster& c, const spec::Parallel& par, const spec::CollectiveCalibration& cal,
          std::int64_t cotenant_gpus, double max_flows)
      : c_(c), par_(par), alone_(c, par, cal), cotenant_(cotenant_gpus), max_flows_(max_flows) {
    const spec::ProtocolCost& intra = cal.at(spec::Collective::all_reduce, false, spec::CollAlgo::ring, spec::Protocol::simple);
    const spec::ProtocolCost& inter = cal.at(spec::Collective::all_reduce, true, spec::CollAlgo::ring, spec::Protocol::simple);
    intra_ = intra.bandwidth_efficiency;
    inter_ = inter.bandwidth_efficiency;
    // With a co-tenant the placement spans both jobs (as SimgridNetwork's contention runs).
    std::int64_t span = topology::world_size(par) + (cotenant_ > 1 ? cotenant_ + c.gpus_per_node : 0);
    real_ = std::make_unique<ClusterFlows>(c_, span, intra_, inter_);
  }

  Plan plan(const Graph& g, const cost::LayerPartition& layers) {
    Plan p;
    const auto& tasks = g.tasks();
    p.list_of.assign(tasks.size(), -1);
    p.rounds.assign(tasks.size(), 1);
    std::map<std::tuple<int, std::int32_t, std::int64_t, int>, std::int32_t> lists;  // (kind, comm or cost, stage, dir)
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const Task& t = tasks[i];
      std::int64_t stage = g.streams()[static_cast<std::size_t>(t.stream)].rank;
      int dir = t.label.kind == Label::Kind::send_gradients ? -1 : 1;
      bool comm_task = t.kind == TaskKind::comm && t.comm >= 0;
      if (!comm_task && (t.kind != TaskKind::compute || t.cost < 0)) continue;
      auto key = std::make_tuple(comm_task ? 0 : 1, comm_task ? t.comm : t.cost, stage, comm_task ? dir : 0);
      auto [it, fresh] = lists.try_emplace(key, static_cast<std::int32_t>(p.lists.size()));
      if (fresh) {
        std::vector<Phase> phases;
        if (comm_task) {
          const Comm& comm = g.comm(t.comm);
          phases.push_back(phase(comm, to_sim_time(alone_.time(comm)), stage, dir, false, shape_of(comm)));
        } else {
          for (const schedule::Segment& seg : g.segments(t))
            if (schedule::pass_comm(seg.category) && seg.duration > 0)
              phases.push_back(phase(pass_comm_collective(seg.category), seg.duration, stage, 1, true,
                                     seg.category == schedule::Category::ep_comm ? FlowShape::all_to_all : FlowShape::ring));
        }
        std::erase_if(phases, [](const Phase& ph) { return ph.alone == 0; });
        if (phases.empty()) it->second = -1;
        else p.lists.push_back(std::move(phases));
      }
      p.list_of[i] = it->second;
      // A whole pass (not a gradient-bucket slice of the last backward) runs layer by layer.
      bool pass = !comm_task && (t.label.kind == Label::Kind::forward || t.label.kind == Label::Kind::backward) &&
                  t.label.part < 0 && t.label.chunk >= 0 &&
                  stage < static_cast<std::int64_t>(layers.stage_layers().size());
      if (pass && it->second >= 0)
        p.rounds[i] = static_cast<std::int32_t>(std::max<std::int64_t>(
            1, layers.layers(stage, t.label.chunk)));
    }
    finish(p);
    // A pass whose phases are all fixed delays takes the same time in one round, with fewer events.
    for (std::size_t i = 0; i < p.rounds.size(); ++i) {
      const std::int32_t l = p.list_of[i];
      if (l < 0 || std::all_of(p.lists[static_cast<std::size_t>(l)].begin(), p.lists[static_cast<std::size_t>(l)].end(),
                               [](const Phase& ph) { return ph.flows.empty(); }))
        p.rounds[i] = 1;
      p.max_rounds = std::max<std::int64_t>(p.max_rounds, p.rounds[i]);
    }
    if (cotenant_ > 1) {
      // Another job on the hosts after this one's, all-reducing over its GPUs without pause: its
      // ring flows (NCCL's channels, one per NIC) run all step long.
      std::int64_t first = (topology::world_size(par_) + c_.gpus_per_node - 1) / c_.gpus_per_node * c_.gpus_per_node;
      std::vector<std::int64_t> members;
      for (std::int64_t r = 0; r < cotenant_; ++r) members.push_back(first + r);
      std::vector<FlowSpec> ring;
      add_ring(*real_, c_, members, 1e18, ring);
      for (const FlowSpec& f : ring) {
        auto [it, fresh] = route_index_.try_emplace(f.path, routes_.size());
        if (fresh) routes_.push_back(f.path);
        p.background.push_back({it->second, f.bytes});
      }
    }
    // Only the routes the phases send on, over only the links they cross: SimGrid's solver works
    // on every link of the platform.
    const auto& links = real_->links();
    std::vector<std::int64_t> link_id(links.size(), -1), route_id(routes_.size(), -1);
    auto remap = [&](PlannedFlow& f) {
          std::int64_t& r = route_id[f.route];
          if (r < 0) {
            r = static_cast<std::int64_t>(p.routes.size());
            std::vector<std::size_t> path;
            for (std::size_t l : routes_[f.route]) {
              if (link_id[l] < 0) {
                link_id[l] = static_cast<std::int64_t>(p.links.size());
                p.links.push_back(links[l]);
              }
              path.push_back(static_cast<std::size_t>(link_id[l]));
            }
            p.routes.push_back(std::move(path));
          }
          f.route = static_cast<std::size_t>(r);
    };
    for (auto& phases : p.lists)
      for (Phase& ph : phases)
        for (PlannedFlow& f : ph.flows) remap(f);
    for (PlannedFlow& f : p.background) remap(f);
    return p;
  }

 private:
  // The phase of a transfer of `comm`'s kind taking `alone` on the non-blocking fabric.
  Phase phase(const Comm& comm, SimTime alone, std::int64_t stage, int dir, bool in_pass, FlowShape shape) {
    Phase ph;
    ph.alone = alone;
    if (alone == 0) return ph;
    if (Unit* u = unit(comm, stage, dir, shape)) {
      ph.unit = u;
      (in_pass ? u->in_pass : u->as_task) = true;
    }
    return ph;
  }

  // A transfer's flows at 1 GiB per group member, and one group's time alone on the flat fabric.
  struct Unit {
    std::vector<PlannedFlow> flows;
    double alone_s = 0;
    bool in_pass = false, as_task = false;  ///< used by passes' communication, by comm tasks
    double cost = 1;  ///< replay cost per flow relative to a ring or p2p flow (kAllToAllFlowCost)
    double isolated = 0;  ///< > 0: its links carry nothing else; all its flows at once take this x alone
  };

  // A flow set only passes use whose links no other flow set touches can meet nothing but itself,
  // and a stage's passes run one at a time: its phases are exact as fixed delays, its flows all at
  // once on the real fabric against one group alone (one SimGrid run per set instead of its flows
  // in every pass). Then every phase gets its flows, scaled to its time alone.
  void finish(Plan& p) {
    std::map<std::size_t, int> users;  // link -> flow sets using it
    std::vector<std::set<std::size_t>> links_of;
    std::vector<Unit*> all;
    for (auto& [key, u] : units_) {
      if (!u) continue;
      std::set<std::size_t> ls;
      for (const PlannedFlow& f : u->flows) ls.insert(routes_[f.route].begin(), routes_[f.route].end());
      for (std::size_t l : ls) ++users[l];
      links_of.push_back(std::move(ls));
      all.push_back(&*u);
    }
    for (std::size_t i = 0; i < all.size(); ++i) {
      Unit& u = *all[i];
      if (!u.in_pass || u.as_task) continue;
      if (std::any_of(links_of[i].begin(), links_of[i].end(), [&](std::size_t l) { return users[l] > 1; })) continue;
      std::vector<FlowSpec> flows;
      for (const PlannedFlow& f : u.flows) flows.push_back({routes_[f.route], f.bytes});
      std::vector<double> t = simulate_flows(real_->links(), flows);
      u.isolated = std::max(1.0, *std::max_element(t.begin(), t.end()) / u.alone_s);
    }
    // The flows a replay starts when passes run in at most `cap` rounds.
    auto flows_at = [&p](std::int64_t cap) {
      std::vector<double> uses(p.lists.size(), 0);  // transfers of each list, a pass's rounds each counting
      for (std::size_t i = 0; i < p.list_of.size(); ++i)
        if (p.list_of[i] >= 0) uses[static_cast<std::size_t>(p.list_of[i])] += std::min<double>(p.rounds[i], cap);
      double flows = 0;
      for (std::size_t l = 0; l < p.lists.size(); ++l)
        for (const Phase& ph : p.lists[l])
          if (const auto* u = static_cast<const Unit*>(ph.unit); u != nullptr && u->isolated == 0)
            flows += uses[l] * static_cast<double>(u->flows.size()) * u->cost;
      return flows;
    };
    // As many rounds per pass as the flow budget allows (halving from kMaxPassRounds); a step too
    // large to replay even with one round per pass is refused before its flows are built.
    std::int64_t cap = kMaxPassRounds;
    while (cap > 1 && flows_at(cap) > max_flows_) cap /= 2;
    for (std::int32_t& r : p.rounds) r = std::min<std::int32_t>(r, static_cast<std::int32_t>(cap));
    double flows = flows_at(cap);
    if (flows > max_flows_)
      throw SpecError("--engine", "expected a step SimGrid can replay in about a minute (at most " +
                                      std::to_string(static_cast<std::int64_t>(max_flows_)) +
                                      " flows, all-to-all flows counting " +
                                      std::to_string(static_cast<int>(kAllToAllFlowCost)) + "), got " +
                                      std::to_string(static_cast<std::int64_t>(flows)) +
                                      "; use --engine longest-path (per-kind contention factors)");
    for (auto& phases : p.lists)
      for (Phase& ph : phases) {
        const auto* u = static_cast<const Unit*>(ph.unit);
        ph.unit = nullptr;
        if (u == nullptr) continue;
        if (u->isolated > 0) {
          ph.alone = static_cast<SimTime>(static_cast<double>(ph.alone) * u->isolated + 0.5);
          continue;
        }
        double scale = to_seconds(ph.alone).value() / u->alone_s;
        for (const PlannedFlow& f : u->flows) ph.flows.push_back({f.route, f.bytes * scale});
      }
  }

  // How a comm task's collective runs: the algorithm the analytical model picks for it alone.
  FlowShape shape_of(const Comm& comm) const {
    if (comm.op == Comm::Op::all_to_all) return FlowShape::all_to_all;
    if (comm.op != Comm::Op::all_reduce) return FlowShape::ring;
    cost::CollectiveEstimate e = alone_.estimate(comm);
    if (e.hierarchical) return FlowShape::hierarchical;
    if (e.algo == spec::CollAlgo::tree) return FlowShape::tree;
    return e.algo == spec::CollAlgo::nvls ? FlowShape::nvls : FlowShape::ring;
  }

  // `members`' flows of one collective of `shape` moving `bytes` per member.
  void add(ClusterFlows& net, FlowShape shape, const std::vector<std::int64_t>& members, double bytes,
           std::vector<FlowSpec>& out) const {
    switch (shape) {
      case FlowShape::all_to_all: add_all_to_all(net, members, bytes, out); break;
      case FlowShape::tree: add_tree(net, members, bytes, out); break;
      case FlowShape::nvls: add_nvls(net, members, bytes, out); break;
      case FlowShape::hierarchical: add_hierarchical(net, c_, members, bytes, out); break;
      case FlowShape::ring: add_ring(net, c_, members, bytes, out); break;
    }
  }

  Unit* unit(const Comm& comm, std::int64_t stage, int dir, FlowShape shape) {
    auto key = std::make_tuple(static_cast<int>(comm.op), static_cast<int>(comm.group), stage, dir, static_cast<int>(shape));
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
        add(*real_, shape, members, gib, all);
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
    else add(flat, shape, one, gib, ref);
    std::vector<double> t = simulate_flows(flat.links(), ref);
    Unit u;
    u.alone_s = *std::max_element(t.begin(), t.end());
    u.cost = a2a ? kAllToAllFlowCost : 1.0;
    for (const FlowSpec& f : all) {
      auto [it, fresh] = route_index_.try_emplace(f.path, routes_.size());
      if (fresh) routes_.push_back(f.path);
      u.flows.push_back({it->second, f.bytes});
    }
    slot = std::move(u);
    return &*slot;
  }

  const spec::Cluster& c_;
  spec::Parallel par_;
  NonBlockingPricer alone_;
  std::int64_t cotenant_ = 0;
  double max_flows_ = kMaxReplayFlows;
  double intra_ = 1, inter_ = 1;
  std::unique_ptr<ClusterFlows> real_;
  std::vector<std::vector<std::size_t>> routes_;
  std::map<std::vector<std::size_t>, std::size_t> route_index_;
  std::map<std::tuple<int, int, std::int64_t, int, int>, std::optional<Unit>> units_;
};

// The network seam over a running SimGrid engine (inside its actor): a transfer's phases run in
// order, each phase's flows as SimGrid communications (or a fixed delay), and the engine's clock
// waits on them.
class SimgridTransfers final : public engine::Transfers {
 public:
  SimgridTransfers(const Plan& p, const std::vector<std::pair<sg4::Host*, sg4::Host*>>& ends)
      : plan_(p), ends_(ends), phase_(p.list_of.size(), 0), projected_(p.list_of.size(), 0),
        compute_(p.list_of.size(), 0), round_(p.list_of.size(), 0) {
    for (const PlannedFlow& f : p.background)
      background_.push_back(sg4::Comm::sendto_async(ends[f.route].first, ends[f.route].second,
                                                    static_cast<std::uint64_t>(f.bytes)));
  }
  ~SimgridTransfers() override {
    for (sg4::CommPtr& c : background_) c->cancel();
  }

  [[nodiscard]] bool carries_pass_comm() const override { return true; }

  void start(const Graph&, TaskId task, SimTime now) override {
    auto i = static_cast<std::size_t>(task);
    phase_[i] = 0;
    round_[i] = 0;
    compute_[i] = 0;
    projected_[i] = now;
    if (plan_.list_of[i] < 0) {  // nothing to send: done at once
      delays_.emplace(now, task);
      return;
    }
    for (const Phase& ph : phases(task)) projected_[i] += ph.alone;
    begin_phase(task, now);
  }

  // A pass runs its rounds (one per layer): a slice of its compute, then that layer's share of
  // each of its communication phases in order (TP, CP, EP, ZeRO-3 as priced), so its traffic
  // meets what else runs at the time the layer sends it, not all at the pass's end.
  void start_pass(const Graph&, TaskId task, SimTime now, SimTime compute) override {
    auto i = static_cast<std::size_t>(task);
    round_[i] = 0;
    compute_[i] = compute;
    projected_[i] = now + compute;
    if (plan_.list_of[i] >= 0)
      for (const Phase& ph : phases(task)) projected_[i] += ph.alone;
    begin_slice(task, now);
  }

  [[nodiscard]] SimTime projected_end(TaskId task) const override { return projected_[static_cast<std::size_t>(task)]; }

  SimTime advance(SimTime limit, std::vector<TaskId>& done) override {
    for (;;) {
      SimTime next_delay = delays_.empty() ? engine::kNever : delays_.top().first;
      SimTime until = std::min(limit, next_delay);
      std::vector<TaskId> ended;
      SimTime t = until;
      if (reps_.empty()) {
        if (until == engine::kNever) return engine::kNever;
        if (until > now_) sg4::this_actor::sleep_until(to_seconds(until).value());
      } else {
        double timeout =
            until == engine::kNever ? -1.0 : std::max(0.0, to_seconds(until).value() - sg4::Engine::get_clock());
        ssize_t k = sg4::Comm::wait_any_for(reps_, timeout);
        if (k >= 0) {
          t = std::min(until, std::max(now_, to_sim_time(Seconds(sg4::Engine::get_clock()))));
          // The woken transfer, then any other whose representative flow is done too.
          for (std::size_t j = reps_.size(); j-- > 0;)
            if (j == static_cast<std::size_t>(k) || reps_[j]->test()) settle(j, ended);
        }
      }
      now_ = t;
      while (!delays_.empty() && delays_.top().first == t) {
        ended.push_back(delays_.top().second);
        delays_.pop();
      }
      // A phase that ended starts the transfer's next one (a pass: its round's next phase, or
      // the next round's compute slice); the transfer ends with its last.
      std::vector<TaskId> finished;
      for (TaskId task : ended)
        if (!next_phase(task, t)) finished.push_back(task);
      if (finished.empty() && t < limit) continue;  // only phases moved on: wait for the next event
      std::sort(finished.begin(), finished.end());
      done.insert(done.end(), finished.begin(), finished.end());
      return t;
    }
  }

  [[nodiscard]] std::int64_t flows() const { return flows_; }

 private:
  const std::vector<Phase>& phases(TaskId task) const {
    return plan_.lists[static_cast<std::size_t>(plan_.list_of[static_cast<std::size_t>(task)])];
  }

  static constexpr std::size_t kSlice = static_cast<std::size_t>(-1);  ///< phase_: a pass's compute slice

  std::int32_t rounds(TaskId task) const { return plan_.rounds[static_cast<std::size_t>(task)]; }

  // Round r's slice of a pass's compute (the remainder on the last), as a delay.
  void begin_slice(TaskId task, SimTime now) {
    auto i = static_cast<std::size_t>(task);
    SimTime r = rounds(task), slice = compute_[i] / r + (round_[i] == r - 1 ? compute_[i] % r : 0);
    phase_[i] = kSlice;
    delays_.emplace(now + slice, task);
  }

  // Moves `task` past the phase that just ended at `now`; false when that was its last.
  bool next_phase(TaskId task, SimTime now) {
    auto i = static_cast<std::size_t>(task);
    bool has_comm = plan_.list_of[i] >= 0;
    std::size_t next = phase_[i] == kSlice ? 0 : phase_[i] + 1;
    if (has_comm && next < phases(task).size()) {
      phase_[i] = next;
      begin_phase(task, now);
      return true;
    }
    if (++round_[i] < rounds(task)) {  // a pass: its next layer (comm tasks have one round)
      begin_slice(task, now);
      return true;
    }
    return false;
  }

  // Starts the flows of the transfer's current phase (or its delay). The engine waits on one
  // representative flow per transfer, not on every flow: only a transfer's end matters, and it is
  // the end of its last flow (waiting on thousands of flows costs SimGrid a pass over all of them
  // per event).
  // A pass's phase is split over its rounds: each sends 1/rounds of the bytes (or waits 1/rounds
  // of the delay, the remainder on the last round).
  void begin_phase(TaskId task, SimTime now) {
    auto i = static_cast<std::size_t>(task);
    const Phase& ph = phases(task)[phase_[i]];
    SimTime r = rounds(task);
    if (ph.flows.empty()) {
      delays_.emplace(now + ph.alone / r + (round_[i] == r - 1 ? ph.alone % r : 0), task);
      return;
    }
    std::vector<sg4::CommPtr>& mine = running_[task];
    for (const PlannedFlow& f : ph.flows) {
      const auto& [src, dst] = ends_[f.route];
      double bytes = f.bytes / static_cast<double>(r);
      mine.push_back(sg4::Comm::sendto_async(src, dst, static_cast<std::uint64_t>(std::max(1.0, bytes))));
      ++flows_;
    }
    reps_.push_back(mine.back());
    rep_task_.push_back(task);
  }

  // Representative j's flow is done: drop the transfer's finished flows; the phase ends with the
  // last, else another running flow represents it.
  void settle(std::size_t j, std::vector<TaskId>& ended) {
    TaskId task = rep_task_[j];
    reps_[j] = reps_.back(), reps_.pop_back();
    rep_task_[j] = rep_task_.back(), rep_task_.pop_back();
    std::vector<sg4::CommPtr>& mine = running_[task];
    std::erase_if(mine, [](const sg4::CommPtr& c) { return c->test(); });
    if (mine.empty()) {
      running_.erase(task);
      ended.push_back(task);
      return;
    }
    reps_.push_back(mine.back());
    rep_task_.push_back(task);
  }

  const Plan& plan_;
  const std::vector<std::pair<sg4::Host*, sg4::Host*>>& ends_;
  std::vector<std::size_t> phase_;  ///< the phase running (kSlice: a pass's compute slice)
  std::vector<SimTime> projected_;
  std::vector<SimTime> compute_;      ///< a pass's compute time
  std::vector<std::int32_t> round_;   ///< a pass's layer
  std::unordered_map<TaskId, std::vector<sg4::CommPtr>> running_;  ///< each transfer's running flows
  std::vector<sg4::CommPtr> reps_;                                 ///< one running flow per transfer
  std::vector<sg4::CommPtr> background_;                           ///< the co-tenant's, never waited on
  std::vector<TaskId> rep_task_;
  std::priority_queue<std::pair<SimTime, TaskId>, std::vector<std::pair<SimTime, TaskId>>, std::greater<>> delays_;
  SimTime now_ = 0;
  std::int64_t flows_ = 0;
};

}  // namespace

void replay_step(const schedule::StepGraph& step, const spec::Cluster& c, const spec::Parallel& par,
                 const spec::CollectiveCalibration& cal, double overlap_slowdown, engine::Timeline& out,
                 ReplayStats* stats, std::int64_t cotenant_gpus, double max_flows) {
  Planner planner(c, par, cal, cotenant_gpus, max_flows);
  Plan plan = planner.plan(step.graph, step.partition);
  const std::size_t n = step.graph.tasks().size();
  constexpr std::size_t kFields = 4;  // per task: start, end, comm, contention
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
    for (std::int32_t l : plan.list_of) {
      if (l < 0) continue;
      const auto& phases = plan.lists[static_cast<std::size_t>(l)];
      transfers += std::any_of(phases.begin(), phases.end(), [](const Phase& ph) { return !ph.flows.empty(); }) ? 1 : 0;
    }
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
  if (stats != nullptr) *stats = {buf[n * kFields], buf[n * kFields + 1], buf[n * kFields + 2], plan.max_rounds};
}

NonBlockingPricer::NonBlockingPricer(const spec::Cluster& c, const spec::Parallel& par, const spec::CollectiveCalibration& cal)
    : flat_(non_blocking(c)), cal_(cal), analytical_(flat_, par, cal) {}

cost::CollectiveEstimate NonBlockingPricer::estimate(const schedule::Comm& comm) const {
  return cost::collective_time(comm.op, comm.size, analytical_.shape(comm.group), flat_, cal_);
}

engine::StepResult replay(const schedule::StepSpec& s, engine::Workspace& ws, ReplayStats* stats,
                          std::int64_t cotenant_gpus) {
  NonBlockingPricer alone(*s.cluster, s.par, s.cal->collectives);
  schedule::build_step(s, alone, ws.step);
  replay_step(ws.step, *s.cluster, s.par, s.cal->collectives, s.cal->compute.overlap_slowdown, ws.timeline, stats,
              cotenant_gpus);
  return engine::summarize(s, ws);
}

}  // namespace dtsim::network
