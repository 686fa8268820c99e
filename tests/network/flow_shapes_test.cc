// The flows each of NCCL's algorithms sends, checked against link loads and max-min times
// computed by hand.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "helpers.h"
#include "network/cluster_flows.h"
#include "network/flows.h"
#include "spec/load.h"

using namespace dtsim;
using Catch::Matchers::WithinRel;

namespace {

spec::Cluster preset(const char* name) {
  return spec::load_cluster(test::source_path(std::string("topologies/") + name + ".json"));
}

double slowest(network::ClusterFlows& net, const std::vector<network::FlowSpec>& flows) {
  std::vector<double> t = network::simulate_flows(net.links(), flows);
  return *std::max_element(t.begin(), t.end());
}

// Bytes each link carries.
std::map<std::size_t, double> loads(const std::vector<network::FlowSpec>& flows) {
  std::map<std::size_t, double> out;
  for (const auto& f : flows)
    for (std::size_t l : f.path) out[l] += f.bytes;
  return out;
}

}  // namespace

TEST_CASE("network::add_all_to_all: fused rounds keep every NVLink port's bytes", "[network]") {
  // EP 16 inside one GB200 NVL72 domain: 15 peers per member fused into 8 slots (rounds 1..8 of
  // slots 1..7 carry two rounds, slot 8 one): 16 x 8 flows, 15 shares out of and into every port.
  spec::Cluster c = preset("gb200-nvl72");
  network::ClusterFlows net(c, 72, 1.0, 1.0);
  std::vector<std::int64_t> members;
  for (std::int64_t r = 0; r < 16; ++r) members.push_back(r);
  const double bytes = 16e9, share = bytes / 16;
  std::vector<network::FlowSpec> flows;
  network::add_all_to_all(net, members, bytes, flows);
  CHECK(flows.size() == 16 * 8);
  auto load = loads(flows);
  REQUIRE(load.size() == 32);  // one out and one in port per member
  for (const auto& [link, b] : load) CHECK_THAT(b, WithinRel(15 * share, 1e-12));
  // Each port carries the same bytes, so all finish together at 15 shares over the port.
  CHECK_THAT(slowest(net, flows), WithinRel(15 * share / c.intra.bandwidth.value(), 1e-6));
}

TEST_CASE("network::add_all_to_all: across nodes PXN sends rail to rail", "[network]") {
  // EP 16 over two DGX H100s: each host sends each remote member everything its 8 members have
  // for it in one flow from the GPU on that member's rail; NIC k of a host carries 8 shares out
  // and 8 in, which is what the full mesh puts on it too. NVLink (9x faster) is never the bound.
  spec::Cluster c = preset("dgx-h100");
  network::ClusterFlows net(c, 16, 1.0, 1.0);
  std::vector<std::int64_t> members;
  for (std::int64_t r = 0; r < 16; ++r) members.push_back(r);
  const double bytes = 16e9, share = bytes / 16;
  std::vector<network::FlowSpec> flows;
  network::add_all_to_all(net, members, bytes, flows);
  // In each host: 8 x 7 fused peer flows (7 < 8 slots: the mesh); across: 2 x 8 PXN flows; the
  // NVLink hops to the relays: 2 x 8 x 7.
  CHECK(flows.size() == 2 * 56 + 2 * 8 + 2 * 56);
  const double nic = c.nic_bandwidth.value();
  CHECK_THAT(slowest(net, flows), WithinRel(8 * share / nic, 1e-6));
  std::vector<network::FlowSpec> mesh;
  for (std::int64_t a : members)
    for (std::int64_t b : members)
      if (a != b) mesh.push_back(net.flow(a, b, share));
  CHECK_THAT(slowest(net, mesh), WithinRel(8 * share / nic, 1e-6));
}

TEST_CASE("network::add_tree: NCCL's double binary tree over four nodes", "[network]") {
  // One GPU on each of 4 DGX H100s (ranks 0, 8, 16, 24 = positions 0..3). Tree 0: 1 -> 2, 3 -> 2,
  // 2 -> 0; tree 1 mirrors it: 0 -> 1, 2 -> 1, 1 -> 3. Positions 2 and 1 are inner nodes once:
  // 4 flows of S/2 leave their NIC (three tree edges down or up in one tree, one in the other),
  // so the slowest flow takes 2S over a NIC; 12 flows in all.
  spec::Cluster c = preset("dgx-h100");
  network::ClusterFlows net(c, 32, 1.0, 1.0);
  const double s = 8e9;
  std::vector<network::FlowSpec> flows;
  network::add_tree(net, {0, 8, 16, 24}, s, flows);
  CHECK(flows.size() == 12);
  CHECK_THAT(slowest(net, flows), WithinRel(2 * s / c.nic_bandwidth.value(), 1e-6));
  // Two GPUs per node add a chain hop each way per tree inside every node, over NVLink.
  std::vector<network::FlowSpec> chained;
  network::add_tree(net, {0, 1, 8, 9, 16, 17, 24, 25}, s, chained);
  CHECK(chained.size() == 12 + 2 * 4 * 2);
}

TEST_CASE("network::add_nvls: the switch reduces, each port carries S(k+1)/k", "[network]") {
  spec::Cluster c = preset("dgx-h100");
  network::ClusterFlows net(c, 8, 1.0, 1.0);
  std::vector<std::int64_t> members{0, 1, 2, 3, 4, 5, 6, 7};
  const double s = 8e9;
  std::vector<network::FlowSpec> flows;
  network::add_nvls(net, members, s, flows);
  CHECK(flows.size() == 16);
  CHECK_THAT(slowest(net, flows), WithinRel(s * 9 / 8 / c.intra.bandwidth.value(), 1e-6));
  // Two nodes (NVLSTree): each local rank's 1/8 shard goes up and down one tree edge per tree.
  network::ClusterFlows two(c, 16, 1.0, 1.0);
  std::vector<std::int64_t> both;
  for (std::int64_t r = 0; r < 16; ++r) both.push_back(r);
  std::vector<network::FlowSpec> across;
  network::add_nvls(two, both, s, across);
  CHECK(across.size() == 32 + 8 * 2 * 2);
  // A NIC carries its shard on both trees: 2 x S/16 = S/8 out at 50 GB/s, as long as NVLink's
  // 9S/8 at 450 GB/s.
  CHECK_THAT(slowest(two, across), WithinRel(s * 9 / 8 / c.intra.bandwidth.value(), 1e-6));
}
