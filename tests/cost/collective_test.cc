#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "cost/collective.h"
#include "helpers.h"
#include "spec/calibration.h"
#include "spec/load.h"

using namespace dtsim;
using Catch::Matchers::Contains;
using Catch::Matchers::WithinAbs;
using Catch::Matchers::WithinRel;
using cost::Collective;
using spec::CollAlgo;
using spec::Protocol;
using topology::GroupShape;

namespace {

constexpr Collective kAllOps[] = {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter,
                                  Collective::all_to_all, Collective::broadcast, Collective::send_recv};

// A toy cluster with round numbers: 8 GPUs per node, NVLink 100 GB/s per GPU per direction,
// 8 NICs of 5 GB/s (one per GPU), one non-blocking leaf level.
spec::Cluster toy_cluster() {
  spec::Cluster c;
  c.name = "toy";
  c.gpus_per_node = 8;
  c.intra = {.fabric = spec::IntraFabric::nvswitch, .bandwidth = gbytes_per_s(100), .latency = us(0.5)};
  c.nics_per_node = 8;
  c.nic_bandwidth = gbytes_per_s(5);
  c.nic_latency = us(1);
  c.gpu_to_nic = {0, 1, 2, 3, 4, 5, 6, 7};
  c.fabric = {{.switch_radix = 64, .oversubscription = 1.0, .hop_latency = us(0.1)}};
  return c;
}

void put(spec::AlgoTable& t, CollAlgo a, Protocol p, double base_us, double step_us, double eff) {
  t[static_cast<std::size_t>(a)][static_cast<std::size_t>(p)] = {true, us(base_us), us(step_us), eff};
}

// Ring Simple only: intra {10 us, 1 us/step, 0.5}, inter {20 us, 5 us/step, 0.8}.
spec::CollectiveCalibration toy_calibration() {
  spec::CollectiveCalibration cal;
  put(cal.intra, CollAlgo::ring, Protocol::simple, 10, 1, 0.5);
  put(cal.inter, CollAlgo::ring, Protocol::simple, 20, 5, 0.8);
  return cal;
}

const GroupShape kOneNode{8, 8, 1, 0, 0};
const GroupShape kTwoNodes{16, 8, 2, 1, 1};

struct Profile {
  spec::Cluster cluster;
  spec::CollectiveCalibration cal;
};

Profile shipped(const std::string& name) {
  return {spec::load_cluster(test::source_path("topologies/" + name + ".json")),
          spec::load_calibration(test::source_path("calibration/" + name + ".json")).collectives};
}

}  // namespace

TEST_CASE("cost::bus_factor: nccl-tests doc/PERFORMANCE.md", "[cost]") {
  // AllReduce 2(n-1)/n; ReduceScatter, AllGather, AlltoAll (n-1)/n; Broadcast 1; SendRecv 1.
  CHECK(cost::bus_factor(Collective::all_reduce, 8) == 1.75);   // 2*7/8
  CHECK(cost::bus_factor(Collective::all_reduce, 2) == 1.0);    // 2*1/2
  CHECK(cost::bus_factor(Collective::all_reduce, 1) == 0.0);
  CHECK(cost::bus_factor(Collective::all_gather, 8) == 0.875);  // 7/8
  CHECK(cost::bus_factor(Collective::reduce_scatter, 16) == 0.9375);
  CHECK(cost::bus_factor(Collective::all_to_all, 4) == 0.75);
  CHECK(cost::bus_factor(Collective::broadcast, 64) == 1.0);
  CHECK(cost::bus_factor(Collective::send_recv, 2) == 1.0);
}

TEST_CASE("cost::parse_collective: names round-trip", "[cost]") {
  for (Collective op : kAllOps) CHECK(cost::parse_collective(cost::to_string(op)) == op);
  CHECK_FALSE(cost::parse_collective("allreduce").has_value());
}

TEST_CASE("cost::collective_time: one rank or zero bytes costs nothing", "[cost]") {
  Profile h = shipped("dgx-h100");
  for (Collective op : kAllOps) {
    CHECK(cost::collective_time(op, gib(1), GroupShape{}, h.cluster, h.cal).time == Seconds(0.0));
    CHECK(cost::collective_time(op, bytes(0), kTwoNodes, h.cluster, h.cal).time == Seconds(0.0));
    CHECK(cost::collective_candidates(op, gib(1), GroupShape{}, h.cluster, h.cal).empty());
  }
}

