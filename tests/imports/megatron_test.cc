#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "core/errors.h"
#include "helpers.h"
#include "imports/imports.h"

using dtsim::imports::from_megatron;
using dtsim::imports::Imported;
using Catch::Matchers::Contains;
using Catch::Matchers::Equals;
using Catch::Matchers::VectorContains;
using Flags = std::vector<std::string>;

namespace {

// The flags of a script that runs `python pretrain_gpt.py ARGS` (no launcher: no --gpus).
Imported args(const std::string& a) { return from_megatron("python pretrain_gpt.py " + a + "\n", "x.sh"); }

bool has_note(const Imported& r, const std::string& text) {
  return std::any_of(r.notes.begin(), r.notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

}  // namespace

TEST_CASE("imports::from_megatron: the GPT-3 175B launch script", "[imports]") {
  std::string path = dtsim::test::source_path("examples/imports/megatron-gpt3-175b.sh");
  Imported r = from_megatron(dtsim::test::read_text(path), path);
  // 128 nodes x 8 GPUs (torchrun --nnodes 128 --nproc_per_node 8, through $NUM_NODES and
  // $GPUS_PER_NODE) = 1024; TP 8 and PP 16 through $TP and $PP; no --use-distributed-optimizer, so
  // ZeRO 0; --recompute-granularity full --recompute-method uniform recomputes every layer. The
  // shape (96 x 12288, 96 heads, FFN 4h, seq 2048 learned positions, tied, LayerNorm, biases) with
  // GPT2BPETokenizer's 50257 tokens padded to a multiple of 128 x 8 = 1024 -> 51200 is gpt3-175b.
  CHECK_THAT(r.flags, Equals(Flags{"--model", "gpt3-175b", "--gpus", "1024", "--tp", "8", "--pp", "16", "--mbs", "1",
                                   "--gbs", "1536", "--seq", "2048", "--precision", "fp16", "--recompute", "full",
                                   "--zero", "0"}));
  CHECK_FALSE(r.model.has_value());
  CHECK_THAT(r.notes, VectorContains(std::string("gpus = 128 nodes x 8 (torchrun --nnodes x --nproc_per_node)")));
  CHECK_THAT(r.notes, VectorContains(std::string("model = gpt3-175b (the script's shape matches the preset)")));
  CHECK_THAT(r.notes, VectorContains(std::string(
                          "vocab = 51200 (GPT2BPETokenizer's 50257, padded to a multiple of 128 x 8 = 1024 as Megatron-LM pads)")));
  CHECK_THAT(r.ignored, VectorContains(std::string("--use-flash-attn (dtsim's default attention is flash)")));
  CHECK_THAT(r.ignored, VectorContains(std::string("--lr (no effect on step time)")));
  CHECK_THAT(r.ignored, VectorContains(std::string("--data-path (data and tokenizer files: not simulated)")));
  CHECK_THAT(r.ignored,
             VectorContains(std::string("--rampup-batch-size (batch-size ramp-up: dtsim simulates a step at the full global batch)")));
}

TEST_CASE("imports::from_megatron: an args file with GQA, SwiGLU, interleaving and the distributed optimizer", "[imports]") {
  const std::string file = R"(--tensor-model-parallel-size 4 --pipeline-model-parallel-size 2
--num-layers 32 --hidden-size 4096 --num-attention-heads 32   # Llama 3 8B
--group-query-attention --num-query-groups 8 --ffn-hidden-size 14336 --swiglu
--normalization RMSNorm --disable-bias-linear --untie-embeddings-and-output-weights
--position-embedding-type rope --max-position-embeddings 8192 --seq-length 8192
--tokenizer-type HuggingFaceTokenizer --tokenizer-model meta-llama/Meta-Llama-3-8B --vocab-size 128256
--make-vocab-size-divisible-by 1 --num-layers-per-virtual-pipeline-stage 4
--bf16 --use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather --sequence-parallel
--recompute-activations --micro-batch-size 1 --global-batch-size 1024
--attention-dropout 0.0 --hidden-dropout 0.0
)";
  Imported r = from_megatron(file, "llama.args");
  // vp = 32 layers / 2 stages / 4 layers per chunk = 4; vocab 128256 is a multiple of 1 x 4.
  CHECK_THAT(r.flags, Equals(Flags{"--model", "llama3-8b", "--tp", "4", "--pp", "2", "--vp", "4", "--sp", "--mbs", "1",
                                   "--gbs", "1024", "--seq", "8192", "--precision", "bf16", "--recompute", "selective",
                                   "--zero", "1", "--overlap-grad-reduce", "on", "--overlap-param-gather", "on"}));
  CHECK(has_note(r, "gpus: the script does not say"));
  CHECK_THAT(r.ignored, VectorContains(std::string("--tokenizer-model (data and tokenizer files: not simulated)")));
}

TEST_CASE("imports::from_megatron: a custom pipeline layout sets the layout and vp", "[imports]") {
  // DeepSeek-V3's H100 layout: 32 virtual stages over pp 8, so vp 4 (Megatron derives it too).
  Imported r = args("--pipeline-model-parallel-size 8 --pipeline-model-parallel-layout 'Et|(tt|)*30mL'");
  CHECK_THAT(r.flags, VectorContains(std::string("--pipeline-layout")));
  CHECK_THAT(r.flags, VectorContains(std::string("Et|(tt|)*30mL")));
  auto vp = std::find(r.flags.begin(), r.flags.end(), "--vp");
  REQUIRE(vp != r.flags.end());
  CHECK(*(vp + 1) == "4");
  CHECK(has_note(r, "pipeline layout \"Et|(tt|)*30mL\": 32 virtual stages, vp = 4"));
  REQUIRE_THROWS_WITH(args("--pipeline-model-parallel-size 8 --virtual-pipeline-model-parallel-size 2 "
                           "--pipeline-model-parallel-layout 'Et|(tt|)*30mL'"),
                      Contains("expected 4 virtual stages per rank (the layout's 32 over pp 8), got 2"));
  REQUIRE_THROWS_WITH(args("--pipeline-model-parallel-size 3 --pipeline-model-parallel-layout 'Et|(tt|)*30mL'"),
                      Contains("expected a multiple of the pipeline size (3) stages, got 32"));
}

TEST_CASE("imports::from_megatron: a shape no preset has comes back as a model, with what differs", "[imports]") {
  // Megatron pads 128256 to a multiple of 128 x 4 = 512: ceil(128256 / 512) = 251 -> 128512, one
  // field away from llama3-8b (128256).
  Imported r = args("--tensor-model-parallel-size 4 --num-layers 32 --hidden-size 4096 --num-attention-heads 32 "
                    "--group-query-attention --num-query-groups 8 --ffn-hidden-size 14336 --swiglu --normalization "
                    "RMSNorm --disable-bias-linear --untie-embeddings-and-output-weights --position-embedding-type rope "
                    "--vocab-size 128256 --attention-dropout 0 --hidden-dropout 0");
  REQUIRE(r.model.has_value());
  CHECK(r.model->vocab == 128512);
  CHECK(r.model->kv_heads == 8);
  CHECK(r.model->head_dim == 128);  // 4096 / 32
  CHECK(r.model->activation == dtsim::spec::Activation::swiglu);
  CHECK(r.model->linear_bias == dtsim::spec::LinearBias::none);
  CHECK(r.model->name == "imported from x.sh");
  CHECK_THAT(r.flags, Equals(Flags{"--tp", "4", "--zero", "0"}));
  CHECK_THAT(r.notes, VectorContains(std::string("model: the architecture the script defines (no preset has its shape; "
                                                 "nearest preset llama3-8b differs in vocab 128512 (preset 128256))")));
}

TEST_CASE("imports::from_megatron: Megatron-LM's defaults for an absent FFN size and query groups", "[imports]") {
  // --swiglu without --ffn-hidden-size: int(4 * 4096 * 2 / 3 / 64) * 64 = int(170.67) * 64 = 10880.
  Imported r = args("--num-layers 2 --hidden-size 4096 --num-attention-heads 32 --swiglu --group-query-attention "
                    "--seq-length 1024 --vocab-size 1000");
  REQUIRE(r.model.has_value());
  CHECK(r.model->ffn_hidden == 10880);
  CHECK(r.model->kv_heads == 1);           // --num-query-groups defaults to 1
  CHECK(r.model->max_position == 1024);    // learned positions: the sequence length
  CHECK(r.model->vocab == 1024);           // 1000 padded to a multiple of 128 x 1
  CHECK(r.model->tied_embeddings);
  CHECK(has_note(r, "ffn_hidden = 8 x hidden / 3 rounded down to a multiple of 64 = 10880"));
}

TEST_CASE("imports::from_megatron: variables, strings, defaults and arithmetic expand as bash would", "[imports]") {
  const std::string script = R"(#!/bin/bash
export TP=${TP:-2}            # the script's default: the environment may override it at run time
PP=4; NNODES=2
GPUS_PER_NODE=8
WORLD_SIZE=$(( GPUS_PER_NODE * NNODES ))
MODEL_ARGS="--num-layers 24 \
  --hidden-size 2048 --num-attention-heads 16"
PAR=(--tensor-model-parallel-size "$TP")
PAR+=(--pipeline-model-parallel-size ${PP})
echo 'not a command: --fp16' > /dev/null 2>&1
python -u pretrain_gpt.py $MODEL_ARGS "${PAR[@]}" --micro-batch-size=2 --bf16 \
    --global-batch-size $(( 64 * 2 ))
)";
  Imported r = from_megatron(script, "x.sh");
  // No launcher options: WORLD_SIZE = 8 x 2 = 16.
  CHECK_THAT(r.flags, Equals(Flags{"--gpus", "16", "--tp", "2", "--pp", "4", "--mbs", "2", "--gbs", "128",
                                   "--precision", "bf16", "--zero", "0"}));
  CHECK_THAT(r.notes, VectorContains(std::string("gpus = 16 (the script's WORLD_SIZE)")));
}

