#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/errors.h"
#include "helpers.h"
#include "spec/load.h"
#include "topology/links.h"

using namespace dtsim;
using spec::parse_cluster;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::Equals;
using Catch::Matchers::StartsWith;
using Catch::Matchers::WithinRel;
namespace fs = std::filesystem;

namespace {

// Preset names in the "gpu" key resolve through the data directory.
void use_source_tree_as_data_dir() { setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1); }

std::vector<fs::path> json_files(const std::string& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(test::source_path(dir)))
    if (e.is_regular_file() && e.path().extension() == ".json") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// A DGX H100-like node (topologies/dgx-h100.json's numbers) as inline JSON.
const std::string kCluster = R"({
  "name": "test", "gpu": "h100-sxm5-80gb", "gpus_per_node": 8,
  "intra_node": {"fabric": "nvswitch", "bandwidth_GBps": 450, "latency_us": 0.6, "nvls": true},
  "nics_per_node": 8, "nic_bandwidth_Gbps": 400, "nic_latency_us": 2.7, "rail_optimized": true,
  "gpu_to_nic": [0, 1, 2, 3, 4, 5, 6, 7],
  "fabric": [{"switch_radix": 64, "oversubscription": 1.0, "hop_latency_us": 0.15},
             {"switch_radix": 64, "oversubscription": 1.0, "hop_latency_us": 0.15}],
  "calibration": "dgx-h100"
})";

std::string with(const std::string& from, const std::string& to) { return dtsim::test::replaced(kCluster, from, to); }

}  // namespace

TEST_CASE("spec::load_gpu: every GPU preset loads with positive peak and memory", "[spec]") {
  use_source_tree_as_data_dir();
  auto files = json_files("topologies/gpus");
  REQUIRE(files.size() >= 6);  // A100 40/80 GB, H100 SXM/PCIe, H200, B200
  for (const fs::path& f : files) {
    INFO(f.string());
    spec::Gpu g = spec::load_gpu(f.string());
    CHECK(g.peak_bf16.value() > 0);
    CHECK(g.peak_fp16.value() > 0);
    CHECK(g.memory.value() > 0);
    CHECK(g.hbm_bandwidth.value() > 0);
  }
}

TEST_CASE("spec::load_cluster: every cluster preset loads", "[spec]") {
  use_source_tree_as_data_dir();
  auto files = json_files("topologies");
  REQUIRE(files.size() >= 5);  // dgx-a100, dgx-b200, dgx-h100, dgx-h200, pcie-h100-8gpu
  for (const fs::path& f : files) {
    INFO(f.string());
    spec::Cluster c = spec::load_cluster(f.string());
    CHECK(c.gpu.peak_bf16.value() > 0);
    CHECK(c.gpu.memory.value() > 0);
    CHECK(c.gpus_per_node > 0);
    CHECK(static_cast<std::int64_t>(c.gpu_to_nic.size()) == c.gpus_per_node);
    CHECK_FALSE(c.fabric.empty());
    // Its calibration profile exists too.
    CHECK(fs::is_regular_file(test::source_path("calibration/" + c.calibration + ".json")));
  }
}

TEST_CASE("spec::load_cluster: dgx-a100-40gb is the 2020 DGX A100, dgx-a100 with 40 GB GPUs", "[spec]") {
  use_source_tree_as_data_dir();
  spec::Cluster old = spec::load_cluster("dgx-a100-40gb"), now = spec::load_cluster("dgx-a100");
  // A100 40GB datasheet: 1,555 GB/s HBM2 (80GB: 2,039 GB/s HBM2e); same silicon and peaks.
  CHECK_THAT(old.gpu.hbm_bandwidth.value(), WithinRel(1555e9, 1e-12));
  CHECK_THAT(old.gpu.memory.value(), WithinRel(40.0 * 1073741824.0, 1e-12));
  CHECK(old.gpu.peak_fp16 == now.gpu.peak_fp16);
  CHECK(old.gpu.sm_count == now.gpu.sm_count);
  // Everything else is the same system.
  CHECK(old.calibration == now.calibration);
  CHECK(old.nics_per_node == now.nics_per_node);
  CHECK(old.nic_bandwidth == now.nic_bandwidth);
  CHECK(old.intra.bandwidth == now.intra.bandwidth);
  CHECK(old.gpus_per_node == now.gpus_per_node);
}

