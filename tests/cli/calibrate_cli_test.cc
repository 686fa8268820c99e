// dtsim calibrate --nccl-tests / --steps and dtsim collective --nccl-tests, end to end on the
// real nccl-tests logs in ../shared/validation/nccl_logs.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_helpers.h"
#include "helpers.h"

using dtsim::test::check_bad;
using dtsim::test::run_dtsim;
using dtsim::test::run_json;
using dtsim::test::TempDir;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using Catch::Matchers::Equals;
using Catch::Matchers::StartsWith;
using Catch::Matchers::WithinRel;
using nlohmann::json;

namespace {

std::string shared_log(const std::string& name) {
  return std::string(DTSIM_SHARED_DIR) + "/validation/nccl_logs/" + name;
}

bool have_logs() { return std::filesystem::exists(shared_log("index.json")); }

// Each shared log with the cluster preset of its hardware and the facts it does not state itself
// (the importer says which: tests/calibrate/nccl_tests_test.cc). `limit`: the median busbw error
// over sizes >= 1 MiB that calibrating on the log must reach (the issue's target, 10%).
struct Log {
  std::string file, cluster, hints;
  double limit = 0.10;
};

const std::vector<Log> kLogs = {
    {"a100-1x8-sendrecv-nvlink-liplus.txt", "dgx-a100", ""},
    {"a100-40gb-2x8-allreduce-aws-p4d-efa.txt", "dgx-a100", ""},
    {"a100-80gb-16x8-allreduce-coreweave-ib-2022.txt", "dgx-a100", "--ranks 128 --gpus-per-node 8"},
    {"a100-80gb-1x8-allreduce-meta-gcm-fixture.txt", "dgx-a100", ""},
    {"a100-80gb-2x8-allreduce-meta-gcm-fixture.txt", "dgx-a100", ""},
    // Its times are not monotone in size (2 MiB takes 1.9x as long as 4 MiB, 32 MiB less than
    // 16 MiB); no latency-bandwidth model follows that, the fit reaches 11.5% (README, "Calibrating").
    {"b200-2x8-allgather-gcp-a4-roce-dranet.txt", "dgx-b200", "", 0.12},
    {"b200-2x8-allreduce-gcp-a4-roce-dstack.txt", "dgx-b200", "--gpus-per-node 8"},
    {"b200-2x8-allreduce-lambda-ib-dstack.txt", "dgx-b200", "--gpus-per-node 8"},
    {"h100-2x8-allgather-gcp-a3high-tcpx-dstack.txt", "dgx-h100", "--collective all_gather --gpus-per-node 8"},
    {"h100-2x8-allgather-gcp-a3mega-tcpxo-dstack.txt", "dgx-h100", "--collective all_gather --gpus-per-node 8"},
    {"h100-2x8-allreduce-gcp-a3mega-tcpxo.txt", "dgx-h100", ""},
    {"h100-2x8-allreduce-nebius-ib-dstack.txt", "dgx-h100", "--gpus-per-node 8"},
    {"h100-allreduce-ib-sharp-collnetchain-coreweave-2023.txt", "dgx-h100", "--gpus-per-node 8"},
    {"h200-2x1-allgather-gcp-a3ultra-1nic-dranet.txt", "dgx-h200", ""},
    {"h200-2x1-allreduce-gcp-a3ultra-1nic-dranet.txt", "dgx-h200", ""},
    {"h200-2x8-allreduce-nebius-ib-runai.txt", "dgx-h200", ""},
    {"h200-2x8-allreduce-oci-roce-argonne.txt", "dgx-h200", ""},
};

}  // namespace

TEST_CASE("cli calibrate --nccl-tests: every shared log imports and its busbw is reproduced", "[cli]") {
  if (!have_logs()) {
    WARN("skipped: " << shared_log("") << " not found");
    return;
  }
  // Each fit starts from the cluster's profile without the all_reduce tables fitted to these logs.
  TempDir tmp;
  auto derived = [&](const std::string& cluster) {
    json c = json::parse(dtsim::test::read_text(dtsim::test::source_path("topologies/" + cluster + ".json")));
    std::string name = c.at("calibration");
    json p = json::parse(dtsim::test::read_text(dtsim::test::source_path("calibration/" + name + ".json")));
    p.at("collectives").erase("by_collective");
    return tmp.write(name + "-derived.json", p.dump());
  };
  for (const Log& l : kLogs) {
    INFO(l.file);
    json j = run_json("calibrate --nccl-tests '" + shared_log(l.file) + "' --cluster " + l.cluster + " " + l.hints +
                      " --profile '" + derived(l.cluster) + "' --output '" + (tmp.dir / "out.json").string() +
                      "' --json");
    const json& scopes = j.at("collectives").at("scopes");
    REQUIRE(scopes.size() == 1);
    const json& s = scopes[0];
    CHECK(s.at("rms_log_after").get<double>() <= s.at("rms_log_before").get<double>());
    CHECK(s.at("median_busbw_error_pct_after").get<double>() <= 100 * l.limit);
  }
}

