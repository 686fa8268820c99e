#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

#include "helpers.h"
#include "spec/load.h"
#include "topology/placement.h"

using namespace dtsim;
using topology::GroupKind;
using topology::GroupShape;

namespace {

spec::Cluster h100() { return spec::load_cluster(test::source_path("topologies/dgx-h100.json")); }

std::vector<std::int64_t> progression(std::int64_t first, std::int64_t stride, std::int64_t n) {
  std::vector<std::int64_t> v;
  for (std::int64_t i = 0; i < n; ++i) v.push_back(first + i * stride);
  return v;
}

}  // namespace

TEST_CASE("topology::rank_coord: Megatron order tp, cp, dp, pp", "[topology]") {
  // TP8 PP16 DP8 (1024 ranks): rank = tp + 8*(dp + 8*pp). 13 = 5 + 8*1 -> tp 5, dp 1, pp 0;
  // 1023 = 7 + 8*(7 + 8*15); 77 = 5 + 8*(1 + 8*1).
  spec::Parallel p{.tp = 8, .pp = 16, .dp = 8};
  CHECK(topology::world_size(p) == 1024);
  CHECK(topology::rank_coord(p, 13) == topology::RankCoord{.tp = 5, .cp = 0, .dp = 1, .pp = 0});
  CHECK(topology::rank_coord(p, 1023) == topology::RankCoord{.tp = 7, .cp = 0, .dp = 7, .pp = 15});
  CHECK(topology::rank_of(p, {.tp = 5, .dp = 1, .pp = 1}) == 77);
  for (std::int64_t r = 0; r < 1024; ++r) REQUIRE(topology::rank_of(p, topology::rank_coord(p, r)) == r);
  CHECK_THROWS_AS(topology::rank_coord(p, 1024), std::out_of_range);
}

TEST_CASE("topology::group_members: 1024 GPUs TP8 PP16 DP8", "[topology]") {
  // TP fastest: rank 13's TP group is 8..15. DP stride tp = 8: base 13 - 1*8 = 5 -> 5, 13, ..., 61.
  // PP stride tp*dp = 64: 13, 77, ..., 13 + 15*64 = 973.
  spec::Parallel p{.tp = 8, .pp = 16, .dp = 8};
  CHECK(topology::group_members(p, GroupKind::tp, 13) == progression(8, 1, 8));
  CHECK(topology::group_members(p, GroupKind::dp, 13) == progression(5, 8, 8));
  CHECK(topology::group_members(p, GroupKind::dp_cp, 13) == progression(5, 8, 8));  // cp = 1
  CHECK(topology::group_members(p, GroupKind::pp, 13) == progression(13, 64, 16));
  CHECK(topology::group_members(p, GroupKind::ep, 13) == std::vector<std::int64_t>{13});
}

TEST_CASE("topology::group_shape: 1024 GPUs TP8 PP16 DP8 on DGX H100", "[topology]") {
  // 8-GPU nodes, 8 NICs one per GPU, leaves of radix 64 with 32 ports down (32 nodes per rail).
  // TP: 8 consecutive ranks = one node. DP: stride 8 = one member per node, 8 consecutive
  // nodes, under one leaf (8 <= 32): 1 level; every GPU is in some DP group, one GPU per NIC.
  // PP neighbours: stride 64 ranks = 8 nodes apart, span 9 nodes, still one leaf.
  spec::Cluster c = h100();
  spec::Parallel p{.tp = 8, .pp = 16, .dp = 8};
  CHECK(topology::group_shape(c, p, GroupKind::tp) == GroupShape{8, 8, 1, 0, 0});
  CHECK(topology::group_shape(c, p, GroupKind::dp) == GroupShape{8, 1, 8, 1, 1});
  CHECK(topology::group_shape(c, p, GroupKind::dp_cp) == GroupShape{8, 1, 8, 1, 1});
  CHECK(topology::group_shape(c, p, GroupKind::pp) == GroupShape{2, 1, 2, 1, 1});
  CHECK(topology::group_shape(c, p, GroupKind::cp) == GroupShape{});
  CHECK(topology::group_shape(c, p, GroupKind::ep) == GroupShape{});
}

TEST_CASE("topology::group_shape: a DP group wider than one leaf climbs to the spine", "[topology]") {
  // 16384 GPUs TP8 PP16 DP128: a DP group spans 128 nodes > 32 per leaf -> 2 levels.
  spec::Parallel p{.tp = 8, .pp = 16, .dp = 128};
  CHECK(topology::group_shape(h100(), p, GroupKind::dp) == GroupShape{128, 1, 128, 2, 1});
}

