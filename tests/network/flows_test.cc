#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "core/errors.h"
#include "core/units.h"
#include "cost/collective.h"
#include "engine/analytical.h"
#include "engine/simulate.h"
#include "helpers.h"
#include "network/backend.h"
#include "network/cluster_flows.h"
#include "network/flows.h"
#include "network/replay.h"
#include "spec/load.h"
#include "topology/placement.h"

using namespace dtsim;
using Catch::Matchers::WithinRel;

namespace {

// One GPU per host, one NIC, a fat tree of radix-4 leaves whose oversubscription is `taper`.
spec::Cluster tiny(double taper) {
  std::string text = R"({"name": "tiny", "gpu": "h100-sxm5-80gb", "gpus_per_node": 1,
    "intra_node": {"fabric": "nvswitch", "bandwidth_GBps": 450, "latency_us": 0.6},
    "nics_per_node": 1, "nic_bandwidth_Gbps": 400, "nic_latency_us": 2.7, "rail_optimized": false,
    "gpu_to_nic": [0], "fabric": [{"switch_radix": 4, "oversubscription": TAPER, "hop_latency_us": 0.1},
                                  {"switch_radix": 4, "oversubscription": 1.0, "hop_latency_us": 0.1}],
    "calibration": "dgx-h100"})";
  text.replace(text.find("TAPER"), 5, std::to_string(taper));
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  return spec::parse_cluster(text, "tiny.json");
}

}  // namespace

TEST_CASE("network::simulate_flows: max-min shares computed by hand", "[network]") {
  // Link 0: 100 GB/s shared by both flows; link 1: 30 GB/s on flow B's path only. Max-min: B is
  // held to 30 by link 1, A takes the other 70; when A is done B stays at 30.
  std::vector<network::LinkSpec> links{{100e9, 0.0}, {30e9, 0.0}};
  std::vector<network::FlowSpec> flows{{.path = {0}, .bytes = 1e9}, {.path = {0, 1}, .bytes = 1e9}};
  std::vector<double> t = network::simulate_flows(links, flows);
  REQUIRE(t.size() == 2);
  CHECK_THAT(t[0], WithinRel(1e9 / 70e9, 1e-6));
  CHECK_THAT(t[1], WithinRel(1e9 / 30e9, 1e-6));
  // A lone flow: latency plus size over bandwidth (CM02 without cross-traffic), every call anew.
  std::vector<double> lone = network::simulate_flows({{50e9, 2e-6}}, {{.path = {0}, .bytes = 5e8}});
  CHECK_THAT(lone[0], WithinRel(2e-6 + 5e8 / 50e9, 1e-6));
  CHECK_THROWS_AS(network::simulate_flows(links, {{.path = {2}, .bytes = 1}}), std::invalid_argument);
}

TEST_CASE("network::ClusterFlows: a ring on a non-blocking DGX H100 pair is bounded by one NIC", "[network]") {
  // 16 ranks on 2 DGX H100 nodes: the ring crosses nodes twice, each time through one 400 Gb/s
  // NIC; NVLink hops are 9x faster. Every rank sends 2(n-1)/n of 1 GiB (all-reduce).
  spec::Cluster c = spec::load_cluster(test::source_path("topologies/dgx-h100.json"));
  network::ClusterFlows net(c, 16, 1.0, 1.0);
  std::vector<std::int64_t> ring;
  for (std::int64_t r = 0; r < 16; ++r) ring.push_back(r);
  double bytes = 2.0 * 15 / 16 * 1073741824.0;
  CHECK_THAT(network::ring_time(net, ring, bytes), WithinRel(bytes / 50e9, 1e-6));
  CHECK(net.host_of(9) == 1);
}