TEST_CASE("cli calibrate --nccl-tests --profile: a profile that dtsim collective reproduces the log with", "[cli]") {
  if (!have_logs()) {
    WARN("skipped: " << shared_log("") << " not found");
    return;
  }
  TempDir tmp;
  std::string log = "'" + shared_log("h100-2x8-allreduce-nebius-ib-dstack.txt") + "'";
  // A profile of datasheet-derived tables only (the shipped dgx-h100 without the all_reduce
  // tables fitted to this very log and others) is optimistic on this 2-node InfiniBand cluster.
  json base = json::parse(dtsim::test::read_text(dtsim::test::source_path("calibration/dgx-h100.json")));
  base.at("collectives").erase("by_collective");
  base["name"] = "derived";
  std::string derived = tmp.write("derived.json", base.dump());
  json before = run_json("collective --cluster dgx-h100 --calibration '" + derived + "' --nccl-tests " + log +
                         " --ranks-per-node 8 --json");
  CHECK(before.at("median_abs_busbw_error_pct").get<double>() > 15);
  json prof = run_json("calibrate --nccl-tests " + log + " --cluster dgx-h100 --gpus-per-node 8 --profile '" +
                       derived + "' --name nebius --json");
  CHECK(prof.at("name") == "nebius");
  CHECK(prof.at("collectives").at("by_collective").contains("all_reduce"));
  std::string path = tmp.write("nebius.json", prof.dump());
  json after = run_json("collective --cluster dgx-h100 --calibration '" + path + "' --nccl-tests " + log +
                        " --ranks-per-node 8 --json");
  CHECK(after.at("median_abs_busbw_error_pct").get<double>() < 5);
  CHECK(after.at("rows").size() == 31);
  // Every subcommand takes it as --calibration.
  json sim = run_json("simulate --model llama3-8b --cluster dgx-h100 --gpus 16 --gbs 32 --calibration '" + path +
                      "' --json");
  CHECK(sim.at("config").at("calibration") == "nebius");
  // --output writes the same profile and prints the report.
  std::string out = (tmp.dir / "out.json").string();
  json report = run_json("calibrate --nccl-tests " + log + " --cluster dgx-h100 --gpus-per-node 8 --profile '" +
                         derived + "' --name nebius --output '" + out + "' --json");
  CHECK(report.at("collectives").at("scopes").size() == 1);
  CHECK(json::parse(dtsim::test::read_text(out)) == prof);
  // Text: the table goes to stderr, the profile to stdout.
  auto text = run_dtsim("calibrate --nccl-tests " + log + " --cluster dgx-h100 --gpus-per-node 8 --profile '" +
                        derived + "' --name nebius");
  REQUIRE(text.status == 0);
  CHECK(json::parse(text.out) == prof);
  CHECK_THAT(text.err, Contains("all_reduce -> inter_node table: rms ln(time)"));
  // The profile keeps the base's "derivation" unless --derivation names the new one; the command
  // that made it says so, so rerunning it makes the same profile.
  CHECK(prof.at("derivation") == base.at("derivation"));
  json named = run_json("calibrate --nccl-tests " + log + " --cluster dgx-h100 --gpus-per-node 8 --profile '" +
                        derived + "' --name nebius --derivation docs/nebius.md --json");
  CHECK(named.at("derivation") == "docs/nebius.md");
  CHECK_THAT(named.at("calibrated_by").get<std::string>(), EndsWith(" --name nebius --derivation docs/nebius.md"));
}