TEST_CASE("topology::group_members: CP and EP carved out of the data-parallel ranks", "[topology]") {
  // TP2 CP2 DP4 PP4 EP4, 64 ranks: rank = tp + 2*(cp + 2*(dp + 4*pp)).
  // Rank 13 = 1 + 2*(0 + 2*3): tp 1, cp 0, dp 3, pp 0.
  // CP stride 2: {13, 15}. DP stride 4: base 13 - 3*4 = 1 -> 1, 5, 9, 13.
  // dp_cp stride 2, 8 members: base 13 - 6*2 = 1 -> 1, 3, ..., 15.
  // EP: j = cp + 2*dp = 6, blocks of 4 consecutive j -> j 4..7 -> ranks 1 + 2j = 9, 11, 13, 15.
  spec::Parallel p{.tp = 2, .pp = 4, .dp = 4, .cp = 2, .ep = 4};
  CHECK(topology::rank_coord(p, 13) == topology::RankCoord{.tp = 1, .cp = 0, .dp = 3, .pp = 0});
  CHECK(topology::group_members(p, GroupKind::cp, 13) == std::vector<std::int64_t>{13, 15});
  CHECK(topology::group_members(p, GroupKind::dp, 13) == progression(1, 4, 4));
  CHECK(topology::group_members(p, GroupKind::dp_cp, 13) == progression(1, 2, 8));
  CHECK(topology::group_members(p, GroupKind::ep, 13) == progression(9, 2, 4));
  CHECK(topology::ep_index(p, 13) == 2);
  // edp: etp (= tp 2) x ep 4 = 8 ranks fold below it, so edp = 16 / 8 = 2 members 8 apart:
  // base 13 - ((13 / 8) % 2) * 8 = 5 -> {5, 13}.
  CHECK(topology::group_members(p, GroupKind::edp, 13) == std::vector<std::int64_t>{5, 13});
  // Without experts (ep 1, etp = tp) the expert-data-parallel group is the dp x cp group.
  spec::Parallel dense{.tp = 2, .pp = 4, .dp = 4, .cp = 2};
  CHECK(topology::group_members(dense, GroupKind::edp, 13) == topology::group_members(dense, GroupKind::dp_cp, 13));
}

TEST_CASE("topology::group_shape: EP filling a node leaves one expert-data-parallel rank per node", "[topology]") {
  // 64 GPUs DP64 EP8 on DGX H100: the dense gradients reduce over 64 ranks, 8 per node (8 NICs
  // carry the ring); the experts' over edp = 8 ranks 8 apart, one per node (one NIC each).
  spec::Parallel p{.tp = 1, .pp = 1, .dp = 64, .ep = 8, .etp = 1};
  CHECK(topology::group_members(p, GroupKind::edp, 3) == progression(3, 8, 8));
  CHECK(topology::group_shape(h100(), p, GroupKind::dp_cp) == GroupShape{64, 8, 8, 1, 1});
  CHECK(topology::group_shape(h100(), p, GroupKind::edp) == GroupShape{8, 1, 8, 1, 1});
  // EP 64 over the whole job: every rank holds its own experts, nothing to reduce.
  spec::Parallel all{.tp = 1, .pp = 1, .dp = 64, .ep = 64, .etp = 1};
  CHECK(topology::group_shape(h100(), all, GroupKind::edp) == GroupShape{});
  CHECK(topology::to_string(GroupKind::edp) == std::string("edp"));
}

TEST_CASE("topology::group_shape: CP and EP layouts on 8-GPU nodes", "[topology]") {
  // Same job on DGX H100. CP {r, r+2}: one node. DP stride 4 x 4 = 16 ranks = 2 nodes, 2
  // members per node. dp_cp stride 2 x 8 = 2 nodes, 4 per node. EP stride 2 x 4 = 8 ranks =
  // one node. PP stride tp*cp*dp = 16 >= 8: neighbours 2 nodes apart, span 3.
  spec::Cluster c = h100();
  spec::Parallel p{.tp = 2, .pp = 4, .dp = 4, .cp = 2, .ep = 4};
  CHECK(topology::group_shape(c, p, GroupKind::tp) == GroupShape{2, 2, 1, 0, 0});
  CHECK(topology::group_shape(c, p, GroupKind::cp) == GroupShape{2, 2, 1, 0, 0});
  CHECK(topology::group_shape(c, p, GroupKind::dp) == GroupShape{4, 2, 2, 1, 1});
  CHECK(topology::group_shape(c, p, GroupKind::dp_cp) == GroupShape{8, 4, 2, 1, 1});
  CHECK(topology::group_shape(c, p, GroupKind::ep) == GroupShape{4, 4, 1, 0, 0});
  CHECK(topology::group_shape(c, p, GroupKind::pp) == GroupShape{2, 1, 2, 1, 1});
}

