#include "calibrate/nccl_tests.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/errors.h"
#include "helpers.h"

using namespace dtsim::calibrate;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;
using Catch::Matchers::VectorContains;
using Catch::Matchers::WithinAbs;
using dtsim::SpecError;
using dtsim::spec::Collective;

namespace {

// An 8-rank all_reduce on two hosts of four GPUs, as nccl-tests 2.13+ prints it. nccl-tests:
// algbw = size / time, busbw = algbw x 2(n-1)/n = 1.75 algbw for n = 8. Worked by hand:
// 1048576 B / 100.0 us = 10.486 GB/s -> "10.49", x 1.75 = 18.350 -> "18.35";
// 2097152 B / 150.0 us = 13.981 -> "13.98", 24.467 -> "24.47";
// 4194304 B / 250.0 us = 16.777 -> "16.78", 29.360 -> "29.36";
// in-place 101.0, 151.0, 251.0 us: 10.38/18.17, 13.89/24.30, 16.71/29.24.
// count = size / 4 (float). Lines 1-13 here, the table on lines 14-22.
const std::string kHead =
    R"(# nThread 1 nGpus 1 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   1000 on     node-a device  0 [0x1b] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   1001 on     node-a device  1 [0x43] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid   1002 on     node-a device  2 [0x52] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid   1003 on     node-a device  3 [0x61] NVIDIA H100 80GB HBM3
#  Rank  4 Group  0 Pid   2000 on     node-b device  0 [0x1b] NVIDIA H100 80GB HBM3
#  Rank  5 Group  0 Pid   2001 on     node-b device  1 [0x43] NVIDIA H100 80GB HBM3
#  Rank  6 Group  0 Pid   2002 on     node-b device  2 [0x52] NVIDIA H100 80GB HBM3
#  Rank  7 Group  0 Pid   2003 on     node-b device  3 [0x61] NVIDIA H100 80GB HBM3
NCCL version 2.18.3+cuda12.2
#
)";
const std::string kBanner =
    "#                                                              out-of-place                       in-place\n";
const std::string kHeader =
    R"(#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
)";
const std::string kRows =
    R"(     1048576        262144     float     sum      -1    100.0   10.49   18.35      0    101.0   10.38   18.17      0
     2097152        524288     float     sum      -1    150.0   13.98   24.47      0    151.0   13.89   24.30      0
     4194304       1048576     float     sum      -1    250.0   16.78   29.36      0    251.0   16.71   29.24      0
)";
const std::string kTail = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 23.9817\n#\n";
const std::string kTable = kBanner + kHeader + kRows + kTail;  // rows on lines 4-6
const std::string kLog = kHead + kTable;                       // rows on lines 17-19

// `text` with `f(line, index)` applied to each line.
std::string each_line(const std::string& text, const std::function<std::string(const std::string&, int)>& f) {
  std::istringstream in(text);
  std::string out, line;
  for (int i = 0; std::getline(in, line); ++i) out += f(line, i) + "\n";
  return out;
}

std::string with(const std::string& text, const std::string& from, const std::string& to) {
  return dtsim::test::replaced(text, from, to);
}

NcclTestsLog parse(const std::string& text, const NcclTestsHints& hints = {}) {
  return parse_nccl_tests(text, "t.txt", hints);
}

// The three rows of kRows, in any of the formats below.
void check_rows(const NcclTestsLog& log) {
  REQUIRE(log.rows.size() == 3);
  CHECK(log.rows[0].size_bytes == 1048576);
  CHECK(log.rows[0].count == 262144);
  CHECK(log.rows[1].size_bytes == 2097152);
  CHECK(log.rows[2].size_bytes == 4194304);
  CHECK(log.rows[0].out_of_place == NcclTiming{100.0, 10.49, 18.35});
  CHECK(log.rows[1].out_of_place == NcclTiming{150.0, 13.98, 24.47});
  CHECK(log.rows[2].out_of_place == NcclTiming{250.0, 16.78, 29.36});
  CHECK(log.rows[0].in_place == NcclTiming{101.0, 10.38, 18.17});
  CHECK(log.rows[2].in_place == NcclTiming{251.0, 16.71, 29.24});
  CHECK(log.dtype == "float");
  CHECK(log.rows[0].redop == "sum");
}

// The facts kLog settles however it is wrapped: 8 ranks listed, 4 on each of 2 hosts.
void check_facts(const NcclTestsLog& log) {
  check_rows(log);
  CHECK(log.collective == Collective::all_reduce);
  CHECK(log.ranks == 8);
  CHECK(log.ranks_per_node == 4);
  CHECK(log.nccl_version == "2.18.3+cuda12.2");
  CHECK(log.devices == std::vector<std::string>(8, "NVIDIA H100 80GB HBM3"));
}