TEST_CASE("network::ClusterFlows: a tapered leaf halves two flows that cross it", "[network]") {
  // Radix-4 leaves: 1:1 gives 2 NICs down / 2 up; 3:1 gives 3 down and one NIC's worth up. Hosts
  // 0 and 1 share a leaf and send to hosts 3 and 4 on the next one at once.
  auto both = [](double taper) {
    spec::Cluster c = tiny(taper);
    network::ClusterFlows net(c, 6, 1.0, 1.0);
    std::vector<network::FlowSpec> flows{net.flow(0, 3, 1e9), net.flow(1, 4, 1e9)};
    std::vector<double> t = network::simulate_flows(net.links(), flows);
    return std::max(t[0], t[1]);
  };
  double flat = both(1.0), tapered = both(3.0);
  CHECK_THAT(flat, WithinRel(1e9 / 50e9, 1e-6));
  CHECK_THAT(tapered, WithinRel(2 * 1e9 / 50e9, 1e-6));  // one NIC's worth of uplink, shared by two
  CHECK(tapered >= flat);
}

TEST_CASE("network::ClusterFlows: a middle level's oversubscription caps its pod's uplinks", "[network]") {
  // Three levels: radix-2 leaves at 1:1 (one host each, one NIC of uplink), radix-4 middle
  // switches at 3:1 (pods of 3 leaves, one NIC's worth of uplink), a radix-4 top. Hosts 0 and 1
  // (pod 0) send to hosts 3 and 4 (pod 1) at once: both climb pod 0's one-NIC uplink and get half
  // of it each. Inside the pod (0 to 1 and 2 to 0 at once) nothing is shared.
  std::string text = R"({"name": "three", "gpu": "h100-sxm5-80gb", "gpus_per_node": 1,
    "intra_node": {"fabric": "nvswitch", "bandwidth_GBps": 450, "latency_us": 0.6},
    "nics_per_node": 1, "nic_bandwidth_Gbps": 400, "nic_latency_us": 2.7, "rail_optimized": false,
    "gpu_to_nic": [0], "fabric": [{"switch_radix": 2, "oversubscription": 1.0, "hop_latency_us": 0.1},
                                  {"switch_radix": 4, "oversubscription": 3.0, "hop_latency_us": 0.1},
                                  {"switch_radix": 4, "oversubscription": 1.0, "hop_latency_us": 0.1}],
    "calibration": "dgx-h100"})";
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  spec::Cluster c = spec::parse_cluster(text, "three.json");
  network::ClusterFlows net(c, 6, 1.0, 1.0);
  std::vector<network::FlowSpec> across{net.flow(0, 3, 1e9), net.flow(1, 4, 1e9)};
  std::vector<double> t = network::simulate_flows(net.links(), across);
  CHECK_THAT(t[0], WithinRel(2 * 1e9 / 50e9, 1e-6));
  CHECK_THAT(t[1], WithinRel(2 * 1e9 / 50e9, 1e-6));
  network::ClusterFlows pod(c, 6, 1.0, 1.0);
  std::vector<network::FlowSpec> inside{pod.flow(0, 1, 1e9), pod.flow(2, 0, 1e9)};
  std::vector<double> u = network::simulate_flows(pod.links(), inside);
  CHECK_THAT(std::max(u[0], u[1]), WithinRel(1e9 / 50e9, 1e-6));
  CHECK(net.leaf_of(1) != net.leaf_of(0));
}