TEST_CASE("topology::group_shape: GPUs sharing a NIC", "[topology]") {
  // 4 NICs per node, GPUs 2i and 2i+1 on NIC i: every DP group (one member per node, all
  // groups talking at once) sees 2 GPUs per NIC.
  spec::Cluster c = h100();
  c.nics_per_node = 4;
  c.gpu_to_nic = {0, 0, 1, 1, 2, 2, 3, 3};
  spec::Parallel p{.tp = 8, .pp = 1, .dp = 4};
  CHECK(topology::group_shape(c, p, GroupKind::dp).nic_sharing == 2);
  // A flat communicator of 1 rank per node uses local GPU 0 only: its NIC is its own.
  CHECK(topology::flat_group_shape(c, 4, 1) == GroupShape{4, 1, 4, 1, 1});
  CHECK(topology::flat_group_shape(c, 16, 8) == GroupShape{16, 8, 2, 1, 2});
}

TEST_CASE("topology::group_shape: uneven layouts take the worst group", "[topology]") {
  // TP3 DP4 = 12 ranks on 8-GPU nodes: TP groups {0,1,2} {3,4,5} {6,7,8} {9,10,11}; {6,7,8}
  // straddles nodes 0 and 1 with one member on node 1: 2 nodes, 1 per node at the bottleneck.
  spec::Parallel p{.tp = 3, .pp = 1, .dp = 4};
  CHECK(topology::group_shape(h100(), p, GroupKind::tp) == GroupShape{3, 1, 2, 1, 1});
}

TEST_CASE("topology::pp_boundary_shape: only some stage boundaries cross nodes", "[topology]") {
  // DP4 PP4 on 8-GPU nodes: stages of 4 ranks. Boundary 0 (0-3 -> 4-7) stays in node 0;
  // boundary 1 (4-7 -> 8-11) crosses to node 1, one sender per NIC.
  spec::Cluster c = h100();
  spec::Parallel p{.tp = 1, .pp = 4, .dp = 4};
  CHECK(topology::pp_boundary_shape(c, p, 0) == GroupShape{2, 2, 1, 0, 0});
  CHECK(topology::pp_boundary_shape(c, p, 1) == GroupShape{2, 1, 2, 1, 1});
  CHECK_THROWS_AS(topology::pp_boundary_shape(c, p, 3), std::out_of_range);
  // The representative pp shape follows the stride rule: 4 < 8 -> inside a node.
  CHECK(topology::group_shape(c, p, GroupKind::pp) == GroupShape{2, 2, 1, 0, 0});
}

TEST_CASE("topology::flat_group_shape: nccl-tests communicators", "[topology]") {
  spec::Cluster c = h100();
  CHECK(topology::flat_group_shape(c, 8, 8) == GroupShape{8, 8, 1, 0, 0});
  CHECK(topology::flat_group_shape(c, 16, 8) == GroupShape{16, 8, 2, 1, 1});
  CHECK_THROWS_AS(topology::flat_group_shape(c, 8, 3), std::invalid_argument);
  CHECK_THROWS_AS(topology::flat_group_shape(c, 16, 16), std::invalid_argument);
}

TEST_CASE("topology: folded expert groups (etp x ep over tp x cp x dp)", "[topology]") {
  // TP 2, DP 16, EP 32, ETP 1 (Qwen3-235B on H100): one EP group per stage, ranks 0..31, all 32
  // of a stage across 4 nodes; with ETP 2 and EP 8, EP groups stride 2 within 16 ranks.
  spec::Parallel p{.tp = 2, .pp = 8, .dp = 16, .ep = 32, .etp = 1};
  auto ep = topology::group_members(p, GroupKind::ep, 5);
  REQUIRE(ep.size() == 32);
  CHECK(ep.front() == 0);
  CHECK(ep.back() == 31);
  CHECK(topology::ep_index(p, 5) == 5);
  CHECK(topology::ep_index(p, 37) == 5);  // stage 1 starts at rank 32
  CHECK(topology::group_shape(h100(), p, GroupKind::ep).nodes == 4);
  p = spec::Parallel{.tp = 2, .pp = 1, .dp = 8, .ep = 4, .etp = 2};
  CHECK(topology::group_members(p, GroupKind::ep, 3) == std::vector<std::int64_t>{1, 3, 5, 7});
  CHECK(topology::ep_index(p, 3) == 1);
  CHECK(topology::ep_index(p, 9) == 0);
}

TEST_CASE("topology::ep_index: ep must divide dp*cp", "[topology]") {
  spec::Parallel p{.tp = 2, .pp = 1, .dp = 3, .ep = 2};
  CHECK_THROWS_AS(topology::ep_index(p, 0), std::invalid_argument);
  CHECK_THROWS_AS(topology::group_shape(h100(), p, GroupKind::ep), std::invalid_argument);
}