bool any_note(const NcclTestsLog& log, const std::string& part) {
  return std::any_of(log.notes.begin(), log.notes.end(), [&](const std::string& n) { return n.find(part) != n.npos; });
}

}  // namespace

TEST_CASE("calibrate::parse_nccl_tests: reads the current format and notes each fact", "[nccl_tests]") {
  NcclTestsLog log = parse(kLog);
  check_facts(log);
  CHECK(log.path == "t.txt");
  CHECK(log.rows[0].root == -1);
  CHECK(log.rows[0].line == 17);
  CHECK_THAT(log.notes, VectorContains(std::string(
                            "collective all_reduce: from the arithmetic (size = count x 4 B, redop sum, root -1, "
                            "busbw/algbw in [1.7494, 1.7505] over 6 timings); no binary name in the file")));
  CHECK_THAT(log.notes, VectorContains(std::string("ranks 8: from the device list (8 ranks on 2 hosts)")));
  CHECK_THAT(log.notes, VectorContains(std::string("ranks per node 4: from the device list (4 on each of 2 hosts)")));
  CHECK_THAT(log.notes, VectorContains(std::string("nccl version 2.18.3+cuda12.2: from \"NCCL version\" on line 12")));
}

TEST_CASE("calibrate::parse_nccl_tests: launcher prefixes, quoting and indentation", "[nccl_tests]") {
  // mpirun --tag-output: "[1,N]<stdout>:" on every line, N the printing rank.
  NcclTestsLog tagged = parse(
      each_line(kLog, [](const std::string& l, int i) { return "[1," + std::to_string(i % 3) + "]<stdout>:" + l; }));
  check_facts(tagged);
  CHECK(tagged.rows[0].line == 17);
  CHECK(any_note(tagged, "stripped 22 \"[1,N]<stdout>:\" prefixes"));
  // srun -l: " 0: " and "12: ", right-aligned task numbers.
  check_facts(parse(each_line(kLog, [](const std::string& l, int i) { return (i % 2 ? "12: " : " 0: ") + l; })));
  // A markdown quote and a markdown code block.
  check_facts(parse(each_line(kLog, [](const std::string& l, int) { return "> " + l; })));
  check_facts(parse(each_line(kLog, [](const std::string& l, int) { return "    " + l; })));
  // Windows line ends; a web page's byte order mark and no-break spaces between columns.
  check_facts(parse(each_line(kLog, [](const std::string& l, int) { return l + "\r"; })));
  std::string nbsp = kLog;
  for (std::size_t at; (at = nbsp.find("  ")) != nbsp.npos;) nbsp.replace(at, 2, "\xC2\xA0");
  check_facts(parse("\xEF\xBB\xBF" + nbsp));
}

TEST_CASE("calibrate::parse_nccl_tests: a '#' lost to a docs renderer", "[nccl_tests]") {
  NcclTestsLog log =
      parse(each_line(kLog, [](const std::string& l, int) { return l.starts_with('#') ? l.substr(1) : l; }));
  check_facts(log);
  CHECK_THAT(log.notes, VectorContains(std::string("read 1 table header without its '#' (a docs renderer drops it)")));
}

TEST_CASE("calibrate::parse_nccl_tests: NCCL INFO lines, chatter and a stale header", "[nccl_tests]") {
  std::string info =
      "node-a:1000:1000 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
      "node-b:2000:2000 [4] NCCL WARN NET/IB : peer 10.0.0.2 lost\n";
  std::string chatter =
      "$ dstack apply -f nccl-tests.dstack.yml\n1. Run the test:\n2024-05-01 12:00:01 starting\n"
      "Warning: Permanently added 'node-b' (ED25519) to the list of known hosts.\n";
  NcclTestsLog log = parse(chatter + info + kHead + kBanner + info + kHeader + info + kRows + kTail);
  check_facts(log);
  CHECK_THAT(log.notes, VectorContains(std::string("ignored 6 NCCL INFO/WARN lines")));
  CHECK_THAT(log.notes,
             VectorContains(std::string("ignored 4 other lines (commands, launcher output, warnings, prompts)")));
  // A header line left from another run (maxBytes below the largest row) is noted and not used.
  NcclTestsLog stale = parse(with(kLog, "maxBytes 4194304", "maxBytes 2097152"));
  CHECK(stale.ranks == 8);
  CHECK_THAT(stale.notes, VectorContains(std::string("the nThread line (line 1) says maxBytes 2097152 but the rows go "
                                                     "to 4194304: a stale line, not used")));
}