TEST_CASE("cli calibrate and collective --nccl-tests: bad input exits 2 naming the file or flag", "[cli]") {
  TempDir tmp;
  std::string junk = tmp.write("junk.txt", "hello\nworld\n");
  check_bad("calibrate --nccl-tests '" + junk + "' --cluster dgx-h100",
            StartsWith("dtsim: " + junk + ": expected an nccl-tests table"));
  check_bad("calibrate --nccl-tests /nonexistent/log.txt --cluster dgx-h100",
            StartsWith("dtsim: --nccl-tests: cannot read /nonexistent/log.txt"));
  check_bad("calibrate --cluster dgx-h100",
            Equals("dtsim: --bench, --nccl-tests or --steps: expected at least one measurement to fit, got none\n"));
  check_bad("calibrate --nccl-tests '" + junk + "' --cluster dgx-h100 --collective allreduce",
            StartsWith("dtsim: --collective: expected one of all_reduce, "));
  if (!have_logs()) return;
  std::string log = "'" + shared_log("h100-2x8-allreduce-nebius-ib-dstack.txt") + "'";
  check_bad("calibrate --nccl-tests " + log + " --cluster dgx-h100",
            Contains("expected the GPUs per node from the file's device list or a launcher line, got neither; pass "
                     "--gpus-per-node K"));
  check_bad("calibrate --nccl-tests " + log + " --gpus-per-node 8",
            Equals("dtsim: --cluster: expected the cluster the collectives ran on, got none\n"));
  check_bad("calibrate --nccl-tests " + log + " --cluster dgx-a100 --gpus-per-node 16",
            Contains("expected a group that fits cluster dgx-a100 (8 GPUs per node"));
  check_bad("collective --cluster dgx-h100", Equals("dtsim: --op: expected a collective (or --nccl-tests LOG), got none\n"));
  // The importer's remedy names calibrate's flags; collective takes them too.
  check_bad("collective --cluster dgx-h100 --nccl-tests " + log, EndsWith("; pass --gpus-per-node K\n"));
  json fixed = run_json("collective --cluster dgx-h100 --nccl-tests " + log + " --gpus-per-node 8 --json");
  json same = run_json("collective --cluster dgx-h100 --nccl-tests " + log + " --ranks-per-node 8 --json");
  CHECK(fixed == same);
  std::string cut = "'" + shared_log("a100-80gb-16x8-allreduce-coreweave-ib-2022.txt") + "'";
  check_bad("collective --cluster dgx-a100 --nccl-tests " + cut + " --ranks-per-node 8", EndsWith("; pass --ranks N\n"));
  CHECK(run_json("collective --cluster dgx-a100 --nccl-tests " + cut + " --ranks 128 --ranks-per-node 8 --json") ==
        run_json("collective --cluster dgx-a100 --nccl-tests " + cut + " --gpus 128 --ranks-per-node 8 --json"));
}

TEST_CASE("cli calibrate --steps: fits the software parameters to measured runs", "[cli]") {
  TempDir tmp;
  // Two GPT 1.3B runs measured 10% slower than the shipped profile predicts them.
  auto one = [](const std::string& id, int dp, double measured) {
    return R"({"id": ")" + id + R"(", "model": {"name": "GPT 1.3B", "layers": 24, "hidden": 2048, "heads": 16,
      "kv_heads": 16, "ffn_hidden": 8192, "activation": "gelu", "vocab": 51200, "moe_experts": null, "moe_topk": null,
      "moe_ffn_hidden": null}, "cluster": "dgx-a100", "gpus": )" + std::to_string(dp) + R"(, "gpus_per_node": 8,
      "parallel": {"tp": 1, "pp": 1, "dp": )" + std::to_string(dp) + R"(, "cp": 1, "ep": 1, "vp": 1, "zero_stage": 1,
                   "sequence_parallel": false},
      "training": {"micro_batch": 4, "global_batch": 128, "seq_len": 2048, "recompute": "none", "precision": "bf16"},
      "measured": {"iteration_s": )" + std::to_string(measured) + "}}";
  };
  json v = run_json("validate '" + tmp.write("p.json", R"({"schema": "dtsim-validation-cases/1", "cases": [)" +
                                                           one("a", 8, 1) + "," + one("b", 16, 1) + "]}") +
                    "' --json --no-recipes");
  double a = v.at("cases")[0].at("predicted_s").get<double>() * 1.1, b = v.at("cases")[1].at("predicted_s").get<double>() * 1.1;
  std::string runs = tmp.write("runs.json", R"({"schema": "dtsim-validation-cases/1", "cases": [)" + one("a", 8, a) +
                                                ", " + one("b", 16, b) + "]}");
  json j = run_json("calibrate --steps '" + runs + "' --fit compute_efficiency --json");
  const json& s = j.at("steps");
  REQUIRE(s.at("parameters").size() == 1);
  CHECK(s.at("parameters")[0].at("name") == "compute_efficiency");
  CHECK(s.at("parameters")[0].at("after").get<double>() < 0.95);
  CHECK(s.at("errors").at("in_sample").at("max_abs_pct").get<double>() < 1.5);
  CHECK(s.at("errors").at("loo").is_null());  // 2 runs < 1 parameter + 2
  // The fitted profile, used by validate, predicts the runs.
  std::string prof = (tmp.dir / "fitted.json").string();
  (void)run_json("calibrate --steps '" + runs + "' --fit compute_efficiency --profile dgx-a100 --name fitted --output '" +
                 prof + "' --json");
  json w = run_json("validate '" + runs + "' --calibration '" + prof + "' --json --no-recipes");
  CHECK(w.at("summary").at("max_abs_pct").get<double>() < 1.5);
  check_bad("calibrate --steps '" + runs + "' --fit kernel_overhead",
            StartsWith("dtsim: --fit: expected compute_efficiency, kernel_overhead_us or overlap_slowdown"));
  check_bad("calibrate --steps '" + runs + "'",
            Equals("dtsim: --steps: expected at least 3 runs that simulate to fit 3 parameters, got 2\n"));
  // One profile describes one cluster.
  std::string other = one("c", 8, a);
  other.replace(other.find("dgx-a100"), 8, "dgx-h100");
  std::string mixed = tmp.write("mixed.json", R"({"schema": "dtsim-validation-cases/1", "cases": [)" + one("a", 8, a) +
                                                  ", " + other + "]}");
  check_bad("calibrate --steps '" + mixed + "' --fit compute_efficiency",
            Equals("dtsim: " + mixed + ":/cases/1/cluster: expected runs of one cluster (dgx-a100) to fit one profile, "
                   "got \"dgx-h100\"\n"));
}

