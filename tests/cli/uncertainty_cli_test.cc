#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/cli_helpers.h"
#include "helpers.h"

using dtsim::test::check_bad;
using dtsim::test::run_dtsim;
using dtsim::test::run_json;
using dtsim::test::TempDir;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;
using Catch::Matchers::WithinAbs;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// Runs of a dtsim-residuals/1 file. With e = predicted/measured - 1, m = measured/predicted - 1 =
// 1/(1+e) - 1: e +25% -> m -20%; e -20% -> m +25%; e +60% -> m -37.5%; e -37.5% -> m +60%;
// e +400% -> m -80%.
const std::string kRuns = R"({"schema": "dtsim-residuals/1", "source": "test", "count": 8, "cases": [
  {"id": "a", "tier": "t", "gpu": "h100-sxm5-80gb", "cluster": "dgx-h100", "framework": "nemo", "gpus": 64, "precision": "bf16", "error_pct": 25},
  {"id": "b", "tier": "t", "gpu": "h100-sxm5-80gb", "cluster": "dgx-h100", "framework": "nemo", "gpus": 128, "precision": "bf16", "error_pct": -20},
  {"id": "c", "tier": "t", "gpu": "h100-sxm5-80gb", "cluster": "dgx-h100", "framework": "nemo", "gpus": 256, "precision": "bf16", "error_pct": 0},
  {"id": "d", "tier": "t", "gpu": "h100-sxm5-80gb", "cluster": "dgx-h100", "framework": "nemo", "gpus": 512, "precision": "bf16", "error_pct": 60},
  {"id": "e", "tier": "t", "gpu": "h100-sxm5-80gb", "cluster": "dgx-h100", "framework": "nemo", "gpus": 1024, "precision": "bf16", "error_pct": -37.5},
  {"id": "f", "tier": "t", "gpu": "h100-sxm5-80gb", "cluster": "dgx-h100", "framework": "nemo", "gpus": 8, "precision": "bf16", "error_pct": 400},
  {"id": "g", "tier": "t", "gpu": "h100-sxm5-80gb", "cluster": "dgx-h100", "framework": "megatron-core", "gpus": 64, "precision": "bf16", "error_pct": -50},
  {"id": "h", "tier": "t", "gpu": "h100-sxm5-80gb", "cluster": "dgx-h100", "framework": "nemo", "gpus": 64, "precision": "fp8", "error_pct": 100}
]})";

const std::string kSimulate = "simulate --model llama3-8b --cluster dgx-h100 --gpus 64 --gbs 64 --seq 4096 --framework nemo";
const std::string kPlan =
    "plan --model llama3-8b --cluster dgx-h100 --gpus 16 --gbs 32 --seq 4096 --max-mbs 1 --top 2 --framework nemo";

// `dtsim ARGS` with the data dir `data` instead of the source tree; stdout only, exit code checked.
std::string run_with_data_dir(const std::string& data, const std::string& args) {
  std::string cmd = "DTSIM_DATA_DIR='" + data + "' '" + DTSIM_BINARY + "' " + args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = pclose(p);
  REQUIRE(WIFEXITED(st));
  REQUIRE(WEXITSTATUS(st) == 0);
  return out;
}

// A data dir holding the source tree's presets but no calibration/residuals.json.
std::string data_dir_without_residuals(const TempDir& tmp) {
  fs::path data = tmp.dir / "data";
  fs::create_directories(data / "calibration");
  for (const char* d : {"models", "topologies"}) fs::create_directory_symlink(dtsim::test::source_path(d), data / d);
  for (const auto& e : fs::directory_iterator(dtsim::test::source_path("calibration")))
    if (e.path().filename() != "residuals.json") fs::create_symlink(e.path(), data / "calibration" / e.path().filename());
  return data.string();
}

// What `validate --json` reports for calibration/holdout/NAME.json with its recipes file: `n` cases.
json validate_holdout(const std::string& name, std::size_t n) {
  auto r = run_dtsim("validate calibration/holdout/" + name + ".json --recipes calibration/holdout/" + name +
                         "-recipes.json --json",
                     DTSIM_SOURCE_DIR);
  REQUIRE(r.status == 0);
  json v = json::parse(r.out);
  REQUIRE(v.at("cases").size() == n);
  return v;
}

// Each case's prediction by id, every case required to have one; `each` checks what else a case
// must say.
std::map<std::string, double> predictions(const json& v, const std::function<void(const json&)>& each = {}) {
  std::map<std::string, double> out;
  for (const json& c : v.at("cases")) {
    const std::string id = c.at("id").get<std::string>();
    INFO(id);
    REQUIRE(c.contains("predicted_s"));
    out[id] = c.at("predicted_s").get<double>();
    if (each) each(c);
  }
  return out;
}

}  // namespace