TEST_CASE("cost::collective_time: more bytes never cost less", "[cost]") {
  const GroupShape shapes[] = {kOneNode, kTwoNodes, {2, 1, 2, 1, 1}, {64, 1, 64, 2, 1}, {1024, 8, 128, 2, 1},
                               {32, 4, 8, 1, 2}};
  for (const char* name : {"dgx-a100", "dgx-h100"}) {
    Profile p = shipped(name);
    for (const GroupShape& g : shapes)
      for (Collective op : kAllOps) {
        Seconds prev{0.0};
        for (double s = 1; s <= 32.0 * (1ull << 30); s *= 1.5) {
          Seconds t = cost::collective_time(op, bytes(s), g, p.cluster, p.cal).time;
          INFO(name << " " << cost::to_string(op) << " ranks " << g.ranks << " size " << s);
          REQUIRE(t >= prev);
          prev = t;
        }
      }
  }
}

TEST_CASE("cost::collective_time: single-node ring, worked by hand", "[cost]") {
  // 8 ranks, 1e9 B all-reduce: 10 + 2*7*1 = 24 us latency; bus bytes 1.75e9 at 0.5 * 100 GB/s
  // = 35 ms. busbw = 1.75 * 1e9 / 0.035024 s.
  auto e = cost::collective_time(Collective::all_reduce, gb(1), kOneNode, toy_cluster(), toy_calibration());
  CHECK_THAT(e.time.value(), WithinRel(0.035024, 1e-12));
  CHECK(e.algo == CollAlgo::ring);
  CHECK(e.protocol == Protocol::simple);
  CHECK_FALSE(e.hierarchical);
  CHECK_THAT(e.bus_bandwidth.value(), WithinRel(1.75e9 / 0.035024, 1e-12));
  // All-gather of the same 1e9 B buffer: 10 + 7*1 us; 0.875e9 B / 50e9 = 17.5 ms.
  auto ag = cost::collective_time(Collective::all_gather, gb(1), kOneNode, toy_cluster(), toy_calibration());
  CHECK_THAT(ag.time.value(), WithinRel(0.017517, 1e-12));
}

TEST_CASE("cost::collective_time: a collective's own table takes precedence over the shared one", "[cost]") {
  // all_gather gets its own intra ring Simple entry {4 us, 1 us/step, 0.25}: 4 + 7*1 us and
  // 0.875e9 B / (0.25 * 100 GB/s) = 35 ms. all_reduce keeps the shared entry (35.024 ms as above).
  spec::CollectiveCalibration cal = toy_calibration();
  put(cal.by_collective[static_cast<std::size_t>(Collective::all_gather)][0], CollAlgo::ring, Protocol::simple, 4, 1,
      0.25);
  auto ag = cost::collective_time(Collective::all_gather, gb(1), kOneNode, toy_cluster(), cal);
  CHECK_THAT(ag.time.value(), WithinRel(0.035011, 1e-12));
  auto ar = cost::collective_time(Collective::all_reduce, gb(1), kOneNode, toy_cluster(), cal);
  CHECK_THAT(ar.time.value(), WithinRel(0.035024, 1e-12));
  // An entry the collective's table lacks falls back to the shared one: inter-node all_gather.
  auto ag2 = cost::collective_time(Collective::all_gather, gb(1), kTwoNodes, toy_cluster(), cal);
  auto shared = cost::collective_time(Collective::all_gather, gb(1), kTwoNodes, toy_cluster(), toy_calibration());
  CHECK(ag2.time.value() > shared.time.value());  // its intra leg is slower (own 0.25 vs shared 0.5)
}