TEST_CASE("topology::group_shape: NVL72 keeps EP 64 on NVLink, a DGX B200 sends it over NICs", "[topology]") {
  // DeepSeek-V3 on 256 GPUs with TP 1, EP 64 (Megatron-Bridge 25.11 GB200 layout): each EP group
  // is 64 consecutive ranks = one rack's 64 GPUs; on 8-GPU DGX nodes it spans 8 nodes.
  spec::Cluster nvl = spec::load_cluster(test::source_path("topologies/gb200-nvl72.json"));
  spec::Cluster dgx = spec::load_cluster(test::source_path("topologies/dgx-b200.json"));
  spec::Parallel p{.tp = 1, .pp = 4, .dp = 64, .ep = 64, .etp = 1};
  CHECK(topology::group_shape(nvl, p, GroupKind::ep) == GroupShape{64, 64, 1, 0, 0});
  GroupShape on_dgx = topology::group_shape(dgx, p, GroupKind::ep);
  CHECK(on_dgx.nodes == 8);
  CHECK(on_dgx.ranks_per_node == 8);
  // Pipeline neighbours are 64 ranks apart: the next rack, over the NICs, one sender per NIC.
  GroupShape pp = topology::pp_boundary_shape(nvl, p, 0);
  CHECK(pp.nodes == 2);
  CHECK(pp.nic_sharing == 1);
  // DP 64 x PP 4: a DP group is one rack; the gradient all-reduce stays on NVLink.
  CHECK(topology::group_shape(nvl, p, GroupKind::dp).nodes == 1);
}

TEST_CASE("topology::flat_group_shape: an NVL72 rack's trays share one NVLink domain", "[topology]") {
  // nccl-tests over 16 trays of 4 GPUs in one rack: one domain of 64 ranks, no NIC crossed (as
  // group_shape prices a 64-rank EP group above); 36 trays fill two racks of 18 trays (72 each);
  // 32 trays spread evenly, 16 per rack (Cluster::domain_ranks' rule).
  spec::Cluster nvl = spec::load_cluster(test::source_path("topologies/gb200-nvl72.json"));
  CHECK(topology::flat_group_shape(nvl, 64, 4) == GroupShape{64, 64, 1, 0, 0});
  CHECK(topology::flat_group_shape(nvl, 32, 2) == GroupShape{32, 32, 1, 0, 0});
  GroupShape two = topology::flat_group_shape(nvl, 144, 4);
  CHECK(two.ranks_per_node == 72);
  CHECK(two.nodes == 2);
  CHECK(two.nic_sharing == 1);
  CHECK(two.fabric_levels >= 1);
  GroupShape even = topology::flat_group_shape(nvl, 128, 4);
  CHECK(even.ranks_per_node == 64);
  CHECK(even.nodes == 2);
  // One host per domain on a DGX: unchanged.
  CHECK(topology::flat_group_shape(h100(), 16, 8) == GroupShape{16, 8, 2, 1, 1});
}

TEST_CASE("topology: the tied-embedding pair and the model-parallel group are group kinds too", "[topology]") {
  // TP 2, PP 4, DP 2 (16 ranks, stage stride 4): rank 5 (tp 1, dp 0, stage 1).
  spec::Parallel p{.tp = 2, .pp = 4, .dp = 2};
  CHECK(topology::group_members(p, GroupKind::pp_ends, 1) == std::vector<std::int64_t>{1, 13});  // first and last stage
  CHECK(topology::group_members(p, GroupKind::model, 5) == std::vector<std::int64_t>{0, 1, 4, 5, 8, 9, 12, 13});
  CHECK(topology::group_members(p, GroupKind::model, 2) == std::vector<std::int64_t>{2, 3, 6, 7, 10, 11, 14, 15});
  CHECK(std::string(topology::to_string(GroupKind::model)) == "model");
  // The grad-norm group over 128 DGX H100 nodes (TP 8, PP 16): 128 ranks, 8 per node, 16 nodes.
  GroupShape m = topology::group_shape(h100(), spec::Parallel{.tp = 8, .pp = 16, .dp = 8}, GroupKind::model);
  CHECK(m.ranks == 128);
  CHECK(m.ranks_per_node == 8);
  CHECK(m.nodes == 16);
  CHECK(topology::group_shape(h100(), spec::Parallel{.tp = 8, .pp = 16, .dp = 8}, GroupKind::pp_ends) ==
        topology::group_shape(h100(), spec::Parallel{.tp = 8, .pp = 16, .dp = 8}, GroupKind::pp));
}
