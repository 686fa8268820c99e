// calibrate::parse_nccl_tests_all: several nccl-tests tables in one file -- shared logs
// concatenated, `dtsim-bench nccl --op all` output read back, and the rules of nccl_tests.h on
// where a table starts, what the file says once for all tables and how --collective applies.
#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/nccl_tests.h"
#include "core/errors.h"
#include "helpers.h"
#include "nccl_report.h"

using namespace dtsim::calibrate;
using Catch::Matchers::Equals;
using Catch::Matchers::VectorContains;
using Catch::Matchers::WithinAbs;
using dtsim::SpecError;
using dtsim::spec::Collective;
namespace bench = dtsim::bench;

namespace {

const std::string kHeader =
    R"(#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
)";
// all_reduce over 8 ranks (worked in nccl_tests_test.cc): algbw = size / time, busbw = algbw x
// 2(n-1)/n = 1.75 algbw; 1048576 B / 100.0 us = 10.49 GB/s -> 18.35.
const std::string kReduce =
    R"(     1048576        262144     float     sum      -1    100.0   10.49   18.35      0    101.0   10.38   18.17      0
     2097152        524288     float     sum      -1    150.0   13.98   24.47      0    151.0   13.89   24.30      0
     4194304       1048576     float     sum      -1    250.0   16.78   29.36      0    251.0   16.71   29.24      0
)";
// all_gather over 4 ranks: count = size / (4 ranks x 4 B), busbw = algbw x 3/4: 10.49 -> 7.86,
// 13.98 -> 10.49, 16.78 -> 12.58. alltoall prints the same, so only a name or a flag tells them apart.
const std::string kGather =
    R"(     1048576         65536     float    none      -1    100.0   10.49    7.86      0    101.0   10.38    7.79      0
     2097152        131072     float    none      -1    150.0   13.98   10.49      0    151.0   13.89   10.42      0
     4194304        262144     float    none      -1    250.0   16.78   12.58      0    251.0   16.71   12.53      0
)";
// The same all_gather run slower: 1048576 B / 200.0 us = 5.24 GB/s -> x 3/4 = 3.93; 2097152 B /
// 300.0 us = 6.99 -> 5.24; 4194304 B / 500.0 us = 8.39 -> 6.29.
const std::string kGatherSlow =
    R"(     1048576         65536     float    none      -1    200.0    5.24    3.93      0    200.0    5.24    3.93      0
     2097152        131072     float    none      -1    300.0    6.99    5.24      0    300.0    6.99    5.24      0
     4194304        262144     float    none      -1    500.0    8.39    6.29      0    500.0    8.39    6.29      0
)";
const std::string kReduceStart = "# Collective test starting: all_reduce_perf\n";
const std::string kGatherStart = "# Collective test starting: all_gather_perf\n";
// What the rows of kGather allow, as decide_collective words it.
const std::string kGatherFit =
    "(size = 4 x count x 4 B, redop none, root -1, busbw/algbw in [0.7497, 0.7501] over 6 timings) fit all_gather "
    "and all_to_all";

std::vector<NcclTestsLog> parse_all(const std::string& text, const NcclTestsHints& hints = {}) {
  return parse_nccl_tests_all(text, "t.txt", hints);
}

// `all` as `alone` reads the same text: every field but the lines `all` was cut from, and the notes
// but `all`'s first, `table` ("table 1 of 2: lines 1-66").
void check_same(const NcclTestsLog& all, const NcclTestsLog& alone, const std::string& table) {
  CHECK(all.path == alone.path);
  CHECK(all.collective == alone.collective);
  CHECK(all.ranks == alone.ranks);
  CHECK(all.ranks_per_node == alone.ranks_per_node);
  CHECK(all.dtype == alone.dtype);
  CHECK(all.nccl_version == alone.nccl_version);
  CHECK(all.devices == alone.devices);
  CHECK(all.rows == alone.rows);
  REQUIRE_FALSE(all.notes.empty());
  CHECK(all.notes.front() == table);
  CHECK(std::vector<std::string>(all.notes.begin() + 1, all.notes.end()) == alone.notes);
}