TEST_CASE("cli simulate: the interval of the job's family, text and JSON", "[cli]") {
  TempDir tmp;
  std::string runs = tmp.write("runs.json", kRuns);
  // H100, nemo, 16-bit, 64 GPUs: scale 8 .. 512 holds a, b, c, d and f (e has 1024 GPUs, g another
  // stack, h fp8): m = -20, +25, 0, -37.5, -80.
  json j = run_json(kSimulate + " --residuals '" + runs + "' --json");
  const json& u = j.at("uncertainty");
  CHECK_THAT(u.at("low_pct").get<double>(), WithinAbs(-80, 1e-9));
  CHECK_THAT(u.at("high_pct").get<double>(), WithinAbs(25, 1e-9));
  CHECK(u.at("runs") == 5);
  CHECK(u.at("relaxed") == json::array());
  CHECK(u.at("reason").is_null());
  CHECK(u.at("family") == json::parse(R"({"gpu": "h100-sxm5-80gb", "framework": "nemo", "precision": "16-bit",
                                          "gpus_min": 8, "gpus_max": 512})"));
  auto text = run_dtsim(kSimulate + " --residuals '" + runs + "'");
  REQUIRE(text.status == 0);
  CHECK_THAT(text.out, Contains(" s: measured -80% / +25% of the prediction on 5 comparable published runs "
                                "(h100-sxm5-80gb, nemo, 16-bit, 8-512 GPUs)\n"));
  // The line follows the step time.
  CHECK(text.out.find("  interval ") > text.out.find("  step time "));
}

TEST_CASE("cli plan: every config carries the job's interval; the text gives #1's", "[cli]") {
  TempDir tmp;
  std::string runs = tmp.write("runs.json", kRuns);
  // 16 GPUs: scale 2 .. 128 holds a, b, f (3 < 5), so scale is relaxed: a-f, 8 to 1024 GPUs,
  // m = -20, +25, 0, -37.5, +60, -80.
  json j = run_json(kPlan + " --residuals '" + runs + "' --json");
  REQUIRE(j.at("configs").size() == 2);
  const json& u = j.at("configs")[0].at("uncertainty");
  CHECK(j.at("configs")[1].at("uncertainty") == u);
  CHECK_THAT(u.at("low_pct").get<double>(), WithinAbs(-80, 1e-9));
  CHECK_THAT(u.at("high_pct").get<double>(), WithinAbs(60, 1e-9));
  CHECK(u.at("runs") == 6);
  CHECK(u.at("relaxed") == json::array({"scale"}));
  CHECK(u.at("family").at("gpus_min") == 8);
  CHECK(u.at("family").at("gpus_max") == 1024);
  auto text = run_dtsim(kPlan + " --residuals '" + runs + "'");
  REQUIRE(text.status == 0);
  CHECK_THAT(text.out, Contains("\ninterval of #1 ") &&
                           Contains(" s: measured -80% / +60% of the prediction on 6 comparable published runs "
                                    "(h100-sxm5-80gb, nemo, 16-bit, 8-1024 GPUs; relaxed scale: fewer than 5 runs "
                                    "matched otherwise)\n"));
}

TEST_CASE("cli simulate: the shipped residuals by default; none without them", "[cli]") {
  json u = run_json(kSimulate + " --json").at("uncertainty");
  CHECK(u.at("runs").get<int>() >= 3);
  CHECK(u.at("low_pct").get<double>() <= u.at("high_pct").get<double>());
  // No calibration/residuals.json in the data dir: not an error, and said so.
  TempDir tmp;
  std::string data = data_dir_without_residuals(tmp);
  json none = json::parse(run_with_data_dir(data, kSimulate + " --json")).at("uncertainty");
  CHECK(none.at("low_pct").is_null());
  CHECK(none.at("high_pct").is_null());
  CHECK(none.at("runs") == 0);
  CHECK(none.at("family").at("gpu").is_null());
  CHECK(none.at("reason") == "no residuals file (" + data + "/calibration/residuals.json)");
  CHECK_THAT(run_with_data_dir(data, kSimulate),
             Contains("  interval none: no residuals file (" + data + "/calibration/residuals.json)\n"));
}