TEST_CASE("imports::from_megatron: the job size from each launcher", "[imports]") {
  struct Case {
    const char* launcher;
    const char* gpus;
    const char* note;
  };
  const Case cases[] = {
      {"torchrun --nproc-per-node=4 --nnodes=2 --rdzv-backend c10d", "8",
       "gpus = 2 nodes x 4 (torchrun --nnodes x --nproc-per-node)"},
      {"python -m torch.distributed.launch --nproc_per_node 8", "8",
       "gpus = 1 nodes x 8 (python -m torch.distributed.launch without a node count: 1 node x --nproc_per_node)"},
      {"deepspeed --num_nodes 2 --num_gpus 8", "16", "gpus = 2 nodes x 8 (deepspeed --num_nodes x --num_gpus)"},
      {"srun -N 4 --ntasks-per-node 8 python", "32", "gpus = 4 nodes x 8 (srun -N x --ntasks-per-node)"},
      {"mpirun -np 16 -x NCCL_DEBUG=INFO python", "16", "gpus = 16 (mpirun -np)"},
      // srun starts one torchrun per node; torchrun's own counts size the job.
      {"srun --nodes=4 --ntasks-per-node=1 torchrun --nnodes 4 --nproc_per_node 8", "32",
       "gpus = 4 nodes x 8 (torchrun --nnodes x --nproc_per_node)"},
  };
  for (const Case& c : cases) {
    INFO(c.launcher);
    Imported r = from_megatron(std::string(c.launcher) + " pretrain_gpt.py --fp16\n", "x.sh");
    CHECK_THAT(r.flags, Equals(Flags{"--gpus", c.gpus, "--precision", "fp16", "--zero", "0"}));
    CHECK_THAT(r.notes, VectorContains(std::string(c.note)));
  }
}

