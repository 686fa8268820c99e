#include "spec/job_rules.h"

#include <algorithm>
#include <numeric>

#include "core/errors.h"

namespace dtsim::spec {
namespace {

std::string str(std::int64_t v) { return std::to_string(v); }

void check_degrees(const Model& m, std::int64_t gpus, const Parallel& p, const FieldNamer& name) {
  if (gpus < 1) throw SpecError(name("gpus"), "expected an integer >= 1, got " + str(gpus));
  std::int64_t product = p.tp * p.pp * p.dp * p.cp;
  if (product != gpus)
    throw SpecError(name("dp"), "expected tp*pp*dp*cp = gpus (" + str(gpus) + "), got " + str(p.tp) + "*" +
                                    str(p.pp) + "*" + str(p.dp) + "*" + str(p.cp) + " = " + str(product));
  if (m.heads % p.tp != 0)
    throw SpecError(name("tp"), "expected a divisor of the model's attention heads (" + str(m.heads) + "), got " + str(p.tp));
  if (m.kv_heads % p.tp != 0)
    throw SpecError(name("tp"), "expected a divisor of the model's kv_heads (" + str(m.kv_heads) +
                                    ", Megatron-LM requires num_query_groups % tp == 0), got " + str(p.tp));
  // Megatron-Core MambaMixer: "nheads % tp_size == 0", "ngroups % tp_size == 0", and its CP splits
  // each rank's heads (mamba_context_parallel.py: nheads_local_tp % cp_size == 0).
  if (m.mamba.on() && (m.mamba.heads % p.tp != 0 || m.mamba.groups % p.tp != 0))
    throw SpecError(name("tp"), "expected a divisor of the model's Mamba heads (" + str(m.mamba.heads) + ") and groups (" +
                                    str(m.mamba.groups) + "), got " + str(p.tp));
  if (m.mamba.on() && (m.mamba.heads / p.tp) % p.cp != 0)
    throw SpecError(name("cp"), "expected a divisor of the model's Mamba heads per TP rank (" + str(m.mamba.heads / p.tp) +
                                    "), got " + str(p.cp));
  if (p.vp > 1 && p.pp == 1)
    throw SpecError(name("vp"), "expected 1 without pipeline parallelism (--pp 1), got " + str(p.vp));
  // Megatron-Core can give the embedding and the loss a virtual stage's slot each
  // (--account-for-embedding-in-pipeline-split, --account-for-loss-in-pipeline-split): up to
  // layers + 2 virtual stages, the first and last of which may hold no transformer layer.
  if (m.layers + 2 < p.pp * p.vp || (p.vp == 1 && m.layers < p.pp))
    throw SpecError(name(p.vp > 1 ? "vp" : "pp"), "expected pp*vp <= the model's layers + 2 (" + str(m.layers) +
                                                        " + 2: the embedding and the loss may take a virtual "
                                                        "stage each), got " + str(p.pp) + "*" + str(p.vp));
  if (p.sequence_parallel && p.tp == 1)
    throw SpecError(name("sp"), "expected tensor parallelism (tp > 1) for sequence parallelism, got tp = 1");
}

void check_experts(const Model& m, const Parallel& p, const FieldNamer& name) {
  if (!m.is_moe() && p.ep != 1)
    throw SpecError(name("ep"), "expected 1 for a dense model (no moe_experts), got " + str(p.ep));
  // megatron/training/arguments.py: "When using MoE and tensor parallelism, sequence parallelism
  // must be used." (the experts' dispatch takes each TP rank's b s / tp tokens).
  if (m.is_moe() && p.tp > 1 && !p.sequence_parallel)
    throw SpecError(name("sp"), "expected sequence parallelism for experts with tp > 1 (Megatron-Core requires it), got off");
  if (m.is_moe() && m.moe_experts % p.ep != 0)
    throw SpecError(name("ep"), "expected a divisor of the model's experts (" + str(m.moe_experts) + "), got " + str(p.ep));
  if (!m.is_moe() && p.etp > 1)
    throw SpecError(name("etp"), "expected 1 for a dense model (no moe_experts), got " + str(p.etp));
  if (m.is_moe() && m.moe_ffn_hidden % p.expert_tp() != 0)
    throw SpecError(name("etp"), "expected a divisor of the experts' ffn width (" + str(m.moe_ffn_hidden) + "), got " +
                                     str(p.expert_tp()));
  // MoE parallel folding: the expert layout etp x ep x edp covers each stage's tp x cp x dp ranks.
  if ((p.tp * p.cp * p.dp) % (p.ep * p.expert_tp()) != 0)
    throw SpecError(name("ep"), "expected ep*etp (" + str(p.ep) + "*" + str(p.expert_tp()) +
                                    ") to divide tp*cp*dp (" + str(p.tp * p.cp * p.dp) +
                                    "; the experts' layout folds over each pipeline stage's ranks), got " +
                                    str(p.ep * p.expert_tp()));
}

void check_batch(const Parallel& p, const Training& t, const FieldNamer& name) {
  if (t.global_batch % (t.micro_batch * p.dp) != 0)
    throw SpecError(name("gbs"), "expected a multiple of mbs*dp (" + str(t.micro_batch) + "*" + str(p.dp) + " = " +
                                     str(t.micro_batch * p.dp) + "), got " + str(t.global_batch));
  std::int64_t m = micro_batches(p, t);
  // The op graph holds a forward and a backward task per micro-batch, stage and chunk (about 300
  // bytes each): 2 million passes take about 650 MB and half a second.
  if (m > kMaxPasses / (p.pp * p.vp))
    throw SpecError(name("gbs"), "expected at most " + str(kMaxPasses) +
                                     " forward passes per step (micro-batches x pp x vp), got " + str(m) + " x " +
                                     str(p.pp) + " x " + str(p.vp) + "; a step of more micro-batches takes as many "
                                     "times the time of a smaller one once the pipeline is full");
  if (p.vp > 1 && m % p.pp != 0)
    throw SpecError(name("gbs"), "expected micro-batches per replica (gbs/(mbs*dp) = " + str(m) +
                                     ") to be a multiple of pp (" + str(p.pp) + ") for the interleaved schedule");
  if (p.cp > 1 && t.seq_len % (2 * p.cp) != 0)
    throw SpecError(name("seq"), "expected a multiple of 2*cp (" + str(2 * p.cp) +
                                     ", context parallelism splits the sequence in 2*cp chunks), got " + str(t.seq_len));
  if (p.sequence_parallel && (t.seq_len / p.cp) % p.tp != 0)
    throw SpecError(name("seq"), "expected seq/cp to be a multiple of tp (" + str(p.tp) +
                                     ") with sequence parallelism, got " + str(t.seq_len));
}

void check_stage_layers(const Model& m, const Parallel& p, const FieldNamer& name) {
  if (!p.chunk_layers.empty()) {  // a pipeline layout's, which spec::parse_pipeline_layout checked
    if (!p.stage_layers.empty())
      throw SpecError(name("stage_layers"), "expected layers per stage or a pipeline layout, not both, got both");
    std::int64_t sum = std::accumulate(p.chunk_layers.begin(), p.chunk_layers.end(), std::int64_t{0});
    if (static_cast<std::int64_t>(p.chunk_layers.size()) != p.pp * p.vp || sum != m.layers ||
        *std::min_element(p.chunk_layers.begin(), p.chunk_layers.end()) < 0)
      throw SpecError(name("pipeline_layout"), "expected pp x vp (" + str(p.pp * p.vp) +
                                                   ") chunks of at least 0 layers summing to the model's " +
                                                   str(m.layers) + ", got " +
                                                   str(static_cast<std::int64_t>(p.chunk_layers.size())) +
                                                   " chunks of " + str(sum));
    return;
  }
  if (p.stage_layers.empty()) return;
  if (static_cast<std::int64_t>(p.stage_layers.size()) != p.pp)
    throw SpecError(name("stage_layers"), "expected " + str(p.pp) + " entries (one per pipeline stage), got " +
                                              str(static_cast<std::int64_t>(p.stage_layers.size())));
  std::int64_t sum = std::accumulate(p.stage_layers.begin(), p.stage_layers.end(), std::int64_t{0});
  if (sum != m.layers)
    throw SpecError(name("stage_layers"), "expected layers summing to the model's " + str(m.layers) + ", got " + str(sum));
  for (std::int64_t l : p.stage_layers) {
    if (l < p.vp)
      throw SpecError(name("stage_layers"), "expected at least vp (" + str(p.vp) + ") layers per stage, got " + str(l));
  }
}

}  // namespace

FieldNamer flag_namer() {
  return [](const std::string& field) { return "--" + field; };
}

std::int64_t micro_batches(const Parallel& par, const Training& train) {
  return train.global_batch / (train.micro_batch * par.dp);
}

void check_job(const Model& model, const Cluster& cluster, std::int64_t gpus, const Parallel& par,
               const Training& train, const FieldNamer& name) {
  check_degrees(model, gpus, par, name);
  check_experts(model, par, name);
  check_batch(par, train, name);
  check_stage_layers(model, par, name);
  if (par.zero_stage < 0 || par.zero_stage > 3)
    throw SpecError(name("zero"), "expected 0, 1, 2 or 3, got " + std::to_string(par.zero_stage));
  // Megatron-Core's Muon shards whole matrices over the data-parallel ranks (its layer-wise
  // optimizer): optimizer states only, gradients all-reduced, bf16 parameters gathered
  // (docs/research/muon-optimizer.md sec. 1.5).
  if (train.optimizer == Optimizer::muon && par.zero_stage > 1)
    throw SpecError(name("zero"), "expected 0 or 1 with muon (Megatron-Core's layer-wise optimizer shards only its "
                                  "states), got " + std::to_string(par.zero_stage));
  if (train.optimizer == Optimizer::muon && train.fp8_params)
    throw SpecError(name("fp8-param-gather"), "expected off with muon (its layer-wise optimizer gathers bf16 "
                                              "parameters), got on");
  if (train.precision != Dtype::fp16 && train.precision != Dtype::bf16 && train.precision != Dtype::fp8 &&
      train.precision != Dtype::fp4)
    throw SpecError(name("precision"), std::string("expected fp16, bf16, fp8 or fp4, got ") + to_string(train.precision));
  if (cluster.gpu.peak(train.precision).value() <= 0)
    throw SpecError(name("precision"), std::string("expected a precision the GPU supports (") + cluster.gpu.name +
                                           " has no " + to_string(train.precision) + " tensor cores), got " +
                                           to_string(train.precision));
  if (train.offload_layers > 0 && cluster.host_link.value() <= 0)
    throw SpecError(name("cpu-offload-layers"), "expected a cluster with host_link_GBps (" + cluster.name +
                                                    " does not state its GPU-host link), got " +
                                                    std::to_string(train.offload_layers) + " layers");
  if (train.offload_layers >= model.layers)
    throw SpecError(name("cpu-offload-layers"), "expected fewer than the model's " + std::to_string(model.layers) +
                                                    " layers, got " + std::to_string(train.offload_layers));
  if (train.peft == Peft::lora && train.lora_rank < 1)
    throw SpecError(name("lora-rank"), "expected a LoRA rank of at least 1 with --peft lora, got " +
                                           std::to_string(train.lora_rank));
  if (train.peft == Peft::lora && train.lora_targets == 0)
    throw SpecError(name("lora-targets"), "expected at least one of linear_qkv, linear_proj, linear_fc1, linear_fc2 "
                                          "with --peft lora, got none");
  if (train.sample_len < 0 || train.sample_len > train.seq_len)
    throw SpecError(name("sample-len"), "expected packed samples of 1 to seq (" + std::to_string(train.seq_len) +
                                            ") tokens, got " + std::to_string(train.sample_len));
  if (train.bf16_layers_start + train.bf16_layers_end > model.layers)
    throw SpecError(name("bf16-layers-end"), "expected bf16 layers at start and end to total at most the model's " +
                                                 std::to_string(model.layers) + " layers, got " +
                                                 std::to_string(train.bf16_layers_start + train.bf16_layers_end));
}

}  // namespace dtsim::spec
