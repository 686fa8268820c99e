#include <catch2/catch.hpp>
#include <algorithm>

#include <string>
#include <vector>

#include "core/errors.h"
#include "helpers.h"
#include "imports/imports.h"

using dtsim::imports::from_nemo;
using dtsim::imports::Imported;
using Catch::Matchers::Equals;
using Catch::Matchers::VectorContains;
using Flags = std::vector<std::string>;

TEST_CASE("imports::from_nemo: the Llama 3 8B recipe", "[imports]") {
  std::string path = dtsim::test::source_path("examples/imports/nemo-llama3-8b.yaml");
  Imported r = from_nemo(dtsim::test::read_text(path), path);
  // 8 nodes x 8 devices = 64 GPUs (dp = 64 / (tp 1 x pp 1 x cp 2) = 32, 512 / 32 = 16 micro-batches);
  // bf16-mixed; distributed_fused_adam shards the optimizer states (ZeRO 1) with both overlaps on;
  // ub_tp_comm_overlap: false. The shape (32 x 4096, 32 heads, 8 query groups, FFN 14336,
  // fast-swiglu, RoPE, RMSNorm, bias false, untied) is llama3-8b; the YAML names only the
  // tokenizer, so the vocabulary is the preset's.
  CHECK_THAT(r.flags, Equals(Flags{"--model", "llama3-8b", "--gpus", "64", "--tp", "1", "--pp", "1", "--cp", "2",
                                   "--mbs", "1", "--gbs", "512", "--seq", "8192", "--precision", "bf16", "--zero", "1",
                                   "--tp-comm-overlap", "off", "--overlap-grad-reduce", "on", "--overlap-param-gather",
                                   "on", "--framework", "nemo"}));
  CHECK_FALSE(r.model.has_value());
  CHECK_THAT(r.notes, VectorContains(std::string("gpus = 8 nodes x 8 (trainer.num_nodes x trainer.devices)")));
  CHECK_THAT(r.notes, VectorContains(std::string(
                          "model = llama3-8b (the recipe's shape matches the preset; vocab 128256 from the preset, "
                          "tokenizer \"meta-llama/Meta-Llama-3-8B\" takes its size from its files)")));
  CHECK_THAT(r.ignored, VectorContains(std::string("exp_manager (logging, evaluation and checkpoints: not simulated)")));
  CHECK_THAT(r.ignored, VectorContains(std::string("model.optim.lr (no effect on step time)")));
  CHECK_THAT(r.ignored, VectorContains(std::string("model.data (data and tokenizer: not simulated)")));
  CHECK_THAT(r.ignored, VectorContains(std::string("model.use_flash_attention (attention kernel: dtsim's default is flash)")));
}

TEST_CASE("imports::from_nemo: a pipeline layout sets --pipeline-layout and vp", "[imports]") {
  std::string yaml = "model:\n  pipeline_model_parallel_size: 16\n"
                     "  pipeline_model_parallel_layout: 'Et*4|(t*4|)*14tmL'\n";
  Imported r = from_nemo(yaml, "dsv3.yaml");
  auto at = std::find(r.flags.begin(), r.flags.end(), "--pipeline-layout");
  REQUIRE(at != r.flags.end());
  CHECK(*(at + 1) == "Et*4|(t*4|)*14tmL");
  auto vp = std::find(r.flags.begin(), r.flags.end(), "--vp");
  REQUIRE(vp != r.flags.end());
  CHECK(*(vp + 1) == "1");
  CHECK_THROWS_WITH(from_nemo("model:\n  pipeline_model_parallel_size: 16\n  pipeline_model_parallel_layout: 'E(t|'\n",
                              "bad.yaml"),
                    Catch::Matchers::Contains("bad.yaml") && Catch::Matchers::Contains("groups do not nest"));
}