TEST_CASE("calibrate::parse_nccl_tests: the older format without root, with an error column", "[nccl_tests]") {
  // nccl-tests before 2.13: no root column; "error" is the largest deviation, printed %5.0le.
  std::string old =
      R"(#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144   float     sum    100.0   10.49   18.35  5e-07    101.0   10.38   18.17  5e-07
     2097152        524288   float     sum    150.0   13.98   24.47  5e-07    151.0   13.89   24.30  1e-06
     4194304       1048576   float     sum    250.0   16.78   29.36  5e-07    251.0   16.71   29.24  5e-07
)";
  NcclTestsLog log = parse(kHead + old);
  check_facts(log);
  CHECK_FALSE(log.rows[0].root.has_value());
  // Without a header the column count tells the format apart.
  NcclTestsLog bare = parse(old.substr(old.find("     1048576")));
  check_rows(bare);
  CHECK_FALSE(bare.rows[0].root.has_value());
}

TEST_CASE("calibrate::parse_nccl_tests: rows with no header, no device list", "[nccl_tests]") {
  NcclTestsLog log = parse(kRows);
  check_rows(log);
  CHECK(log.collective == Collective::all_reduce);
  // Each timing's digits bound busbw/algbw, e.g. (24.47 +- 0.005)/(13.98 -+ 0.005); the tightest are
  // 24.465/13.985 = 1.7494 and 29.245/16.705 = 1.7505, so 2(n-1)/n puts n in [7.98, 8.01]: only 8.
  CHECK(log.ranks == 8);
  CHECK_FALSE(log.ranks_per_node.has_value());
  CHECK(log.devices.empty());
  CHECK_FALSE(log.nccl_version.has_value());
  CHECK_THAT(log.notes, VectorContains(std::string(
                            "ranks 8: from busbw/algbw = 2(n-1)/n, which only n = 8 fits (the printed digits put "
                            "busbw/algbw in [1.7494, 1.7505] over 6 timings)")));
  CHECK_THAT(log.notes,
             VectorContains(std::string("ranks per node: not in the file; pass --gpus-per-node N if it matters")));
}

TEST_CASE("calibrate::parse_nccl_tests: N/A, integer times, out-of-place only", "[nccl_tests]") {
  // nccl-tests prints times >= 10000 us as %7.0f. 268435456 B / 11163 us = 24.047 -> "24.05",
  // x 1.75 = 42.08; 11200 us: 23.967 -> "23.97", 41.94.
  std::string big =
      R"(   268435456      67108864     float     sum      -1    11163   24.05   42.08    N/A    11200   23.97   41.94    N/A
)";
  NcclTestsLog log = parse(kHead + kBanner + kHeader + kRows + big);
  REQUIRE(log.rows.size() == 4);
  CHECK(log.rows[3].out_of_place == NcclTiming{11163, 24.05, 42.08});
  CHECK(log.rows[3].in_place == NcclTiming{11200, 23.97, 41.94});
  CHECK(log.ranks == 8);
  std::string oop = R"(#       size         count      type   redop    root     time   algbw   busbw #wrong
     1048576        262144     float     sum      -1    100.0   10.49   18.35      0
     4194304       1048576     float     sum      -1    250.0   16.78   29.36    N/A
)";
  NcclTestsLog half = parse(oop);
  REQUIRE(half.rows.size() == 2);
  CHECK_FALSE(half.rows[0].in_place.has_value());
  CHECK(half.rows[1].out_of_place == NcclTiming{250.0, 16.78, 29.36});
}

TEST_CASE("calibrate::parse_nccl_tests: a table pasted twice, a truncated device list", "[nccl_tests]") {
  NcclTestsLog twice = parse(kLog + kTable);
  check_facts(twice);
  CHECK_THAT(twice.notes, VectorContains(std::string("dropped 3 repeated rows (identical to earlier ones)")));
  // Ranks 1-7 elided: the list no longer settles anything, the busbw/algbw ratio still gives 8.
  std::string cut = kHead.substr(0, kHead.find("#  Rank  1")) + "...\n" + kHead.substr(kHead.find("NCCL version"));
  NcclTestsLog log = parse(cut + kTable);
  check_rows(log);
  CHECK(log.ranks == 8);
  CHECK_FALSE(log.ranks_per_node.has_value());
  CHECK(log.devices == std::vector<std::string>{"NVIDIA H100 80GB HBM3"});
  CHECK_THAT(log.notes, VectorContains(std::string("device list: 1 rank on 1 host, cut short (\"...\" on line 5)")));
}