TEST_CASE("cost::collective_time: multi-node ring drives one NIC per local member", "[cost]") {
  // 2 nodes x 8: latency inter base 20 + (2*15 - 2) intra steps * 3 + 2 inter steps * 5 = 114 us
  // (a ring spanning nodes pays NCCL's network overhead on every step, 1 us on Intel hosts, x3
  // for Simple, above the table's 1 us NVLink step).
  // Bus bytes 1.875e9. NVLink 0.5*100 = 50 GB/s; the node's ring traffic leaves through 8 NIC
  // shares: 8 * 5 GB/s * 0.8 = 32 GB/s, the bottleneck: 1.875e9 / 32e9 = 58.59375 ms.
  spec::Cluster c = toy_cluster();
  auto e = cost::collective_time(Collective::all_reduce, gb(1), kTwoNodes, c, toy_calibration());
  CHECK_THAT(e.time.value(), WithinRel(0.05859375 + 114e-6, 1e-12));
  // Two GPUs per NIC (every group talks at once) halve each share: the ring needs 1.875e9 /
  // 16e9 = 117.19 ms, and the hierarchical form now wins: 2 * 17.5 ms on NVLink + 1.25e8 B
  // over 2.5 * 0.8 = 2 GB/s = 62.5 ms, + 64 us (see the hierarchical test below).
  GroupShape shared = kTwoNodes;
  shared.nic_sharing = 2;
  auto all = cost::collective_candidates(Collective::all_reduce, gb(1), shared, c, toy_calibration());
  REQUIRE(all.size() == 2);
  CHECK_THAT(all[0].time.value(), WithinRel(0.1171875 + 114e-6, 1e-12));
  // On AMD hosts NCCL's overhead is 2 us: 20 + 28 * 6 + 10 = 198 us.
  c.host_cpu = spec::HostCpu::amd;
  CHECK_THAT(cost::collective_time(Collective::all_reduce, gb(1), kTwoNodes, c, toy_calibration()).time.value(),
             WithinRel(0.05859375 + 198e-6, 1e-12));
  auto s = cost::collective_time(Collective::all_reduce, gb(1), shared, c, toy_calibration());
  CHECK(s.hierarchical);
  CHECK_THAT(s.time.value(), WithinRel(0.0975 + 64e-6, 1e-12));
}

TEST_CASE("cost::collective_time: one rank per node, oversubscribed spine", "[cost]") {
  // 16 nodes x 1 rank: no NVLink leg; latency 20 + 2*15 inter steps * 5 = 170 us; 1.875e9 B
  // through one NIC share 5 * 0.8 = 4 GB/s = 468.75 ms.
  spec::Cluster c = toy_cluster();
  GroupShape g{16, 1, 16, 1, 1};
  auto e = cost::collective_time(Collective::all_reduce, gb(1), g, c, toy_calibration());
  CHECK_THAT(e.time.value(), WithinRel(0.46875 + 170e-6, 1e-12));
  // Two levels, leaves of radix 4 at 3:1 (3 ports down, 1 up): bandwidth / 3, and each
  // inter-node step climbs leaf-spine-leaf: 2 more hops of 0.1 us (links.h network_link).
  c.fabric = {{.switch_radix = 4, .oversubscription = 3.0, .hop_latency = us(0.1)},
              {.switch_radix = 64, .oversubscription = 1.0, .hop_latency = us(0.1)}};
  g.fabric_levels = 2;
  auto o = cost::collective_time(Collective::all_reduce, gb(1), g, c, toy_calibration());
  CHECK_THAT(o.time.value(), WithinRel(3 * 0.46875 + 20e-6 + 30 * 5.2e-6, 1e-9));
}

TEST_CASE("cost::collective_time: double binary tree and the ppn=1 latency rule", "[cost]") {
  // Add tree Simple across nodes {20 us, 3 us/step, 0.6}. 16 nodes x 1:
  // tree: 20 + 2*log2(16)*3 = 44 us; 2*(15/16)*1e9 B over 5 * 0.6 = 3 GB/s = 625 ms.
  // ring: with one rank per node NCCL uses the Tree network latency per step (tuning.cc):
  // 20 + 30*3 = 110 us + 468.75 ms -> ring wins at 1 GB, tree at 1 KB (44 us vs 110 us).
  spec::CollectiveCalibration cal = toy_calibration();
  put(cal.inter, CollAlgo::tree, Protocol::simple, 20, 3, 0.6);
  GroupShape g{16, 1, 16, 1, 1};
  auto all = cost::collective_candidates(Collective::all_reduce, gb(1), g, toy_cluster(), cal);
  REQUIRE(all.size() == 2);
  CHECK_THAT(all[0].time.value(), WithinRel(0.46875 + 110e-6, 1e-12));
  CHECK(all[1].algo == CollAlgo::tree);
  CHECK_THAT(all[1].time.value(), WithinRel(0.625 + 44e-6, 1e-12));
  CHECK(cost::collective_time(Collective::all_reduce, gb(1), g, toy_cluster(), cal).algo == CollAlgo::ring);
  CHECK(cost::collective_time(Collective::all_reduce, kib(1), g, toy_cluster(), cal).algo == CollAlgo::tree);
}