TEST_CASE("cli simulate/plan: too few runs, and a bad --residuals file", "[cli]") {
  TempDir tmp;
  std::string two = tmp.write("two.json", R"({"schema": "dtsim-residuals/1", "source": "t", "count": 2, "cases": [
    {"id": "a", "tier": "t", "gpu": "h100-sxm5-80gb", "cluster": "dgx-h100", "framework": "nemo", "gpus": 64, "precision": "bf16", "error_pct": 25},
    {"id": "b", "tier": "t", "gpu": "h100-sxm5-80gb", "cluster": "dgx-h100", "framework": "nemo", "gpus": 128, "precision": "bf16", "error_pct": -20}]})");
  auto text = run_dtsim(kSimulate + " --residuals '" + two + "'");
  CHECK_THAT(text.out, Contains("  interval none: no comparable published runs (2 in the widest family: any GPU, any "
                                "stack, any precision, 64-128 GPUs; relaxed scale, framework, precision, gpu: fewer "
                                "than 5 runs matched otherwise)\n"));
  std::string bad = tmp.write("bad.json", dtsim::test::replaced(kRuns, "\"gpus\": 128", "\"gpus\": 0"));
  check_bad(kSimulate + " --residuals '" + bad + "'",
            Equals("dtsim: " + bad + ":/cases/1/gpus: expected an integer in [1, 16777216], got 0\n"));
  check_bad(kPlan + " --residuals '" + bad + "'",
            Equals("dtsim: " + bad + ":/cases/1/gpus: expected an integer in [1, 16777216], got 0\n"));
  check_bad(kSimulate + " --residuals /nonexistent/r.json", Contains("/nonexistent/r.json"));
}

TEST_CASE("cli validate --residuals: one entry per predicted case", "[cli]") {
  TempDir tmp;
  // GPT 1.7B (SC'21 Table 1) on 8 A100s with Megatron-LM of 2021, and a case that cannot be read.
  auto one = [](const std::string& id, const std::string& layers) {
    return R"({"id": ")" + id + R"(", "tier": "dense16", "model": {"name": "GPT 1.7B", "layers": )" + layers +
           R"(, "hidden": 2304, "heads": 24, "kv_heads": 24, "ffn_hidden": 9216, "activation": "gelu", "vocab": 51200,
      "moe_experts": null, "moe_topk": null, "moe_ffn_hidden": null}, "cluster": "dgx-a100", "gpus": 8,
      "gpus_per_node": 8, "parallel": {"tp": 1, "pp": 1, "dp": 8, "cp": 1, "ep": 1, "vp": 1, "zero_stage": 1,
      "sequence_parallel": false}, "training": {"micro_batch": 4, "global_batch": 64, "seq_len": 2048,
      "recompute": "none", "precision": "fp16"}, "measured": {"iteration_s": 1.0},
      "framework": {"name": "megatron-lm", "version": null, "date": "2021"}})";
  };
  std::string path = tmp.write("v.json", R"({"schema": "dtsim-validation-cases/1", "cases": [)" + one("ok", "24") +
                                             "," + one("no-layers", "null") + "]}");
  std::string out = (tmp.dir / "res.json").string();
  json v = run_json("validate '" + path + "' --no-recipes --json --residuals '" + out + "'");
  json r = json::parse(dtsim::test::read_text(out));
  CHECK(r.at("schema") == "dtsim-residuals/1");
  CHECK(r.at("source") == "dtsim validate " + path + " --no-recipes");
  CHECK(r.at("count") == 1);
  REQUIRE(r.at("cases").size() == 1);
  const json& c = r.at("cases")[0];
  CHECK(c.at("id") == "ok");
  CHECK(c.at("tier") == "dense16");
  CHECK(c.at("gpu") == "a100-sxm4-80gb");  // topologies/dgx-a100.json
  CHECK(c.at("cluster") == "dgx-a100");
  CHECK(c.at("framework") == "megatron-lm");
  CHECK(c.at("gpus") == 8);
  CHECK(c.at("precision") == "fp16");
  // validate's own signed error, rounded to 0.001.
  CHECK_THAT(c.at("error_pct").get<double>(), WithinAbs(v.at("cases")[0].at("error_pct").get<double>(), 0.0005));
  check_bad("validate '" + path + "' --residuals /nonexistent/dir/res.json",
            Equals("dtsim: --residuals: expected a writable file path, got \"/nonexistent/dir/res.json\" (No such file or directory)\n"));
}