TEST_CASE("network::ring_collective_time: equals the analytical ring on a non-blocking fabric", "[network]") {
  // All-reduce over 2 DGX H100 nodes: NCCL's 8 channels, one ring per NIC, bandwidth shared by
  // SimGrid, latency terms the analytical ring's: the same time as cost's ring/Simple candidate.
  spec::Cluster c = spec::load_cluster(test::source_path("topologies/dgx-h100.json"));
  spec::Calibration cal = spec::load_calibration(test::source_path("calibration/dgx-h100.json"));
  topology::GroupShape g = topology::flat_group_shape(c, 16, 8);
  for (double size : {1048576.0, 67108864.0, 1073741824.0}) {
    INFO(size);
    double analytical = 0;
    for (const cost::CollectiveEstimate& e :
         cost::collective_candidates(spec::Collective::all_reduce, Bytes(size), g, c, cal.collectives))
      if (e.algo == spec::CollAlgo::ring && e.protocol == spec::Protocol::simple && !e.hierarchical)
        analytical = e.time.value();
    REQUIRE(analytical > 0);
    double simgrid = network::ring_collective_time(c, cal.collectives, spec::Collective::all_reduce, size, 16, 8);
    CHECK_THAT(simgrid, WithinRel(analytical, 0.03));
  }
  CHECK_THROWS_AS(network::ring_collective_time(c, cal.collectives, spec::Collective::all_to_all, 1e6, 16, 8),
                  std::invalid_argument);
}

TEST_CASE("network::ring_collective_time: a tapered fabric is never faster", "[network]") {
  // 4 DGX H100 nodes, not rail-optimized, radix-16 leaves: 1:1 gives each node its own leaf with
  // 8 NICs of uplink; 3:1 gives a leaf 12 NICs down and 4 NICs' worth up, so the 8 channel rings
  // leaving a node share half the bandwidth they need.
  auto cluster = [](double taper) {
    spec::Cluster c = spec::load_cluster(test::source_path("topologies/dgx-h100.json"));
    c.rail_optimized = false;
    c.fabric = {spec::FabricLevel{.switch_radix = 16, .oversubscription = taper, .hop_latency = us(0.15)},
                spec::FabricLevel{.switch_radix = 64, .oversubscription = 1.0, .hop_latency = us(0.15)}};
    return c;
  };
  spec::Calibration cal = spec::load_calibration(test::source_path("calibration/dgx-h100.json"));
  double flat = network::ring_collective_time(cluster(1.0), cal.collectives, spec::Collective::all_gather, 1073741824.0, 32, 8);
  double tapered =
      network::ring_collective_time(cluster(3.0), cal.collectives, spec::Collective::all_gather, 1073741824.0, 32, 8);
  CHECK(tapered > flat * 1.5);
}

TEST_CASE("network::SimgridNetwork: the step's invariants hold on both backends and both engines", "[network]") {
  // The same op graph on the analytical backend, the SimGrid one (per-kind factors, longest-path
  // pass) and replayed on SimGrid by the event-driven engine: the breakdown sums to the step time
  // on each, the graph is the same, SimGrid is within 3% of analytical on the non-blocking fabric
  // and never faster on the 3:1 and 4:1 tapered ones.
  spec::Model model = spec::load_model(test::source_path("models/llama3-8b.json"));
  spec::Calibration cal = spec::load_calibration(test::source_path("calibration/dgx-h100.json"));
  for (const char* f : {"tests/fixtures/clusters/dgx-h100-flat16.json", "tests/fixtures/clusters/dgx-h100-tapered.json",
                        "tests/fixtures/clusters/dgx-h100-tapered4.json"}) {
    INFO(f);
    spec::Cluster c = spec::load_cluster(test::source_path(f));
    schedule::StepSpec s{&model, &c, spec::Parallel{.tp = 2, .pp = 2, .dp = 8, .zero_stage = 1, .sequence_parallel = true},
                         spec::Training{.micro_batch = 1, .global_batch = 64, .seq_len = 4096}, &cal,
                         spec::load_stack("megatron-core").software};
    auto analytical = network::make_backend(network::Kind::analytical, c, s.par, cal.collectives);
    auto simgrid = network::make_backend(network::Kind::simgrid, c, s.par, cal.collectives);
    engine::Simulation a = engine::simulate_step(s, *analytical), g = engine::simulate_step(s, *simgrid);
    engine::Workspace ws;
    engine::StepResult r = network::replay(s, ws);
    for (const engine::StepResult* x : {&a.result, &g.result, &r}) {
      double sum = 0;
      for (Seconds b : x->breakdown) sum += b.value();
      CHECK_THAT(sum, WithinRel(x->step_time.value(), 1e-12));
      CHECK(x->step_time.value() >= a.result.step_time.value() * (1 - 1e-9));
      if (std::string(f).find("flat16") != std::string::npos) CHECK(x->step_time.value() <= a.result.step_time.value() * 1.03);
    }
    CHECK(a.step.graph.tasks().size() == g.step.graph.tasks().size());
    CHECK(ws.step.graph.tasks().size() == g.step.graph.tasks().size());
    // The replay moved every pass's TP communication onto SimGrid: TP 2 inside a node, on NVLink
    // ports the data-parallel rings' intra-node hops also use, so it is never faster than priced.
    auto tp = static_cast<std::size_t>(schedule::Category::tp_comm);
    CHECK(r.breakdown[tp].value() >= a.result.breakdown[tp].value() * (1 - 1e-6));
    CHECK(r.breakdown[tp].value() <= a.result.breakdown[tp].value() * 1.1);
  }
}