TEST_CASE("cost::collective_time: NVLS moves S(n+1)/n per GPU", "[cost]") {
  // NVLS {5 us, 2 us/step, 0.5}, one step: 7 us + 1e9 * 9/8 / 50e9 = 22.5 ms, vs ring 35.024 ms.
  spec::Cluster c = toy_cluster();
  c.intra.nvls = true;
  spec::CollectiveCalibration cal = toy_calibration();
  put(cal.intra, CollAlgo::nvls, Protocol::simple, 5, 2, 0.5);
  auto e = cost::collective_time(Collective::all_reduce, gb(1), kOneNode, c, cal);
  CHECK(e.algo == CollAlgo::nvls);
  CHECK_THAT(e.time.value(), WithinRel(0.0225 + 7e-6, 1e-12));
  // Without NVLink SHARP in the cluster the entry is ignored.
  c.intra.nvls = false;
  CHECK(cost::collective_time(Collective::all_reduce, gb(1), kOneNode, c, cal).algo == CollAlgo::ring);
}

TEST_CASE("cost::collective_candidates: hierarchical all-reduce is the sum of its phases", "[cost]") {
  // 2 nodes x 8, 1e9 B. Intra reduce-scatter: 10 + 7 us + 0.875e9/50e9 = 17.5 ms; inter
  // all-reduce of 1e9/8 B over 2 nodes x 1: 20 + 2*5 us + 1.25e8/(5e9*0.8) = 31.25 ms;
  // intra all-gather = reduce-scatter. Sum 66.25 ms + 64 us > flat ring 58.65 ms.
  auto all = cost::collective_candidates(Collective::all_reduce, gb(1), kTwoNodes, toy_cluster(), toy_calibration());
  auto h = std::find_if(all.begin(), all.end(), [](const auto& e) { return e.hierarchical; });
  REQUIRE(h != all.end());
  CHECK_THAT(h->time.value(), WithinRel(0.06625 + 64e-6, 1e-12));
  CHECK_FALSE(cost::collective_time(Collective::all_reduce, gb(1), kTwoNodes, toy_cluster(), toy_calibration())
                  .hierarchical);
  // With 8 GPUs behind one NIC the flat ring crawls (8 * 5/8 * 0.8 = 4 GB/s for 1.875e9 B)
  // and the hierarchical form (1.25e8 B at 0.5 GB/s = 250 ms + 35 ms) wins.
  GroupShape one_nic = kTwoNodes;
  one_nic.nic_sharing = 8;
  CHECK(cost::collective_time(Collective::all_reduce, gb(1), one_nic, toy_cluster(), toy_calibration()).hierarchical);
}

TEST_CASE("cost::collective_time: point-to-point", "[cost]") {
  // send_recv across nodes: 20 + 5 us + 1e9 / (5e9 * 0.8) = 250 ms; inside a node 10 + 1 us +
  // 1e9 / 50e9 = 20 ms. all_to_all 16 ranks over 2 nodes: per GPU 7/16 of 1e9 over NVLink
  // (8.75 ms) and 8/16 over its NIC share (125 ms), concurrently; a network step per remote peer:
  // 20 + 8 x 5 = 60 us.
  spec::Cluster c = toy_cluster();
  auto x = cost::collective_time(Collective::send_recv, gb(1), {2, 1, 2, 1, 1}, c, toy_calibration());
  CHECK_THAT(x.time.value(), WithinRel(0.25 + 25e-6, 1e-12));
  auto i = cost::collective_time(Collective::send_recv, gb(1), {2, 2, 1, 0, 0}, c, toy_calibration());
  CHECK_THAT(i.time.value(), WithinRel(0.02 + 11e-6, 1e-12));
  auto a = cost::collective_time(Collective::all_to_all, gb(1), kTwoNodes, c, toy_calibration());
  CHECK_THAT(a.time.value(), WithinRel(0.125 + 60e-6, 1e-12));
}