TEST_CASE("cli validate: several files, each recipes file applied to all of them, one residuals file", "[cli]") {
  TempDir tmp;
  auto one = [](const std::string& id, const std::string& mbs) {
    return R"({"id": ")" + id + R"(", "tier": "dense16", "model": {"name": "GPT 1.7B", "layers": 24,
      "hidden": 2304, "heads": 24, "kv_heads": 24, "ffn_hidden": 9216, "activation": "gelu", "vocab": 51200,
      "moe_experts": null, "moe_topk": null, "moe_ffn_hidden": null}, "cluster": "dgx-a100", "gpus": 8,
      "gpus_per_node": 8, "parallel": {"tp": 1, "pp": 1, "dp": 8, "cp": 1, "ep": 1, "vp": 1, "zero_stage": 1,
      "sequence_parallel": false}, "training": {"micro_batch": )" + mbs + R"(, "global_batch": 64, "seq_len": 2048,
      "recompute": "none", "precision": "fp16"}, "measured": {"iteration_s": 1.0},
      "framework": {"name": "megatron-lm", "version": null, "date": "2021"}})";
  };
  auto file = [&](const std::string& name, const std::string& cases) {
    return tmp.write(name, R"({"schema": "dtsim-validation-cases/1", "cases": [)" + cases + "]}");
  };
  std::string a = file("a.json", one("a1", "4")), b = file("b.json", one("b1", "null") + "," + one("b2", "2"));
  // One recipes file per source file, as the shipped holdouts have: each fills only its own cases.
  std::string ra = tmp.write("ra.json", R"({"schema": "dtsim-validation-recipes/1", "cases": {}})");
  std::string rb = tmp.write(
      "rb.json", R"({"schema": "dtsim-validation-recipes/1", "cases": {"b1": {"micro_batch": 2, "source": "b.sh"}}})");
  std::string out = (tmp.dir / "res.json").string();
  json v = run_json("validate '" + a + "' '" + b + "' --recipes '" + ra + "' --recipes '" + rb +
                    "' --json --residuals '" + out + "'");
  REQUIRE(v.at("cases").size() == 3);
  CHECK(v.at("cases")[0].at("id") == "a1");
  CHECK(v.at("cases")[1].at("id") == "b1");
  CHECK(v.at("cases")[1].at("assumptions").dump().find("micro_batch null -> 2 (recipe)") != std::string::npos);
  // b1 took its recipe's micro-batch: the same job as b2.
  CHECK(v.at("cases")[1].at("predicted_s") == v.at("cases")[2].at("predicted_s"));
  json r = json::parse(dtsim::test::read_text(out));
  CHECK(r.at("count") == 3);
  CHECK(r.at("source") == "dtsim validate " + a + " " + b + " --recipes " + ra + " --recipes " + rb);
  // A recipe no file has a case for is reported; one id in two files is an error naming the second.
  std::string rc = tmp.write(
      "rc.json", R"({"schema": "dtsim-validation-recipes/1", "cases": {"zz": {"micro_batch": 2, "source": "z.sh"}}})");
  auto unused = run_dtsim("validate '" + a + "' '" + b + "' --recipes '" + rc + "'");
  REQUIRE(unused.status == 0);
  CHECK_THAT(unused.err, Contains(rc + ": no case zz in the files validated; recipe unused"));
  std::string dup = file("dup.json", one("a1", "4"));
  check_bad("validate '" + a + "' '" + dup + "' --no-recipes",
            Equals("dtsim: " + dup + ":/cases/0/id: expected an id no other validated case has, got \"a1\" (also in " + a +
                   ")\n"));
  check_bad("validate '" + a + "' --no-recipes --recipes '" + ra + "'",
            Equals("dtsim: --no-recipes: expected it without --recipes, got both\n"));
}

