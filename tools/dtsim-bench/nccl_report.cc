#include "nccl_report.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <stdexcept>

namespace dtsim::bench {
namespace {

using nlohmann::json;

// printf into a std::string (the tables are nccl-tests' printf formats, kept as they are).
[[gnu::format(printf, 1, 2)]] std::string format(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) throw std::logic_error("format: vsnprintf failed");
  return std::string(buf, std::min<std::size_t>(static_cast<std::size_t>(n), sizeof buf - 1));
}

std::string step_text(const NcclOptions& o) {
  return o.step_factor > 1 ? std::to_string(o.step_factor) + "(factor)" : std::to_string(o.step_bytes) + "(bytes)";
}

std::string device_line(const RankInfo& r) {
  return format("#  Rank %2d Group %2d Pid %6d on %10s device %2d [%04x:%02x:%02x] %s\n", r.rank, 0, r.pid, r.host,
                r.device, static_cast<unsigned>(r.pci_domain), static_cast<unsigned>(r.pci_bus),
                static_cast<unsigned>(r.pci_device), r.name);
}

std::string table_head(const NcclRun& run, const NcclSweepResult& s) {
  const NcclOptions& o = run.options;
  std::string out = format("# dtsim-bench nccl (nccl-tests 2.17 output) nccl-headers=%d nccl-library=%d\n",
                           run.nccl_header_code, run.nccl_library_code);
  out += format("# Collective test starting: %s\n", nccl_tests_binary(s.collective));
  out += format("# nThread 1 nGpus %d minBytes %lld maxBytes %lld step: %s warmup iters: %d iters: %d agg iters: 1 "
                "validation: %d graph: 0\n",
                run.gpus_per_process, static_cast<long long>(o.min_bytes), static_cast<long long>(o.max_bytes),
                step_text(o).c_str(), o.warmup_iters, o.iters, o.check ? 1 : 0);
  out += "#\n# Using devices\n";
  for (const RankInfo& r : run.ranks) out += device_line(r);
  out += "NCCL version " + nccl_version_string(run.nccl_library_code) + "\n#\n";
  const char* h = "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s %s\n";
  out += format("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "", "",
                "", "", "");
  out += format(h, "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw",
                "busbw", "#wrong", "");
  out += format(h, "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", "");
  return out;
}

std::string cell_text(const NcclCell& c) {
  std::string t = format_float_field(c.time_us, 7), a = format_float_field(c.algbw_gbps, 6),
              b = format_float_field(c.busbw_gbps, 6);
  if (!c.wrong) return format("  %7s  %6s  %6s    N/A", t.c_str(), a.c_str(), b.c_str());
  return format("  %7s  %6s  %6s  %6g", t.c_str(), a.c_str(), b.c_str(), static_cast<double>(*c.wrong));
}

std::string row_text(const NcclRun& run, const NcclSweepResult& s, const NcclRow& r) {
  return format("%12lld  %12lld  %8s  %6s  %6d", static_cast<long long>(r.counts.size_bytes),
                static_cast<long long>(r.counts.count), to_string(run.options.dtype), redop_name(s.collective),
                root_of(s.collective)) +
         cell_text(r.out_of_place) + cell_text(r.in_place) + "\n";
}

// nccl-tests: cells with wrong elements, and the mean busbw over every cell (both placements).
std::string table_foot(const NcclSweepResult& s) {
  int errors = 0;
  double sum = 0;
  for (const NcclRow& r : s.rows)
    for (const NcclCell* c : {&r.out_of_place, &r.in_place}) {
      errors += c->wrong.value_or(0) > 0;
      sum += c->busbw_gbps;
    }
  double avg = s.rows.empty() ? 0 : sum / (2.0 * static_cast<double>(s.rows.size()));
  return format("# %-20s : %d %s\n", "Out of bounds values", errors, errors ? "FAILED" : "OK") +
         format("# %-20s : %g %s\n", "Avg bus bandwidth", avg, "") + "#\n" +
         format("# Collective test concluded: %s\n", nccl_tests_binary(s.collective));
}

json cell_json(const NcclCell& c) {
  return {{"time_us", c.time_us},
          {"algbw_GBps", c.algbw_gbps},
          {"busbw_GBps", c.busbw_gbps},
          {"wrong", c.wrong ? json(*c.wrong) : json(nullptr)}};
}

json sweep_json(const NcclSweepResult& s) {
  json results = json::array();
  for (const NcclRow& r : s.rows)
    results.push_back({{"size_bytes", r.counts.size_bytes},
                       {"count", r.counts.count},
                       {"out_of_place", cell_json(r.out_of_place)},
                       {"in_place", cell_json(r.in_place)}});
  return {{"collective", to_string(s.collective)}, {"redop", redop_name(s.collective)},
          {"root", root_of(s.collective)}, {"results", results}};
}

std::string launch_text(const NcclOptions& o, int nranks) {
  switch (o.launcher) {
    case NcclLauncher::single_process:
      return format("single-process: %d ranks, devices 0 to %d of this process, ncclCommInitAll\n", nranks, nranks - 1);
    case NcclLauncher::mpi:
      return format("mpi: %d ranks, one GPU each (%s), unique id broadcast by MPI\n", nranks,
                    o.device ? ("device " + std::to_string(*o.device)).c_str() : "device = local rank");
    case NcclLauncher::file:
      return format("file: rank %d of %d, %s, unique id through %s (timeout %d s)\n", o.rank.value_or(0), nranks,
                    o.device ? ("device " + std::to_string(*o.device)).c_str() : "device = rank mod visible devices",
                    o.bootstrap_file.c_str(), o.bootstrap_timeout_s);
  }
  return "";
}

std::string plan_sweep_text(const NcclSweepPlan& p, int nranks) {
  std::string out = format("\n# %s (%s), redop %s, root %d, busbw = algbw x %g\n", to_string(p.collective),
                           nccl_tests_binary(p.collective), redop_name(p.collective), root_of(p.collective),
                           bus_factor(p.collective, nranks));
  out += format("%12s  %12s  %12s  %12s\n", "size", "count", "send_count", "recv_count");
  for (const NcclCounts& k : p.sizes)
    out += format("%12lld  %12lld  %12lld  %12lld\n", static_cast<long long>(k.size_bytes),
                  static_cast<long long>(k.count), static_cast<long long>(k.send_count),
                  static_cast<long long>(k.recv_count));
  return out;
}

}  // namespace