std::filesystem::path shared_logs() { return std::filesystem::path(DTSIM_SHARED_DIR) / "validation/nccl_logs"; }

}  // namespace

TEST_CASE("calibrate::parse_nccl_tests_all: two shared logs concatenated read as each alone", "[nccl_tests]") {
  std::filesystem::path reduce_path = shared_logs() / "h200-2x1-allreduce-gcp-a3ultra-1nic-dranet.txt",
                        gather_path = shared_logs() / "h200-2x1-allgather-gcp-a3ultra-1nic-dranet.txt";
  if (!std::filesystem::exists(reduce_path) || !std::filesystem::exists(gather_path)) {
    WARN("skipped: " << reduce_path.string() << " or " << gather_path.string() << " not found");
    return;
  }
  std::string reduce = dtsim::test::read_text(reduce_path.string());
  std::string gather = dtsim::test::read_text(gather_path.string());
  REQUIRE(reduce.ends_with('\n'));
  auto lines = std::count(reduce.begin(), reduce.end(), '\n');
  REQUIRE(lines == 66);
  std::vector<NcclTestsLog> logs = parse_nccl_tests_all(reduce + gather, "both.txt");
  REQUIRE(logs.size() == 2);
  // The all_gather log begins with its own command line ("run_nccl_tests.sh -t all_gather" on its
  // line 1): the second table starts there. Alone it is read 66 lines down, so line numbers agree.
  check_same(logs[0], parse_nccl_tests(reduce, "both.txt"), "table 1 of 2: lines 1-66");
  check_same(logs[1], parse_nccl_tests(std::string(static_cast<std::size_t>(lines), '\n') + gather, "both.txt"),
             "table 2 of 2: lines 67-112");
  CHECK(logs[0].collective == Collective::all_reduce);
  CHECK(logs[1].collective == Collective::all_gather);
  CHECK(logs[0].first_line == 1);
  CHECK(logs[0].last_line == 66);
  CHECK(logs[1].first_line == 67);
  CHECK(logs[1].last_line == 112);
  // The all_reduce log prints no NCCL version; the all_gather log's, after the first table, is its own.
  CHECK_FALSE(logs[0].nccl_version.has_value());
  CHECK(logs[1].nccl_version == "2.25.1+cuda12.8");
}

TEST_CASE("calibrate::parse_nccl_tests_all: a file of one table reads as parse_nccl_tests", "[nccl_tests]") {
  if (!std::filesystem::exists(shared_logs())) {
    WARN("skipped: " << shared_logs().string() << " not found");
    return;
  }
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(shared_logs())) {
    if (entry.path().extension() != ".txt") continue;
    ++files;
    INFO(entry.path().filename().string());
    std::string text = dtsim::test::read_text(entry.path().string()), one_error, all_error;
    std::optional<NcclTestsLog> one;
    std::vector<NcclTestsLog> all;
    try {
      one = parse_nccl_tests(text, "x.txt");
    } catch (const SpecError& e) {
      one_error = e.what();
    }
    try {
      all = parse_nccl_tests_all(text, "x.txt");
    } catch (const SpecError& e) {
      all_error = e.what();
    }
    CHECK(all_error == one_error);  // those that need --ranks or --collective fail alike
    if (!one) continue;
    REQUIRE(all.size() == 1);
    CHECK(all[0].notes == one->notes);  // no "table 1 of 1"
    CHECK(all[0].first_line == one->first_line);
    CHECK(all[0].last_line == one->last_line);
    CHECK(all[0].rows == one->rows);
    CHECK(all[0].ranks == one->ranks);
  }
  CHECK(files == 17);
}