TEST_CASE("cli calibrate: each shipped profile is what its calibrated_by command makes", "[cli]") {
  if (!have_logs()) {
    WARN("skipped: " << shared_log("") << " not found");
    return;
  }
  TempDir tmp;
  for (const char* name : {"dgx-a100", "dgx-h100", "dgx-h200", "aws-p5", "aws-p6", "gcp-a3-high", "gcp-a3-mega",
                           "gcp-a3-ultra", "gcp-a4", "aws-p4d"}) {
    INFO(name);
    std::string path = dtsim::test::source_path(std::string("calibration/") + name + ".json");
    json shipped = json::parse(dtsim::test::read_text(path));
    std::string cmd = shipped.at("calibrated_by").get<std::string>();
    REQUIRE(cmd.rfind("dtsim calibrate ", 0) == 0);
    // The command's paths are relative to the source tree, as calibration/*.md runs it.
    std::string out = (tmp.dir / (std::string(name) + ".json")).string();
    auto r = run_dtsim(cmd.substr(6) + " --output '" + out + "' --json", DTSIM_SOURCE_DIR);
    REQUIRE(r.status == 0);
    CHECK(json::parse(dtsim::test::read_text(out)) == shipped);
  }
}

TEST_CASE("cli collective: the H100 and H200 profiles price all_gather and reduce_scatter as measured", "[cli]") {
  // Together AI's single-node H100 sweeps (calibration/nccl/together-*.txt) are in both profiles'
  // fits: the derived shared table alone is 8-12% optimistic at 64-256 MiB, where sequence-parallel
  // all-gathers and reduce-scatters sit; the fitted tables are within 5% at the median.
  for (const char* profile : {"dgx-h100", "dgx-h200"}) {
    for (const char* op : {"allgather", "reducescatter"}) {
      INFO(profile << " " << op);
      std::string log = dtsim::test::source_path(std::string("calibration/nccl/together-h100-1x8-") + op + "-ring.txt");
      json j = run_json(std::string("collective --cluster ") + profile + " --nccl-tests '" + log + "' --json");
      CHECK(j.at("median_abs_busbw_error_pct").get<double>() < 5);
      for (const json& r : j.at("rows"))
        if (r.at("bytes").get<double>() >= 64.0 * (1 << 20)) CHECK(std::fabs(r.at("error_pct").get<double>()) < 8);
    }
  }
}

