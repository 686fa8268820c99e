#include <catch2/catch.hpp>

#include "core/errors.h"
#include "spec/job_rules.h"

using namespace dtsim;
using namespace dtsim::spec;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;

namespace {

Model gpt3_175b() {
  // Brown et al. 2020, Table 2.1.
  return Model{.name = "GPT-3 175B", .layers = 96, .hidden = 12288, .heads = 96, .kv_heads = 96, .head_dim = 128,
               .ffn_hidden = 49152, .vocab = 51200, .max_position = 2048, .tied_embeddings = true};
}

Cluster a100_cluster() {
  Cluster c;
  c.name = "test";
  c.gpu = Gpu{.name = "A100", .peak_fp16 = tflops(312), .peak_bf16 = tflops(312)};
  c.gpus_per_node = 8;
  return c;
}

// The Megatron-LM README GPT-3 175B job: 1024 GPUs, TP 8, PP 16, DP 8, gbs 1536.
const Parallel kPar{.tp = 8, .pp = 16, .dp = 8};
const Training kTrain{.micro_batch = 1, .global_batch = 1536, .seq_len = 2048, .precision = Dtype::fp16};

}  // namespace

TEST_CASE("spec::check_job: the Megatron-LM README config is valid", "[spec]") {
  CHECK_NOTHROW(check_job(gpt3_175b(), a100_cluster(), 1024, kPar, kTrain));
  CHECK(micro_batches(kPar, kTrain) == 192);  // 1536 / (1 * 8)
}

TEST_CASE("spec::check_job: impossible configs name the flag", "[spec]") {
  Model m = gpt3_175b();
  Cluster c = a100_cluster();
  CHECK_THROWS_WITH(check_job(m, c, 512, kPar, kTrain),
                    Equals("--dp: expected tp*pp*dp*cp = gpus (512), got 8*16*8*1 = 1024"));
  Parallel p = kPar;
  p.tp = 5; p.dp = 8; 
  CHECK_THROWS_WITH(check_job(m, c, 5 * 16 * 8, p, kTrain),
                    Equals("--tp: expected a divisor of the model's attention heads (96), got 5"));
  p = kPar; p.vp = 7;
  CHECK_THROWS_WITH(check_job(m, c, 1024, p, kTrain),
                    Equals("--vp: expected pp*vp <= the model's layers + 2 (96 + 2: the embedding and the loss may "
                           "take a virtual stage each), got 16*7"));
  // Megatron-Core's --account-for-embedding/loss-in-pipeline-split: 98 virtual stages for 96 layers.
  p = kPar; p.pp = 2; p.dp = 64; p.vp = 49;
  CHECK_NOTHROW(check_job(m, c, 1024, p, kTrain));
  p.vp = 50;
  CHECK_THROWS_WITH(check_job(m, c, 1024, p, kTrain), Contains("expected pp*vp <= the model's layers + 2"));
  p = kPar; p.pp = 97; p.tp = 1; p.dp = 1;  // without interleaving a stage needs a layer
  CHECK_THROWS_WITH(check_job(m, c, 97, p, Training{.micro_batch = 1, .global_batch = 97, .seq_len = 2048}),
                    Contains("--pp: expected pp*vp <= the model's layers + 2"));
  p = kPar; p.ep = 2;
  CHECK_THROWS_WITH(check_job(m, c, 1024, p, kTrain),
                    Equals("--ep: expected 1 for a dense model (no moe_experts), got 2"));
  Training t = kTrain; t.global_batch = 1530;
  CHECK_THROWS_WITH(check_job(m, c, 1024, kPar, t), Equals("--gbs: expected a multiple of mbs*dp (1*8 = 8), got 1530"));
  t = kTrain; t.precision = Dtype::fp8;
  CHECK_THROWS_WITH(check_job(m, c, 1024, kPar, t),
                    Equals("--precision: expected a precision the GPU supports (A100 has no fp8 tensor cores), got fp8"));
  p = kPar; p.tp = 1; p.dp = 64; p.sequence_parallel = true;
  CHECK_THROWS_WITH(check_job(m, c, 1024, p, kTrain),
                    Equals("--sp: expected tensor parallelism (tp > 1) for sequence parallelism, got tp = 1"));
  p = kPar; p.cp = 2; p.dp = 4; t = kTrain; t.seq_len = 2047;
  CHECK_THROWS_WITH(check_job(m, c, 1024, p, t),
                    Equals("--seq: expected a multiple of 2*cp (4, context parallelism splits the sequence in 2*cp chunks), got 2047"));
  p = kPar; p.vp = 2; t = kTrain; t.global_batch = 8 * 20;  // 20 micro-batches, pp 16
  CHECK_THROWS_WITH(check_job(m, c, 1024, p, t),
                    Equals("--gbs: expected micro-batches per replica (gbs/(mbs*dp) = 20) to be a multiple of pp (16) for the interleaved schedule"));
}