TEST_CASE("cost::collective_time: an all_to_all pays a network step per remote peer", "[cost]") {
  // NCCL runs it as one send and one receive per peer; across nodes each remote peer costs a step.
  // 16 ranks on 2 nodes have 8 remote peers, 64 on 8 nodes 56: at a size where latency dominates
  // the time grows by the 48 extra steps (5 us each in the toy table), less the bytes' small growth.
  spec::Cluster c = toy_cluster();
  spec::CollectiveCalibration cal = toy_calibration();
  GroupShape eight_nodes{64, 8, 8, 1, 1};
  double two = cost::collective_time(Collective::all_to_all, bytes(1024), kTwoNodes, c, cal).time.value();
  double eight = cost::collective_time(Collective::all_to_all, bytes(1024), eight_nodes, c, cal).time.value();
  CHECK_THAT(eight - two, WithinAbs(48 * 5e-6, 1e-6));
  // Inside a node it stays one NVLink step, whatever the group.
  double one_node = cost::collective_time(Collective::all_to_all, bytes(1024), {8, 8, 1, 0, 0}, c, cal).time.value();
  CHECK(one_node < two);
}

TEST_CASE("cost::collective_time: a send or receive above 16 KiB runs NCCL's Simple protocol", "[cost]") {
  // NCCL_P2P_LL_THRESHOLD (16384 bytes per send, src/enqueue.cc): LL only for small transfers,
  // whatever a fitted LL entry would promise. all_to_all's sends are size / ranks each.
  Profile h = shipped("dgx-h100");
  for (double s : {1e3, 16384.0 * 16, 16384.0 * 16 + 16, 1e6, 1e9}) {
    INFO(s);
    for (const auto& e : cost::collective_candidates(Collective::all_to_all, bytes(s), kTwoNodes, h.cluster, h.cal))
      if (e.protocol == spec::Protocol::ll) CHECK(s / 16 <= 16384.0);
    for (const auto& e : cost::collective_candidates(Collective::send_recv, bytes(s), {2, 1, 2, 1, 1}, h.cluster, h.cal))
      if (e.protocol == spec::Protocol::ll) CHECK(s <= 16384.0);
  }
  auto small = cost::collective_candidates(Collective::all_to_all, bytes(1e3), kTwoNodes, h.cluster, h.cal);
  CHECK(std::any_of(small.begin(), small.end(), [](const auto& e) { return e.protocol == spec::Protocol::ll; }));
}

TEST_CASE("cost::collective_time: a NIC in two planes gives a point-to-point transfer one", "[cost]") {
  // nic_planes 2: each NIC's 5 GB/s as two 2.5 GB/s ports. Point-to-point rides one port: send_recv
  // across nodes 20 + 5 us + 1e9 / (2.5e9 * 0.8) = 500 ms, all_to_all's NIC leg 0.5e9 / 2e9 = 250 ms
  // (and its 20 + 8 x 5 us of latency);
  // inside a node nothing changes. A ring spreads its channels over both, so all_reduce and
  // all_gather keep their single-port times.
  spec::Cluster one = toy_cluster(), two = toy_cluster();
  two.nic_planes = 2;
  spec::CollectiveCalibration cal = toy_calibration();
  CHECK_THAT(cost::collective_time(Collective::send_recv, gb(1), {2, 1, 2, 1, 1}, two, cal).time.value(),
             WithinRel(0.5 + 25e-6, 1e-12));
  CHECK_THAT(cost::collective_time(Collective::all_to_all, gb(1), kTwoNodes, two, cal).time.value(),
             WithinRel(0.25 + 60e-6, 1e-12));
  CHECK(cost::collective_time(Collective::send_recv, gb(1), {2, 2, 1, 0, 0}, two, cal).time ==
        cost::collective_time(Collective::send_recv, gb(1), {2, 2, 1, 0, 0}, one, cal).time);
  for (Collective op : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter})
    CHECK(cost::collective_time(op, gb(1), kTwoNodes, two, cal).time ==
          cost::collective_time(op, gb(1), kTwoNodes, one, cal).time);
}

TEST_CASE("cost::collective_time: picks the fastest candidate", "[cost]") {
  Profile h = shipped("dgx-h100");
  for (double s : {1e3, 1e6, 1e8, 1e10}) {
    auto all = cost::collective_candidates(Collective::all_reduce, bytes(s), kTwoNodes, h.cluster, h.cal);
    auto best = std::min_element(all.begin(), all.end(), [](auto& a, auto& b) { return a.time < b.time; });
    CHECK(cost::collective_time(Collective::all_reduce, bytes(s), kTwoNodes, h.cluster, h.cal) == *best);
  }
}