TEST_CASE("imports::from_megatron: what comes from outside the script is not guessed", "[imports]") {
  Imported r = from_megatron("torchrun --nnodes $SLURM_NNODES --nproc_per_node 8 pretrain_gpt.py \"$@\" --fp16 $EXTRA\n",
                             "x.sh");
  CHECK_THAT(r.flags, Equals(Flags{"--precision", "fp16", "--zero", "0"}));
  CHECK_THAT(r.notes, VectorContains(std::string("gpus: --nnodes is \"$SLURM_NNODES\", set outside the script; pass --gpus")));
  CHECK_THAT(r.ignored, VectorContains(std::string("\"$@\" (set outside the script: what it holds is not imported)")));
  CHECK_THAT(r.ignored, VectorContains(std::string("\"$EXTRA\" (set outside the script: what it holds is not imported)")));
  // A value the job needs, from outside: an error naming it where it enters the script ($1 on line 1).
  REQUIRE_THROWS_WITH(from_megatron("TP=$1\npython pretrain_gpt.py --tensor-model-parallel-size=$TP\n", "x.sh"),
                      "x.sh:1: expected an integer for --tensor-model-parallel-size, got \"$1\" (set outside the script)");
  REQUIRE_THROWS_WITH(from_megatron("python pretrain_gpt.py --tensor-model-parallel-size $TP\n", "x.sh"),
                      "x.sh:1: expected an integer for --tensor-model-parallel-size, got \"$TP\" (set outside the script)");
}