TEST_CASE("spec::check_job: GQA kv_heads and MoE expert rules", "[spec]") {
  // Llama-3-70B: 64 heads, 8 kv heads (Meta Llama 3 model card).
  Model m{.name = "llama", .layers = 80, .hidden = 8192, .heads = 64, .kv_heads = 8, .head_dim = 128,
          .ffn_hidden = 28672, .vocab = 128256};
  Parallel p{.tp = 16, .pp = 1, .dp = 1};
  Training t{.micro_batch = 1, .global_batch = 1};
  CHECK_THROWS_WITH(check_job(m, a100_cluster(), 16, p, t),
                    Equals("--tp: expected a divisor of the model's kv_heads (8, Megatron-LM requires num_query_groups % tp == 0), got 16"));
  // Mixtral 8x7B: 8 experts.
  m.moe_experts = 8; m.moe_topk = 2; m.moe_ffn_hidden = 14336;
  p = Parallel{.tp = 1, .pp = 1, .dp = 4, .ep = 3};
  CHECK_THROWS_WITH(check_job(m, a100_cluster(), 4, p, Training{.micro_batch = 1, .global_batch = 4}),
                    Equals("--ep: expected a divisor of the model's experts (8), got 3"));
  p.ep = 8;
  CHECK_THROWS_WITH(check_job(m, a100_cluster(), 4, p, Training{.micro_batch = 1, .global_batch = 4}),
                    Equals("--ep: expected ep*etp (8*1) to divide tp*cp*dp (4; the experts' layout folds over each "
                           "pipeline stage's ranks), got 8"));
  // MoE parallel folding: Qwen3-235B on 256 H100s (Megatron-Bridge 25.11: TP 2, PP 8, EP 32, DP 16)
  // is valid with expert TP 1 (32 x 1 divides 2 x 16) but not with Megatron's default etp = tp.
  m = Model{.name = "qwen3", .layers = 96, .hidden = 4096, .heads = 64, .kv_heads = 4, .head_dim = 128,
            .ffn_hidden = 12288, .vocab = 151936, .moe_experts = 128, .moe_topk = 8, .moe_ffn_hidden = 1536};
  p = Parallel{.tp = 2, .pp = 8, .dp = 16, .ep = 32, .etp = 1, .sequence_parallel = true};
  Training q{.micro_batch = 1, .global_batch = 2048, .seq_len = 4096};
  CHECK_NOTHROW(check_job(m, a100_cluster(), 256, p, q));
  p.etp = 0;
  CHECK_THROWS_WITH(check_job(m, a100_cluster(), 256, p, q), Contains("--ep: expected ep*etp (32*2) to divide tp*cp*dp (32"));
  p.etp = 5;
  CHECK_THROWS_WITH(check_job(m, a100_cluster(), 256, p, q),
                    Equals("--etp: expected a divisor of the experts' ffn width (1536), got 5"));
}

TEST_CASE("spec::check_job: explicit per-stage layer split", "[spec]") {
  // Llama 3 paper: 126 layers on 16 stages, first and last one layer fewer (7 + 14*8 + 7 = 126).
  Model m{.name = "405b", .layers = 126, .hidden = 16384, .heads = 128, .kv_heads = 8, .head_dim = 128,
          .ffn_hidden = 53248, .vocab = 128256};
  Parallel p{.tp = 8, .pp = 16, .dp = 1};
  p.stage_layers.assign(16, 8);
  p.stage_layers.front() = 7;
  p.stage_layers.back() = 7;
  Training t{.micro_batch = 1, .global_batch = 16, .seq_len = 8192};
  CHECK_NOTHROW(check_job(m, a100_cluster(), 128, p, t));
  p.stage_layers.back() = 8;
  CHECK_THROWS_WITH(check_job(m, a100_cluster(), 128, p, t),
                    Equals("--stage_layers: expected layers summing to the model's 126, got 127"));
  FieldNamer case_namer = [](const std::string& f) { return "runs.json:/cases/3/parallel/" + f; };
  CHECK_THROWS_WITH(check_job(m, a100_cluster(), 128, p, t, case_namer),
                    Equals("runs.json:/cases/3/parallel/stage_layers: expected layers summing to the model's 126, got 127"));
}