TEST_CASE("imports::from_nemo: a Megatron-Bridge config naming its provider", "[imports]") {
  const std::string yaml = R"(model:
  _target_: megatron.bridge.models.llama.llama_provider.Llama3ModelProvider70B
  tensor_model_parallel_size: 4
  pipeline_model_parallel_size: 4
  virtual_pipeline_model_parallel_size: 5
  context_parallel_size: 2
  sequence_parallel: true
  seq_length: 8192
  recompute_granularity: full
  recompute_method: block
  recompute_num_layers: 2
  fp8: hybrid
  bf16: true
train:
  train_iters: 1000
  global_batch_size: 512
  micro_batch_size: 1
optimizer:
  optimizer: adam
  lr: 0.0003
  use_distributed_optimizer: true
ddp:
  overlap_grad_reduce: true
  overlap_param_gather: true
)";
  Imported r = from_nemo(yaml, "bridge.yaml");
  CHECK_THAT(r.flags, Equals(Flags{"--tp", "4", "--pp", "4", "--vp", "5", "--cp", "2", "--sp", "--mbs", "1", "--gbs", "512",
                                   "--seq", "8192", "--precision", "fp8", "--recompute", "full", "--recompute-layers", "2",
                                   "--zero", "1", "--overlap-grad-reduce", "on", "--overlap-param-gather", "on",
                                   "--framework", "nemo-megatron-bridge"}));
  CHECK_THAT(r.notes, VectorContains(std::string("gpus: not in the recipe (the launcher decides them); pass --gpus")));
  CHECK_THAT(r.notes, VectorContains(std::string(
                          "model: the recipe names \"megatron.bridge.models.llama.llama_provider.Llama3ModelProvider70B\" "
                          "without its shape; pass the matching --model")));
  CHECK_THAT(r.ignored, VectorContains(std::string("optimizer.lr (no effect on step time)")));
}

TEST_CASE("imports::from_nemo: selective recompute with its modules", "[imports]") {
  const std::string yaml = R"(model:
  recompute_granularity: selective
  recompute_modules: [layernorm, moe_act]
train:
  global_batch_size: 512
)";
  Imported r = from_nemo(yaml, "bridge.yaml");
  CHECK_THAT(r.flags, VectorContains(std::string("layernorm,moe_act")));
  CHECK_THAT(r.flags, VectorContains(std::string("--recompute-modules")));
  CHECK_THROWS_WITH(from_nemo("model:\n  recompute_granularity: selective\n  recompute_modules: attn\n", "b.yaml"),
                    Catch::Matchers::Contains("expected a list of module names for model.recompute_modules"));
  CHECK_THROWS_WITH(from_nemo("model:\n  recompute_granularity: selective\n  recompute_modules: [mlp, experts]\n", "b.yaml"),
                    Catch::Matchers::Contains("expected distinct modules among core_attn"));
}

TEST_CASE("imports::from_nemo: a provider with its whole shape matches its preset", "[imports]") {
  // Llama 3 70B as Megatron-Bridge's provider dumps it: gated SiLU (SwiGLU), no biases, untied.
  const std::string yaml = R"(model:
  num_layers: 80
  hidden_size: 8192
  ffn_hidden_size: 28672
  num_attention_heads: 64
  num_query_groups: 8
  gated_linear_unit: true
  activation_func:
    _target_: torch.nn.functional.silu
    _call_: false
  normalization: RMSNorm
  add_bias_linear: false
  share_embeddings_and_output_weights: false
  position_embedding_type: rope
  vocab_size: 128256
  seq_length: 8192
  hidden_dropout: 0.0
  attention_dropout: 0.0
train:
  global_batch_size: 128
)";
  Imported r = from_nemo(yaml, "bridge.yaml");
  CHECK_THAT(r.flags, Equals(Flags{"--model", "llama3-70b", "--gbs", "128", "--seq", "8192", "--framework",
                                   "nemo-megatron-bridge"}));
  CHECK_THAT(r.ignored, VectorContains(std::string("model.activation_func._call_ (not read by dtsim)")));
  // Without the dropout keys the provider would train with Megatron-Core's 0.1: not the preset.
  std::string with_dropout = yaml;
  with_dropout.replace(with_dropout.find("hidden_dropout: 0.0"), 19, "hidden_dropout: 0.1");
  Imported d = from_nemo(with_dropout, "bridge.yaml");
  REQUIRE(d.model.has_value());
  CHECK(d.model->hidden_dropout == 0.1);
  CHECK(d.model->attention_dropout == 0.0);
  std::string bad = yaml;
  bad.replace(bad.find("attention_dropout: 0.0"), 22, "attention_dropout: 2");
  REQUIRE_THROWS_WITH(from_nemo(bad, "bridge.yaml"),
                      Catch::Matchers::StartsWith("bridge.yaml:") &&
                          Catch::Matchers::EndsWith("expected a probability in [0, 1) for model.attention_dropout, got \"2\""));
}