TEST_CASE("calibrate::parse_nccl_tests: the collective from the binary name", "[nccl_tests]") {
  // all_gather over 4 ranks: count = size / (4 ranks x 4 B), busbw = algbw x 3/4 (nccl-tests
  // all_gather.cu): 10.49 x 0.75 = 7.86, 13.98 -> 10.49, 16.78 -> 12.58.
  std::string rows =
      R"(     1048576         65536     float    none      -1    100.0   10.49    7.86      0    101.0   10.38    7.79      0
     2097152        131072     float    none      -1    150.0   13.98   10.49      0    151.0   13.89   10.42      0
     4194304        262144     float    none      -1    250.0   16.78   12.58      0    251.0   16.71   12.53      0
)";
  NcclTestsLog log = parse("Collective test starting: all_gather_perf\n" + kHeader + rows);
  CHECK(log.collective == Collective::all_gather);
  CHECK(log.ranks == 4);
  CHECK_THAT(log.notes,
             VectorContains(std::string("collective all_gather: from the binary name all_gather_perf on line 1")));
  CHECK_THAT(log.notes,
             VectorContains(std::string("ranks 4: from size/(count x 4 B) = 4 (all_gather prints per-rank counts)")));
  // A wrapper script's -t, a path, and nothing but the arithmetic (all_gather and alltoall print alike).
  CHECK(parse("run_nccl_tests.sh -t all_gather -b 1M -e 4M host0 host1\n" + rows).collective == Collective::all_gather);
  CHECK(parse("mpirun -np 4 /opt/nccl-tests/build/alltoall_perf -b 1M\n" + rows).collective == Collective::all_to_all);
  REQUIRE_THROWS_WITH(
      parse(kHeader + rows),
      Equals("t.txt: cannot tell the collective (no binary name in the file; the rows (size = 4 x count x 4 B, "
             "redop none, root -1, busbw/algbw in [0.7497, 0.7501] over 6 timings) fit all_gather and "
             "all_to_all); pass --collective NAME"));
  // reduce_scatter prints its op: the same sizes with redop sum fit nothing else.
  std::string rs = rows;
  for (std::size_t at; (at = rs.find(" none")) != rs.npos;) rs.replace(at, 5, "  sum");
  NcclTestsLog scatter = parse(rs);
  CHECK(scatter.collective == Collective::reduce_scatter);
  CHECK(scatter.ranks == 4);
}

TEST_CASE("calibrate::parse_nccl_tests: ranks from the command line", "[nccl_tests]") {
  // broadcast (busbw = algbw, root >= 0, redop none): the rows say nothing about n.
  std::string rows =
      R"(     1048576        262144     float    none       0    100.0   10.49   10.49      0    101.0   10.38   10.38      0
     4194304       1048576     float    none       0    250.0   16.78   16.78      0    251.0   16.71   16.71      0
)";
  NcclTestsLog mpi = parse("$ mpirun -np 16 -npernode 8 \\\n    ./build/broadcast_perf -b 1M -e 4M -g 1\n" + rows);
  CHECK(mpi.collective == Collective::broadcast);
  CHECK(mpi.rows[0].root == 0);
  CHECK(mpi.ranks == 16);
  CHECK(mpi.ranks_per_node == 8);
  CHECK_THAT(
      mpi.notes,
      VectorContains(std::string("ranks 16: from the command line on line 1 (mpirun -np 16, 1 GPU per process)")));
  // Open MPI's own messages name mpirun too; the line with a process count wins.
  std::string noticed = "mpirun noticed that process rank 3 with PID 0 on node b exited on signal 9.\n";
  CHECK(parse(noticed + "mpirun -np 16 broadcast_perf -b 1M\n" + rows).ranks == 16);
  NcclTestsLog srun = parse("srun -N 2 --ntasks=16 broadcast_perf -b 1M -e 4M\n" + rows);
  CHECK(srun.ranks == 16);
  CHECK(srun.ranks_per_node == 8);
  // One process driving 8 GPUs, no launcher: 8 ranks on one node.
  NcclTestsLog direct = parse("./build/broadcast_perf -b 1M -e 4M -g 8\n" + rows);
  CHECK(direct.ranks == 8);
  CHECK(direct.ranks_per_node == 8);
  REQUIRE_THROWS_WITH(parse("Collective test starting: broadcast_perf\n" + rows),
                      Equals("t.txt: rank count not in the file (device list absent; busbw = algbw for broadcast says "
                             "nothing about n; no command line with a process count); pass --ranks N"));
  CHECK(parse(rows, {.ranks = 4}).ranks == 4);
  REQUIRE_THROWS_WITH(parse(rows, {.ranks = 0}), Equals("--ranks: expected an integer >= 1, got 0"));
  REQUIRE_THROWS_WITH(parse(rows, {.ranks = 4, .gpus_per_node = -8}),
                      Equals("--gpus-per-node: expected an integer >= 1, got -8"));
}

