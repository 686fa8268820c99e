// Input a new user (or a fuzzer) tries: paths the filesystem refuses, bytes that are not UTF-8,
// flags one subcommand checked and another ignored. Each ends in exit 2 and one printable line.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "cli_helpers.h"
#include "core/text.h"
#include "helpers.h"

using namespace dtsim::test;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;
using Catch::Matchers::StartsWith;

namespace {

const std::string kJob = " --cluster dgx-h100 --gpus 8 --gbs 64";

// A copy of the dgx-h100 preset with its "gpu" replaced by `gpu` (a JSON string literal).
std::string cluster_with_gpu(TempDir& tmp, const std::string& gpu) {
  nlohmann::json c = nlohmann::json::parse(read_text(source_path("topologies/dgx-h100.json")));
  c["gpu"] = gpu;
  c["calibration"] = source_path("calibration/dgx-h100.json");
  return tmp.write("cluster.json", c.dump());
}

}  // namespace

TEST_CASE("printable: ill-formed UTF-8 and control characters become escapes", "[cli]") {
  CHECK(dtsim::printable("plain ascii") == "plain ascii");
  CHECK(dtsim::printable("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80") == "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80");
  CHECK(dtsim::printable("a\xFF" "b") == "a\\xFFb");
  CHECK(dtsim::printable("\xC0\xAF") == "\\xC0\\xAF");          // overlong '/'
  CHECK(dtsim::printable("\xED\xA0\x80") == "\\xED\\xA0\\x80");  // a UTF-16 surrogate
  CHECK(dtsim::printable("\xF4\x90\x80\x80") == "\\xF4\\x90\\x80\\x80");  // above U+10FFFF
  CHECK(dtsim::printable("\xE2\x82") == "\\xE2\\x82");          // truncated sequence
  CHECK(dtsim::printable(std::string("line\nnext\t\x01\x7F", 12)) == "line\\nnext\\t\\x01\\x7F");
}

TEST_CASE("path_problem: what the filesystem would refuse is named before it is asked", "[cli]") {
  CHECK(dtsim::path_problem("topologies/dgx-h100.json").empty());
  CHECK(dtsim::path_problem("") == "expected a file path, got \"\"");
  CHECK_THAT(dtsim::path_problem(std::string(300, 'a')), StartsWith("expected a file path whose names are at most 255"));
  CHECK_THAT(dtsim::path_problem(std::string(2100, 'a') + "/" + std::string(2100, 'b')),
             StartsWith("expected a file path of at most 4096 bytes, got 4201"));
  CHECK_THAT(dtsim::path_problem(std::string("a\0b", 3)), Contains("NUL"));
}

TEST_CASE("cli: a cluster whose gpu is a 400-digit string names the field", "[cli]") {
  TempDir tmp;
  std::string cluster = cluster_with_gpu(tmp, std::string(400, '1'));
  check_bad("simulate --model llama3-8b --cluster '" + cluster + "' --gpus 8 --gbs 64",
            StartsWith("dtsim: " + cluster + ":/gpu: expected a file path whose names are at most 255 bytes, got one of 400"));
  // A name of 300 bytes on the command line, and an output path in a missing directory.
  check_bad("simulate --model llama3-8b --cluster " + std::string(300, 'c') + " --gpus 8 --gbs 64",
            StartsWith("dtsim: --cluster: expected a file path whose names are at most 255 bytes, got one of 300"));
  check_bad("simulate --model llama3-8b" + kJob + " --trace /nonexistent/dir/trace.json",
            StartsWith("dtsim: --trace: expected a writable file path, got \"/nonexistent/dir/trace.json\""));
  std::string none = tmp.write("none.json", R"({"schema": "dtsim-validation-cases/1", "cases": []})");
  check_bad("validate '" + none + "' --residuals /nonexistent/dir/r.json",
            StartsWith("dtsim: --residuals: expected a writable file path"));
  // A stack name is a file name: no way out of calibration/stacks/.
  check_bad("simulate --model llama3-8b" + kJob + " --framework ../../topologies/dgx-h100",
            StartsWith("dtsim: --framework: "));
}

