// simulate --html/--svg and plan --html/--svg write the report files (their content is tested in
// tests/report/html_test.cc); here: the files exist, are what they say, and bad paths exit 2.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <string>

#include "cli_helpers.h"
#include "helpers.h"

using namespace dtsim::test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using Catch::Matchers::WithinRel;

TEST_CASE("cli simulate --html and --svg: the page and the plots", "[cli]") {
  TempDir tmp;
  std::string html = (tmp.dir / "step.html").string(), prefix = (tmp.dir / "step").string();
  auto r = run_dtsim("simulate --model llama3-8b --cluster dgx-h100 --gpus 16 --pp 2 --gbs 32 --html '" + html +
                     "' --svg '" + prefix + "'");
  REQUIRE(r.status == 0);
  std::string page = read_text(html);
  CHECK_THAT(page, StartsWith("<!DOCTYPE html>") && Contains("<svg") && Contains("stage 1") && Contains("Llama 3 8B"));
  CHECK(page.find("<script") == std::string::npos);  // self-contained, static
  CHECK_THAT(read_text(prefix + "-breakdown.svg"), StartsWith("<svg") && Contains("compute"));
  CHECK_THAT(read_text(prefix + "-timeline.svg"), StartsWith("<svg") && Contains("stage 0"));
  check_bad("simulate --model llama3-8b --cluster dgx-h100 --gpus 8 --gbs 32 --html /nonexistent/dir/x.html",
            StartsWith("dtsim: --html: expected a writable file path"));
}

TEST_CASE("cli plan --html and --svg: the top configurations and the Pareto front", "[cli]") {
  TempDir tmp;
  std::string html = (tmp.dir / "plan.html").string(), prefix = (tmp.dir / "plan").string();
  auto r = run_dtsim("plan --model llama3-8b --cluster dgx-h100 --gpus 16 --gbs 64 --top 5 --json --html '" + html +
                     "' --svg '" + prefix + "'");
  REQUIRE(r.status == 0);
  CHECK_THAT(read_text(html), StartsWith("<!DOCTYPE html>") && Contains("Pareto"));
  CHECK_THAT(read_text(prefix + "-pareto.svg"), StartsWith("<svg") && Contains("#1 tp "));
}

TEST_CASE("cli simulate --kernels: one layer's kernels, their roofline terms and what bounds them", "[cli]") {
  std::string job = "simulate --model llama3-8b --cluster dgx-h100 --gpus 8 --tp 2 --gbs 32 --recompute selective";
  nlohmann::json j = run_json(job + " --kernels --json");
  REQUIRE(j.contains("kernels"));
  REQUIRE(j.contains("step_time_s"));  // the simulate report is still all there
  const nlohmann::json& k = j["kernels"];
  double pace = k["pace"].get<double>();
  CHECK(pace >= 1.0);
  REQUIRE(!k["forward"].empty());
  REQUIRE(!k["backward"].empty());
  REQUIRE(!k["recompute"].empty());  // selective: the attention core again
  bool fc1 = false;
  for (const char* pass : {"forward", "recompute", "backward"}) {
    for (const nlohmann::json& op : k[pass]) {
      INFO(pass << " " << op.dump());
      double body = std::max(op["compute_s"].get<double>(), op["memory_s"].get<double>());
      CHECK_THAT(op["time_s"].get<double>(), WithinRel((body + op["overhead_s"].get<double>()) * pace, 1e-12));
      if (op["kind"] == "gemm") {
        // 2 m n k per GEMM of the batch, at an efficiency inside (0, 1].
        double flops = 2 * op["m"].get<double>() * op["n"].get<double>() * op["k"].get<double>() * op["batch"].get<double>();
        CHECK_THAT(op["flops"].get<double>(), WithinRel(flops, 1e-9));
        CHECK(op["efficiency"].get<double>() > 0);
        CHECK(op["efficiency"].get<double>() <= 1);
      }
      std::string bound = op["bound"];
      CHECK((bound == "math" || bound == "memory" || bound == "launch"));
      if (op["name"] == "mlp.fc1") fc1 = true;
    }
  }
  CHECK(fc1);
  // A 14336-wide FC1 on 4096 tokens is math-bound, a norm is memory-bound.
  for (const nlohmann::json& op : k["forward"]) {
    if (op["name"] == "mlp.fc1") CHECK(op["bound"] == "math");
    if (op["name"] == "norm1") CHECK(op["bound"] == "memory");
  }
  // Beside the layers, once per micro-batch: the LM head's GEMMs on the rank's vocabulary shard
  // (128,256 / TP 2) over the micro-batch's 2,048 tokens, its cross-entropy, the embedding.
  const nlohmann::json& head = k["head"];
  std::map<std::string, nlohmann::json> ops;
  for (const char* pass : {"forward", "backward"})
    for (const nlohmann::json& op : head[pass]) ops[op["name"]] = op;
  for (const char* name : {"logits", "logits.dgrad", "logits.wgrad", "cross_entropy", "cross_entropy.bwd", "final_norm"})
    CHECK(ops.count(name) == 1);
  CHECK(ops["logits"]["m"] == 2048);
  CHECK(ops["logits"]["n"] == 64128);
  CHECK(ops["logits"]["k"] == 4096);
  CHECK(ops["cross_entropy"]["bound"] == "memory");
  REQUIRE(k["embedding"]["forward"].size() == 1);
  CHECK(k["embedding"]["forward"][0]["name"] == "embedding");
  // What the host spends issuing the layer: a dense layer's attention and MLP blocks, at the
  // cluster's per-call costs (3 TE modules and 4 torch ops, then 2 and 3).
  const nlohmann::json& host = k["host"];
  nlohmann::json issue = nlohmann::json::parse(read_text(source_path("topologies/dgx-h100.json")))["host_issue_us"];
  double te = issue["te_module"].get<double>() * 1e-6, op = issue["torch_op"].get<double>() * 1e-6;
  CHECK_THAT(host["attention_s"].get<double>(), WithinRel(3 * te + 4 * op, 1e-9));
  CHECK_THAT(host["fc1_s"].get<double>(), WithinRel(2 * te + 3 * op, 1e-9));
  CHECK_THAT(host["forward_s"].get<double>(), WithinRel(host["attention_s"].get<double>() + host["fc1_s"].get<double>(), 1e-12));
  CHECK(host["backward_s"] == host["forward_s"]);  // a dense layer: no preprocess, no grouped GEMMs
  // CUDA graphs over the whole iteration issue nothing from Python.
  nlohmann::json graphed = run_json(job + " --cuda-graphs full_iteration --kernels --json")["kernels"]["host"];
  CHECK(graphed["forward_s"] == 0.0);
  CHECK_THAT(run_dtsim(job + " --cuda-graphs full_iteration --kernels").out, !Contains("\nhost: "));
  auto r = run_dtsim(job + " --kernels");
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("step time") && Contains("kernels of one layer on one rank") && Contains("forward: ") &&
                        Contains("backward: ") && Contains("mlp.fc1.wgrad") && Contains("\nhead forward: ") &&
                        Contains("\nembedding backward: ") && Contains("\nhost: ") && Contains("\nattention "));
}