TEST_CASE("cli collective: the AWS presets price EFA all_to_all and all_reduce as published", "[cli]") {
  // calibration/aws-p5.md, aws-p6.md: nccl-tests on 2-32 p5 nodes (alltoall and all_reduce, 32 MiB -
  // 8 GiB) and on 2-32 p6-b300 nodes (alltoall at 64 MiB and its sweep's peak), fitted with one
  // network step per remote peer for all_to_all. Pinned per log (median |busbw error| over sizes):
  // the fit's worst logs are p5's 32 nodes (14.5%: the measured curve rises more slowly than any
  // latency-plus-bandwidth line) and p6-b300's 2 nodes (11.6%). One step per all_to_all instead of
  // one per remote peer fits the p5 logs half as well (calibration/aws-p5.md): at 32 MiB they take
  // 682 us on 2 nodes and 1,673 on 32, where the bytes per NIC grow 1.94x.
  struct Log { const char* cluster; std::string file; double median_max; };
  std::vector<Log> logs;
  for (int n : {2, 4, 8, 16, 32}) {
    logs.push_back({"aws-p5", "calibration/nccl/aws-p5-" + std::to_string(n) + "x8-alltoall.txt", 16});
    logs.push_back({"aws-p5", "calibration/nccl/aws-p5-" + std::to_string(n) + "x8-allreduce.txt", 8});
    logs.push_back({"aws-p6-b300", "calibration/nccl/aws-p6-b300-" + std::to_string(n) + "x8-alltoall.txt", 13});
  }
  for (const Log& l : logs) {
    INFO(l.cluster << " " << l.file);
    json j = run_json(std::string("collective --cluster ") + l.cluster + " --nccl-tests '" +
                      dtsim::test::source_path(l.file) + "' --json");
    CHECK(j.at("median_abs_busbw_error_pct").get<double>() < l.median_max);
  }
}

TEST_CASE("cli collective: the cloud presets price their machines' shared logs as measured", "[cli]") {
  // calibration/cloud-profiles.md: each preset's profile is fitted to the 2-node logs of its
  // machine; the DGX profiles are 54-463% off on them. A4's all_gather log is not monotone in
  // size, which leaves 11.5%.
  if (!have_logs()) {
    WARN("skipped: " << shared_log("") << " not found");
    return;
  }
  struct Log { const char* cluster; const char* file; const char* hints; double median_max; };
  for (const Log& l : {Log{"gcp-a3-high", "h100-2x8-allgather-gcp-a3high-tcpx-dstack.txt", " --op all_gather --ranks-per-node 8", 7},
                       Log{"gcp-a3-mega", "h100-2x8-allgather-gcp-a3mega-tcpxo-dstack.txt", " --op all_gather --ranks-per-node 8", 3},
                       Log{"gcp-a3-mega", "h100-2x8-allreduce-gcp-a3mega-tcpxo.txt", "", 2},
                       Log{"gcp-a3-ultra", "h200-2x1-allgather-gcp-a3ultra-1nic-dranet.txt", "", 3},
                       Log{"gcp-a3-ultra", "h200-2x1-allreduce-gcp-a3ultra-1nic-dranet.txt", "", 3},
                       Log{"gcp-a4", "b200-2x8-allgather-gcp-a4-roce-dranet.txt", " --ranks-per-node 8", 13},
                       Log{"gcp-a4", "b200-2x8-allreduce-gcp-a4-roce-dstack.txt", " --ranks-per-node 8", 2},
                       Log{"aws-p4d", "a100-40gb-2x8-allreduce-aws-p4d-efa.txt", "", 2}}) {
    INFO(l.cluster << " " << l.file);
    json j = run_json(std::string("collective --cluster ") + l.cluster + " --nccl-tests '" + shared_log(l.file) + "'" +
                      l.hints + " --json");
    CHECK(j.at("median_abs_busbw_error_pct").get<double>() < l.median_max);
  }
}

TEST_CASE("cli collective: all_to_all at the bus bandwidth published runs measured", "[cli]") {
  // docs/research/nccl-alltoall-multinode.md: one H100 node, 4 ranks, 500 MiB: 334.9 GB/s
  // (NVIDIA/nccl #2169); one B200 node, 8 ranks, 16 GiB: 659.71 (stas00/ml-engineering, torch
  // all_to_all); 2 GB200 racks, 128 ranks, 8 GiB: 89.70 (oracle-quickstart/oci-gpu-quickstarts).
  // NCCL's ring figure (370 of 450 GB/s on H100 NVLink) would have priced them 5-12% faster.
  struct Case { const char* cluster; int gpus; const char* bytes; double busbw; };
  for (const Case& c : {Case{"dgx-h100", 4, "500M", 334.9}, Case{"dgx-b200", 8, "16G", 659.71},
                        Case{"gb200-nvl72", 128, "8G", 89.70}}) {
    INFO(c.cluster);
    json j = run_json(std::string("collective --op all_to_all --cluster ") + c.cluster + " --gpus " +
                      std::to_string(c.gpus) + " --min-bytes " + c.bytes + " --max-bytes " + c.bytes + " --json");
    CHECK_THAT(j.at("rows").at(0).at("busbw_GBps").get<double>(), WithinRel(c.busbw, 0.02));
  }
}