TEST_CASE("calibrate::parse_nccl_tests: hints override the file and disagreements are noted", "[nccl_tests]") {
  NcclTestsLog log = parse(kLog, {.collective = Collective::all_reduce, .ranks = 16, .gpus_per_node = 8});
  check_rows(log);
  CHECK(log.ranks == 16);
  CHECK(log.ranks_per_node == 8);
  CHECK_THAT(log.notes, VectorContains(std::string("collective all_reduce: from --collective")));
  CHECK_THAT(log.notes,
             VectorContains(std::string(
                 "ranks 16: from --ranks; the device list shows 8; the file disagrees: busbw/algbw = 2(n-1)/n, "
                 "which only n = 8 fits (the printed digits put busbw/algbw in [1.7494, 1.7505] over 6 timings)")));
  CHECK_THAT(log.notes,
             VectorContains(std::string("ranks per node 8: from --gpus-per-node; the device list shows 4 per host")));
  NcclTestsLog named = parse("./build/sendrecv_perf -g 8\n" + kRows, {.collective = Collective::all_reduce});
  CHECK(named.collective == Collective::all_reduce);
  CHECK_THAT(
      named.notes,
      VectorContains(std::string("collective all_reduce: from --collective; the file names sendrecv_perf on line 1")));
}

TEST_CASE("calibrate::parse_nccl_tests: errors name the line and quote the token", "[nccl_tests]") {
  auto row1 = [](const std::string& from, const std::string& to) { return parse(with(kTable, from, to)); };
  const std::string first =
      "     1048576        262144     float     sum      -1    100.0   10.49   18.35      0    101.0";
  REQUIRE_THROWS_WITH(
      row1(first + "   10.38   18.17      0", first + "   10.38   18.17"),
      Equals("t.txt:4: expected 13 columns (size count type redop root time algbw busbw #wrong time algbw "
             "busbw #wrong) as in the header on line 2, got 12"));
  REQUIRE_THROWS_WITH(row1("100.0   10.49", "fast   10.49"),
                      Equals("t.txt:4: expected an out-of-place time in us (a number > 0), got \"fast\""));
  REQUIRE_THROWS_WITH(row1("     1048576        262144", "    -1048576        262144"),
                      Equals("t.txt:4: expected a size in bytes (an integer >= 0), got \"-1048576\""));
  REQUIRE_THROWS_WITH(row1("101.0   10.38", "  0.0   10.38"),
                      Equals("t.txt:4: expected an in-place time in us (a number > 0), got \"0.0\""));
  REQUIRE_THROWS_WITH(row1("100.0   10.49", "100.0   10.4" + std::string(1, '\x01') + "9"),
                      Equals(R"(t.txt:4: expected an out-of-place algbw in GB/s (a number >= 0), got "10.4\x019")"));
  REQUIRE_THROWS_WITH(row1("262144     float", "262144     flo" + std::string(1, '\xff') + "at"),
                      Contains(R"(t.txt:4: expected a data type (int8, uint8, )") && Contains(R"(got "flo\xffat")"));
  REQUIRE_THROWS_WITH(row1("18.35      0", "18.35   oops"),
                      Equals("t.txt:4: expected an out-of-place #wrong (a number or N/A), got \"oops\""));
  REQUIRE_THROWS_WITH(row1("262144     float", "262143     float"),
                      Equals("t.txt:4: expected a size that is a whole multiple of count x 4 B (float), got 1048576 B "
                             "for count 262143"));
  // Without a header the first row sets the columns.
  std::string fourteen =
      R"(     8388608       2097152     float     sum      -1    400.0   20.97   36.70      0    401.0   20.92   36.61      0  0
)";
  REQUIRE_THROWS_WITH(
      parse(kRows + fourteen),
      Equals("t.txt:4: expected 13 columns (size count type redop root time algbw busbw #wrong time algbw "
             "busbw #wrong) as on line 1, got 14"));
  REQUIRE_THROWS_WITH(
      parse("1048576 262144 float sum -1 100.0\n"),
      Equals("t.txt:1: expected an nccl-tests row (size count type redop root time algbw busbw #wrong "
             "time algbw busbw #wrong: 13 columns, or 12 in the older format without root), got 6 columns"));
  REQUIRE_THROWS_WITH(parse("# nThread 1 nGpus 1\n# Using devices\n"),
                      Equals("t.txt: expected an nccl-tests table (rows of size count type redop ...), found none"));
}