namespace {

// 16 ranks on two hosts of 8 (mpi launcher, one GPU per process) timing all_reduce and all_gather
// from 1 MiB to 8 MiB: t = 30 us + size / 20 GB/s out of place, 1% more in place.
bench::NcclRun two_sweeps() {
  bench::NcclRun run;
  run.options.ops = {bench::NcclCollective::all_reduce, bench::NcclCollective::all_gather};
  run.options.min_bytes = std::int64_t{1} << 20;
  run.options.max_bytes = std::int64_t{8} << 20;
  run.options.launcher = bench::NcclLauncher::mpi;
  run.nccl_library_code = run.nccl_header_code = 22809;
  run.nranks = 16;
  run.gpus_per_process = 1;
  for (int r = 0; r < 16; ++r) {
    bench::RankInfo info{.rank = r, .pid = 100 + r, .device = r % 8, .pci_bus = 0x1b + r % 8};
    bench::set_field(info.host, r < 8 ? "node-a" : "node-b");
    bench::set_field(info.name, "NVIDIA H100 80GB HBM3");
    run.ranks.push_back(info);
  }
  for (bench::NcclCollective c : run.options.ops) {
    bench::NcclSweepResult s{.collective = c};
    for (std::int64_t size = run.options.min_bytes; size <= run.options.max_bytes; size *= 2) {
      bench::NcclCounts k = bench::nccl_counts(c, size, bench::NcclDtype::float32, 16);
      double t = 30 + static_cast<double>(size) / 20e3;
      s.rows.push_back({k, bench::make_cell(c, k, 16, t, 0), bench::make_cell(c, k, 16, t * 1.01, 0)});
    }
    run.sweeps.push_back(s);
  }
  return run;
}

// The log holds the sweep's sizes, counts and cells to the printed precision: time, algbw and busbw
// print with two decimals below 10000 us and 1000 GB/s, so each is within half a hundredth.
void check_sweep(const NcclTestsLog& log, const bench::NcclSweepResult& s, Collective c) {
  CHECK(log.collective == c);
  CHECK(log.ranks == 16);
  CHECK(log.ranks_per_node == 8);
  CHECK(log.dtype == "float");
  CHECK(log.nccl_version == "2.28.9");  // 22809
  CHECK(log.devices == std::vector<std::string>(16, "NVIDIA H100 80GB HBM3"));
  REQUIRE(log.rows.size() == s.rows.size());
  constexpr double half = 0.005 + 1e-9;
  for (std::size_t i = 0; i < s.rows.size(); ++i) {
    const NcclTestsRow& r = log.rows[i];
    CHECK(r.size_bytes == s.rows[i].counts.size_bytes);
    CHECK(r.count == s.rows[i].counts.count);
    REQUIRE(r.in_place.has_value());
    for (auto [got, want] : {std::pair{r.out_of_place, s.rows[i].out_of_place}, {*r.in_place, s.rows[i].in_place}}) {
      CHECK_THAT(got.time_us, WithinAbs(want.time_us, half));
      CHECK_THAT(got.algbw_GBps, WithinAbs(want.algbw_gbps, half));
      CHECK_THAT(got.busbw_GBps, WithinAbs(want.busbw_gbps, half));
    }
  }
}

}  // namespace