TEST_CASE("cli calibrate and collective --nccl-tests: a file of several tables", "[cli]") {
  if (!have_logs()) {
    WARN("skipped: " << shared_log("") << " not found");
    return;
  }
  // Two runs concatenated, as a script looping over nccl-tests binaries writes them.
  TempDir tmp;
  std::string both = tmp.write("both.txt", dtsim::test::read_text(shared_log("h200-2x1-allreduce-gcp-a3ultra-1nic-dranet.txt")) +
                                               dtsim::test::read_text(shared_log("h200-2x1-allgather-gcp-a3ultra-1nic-dranet.txt")));
  json j = run_json("calibrate --nccl-tests '" + both + "' --cluster dgx-h200 --json");
  const json& scopes = j.at("collectives").at("scopes");
  REQUIRE(scopes.size() == 2);  // in Collective order: all_reduce, then all_gather
  CHECK(scopes[0].at("collective") == "all_reduce");
  CHECK(scopes[1].at("collective") == "all_gather");
  check_bad("collective --cluster dgx-h200 --nccl-tests '" + both + "'",
            Equals("dtsim: --op: expected one table of " + both + " to compare (pass --op to pick one), got 2 of 2 "
                   "(all_reduce, all_gather)\n"));
  json ag = run_json("collective --cluster dgx-h200 --nccl-tests '" + both + "' --op all_gather --json");
  CHECK(ag.at("op") == "all_gather");
  CHECK(ag.at("rows").size() == 24);
}

TEST_CASE("cli validate and plan --refine with --engine events: the replay behind both", "[cli]") {
  TempDir tmp;
  // One GPT 1.3B run on 16 A100s (2 nodes): the replay on the non-blocking DGX A100 fabric is
  // within 3% of the analytical prediction and never faster.
  std::string run = R"({"schema": "dtsim-validation-cases/1", "cases": [{"id": "a", "model": {"name": "GPT 1.3B",
      "layers": 24, "hidden": 2048, "heads": 16, "kv_heads": 16, "ffn_hidden": 8192, "activation": "gelu", "vocab": 51200,
      "moe_experts": null, "moe_topk": null, "moe_ffn_hidden": null}, "cluster": "dgx-a100", "gpus": 16, "gpus_per_node": 8,
      "parallel": {"tp": 2, "pp": 2, "dp": 4, "cp": 1, "ep": 1, "vp": 1, "zero_stage": 1, "sequence_parallel": false},
      "training": {"micro_batch": 4, "global_batch": 128, "seq_len": 2048, "recompute": "none", "precision": "bf16"},
      "measured": {"iteration_s": 1.0}}]})";
  std::string path = tmp.write("runs.json", run);
  double analytical = run_json("validate '" + path + "' --json --no-recipes").at("cases")[0].at("predicted_s").get<double>();
  double replayed = run_json("validate '" + path + "' --json --no-recipes --network simgrid --engine events")
                        .at("cases")[0]
                        .at("predicted_s")
                        .get<double>();
  CHECK(replayed >= analytical * (1 - 1e-9));
  CHECK(replayed <= analytical * 1.03);
  check_bad("validate '" + path + "' --engine fast", Contains("--engine: expected longest-path or events, got \"fast\""));
  // plan --refine simgrid --engine events re-ranks by the replay and says so.
  std::string plan = "plan --model llama3-8b --gpus 32 --gbs 64 --seq 4096 --top 3 --overlap-grad-reduce off --json "
                     "--cluster " + dtsim::test::source_path("tests/fixtures/clusters/dgx-h100-tapered.json");
  json j = run_json(plan + " --refine simgrid --engine events");
  CHECK(j.at("engine") == "events");
  REQUIRE(j.at("refined").size() == 3);
  for (const json& r : j.at("refined"))
    CHECK(r.at("step_time_s_simgrid").get<double>() >= r.at("step_time_s_analytical").get<double>());
  check_bad(plan + " --engine events", Contains("--engine: expected --refine simgrid with it"));
}