TEST_CASE("imports::from_megatron: recompute, sequence parallelism and precision variants", "[imports]") {
  CHECK_THAT(args("--recompute-granularity full --recompute-method block --recompute-num-layers 2").flags,
             Equals(Flags{"--recompute", "full", "--recompute-layers", "2", "--zero", "0"}));
  CHECK_THAT(args("--checkpoint-activations").flags, Equals(Flags{"--recompute", "full", "--zero", "0"}));
  Imported selective = args("--recompute-activations --recompute-method uniform");
  CHECK_THAT(selective.flags, Equals(Flags{"--recompute", "selective", "--zero", "0"}));
  CHECK_THAT(selective.ignored,
             VectorContains(std::string("--recompute-method (applies only with --recompute-granularity full)")));
  // --recompute-modules (nargs '*') with selective granularity; unknown names are an error.
  CHECK_THAT(args("--recompute-granularity selective --recompute-modules layernorm moe_act").flags,
             Equals(Flags{"--recompute", "selective", "--recompute-modules", "layernorm,moe_act", "--zero", "0"}));
  CHECK_THAT(args("--recompute-granularity full --recompute-modules moe_act").ignored,
             VectorContains(std::string("--recompute-modules (applies only with --recompute-granularity selective)")));
  CHECK_THROWS_WITH(args("--recompute-granularity selective --recompute-modules moe_act router"),
                    Catch::Matchers::Contains("expected distinct modules among core_attn"));
  // Megatron-LM turns sequence parallelism off at TP 1.
  Imported sp = args("--sequence-parallel --tensor-model-parallel-size 1");
  CHECK_THAT(sp.flags, Equals(Flags{"--tp", "1", "--zero", "0"}));
  CHECK(has_note(sp, "sp: off"));
  CHECK_THAT(args("--bf16 --fp8-format hybrid --fp8-recipe tensorwise").flags,
             Equals(Flags{"--precision", "fp8", "--zero", "0", "--fp8-recipe", "current"}));
  CHECK(has_note(args(""), "precision: neither --fp16 nor --bf16"));
}

TEST_CASE("imports::from_megatron: an MoE script imports as its preset with expert parallelism", "[imports]") {
  // Mixtral 8x7B: 32 x 4096, 32 heads, 8 KV heads, 8 experts of 14336 (top-2), vocab 32000 (a
  // multiple of 128 x 1 already), RoPE, RMSNorm, no biases, untied.
  Imported r = args("--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --group-query-attention "
                    "--num-query-groups 8 --ffn-hidden-size 14336 --swiglu --num-experts 8 --moe-router-topk 2 "
                    "--expert-model-parallel-size 8 --normalization RMSNorm --disable-bias-linear "
                    "--untie-embeddings-and-output-weights --position-embedding-type rope --vocab-size 32000 "
                    "--attention-dropout 0.0 --hidden-dropout 0.0");
  CHECK_THAT(r.flags, Equals(Flags{"--model", "mixtral-8x7b", "--ep", "8", "--zero", "0"}));
}

TEST_CASE("imports::from_megatron: dropout is Megatron-LM's 0.1 unless the script sets it", "[imports]") {
  // Llama 3 8B's shape without --hidden-dropout / --attention-dropout trains with Megatron-LM's
  // defaults (0.1 each), which no Llama preset does: the model comes back with its dropout.
  const std::string shape = "--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --group-query-attention "
                            "--num-query-groups 8 --ffn-hidden-size 14336 --swiglu --normalization RMSNorm "
                            "--disable-bias-linear --untie-embeddings-and-output-weights --position-embedding-type rope "
                            "--vocab-size 128256 --make-vocab-size-divisible-by 1";
  Imported r = args(shape);
  REQUIRE(r.model.has_value());
  CHECK(r.model->hidden_dropout == 0.1);
  CHECK(r.model->attention_dropout == 0.1);
  CHECK_THAT(r.notes, VectorContains(std::string(
                          "model: the architecture the script defines (no preset has its shape; nearest preset llama3-8b "
                          "differs in hidden_dropout 0.1 (preset 0), attention_dropout 0.1 (preset 0))")));
  Imported z = args(shape + " --hidden-dropout 0 --attention-dropout 0.0");
  CHECK_FALSE(z.model.has_value());
  CHECK_THAT(z.flags, VectorContains(std::string("llama3-8b")));
  REQUIRE_THROWS_WITH(args(shape + " --hidden-dropout 1.5"),
                      "x.sh:1: expected a probability in [0, 1) for --hidden-dropout, got \"1.5\"");
  REQUIRE_THROWS_WITH(args(shape + " --attention-dropout none"),
                      "x.sh:1: expected a probability in [0, 1) for --attention-dropout, got \"none\"");
}