TEST_CASE("calibrate::parse_nccl_tests: a second sweep must be split off", "[nccl_tests]") {
  std::string again =
      R"(     1048576        262144     float     sum      -1    120.0    8.74   15.29      0    121.0    8.67   15.17      0
)";
  std::string half =
      R"(     8388608       4194304      half     sum      -1    400.0   20.97   36.70      0    401.0   20.92   36.61      0
)";
  REQUIRE_THROWS_WITH(
      parse(kLog + again),
      Equals("t.txt:23: expected each size once, got 1048576 again (first on line 17) with other numbers: a second "
             "sweep starts here: split the file"));
  REQUIRE_THROWS_WITH(parse(kLog + half),
                      Equals("t.txt:23: expected data type float as on line 17, got \"half\": a second sweep starts "
                             "here: split the file"));
}

TEST_CASE("calibrate::parse_nccl_tests: the collective it cannot decide or does not model", "[nccl_tests]") {
  // 2 ranks: all_reduce's 2(n-1)/n is 1, like sendrecv's; both print redop sum and root -1.
  std::string two =
      R"(     1048576        262144     float     sum      -1    100.0   10.49   10.49      0    101.0   10.38   10.38      0
)";
  REQUIRE_THROWS_WITH(parse(two),
                      Contains("t.txt: cannot tell the collective (no binary name in the file; the rows (") &&
                          Contains(") fit all_reduce and send_recv); pass --collective NAME"));
  CHECK(parse(two, {.collective = Collective::send_recv, .ranks = 2}).collective == Collective::send_recv);
  REQUIRE_THROWS_WITH(parse("./build/reduce_perf -b 1M -e 4M -g 8\n" + two),
                      Equals("t.txt:1: expected an nccl-tests binary dtsim models (all_reduce_perf, all_gather_perf, "
                             "reduce_scatter_perf, alltoall_perf, broadcast_perf, sendrecv_perf), got reduce_perf"));
  REQUIRE_THROWS_WITH(parse("all_reduce_perf\nall_gather_perf\n" + kRows),
                      Equals("t.txt: cannot tell the collective (the text names all_reduce_perf on line 1 and "
                             "all_gather_perf on line 2); pass --collective NAME"));
  REQUIRE_THROWS_WITH(parse("Collective test starting: all_gather_perf\n" + kRows),
                      Equals("t.txt: cannot tell the collective (the text names all_gather_perf on line 1 but the rows "
                             "do not fit it: size = count x type size, but all_gather prints per-rank counts); pass "
                             "--collective NAME"));
}

TEST_CASE("calibrate::parse_nccl_tests: hostile input is an error, never a crash", "[nccl_tests]") {
  const std::string none = "t.txt: expected an nccl-tests table (rows of size count type redop ...), found none";
  REQUIRE_THROWS_WITH(parse(""), Equals(none));
  REQUIRE_THROWS_WITH(parse(std::string(10000, 'x')), Equals(none));
  std::string bytes;
  for (int i = 0; i < 8192; ++i) bytes += static_cast<char>((i * 37 + 11) % 256);
  REQUIRE_THROWS_AS(parse(bytes), SpecError);
  check_facts(parse(kLog + bytes));  // after a table, garbage that looks like no row is chatter
  REQUIRE_THROWS_WITH(parse(with(kRows, "100.0   10.49", std::string("100.0\0", 6) + "  10.49")),  // a NUL ends nothing
                      Equals(R"(t.txt:1: expected an out-of-place time in us (a number > 0), got "100.0\x00")"));
  REQUIRE_THROWS_WITH(
      parse("1e400\n"),
      Equals("t.txt:1: expected an nccl-tests row (size count type redop root time algbw busbw #wrong "
             "time algbw busbw #wrong: 13 columns, or 12 in the older format without root), got 1 column"));
  REQUIRE_THROWS_WITH(parse(with(kRows, "100.0   10.49", "1e400   10.49")),
                      Equals("t.txt:1: expected an out-of-place time in us (a number > 0), got \"1e400\""));
  REQUIRE_THROWS_WITH(parse(with(kRows, "     1048576        262144", std::string(10000, '9') + " 262144")),
                      Equals("t.txt:1: expected a size in bytes (an integer >= 0), got "
                             "\"9999999999999999999999999999999999999999\"... (10000 bytes)"));
}

TEST_CASE("calibrate::load_nccl_tests: a file that cannot be read", "[nccl_tests]") {
  REQUIRE_THROWS_WITH(load_nccl_tests("/nonexistent/nccl.txt"),
                      Equals("--nccl-tests: cannot read /nonexistent/nccl.txt (No such file or directory)"));
  REQUIRE_THROWS_WITH(load_nccl_tests("/"), Equals("--nccl-tests: cannot read / (a directory)"));
}