TEST_CASE("spec::load_cluster: jean-zay-a100 is dgx-a100 with four 100 Gb/s Omni-Path links per node", "[spec]") {
  use_source_tree_as_data_dir();
  spec::Cluster jz = spec::load_cluster("jean-zay-a100"), dgx = spec::load_cluster("dgx-a100");
  CHECK(jz.nics_per_node == 4);
  CHECK_THAT(jz.nic_bandwidth.value(), WithinRel(12.5e9, 1e-12));  // 100 Gb/s per port
  CHECK(jz.gpus_per_nic() == 2);
  // A quarter of a DGX A100's scale-out bandwidth per GPU; the same GPUs, NVLink and profile.
  CHECK_THAT(jz.nic_bandwidth.value() / jz.gpus_per_nic(), WithinRel(dgx.nic_bandwidth.value() / 4, 1e-12));
  CHECK(jz.gpu.name == dgx.gpu.name);
  CHECK(jz.intra.bandwidth == dgx.intra.bandwidth);
  CHECK(jz.calibration == dgx.calibration);
}

TEST_CASE("spec::load_cluster: dgx-h100 datasheet numbers", "[spec]") {
  use_source_tree_as_data_dir();
  spec::Cluster c = spec::load_cluster("dgx-h100");
  CHECK(c.gpus_per_node == 8);  // DGX H100: 8x H100 SXM5
  CHECK(c.nics_per_node == 8);  // 8 single-port ConnectX-7
  // NDR 400 Gb/s per port = 400e9 / 8 = 50e9 bytes/s per NIC per direction.
  CHECK_THAT(c.nic_bandwidth.value(), WithinRel(50e9, 1e-12));
  // NVLink 4: 900 GB/s bidirectional per GPU = 450e9 bytes/s per direction.
  CHECK_THAT(c.intra.bandwidth.value(), WithinRel(450e9, 1e-12));
  CHECK(c.intra.fabric == spec::IntraFabric::nvswitch);
  CHECK(c.intra.nvls);  // third-generation NVSwitch: NVLink SHARP
  // H100 whitepaper, SXM5 dense: BF16 989.4, FP8 1978.9 TFLOP/s; nvidia-smi 81559 MiB = 79.65 GiB.
  CHECK_THAT(c.gpu.peak_bf16.value(), WithinRel(989.4e12, 1e-12));
  CHECK_THAT(c.gpu.peak_fp8.value(), WithinRel(1978.9e12, 1e-12));
  CHECK_THAT(c.gpu.memory.value(), WithinRel(79.65 * 1073741824.0, 1e-12));
  CHECK(c.gpus_per_nic() == 1);
  CHECK(c.nodes_for(1024) == 128);  // 1024 / 8
  CHECK(c.nodes_for(4) == 1);       // a job smaller than a node still takes one
}

TEST_CASE("spec::load_gpu: A100 has no fp8 tensor cores", "[spec]") {
  use_source_tree_as_data_dir();
  for (const char* name : {"a100-sxm4-40gb", "a100-sxm4-80gb"}) {
    INFO(name);
    spec::Gpu g = spec::load_gpu(name);
    CHECK(g.peak_fp8.value() == 0);
    CHECK(g.peak(spec::Dtype::fp8).value() == 0);
    // A100 datasheet, SXM dense: BF16 and FP16 tensor 312 TFLOP/s.
    CHECK_THAT(g.peak_bf16.value(), WithinRel(312e12, 1e-12));
  }
}

