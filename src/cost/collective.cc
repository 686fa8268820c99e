#include "cost/collective.h"

#include <algorithm>
#include <array>
#include <functional>
#include <string>

#include "core/errors.h"
#include "topology/links.h"

// The model, per (algorithm, protocol), in the form of NCCL's tuner (src/graph/tuning.cc,
// ncclTopoTuneModel / ncclTopoGetAlgoTime, v2.25.1):
//
//   time = base_latency + intra_steps * intra.step_latency + inter_steps * inter.step_latency
//          + max(intra_bytes / (NVLink per GPU * intra.efficiency),
//                inter_bytes / (lanes * NIC share per GPU * inter.efficiency))
//
// base_latency comes from the intra_node table on one node and from the inter_node table when
// the group spans nodes (NCCL has one baseLat per algorithm/protocol; the profiles store it
// twice so a multi-node calibration can refit it). intra_bytes is what each GPU pushes through
// NVLink, inter_bytes what each node pushes through its NICs; the two link classes work in a
// pipeline, so the slower one sets the pace (NCCL: busBw = nChannels * min(bwIntra, bwInter)).
// A node's cross-node traffic spreads over `lanes` GPUs, each driving its share of its NIC:
// in a ring over several nodes every channel leaves each node once, and NCCL lays k channels
// so that each of the k local members is the exit of one, on its own rail (search.cc), so a
// group with k members per node drives k NIC shares in parallel. A NIC share is
// NIC bandwidth / nic_sharing (all groups of a kind talk at once), divided by the fabric's
// oversubscription on the levels crossed (topology::network_link).
//
// A NIC split into planes (Cluster::nic_planes: a ConnectX-8's 800 Gb/s as two 400G ports on a
// Spectrum-X fabric, NVIDIA DGX SuperPOD B300 RA "each GPU has 2x 400GbE connectivity through two
// different planes") keeps its whole bandwidth for rings and trees, whose channels NCCL spreads
// over every NIC port it finds, and gives a point-to-point connection one plane: "Alltoall cannot
// aggregate the bandwidth of multiple NICs, so the performance you should see is the performance
// of a single NIC" (S. Jeaugey, NVIDIA/nccl-tests#267), and one QP -- NCCL's default -- uses one
// port (NVIDIA/nccl#1015).