TEST_CASE("cli validate --unstated: every other micro-batch and recompute of a case that leaves them null", "[cli]") {
  TempDir tmp;
  // GPT 1.7B on 8 A100s: 64 sequences over dp 8 = 8 per replica. The first case states neither its
  // micro-batch nor its recompute; the second states both; the third cannot be read.
  auto one = [](const std::string& id, const std::string& mbs, const std::string& recompute,
                const std::string& layers) {
    return R"({"id": ")" + id + R"(", "tier": "dense16", "model": {"name": "GPT 1.7B", "layers": )" + layers +
           R"(, "hidden": 2304, "heads": 24, "kv_heads": 24, "ffn_hidden": 9216, "activation": "gelu", "vocab": 51200,
      "moe_experts": null, "moe_topk": null, "moe_ffn_hidden": null}, "cluster": "dgx-a100", "gpus": 8,
      "gpus_per_node": 8, "parallel": {"tp": 1, "pp": 1, "dp": 8, "cp": 1, "ep": 1, "vp": 1, "zero_stage": 1,
      "sequence_parallel": false}, "training": {"micro_batch": )" + mbs + R"(, "global_batch": 64, "seq_len": 2048,
      "recompute": )" + recompute + R"(, "precision": "fp16"}, "measured": {"iteration_s": 1.0},
      "framework": {"name": "megatron-lm", "version": null, "date": "2022"}})";
  };
  std::string path = tmp.write("v.json", R"({"schema": "dtsim-validation-cases/1", "cases": [)" +
                                             one("open", "null", "null", "24") + "," +
                                             one("stated", "4", "\"none\"", "24") + "," +
                                             one("unreadable", "null", "null", "null") + "]}");
  json v = run_json("validate '" + path + "' --no-recipes --unstated --json");
  REQUIRE(v.at("cases").size() == 3);
  const json& open = v.at("cases")[0];
  // The schema's micro-batch 1 was taken: 2, 4 and 8 divide the 8 sequences per replica (16 does not).
  std::vector<std::string> mbs, recompute;
  for (const json& a : open.at("unstated")) {
    INFO(a.dump());
    (a.at("field") == "micro_batch" ? mbs : recompute).push_back(a.at("value").get<std::string>());
    REQUIRE(a.at("predicted_s").is_number());
    CHECK(a.at("error_pct").get<double>() == Approx((a.at("predicted_s").get<double>() - 1.0) * 100.0));
  }
  CHECK(mbs == std::vector<std::string>{"2", "4", "8"});
  // Whatever recompute the null took (Megatron-LM of 2022's recipe: selective), the other two.
  const std::string layout = open.at("layout").get<std::string>();
  std::vector<std::string> others;
  for (const char* r : {"none", "selective", "full"})
    if (layout.find(std::string("recompute ") + r) == std::string::npos) others.push_back(r);
  CHECK(others.size() == 2);
  CHECK(recompute == others);
  // Full recompute re-runs the forward: slower than none at the same micro-batch.
  for (const json& a : open.at("unstated"))
    if (a.at("value") == "full") CHECK(a.at("predicted_s").get<double>() > open.at("predicted_s").get<double>());
  CHECK(open.at("measured_within_unstated").at("micro_batch").is_boolean());
  CHECK(open.at("measured_within_unstated").at("recompute").is_boolean());
  CHECK_FALSE(v.at("cases")[1].contains("unstated"));
  // Values the layout rules out are left out: pp 4 x vp 2 over dp 2 gives 32 sequences per replica,
  // and the interleaved schedule needs a multiple of 4 micro-batches: 16 (2 of them) is not run.
  std::string text = one("open", "null", "\"none\"", "24");
  auto swap = [&text](const std::string& from, const std::string& to) {
    REQUIRE(text.find(from) != std::string::npos);
    text.replace(text.find(from), from.size(), to);
  };
  swap(R"("pp": 1, "dp": 8)", R"("pp": 4, "dp": 2)");
  swap(R"("vp": 1)", R"("vp": 2)");
  std::string pp = tmp.write("pp.json", R"({"schema": "dtsim-validation-cases/1", "cases": [)" + text + "]}");
  json ppv = run_json("validate '" + pp + "' --no-recipes --unstated --json");
  std::vector<std::string> allowed;
  for (const json& a : ppv.at("cases")[0].at("unstated")) allowed.push_back(a.at("value").get<std::string>());
  CHECK(allowed == std::vector<std::string>{"2", "4", "8"});
  CHECK_FALSE(v.at("cases")[2].contains("unstated"));
  CHECK(v.at("cases")[2].at("reason").is_string());
  // Without the flag nothing is simulated twice; the text lists each alternative under its case.
  CHECK_FALSE(run_json("validate '" + path + "' --no-recipes --json").at("cases")[0].contains("unstated"));
  auto r = run_dtsim("validate '" + path + "' --no-recipes --unstated");
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("\n    micro_batch 2: ") && Contains("\n    recompute full: ") &&
                        Contains("measured within the range micro_batch's values that fit in memory span: ") &&
                        Contains("measured within the range recompute's values that fit in memory span: "));
}

TEST_CASE("calibration/residuals.json: what dtsim validate gives on the shipped published runs", "[cli]") {
  fs::path shared = fs::path(DTSIM_SHARED_DIR).lexically_normal();
  if (!fs::exists(shared / "validation/measured_runs.json")) {
    WARN("skipped: " << (shared / "validation/measured_runs.json").string() << " not found");
    return;
  }
  // The shipped file names the command that made it: shared/'s runs, then every holdout, each with
  // its recipes. Run it from the source tree, as a person regenerating the file would.
  fs::path source = fs::path(DTSIM_SOURCE_DIR).lexically_normal();
  std::string runs = (shared.lexically_relative(source) / "validation/measured_runs.json").string();
  json shipped = json::parse(dtsim::test::read_text(dtsim::test::source_path("calibration/residuals.json")));
  const std::string command = shipped.at("source").get<std::string>();
  REQUIRE(command.rfind("dtsim validate " + runs + " ", 0) == 0);
  for (const auto& entry : fs::directory_iterator(source / "calibration/holdout")) {
    std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".json" || name.find("-recipes.json") != std::string::npos) continue;
    INFO("holdout " << name);
    CHECK(command.find(" calibration/holdout/" + name) != std::string::npos);
    CHECK(command.find(" --recipes calibration/holdout/" + name.substr(0, name.size() - 5) + "-recipes.json") !=
          std::string::npos);
  }
  TempDir tmp;
  std::string out = (tmp.dir / "residuals.json").string();
  auto r = run_dtsim(command.substr(6) + " --residuals '" + out + "'", source.string());
  REQUIRE(r.status == 0);
  json fresh = json::parse(dtsim::test::read_text(out));
  if (fresh != shipped) {
    std::string diff;
    for (const auto& op : json::diff(shipped, fresh)) {
      if (diff.size() > 1500) break;
      diff += "  " + op.dump() + "\n";
    }
    FAIL("calibration/residuals.json is stale; regenerate it in " << source.string() << " with\n  build/"
                                                                   << command << " --residuals calibration/residuals.json\n"
                                                                   << "differences (shipped -> fresh):\n" << diff);
  }
}