TEST_CASE("network::replay_step: a pipeline send and a DP all-reduce on one NIC share it max-min", "[network]") {
  // One GPU and one NIC per host; PP 2 x DP 2: stage 0 is ranks 0 and 1. Both start at 0 on the
  // stage: the DP ring (0->1, 1->0) and the pipeline sends (0->2, 1->3) leave every NIC of the
  // stage twice, so each flow gets half. Each transfer's flows are scaled to its analytical time
  // alone (T_ar, T_pp): the shorter ends at 2 min(T_ar, T_pp), the longer at T_ar + T_pp.
  spec::Cluster c = tiny(1.0);
  spec::Parallel par{.tp = 1, .pp = 2, .dp = 2, .zero_stage = 1};
  spec::Calibration cal = spec::load_calibration(c.calibration);
  schedule::StepGraph step;
  auto dp = step.graph.add_stream(0, "dp"), pp = step.graph.add_stream(0, "pp send fwd");
  schedule::Task ar{.stream = dp, .kind = schedule::TaskKind::comm};
  ar.comm = step.graph.add_comm({spec::Collective::all_reduce, schedule::Group::dp, Bytes(512e6)});
  schedule::Task send{.stream = pp, .kind = schedule::TaskKind::comm};
  send.comm = step.graph.add_comm({spec::Collective::send_recv, schedule::Group::pp, Bytes(64e6)});
  send.label.kind = schedule::Label::Kind::send_activations;
  step.graph.add_task(ar);
  step.graph.add_task(send);
  spec::Cluster flat = network::non_blocking(c);
  engine::AnalyticalNetwork alone(flat, par, cal.collectives);
  double t_ar = alone.time(step.graph.comm(0)).value(), t_pp = alone.time(step.graph.comm(1)).value();
  REQUIRE(t_pp < t_ar);
  engine::Timeline tl;
  network::ReplayStats st;
  network::replay_step(step, c, par, cal.collectives, 0.0, tl, &st);
  CHECK(st.transfers == 2);
  CHECK(st.flows == 4);
  CHECK_THAT(to_seconds(tl.tasks[1].end).value(), WithinRel(2 * t_pp, 1e-4));
  CHECK_THAT(to_seconds(tl.tasks[0].end).value(), WithinRel(t_ar + t_pp, 1e-4));
  // Alone, each takes its analytical time (the event-driven engine over SimGrid, one transfer).
  schedule::StepGraph one;
  auto s1 = one.graph.add_stream(0, "dp");
  schedule::Task only{.stream = s1, .kind = schedule::TaskKind::comm};
  only.comm = one.graph.add_comm({spec::Collective::all_reduce, schedule::Group::dp, Bytes(512e6)});
  one.graph.add_task(only);
  network::replay_step(one, c, par, cal.collectives, 0.0, tl);
  CHECK_THAT(to_seconds(tl.tasks[0].end).value(), WithinRel(t_ar, 1e-4));
}

