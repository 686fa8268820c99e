#include "spec/cluster.h"

#include <algorithm>
#include <filesystem>

#include "core/errors.h"
#include "core/text.h"
#include "spec/json_reader.h"
#include "spec/load.h"

namespace dtsim::spec {
namespace {

IntraNode read_intra(ObjectReader r) {
  IntraNode n;
  n.fabric = static_cast<IntraFabric>(r.choice("fabric", {"nvswitch", "nvlink", "pcie"}));
  n.bandwidth = gbytes_per_s(r.positive("bandwidth_GBps"));
  n.latency = us(r.positive("latency_us", true));
  n.nvls = r.optional_boolean("nvls").value_or(false);
  if (n.nvls && n.fabric != IntraFabric::nvswitch)
    r.fail("nvls", "expected false unless fabric is \"nvswitch\", got true");
  r.finish();
  return n;
}

std::vector<FabricLevel> read_fabric(ObjectReader& r) {
  const nlohmann::json& arr = r.array("fabric");
  if (arr.empty()) r.fail("fabric", "expected at least one level, got an empty array");
  std::vector<FabricLevel> levels;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    ObjectReader l(arr[i], r.file(), r.pointer("fabric") + "/" + std::to_string(i));
    FabricLevel f;
    f.switch_radix = l.integer("switch_radix", 2, 1 << 20);
    f.oversubscription = l.optional_positive("oversubscription").value_or(1.0);
    if (f.oversubscription < 1.0)
      l.fail("oversubscription", "expected a number >= 1, got " + describe(nlohmann::json(f.oversubscription)));
    f.hop_latency = us(l.positive("hop_latency_us", true));
    l.finish();
    levels.push_back(f);
  }
  return levels;
}

std::vector<std::int64_t> read_gpu_to_nic(ObjectReader& r, std::int64_t gpus, std::int64_t nics) {
  const nlohmann::json& arr = r.array("gpu_to_nic");
  if (static_cast<std::int64_t>(arr.size()) != gpus)
    r.fail("gpu_to_nic", "expected " + std::to_string(gpus) + " entries (gpus_per_node), got " +
                             std::to_string(arr.size()));
  std::vector<std::int64_t> map;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    if (!arr[i].is_number_integer() || arr[i].get<std::int64_t>() < 0 || arr[i].get<std::int64_t>() >= nics)
      throw SpecError(r.where("gpu_to_nic") + "/" + std::to_string(i),
                      "expected a NIC index in [0, " + std::to_string(nics - 1) + "], got " + describe(arr[i]));
    map.push_back(arr[i].get<std::int64_t>());
  }
  return map;
}

// A cluster's "gpu" is a preset name, or a path relative to the cluster file.
Gpu read_gpu_ref(ObjectReader& r, const std::string& ref) {
  require_path(r.where("gpu"), ref);
  std::filesystem::path rel = std::filesystem::path(r.file()).parent_path() / ref;
  std::error_code ec;
  std::string target = path_problem(rel.string()).empty() && std::filesystem::is_regular_file(rel, ec) ? rel.string() : ref;
  return load_gpu(target, r.where("gpu"));
}

}  // namespace

std::int64_t Cluster::gpus_per_nic() const {
  return nics_per_node == 0 ? gpus_per_node : (gpus_per_node + nics_per_node - 1) / nics_per_node;
}

std::int64_t Cluster::nodes_for(std::int64_t gpus) const { return (gpus + gpus_per_node - 1) / gpus_per_node; }

std::int64_t Cluster::domain_ranks(std::int64_t gpus) const {
  if (gpus <= nvlink_domain) return std::max<std::int64_t>(gpus, 1);
  for (std::int64_t m = nvlink_domain - nvlink_domain % gpus_per_node; m > gpus_per_node; m -= gpus_per_node)
    if (gpus % m == 0) return m;
  return gpus_per_node;
}

Seconds Cluster::nccl_net_overhead() const { return us(host_cpu == HostCpu::amd ? 2.0 : 1.0); }

const char* to_string(HostCpu h) {
  switch (h) {
    case HostCpu::intel: return "intel";
    case HostCpu::amd: return "amd";
    case HostCpu::arm: return "arm";
  }
  return "?";
}

const char* to_string(IntraFabric f) {
  switch (f) {
    case IntraFabric::nvswitch: return "nvswitch";
    case IntraFabric::nvlink: return "nvlink";
    case IntraFabric::pcie: return "pcie";
  }
  return "?";
}

Cluster parse_cluster(const std::string& text, const std::string& file) {
  nlohmann::json j = parse_json_text(text, file);
  ObjectReader r(j, file, "");
  Cluster c;
  c.name = r.string("name");
  c.gpu_name = r.string("gpu");
  c.gpu = read_gpu_ref(r, c.gpu_name);
  c.gpus_per_node = r.integer("gpus_per_node", 1, 1024);
  c.nvlink_domain = r.optional_integer("nvlink_domain", 1, 1 << 20).value_or(c.gpus_per_node);
  if (c.nvlink_domain % c.gpus_per_node != 0)
    r.fail("nvlink_domain", "expected a multiple of gpus_per_node (" + std::to_string(c.gpus_per_node) + "), got " +
                                std::to_string(c.nvlink_domain));
  c.intra = read_intra(r.object("intra_node"));
  c.nics_per_node = r.integer("nics_per_node", 1, 1024);
  c.nic_bandwidth = gbits_per_s(r.positive("nic_bandwidth_Gbps"));
  c.nic_planes = r.optional_integer("nic_planes", 1, 16).value_or(1);
  c.nic_latency = us(r.positive("nic_latency_us", true));
  c.rail_optimized = r.boolean("rail_optimized");
  c.gpu_to_nic = read_gpu_to_nic(r, c.gpus_per_node, c.nics_per_node);
  c.fabric = read_fabric(r);
  c.calibration = r.string("calibration");
  c.host_link = gbytes_per_s(r.optional_positive("host_link_GBps").value_or(0));
  if (r.has("host_issue_us")) {
    ObjectReader h = r.object("host_issue_us");
    c.host_torch_op = us(h.positive("torch_op"));
    c.host_te_module = us(h.positive("te_module"));
    h.finish();
  }
  c.host_cpu = static_cast<HostCpu>(r.optional_choice("host_cpu", {"intel", "amd", "arm"}).value_or(0));
  c.source = r.optional_string("source").value_or("");
  r.skip("sources");
  r.finish();
  return c;
}

Cluster load_cluster(const std::string& name_or_path, const std::string& flag) {
  return load_spec("topologies", name_or_path, flag, parse_cluster);
}

}  // namespace dtsim::spec
