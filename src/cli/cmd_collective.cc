// `dtsim collective`: the predicted nccl-tests table (time, algbw, busbw, algorithm, protocol)
// of one collective on a flat communicator, by message size.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibrate/nccl_tests.h"
#include "spec/json_reader.h"
#include "calibrate/samples.h"
#include "calibrate/stats.h"
#include "cli/commands.h"
#include "core/errors.h"
#include "cost/collective.h"
#include "network/cluster_flows.h"
#include "report/table.h"
#include "spec/calibration.h"
#include "spec/load.h"
#include "topology/links.h"
#include "topology/placement.h"

namespace dtsim::cli {
namespace {

struct CollectiveArgs {
  std::string cluster, op, calibration, min_bytes = "8", max_bytes = "8G";
  std::int64_t gpus = 0;
  std::int64_t ranks_per_node = 0;
  std::string nccl_tests;
  std::string network = "analytical";
  bool json = false;
};

// "8", "64K", "1M", "8G": bytes, with K/M/G = 2^10/2^20/2^30 as nccl-tests -b/-e read them.
std::int64_t parse_size(const std::string& text, const std::string& flag) {
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  std::string suffix = text.substr(digits);
  int shift = suffix.empty() ? 0 : suffix == "K" || suffix == "k" ? 10 : suffix == "M" || suffix == "m" ? 20
                                 : suffix == "G" || suffix == "g" ? 30 : -1;
  if (digits == 0 || digits > 12 || shift < 0)
    throw SpecError(flag, "expected a byte count such as 8, 64K, 1M or 8G, got \"" + text + "\"");
  std::int64_t v = std::stoll(text.substr(0, digits));
  if (v < 1 || v > (std::int64_t{1} << 40) >> shift)
    throw SpecError(flag, "expected a size from 1 byte to 1024G, got \"" + text + "\"");
  return v << shift;
}

// The communicator: --gpus ranks, --ranks-per-node of them per node (default: fill nodes; the
// default is written back to `a`). Nodes fill NVLink domains (topology::flat_group_shape).
topology::GroupShape communicator(const spec::Cluster& c, CollectiveArgs& a) {
  std::int64_t g = c.gpus_per_node;
  std::int64_t k = a.ranks_per_node > 0 ? a.ranks_per_node : std::min(a.gpus, g);
  if (a.ranks_per_node == 0 && a.gpus % k != 0)
    throw SpecError("--gpus", "expected a multiple of " + c.name + "'s gpus_per_node (" + std::to_string(g) +
                                  ") or an explicit --ranks-per-node, got " + std::to_string(a.gpus));
  if (k > std::min(a.gpus, g) || a.gpus % k != 0)
    throw SpecError("--ranks-per-node", "expected a divisor of --gpus (" + std::to_string(a.gpus) +
                                            ") no larger than gpus_per_node (" + std::to_string(g) + "), got " +
                                            std::to_string(k));
  if (a.gpus / k > topology::max_nodes(c))
    throw SpecError("--gpus", "expected at most " + std::to_string(topology::max_nodes(c)) + " nodes of " +
                                  std::to_string(k) + " ranks (the fabric's reach), got " + std::to_string(a.gpus));
  a.ranks_per_node = k;
  return topology::flat_group_shape(c, a.gpus, k);
}

// "64 GPUs, 4 per node, 16 nodes, 1 NVLink domain": the last part where domains hold several nodes.
std::string placement_text(const spec::Cluster& c, const CollectiveArgs& a, const topology::GroupShape& g) {
  std::int64_t nodes = a.gpus / a.ranks_per_node;
  std::string out = std::to_string(a.gpus) + " GPUs, " + std::to_string(a.ranks_per_node) + " per node, " +
                    std::to_string(nodes) + (nodes == 1 ? " node" : " nodes");
  if (c.nvlink_domain > c.gpus_per_node)
    out += ", " + std::to_string(g.nodes) + (g.nodes == 1 ? " NVLink domain" : " NVLink domains");
  return out;
}

struct Row {
  std::int64_t bytes = 0;
  cost::CollectiveEstimate est;
};

// The estimate of one size on the chosen network: the analytical model's pick, or (--network
// simgrid) its ring/Simple entry with the bandwidth shared by SimGrid (network/cluster_flows.h).
cost::CollectiveEstimate estimate(const CollectiveArgs& a, cost::Collective op, std::int64_t bytes,
                                  const topology::GroupShape& g, const spec::Cluster& c, const spec::Calibration& cal) {
  Bytes size(static_cast<double>(bytes));
  if (a.network == "analytical") return cost::collective_time(op, size, g, c, cal.collectives);
  double t = network::ring_collective_time(c, cal.collectives, op, size.value(), g.ranks, a.ranks_per_node);
  return {.time = Seconds(t), .algo = spec::CollAlgo::ring, .protocol = spec::Protocol::simple, .hierarchical = false,
          .bus_bandwidth = t > 0 ? (size * cost::bus_factor(op, g.ranks)) / Seconds(t) : BytesPerSecond(0.0)};
}

void check_network(const CollectiveArgs& a, cost::Collective op) {
  if (a.network != "analytical" && a.network != "simgrid")
    throw SpecError("--network", "expected analytical or simgrid, got \"" + a.network + "\"");
  if (a.network == "simgrid" && op != cost::Collective::all_reduce && op != cost::Collective::all_gather &&
      op != cost::Collective::reduce_scatter)
    throw SpecError("--network", std::string("expected all_reduce, all_gather or reduce_scatter with simgrid (rings), "
                                             "got --op ") + cost::to_string(op));
}

// "none" for a communicator of one rank, which moves nothing.
std::string algorithm_name(cost::Collective op, const cost::CollectiveEstimate& e) {
  if (e.time.value() <= 0) return "none";
  if (op == cost::Collective::all_to_all || op == cost::Collective::send_recv) return "p2p";
  return std::string(e.hierarchical ? "hierarchical+" : "") + spec::to_string(e.algo);
}

std::string protocol_name(const cost::CollectiveEstimate& e) {
  return e.time.value() <= 0 ? "none" : spec::to_string(e.protocol);
}

double algbw_gbps(const Row& r) {
  return r.est.time.value() > 0 ? to_gbytes_per_s(Bytes(static_cast<double>(r.bytes)) / r.est.time) : 0.0;
}

std::string render_json(const CollectiveArgs& a, cost::Collective op, const topology::GroupShape& g,
                        const std::vector<Row>& rows) {
  nlohmann::json j{{"cluster", a.cluster}, {"op", cost::to_string(op)}, {"gpus", a.gpus},
                   {"ranks_per_node", a.ranks_per_node}, {"nodes", a.gpus / a.ranks_per_node},
                   {"nvlink_domains", g.nodes}, {"calibration", a.calibration}};
  j["network"] = a.network;
  j["rows"] = nlohmann::json::array();
  for (const Row& r : rows)
    j["rows"].push_back({{"bytes", r.bytes}, {"time_us", to_us(r.est.time)}, {"algbw_GBps", algbw_gbps(r)},
                         {"busbw_GBps", to_gbytes_per_s(r.est.bus_bandwidth)},
                         {"algorithm", algorithm_name(op, r.est)},
                         {"protocol", protocol_name(r.est)}});
  return spec::json_text(j) + "\n";
}

std::string render_text(const spec::Cluster& c, const CollectiveArgs& a, cost::Collective op, const topology::GroupShape& g,
                        const std::vector<Row>& rows) {
  std::string out = std::string("# ") + cost::to_string(op) + " on " + a.cluster + " (calibration " + a.calibration +
                    (a.network == "simgrid" ? ", network simgrid" : "") + "): " + placement_text(c, a, g) + "\n";
  out += "# predicted; busbw = algbw x " + report::fixed(cost::bus_factor(op, a.gpus), 4) +
         " (nccl-tests doc/PERFORMANCE.md)\n";
  report::Table t({"size_B", "time_us", "algbw_GBps", "busbw_GBps", "algorithm", "protocol"});
  for (const Row& r : rows)
    t.add({std::to_string(r.bytes), report::fixed(to_us(r.est.time), 2), report::fixed(algbw_gbps(r), 2),
           report::fixed(to_gbytes_per_s(r.est.bus_bandwidth), 2), algorithm_name(op, r.est),
           protocol_name(r.est)});
  return out + t.render();
}

// |predicted / measured busbw - 1| median over the samples of at least 1 MiB (0 when none).
double median_error(const std::vector<calibrate::CollectiveSample>& m, const std::vector<Row>& rows) {
  std::vector<double> e;
  for (std::size_t i = 0; i < m.size(); ++i)
    if (m[i].bytes >= (1 << 20)) e.push_back(std::fabs(m[i].time.value() / rows[i].est.time.value() - 1));
  return calibrate::median(e);
}

// --nccl-tests LOG: the log's collective, communicator and sizes, measured beside predicted.
int compare(CollectiveArgs a) {
  calibrate::NcclTestsHints h;
  if (!a.op.empty()) h.collective = cost::parse_collective(a.op);
  if (!a.op.empty() && !h.collective) throw SpecError("--op", "expected a collective name, got \"" + a.op + "\"");
  if (a.gpus > 0) h.ranks = a.gpus;
  if (a.ranks_per_node > 0) h.gpus_per_node = a.ranks_per_node;
  // A file may hold several tables (one per collective); --op picks one.
  std::vector<calibrate::NcclTestsLog> logs = calibrate::load_nccl_tests_all(a.nccl_tests, h);
  std::vector<calibrate::NcclTestsLog> picked;
  for (auto& l : logs)
    if (!h.collective || l.collective == *h.collective) picked.push_back(std::move(l));
  if (picked.size() != 1) {
    std::string found;
    for (const auto& l : logs) found += (found.empty() ? "" : ", ") + std::string(cost::to_string(l.collective));
    throw SpecError("--op", "expected one table of " + a.nccl_tests + " to compare (pass --op to pick one), got " +
                                std::to_string(picked.size()) + " of " + std::to_string(logs.size()) + " (" + found + ")");
  }
  calibrate::NcclTestsLog log = std::move(picked.front());
  std::vector<calibrate::CollectiveSample> m = calibrate::samples_from_log(log, "--nccl-tests");
  spec::Cluster c = spec::load_cluster(a.cluster);
  if (a.calibration.empty()) a.calibration = c.calibration;
  spec::Calibration cal = spec::load_calibration(a.calibration);
  a.gpus = log.ranks;
  a.ranks_per_node = *log.ranks_per_node;
  topology::GroupShape g = communicator(c, a);
  std::vector<Row> rows;
  check_network(a, log.collective);
  for (const auto& x : m)
    rows.push_back({static_cast<std::int64_t>(x.bytes), estimate(a, x.op, static_cast<std::int64_t>(x.bytes), g, c, cal)});
  double med = median_error(m, rows);
  if (a.json) {
    nlohmann::json j = nlohmann::json::parse(render_json(a, log.collective, g, rows));
    j["nccl_tests"] = a.nccl_tests;
    j["median_abs_busbw_error_pct"] = 100 * med;
    for (std::size_t i = 0; i < m.size(); ++i) {
      j["rows"][i]["measured_us"] = to_us(m[i].time);
      j["rows"][i]["measured_busbw_GBps"] = calibrate::bus_bandwidth(m[i], m[i].time) / 1e9;
      j["rows"][i]["error_pct"] = 100 * (m[i].time.value() / rows[i].est.time.value() - 1);
    }
    std::cout << spec::json_text(j) << "\n";
    return 0;
  }
  std::string out = std::string("# ") + cost::to_string(log.collective) + " on " + a.cluster + " (calibration " +
                    a.calibration + "): " + placement_text(c, a, g) + ", against " +
                    a.nccl_tests + "\n# measured time: geometric mean of out-of-place and in-place; error = "
                    "predicted / measured busbw - 1\n";
  report::Table t({"size_B", "measured_us", "busbw", "predicted_us", "pred_busbw", "error", "algorithm", "protocol"});
  for (std::size_t i = 0; i < m.size(); ++i)
    t.add({std::to_string(rows[i].bytes), report::fixed(to_us(m[i].time), 2),
           report::fixed(calibrate::bus_bandwidth(m[i], m[i].time) / 1e9, 2), report::fixed(to_us(rows[i].est.time), 2),
           report::fixed(to_gbytes_per_s(rows[i].est.bus_bandwidth), 2),
           report::fixed(100 * (m[i].time.value() / rows[i].est.time.value() - 1), 1) + "%",
           algorithm_name(log.collective, rows[i].est), protocol_name(rows[i].est)});
  std::cout << out << t.render() << "median |busbw error| over sizes >= 1 MiB: " << report::fixed(100 * med, 1)
            << "%\n";
  return 0;
}

int run(CollectiveArgs a) {
  if (!a.nccl_tests.empty()) return compare(a);
  if (a.op.empty()) throw SpecError("--op", "expected a collective (or --nccl-tests LOG), got none");
  if (a.gpus == 0) throw SpecError("--gpus", "expected the ranks in the communicator (or --nccl-tests LOG), got none");
  std::optional<cost::Collective> op = cost::parse_collective(a.op);
  if (!op)
    throw SpecError("--op", "expected one of all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, "
                            "send_recv, got \"" + a.op + "\"");
  std::int64_t lo = parse_size(a.min_bytes, "--min-bytes"), hi = parse_size(a.max_bytes, "--max-bytes");
  if (lo > hi)
    throw SpecError("--min-bytes",
                    "expected at most --max-bytes (" + std::to_string(hi) + "), got " + std::to_string(lo));
  spec::Cluster c = spec::load_cluster(a.cluster);
  if (a.calibration.empty()) a.calibration = c.calibration;
  spec::Calibration cal = spec::load_calibration(a.calibration);
  check_network(a, *op);
  topology::GroupShape g = communicator(c, a);
  std::vector<Row> rows;
  for (std::int64_t s = lo; s <= hi; s *= 2) rows.push_back({s, estimate(a, *op, s, g, c, cal)});
  std::cout << (a.json ? render_json(a, *op, g, rows) : render_text(c, a, *op, g, rows));
  return 0;
}

}  // namespace

void add_collective(CLI::App& app, Action& action) {
  auto args = std::make_shared<CollectiveArgs>();
  CLI::App* cmd = app.add_subcommand("collective", "Predicted time and bus bandwidth of an NCCL collective by size");
  cmd->add_option("--cluster", args->cluster, "Preset name (topologies/NAME.json) or file")->required();
  cmd->add_option("--op", args->op, "all_reduce|all_gather|reduce_scatter|all_to_all|broadcast|send_recv");
  // --ranks and --gpus-per-node are calibrate's names for the same facts: the nccl-tests importer's
  // messages name them as the remedy for a log that does not say, whichever command read it.
  cmd->add_option("--gpus,--ranks", args->gpus, "Ranks in the communicator")->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--ranks-per-node,--gpus-per-node", args->ranks_per_node, "Ranks per node (default: fill nodes)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--min-bytes", args->min_bytes, "Smallest size, 8 or with K/M/G (2^10/2^20/2^30) (default 8)");
  cmd->add_option("--max-bytes", args->max_bytes, "Largest size; sizes double from --min-bytes (default 8G)");
  cmd->add_option("--calibration", args->calibration, "Calibration profile (default: the cluster's)");
  cmd->add_option("--nccl-tests", args->nccl_tests,
                  "Compare with this nccl-tests output: its collective, ranks and sizes (--op, --gpus, "
                  "--ranks-per-node supply what it does not say)");
  cmd->add_option("--network", args->network,
                  "analytical|simgrid: price with the analytical model's pick, or a ring whose bandwidth sharing "
                  "SimGrid simulates on the cluster's links (all_reduce, all_gather, reduce_scatter)");
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->callback([args, &action] { action = [args] { return run(*args); }; });
}

}  // namespace dtsim::cli