namespace {

// What each shared log settles, read from the file and its index.json notes. Hints are only those a
// user needs; per_node nullopt means the caller needs --gpus-per-node if it places ranks.
struct SharedLog {
  const char* file;
  NcclTestsHints hints;
  Collective collective;
  std::int64_t ranks;
  std::optional<std::int64_t> per_node;
  const char* without_hints;  // the error without the hints; "" when none are needed
};

const SharedLog kShared[] = {
    // "./build/sendrecv_perf ... -g 8" on line 1, no launcher: one process, 8 GPUs on one node.
    {"a100-1x8-sendrecv-nvlink-liplus.txt", {}, Collective::send_recv, 8, 8, ""},
    // mpirun --tag-output, old format, no binary name: redop sum, size = count x 4, 2(n-1)/n -> all_reduce;
    // complete device list of 16 ranks, 8 on each of 2 hosts.
    {"a100-40gb-2x8-allreduce-aws-p4d-efa.txt", {}, Collective::all_reduce, 16, 8, ""},
    // Device list cut short by "..."; busbw/algbw 1.984 allows 126 to 128 ranks: needs --ranks (the
    // manifest in index.json says 16 workers x 8 GPUs).
    {"a100-80gb-16x8-allreduce-coreweave-ib-2022.txt",
     {.ranks = 128},
     Collective::all_reduce,
     128,
     std::nullopt,
     "pass --ranks N"},
    // Complete device list: 8 ranks on "{hostname}"; collective from the arithmetic.
    {"a100-80gb-1x8-allreduce-meta-gcm-fixture.txt", {}, Collective::all_reduce, 8, 8, ""},
    // Complete device list: 16 ranks on "{host1}" and "{host2}".
    {"a100-80gb-2x8-allreduce-meta-gcm-fixture.txt", {}, Collective::all_reduce, 16, 8, ""},
    // run_nccl_tests.sh -t all_gather; complete device list of 16 ranks on 2 hosts.
    {"b200-2x8-allgather-gcp-a4-roce-dranet.txt", {}, Collective::all_gather, 16, 8, ""},
    // No binary name, no devices, '#' lost: arithmetic gives all_reduce, busbw/algbw = 1.875 only n = 16.
    {"b200-2x8-allreduce-gcp-a4-roce-dstack.txt", {}, Collective::all_reduce, 16, std::nullopt, ""},
    // "Collective test starting: all_reduce_perf"; n = 16 from busbw/algbw; no devices.
    {"b200-2x8-allreduce-lambda-ib-dstack.txt", {}, Collective::all_reduce, 16, std::nullopt, ""},
    // No binary name: size = 16 x count x 4 with redop none fits all_gather and alltoall alike, so
    // --collective is needed (index.json: the docs run all_gather); then n = 16 from size/count.
    {"h100-2x8-allgather-gcp-a3high-tcpx-dstack.txt",
     {.collective = Collective::all_gather},
     Collective::all_gather,
     16,
     std::nullopt,
     "pass --collective NAME"},
    // Same as the TCPX file, with #wrong printed N/A.
    {"h100-2x8-allgather-gcp-a3mega-tcpxo-dstack.txt",
     {.collective = Collective::all_gather},
     Collective::all_gather,
     16,
     std::nullopt,
     "pass --collective NAME"},
    // "> " quoted mpirun ... all_reduce_perf; complete device list, 8 per host (as -npernode 8 says).
    {"h100-2x8-allreduce-gcp-a3mega-tcpxo.txt", {}, Collective::all_reduce, 16, 8, ""},
    // "Collective test concluded: all_reduce_perf" at the end; n = 16 from busbw/algbw; no devices.
    {"h100-2x8-allreduce-nebius-ib-dstack.txt", {}, Collective::all_reduce, 16, std::nullopt, ""},
    // No binary name, device list elided, stale nThread line: busbw/algbw = 1.9792 fits only n = 96
    // (the README says 64; see the hint test below).
    {"h100-allreduce-ib-sharp-collnetchain-coreweave-2023.txt", {}, Collective::all_reduce, 96, std::nullopt, ""},
    // run_nccl_tests.sh -t all_gather; 2 ranks, one on each host.
    {"h200-2x1-allgather-gcp-a3ultra-1nic-dranet.txt", {}, Collective::all_gather, 2, 1, ""},
    // mpirun ... all_reduce_perf on line 2 after Open MPI warnings; 2 ranks on 2 hosts.
    {"h200-2x1-allreduce-gcp-a3ultra-1nic-dranet.txt", {}, Collective::all_reduce, 2, 1, ""},
    // No binary name: arithmetic; complete device list of 16 on 2 hosts.
    {"h200-2x8-allreduce-nebius-ib-runai.txt", {}, Collective::all_reduce, 16, 8, ""},
    // "Running .../all_reduce_perf test on 2 nodes"; complete device list of 16 on 2 hosts.
    {"h200-2x8-allreduce-oci-roce-argonne.txt", {}, Collective::all_reduce, 16, 8, ""},
};

std::string index_name(Collective c) {
  if (c == Collective::send_recv) return "sendrecv";
  if (c == Collective::all_to_all) return "alltoall";
  return dtsim::spec::to_string(c);
}

}  // namespace