TEST_CASE("calibration/holdout/dgxc-dense.json: every DGX Cloud benchmarking dense run is predicted", "[cli]") {
  // Out-of-sample dense runs (Nemotron-4 15B/340B, Llama 3.1 405B on 16-2,304 H100s; not in shared/,
  // never fitted to); README "Runs dtsim has not seen" reports their errors. Coverage is pinned here,
  // and that the FP8 rows take their recipes' fp8 weights.
  json v = validate_holdout("dgxc-dense", 38);
  for (const json& c : v.at("cases")) {
    INFO(c.at("id").get<std::string>());
    CHECK(c.contains("predicted_s"));
    bool fp8 = c.at("id").get<std::string>().find("-fp8-") != std::string::npos;
    CHECK((c.at("assumptions").dump().find("fp8_param_gather null -> on") != std::string::npos) == fp8);
  }
}

TEST_CASE("calibration/holdout/megatron-deepspeed.json: BLOOM and MT-NLG are predicted on their stack", "[cli]") {
  // Out-of-sample Megatron-DeepSpeed pipelines (BLOOM 176B on 384 A100s, MT-NLG 530B on 2,240-3,360;
  // not in shared/, never fitted to); README "Runs dtsim has not seen" reports their errors. Pinned:
  // coverage, the stack of each run's time, BLOOM's preset (ALiBi) and the nulls MT-NLG leaves to
  // the schema (micro-batch) and to its stack (recompute, precision, ZeRO stage).
  json v = validate_holdout("megatron-deepspeed", 4);
  for (const json& c : v.at("cases")) {
    const std::string id = c.at("id").get<std::string>();
    INFO(id);
    CHECK(c.contains("predicted_s"));
    CHECK(c.at("framework") == "megatron-deepspeed");
    const std::string a = c.at("assumptions").dump();
    if (id.find("bigscience") != std::string::npos) {
      CHECK(c.at("stack") == "megatron-deepspeed@2022");
      CHECK(a.find("the BLOOM 176B preset") != std::string::npos);
    } else {
      CHECK(c.at("stack") == "megatron-deepspeed@2021");
      CHECK(a.find("micro_batch null -> 1") != std::string::npos);
      CHECK(a.find("recompute null -> full (megatron-deepspeed@2021 recipes)") != std::string::npos);
      CHECK(a.find("precision null -> fp16 (megatron-deepspeed@2021 recipes)") != std::string::npos);
    }
  }
}

TEST_CASE("calibration/holdout/nemotron4-15b.json: the report's three steps are predicted", "[cli]") {
  // Out-of-sample: Nemotron-4 15B's pre-training at DP 96-288 on H100s (arXiv:2402.16819 Table 2;
  // not in shared/, never fitted to); README "Runs dtsim has not seen" reports the errors. Pinned:
  // coverage, the preset, and that the unstated micro-batch takes the schema's rule.
  json v = validate_holdout("nemotron4-15b", 3);
  for (const json& c : v.at("cases")) {
    INFO(c.at("id").get<std::string>());
    CHECK(c.contains("predicted_s"));
    const std::string a = c.at("assumptions").dump();
    CHECK(a.find("the Nemotron-4 15B preset") != std::string::npos);
    CHECK(a.find("micro_batch null -> 1") != std::string::npos);
  }
}

TEST_CASE("calibration/holdout/sc21-zero3.json: ZeRO-3 at 384-2,240 GPUs is predicted on its 2021 stack", "[cli]") {
  // Out-of-sample: SC'21 Table 2's ZeRO-3 rows (arXiv:2104.04473; not in shared/, never fitted to);
  // README "Runs dtsim has never seen" reports the errors. Pinned: coverage, the stack of the date
  // and the nulls it fills, and that each step grows with the number of ranks at a fixed micro-batch
  // count per GPU, as the per-rank host work and ring latency make it.
  auto predicted = predictions(validate_holdout("sc21-zero3", 6), [](const json& c) {
    CHECK(c.at("stack") == "deepspeed@0.3");
    const std::string a = c.at("assumptions").dump();
    CHECK(a.find("recompute null -> full (deepspeed@0.3 recipes)") != std::string::npos);
    CHECK(a.find("precision null -> fp16 (deepspeed@0.3 recipes)") != std::string::npos);
  });
  // 768 -> 1,536 GPUs halves each GPU's compute; what grows with the ranks keeps the step above 0.8 of it (0.78 and 0.75 before the 2021 stack blocked its reductions and paid per rank).
  CHECK(predicted.at("sc21-t2-zero3-175B-1536xA100") > 0.8 * predicted.at("sc21-t2-zero3-175B-768xA100"));
  CHECK(predicted.at("sc21-t2-zero3-530B-2240xA100") > 0.8 * predicted.at("sc21-t2-zero3-530B-1120xA100"));
}