namespace dtsim::cost {
namespace {

using spec::CollAlgo;
using spec::Protocol;
using topology::GroupShape;

constexpr std::array<Protocol, 3> kAllProtocols = {Protocol::ll, Protocol::ll128, Protocol::simple};
// NCCL point-to-point (send/recv, all-to-all) has no LL128 path, and picks the protocol of each
// send or receive by its own size: LL up to 16 KiB, Simple above (src/enqueue.cc:
// NCCL_PARAM(P2pLLThreshold, "P2P_LL_THRESHOLD", 16384)).
constexpr std::array<Protocol, 2> kP2pProtocols = {Protocol::ll, Protocol::simple};
constexpr double kP2pLlThreshold = 16384.0;  // bytes per send

// Raw link rates of a group, before protocol efficiency.
struct Links {
  BytesPerSecond intra;  // NVLink/NVSwitch per GPU per direction
  BytesPerSecond lane;   // one GPU's share of its NIC, after fabric oversubscription
  Seconds extra_hop;     // switch hops above the leaf, added to every inter-node step
};

Links group_links(Collective op, const GroupShape& g, const spec::Cluster& c) {
  Links l{c.intra.bandwidth, BytesPerSecond(0.0), Seconds(0.0)};
  if (g.nodes <= 1) return l;
  double oversub = 1.0;
  if (!c.fabric.empty()) {
    topology::LinkCost leaf = topology::network_link(c, 1);
    topology::LinkCost path = topology::network_link(c, std::max(1, g.fabric_levels));
    oversub = leaf.bandwidth / path.bandwidth;  // network_link divides only by oversubscription
    l.extra_hop = path.latency - leaf.latency;
  }
  l.lane = c.nic_bandwidth / static_cast<double>(std::max<std::int64_t>(1, g.nic_sharing)) / oversub;
  if (op == Collective::all_to_all || op == Collective::send_recv)
    l.lane = l.lane / static_cast<double>(std::max<std::int64_t>(1, c.nic_planes));
  return l;
}

// One pipelined pass of a collective on one group (see the model above).
struct Pass {
  double intra_bytes = 0.0;  // per GPU over NVLink
  double inter_bytes = 0.0;  // per node over its NICs
  double lanes = 1.0;        // GPU NIC shares that carry a node's inter-node bytes
  double intra_steps = 0.0;
  double inter_steps = 0.0;
};

struct Context {
  Collective op;
  const GroupShape& group;
  const spec::Cluster& cluster;
  const spec::CollectiveCalibration& cal;
  Links links;
};

// The entry `x.op` uses on one link class (its own table first, then the shared one).
const spec::ProtocolCost* entry(const Context& x, bool inter, CollAlgo a, Protocol p) {
  const spec::ProtocolCost& e = x.cal.at(x.op, inter, a, p);
  return e.available ? &e : nullptr;
}

// The intra-node leg of a multi-node tree is a chain; without a tree entry it is priced as a ring.
const spec::ProtocolCost* intra_entry(const Context& x, CollAlgo a, Protocol p) {
  const spec::ProtocolCost* e = entry(x, false, a, p);
  return e != nullptr || a != CollAlgo::tree ? e : entry(x, false, CollAlgo::ring, p);
}

std::optional<Seconds> price(const Context& x, CollAlgo a, Protocol p, const Pass& pass) {
  bool multi = x.group.nodes > 1;
  const spec::ProtocolCost* base = entry(x, multi, a, p);
  if (base == nullptr) return std::nullopt;
  Seconds t = base->base_latency, wire_intra, wire_inter;
  if (pass.intra_steps > 0 || pass.intra_bytes > 0) {
    const spec::ProtocolCost* in = intra_entry(x, a, p);
    if (in == nullptr) return std::nullopt;
    Seconds step = in->step_latency;
    // tuning.cc: "Inter-node rings still have to launch nsteps * net overhead": on a ring that
    // spans nodes every step costs at least the proxy's network overhead (x3 for Simple).
    if (multi && a == CollAlgo::ring && x.op != Collective::broadcast)
      step = std::max(step, x.cluster.nccl_net_overhead() * (p == Protocol::simple ? 3.0 : 1.0));
    t += step * pass.intra_steps;
    wire_intra = Bytes(pass.intra_bytes) / (x.links.intra * in->bandwidth_efficiency);
  }
  if (multi && (pass.inter_steps > 0 || pass.inter_bytes > 0)) {
    Seconds step = base->step_latency;
    // tuning.cc: "With ppn=1 latencies are fully exposed, use the Tree network latency".
    const spec::ProtocolCost* tree = entry(x, true, CollAlgo::tree, p);
    if (x.group.ranks_per_node == 1 && tree != nullptr) step = tree->step_latency;
    t += (step + x.links.extra_hop) * pass.inter_steps;
    wire_inter = Bytes(pass.inter_bytes) / (x.links.lane * pass.lanes * base->bandwidth_efficiency);
  }
  return t + std::max(wire_intra, wire_inter);
}

// floor(log2(n)), NCCL's log2i.
double log2i(std::int64_t n) {
  double r = 0.0;
  while (n > 1) { n >>= 1; r += 1.0; }
  return r;
}

// Ring (all_reduce, all_gather, reduce_scatter, broadcast): every GPU and every node sends
// bus_factor * S (nccl-tests PERFORMANCE.md). Steps as tuning.cc: nsteps = 2(n-1) for
// all-reduce, n-1 otherwise, of which 2(N-1) resp. N-1 cross nodes. Broadcast is a pipelined
// chain of n-1 hops.
Pass ring_pass(Collective op, double s, const GroupShape& g) {
  double n = static_cast<double>(g.ranks), nodes = static_cast<double>(g.nodes);
  double bytes = bus_factor(op, g.ranks) * s;
  bool ar = op == Collective::all_reduce;
  double steps = ar ? 2.0 * (n - 1.0) : n - 1.0;
  double inter = g.nodes > 1 ? (ar ? 2.0 * (nodes - 1.0) : nodes - 1.0) : 0.0;
  return {.intra_bytes = g.ranks_per_node > 1 ? bytes : 0.0, .inter_bytes = g.nodes > 1 ? bytes : 0.0,
          .lanes = static_cast<double>(g.ranks_per_node), .intra_steps = steps - inter, .inter_steps = inter};
}

// Double binary tree across nodes, a chain of k GPUs inside each (Sanders et al. 2009; NCCL
// 2.4). Each chain GPU sends S up and S down; each node sends about 2(N-1)/N * S across
// (S for two nodes, 2S for many). Latency 2((k-1) intra + log2i(N) inter) as tuning.cc.
Pass tree_pass(double s, const GroupShape& g) {
  double k = static_cast<double>(g.ranks_per_node), nodes = static_cast<double>(g.nodes);
  return {.intra_bytes = g.ranks_per_node > 1 ? 2.0 * s : 0.0, .inter_bytes = 2.0 * (nodes - 1.0) / nodes * s,
          .lanes = k, .intra_steps = 2.0 * (k - 1.0), .inter_steps = 2.0 * log2i(g.nodes)};
}

// NVLS: the NVSwitch reduces (multimem.ld_reduce) and multicasts (multimem.st), so each GPU
// sends its buffer once plus the 1/k shard it owns: S(k+1)/k per direction. Across nodes
// (NCCL's NVLSTree) each local rank all-reduces its 1/k shard over a tree of nodes, pipelined
// with the switch: latency intraLat + 2*log2i(N)*interLat (tuning.cc).
Pass nvls_pass(double s, const GroupShape& g) {
  double k = static_cast<double>(g.ranks_per_node), nodes = static_cast<double>(g.nodes);
  Pass p{.intra_bytes = s * (k + 1.0) / k, .lanes = k, .intra_steps = 1.0};
  if (g.nodes > 1) {
    p.inter_bytes = 2.0 * (nodes - 1.0) / nodes * s;
    p.inter_steps = 2.0 * log2i(g.nodes);
  }
  return p;
}

// Point-to-point: all_to_all sends (k-1)/n * S over NVLink and (n-k)/n * S over the network
// per GPU, concurrently; send_recv moves S to one peer (one NIC share when it crosses nodes,
// "alltoall cannot aggregate multiple NICs", nccl-tests#267). Inside a node one step of NVLink.
// Across nodes NCCL runs an all_to_all as a group of one send and one receive per peer, and each
// remote peer costs a network step of its own: one step per remote peer (n - k). Measured, at a
// fixed payload per rank the time grows with the peers: alltoall_perf at 32 MiB per rank on 2 to
// 32 p5 nodes over EFA takes 682 us at 16 ranks and 1,673 us at 256 where the bytes per NIC grow
// by 1.94x, and a per-peer step fits the 35 sizes and shapes twice as well as one step (rms log
// error 0.077 against 0.149; calibration/aws-p5.md); 8 MiB per rank on 8 x 8 H800 takes 338 us,
// ~2.6 us per remote peer above the NIC time (NVIDIA/nccl #1531; calibration/collectives-fit.md).
Pass p2p_pass(Collective op, double s, const GroupShape& g) {
  double n = static_cast<double>(g.ranks), k = static_cast<double>(g.ranks_per_node);
  bool multi = g.nodes > 1;
  if (op == Collective::send_recv)
    return multi ? Pass{.inter_bytes = s, .lanes = 1.0, .inter_steps = 1.0}
                 : Pass{.intra_bytes = s, .intra_steps = 1.0};
  return {.intra_bytes = (k - 1.0) / n * s, .inter_bytes = multi ? k * (n - k) / n * s : 0.0, .lanes = k,
          .intra_steps = multi ? 0.0 : 1.0, .inter_steps = multi ? n - k : 0.0};
}

CollectiveEstimate make_estimate(Collective op, Bytes size, std::int64_t n, Seconds t, CollAlgo a, Protocol p,
                                 bool hier) {
  BytesPerSecond bus = t.value() > 0 ? (size * bus_factor(op, n)) / t : BytesPerSecond(0.0);
  return {.time = t, .algo = a, .protocol = p, .hierarchical = hier, .bus_bandwidth = bus};
}

std::optional<CollectiveEstimate> best(Collective op, Bytes size, const GroupShape& g, const spec::Cluster& c,
                                       const spec::CollectiveCalibration& cal) {
  std::vector<CollectiveEstimate> all = collective_candidates(op, size, g, c, cal);
  auto it = std::min_element(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.time < b.time; });
  if (it == all.end()) return std::nullopt;
  return *it;
}

// Intra-node reduce-scatter, k concurrent inter-node all-reduces of S/k (one per local rank,
// each on its own NIC share), intra-node all-gather; the three run one after the other.
std::optional<CollectiveEstimate> hierarchical(Bytes size, const GroupShape& g, const spec::Cluster& c,
                                               const spec::CollectiveCalibration& cal) {
  GroupShape local{.ranks = g.ranks_per_node, .ranks_per_node = g.ranks_per_node, .nodes = 1};
  GroupShape across{.ranks = g.nodes, .ranks_per_node = 1, .nodes = g.nodes, .fabric_levels = g.fabric_levels,
                    .nic_sharing = g.nic_sharing};
  auto rs = best(Collective::reduce_scatter, size, local, c, cal);
  auto ar = best(Collective::all_reduce, size / static_cast<double>(g.ranks_per_node), across, c, cal);
  auto ag = best(Collective::all_gather, size, local, c, cal);
  if (!rs || !ar || !ag) return std::nullopt;
  return make_estimate(Collective::all_reduce, size, g.ranks, rs->time + ar->time + ag->time, ar->algo,
                       ar->protocol, true);
}

void add_all_reduce(const Context& x, double s, const std::function<void(CollAlgo, Protocol, const Pass&)>& add) {
  const GroupShape& g = x.group;
  for (Protocol p : kAllProtocols) add(CollAlgo::ring, p, ring_pass(Collective::all_reduce, s, g));
  if (g.nodes > 1)
    for (Protocol p : kAllProtocols) add(CollAlgo::tree, p, tree_pass(s, g));
  // NVLS needs NVLink SHARP and at least two GPUs of the group on a node.
  if (x.cluster.intra.nvls && g.ranks_per_node > 1) add(CollAlgo::nvls, Protocol::simple, nvls_pass(s, g));
}

}  // namespace