TEST_CASE("topology::levels_spanned and network_link: dgx-h100 by hand", "[topology]") {
  use_source_tree_as_data_dir();
  spec::Cluster c = spec::load_cluster("dgx-h100");
  // Leaf: radix 64, oversubscription 1 -> 64*1/(1+1) = 32 ports down, so up to 32 nodes (one
  // per rail port) share a leaf. Spine is the top level: all 64 ports down -> 32*64 = 2048 nodes.
  CHECK(topology::levels_spanned(c, 1) == 0);
  CHECK(topology::levels_spanned(c, 2) == 1);
  CHECK(topology::levels_spanned(c, 32) == 1);
  CHECK(topology::levels_spanned(c, 33) == 2);
  CHECK(topology::levels_spanned(c, 2048) == 2);
  CHECK(topology::max_nodes(c) == 2048);
  // One level: 2 NIC latencies + 1 switch hop = 2*2.7 + 0.15 = 5.55 us; one NIC per GPU -> 50 GB/s.
  topology::LinkCost one = topology::network_link(c, 1);
  CHECK_THAT(one.latency.value(), WithinRel(5.55e-6, 1e-12));
  CHECK_THAT(one.bandwidth.value(), WithinRel(50e9, 1e-12));
  // Two levels: leaf up, spine, leaf down = 2*2 - 1 = 3 hops: 5.4 + 3*0.15 = 5.85 us.
  topology::LinkCost two = topology::network_link(c, 2);
  CHECK_THAT(two.latency.value(), WithinRel(5.85e-6, 1e-12));
  CHECK_THAT(two.bandwidth.value(), WithinRel(50e9, 1e-12));
  // Inside a node: NVLink 450 GB/s per direction, 0.6 us (NCCL tuning.cc hwLat NVLINK).
  CHECK(topology::intra_node_link(c) == topology::LinkCost{gbytes_per_s(450), us(0.6)});
}

TEST_CASE("topology::network_link: shared NICs and oversubscribed leaves", "[topology]") {
  use_source_tree_as_data_dir();
  // pcie-h100-8gpu: 2 NICs of 400 Gb/s for 8 GPUs -> 4 GPUs per NIC -> 50 / 4 = 12.5 GB/s per GPU.
  spec::Cluster pcie = spec::load_cluster("pcie-h100-8gpu");
  CHECK(pcie.gpus_per_nic() == 4);
  CHECK_THAT(topology::network_link(pcie, 1).bandwidth.value(), WithinRel(12.5e9, 1e-12));
  // Leaf oversubscribed 3:1: 64*3/4 = 48 ports down; crossing it divides bandwidth by 3.
  spec::Cluster o = parse_cluster(with(R"("oversubscription": 1.0)", R"("oversubscription": 3)"), "o.json");
  CHECK(topology::levels_spanned(o, 48) == 1);
  CHECK(topology::levels_spanned(o, 49) == 2);
  CHECK(topology::max_nodes(o) == 48 * 64);
  CHECK_THAT(topology::network_link(o, 1).bandwidth.value(), WithinRel(50e9, 1e-12));  // stays under the leaf
  CHECK_THAT(topology::network_link(o, 2).bandwidth.value(), WithinRel(50e9 / 3, 1e-12));
}