TEST_CASE("calibration/holdout/megascale.json: Megatron-LM at 256-12,288 GPUs is predicted", "[cli]") {
  // Out-of-sample: MegaScale's Megatron-LM baseline rows (arXiv:2402.15627 Tables 2-3, Figure 9; not
  // in shared/, never fitted to); README "Runs dtsim has never seen" reports the errors. Pinned:
  // coverage, the stack the commit's date picks, and that the 530B bars at a fixed batch per replica
  // grow with the data-parallel size, as ring latency and the slowest GPU make them.
  auto predicted = predictions(validate_holdout("megascale", 12),
                               [](const json& c) { CHECK(c.at("stack") == "megatron-lm@2022"); });
  CHECK(predicted.at("megascale-f9-megatron-530B-11200gpu") > predicted.at("megascale-f9-megatron-530B-2240gpu"));
}

TEST_CASE("calibration/holdout/torchtitan.json and llm-foundry.json: PyTorch FSDP runs are predicted", "[cli]") {
  // Out-of-sample: torchtitan's published FSDP2 tables (pytorch/torchtitan docs/performance.md,
  // benchmarks/) and MosaicML's llm-foundry FSDP1 throughput tables (scripts/train/benchmarking/
  // README.md); not in shared/, never fitted to. Pinned: coverage, the stacks the dates pick, and
  // that the recipes' torch.compile makes the compiled row of each measured A/B pair the faster one.
  auto predicted = predictions(validate_holdout("torchtitan", 41), [](const json& c) {
    CHECK(c.at("stack").get<std::string>().rfind("pytorch-fsdp@", 0) == 0);
    // From April 2025 torchtitan's --training.compile compiles the loss as well.
    if (c.at("id").get<std::string>().starts_with("torchtitan-2025-06"))
      CHECK(c.at("stack") == "pytorch-fsdp@fsdp2-2025-04");
  });
  CHECK(predicted.at("torchtitan-2024-12-L3.1-8B-8xH100-fsdp8-fsdp-compile") <
        0.9 * predicted.at("torchtitan-2024-12-L3.1-8B-8xH100-fsdp8-fsdp"));
  // llm-foundry's runs name Composer, which wraps FSDP1 and steps its own optimizer loop. The 2023
  // tables predate llm-foundry's FlashAttention-2 support: their recipes say FlashAttention in
  // Triton; the large-scale table of 2024 runs FlashAttention-2.
  auto lf = predictions(validate_holdout("llm-foundry", 98), [](const json& c) {
    CHECK(c.at("stack") == "composer@fsdp1");
    const std::string id = c.at("id").get<std::string>(), a = c.at("assumptions").dump();
    bool fa2 = id.find("-ls-") != std::string::npos || id.find("-fp8-") != std::string::npos;
    CHECK(a.find(fa2 ? "attention null -> flash2" : "attention null -> flash_triton") != std::string::npos);
  });
  // At a fixed 2^20 tokens per step the attention's share grows with the sequence.
  CHECK(lf.at("llmfoundry-mpt7b-a100-s65536-8xA100-80GB") > 1.5 * lf.at("llmfoundry-mpt7b-a100-s4096-8xA100-80GB"));
}

TEST_CASE("calibration/holdout/megatron-lm-2020.json: the 2020 weak-scaling table is predicted", "[cli]") {
  // Out-of-sample: Megatron-LM's 2020 DGX-A100 weak-scaling table (images/tables.tex; not in
  // shared/, never fitted to); README "Runs dtsim has never seen" reports the errors. Pinned:
  // coverage and the nulls the first megatron-lm stack fills.
  json v = validate_holdout("megatron-lm-2020", 8);
  for (const json& c : v.at("cases")) {
    INFO(c.at("id").get<std::string>());
    CHECK(c.contains("predicted_s"));
    CHECK(c.at("stack") == "megatron-lm@2021");
    const std::string a = c.at("assumptions").dump();
    CHECK(a.find("recompute null -> full (megatron-lm@2021 recipes)") != std::string::npos);
  }
}