TEST_CASE("calibrate::load_nccl_tests: every shared log gives index.json's rows", "[nccl_tests]") {
  std::filesystem::path dir = std::filesystem::path(DTSIM_SHARED_DIR) / "validation/nccl_logs";
  if (!std::filesystem::exists(dir / "index.json")) {
    WARN("skipped: " << (dir / "index.json").string() << " not found");
    return;
  }
  nlohmann::json index = nlohmann::json::parse(dtsim::test::read_text((dir / "index.json").string()));
  REQUIRE(index.size() == std::size(kShared));
  for (const nlohmann::json& entry : index) {
    std::string file = entry.at("file").get<std::string>();
    INFO(file);
    auto c = std::find_if(std::begin(kShared), std::end(kShared), [&](const SharedLog& s) { return file == s.file; });
    REQUIRE(c != std::end(kShared));
    std::string path = (dir / file).string();
    if (*c->without_hints) REQUIRE_THROWS_WITH(load_nccl_tests(path), Contains(c->without_hints));
    NcclTestsLog log = load_nccl_tests(path, c->hints);
    CHECK(log.collective == c->collective);
    CHECK(log.ranks == c->ranks);
    CHECK(log.ranks_per_node == c->per_node);
    // index.json as an independent reference for what the file says.
    CHECK(index_name(log.collective) == entry.at("collective").get<std::string>());
    if (!entry.at("total_ranks").is_null()) CHECK(log.ranks == entry.at("total_ranks").get<std::int64_t>());
    if (log.ranks_per_node) CHECK(*log.ranks_per_node == entry.at("hardware").at("gpus_per_node").get<std::int64_t>());
    CHECK(log.dtype == entry.at("dtype").get<std::string>());
    if (log.nccl_version) CHECK(entry.at("nccl_version").get<std::string>().starts_with(*log.nccl_version));
    const nlohmann::json& rows = entry.at("rows");
    REQUIRE(log.rows.size() == rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const NcclTestsRow& r = log.rows[i];
      const nlohmann::json& e = rows[i];
      CHECK(r.size_bytes == e.at("size_bytes").get<std::int64_t>());
      CHECK(r.count == e.at("count").get<std::int64_t>());
      CHECK(r.redop == e.at("redop").get<std::string>());
      CHECK_THAT(r.out_of_place.time_us, WithinAbs(e.at("oop_time_us").get<double>(), 1e-9));
      CHECK_THAT(r.out_of_place.algbw_GBps, WithinAbs(e.at("oop_algbw_GBps").get<double>(), 1e-9));
      CHECK_THAT(r.out_of_place.busbw_GBps, WithinAbs(e.at("oop_busbw_GBps").get<double>(), 1e-9));
      REQUIRE(r.in_place.has_value());
      CHECK_THAT(r.in_place->time_us, WithinAbs(e.at("ip_time_us").get<double>(), 1e-9));
      CHECK_THAT(r.in_place->algbw_GBps, WithinAbs(e.at("ip_algbw_GBps").get<double>(), 1e-9));
      CHECK_THAT(r.in_place->busbw_GBps, WithinAbs(e.at("ip_busbw_GBps").get<double>(), 1e-9));
    }
  }
}

TEST_CASE("calibrate::load_nccl_tests: the SHARP log's README rank count disagrees with its arithmetic",
          "[nccl_tests]") {
  std::string path =
      std::string(DTSIM_SHARED_DIR) + "/validation/nccl_logs/h100-allreduce-ib-sharp-collnetchain-coreweave-2023.txt";
  if (!std::filesystem::exists(path)) {
    WARN("skipped: " << path << " not found");
    return;
  }
  // README and manifest: -np 64. busbw/algbw = 386.56/195.31 = 1.9792 = 2(n-1)/n gives n = 96;
  // for 64 it would be 1.9688.
  NcclTestsLog log = load_nccl_tests(path, {.ranks = 64, .gpus_per_node = 8});
  CHECK(log.ranks == 64);
  CHECK(log.ranks_per_node == 8);
  CHECK(any_note(log, "ranks 64: from --ranks; the file disagrees: busbw/algbw = 2(n-1)/n, which only n = 96 fits"));
  CHECK(any_note(log, "the nThread line (line 1) says maxBytes 2147483648 but the rows go to 8589934592"));
}