TEST_CASE("spec::parse_cluster: a gpu path is read relative to the cluster file", "[spec]") {
  use_source_tree_as_data_dir();
  fs::path dir = fs::temp_directory_path() / ("dtsim_cluster_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "my-gpu.json") << R"({"name": "MyGPU", "memory_GiB": 16, "hbm_bandwidth_GBps": 900, "sm_count": 40,
    "peak_tflops": {"fp32": 15, "tf32": 60, "fp16": 120, "bf16": 120, "fp8": null}})";
  std::ofstream(dir / "c.json") << with(R"("gpu": "h100-sxm5-80gb")", R"("gpu": "my-gpu.json")");
  spec::Cluster c = spec::load_cluster((dir / "c.json").string());
  CHECK(c.gpu.name == "MyGPU");
  CHECK_THAT(c.gpu.memory.value(), WithinRel(16.0 * 1073741824.0, 1e-12));  // 16 GiB
  CHECK(c.gpu.peak_fp8.value() == 0);                                        // null: none
  fs::remove_all(dir);
}

TEST_CASE("spec::parse_cluster: error texts name file and pointer", "[spec]") {
  use_source_tree_as_data_dir();
  CHECK_NOTHROW(parse_cluster(kCluster, "c.json"));
  CHECK_THROWS_WITH(parse_cluster(with(R"("calibration": "dgx-h100")", R"("calibration": "dgx-h100", "nics": 8)"),
                                  "c.json"),
                    StartsWith("c.json:/nics: unknown key (expected one of: ") && Contains("gpu_to_nic"));
  CHECK_THROWS_WITH(parse_cluster(with("[0, 1, 2, 3, 4, 5, 6, 7]", "[0, 1]"), "c.json"),
                    Equals("c.json:/gpu_to_nic: expected 8 entries (gpus_per_node), got 2"));
  CHECK_THROWS_WITH(parse_cluster(with("[0, 1, 2, 3, 4, 5, 6, 7]", "[0, 8, 2, 3, 4, 5, 6, 7]"), "c.json"),
                    Equals("c.json:/gpu_to_nic/1: expected a NIC index in [0, 7], got 8"));
  CHECK_THROWS_WITH(parse_cluster(with("[0, 1, 2, 3, 4, 5, 6, 7]", R"([0, "1", 2, 3, 4, 5, 6, 7])"), "c.json"),
                    Equals("c.json:/gpu_to_nic/1: expected a NIC index in [0, 7], got \"1\""));
  std::string no_fabric = kCluster.substr(0, kCluster.find(R"("fabric": [{)")) + R"("fabric": [], "calibration": "x"})";
  CHECK_THROWS_WITH(parse_cluster(no_fabric, "c.json"),
                    Equals("c.json:/fabric: expected at least one level, got an empty array"));
  CHECK_THROWS_WITH(parse_cluster(with(R"("fabric": "nvswitch")", R"("fabric": "pcie")"), "c.json"),
                    Equals("c.json:/intra_node/nvls: expected false unless fabric is \"nvswitch\", got true"));
  // std::to_string prints 0.500000; Contains keeps the test to what a reader needs.
  CHECK_THROWS_WITH(parse_cluster(with(R"("oversubscription": 1.0)", R"("oversubscription": 0.5)"), "c.json"),
                    StartsWith("c.json:/fabric/0/oversubscription: expected a number >= 1, got 0.5"));
  CHECK_THROWS_WITH(parse_cluster(with(R"("switch_radix": 64)", R"("switch_radix": 1)"), "c.json"),
                    Equals("c.json:/fabric/0/switch_radix: expected an integer in [2, 1048576], got 1"));
  CHECK_THROWS_WITH(parse_cluster(with(R"("bandwidth_GBps": 450)", R"("bandwidth_GBps": -1)"), "c.json"),
                    Equals("c.json:/intra_node/bandwidth_GBps: expected a number > 0, got -1"));
  CHECK_THROWS_WITH(parse_cluster(with(R"("rail_optimized": true)", R"("rail_optimized": true, "nic_planes": 0)"),
                                  "c.json"),
                    Equals("c.json:/nic_planes: expected an integer in [1, 16], got 0"));
  CHECK(parse_cluster(kCluster, "c.json").nic_planes == 1);  // absent: one port
  CHECK_THROWS_WITH(parse_cluster(with(R"("rail_optimized": true)", R"("rail_optimized": 1)"), "c.json"),
                    Equals("c.json:/rail_optimized: expected true or false, got 1"));
  CHECK_THROWS_WITH(parse_cluster(with(R"("gpu": "h100-sxm5-80gb")", R"("gpu": "h900")"), "c.json"),
                    StartsWith("c.json:/gpu: expected a preset name (") && Contains("h100-sxm5-80gb") &&
                        EndsWith(") or a file path, got \"h900\""));
  CHECK_THROWS_WITH(spec::load_cluster("/nonexistent/c.json"),
                    Equals("--cluster: expected an existing file, got \"/nonexistent/c.json\" (no such file)"));
}

TEST_CASE("spec::load_cluster: NVL72 racks are one NVLink domain of 18 four-GPU trays", "[spec]") {
  use_source_tree_as_data_dir();
  for (const char* name : {"gb200-nvl72", "gb300-nvl72"}) {
    INFO(name);
    spec::Cluster c = spec::load_cluster(name);
    CHECK(c.gpus_per_node == 4);      // a compute tray: 2 Grace + 4 Blackwell GPUs
    CHECK(c.nvlink_domain == 72);     // 18 trays on 9 NVLink switch trays
    CHECK(c.nics_per_node == 4);      // one scale-out NIC per GPU
    CHECK_THAT(c.intra.bandwidth.value(), WithinRel(900e9, 1e-12));  // NVLink 5: 1.8 TB/s bidirectional
    CHECK(c.host_cpu == spec::HostCpu::arm);
    // A job fits one rack whole; a larger power-of-two job takes 64 GPUs (16 trays) of each rack.
    CHECK(c.domain_ranks(8) == 8);
    CHECK(c.domain_ranks(64) == 64);
    CHECK(c.domain_ranks(72) == 72);
    CHECK(c.domain_ranks(256) == 64);
    CHECK(c.domain_ranks(144) == 72);
    CHECK(c.domain_ranks(100) == 20);  // 5 domains of 5 trays
  }
  CHECK(spec::load_cluster("gb300-nvl72").nic_bandwidth.value() == 100e9);  // ConnectX-8, 800 Gb/s
  // DGX B300's ConnectX-8 as two 400G planes (the Spectrum-X design); GB300 racks keep one port.
  CHECK(spec::load_cluster("dgx-b300").nic_planes == 2);
  CHECK(spec::load_cluster("gb300-nvl72").nic_planes == 1);
  spec::Cluster dgx = spec::load_cluster("dgx-h100");
  CHECK(dgx.nvlink_domain == 8);  // absent: the node
  CHECK(dgx.domain_ranks(1024) == 8);
  CHECK(dgx.domain_ranks(4) == 4);
}

TEST_CASE("spec::load_gpu: Blackwell dense peaks, fp4 and power", "[spec]") {
  use_source_tree_as_data_dir();
  // Dense figures: NVIDIA quotes B200 FP4 9 PFLOPS dense (18 sparse); Blackwell Ultra (B300, GB300)
  // raises dense FP4, GB300 to 15 PFLOPS (topologies/gpus/*.json sources).
  spec::Gpu b200 = spec::load_gpu("b200"), gb300 = spec::load_gpu("gb300");
  CHECK_THAT(b200.peak(spec::Dtype::fp4).value(), WithinRel(9000e12, 1e-12));
  CHECK_THAT(b200.peak_bf16.value(), WithinRel(2250e12, 1e-12));
  CHECK(b200.power_w == 1000);
  CHECK_THAT(gb300.peak(spec::Dtype::fp4).value(), WithinRel(15000e12, 1e-12));
  CHECK(gb300.sm_count == 152);
  CHECK(spec::load_gpu("h100-sxm5-80gb").peak(spec::Dtype::fp4).value() == 0);  // no fp4 tensor cores
}

TEST_CASE("spec::parse_cluster: nvlink_domain must hold whole nodes", "[spec]") {
  use_source_tree_as_data_dir();
  CHECK(parse_cluster(with(R"("gpus_per_node": 8)", R"("gpus_per_node": 8, "nvlink_domain": 16)"), "c.json")
            .nvlink_domain == 16);
  CHECK_THROWS_WITH(parse_cluster(with(R"("gpus_per_node": 8)", R"("gpus_per_node": 8, "nvlink_domain": 12)"), "c.json"),
                    Equals("c.json:/nvlink_domain: expected a multiple of gpus_per_node (8), got 12"));
}