TEST_CASE("calibrate::parse_nccl_tests_all: dtsim-bench nccl's tables read back", "[nccl_tests]") {
  bench::NcclRun run = two_sweeps();
  std::string text = bench::format_text(run);
  std::vector<NcclTestsLog> logs = parse_nccl_tests_all(text, "bench.txt");
  REQUIRE(logs.size() == 2);
  check_sweep(logs[0], run.sweeps[0], Collective::all_reduce);
  check_sweep(logs[1], run.sweeps[1], Collective::all_gather);
  // Each table is 34 lines: 26 head lines (8 + 16 ranks), 4 rows, 4 foot lines; the second starts
  // at its "# dtsim-bench nccl ... nccl-headers=22809" banner.
  CHECK(logs[0].first_line == 1);
  CHECK(logs[0].last_line == 34);
  CHECK(logs[1].first_line == 35);
  CHECK(logs[1].last_line == 68);
  CHECK(logs[0].notes.front() == "table 1 of 2: lines 1-34");
  CHECK_THAT(logs[0].notes,
             VectorContains(std::string("collective all_reduce: from the binary name all_reduce_perf on line 2")));
  CHECK_THAT(logs[1].notes, VectorContains(std::string("ranks 16: from the device list (16 ranks on 2 hosts)")));
  // One table at a time, parse_nccl_tests reads the same.
  for (std::size_t i = 0; i < 2; ++i) {
    NcclTestsLog one = parse_nccl_tests(bench::format_table(run, run.sweeps[i]), "one.txt");
    check_sweep(one, run.sweeps[i], i == 0 ? Collective::all_reduce : Collective::all_gather);
    REQUIRE(one.rows.size() == logs[i].rows.size());
    for (std::size_t k = 0; k < one.rows.size(); ++k) {
      NcclTestsRow moved = one.rows[k];
      moved.line += logs[i].first_line - 1;
      CHECK(moved == logs[i].rows[k]);
    }
  }
  // Both at once are a second sweep to parse_nccl_tests: all_gather's first row is line 34 + 27.
  REQUIRE_THROWS_WITH(parse_nccl_tests(text, "bench.txt"),
                      Equals("bench.txt:61: expected redop sum as on line 27, got \"none\": a second sweep starts "
                             "here: split the file"));
}

TEST_CASE("calibrate::parse_nccl_tests_all: where a table starts", "[nccl_tests]") {
  // "Collective test concluded" (line 7) ends the first table; "starting" (line 8) begins the next.
  std::string named = kReduceStart + kHeader + kReduce + "# Collective test concluded: all_reduce_perf\n" +
                      kGatherStart + kHeader + kGather;
  std::vector<NcclTestsLog> logs = parse_all(named);
  REQUIRE(logs.size() == 2);
  CHECK(logs[0].collective == Collective::all_reduce);
  CHECK(logs[0].ranks == 8);  // busbw/algbw 1.75 = 2(n-1)/n
  CHECK(logs[1].collective == Collective::all_gather);
  CHECK(logs[1].ranks == 4);  // size/(count x 4 B)
  CHECK(logs[0].notes.front() == "table 1 of 2: lines 1-7");
  CHECK(logs[1].notes.front() == "table 2 of 2: lines 8-13");
  // A column header after rows starts a table too (lines 1-5, 6-10).
  logs = parse_all(kHeader + kGather + kHeader + kGatherSlow, {.collective = Collective::all_gather});
  REQUIRE(logs.size() == 2);
  CHECK(logs[1].first_line == 6);
  CHECK(logs[1].rows[0].out_of_place == NcclTiming{200.0, 5.24, 3.93});
  // A run started after the last table that printed no rows (lines 6-7) is left out.
  logs = parse_all(kHeader + kReduce + "mpirun -np 8 ./build/all_gather_perf -b 1M -e 4M\n" +
                   "mpirun noticed that process rank 3 with PID 0 on node b exited on signal 9.\n");
  REQUIRE(logs.size() == 1);
  CHECK(logs[0].last_line == 5);
  CHECK_THAT(logs[0].notes, VectorContains(std::string(
                                "ignored lines 6-7 after the last table: a run starts on line 6 but prints no rows")));
}

TEST_CASE("calibrate::parse_nccl_tests_all: repeats and second sweeps within a table", "[nccl_tests]") {
  // The same table twice (lines 1-6, 7-12): read once.
  std::vector<NcclTestsLog> logs = parse_all(kGatherStart + kHeader + kGather + kGatherStart + kHeader + kGather);
  REQUIRE(logs.size() == 1);
  CHECK(logs[0].last_line == 6);
  CHECK_THAT(logs[0].notes, VectorContains(std::string("dropped the table on lines 7-12: the same rows as this one")));
  // Within the second table (lines 7-13), 1 MiB again with other numbers and nothing that starts a table.
  std::string again =
      R"(     1048576        262144     float     sum      -1    120.0    8.74   15.29      0    121.0    8.67   15.17      0
)";
  REQUIRE_THROWS_WITH(parse_all(kGatherStart + kHeader + kGather + kReduceStart + kHeader + kReduce + again),
                      Equals("t.txt:13: expected each size once, got 1048576 again (first on line 10) with other "
                             "numbers: a second sweep starts here: split the file"));
}