double bus_factor(Collective op, std::int64_t n) {
  double r = static_cast<double>(n);
  switch (op) {
    case Collective::all_reduce: return 2.0 * (r - 1.0) / r;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all: return (r - 1.0) / r;
    case Collective::broadcast:
    case Collective::send_recv: return 1.0;
  }
  return 1.0;
}

std::vector<CollectiveEstimate> collective_candidates(Collective op, Bytes size, const GroupShape& group,
                                                      const spec::Cluster& cluster,
                                                      const spec::CollectiveCalibration& cal) {
  std::vector<CollectiveEstimate> out;
  if (group.ranks <= 1) return out;
  Context x{op, group, cluster, cal, group_links(op, group, cluster)};
  auto add = [&](CollAlgo a, Protocol p, const Pass& pass) {
    if (auto t = price(x, a, p, pass)) out.push_back(make_estimate(op, size, group.ranks, *t, a, p, false));
  };
  double s = size.value();
  switch (op) {
    case Collective::all_reduce:
      add_all_reduce(x, s, add);
      if (group.nodes > 1 && group.ranks_per_node > 1)
        if (auto h = hierarchical(size, group, cluster, cal)) out.push_back(*h);
      break;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::broadcast:
      for (Protocol p : kAllProtocols) add(CollAlgo::ring, p, ring_pass(op, s, group));
      break;
    case Collective::all_to_all:
    case Collective::send_recv: {
      double per_peer = op == Collective::all_to_all ? s / static_cast<double>(group.ranks) : s;
      for (Protocol p : kP2pProtocols)
        if (p == Protocol::simple || per_peer <= kP2pLlThreshold) add(CollAlgo::ring, p, p2p_pass(op, s, group));
      break;
    }
  }
  return out;
}

