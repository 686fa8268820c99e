// dtsim-bench nccl's outputs (tools/dtsim-bench/nccl_report.h) from synthetic results. The table
// is checked against a published nccl-tests 2.17.6 run (all_reduce_perf -b 1M -e 1G -f 2 -g 8 on
// 8 PCIe GPUs): fed that run's times, the formatter must print its rows, character for character.
#include <catch2/catch.hpp>

#include <sstream>

#include "nccl_report.h"

using namespace dtsim::bench;
using Catch::Matchers::Contains;
using Catch::Matchers::WithinRel;
using nlohmann::json;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

RankInfo rank_on(int rank, const std::string& host, int device) {
  RankInfo r{.rank = rank, .pid = 1234 + rank, .device = device, .pci_domain = 0, .pci_bus = 0x1b + device,
             .pci_device = 0};
  set_field(r.host, host);
  set_field(r.name, "NVIDIA H100 80GB HBM3");
  return r;
}

// The published run's out-of-place and in-place times (us) from 1 MiB to 1 GiB.
const std::vector<std::pair<double, double>> kTimes = {
    {348.03, 182.49},  {309.66, 318.26},  {483.86, 486.82},   {1047.63, 1094.59},
    {2403.75, 2288.61}, {4808.58, 4591.35}, {9839.20, 9306.81},  {19117.3, 19302.3},
    {36780.0, 37992.3}, {75950.0, 75639.1}, {154715, 134369}};

NcclRun published_run() {
  NcclRun run;
  run.options.ops = {NcclCollective::all_reduce};
  run.options.min_bytes = 1 << 20;
  run.options.max_bytes = 1 << 30;
  run.nccl_library_code = run.nccl_header_code = 22605;
  run.nranks = run.gpus_per_process = 8;
  for (int i = 0; i < 8; ++i) run.ranks.push_back(rank_on(i, "gpu-node", i));
  NcclSweepResult s{.collective = NcclCollective::all_reduce};
  std::int64_t size = 1 << 20;
  for (const auto& [oop, ip] : kTimes) {
    NcclCounts k = nccl_counts(NcclCollective::all_reduce, size, NcclDtype::float32, 8);
    s.rows.push_back({k, make_cell(NcclCollective::all_reduce, k, 8, oop, 0),
                      make_cell(NcclCollective::all_reduce, k, 8, ip, 0)});
    size *= 2;
  }
  run.sweeps.push_back(s);
  return run;
}

}  // namespace

TEST_CASE("bench::format_float_field: nccl-tests' getFloatStr", "[bench]") {
  CHECK(format_float_field(348.03, 7) == " 348.03");
  CHECK(format_float_field(9839.2, 7) == "9839.20");   // 4 digits: still two decimals in 7
  CHECK(format_float_field(19117.3, 7) == "19117.3");  // 5 digits: one decimal
  CHECK(format_float_field(154715, 7) == " 154715");   // 6 digits: none
  CHECK(format_float_field(12345678, 7) == "1.2e+07");
  CHECK(format_float_field(0.0, 6) == "  0.00");
  CHECK(format_float_field(184.57, 6) == "184.57");
  CHECK(format_float_field(1234.5, 6) == "1234.5");
}

TEST_CASE("bench::nccl_version_string: NCCL_VERSION codes", "[bench]") {
  CHECK(nccl_version_string(22809) == "2.28.9");  // 2*10000 + 28*100 + 9
  CHECK(nccl_version_string(2803) == "2.8.3");    // before 2.9: 2*1000 + 8*100 + 3
}