TEST_CASE("cli: bytes that are not UTF-8 reach stderr escaped", "[cli]") {
  // printf's octal escapes: 0377 is the byte 0xFF, 001 a control character.
  auto r = run_dtsim("simulate --model \"$(printf 'llama\\377\\001x')\"" + kJob);
  CHECK(r.status == 2);
  CHECK_THAT(r.err, Contains("got \"llama\\xFF\\x01x\"\n"));
  CHECK(dtsim::printable(r.err.substr(0, r.err.size() - 1)) == r.err.substr(0, r.err.size() - 1));
  // In a file's key: JSON itself refuses the bytes; the line says where.
  TempDir tmp;
  std::string bad = tmp.write("bad.json", "{\"name\": \"x\xFF\"}");
  auto m = run_dtsim("show model '" + bad + "'");
  CHECK(m.status == 2);
  CHECK(dtsim::printable(m.err.substr(0, m.err.size() - 1)) == m.err.substr(0, m.err.size() - 1));
}

TEST_CASE("cli: plan, simulate and memory read training flags with one parser", "[cli]") {
  const std::string plan = "plan --model llama3-8b --cluster dgx-h100 --gpus 8 --gbs 64 --seq 4096 --json";
  for (const char* cmd : {"plan", "simulate", "memory"}) {
    std::string base = std::string(cmd) + " --model llama3-8b --cluster dgx-h100 --gpus 8 --gbs 64";
    check_bad(base + " --grad-dtype fp64", Equals("dtsim: --grad-dtype: expected one of fp32, fp16, bf16, got \"fp64\"\n"));
    check_bad(base + " --optimizer lion", Equals("dtsim: --optimizer: expected adam, sgd or muon, got \"lion\"\n"));
    check_bad(base + " --fp8-param-gather maybe --precision fp8", StartsWith("dtsim: --fp8-param-gather: "));
  }
  // The planner uses what the flags say: SGD keeps one optimizer state instead of Adam's two,
  // so the best layout's memory drops.
  nlohmann::json adam = run_json(plan), sgd = run_json(plan + " --optimizer sgd");
  CHECK(sgd.at("configs").at(0).at("peak_bytes_per_gpu").get<double>() <
        adam.at("configs").at(0).at("peak_bytes_per_gpu").get<double>());
}

TEST_CASE("cli: a step too large for memory is refused before it is built", "[cli]") {
  // 2^30 sequences over DP 4: 268 million micro-batches, 537 million passes (was std::bad_alloc,
  // an internal error). 2^21 passes is the most a step may hold.
  check_bad("simulate --model llama3-8b --cluster dgx-h100 --gpus 8 --pp 2 --gbs 1073741824",
            Equals("dtsim: --gbs: expected at most 2097152 forward passes per step (micro-batches x pp x vp), got "
                   "268435456 x 2 x 1; a step of more micro-batches takes as many times the time of a smaller one "
                   "once the pipeline is full\n"));
  CHECK(run_dtsim("simulate --model llama3-8b --cluster dgx-h100 --gpus 8 --pp 2 --gbs 4194304").status == 0);
}

TEST_CASE("cli: a number no double holds is bad input, not a crash", "[cli]") {
  // Found by the fuzzers: nlohmann reports "1e999" as out_of_range, which no parser caught.
  TempDir tmp;
  std::string f = tmp.write("huge.json", R"({"name": 1e999})");
  check_bad("show gpu '" + f + "'",
            Equals("dtsim: " + f + ": expected JSON numbers within a double's range, got number overflow parsing '1e999'\n"));
}

TEST_CASE("cli: a whole number beyond int64 where an integer is expected", "[cli]") {
  // Found by the fuzzers (UBSan): 4.4e130 was cast to int64 before its range was checked.
  TempDir tmp;
  nlohmann::json g = nlohmann::json::parse(read_text(source_path("topologies/gpus/h100-sxm5-80gb.json")));
  g["sm_count"] = 4.4e130;
  std::string f = tmp.write("gpu.json", g.dump());
  check_bad("show gpu '" + f + "'", StartsWith("dtsim: " + f + ":/sm_count: expected an integer in [1, "));
}

TEST_CASE("cli: experts of an absurd width are simulated in bounded memory, not a crash", "[cli]") {
  // 512 experts of width 2^31 - 1: petabytes of gradients per chunk, which once made Megatron's
  // 40M-parameter DDP buckets number in the billions (each a task of the step graph).
  TempDir tmp;
  nlohmann::json m = nlohmann::json::parse(read_text(source_path("models/nemotron3-super-120b-a12b.json")));
  m["moe_ffn_hidden"] = 2147483647;
  std::string model = tmp.write("wide.json", m.dump());
  Run r = run_dtsim("simulate --model " + model + " --cluster gb300-nvl72 --gpus 64 --ep 32 --pp 2 --gbs 64 --seq 4096 --json");
  REQUIRE(r.status == 0);
  CHECK(nlohmann::json::parse(r.out).at("step_time_s").get<double>() > 0);
}