TEST_CASE("cost::collective_time: an empty calibration is an input error", "[cost]") {
  REQUIRE_THROWS_AS(cost::collective_time(Collective::all_reduce, gb(1), kOneNode, toy_cluster(), {}), SpecError);
  REQUIRE_THROWS_WITH(cost::collective_time(Collective::all_reduce, gb(1), kTwoNodes, toy_cluster(), {}),
                      Contains("/collectives/inter_node"));
}

namespace {

// A published single-node all_reduce point: size and time (us). Rows that give only busbw
// (the Azure tables) get time = size * 2(n-1)/n / busbw, inverting nccl-tests' definition.
struct Published {
  std::string id;
  double bytes = 0;
  double time_us = 0;
  double busbw_GBps = 0;
};

std::vector<Published> published_all_reduce(const nlohmann::json& cases, const std::string& gpu) {
  std::vector<Published> out;
  for (const auto& c : cases) {
    std::string id = c.at("id");
    bool table = id.rfind("dgxc-", 0) == 0 || id.rfind("azure-", 0) == 0;
    if (!table || c.at("nodes") != 1 || c.at("message_bytes").is_null() ||
        c.at("gpu").get<std::string>().find(gpu) == std::string::npos ||
        c.at("collective").get<std::string>().rfind("all_reduce", 0) != 0)
      continue;
    double s = c.at("message_bytes"), f = cost::bus_factor(Collective::all_reduce, c.at("gpus_per_node"));
    double busbw = c.at("busbw_GBps");
    double t = c.at("time_us").is_null() ? s * f / (busbw * 1e3) : c.at("time_us").get<double>();
    out.push_back({id, s, t, busbw});
  }
  return out;
}

std::optional<nlohmann::json> validation_cases() {
  std::filesystem::path p = std::filesystem::path(DTSIM_SHARED_DIR) / "validation/nccl_bandwidth_cases.json";
  if (!std::filesystem::exists(p)) return std::nullopt;
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("cost::collective_time: shipped profiles reproduce published single-node all_reduce", "[cost]") {
  // ../shared/validation/nccl_bandwidth_cases.json: A100 = Azure ND A100 v4 (NCCL 2.18.5);
  // H100 = NVIDIA DGX Cloud sample output and the Azure ND H100 v5 table. Large messages
  // (>= 64 MiB): predicted busbw within 10% of every published H100 row and 15% of every A100
  // row (the A100 profile is fitted to this table and to Meta's A100 8-GPU log, which measured up
  // to 27% more at 64 MiB, 210.9 against 166.6 GB/s; calibration/collectives-fit.md). Small messages (<= 64 KiB)
  // are latency-bound: predicted time within a factor 2 of the published time. nccl-tests
  // prints an out-of-place and an in-place column per size; for the latency check the faster
  // of the two is the measurement (the DGX Cloud 32 B out-of-place 68.1 us is a one-off stall:
  // its in-place twin took 13.5 us).
  auto cases = validation_cases();
  if (!cases) {
    WARN("nccl_bandwidth_cases.json not found under " DTSIM_SHARED_DIR "; skipped");
    return;
  }
  for (auto [gpu, preset, expected_large, tolerance] :
       {std::tuple{"A100", "dgx-a100", 8, 0.15}, std::tuple{"H100", "dgx-h100", 26, 0.10}}) {
    Profile p = shipped(preset);
    int large = 0;
    std::map<std::pair<std::string, double>, double> fastest;  // (table, size) -> time
    for (const Published& c : published_all_reduce(*cases, gpu)) {
      auto e = cost::collective_time(Collective::all_reduce, bytes(c.bytes), kOneNode, p.cluster, p.cal);
      INFO(c.id << ": published " << c.busbw_GBps << " GB/s, " << c.time_us << " us; predicted "
                << to_gbytes_per_s(e.bus_bandwidth) << " GB/s, " << to_us(e.time) << " us");
      if (c.bytes >= 64.0 * (1 << 20)) {
        ++large;
        CHECK_THAT(to_gbytes_per_s(e.bus_bandwidth), WithinRel(c.busbw_GBps, tolerance));
      }
      auto key = std::make_pair(c.id.substr(0, 5), c.bytes);
      if (!fastest.count(key) || c.time_us < fastest[key]) fastest[key] = c.time_us;
    }
    CHECK(large == expected_large);  // A100 64M..8G = 8 rows; H100 DGX Cloud 9 sizes x 2 + Azure 8
    for (const auto& [key, t] : fastest) {
      if (key.second > 64 * 1024) continue;
      double predicted = to_us(cost::collective_time(Collective::all_reduce, bytes(key.second), kOneNode,
                                                     p.cluster, p.cal).time);
      INFO(gpu << " " << key.first << " " << key.second << " B: published " << t << " us, predicted " << predicted);
      CHECK(predicted <= 2.0 * t);
      CHECK(predicted >= 0.5 * t);
    }
  }
}

TEST_CASE("cost::collective_time: NDR per-NIC figures across nodes", "[cost]") {
  // nccl-tests#290 (NVIDIA): "For NDR @ 400Gbps you should see 46-48GB/s per NIC" for a
  // 2-node NCCL_ALGO=RING all-reduce, 8 NICs per node -> ring busbw / 8 in [46, 48]; the
  // model's ring is NVLink-bound at 0.822 * 450 = 369.9 (46.2 per NIC) just under the NICs'
  // 8 * 0.94 * 50 = 376. nccl-tests#267: all-to-all reaches "up to 48-49GB/s per NIC"; with
  // one rank per node every byte but the rank's own 1/n crosses its NIC, so busbw =
  // algbw * (n-1)/n is the NIC rate, 0.94 * 50 = 47 GB/s (3% under 48.5).
  // The shared tables carry these figures; the profile's own all_reduce tables are fitted to
  // public 2-node logs instead (calibration/collectives-fit.md), where forced ring is not measured.
  Profile h = shipped("dgx-h100");
  h.cal.by_collective = {};
  auto all = cost::collective_candidates(Collective::all_reduce, gib(8), kTwoNodes, h.cluster, h.cal);
  auto ring = std::find_if(all.begin(), all.end(), [](const auto& e) {
    return e.algo == CollAlgo::ring && e.protocol == Protocol::simple && !e.hierarchical;
  });
  REQUIRE(ring != all.end());
  CHECK(to_gbytes_per_s(ring->bus_bandwidth) / 8 >= 46.0);
  CHECK(to_gbytes_per_s(ring->bus_bandwidth) / 8 <= 48.0);
  auto a2a = cost::collective_time(Collective::all_to_all, gib(8), {6, 1, 6, 1, 1}, h.cluster, h.cal);
  CHECK_THAT(to_gbytes_per_s(a2a.bus_bandwidth), WithinRel(48.5, 0.05));
}

TEST_CASE("cli collective: JSON table end to end", "[cli]") {
  auto r = test::run_dtsim(
      "collective --cluster dgx-h100 --op all_reduce --gpus 16 --min-bytes 1M --max-bytes 4M --json");
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j.at("cluster") == "dgx-h100");
  CHECK(j.at("op") == "all_reduce");
  CHECK(j.at("gpus") == 16);
  REQUIRE(j.at("rows").size() == 3);  // 1M, 2M, 4M
  CHECK(j.at("rows")[0].at("bytes") == 1048576);
  CHECK(j.at("rows")[2].at("bytes") == 4194304);
  for (const auto& row : j.at("rows"))
    for (const char* key : {"bytes", "time_us", "algbw_GBps", "busbw_GBps", "algorithm", "protocol"})
      CHECK(row.contains(key));
  // busbw = algbw * 2(n-1)/n = algbw * 1.875 for 16 ranks.
  CHECK_THAT(j.at("rows")[1].at("busbw_GBps").get<double>(),
             WithinRel(j.at("rows")[1].at("algbw_GBps").get<double>() * 1.875, 1e-9));
}

TEST_CASE("cli collective: bad input exits 2 with one line naming the flag", "[cli]") {
  auto r = test::run_dtsim("collective --cluster dgx-h100 --op allreduce --gpus 8");
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK_THAT(r.err, Contains("--op") && Contains("\"allreduce\""));
  auto b = test::run_dtsim("collective --cluster dgx-h100 --op all_gather --gpus 8 --max-bytes 8X");
  CHECK(b.status == 2);
  CHECK_THAT(b.err, Contains("--max-bytes"));
  auto k = test::run_dtsim("collective --cluster dgx-h100 --op all_gather --gpus 8 --ranks-per-node 3");
  CHECK(k.status == 2);
  CHECK_THAT(k.err, Contains("--ranks-per-node"));
}