TEST_CASE("calibration/holdout/aws-efa-moe.json: the EFA all-to-all runs are predicted on AWS presets", "[cli]") {
  // Out-of-sample: awslabs' Megatron-Bridge MoE A/Bs on EC2 p6-b300 and p6-b200 over EFA (not in
  // shared/, never fitted to); README "Runs dtsim has not seen" reports their errors. Pinned: coverage,
  // that each case runs Megatron-Core's alltoall dispatcher with the overlap its id names, and DP 4
  // everywhere (128 GPUs at TP 8 and PP 4 too: the table's DP 2 there does not multiply out).
  json v = validate_holdout("aws-efa-moe", 10);
  for (const json& c : v.at("cases")) {
    const std::string id = c.at("id").get<std::string>();
    INFO(id);
    REQUIRE(c.contains("predicted_s"));
    const std::string a = c.at("assumptions").dump();
    CHECK(a.find("moe_dispatcher null -> alltoall (recipe)") != std::string::npos);
    bool overlap = id.find("-overlap") != std::string::npos;
    CHECK(a.find(std::string("moe_a2a_overlap null -> ") + (overlap ? "on" : "off") + " (recipe)") != std::string::npos);
    CHECK(c.at("layout").get<std::string>().find(" dp 4 ") != std::string::npos);
  }
}

TEST_CASE("calibration/holdout/mbridge-26.02.json: every published 26.02 run is predicted", "[cli]") {
  // Out-of-sample: the Megatron-Bridge 26.02 table (not in shared/, never fitted to); README
  // "Runs dtsim has not seen" reports its errors. What is pinned here is coverage, not accuracy.
  // The recipes file carries what the table states and the case schema cannot: FP8-MX rows' scaling.
  json v = validate_holdout("mbridge-26.02", 33);
  for (const json& c : v.at("cases")) {
    INFO(c.at("id").get<std::string>());
    CHECK(c.contains("predicted_s"));
    CHECK(c.at("framework") == "nemo-megatron-bridge");
    bool mx = c.at("id").get<std::string>().find("FP8-MX") != std::string::npos;
    CHECK((c.at("assumptions").dump().find("fp8_recipe null -> mxfp8") != std::string::npos) == mx);
    // Qwen3 runs on GB200/GB300 dispatch as the stack's recipes for those GPUs do, and say so;
    // gpt-oss keeps its provider's alltoall there and DeepSeek-V3 runs HybridEP on every GPU, as
    // the workload presets matching their layouts say (the recipes file, with its source).
    const std::string id = c.at("id").get<std::string>();
    bool qwen = id.find("Qwen3") != std::string::npos, dsv3 = id.find("DeepSeek") != std::string::npos;
    bool oss = id.find("GPT_OSS") != std::string::npos;
    bool grace = id.find("-GB200-") != std::string::npos || id.find("-GB300-") != std::string::npos;
    const std::string a = c.at("assumptions").dump();
    CHECK((a.find("moe dispatcher flex (nemo-megatron-bridge@25.11 recipes on GB") != std::string::npos) ==
          (qwen && grace));
    if (oss && grace) CHECK(a.find("moe_dispatcher null -> alltoall (recipe)") != std::string::npos);
    if (dsv3) {
      CHECK(a.find("moe_dispatcher null -> flex (recipe)") != std::string::npos);
      CHECK(a.find("recompute_modules null -> mla_up_proj (recipe)") != std::string::npos);
    }
  }
  CHECK(v.at("summary").at("n") == 33);
}

TEST_CASE("calibration/holdout/mbridge-26.04.json: every row predicted, the hybrid ones as their presets", "[cli]") {
  // Out-of-sample: Megatron-Bridge 26.04's table (not in shared/, never fitted to); README "Runs
  // dtsim has not seen" reports their errors. Pinned: coverage, the hybrid presets (the case schema
  // has no field for the pattern, the Mamba mixer, LatentMoE or the MTP module), the recipes' CUDA
  // graphs with the "mamba" scope, NVFP4 Super's last 14 layers in bf16, and Kimi K2's Muon.
  json v = validate_holdout("mbridge-26.04", 44);
  std::map<std::string, double> p = predictions(v, [](const json& c) {
    const std::string id = c.at("id").get<std::string>(), a = c.at("assumptions").dump();
    bool nano = id.find("Nemotron_3_Nano") != std::string::npos, super = id.find("Nemotron_3_Super") != std::string::npos;
    if (nano) CHECK(a.find("the Nemotron 3 Nano 30B-A3B preset") != std::string::npos);
    if (super) CHECK(a.find("the Nemotron 3 Super 120B-A12B preset") != std::string::npos);
    if (nano || (super && id.find("B200-64gpu-MXFP8") == std::string::npos))
      CHECK((a.find("cuda_graphs null -> ") != std::string::npos && a.find("mamba") != std::string::npos));
    if (super && id.find("NVFP4") != std::string::npos) CHECK(a.find("bf16_layers_end null -> 14 (recipe)") != std::string::npos);
    if (id.find("Kimi_K2") != std::string::npos) CHECK(a.find("optimizer null -> muon (recipe)") != std::string::npos);
  });
  CHECK(p.size() == 44);
}