TEST_CASE("bench::format_table: a published nccl-tests table, line by line", "[bench]") {
  NcclRun run = published_run();
  std::vector<std::string> l = lines_of(format_table(run, run.sweeps[0]));
  REQUIRE(l.size() == 33);  // 18 head lines (8 ranks), 11 rows, 4 foot lines
  CHECK(l[0] == "# dtsim-bench nccl (nccl-tests 2.17 output) nccl-headers=22605 nccl-library=22605");
  CHECK(l[1] == "# Collective test starting: all_reduce_perf");
  CHECK(l[2] == "# nThread 1 nGpus 8 minBytes 1048576 maxBytes 1073741824 step: 2(factor) warmup iters: 5 "
                "iters: 20 agg iters: 1 validation: 1 graph: 0");
  CHECK(l[3] == "#");
  CHECK(l[4] == "# Using devices");
  CHECK(l[5] == "#  Rank  0 Group  0 Pid   1234 on   gpu-node device  0 [0000:1b:00] NVIDIA H100 80GB HBM3");
  CHECK(l[12] == "#  Rank  7 Group  0 Pid   1241 on   gpu-node device  7 [0000:22:00] NVIDIA H100 80GB HBM3");
  CHECK(l[13] == "NCCL version 2.26.5");  // 22605
  CHECK(l[14] == "#");
  // The header as the published run prints it, trailing spaces included.
  CHECK(l[15] == "#                                                              out-of-place                       "
                 "in-place          ");
  CHECK(l[16] == "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   "
                 "algbw   busbw  #wrong ");
  CHECK(l[17] == "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  "
                 "(GB/s)  (GB/s)         ");
  // Its rows, from its times: 1 MiB / 348.03 us = 3.01 GB/s, x 2(8-1)/8 = 5.27; every time format
  // branch (348.03, 19117.3, 154715) appears.
  CHECK(l[18] == "     1048576        262144     float     sum      -1   348.03    3.01    5.27       0   182.49    "
                 "5.75   10.06       0");
  CHECK(l[21] == "     8388608       2097152     float     sum      -1  1047.63    8.01   14.01       0  1094.59    "
                 "7.66   13.41       0");
  CHECK(l[25] == "   134217728      33554432     float     sum      -1  19117.3    7.02   12.29       0  19302.3    "
                 "6.95   12.17       0");
  CHECK(l[28] == "  1073741824     268435456     float     sum      -1   154715    6.94   12.15       0   134369    "
                 "7.99   13.98       0");
  // Its foot: the mean busbw over all 22 cells, as it printed it (trailing space included).
  CHECK(l[29] == "# Out of bounds values : 0 OK");
  CHECK(l[30] == "# Avg bus bandwidth    : 12.3406 ");
  CHECK(l[31] == "#");
  CHECK(l[32] == "# Collective test concluded: all_reduce_perf");
}

TEST_CASE("bench::format_table: N/A without a check, FAILED with wrong elements", "[bench]") {
  NcclRun run = published_run();
  run.options.check = false;
  NcclSweepResult s{.collective = NcclCollective::all_gather};
  // all_gather, 2 ranks (factor 1/2): 2 GB in 1000 us is 2000 GB/s algbw, 1000 busbw; 4 GB: 4000, 2000.
  NcclCounts k = nccl_counts(NcclCollective::all_gather, 2000000000, NcclDtype::float32, 2);
  s.rows.push_back({k, make_cell(s.collective, k, 2, 1000, std::nullopt), make_cell(s.collective, k, 2, 500, 3)});
  std::vector<std::string> l = lines_of(format_table(run, s));
  CHECK(l[2] == "# nThread 1 nGpus 8 minBytes 1048576 maxBytes 1073741824 step: 2(factor) warmup iters: 5 "
                "iters: 20 agg iters: 1 validation: 0 graph: 0");
  CHECK(l[18] == "  2000000000     250000000     float    none      -1  1000.00  2000.0  1000.0    N/A   500.00  "
                 "4000.0  2000.0       3");
  CHECK(l[19] == "# Out of bounds values : 1 FAILED");
  CHECK(l[20] == "# Avg bus bandwidth    : 1500 ");  // (1000 + 2000) / 2
  CHECK(l[22] == "# Collective test concluded: all_gather_perf");
}

TEST_CASE("bench::format_table: broadcast's root and -i steps", "[bench]") {
  NcclRun run = published_run();
  run.options.step_factor = 1;
  run.options.step_bytes = 1 << 20;
  NcclSweepResult s{.collective = NcclCollective::broadcast};
  NcclCounts k = nccl_counts(NcclCollective::broadcast, 8, NcclDtype::float32, 8);
  s.rows.push_back({k, make_cell(s.collective, k, 8, 10.5, 0), make_cell(s.collective, k, 8, 9.25, 0)});
  std::vector<std::string> l = lines_of(format_table(run, s));
  CHECK_THAT(l[2], Contains(" step: 1048576(bytes) "));
  // 8 bytes in 10.5 us = 0.00076 GB/s.
  CHECK(l[18] == "           8             2     float    none       0    10.50    0.00    0.00       0     9.25    "
                 "0.00    0.00       0");
}