TEST_CASE("network::replay_step: a pass's communication runs layer by layer, between its compute slices",
          "[network]") {
  // One GPU and one NIC per host, CP 2 x DP 2: every NIC carries one CP flow and one DP flow. A
  // DP all-reduce taking T alone starts at 0 beside a forward pass of compute C = 1.5 T and CP
  // traffic X = T (times alone). Its chunk has 2 layers, so it runs C/2, X/2, C/2, X/2:
  // the all-reduce runs alone until 0.75 T, then shares every NIC half and half with the first
  // X/2 (its last 0.25 T takes 0.5 T: done at 1.25 T; the pass's first X/2 then finishes alone at
  // 1.5 T); the pass ends at 1.5 T + 0.75 T + 0.5 T = 2.75 T. With the whole X after the whole C
  // (one layer) the two never meet: T and 2.5 T.
  spec::Cluster c = tiny(1.0);
  spec::Parallel par{.tp = 1, .pp = 1, .dp = 2, .cp = 2, .zero_stage = 1};
  spec::Calibration cal = spec::load_calibration(c.calibration);
  auto run = [&](std::int64_t layers, double budget = network::kMaxReplayFlows) {
    schedule::StepGraph step;
    step.partition = cost::LayerPartition(1, 1, {layers});
    auto compute = step.graph.add_stream(0, "compute"), dp = step.graph.add_stream(0, "dp");
    schedule::Task ar{.stream = dp, .kind = schedule::TaskKind::comm};
    ar.comm = step.graph.add_comm({spec::Collective::all_reduce, schedule::Group::dp, Bytes(512e6)});
    spec::Cluster flat = network::non_blocking(c);
    engine::AnalyticalNetwork alone(flat, par, cal.collectives);
    SimTime t = to_sim_time(alone.time(step.graph.comm(ar.comm)));
    schedule::Task pass{.stream = compute, .kind = schedule::TaskKind::compute,
                        .cost = step.graph.add_cost({{schedule::Category::compute, t * 3 / 2},
                                                     {schedule::Category::cp_comm, t}}),
                        .label = {schedule::Label::Kind::forward, 0, 0}};
    step.graph.add_task(ar);
    step.graph.add_task(pass);
    engine::Timeline tl;
    network::ReplayStats st;
    network::replay_step(step, c, par, cal.collectives, 0.0, tl, &st, 0, budget);
    INFO("rounds " << st.rounds << ", flows " << st.flows);
    CHECK(st.rounds == (budget >= 12 ? layers : 1));
    return std::tuple{to_seconds(tl.tasks[0].end).value(), to_seconds(tl.tasks[1].end).value(),
                      to_seconds(t).value(), to_seconds(tl.tasks[1].comm).value()};
  };
  auto [ar1, pass1, t1, comm1] = run(1);
  CHECK_THAT(ar1, WithinRel(t1, 1e-3));
  CHECK_THAT(pass1, WithinRel(2.5 * t1, 1e-3));
  CHECK_THAT(comm1, WithinRel(t1, 1e-3));  // the time past its compute
  auto [ar2, pass2, t2, comm2] = run(2);
  CHECK_THAT(ar2, WithinRel(1.25 * t2, 1e-3));
  CHECK_THAT(pass2, WithinRel(2.75 * t2, 1e-3));
  CHECK_THAT(comm2, WithinRel(1.25 * t2, 1e-3));
  // The flow budget: 4 flows for the all-reduce (two rings of two) and 4 per round of the pass.
  // 12 fit two rounds; with 10 the pass falls back to one round (as a step too large for eight
  // rounds gets four, two or one), with 7 not even that fits and the step is refused.
  auto [ar3, pass3, t3, comm3] = run(2, 10);
  CHECK_THAT(pass3, WithinRel(2.5 * t3, 1e-3));
  CHECK_THROWS_AS(run(2, 7), SpecError);
}