TEST_CASE("imports::from_megatron: bad input names the line and what was expected", "[imports]") {
  REQUIRE_THROWS_WITH(from_megatron("TP=8\n\ntorchrun pretrain_gpt.py \\\n  --tensor-model-parallel-size eight\n", "x.sh"),
                      "x.sh:4: expected an integer for --tensor-model-parallel-size, got \"eight\"");
  // An array element keeps its own line, wherever the array is expanded.
  REQUIRE_THROWS_WITH(from_megatron("A=(\n --pipeline-model-parallel-size 0\n)\npython pretrain_gpt.py ${A[@]}\n", "x.sh"),
                      "x.sh:2: expected an integer in [1, 65536] for --pipeline-model-parallel-size, got 0");
  REQUIRE_THROWS_WITH(from_megatron("echo hi\nARGS=\"--fp16\n", "x.sh"),
                      "x.sh:2: expected a closing \" for the quote opened here, got end of file");
  REQUIRE_THROWS_WITH(from_megatron("A=(--fp16\n--bf16\n", "x.sh"),
                      "x.sh:1: expected ) closing the array A=( opened here, got end of file");
  REQUIRE_THROWS_WITH(from_megatron("X=$(hostname\n", "x.sh"), "x.sh:1: expected ) closing $( opened here, got end of file");
  REQUIRE_THROWS_WITH(args("--fp16 --bf16"), "x.sh:1: expected one of --fp16 and --bf16, got both");
  REQUIRE_THROWS_WITH(args("--fp16 yes"), "x.sh:1: expected a flag after --fp16 (it takes no value), got \"yes\"");
  REQUIRE_THROWS_WITH(args("--micro-batch-size"), "x.sh:1: expected an integer after --micro-batch-size, got nothing");
  REQUIRE_THROWS_WITH(from_megatron("python pretrain_gpt.py \\\n --seq-length ''\n", "x.sh"),
                      "x.sh:2: expected an integer for --seq-length, got \"\"");
  REQUIRE_THROWS_WITH(args("--recompute-granularity some"),
                      "x.sh:1: expected one of full, selective for --recompute-granularity, got \"some\"");
  REQUIRE_THROWS_WITH(args("--recompute-granularity full --recompute-method block"),
                      "x.sh:1: expected --recompute-num-layers with --recompute-method block, got none");
  // 30 layers over 4 stages is not a whole number of layers per stage.
  REQUIRE_THROWS_WITH(args("--num-layers 30 --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 2"),
                      "x.sh:1: expected a divisor of the layers per pipeline stage (--num-layers 30 over "
                      "--pipeline-model-parallel-size 4) for --num-layers-per-virtual-pipeline-stage, got 2");
  REQUIRE_THROWS_WITH(args("--num-layers 2 --hidden-size 100 --num-attention-heads 7 --seq-length 8"),
                      "x.sh:1: expected a divisor of --hidden-size (100) for --num-attention-heads, got 7");
  REQUIRE_THROWS_WITH(from_megatron("cd /workspace\nls -l\n", "x.sh"),
                      "x.sh:1: expected a launch script running a Python training program (torchrun ... "
                      "pretrain_gpt.py ...) or an args file (--flag value ...), got a command \"cd\" and no Python program");
  REQUIRE_THROWS_WITH(from_megatron("", "x.sh"), Contains("x.sh:1: expected a launch script") && Contains("got no command"));
}

TEST_CASE("imports::from_megatron: broken copies of the example fail only with SpecError", "[imports]") {
  // Every 11th prefix of the script and a byte replaced every 17 bytes: each import either
  // succeeds or throws SpecError (never another exception, a crash or a hang).
  std::string text = dtsim::test::read_text(dtsim::test::source_path("examples/imports/megatron-gpt3-175b.sh"));
  int rejected = 0;
  auto run = [&](const std::string& t) {
    try {
      static_cast<void>(from_megatron(t, "x.sh"));
    } catch (const dtsim::SpecError&) {
      ++rejected;
    }
  };
  for (std::size_t n = 0; n < text.size(); n += 11) run(text.substr(0, n));
  for (std::size_t i = 0; i < text.size(); i += 17)
    for (char c : {'"', '\'', '$', '(', '\\', '{', '`', '\n'}) run(std::string(text).replace(i, 1, 1, c));
  CHECK(rejected > 0);
}