TEST_CASE("calibrate::parse_nccl_tests_all: --collective only when no table names its own", "[nccl_tests]") {
  // No table names its binary: the flag applies to both; without it the first cannot be decided.
  std::string unnamed = kHeader + kGather + kHeader + kGatherSlow;
  REQUIRE_THROWS_WITH(parse_all(unnamed), Equals("t.txt:1-5: cannot tell the collective (no binary name in the "
                                                 "table; the rows " +
                                                 kGatherFit + "); pass --collective NAME"));
  for (const NcclTestsLog& log : parse_all(unnamed, {.collective = Collective::all_gather})) {
    CHECK(log.collective == Collective::all_gather);
    CHECK_THAT(log.notes, VectorContains(std::string("collective all_gather: from --collective")));
  }
  // The first table names all_reduce_perf: the flag is not used, and the second table, which its rows
  // cannot decide, must be split off.
  std::string half = kReduceStart + kHeader + kReduce + kHeader + kGather;
  const std::string split = "t.txt:7-11: cannot tell the collective (no binary name in the table; the rows " +
                            kGatherFit +
                            "); split the file: --collective applies only when no table names its collective";
  REQUIRE_THROWS_WITH(parse_all(half), Equals(split));
  REQUIRE_THROWS_WITH(parse_all(half, {.collective = Collective::all_gather}), Equals(split));
  // Both named: each its own, the flag noted as not used.
  std::string named = kReduceStart + kHeader + kReduce + kGatherStart + kHeader + kGather;
  std::vector<NcclTestsLog> logs = parse_all(named, {.collective = Collective::all_gather});
  REQUIRE(logs.size() == 2);
  CHECK(logs[0].collective == Collective::all_reduce);
  CHECK(logs[1].collective == Collective::all_gather);
  for (const NcclTestsLog& log : logs)
    CHECK_THAT(log.notes, VectorContains(std::string("--collective all_gather: not used, the file names a table's "
                                                     "collective (all_reduce_perf on line 1); it applies only when no "
                                                     "table does")));
  // --ranks applies to every table.
  logs = parse_all(named, {.ranks = 8});
  CHECK(logs[0].ranks == 8);
  CHECK(logs[1].ranks == 8);
}

TEST_CASE("calibrate::parse_nccl_tests_all: what the file says once counts for every table", "[nccl_tests]") {
  // One launcher runs both binaries (line 1, before any table): 4 processes, 2 per node. broadcast
  // and sendrecv have busbw = algbw, so only the command line gives the rank count.
  std::string bcast =
      R"(     1048576        262144     float    none       0    100.0   10.49   10.49      0    101.0   10.38   10.38      0
     4194304       1048576     float    none       0    250.0   16.78   16.78      0    251.0   16.71   16.71      0
)";
  std::string sendrecv =
      R"(     1048576        262144     float     sum      -1    100.0   10.49   10.49      0    101.0   10.38   10.38      0
)";
  std::string text =
      "$ mpirun -np 4 -npernode 2 bash -c 'for t in broadcast sendrecv; do ./build/${t}_perf -b 1M -e 4M; done'\n" +
      std::string("# Collective test starting: broadcast_perf\n") + kHeader + bcast +
      "# Collective test starting: sendrecv_perf\n" + kHeader + sendrecv;
  std::vector<NcclTestsLog> logs = parse_all(text);
  REQUIRE(logs.size() == 2);
  CHECK(logs[0].collective == Collective::broadcast);
  CHECK(logs[1].collective == Collective::send_recv);
  for (const NcclTestsLog& log : logs) {
    CHECK(log.ranks == 4);
    CHECK(log.ranks_per_node == 2);
    CHECK_THAT(log.notes, VectorContains(std::string(
                              "ranks 4: from the command line on line 1 (mpirun -np 4, 1 GPU per process)")));
  }
  CHECK_THAT(logs[1].notes, VectorContains(std::string("the command line: from line 1, before the first table")));
}