void set_field(char (&field)[128], const std::string& text) {
  std::size_t n = std::min(text.size(), sizeof field - 1);
  std::copy_n(text.begin(), n, field);
  field[n] = '\0';
}

NcclCell make_cell(NcclCollective c, const NcclCounts& k, int nranks, double time_us,
                   std::optional<std::int64_t> wrong) {
  double alg = algbw_gbps(k.size_bytes, time_us);
  return {.time_us = time_us, .algbw_gbps = alg, .busbw_gbps = alg * bus_factor(c, nranks), .wrong = wrong};
}

std::string nccl_version_string(int code) {
  int major = code >= 20900 ? code / 10000 : code / 1000;
  int minor = code >= 20900 ? code / 100 % 100 : code / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

std::string format_float_field(double value, int width) {
  int power = 0;  // how many of 1, 10, 100, ... are <= value: the digits before the point
  for (double p = 1; value >= p && power < 400; p *= 10) ++power;
  if (power < width - 2) return format("%*.2f", width, value);
  if (power < width - 1) return format("%*.1f", width, value);
  if (power < width + 1) return format("%*.0f", width, value);
  return width >= 7 ? format("%*.1e", width, value) : format("%*.0e", width, value);
}

HostSummary summarize_hosts(const std::vector<RankInfo>& ranks) {
  HostSummary s;
  std::map<std::string, int> per_host;
  for (const RankInfo& r : ranks)
    if (per_host[r.host]++ == 0) s.hosts.emplace_back(r.host);
  if (!per_host.empty() && std::all_of(per_host.begin(), per_host.end(),
                                       [&](const auto& h) { return h.second == per_host.begin()->second; }))
    s.ranks_per_node = per_host.begin()->second;
  return s;
}

std::string format_table(const NcclRun& run, const NcclSweepResult& sweep) {
  std::string out = table_head(run, sweep);
  for (const NcclRow& r : sweep.rows) out += row_text(run, sweep, r);
  return out + table_foot(sweep);
}

std::string format_text(const NcclRun& run) {
  std::string out;
  for (const NcclSweepResult& s : run.sweeps) out += format_table(run, s);
  return out;
}

json nccl_document(const NcclRun& run, const json& device) {
  const NcclOptions& o = run.options;
  HostSummary h = summarize_hosts(run.ranks);
  json sweeps = json::array();
  for (const NcclSweepResult& s : run.sweeps) sweeps.push_back(sweep_json(s));
  json nccl{{"version", nccl_version_string(run.nccl_library_code)},
            {"launcher", to_string(o.launcher)},
            {"ranks", run.nranks},
            {"ranks_per_node", h.ranks_per_node ? json(*h.ranks_per_node) : json(nullptr)},
            {"nodes", h.hosts.size()},
            {"hosts", h.hosts},
            {"dtype", to_string(o.dtype)},
            {"warmup_iters", o.warmup_iters},
            {"iters", o.iters},
            {"check", o.check},
            {"sweeps", sweeps}};
  return {{"schema", "dtsim-bench/1"}, {"device", device}, {"nccl", nccl}};
}

std::string format_plan(const NcclOptions& o, int nranks) {
  std::vector<std::int64_t> sizes = sweep_sizes(o.min_bytes, o.max_bytes, o.step_factor, o.step_bytes);
  std::string out = "# dtsim-bench nccl --dry-run: the plan; nothing runs and no device is touched\n";
  out += "launcher " + launch_text(o, nranks);
  out += format("dtype %s (%zu bytes), warmup %d iterations at the largest then the smallest size, %d timed "
                "iterations per size out of place and in place, check %s\n",
                to_string(o.dtype), type_size(o.dtype), o.warmup_iters, o.iters, o.check ? "on" : "off");
  out += format("sizes %lld to %lld, step %s: %zu sizes\n", static_cast<long long>(o.min_bytes),
                static_cast<long long>(o.max_bytes), step_text(o).c_str(), sizes.size());
  for (const NcclSweepPlan& p : plan_sweeps(o.ops, sizes, o.dtype, nranks)) out += plan_sweep_text(p, nranks);
  return out;
}

}  // namespace dtsim::bench