TEST_CASE("imports::from_nemo: NeMo 2.0 places and OmegaConf interpolations", "[imports]") {
  const std::string yaml = R"(trainer:
  devices: [0, 1, 2, 3]
  num_nodes: 2
  strategy:
    tensor_model_parallel_size: ${trainer.strategy.pipeline_model_parallel_size}
    pipeline_model_parallel_size: 2
  plugins:
    precision: 16-mixed
data:
  seq_length: 4096
  micro_batch_size: 2
  global_batch_size: ${.micro_batch_size}
)";
  Imported r = from_nemo(yaml, "nemo2.yaml");
  // 2 nodes x 4 listed devices = 8; tp follows pp (2); gbs follows micro_batch_size (2).
  CHECK_THAT(r.flags, Equals(Flags{"--gpus", "8", "--tp", "2", "--pp", "2", "--mbs", "2", "--gbs", "2", "--seq", "4096",
                                   "--precision", "fp16", "--framework", "nemo"}));
}

TEST_CASE("imports::from_nemo: bad input names the line", "[imports]") {
  REQUIRE_THROWS_WITH(from_nemo("model:\n  tensor_model_parallel_size: eight\n", "x.yaml"),
                      "x.yaml:2: expected an integer for model.tensor_model_parallel_size, got \"eight\"");
  REQUIRE_THROWS_WITH(from_nemo("model:\n  a: 1\n b: 2\n", "x.yaml"),
                      "x.yaml:3: malformed YAML at column 2: did not find expected key (while parsing a block mapping)");
  REQUIRE_THROWS_WITH(from_nemo("model:\n  pipeline_model_parallel_size: [1, 2\n", "x.yaml"),
                      "x.yaml:3: malformed YAML at column 1: did not find expected ',' or ']' (while parsing a flow sequence)");
  REQUIRE_THROWS_WITH(from_nemo("model:\n  tensor_model_parallel_size: ${oc.env:TP}\n", "x.yaml"),
                      "x.yaml:2: expected an integer for model.tensor_model_parallel_size, got \"${oc.env:TP}\" (an "
                      "interpolation dtsim does not resolve)");
  REQUIRE_THROWS_WITH(from_nemo("model:\n  sequence_parallel: 1\n", "x.yaml"),
                      "x.yaml:2: expected true or false for model.sequence_parallel, got \"1\"");
  REQUIRE_THROWS_WITH(from_nemo("trainer:\n  precision: 8\n", "x.yaml"),
                      "x.yaml:2: expected one of 16, 16-mixed, bf16, bf16-mixed, 32 for trainer.precision, got \"8\"");
  REQUIRE_THROWS_WITH(from_nemo("model:\n  num_layers: 1\nmodel:\n  num_layers: 2\n", "x.yaml"),
                      "x.yaml:3: expected each key once in a mapping, got \"model\" again");
  REQUIRE_THROWS_WITH(from_nemo("a: &x [1, *x]\n", "x.yaml"),
                      "x.yaml:1: expected an anchor &x defined (and closed) before the alias *x, got none");
  REQUIRE_THROWS_WITH(from_nemo("- model\n", "x.yaml"),
                      "x.yaml:1: expected a mapping of sections (trainer:, model:, ...), got a sequence");
  REQUIRE_THROWS_WITH(from_nemo("", "x.yaml"), "x.yaml:1: expected a mapping of sections (trainer:, model:, ...), got an empty document");
}

TEST_CASE("imports::from_nemo: aliases are shared, not copied", "[imports]") {
  // Nine levels of ten aliases each would be 10^9 nodes if copied.
  std::string yaml = "l0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 9; ++i) {
    std::string prev = "*a" + std::to_string(i - 1);
    yaml += "l" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) yaml += prev + (k < 9 ? ", " : "]\n");
  }
  yaml += "model:\n  tensor_model_parallel_size: 2\n";
  CHECK_THAT(from_nemo(yaml, "x.yaml").flags, Equals(Flags{"--tp", "2"}));
}