TEST_CASE("calibrate::parse_nccl_tests_all: a table's own device list comes first", "[nccl_tests]") {
  // A device list before the first table (lines 1-2) counts for a table without one of its own
  // (the third), not for one with its own (the second). Each run header (nThread) starts a table.
  std::string row1 = kReduce.substr(0, kReduce.find('\n') + 1), row2 = kReduce.substr(row1.size(), row1.size());
  std::string run = "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304\n";
  std::string h100 = "#  Rank  0 Group  0 Pid   1000 on     node-a device  0 [0x1b] NVIDIA H100\n";
  std::string b200 = "#  Rank  0 Group  0 Pid   1000 on     node-b device  0 [0x1b] NVIDIA B200\n";
  std::string text = "# Using devices\n" + h100 + kHeader + kReduce + run + b200 + kHeader + row1 + run + kHeader + row2;
  std::vector<NcclTestsLog> logs = parse_all(text, {.ranks = 8});
  REQUIRE(logs.size() == 3);
  CHECK(logs[0].devices == std::vector<std::string>{"NVIDIA H100"});
  CHECK(logs[1].devices == std::vector<std::string>{"NVIDIA B200"});
  CHECK(logs[2].devices == std::vector<std::string>{"NVIDIA H100"});
  CHECK(logs[1].first_line == 8);   // devices 1-2, header 3-4, rows 5-7
  CHECK(logs[2].first_line == 13);  // nThread 8, device 9, header 10-11, row 12
  CHECK_THAT(logs[2].notes, VectorContains(std::string("the device list: from lines 1-2, before the first table")));
}

TEST_CASE("calibrate::parse_nccl_tests_all: any order of pieces is logs or an error, never a crash", "[nccl_tests]") {
  std::vector<std::string> pieces = {kReduceStart,
                                     kHeader,
                                     kReduce,
                                     "# Collective test concluded: all_reduce_perf\n",
                                     kGatherStart,
                                     kHeader,
                                     kGather,
                                     "mpirun -np 4 bash -c 'for t in a b; do ./${t}_perf; done'\n",
                                     "...\n",
                                     "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304\n",
                                     "NCCL version 2.18.3+cuda12.2\n",
                                     "#  Rank  0 Group  0 Pid   1000 on     node-a device  0 [0x1b] NVIDIA H100\n",
                                     kGatherSlow};
  std::mt19937 random(7);
  int read = 0;
  for (int round = 0; round < 300; ++round) {
    std::shuffle(pieces.begin(), pieces.end(), random);
    std::string text;
    for (std::size_t i = 0; i < pieces.size() - static_cast<std::size_t>(round % 4); ++i) text += pieces[i];
    INFO(text);
    try {
      for (const NcclTestsLog& log : parse_all(text, {.collective = Collective::all_gather, .gpus_per_node = 2})) {
        CHECK_FALSE(log.rows.empty());
        CHECK(log.first_line <= log.last_line);
      }
      ++read;
    } catch (const SpecError&) {
    }
  }
  CHECK(read > 0);
}

TEST_CASE("calibrate::load_nccl_tests_all: a file that cannot be read", "[nccl_tests]") {
  REQUIRE_THROWS_WITH(load_nccl_tests_all("/nonexistent/nccl.txt"),
                      Equals("--nccl-tests: cannot read /nonexistent/nccl.txt (No such file or directory)"));
  REQUIRE_THROWS_WITH(parse_all("", {.ranks = 0}), Equals("--ranks: expected an integer >= 1, got 0"));
  REQUIRE_THROWS_WITH(parse_all(""),
                      Equals("t.txt: expected an nccl-tests table (rows of size count type redop ...), found none"));
}