Seconds ring_latency(Collective op, const GroupShape& group, const spec::Cluster& cluster,
                     const spec::CollectiveCalibration& cal) {
  if (group.ranks <= 1) return Seconds{0};
  Context x{op, group, cluster, cal, group_links(op, group, cluster)};
  std::optional<Seconds> t = price(x, CollAlgo::ring, Protocol::simple, ring_pass(op, 0.0, group));
  if (!t)
    throw SpecError(std::string("calibration:/collectives/") + (group.nodes > 1 ? "inter_node" : "intra_node"),
                    std::string("expected a ring Simple entry for ") + to_string(op) + ", got none");
  return *t;
}

CollectiveEstimate collective_time(Collective op, Bytes size, const GroupShape& group, const spec::Cluster& cluster,
                                   const spec::CollectiveCalibration& cal) {
  if (group.ranks <= 1 || size.value() <= 0) return make_estimate(op, size, group.ranks, Seconds(0.0),
                                                                  CollAlgo::ring, Protocol::simple, false);
  std::optional<CollectiveEstimate> e = best(op, size, group, cluster, cal);
  if (!e)
    throw SpecError(std::string("calibration:/collectives/") + (group.nodes > 1 ? "inter_node" : "intra_node"),
                    std::string("expected an available ring entry for ") + to_string(op) + ", got none");
  return *e;
}

}  // namespace dtsim::cost