TEST_CASE("bench::summarize_hosts: nodes and ranks per node", "[bench]") {
  HostSummary two = summarize_hosts({rank_on(0, "a", 0), rank_on(1, "a", 1), rank_on(2, "b", 0), rank_on(3, "b", 1)});
  CHECK(two.hosts == std::vector<std::string>{"a", "b"});
  CHECK(two.ranks_per_node == 2);
  HostSummary uneven = summarize_hosts({rank_on(0, "a", 0), rank_on(1, "a", 1), rank_on(2, "b", 0)});
  CHECK(uneven.hosts.size() == 2);
  CHECK_FALSE(uneven.ranks_per_node);
}

TEST_CASE("bench::nccl_document: the dtsim-bench/1 fields and their types", "[bench]") {
  NcclRun run = published_run();
  run.options.launcher = NcclLauncher::mpi;
  run.sweeps[0].rows[0].in_place.wrong = std::nullopt;
  json device{{"name", "NVIDIA H100 80GB HBM3"}, {"sm_count", 132}};
  json d = nccl_document(run, device);
  CHECK(d.at("schema") == "dtsim-bench/1");
  CHECK(d.at("device") == device);
  const json& n = d.at("nccl");
  CHECK(n.at("version") == "2.26.5");
  CHECK(n.at("launcher") == "mpi");
  CHECK(n.at("ranks") == 8);
  CHECK(n.at("ranks_per_node") == 8);
  CHECK(n.at("nodes") == 1);
  CHECK(n.at("hosts") == json::array({"gpu-node"}));
  CHECK(n.at("dtype") == "float");
  CHECK(n.at("warmup_iters") == 5);
  CHECK(n.at("iters") == 20);
  CHECK(n.at("check") == true);
  const json& sweep = n.at("sweeps").at(0);
  CHECK(sweep.at("collective") == "all_reduce");
  CHECK(sweep.at("redop") == "sum");
  CHECK(sweep.at("root") == -1);
  REQUIRE(sweep.at("results").size() == 11);
  const json& r = sweep.at("results").at(0);
  CHECK(r.at("size_bytes") == 1048576);
  CHECK(r.at("count") == 262144);
  CHECK(r.at("size_bytes").is_number_integer());
  const json& oop = r.at("out_of_place");
  CHECK(oop.at("time_us").is_number_float());
  CHECK_THAT(oop.at("time_us").get<double>(), WithinRel(348.03));
  CHECK_THAT(oop.at("algbw_GBps").get<double>(), WithinRel(1048576 / 348.03e-6 / 1e9));
  CHECK_THAT(oop.at("busbw_GBps").get<double>(), WithinRel(1048576 / 348.03e-6 / 1e9 * 1.75));
  CHECK(oop.at("wrong") == 0);
  CHECK(oop.at("wrong").is_number_integer());
  CHECK(r.at("in_place").at("wrong").is_null());  // not checked
  CHECK(n.size() == 11);  // nothing beyond the schema above
}

TEST_CASE("bench::format_plan: the --dry-run plan", "[bench]") {
  NcclOptions o;
  o.ops = {NcclCollective::all_gather};
  o.max_bytes = 64;
  o.gpus = 16;
  std::vector<std::string> l = lines_of(format_plan(o, 16));
  CHECK(l[0] == "# dtsim-bench nccl --dry-run: the plan; nothing runs and no device is touched");
  CHECK(l[1] == "launcher single-process: 16 ranks, devices 0 to 15 of this process, ncclCommInitAll");
  CHECK(l[3] == "sizes 8 to 64, step 2(factor): 4 sizes");
  CHECK(l[5] == "# all_gather (all_gather_perf), redop none, root -1, busbw = algbw x 0.9375");  // 15/16
  CHECK(l[6] == "        size         count    send_count    recv_count");
  CHECK(l[7] == "           0             0             0             0");  // 2 floats over 16 ranks
  CHECK(l[10] == "          64             1             1            16");
  CHECK(l.size() == 11);
}
