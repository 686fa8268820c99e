#include "network/simgrid_network.h"

#include <algorithm>
#include <set>
#include <vector>

#include "topology/placement.h"

namespace dtsim::network {
namespace {

using schedule::Comm;
using schedule::Group;

bool ring_op(Comm::Op op) {
  return op == Comm::Op::all_reduce || op == Comm::Op::all_gather || op == Comm::Op::reduce_scatter;
}

// Groups whose collectives SimGrid re-prices: not the pipeline pairs (pipeline_contention) nor
// the model-wide grad-norm sync (one value, latency-bound).
bool collective_group(Group g) {
  return g == Group::tp || g == Group::cp || g == Group::dp || g == Group::dp_cp || g == Group::ep || g == Group::edp;
}

}  // namespace


SimgridNetwork::SimgridNetwork(const spec::Cluster& c, const spec::Parallel& par, const spec::CollectiveCalibration& cal,
                               std::int64_t cotenant_gpus)
    : cluster_(c), flat_(non_blocking(c)), par_(par), cal_(cal), cotenant_(cotenant_gpus), analytical_(flat_, par, cal) {}

void SimgridNetwork::add_cotenant(ClusterFlows& net, std::vector<FlowSpec>& flows) const {
  if (cotenant_ < 2) return;
  std::int64_t first = topology::world_size(par_);
  // Whole hosts after this job's: the co-tenant starts on the next host.
  first = (first + cluster_.gpus_per_node - 1) / cluster_.gpus_per_node * cluster_.gpus_per_node;
  std::vector<std::int64_t> members;
  for (std::int64_t r = 0; r < cotenant_; ++r) members.push_back(first + r);
  add_ring(net, cluster_, members, 1073741824.0, flows);
}

double SimgridNetwork::contention(Comm::Op op, Group g) const {
  if (op == Comm::Op::send_recv && g == Group::pp) return pipeline_contention();
  if (!collective_group(g) || !(ring_op(op) || op == Comm::Op::all_to_all)) return 1.0;
  auto key = std::make_pair(static_cast<int>(op), static_cast<int>(g));
  if (auto it = factors_.find(key); it != factors_.end()) return it->second;
  std::int64_t world = topology::world_size(par_);
  std::int64_t span = world + (cotenant_ > 1 ? cotenant_ + cluster_.gpus_per_node : 0);  // both jobs' ranks
  std::vector<std::vector<std::int64_t>> groups = topology::groups_of(par_, g, 0, world);
  double factor = 1.0;
  if (groups.begin()->size() > 1) {
    // Link rates do not change the ratio much; the ring/Simple entries of all-reduce serve every kind.
    const spec::ProtocolCost& intra = cal_.at(spec::Collective::all_reduce, false, spec::CollAlgo::ring, spec::Protocol::simple);
    const spec::ProtocolCost& inter = cal_.at(spec::Collective::all_reduce, true, spec::CollAlgo::ring, spec::Protocol::simple);
    ClusterFlows net(cluster_, span, intra.bandwidth_efficiency, inter.bandwidth_efficiency);
    ClusterFlows flat(cluster_, world, intra.bandwidth_efficiency, inter.bandwidth_efficiency, true);
    // The size cancels in the ratio; 1 GiB keeps the times far above SimGrid's resolution.
    std::vector<FlowSpec> all, alone;
    if (op == Comm::Op::all_to_all) {
      for (const auto& members : groups) add_all_to_all(net, members, 1073741824.0, all);
      add_all_to_all(flat, *groups.begin(), 1073741824.0, alone);
    } else {
      for (const auto& members : groups) add_ring(net, cluster_, members, 1073741824.0, all);
      add_ring(flat, flat_, *groups.begin(), 1073741824.0, alone);
    }
    std::size_t own = all.size();
    add_cotenant(net, all);
    // The slowest of this job's flows with all at once on the real fabric, against one group alone
    // on the 1:1 one.
    std::vector<double> t_all = simulate_flows(net.links(), all), t_alone = simulate_flows(flat.links(), alone);
    runs_ += 2;
    double slowest_all = *std::max_element(t_all.begin(), t_all.begin() + static_cast<std::ptrdiff_t>(own));
    double slowest_alone = *std::max_element(t_alone.begin(), t_alone.end());
    factor = std::max(1.0, slowest_all / slowest_alone);
  }
  factors_[key] = factor;
  return factor;
}

double SimgridNetwork::pipeline_contention() const {
  auto key = std::make_pair(static_cast<int>(Comm::Op::send_recv), static_cast<int>(Group::pp));
  if (auto it = factors_.find(key); it != factors_.end()) return it->second;
  double factor = 1.0;
  std::int64_t stage = par_.tp * par_.cp * par_.dp, world = topology::world_size(par_);
  if (par_.pp > 1) {
    const spec::ProtocolCost& intra = cal_.at(spec::Collective::send_recv, false, spec::CollAlgo::ring, spec::Protocol::simple);
    const spec::ProtocolCost& inter = cal_.at(spec::Collective::send_recv, true, spec::CollAlgo::ring, spec::Protocol::simple);
    double ei = intra.available ? intra.bandwidth_efficiency : 1.0, en = inter.available ? inter.bandwidth_efficiency : 1.0;
    std::int64_t span = world + (cotenant_ > 1 ? cotenant_ + cluster_.gpus_per_node : 0);
    ClusterFlows net(cluster_, span, ei, en), flat(cluster_, world, ei, en, true);
    // Every rank of every stage sends to its peer in the next stage at once (the steady state of
    // 1F1B), against one such pair alone on the non-blocking fabric.
    std::vector<FlowSpec> all, alone;
    for (std::int64_t r = 0; r + stage < world; ++r) all.push_back(net.flow(r, r + stage, 1073741824.0));
    std::int64_t worst = 0;
    for (std::int64_t r = 0; r + stage < world; ++r)
      if (net.host_of(r) != net.host_of(r + stage)) { worst = r; break; }
    alone.push_back(flat.flow(worst, worst + stage, 1073741824.0));
    std::size_t own = all.size();
    add_cotenant(net, all);
    std::vector<double> t_all = simulate_flows(net.links(), all), t_alone = simulate_flows(flat.links(), alone);
    runs_ += 2;
    factor = std::max(1.0, *std::max_element(t_all.begin(), t_all.begin() + static_cast<std::ptrdiff_t>(own)) /
                               t_alone.front());
  }
  factors_[key] = factor;
  return factor;
}

Seconds SimgridNetwork::time(const Comm& comm) const {
  return analytical_.time(comm) * contention(comm.op, comm.group);
}

}  // namespace dtsim::network