TEST_CASE("imports::from_nemo: the userbuffer config's forward reduce-scatter overlaps", "[imports]") {
  // NeMo 1.x ub_tp_comm_overlap_cfg (dgxc-benchmarking gpt3_175b_hydra.yaml's form): proj_fprop
  // pipelined on 24 SMs; fc2_fprop by ring exchange.
  const std::string yaml = R"(model:
  tensor_model_parallel_size: 4
  ub_tp_comm_overlap: true
  ub_tp_comm_overlap_cfg:
    qkv_fprop:
      method: ring_exchange
      aggregate: 0
    proj_fprop:
      method: pipeline
      num_sm: 24
      cga_size: 2
      num_splits: 4
      set_sm_margin: 1
    fc2_fprop:
      method: ring_exchange
      aggregate: 1
)";
  Imported r = from_nemo(yaml, "ub.yaml");
  auto at = std::find(r.flags.begin(), r.flags.end(), "--tp-overlap-rs");
  REQUIRE(at != r.flags.end());
  CHECK(*(at + 1) == "24,ring");
  CHECK(std::find(r.flags.begin(), r.flags.end(), "--tp-comm-overlap") != r.flags.end());
  // Without the config: no flag (the stack's, Transformer Engine's defaults).
  Imported plain = from_nemo("model:\n  tensor_model_parallel_size: 4\n  ub_tp_comm_overlap: true\n", "ub.yaml");
  CHECK(std::find(plain.flags.begin(), plain.flags.end(), "--tp-overlap-rs") == plain.flags.end());
  REQUIRE_THROWS_WITH(from_nemo("model:\n  ub_tp_comm_overlap_cfg:\n    proj_fprop:\n      method: bulk\n", "ub.yaml"),
                      Catch::Matchers::EndsWith("expected one of pipeline, ring_exchange for "
                                                "model.ub_tp_comm_overlap_cfg.proj_fprop.method, got \"bulk\""));
}

TEST_CASE("imports::from_nemo: LoRA fine-tuning, NeMo 1.x and Megatron-Bridge", "[imports]") {
  // NeMo 1.x (NeMo-Framework-Launcher conf/peft/llama/sft.yaml): lora_tuning without target_modules
  // adapts the fused QKV only (peft_config.py's default attention_qkv).
  std::string v1 = "trainer:\n  devices: 8\nmodel:\n  global_batch_size: 32\n  data:\n    train_ds:\n"
                   "      packed_sequence: true\n  peft:\n    peft_scheme: lora\n    lora_tuning:\n      adapter_dim: 32\n";
  Imported a = from_nemo(v1, "sft.yaml");
  CHECK_THAT(a.flags, Equals(Flags{"--gpus", "8", "--gbs", "32", "--framework", "nemo", "--peft", "lora", "--lora-rank",
                                   "32", "--lora-targets", "linear_qkv"}));
  CHECK_THAT(a.notes, VectorContains(std::string("packed sequences: pass --sample-len with the data's mean sample "
                                                 "length (attention runs within each sample)")));
  // NeMo 1.x group names map onto Megatron-Core's linears.
  Imported b = from_nemo(dtsim::test::replaced(v1, "adapter_dim: 32\n", "adapter_dim: 16\n      target_modules: [attention, mlp_fc2]\n"),
                         "sft.yaml");
  CHECK_THAT(b.flags, VectorContains(std::string("linear_qkv,linear_proj,linear_fc2")));
  CHECK_THAT(b.flags, VectorContains(std::string("16")));
  // Megatron-Bridge: a peft: section naming its LoRA class; its defaults are dtsim's.
  Imported c = from_nemo("train:\n  global_batch_size: 64\npeft:\n  _target_: megatron.bridge.peft.lora.LoRA\n  dim: 8\n"
                         "  target_modules: [linear_qkv, linear_proj]\n",
                         "bridge.yaml");
  CHECK_THAT(c.flags, Equals(Flags{"--gbs", "64", "--framework", "nemo-megatron-bridge", "--peft", "lora", "--lora-rank",
                                   "8", "--lora-targets", "linear_qkv,linear_proj"}));
  // Another PEFT scheme is said not to be modelled; a bad target names its line.
  Imported d = from_nemo(dtsim::test::replaced(v1, "peft_scheme: lora", "peft_scheme: ptuning"), "sft.yaml");
  CHECK_THAT(d.notes, VectorContains(std::string("peft: scheme \"ptuning\" is not modelled (LoRA is); simulated as full "
                                                 "training")));
  CHECK_THROWS_WITH(from_nemo(dtsim::test::replaced(v1, "adapter_dim: 32\n", "adapter_dim: 32\n      target_modules: [qkv]\n"),
                              "sft.yaml"),
                    Catch::Matchers::StartsWith("sft.yaml:") &&
                        Catch::Matchers::Contains("expected LoRA target modules") && Catch::Matchers::Contains("\"qkv\""));
}
