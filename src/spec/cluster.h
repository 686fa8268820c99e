#pragma once
// A cluster of identical nodes: intra-node fabric, NICs, and a fat-tree scale-out fabric.
#include <cstdint>
#include <string>
#include <vector>

#include "core/units.h"
#include "spec/gpu.h"

namespace dtsim::spec {

enum class IntraFabric { nvswitch, nvlink, pcie };

/// The hosts' CPU, for what NCCL's proxy thread costs per network step.
enum class HostCpu { intel, amd, arm };

/// GPU-to-GPU fabric inside a node.
struct IntraNode {
  IntraFabric fabric = IntraFabric::nvswitch;
  BytesPerSecond bandwidth;   ///< per GPU, per direction
  Seconds latency;            ///< one hop, GPU to GPU
  bool nvls = false;          ///< NVSwitch in-network reduction (NVLink SHARP, Hopper+)
  bool operator==(const IntraNode&) const = default;
};

/// One level of the scale-out fat tree (level 0 = leaf switches).
struct FabricLevel {
  std::int64_t switch_radix = 0;
  double oversubscription = 1.0;  ///< down:up bandwidth ratio at this level (1 = full bisection)
  Seconds hop_latency;
  bool operator==(const FabricLevel&) const = default;
};

/// The whole cluster description; the node count follows from the job's GPU count.
struct Cluster {
  std::string name;
  std::string source;
  Gpu gpu;
  std::string gpu_name;             ///< as written in the file (preset name or path)
  std::int64_t gpus_per_node = 0;  ///< GPUs per host (a DGX, or one compute tray of an NVL72 rack)
  /// GPUs that share one NVLink fabric: gpus_per_node for a DGX/HGX, 72 for a GB200/GB300 NVL72
  /// rack of 18 trays ("nvlink_domain", a multiple of gpus_per_node; gpus_per_node when absent).
  /// `intra` describes this fabric; NICs and the scale-out fat tree attach per host.
  std::int64_t nvlink_domain = 0;
  IntraNode intra;
  std::int64_t nics_per_node = 0;
  BytesPerSecond nic_bandwidth;     ///< per NIC, per direction
  /// Ports (planes) the NIC's bandwidth is split over, each nic_bandwidth / nic_planes
  /// ("nic_planes", default 1): a ConnectX-8 at 800 Gb/s on a Spectrum-X fabric runs as two 400G
  /// planes. NCCL's rings and trees lay their channels over both; a point-to-point connection
  /// (send/recv, all-to-all) rides one (cost/collective.cc).
  std::int64_t nic_planes = 1;
  Seconds nic_latency;              ///< NIC + first cable, one way
  bool rail_optimized = true;
  std::vector<std::int64_t> gpu_to_nic;  ///< NIC index of each local GPU
  std::vector<FabricLevel> fabric;
  std::string calibration;          ///< default calibration profile name
  /// GPU-host link, per GPU per direction ("host_link_GBps"; what activation offload moves over):
  /// PCIe 5.0 x16 on x86 DGX nodes, NVLink-C2C on Grace-Blackwell trays. 0: not stated.
  BytesPerSecond host_link;
  /// Host (CPU) time to issue work to the GPU from Python, per call ("host_issue_us"): one PyTorch
  /// eager op, and one Transformer Engine module (Linear, LayerNormLinear, DotProductAttention,
  /// GroupedLinear). 0: not stated (no host-bound term).
  Seconds host_torch_op, host_te_module;
  HostCpu host_cpu = HostCpu::intel;  ///< "host_cpu" (optional; intel when absent)

  /// GPUs sharing one NIC (>= 1).
  [[nodiscard]] std::int64_t gpus_per_nic() const;
  /// Nodes needed for `gpus` GPUs (whole nodes; a job smaller than one node uses one).
  [[nodiscard]] std::int64_t nodes_for(std::int64_t gpus) const;
  /// GPUs of a `gpus`-GPU job in each NVLink domain it touches: the whole job when it fits in one
  /// domain, else the job spreads evenly over domains in whole hosts -- the largest multiple of
  /// gpus_per_node that is at most nvlink_domain and divides `gpus` (64 of an NVL72 rack's 72 GPUs
  /// for power-of-two jobs, as Slurm's topology/block plugin places jobs in segments of whole
  /// trays) -- gpus_per_node when no such multiple exists.
  [[nodiscard]] std::int64_t domain_ranks(std::int64_t gpus) const;
  /// NCCL's per-step network overhead on these hosts (getNetOverhead in src/graph/tuning.cc:
  /// 2 us on AMD x86, 1 us otherwise), which every step of a ring spanning nodes pays at least.
  [[nodiscard]] Seconds nccl_net_overhead() const;
  bool operator==(const Cluster&) const = default;
};

[[nodiscard]] const char* to_string(IntraFabric f);
[[nodiscard]] const char* to_string(HostCpu h);  ///< as the file's "host_cpu" spells it

}  // namespace dtsim::spec
