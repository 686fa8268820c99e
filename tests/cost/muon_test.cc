// Muon (Megatron-Core's TensorParallelMuon with its layer-wise distributed optimizer): the
// Newton-Schulz GEMMs per weight matrix, where they land in a step, its states and its rules.
#include <catch2/catch.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "cli/cli_helpers.h"
#include "cost/compute.h"
#include "cost/layer_shape.h"
#include "helpers.h"
#include "imports/imports.h"
#include "spec/load.h"

using Catch::Matchers::Equals;
using Catch::Matchers::VectorContains;
using Catch::Matchers::WithinRel;
namespace spec = dtsim::spec;
namespace cost = dtsim::cost;

TEST_CASE("cost::muon_ops: five Newton-Schulz steps per weight matrix, experts apart", "[cost]") {
  // Per a x b matrix (a <= b) and step: X X^T (2 a^2 b), A A (2 a^3), B X (2 a^2 b).
  auto ns = [](double m, double n) {
    double a = std::min(m, n), b = std::max(m, n);
    return 5 * (4 * a * a * b + 2 * a * a * a);
  };
  auto sum = [](const std::vector<cost::Op>& ops) {
    double f = 0;
    for (const cost::Op& op : ops) f += op.flops.value();
    return f;
  };
  // Llama 3 8B at TP 1: fused QKV 4096 x 6144, projection 4096 x 4096, FC1 (gate and up) 4096 x
  // 28672, FC2 14336 x 4096.
  spec::Model llama = spec::load_model(dtsim::test::source_path("models/llama3-8b.json"));
  cost::MuonOps d = cost::muon_ops(cost::layer_shape(llama, spec::Parallel{}, 1, 8192));
  CHECK(d.expert.empty());
  CHECK_THAT(sum(d.dense), WithinRel(ns(4096, 6144) + ns(4096, 4096) + ns(4096, 28672) + ns(14336, 4096), 1e-12));
  for (const cost::Op& op : d.dense) CHECK(op.bf16_only);
  // Qwen3-30B-A3B over EP 8: 16 local experts of 768 x 2048 (FC1 1536 x 2048, FC2 2048 x 768),
  // each its own matrix; the router (128 x 2048) is dense.
  spec::Model qwen = spec::load_model(dtsim::test::source_path("models/qwen3-30b-a3b.json"));
  spec::Parallel par;
  par.ep = 8;
  cost::MuonOps e = cost::muon_ops(cost::layer_shape(qwen, par, 1, 4096));
  CHECK_THAT(sum(e.expert), WithinRel(16 * (ns(1536, 2048) + ns(2048, 768)), 1e-12));
  double kernels = 0;
  for (const cost::Op& op : e.expert) kernels += op.kernels;
  CHECK(kernels == 16 * 2 * 3 * 5);  // one launch per matrix, GEMM and step
}

TEST_CASE("cli simulate: --optimizer muon prices its Newton-Schulz GEMMs, states and rules", "[cli]") {
  std::string job = "simulate --model qwen3-30b-a3b --cluster dgx-h100 --gpus 16 --ep 8 --gbs 256 --mbs 1 --seq 4096 --json";
  nlohmann::json adam = dtsim::test::run_json(job), muon = dtsim::test::run_json(job + " --optimizer muon");
  CHECK(muon.at("config").at("optimizer") == "muon");
  // The Newton-Schulz GEMMs run in the optimizer step; Muon keeps one fp32 state (momentum) to
  // Adam's two.
  CHECK(muon.at("breakdown").at("optimizer").get<double>() > 2 * adam.at("breakdown").at("optimizer").get<double>());
  CHECK(muon.at("step_time_s").get<double>() > adam.at("step_time_s").get<double>());
  CHECK(muon.at("memory").at("optimizer_bytes").get<double>() < adam.at("memory").at("optimizer_bytes").get<double>());
  // Its layer-wise optimizer shards only the states and gathers bf16 parameters.
  dtsim::test::check_bad(job + " --optimizer muon --zero 2",
                         Equals("dtsim: --zero: expected 0 or 1 with muon (Megatron-Core's layer-wise optimizer shards "
                                "only its states), got 2\n"));
  dtsim::test::check_bad(job + " --optimizer muon --precision fp8 --fp8-param-gather on",
                         Equals("dtsim: --fp8-param-gather: expected off with muon (its layer-wise optimizer gathers "
                                "bf16 parameters), got on\n"));
  dtsim::test::check_bad(job + " --optimizer lion", Equals("dtsim: --optimizer: expected adam, sgd or muon, got \"lion\"\n"));
}

TEST_CASE("imports::from_megatron: --optimizer dist_muon is Muon", "[imports]") {
  dtsim::imports::Imported r =
      dtsim::imports::from_megatron("--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --optimizer dist_muon", "m.args");
  CHECK_THAT(r.flags, VectorContains(std::string("--optimizer")));
  CHECK_THAT(r.flags, VectorContains(std::string("muon")));
}
