#include "cost/memory.h"

#include <algorithm>

#include "cost/compute.h"
#include "cost/layer_shape.h"
#include "cost/model_stats.h"
#include "cost/partition.h"
#include "spec/job_rules.h"

namespace dtsim::cost {
namespace {

using spec::Recompute;

}  // namespace

LocalLayerParams local_layer_params(const spec::Model& m, const spec::Parallel& par) {
  LayerParams p = count_params(m).layer;
  LocalLayerParams l;
  double tp = static_cast<double>(par.tp);
  if (m.is_moe()) {
    double router = static_cast<double>(m.hidden) * m.moe_experts;
    double routed = p.mlp - router - p.mlp_latent - p.mlp_shared;  // sharded over etp x ep
    l.expert = routed / (static_cast<double>(par.expert_tp()) * static_cast<double>(par.ep));
    l.dense = (p.attention + p.mlp_shared) / tp + router + p.mlp_latent + p.norms;
  } else {
    // A Mamba mixer splits its heads and groups, with their weights, over TP (MambaMixer).
    l.dense = (p.attention + p.mlp + p.mamba) / tp + p.norms;
  }
  return l;
}

LocalLayerParams lora_params(const LayerShape& s) {
  LocalLayerParams l;
  for (const LoraTarget& target : lora_targets(s)) (target.expert ? l.expert : l.dense) += target.params(s.lora_rank);
  return l;
}

LocalLayerParams local_lora_params(const spec::Model& m, const spec::Parallel& par, const spec::Training& t) {
  return lora_params(layer_shape(m, par, t));
}

double non_layer_params(const spec::Model& m, const spec::Parallel& par, std::int64_t stage) {
  ModelParams p = count_params(m);
  double vocab_rows = padded_vocab(m, par.tp) / static_cast<double>(par.tp) * static_cast<double>(m.hidden);
  double out = 0;
  bool first = stage == 0, last = stage == par.pp - 1;
  if (first) out += vocab_rows + p.position;
  if (last) out += p.final_norm + ((!m.tied_embeddings || par.pp > 1) ? vocab_rows : 0);
  return out;
}

namespace {

// Bytes of the per-token tensors Korthikanti et al. sec. 4.1 list, for this model's widths.
struct ActivationTerms {
  double replicated = 0;  ///< per token, divided by tp only with SP: norm inputs, QKV and FC1 inputs, masks
  double sharded = 0;     ///< per token on this rank: Q, K, V, projection input, MLP intermediates
  double scores = 0;      ///< per micro-batch on this rank: scores, softmax, dropout (unfused only)
};

// Bytes per element of the inputs a Linear saves for its backward: Transformer Engine keeps the
// quantized copy in fp8 (1 B) and NVFP4 (0.5 B + an E4M3 scale per 16) runs instead of the 16-bit
// tensor (docs/research/low-precision-training.md sec. 3).
double saved_input_bytes(spec::Dtype precision) {
  return precision == spec::Dtype::fp8 ? 1.0 : precision == spec::Dtype::fp4 ? 0.5625 : 2.0;
}

// `modules`: the selective-recompute modules (spec::recompute_module bits) whose tensors are not
// kept: an output-discarding module (layernorm, moe_act, mla_up_proj) frees its output, a
// checkpointed one (mlp, moe, shared_experts) everything between its input and its output.
ActivationTerms activation_terms(const spec::Model& m, const LayerShape& s, spec::AttentionKernel attn,
                                 spec::Dtype precision, std::uint32_t modules, bool tp_saves_gathered) {
  namespace rm = spec::recompute_module;
  namespace lt = spec::lora_target;
  ActivationTerms a;
  double in = saved_input_bytes(precision);
  bool moe = m.is_moe() && m.has_mlp(), mla = m.mla.on() && m.has_attention();
  bool attention = m.has_attention(), mlp = m.has_mlp();
  // A frozen linear keeps no input for a weight gradient (Transformer Engine's Linear saves its
  // input only when the weight requires grad: transformer_engine/pytorch/module/linear.py,
  // `if weight.requires_grad` in 1.x, `backward_needs_input` in 2.x); its LoRA adapter keeps the
  // 16-bit input for the adapter's own weight gradient (the adapter runs outside fp8).
  auto kept = [&](std::uint32_t target) { return !s.frozen ? in : (s.lora_targets & target) ? 2.0 : 0.0; };
  double qkv_in = kept(lt::linear_qkv), fc1_in = kept(lt::linear_fc1), fc2_in = kept(lt::linear_fc2);
  // torchtitan's per-op policy (op_sac; torchtitan/models/llama/parallelize_llama.py @0596be3a,
  // _apply_ac_to_transformer_block: MUST_SAVE the outputs of aten.mm, the SDPA kernels and the TP
  // reduce-scatter, "except every second mm"; everything else is recomputed, as
  // cost::selective_recompute prices it): the block's input (the checkpoint's), the outputs of the
  // odd-numbered matmuls in call order -- wq and wv, then w1 and w2 of a gated MLP (fc1 of a plain
  // one) -- the attention's output and fp32 log-sum-exp, and with sequence-parallel TP the
  // projection's and the MLP's reduce-scatter outputs. w2's own output is the whole hidden width on
  // every TP rank (the partial sum its reduce-scatter takes). Dense layers of torchtitan's models.
  if ((modules & rm::op_sac) && attention && mlp && !moe && !mla && !s.mamba()) {
    a.replicated = 2.0 * s.hidden;
    if (s.tp > 1 && s.sp < 1) a.replicated += 2.0 * 2.0 * s.hidden;
    a.sharded = 2.0 * (s.q_width + s.kv_width) + 2.0 * s.q_width + 4.0 * s.heads + 2.0 * s.ffn;
    if (s.gate > 1) a.sharded += 2.0 * s.hidden;
    return a;
  }
  // 2sbh norm-1 input + QKV input + 2sbh norm-2 input + FC1 input + 2 x sbh dropout masks (kept
  // only with hidden dropout: at p = 0 PyTorch's dropout returns its input, ATen Dropout.cpp). The
  // QKV and FC1 inputs are the norms' outputs; a norm that is a module of its own (before the
  // experts; before MLA's down-projections) drops its output under layernorm recompute.
  // A hybrid model's block keeps its own part: one norm input, one linear input, one mask.
  double mask = s.hidden_dropout ? 1.0 : 0.0;
  a.replicated = ((attention ? 2.0 + qkv_in + mask : 0.0) + (mlp ? 2.0 + fc1_in + mask : 0.0)) * s.hidden;
  if (modules & rm::layernorm) a.replicated -= s.hidden * ((moe ? fc1_in : 0.0) + (mla ? qkv_in : 0.0));
  if (tp_saves_gathered && s.sp < 1 && !moe && !mla) {
    // PyTorch's tensor parallelism (torchtitan's plan: PrepareModuleInput to Replicate before the
    // attention and the MLP, then ColwiseParallel linears) all-gathers the sequence-parallel input
    // once, and the linears' matmuls save that gathered tensor for their weight gradients (mm's
    // backward needs its input): the whole sequence on every TP rank, where Megatron keeps the
    // local shard and gathers it again in the backward.
    double gathered = ((attention ? qkv_in : 0.0) + (mlp ? fc1_in : 0.0)) * s.hidden;
    a.replicated -= gathered;
    a.sharded += gathered;
  }
  if (s.mamba()) {
    // A Mamba layer (mamba_ssm MambaSplitConv1dScanCombinedFn saves zxbcdt and the ungated output
    // out_x; the grouped norm its input, out_proj its input): the norm's input and in_proj's, the
    // in_proj output, out_x and y (16 bits), and the out_proj input.
    a.replicated += (2.0 + in) * s.hidden;
    a.sharded += 2.0 * s.ssm_in_width() + 4.0 * s.ssm_inner() + in * s.ssm_inner();
  }
  // Q, K, V (MLA's after its up-projections and RoPE); the projection's input.
  if (attention && !(mla && (modules & rm::mla_up_proj))) a.sharded += 2.0 * (s.q_width + 2 * s.kv_width);
  if (attention) a.sharded += in * s.q_width;  // (fused attention keeps its output, the projection's input, frozen or not)
  // A clamped GLU saves the FC1 output twice: as the clamps' input and, clamped, as the
  // activation's (compute.cc, "mlp.act.clamp").
  double fc1_out = s.glu_clamp ? 4.0 : 2.0;
  if (!mlp) {
    // an attention or Mamba block
  } else if (moe) {
    // Per routed copy: the experts' FC1 input, FC1 output, FC2 input (the activation's output);
    // moe_act recompute keeps only the FC1 output, the activation's input.
    double per_token = static_cast<double>(m.moe_topk);
    double experts = (modules & rm::moe_act) ? 2.0 * s.expert_ffn * s.gate + fc1_in * s.expert_width
                                             : fc1_out * s.expert_ffn * s.gate + fc2_in * s.expert_ffn + fc1_in * s.expert_width;
    double shared = fc1_out * s.shared_ffn * s.gate + fc2_in * s.shared_ffn;
    if (!(modules & rm::moe)) a.sharded += per_token * experts + 4.0 * s.experts;
    // LatentMoE: the two projections' inputs, on the rank's b s / tp tokens.
    if (s.latent > 0 && !(modules & rm::moe)) a.replicated += in * (s.hidden + s.latent);
    if (!(modules & (rm::moe | rm::shared_experts))) a.sharded += shared;
  } else if (!(modules & rm::mlp)) {
    a.sharded += fc1_out * s.ffn * s.gate + fc2_in * s.ffn;
  }
  double sq = s.seq / s.cp;
  // Unfused: the softmax output (2 bytes per score) and, with attention dropout, its mask and
  // output (1 + 2; Korthikanti et al. 2022 sec. 4.1's 5as^2b).
  if (!attention) return a;
  if (attn == spec::AttentionKernel::unfused)
    a.scores = (s.attention_dropout ? 5.0 : 2.0) * s.batch * s.heads * sq * s.seq;
  else a.sharded += 4.0 * s.heads;  // fp32 log-sum-exp per head and token
  return a;
}

struct HybridBlock {
  char c;
  LocalLayerParams params;  ///< a dense block's all dense
  Bytes activations;
};
struct HybridBlocks {
  std::vector<HybridBlock> blocks;
  Bytes max_activations{0}, max_unrecomputed{0};
  double max_params = 0;
};

// A hybrid model's blocks as spec::block_variant prices them: their parameters on one rank (no EP
// outside the MoE block) and the activations one micro-batch keeps.
HybridBlocks hybrid_blocks(const spec::Model& m, const spec::Parallel& par, const spec::Training& t,
                           spec::AttentionKernel attn, bool tp_saves_gathered) {
  HybridBlocks h;
  if (!m.hybrid()) return h;
  spec::Training none = t;
  none.recompute = Recompute::none;
  for (char c : {'M', '*', '-', 'E'}) {
    if (m.count_blocks(c, 0, m.layers) == 0 && m.mtp_pattern.find(c) == std::string::npos) continue;
    spec::Model b = spec::block_variant(m, c);
    spec::Parallel bp = par;
    if (!b.is_moe()) bp.ep = 1, bp.etp = 0;
    LocalLayerParams lp = local_layer_params(b, bp);
    if (!b.is_moe()) lp = {.dense = lp.total(), .expert = 0};
    Bytes act = layer_activation_bytes(b, bp, t, attn, tp_saves_gathered);
    h.blocks.push_back({c, lp, act});
    h.max_activations = std::max(h.max_activations, act);
    h.max_unrecomputed = std::max(h.max_unrecomputed, layer_activation_bytes(b, bp, none, attn, tp_saves_gathered));
    h.max_params = std::max(h.max_params, lp.dense + lp.expert);
  }
  return h;
}

}  // namespace

StateBytes state_bytes(const spec::Training& t, int zero_stage, const spec::Software& sw) {
  StateBytes b;
  // Transformer Engine caches the quantized weights between micro-batches, row- and column-wise
  // (docs/research/low-precision-training.md sec. 3): fp8 2 B (1 + 1), NVFP4 2 x 0.5625 B beside the
  // 16-bit weights; with fp8 parameters (--fp8-param-gather) the fp8 copies are the weights.
  if (t.precision == spec::Dtype::fp8) b.weights = t.fp8_params ? 2.0 : 4.0;
  if (t.precision == spec::Dtype::fp4) b.weights = 2.0 + 2 * 0.5625;
  b.gradients = spec::dtype_bytes(t.grad_dtype);
  // Adam: fp32 master weights, first and second moments; a distributed optimizer keeping
  // remainders stores the master's low 16 bits beside the bf16 weights (2 bytes, not 4).
  b.optimizer = t.optimizer == spec::Optimizer::adam ? 12.0 : 8.0;
  if (t.param_remainders && zero_stage >= 1) b.optimizer -= 2.0;
  b.gathered = b.weights;
  if (sw.fsdp_fp32_params) {
    // PyTorch FSDP: the fp32 parameters are the optimizer's own (no master copy) and nothing else
    // persists -- no 16-bit copy, no cached fp8 weight (torchao's Float8Linear casts on every
    // call); they are gathered in the 16-bit param dtype, or in fp8 with float8 all-gather.
    b.weights = 4.0;
    b.optimizer -= 4.0;
    b.weights_shard_stage = 2;
    b.gathered = t.fp8_params ? 1.0 : 2.0;
  }
  return b;
}

namespace {

// Bytes of weights per parameter on one rank at ZeRO `stage` over `dp` ranks.
double weight_bytes_per_param(int stage, double dp, const StateBytes& b) {
  return b.weights * (stage >= b.weights_shard_stage ? 1.0 / dp : 1.0);
}

}  // namespace

Bytes weight_state_bytes(double params, int stage, double dp, const StateBytes& b) {
  return bytes(params * weight_bytes_per_param(stage, dp, b));
}

Bytes model_state_bytes(double params, int stage, double dp, const StateBytes& b) {
  double w = weight_bytes_per_param(stage, dp, b);
  double g = b.gradients * (stage >= 2 ? 1.0 / dp : 1.0);
  double o = b.optimizer * (stage >= 1 ? 1.0 / dp : 1.0);
  return bytes(params * (w + g + o));
}

double cross_entropy_peak_bytes(spec::CrossEntropy ce) {
  // torch: torchtitan's loss, F.cross_entropy(pred.flatten(0, 1).float(), ...) -- an fp32 copy of
  // the logits, log_softmax's fp32 output saved for the backward; the 16-bit logits are freed
  // before it ("need to free to before bwd to avoid peaking memory": del pred, torchtitan
  // train.py), whose log_softmax backward then holds the saved output, its incoming gradient and
  // the input gradient, 3 x 4 B (the forward's 2 + 4 + 4 is less). Compiled (torchtitan's loss
  // under torch.compile since 2025-04): no fp32 copy, the logits kept for the backward and their
  // 16-bit gradient, 2 + 2 B ("compiled saved more memory than chunked loss ever could",
  // pytorch/torchtitan PR #1033). The others: the 16-bit logits and one fp32 buffer, 2 + 4 B.
  if (ce == spec::CrossEntropy::torch) return 12.0;
  return ce == spec::CrossEntropy::compiled ? 4.0 : 6.0;
}

Bytes layer_activation_bytes(const spec::Model& m, const spec::Parallel& par, const spec::Training& t,
                             spec::AttentionKernel attn, bool tp_saves_gathered) {
  LayerShape s = layer_shape(m, par, t);
  if (t.recompute == Recompute::full) return bytes(2.0 * s.tokens * s.hidden * s.sp);
  std::uint32_t modules = t.selective_modules();
  ActivationTerms a = activation_terms(m, s, attn, t.precision, modules, tp_saves_gathered);
  double scores = (modules & spec::recompute_module::core_attn) ? 0.0 : a.scores;
  return bytes(s.tokens * (a.replicated * s.sp + a.sharded) + scores);
}

double inflight_microbatches(const spec::Parallel& par, std::int64_t microbatches, std::int64_t stage) {
  double p = static_cast<double>(par.pp), v = static_cast<double>(par.vp), i = static_cast<double>(stage);
  double m = static_cast<double>(microbatches);
  if (par.vp == 1) return std::min(p - i, m);
  // Megatron-LM interleaved warm-up: (p - i - 1)*2 + (v - 1)*p chunk steps, plus the one in
  // steady state, each holding 1/v of the stage (schedules.py).
  return std::min(((p - i - 1) * 2 + (v - 1) * p + 1) / v, m);
}

MemoryEstimate estimate_memory(const spec::Model& m, const spec::Cluster& c, const spec::Parallel& par,
                               const spec::Training& t, const spec::Software& sw) {
  MemoryEstimate est;
  est.capacity = c.gpu.memory;
  spec::AttentionKernel attn = sw.attention;
  StateBytes sb = state_bytes(t, par.zero_stage, sw);
  LayerPartition part(m, par);
  const std::vector<std::int64_t>& layers = part.stage_layers();
  LocalLayerParams lp = local_layer_params(m, par);
  LocalLayerParams lora = local_lora_params(m, par, t);
  LayerShape shape = layer_shape(m, par, t);
  double dp = static_cast<double>(par.dp * par.cp);
  double edp = static_cast<double>(par.expert_dp());
  std::int64_t micro = spec::micro_batches(par, t);
  bool gathered = sw.tp_saves_gathered_input;
  Bytes layer_act = layer_activation_bytes(m, par, t, attn, gathered);
  // An MoE model's leading dense layers (moe_dense_layers) and its MTP modules (last stage).
  LocalLayerParams dense_lp = m.moe_dense_layers > 0 ? local_layer_params(spec::dense_variant(m), par) : lp;
  // A hybrid model's blocks: each its own parameters and activations (non-MoE blocks without EP).
  HybridBlocks hybrid = hybrid_blocks(m, par, t, attn, gathered);
  if (m.hybrid()) layer_act = hybrid.max_activations;
  for (std::int64_t st = 0; st < par.pp; ++st) {
    std::int64_t dense_layers = 0;
    for (std::int64_t c = 0; c < par.vp; ++c)
      dense_layers += part.leading_in_chunk(st, c, m.moe_dense_layers);
    // MTP modules run on the last stage: each keeps its activations; their weights are one set per
    // module, or one for all (mtp_shared_weights), each with its 2h -> h projection.
    double mtp = st == par.pp - 1 ? static_cast<double>(m.mtp_layers) : 0.0;
    double mtp_sets = st == par.pp - 1 ? static_cast<double>(m.mtp_weight_sets()) : 0.0;
    double n_layers = static_cast<double>(layers[static_cast<std::size_t>(st)]) + mtp;
    double n_moe = n_layers - static_cast<double>(dense_layers);
    double projection = mtp_sets * 2.0 * static_cast<double>(m.hidden) * static_cast<double>(m.hidden) / static_cast<double>(par.tp);
    double dense = lp.dense * n_moe + dense_lp.dense * static_cast<double>(dense_layers) + non_layer_params(m, par, st) +
                   projection - lp.dense * (mtp - mtp_sets);
    double expert = lp.expert * n_moe - lp.expert * (mtp - mtp_sets);
    if (m.hybrid()) {
      // Block by block over the stage's layers and its MTP modules' blocks; a stage's activations
      // are their mean per layer (an MTP module counting as one).
      dense = non_layer_params(m, par, st) + projection, expert = 0;
      Bytes act{0};
      for (const HybridBlock& b : hybrid.blocks) {
        double n = 0;
        for (std::int64_t c = 0; c < par.vp; ++c)
          n += static_cast<double>(m.count_blocks(b.c, part.first_layer(st, c), part.layers(st, c)));
        auto in_mtp = static_cast<double>(m.mtp_count(b.c));
        dense += b.params.dense * (n + mtp_sets * in_mtp), expert += b.params.expert * (n + mtp_sets * in_mtp);
        act += b.activations * (n + mtp * in_mtp);
      }
      layer_act = n_layers > 0 ? act / n_layers : Bytes{0};
    }
    StageMemory sm{.stage = st, .parameters = dense + expert};
    auto weight_bytes = [&](double params) { return weight_state_bytes(params, par.zero_stage, dp, sb); };
    sm.weights = weight_bytes(dense + expert);
    if (t.frozen_base()) {
      // Frozen base weights keep only their 16-bit (and fp8) copies; the adapters train with
      // the full mixed-precision states.
      double adapters = static_cast<double>(layers[static_cast<std::size_t>(st)]);
      dense = lora.dense * adapters;
      expert = lora.expert * adapters;
      sm.parameters += dense + expert;
      sm.weights += weight_bytes(dense + expert);
    }
    Bytes dense_states = model_state_bytes(dense, par.zero_stage, dp, sb);
    Bytes expert_states = model_state_bytes(expert, par.zero_stage, edp, sb);
    Bytes trained_weights = weight_bytes(dense + expert);
    sm.gradients = bytes((dense + expert) * sb.gradients * (par.zero_stage >= 2 ? 1.0 / dp : 1.0));
    sm.optimizer = dense_states + expert_states - trained_weights - sm.gradients;
    // What a sharded stack keeps gathered: FSDP's SHARD_GRAD_OP the 16-bit weights from forward to
    // backward; a ZeRO-3 pipeline stage that stays gathered (zero3_pp_gathered) its weights, and
    // its gradients unsharded until the last micro-batch reduces them.
    bool stage_gathered = par.zero_stage >= 3 && par.pp > 1 && sw.zero3_pp_gathered;
    if ((sw.fsdp_fp32_params && par.zero_stage == 2) || stage_gathered) sm.weights += bytes(sm.parameters * sb.gathered);
    if (stage_gathered) sm.gradients += bytes(sm.parameters * sb.gradients);
    double inflight = inflight_microbatches(par, micro, st);
    // Offloaded layers (the model's first ones) keep their activations in host memory.
    std::int64_t offloaded = 0;
    for (std::int64_t c = 0; c < par.vp; ++c) offloaded += part.leading_in_chunk(st, c, t.offload_layers);
    double resident = n_layers - static_cast<double>(offloaded);
    sm.activations = layer_act * (resident * inflight);
    if (t.recompute == Recompute::full && t.recompute_layers > 0) {
      // Partial full recompute: only the first recompute_layers of each chunk keep just their input.
      spec::Training none = t;
      none.recompute = Recompute::none;
      double kept = 0;
      for (std::int64_t c = 0; c < par.vp; ++c)
        kept += static_cast<double>(std::max<std::int64_t>(0, part.layers(st, c) - t.recompute_layers));
      kept = std::min(kept, resident);
      sm.activations = layer_act * ((resident - kept) * inflight) +
                       (m.hybrid() ? hybrid.max_unrecomputed : layer_activation_bytes(m, par, none, attn, gathered)) * (kept * inflight);
    }
    Bytes transient{0};
    if (t.recompute == Recompute::full) {
      // Recomputing one layer re-materialises its full activations (no-recompute footprint).
      spec::Training none = t;
      none.recompute = Recompute::none;
      transient += m.hybrid() ? hybrid.max_unrecomputed : layer_activation_bytes(m, par, none, attn, gathered);
    }
    if (st == 0 && shape.hidden_dropout)  // the embeddings' dropout mask (hidden dropout)
      sm.activations += bytes(shape.tokens * shape.hidden * shape.sp * inflight);
    if (st == par.pp - 1) transient += bytes(shape.tokens * shape.vocab_local * cross_entropy_peak_bytes(sw.cross_entropy));
    double largest = m.hybrid() ? hybrid.max_params : lp.dense + lp.expert;
    if (par.zero_stage >= 3 && !stage_gathered) transient += bytes(2.0 * largest * sb.gathered);  // current + prefetched layer
    sm.other = transient + (sm.activations + transient) * kAllocatorReserve + gib(kFixedOverheadGiB);
    est.stages.push_back(sm);
    if (sm.total() > est.stages[est.peak_stage].total()) est.peak_stage = est.stages.size() - 1;
  }
  return est;
}

spec::Training least_recompute_that_fits(const spec::Model& m, const spec::Cluster& c, const spec::Parallel& par,
                                         spec::Training t, const spec::Software& sw) {
  auto fits = [&] { return estimate_memory(m, c, par, t, sw).fits(); };
  t.recompute_layers = 0;
  for (auto r : {Recompute::none, Recompute::selective}) {
    t.recompute = r;
    if (fits()) return t;
  }
  t.recompute = Recompute::full;
  std::int64_t most = 0;
  LayerPartition part(m, par);
  for (std::int64_t k : part.chunks()) most = std::max(most, k);
  for (std::int64_t n = 1; n < most; ++n) {
    t.recompute_layers = n;
    if (fits()) return t;
  }
  t.recompute_layers = 0;
  return t;
}

std::string recompute_text(const spec::Training& t) {
  std::string s = spec::to_string(t.recompute);
  if (t.recompute == Recompute::selective && t.recompute_modules != 0)
    s += " (" + spec::recompute_modules_text(t.recompute_modules) + ")";
  if (t.recompute == Recompute::full && t.recompute_layers > 0)
    s += " (first " + std::to_string(t.recompute_layers) + " layer" + (t.recompute_layers > 1 ? "s" : "") +
         " of each chunk)";
  return s;
}

}  // namespace dtsim::cost
