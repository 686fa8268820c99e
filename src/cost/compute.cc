#include "cost/compute.h"

#include <algorithm>
#include <cmath>

namespace dtsim::cost {
namespace {

using spec::AttentionKernel;
using spec::Dtype;

constexpr double kAct = 2.0;  // bytes of a 16-bit activation element

Op gemm(std::string name, double m, double n, double k, double batch, double elem_bytes) {
  Op op{.name = std::move(name), .kind = OpKind::gemm, .m = m, .n = n, .k = k, .batch = batch};
  op.flops = flops(2.0 * m * n * k * batch);
  op.bytes = bytes((m * k + k * n + m * n) * elem_bytes * batch);
  op.elem_bytes = elem_bytes;
  return op;
}

// Backward of Y[m,n] = X[m,k] W[k,n]: dX = dY W^T (m x k, reduce n), dW = X^T dY (k x n, reduce m).
void gemm_backward(std::vector<Op>& out, const Op& f) {
  auto add = [&](Op op, GemmPass pass) {
    op.kernels = f.kernels;
    op.bf16_only = f.bf16_only;
    op.strided_batch = f.strided_batch;
    op.pass = pass;
    out.push_back(std::move(op));
  };
  add(gemm(f.name + ".dgrad", f.m, f.k, f.n, f.batch, f.elem_bytes), GemmPass::dgrad);
  add(gemm(f.name + ".wgrad", f.k, f.n, f.m, f.batch, f.elem_bytes), GemmPass::wgrad);
}

// Megatron's core attention multiplies every (sequence, head) pair's matrices in one
// torch.baddbmm / torch.bmm call (megatron/core/transformer/dot_product_attention.py).
Op batched_gemm(std::string name, double m, double n, double k, double batch) {
  Op op = gemm(std::move(name), m, n, k, batch, kAct);
  op.bf16_only = true;  // outside Transformer Engine's autocast
  op.strided_batch = true;
  return op;
}

Op memory(std::string name, double elements, double bytes_per_element, double kernels = 1) {
  return Op{.name = std::move(name), .kind = OpKind::memory, .bytes = bytes(elements * bytes_per_element),
            .kernels = kernels};
}

// GEMM operand bytes: fp8 GEMMs read 1-byte inputs (Transformer Engine) but write 16-bit outputs;
// using 1.5 per element approximates the mix and keeps the op memory-light, as it is.
// fp4 (NVFP4) reads half-byte inputs with an E4M3 scale per 16 (0.5625 B) and writes 16 bits.
double gemm_elem_bytes(Dtype precision) {
  return precision == Dtype::fp8 ? 1.5 : precision == Dtype::fp4 ? (2 * 0.5625 + 2) / 3 : 2.0;
}

// Flash attention: 4*b*a*s_q*s_kv*d FLOPs forward, halved by the causal mask; with CP each rank
// computes 1/cp of the (load-balanced) causal work. Backward: 2.5x forward (FlashAttention-2
// paper, Dao 2023, sec. 4.1: five matmuls against two, counting the recomputed scores).
// The fused attention of one layer: QK^T (head_dim) and AV (v_dim) over the causal half of the
// scores. A model with sliding windows runs its windowed layers as a second kernel
// ("attn.core.window"), each op weighted by its share of the layers. Each op's m is the length of
// the causal attention with as many keys per query (its efficiency's argument): the rank's
// s/cp tokens, or two windows.
// Attention dropout inside fused attention draws its random numbers in the kernel (no mask is
// kept): cuDNN's sm90 kernel (what Transformer Engine runs), bf16, 4,096 tokens, 16 heads of 128,
// sbhd, forward + backward 0.594 ms at p = 0 and 0.614 ms at p = 0.1 on H200 (NVIDIA/
// TransformerEngine issue #3312, TE 2.14): 0.594 / 0.614 of the throughput, applied to both passes.
constexpr double kFusedAttentionDropout = 0.594 / 0.614;
// FlashAttention in Triton against FlashAttention-2, forward and backward (the flash_triton kind;
// Dao, FlashAttention-2, arXiv:2307.08691 sec. 4.1: FlashAttention-2 "around 1.3-1.5x faster ... in
// the forward pass and around 2x faster in the backward pass", on an A100 80GB).
constexpr double kTritonFwd = 1.4;
constexpr double kTritonBwd = 2.0;

// Packed sequences (THD with cu_seqlens) attend within each sample: seq/sample causal blocks of
// sample^2/2 pairs, seq*sample/2 in all, each kernel as long as a sample. Megatron-LM's unfused
// attention packs with a block-diagonal mask (--reset-attention-mask) over the whole sequence
// instead, so it keeps the full cost.
void flash(std::vector<Op>& out, const LayerShape& s, bool backward, AttentionKernel kind) {
  double span = s.attention_span();
  double causal = 2.0 * s.batch * s.heads * s.seq * span * (s.head_dim + s.v_dim) * 0.5 / s.cp;
  double io = s.tokens * (2 * s.q_width + 2 * s.kv_width) * kAct;
  double pass = backward ? 2.5 : 1.0;
  auto add = [&](const char* name, double layer_share, double key_share, double length) {
    if (layer_share <= 0) return;
    Op op{.name = std::string(name) + (backward ? ".bwd" : ""), .kind = OpKind::attention, .backward = backward};
    op.m = length;
    op.k = (s.head_dim + s.v_dim) / 2;  // the heads' mean width: QK^T runs at head_dim, PV at v_dim
    op.flops = flops(pass * causal * key_share * layer_share);
    op.bytes = bytes(pass * io * layer_share);
    op.kernels = layer_share;
    if (s.attention_dropout) op.efficiency_scale = kFusedAttentionDropout;
    op.flash2 = kind == AttentionKernel::flash2 || kind == AttentionKernel::flash_triton;
    op.flash_triton = kind == AttentionKernel::flash_triton;
    out.push_back(std::move(op));
  };
  double rank_span = span / s.cp;
  add("attn.core", s.window > 0 ? s.full_attn_layers : 1.0, 1.0, rank_span);
  // window_share is against full causal attention over the sequence; causal is over the span.
  if (s.window > 0)
    add("attn.core.window", 1 - s.full_attn_layers, s.window_share * s.seq / span, std::min(rank_span, 2 * s.window));
}

// Megatron-LM's unfused attention (core_attention): baddbmm QK^T, fused scale-mask-softmax,
// dropout, bmm with V. Scores are b*a*s_q*s_kv elements of 16 bits; the dropout mask 1 byte.
// Without attention dropout PyTorch's dropout returns its input (ATen Dropout.cpp): no kernel.
void unfused_forward(std::vector<Op>& out, const LayerShape& s) {
  double bh = s.batch * s.heads, sq = s.seq / s.cp, scores = bh * sq * s.seq;
  out.push_back(batched_gemm("attn.qk", sq, s.seq, s.head_dim, bh));
  out.push_back(memory("attn.softmax", scores, 2 * kAct));
  if (s.attention_dropout) out.push_back(memory("attn.dropout", scores, 2 * kAct + 1));
  out.push_back(batched_gemm("attn.av", sq, s.head_dim, s.seq, bh));
}

void unfused_backward(std::vector<Op>& out, const LayerShape& s) {
  double bh = s.batch * s.heads, sq = s.seq / s.cp, scores = bh * sq * s.seq;
  Op av = batched_gemm("attn.av", sq, s.head_dim, s.seq, bh), qk = batched_gemm("attn.qk", sq, s.seq, s.head_dim, bh);
  gemm_backward(out, av);
  if (s.attention_dropout) out.push_back(memory("attn.dropout.bwd", scores, 2 * kAct + 1));
  out.push_back(memory("attn.softmax.bwd", scores, 3 * kAct));
  gemm_backward(out, qk);
}

// `op` run as `splits` chunks of m/splits rows on `sm_share` of the SMs (same FLOPs; the
// weight is read once per chunk).
void split_rows(Op& op, double splits, double sm_share = 1) {
  if (splits <= 1 && sm_share >= 1) return;
  Op chunked = gemm(op.name, op.m / splits, op.n, op.k, op.batch * splits, op.elem_bytes);
  chunked.kernels = op.kernels * splits;
  chunked.sm_share = sm_share;
  chunked.bf16_only = op.bf16_only;
  op = std::move(chunked);
}

// Gradient-accumulation fusion (Megatron-LM --gradient-accumulation-fusion, apex
// fused_weight_gradient_mlp_cuda; Transformer Engine fuse_wgrad_accumulation): the weight-gradient
// GEMM adds into the main grad, C += A B with C in the main-grad type, so its epilogue reads and
// writes main-grad elements instead of storing 16-bit ones: the curve's epilogue term scales by
// 2 x main bytes / 2 (4 for fp32, 2 for 16-bit main grads) and the op moves those bytes.
void accumulate(Op& op, spec::Dtype main) {
  double main_bytes = spec::dtype_bytes(main);
  op.epilogue = main_bytes;
  op.bytes = bytes(((op.m * op.k + op.k * op.n) * op.elem_bytes + op.m * op.n * 2 * main_bytes) * op.batch);
}

Op* find(std::vector<Op>& ops, const std::string& name) {
  for (Op& op : ops)
    if (op.name == name) return &op;
  return nullptr;
}

// The layer's GEMMs (forward shapes), shared by forward and backward.
std::vector<Op> layer_gemms(const LayerShape& s, Dtype precision) {
  double e = gemm_elem_bytes(precision), t = s.tokens;
  std::vector<Op> g;
  if (s.mamba()) {
    // Megatron-Core MambaMixer: in_proj (column parallel, the pre-norm fused in) yields z, x, B, C
    // and dt; out_proj (row parallel) maps the gated, normed y back to the hidden size.
    g.push_back(gemm("mamba.in_proj", t, s.ssm_in_width(), s.hidden, 1, e));
    g.push_back(gemm("mamba.out_proj", t, s.hidden, s.ssm_inner(), 1, e));
  }
  if (!s.attention) {
    // no attention block
  } else if (s.kv_lora > 0) {
    // MLA (Megatron-Core MLASelfAttention): the down-projections are replicated on the TP ranks,
    // the up-projections and the output projection split by heads.
    double v_width = s.heads * s.v_dim;
    if (s.q_lora > 0) {
      g.push_back(gemm("attn.q_down", t, s.q_lora, s.hidden, 1, e));
      g.push_back(gemm("attn.q_up", t, s.q_width, s.q_lora, 1, e));
    } else {
      g.push_back(gemm("attn.q", t, s.q_width, s.hidden, 1, e));
    }
    g.push_back(gemm("attn.kv_down", t, s.kv_lora + s.qk_rope, s.hidden, 1, e));
    g.push_back(gemm("attn.kv_up", t, s.heads * (s.head_dim - s.qk_rope + s.v_dim), s.kv_lora, 1, e));
    g.push_back(gemm("attn.proj", t, s.hidden, v_width, 1, e));
  } else {
    g = {gemm("attn.qkv", t, s.q_width + 2 * s.kv_width, s.hidden, 1, e), gemm("attn.proj", t, s.hidden, s.q_width, 1, e)};
  }
  if (!s.mlp) return g;
  if (s.experts_local > 0) {
    // The router is Megatron-Core's own linear (TopKRouter: torch linear in bf16 or fp32), not TE's.
    g.push_back(gemm("moe.router", t, s.experts, s.hidden, 1, kAct));
    g.back().bf16_only = true;
    double per_expert = s.expert_tokens / s.experts_local * 1.0;
    // LatentMoE (Megatron-Core MoELayer): fc1_latent_proj maps the rank's routed tokens (b s / tp
    // with sequence parallelism) hidden -> latent before the dispatch, fc2_latent_proj maps the
    // combined output back; both Transformer Engine linears replicated on the TP ranks.
    if (s.latent > 0) {
      g.push_back(gemm("moe.latent_in", t / s.tp, s.latent, s.hidden, 1, e));
      g.push_back(gemm("moe.latent_out", t / s.tp, s.hidden, s.latent, 1, e));
    }
    // Transformer Engine's GroupedLinear (Megatron-Core moe_grouped_gemm) runs one cuBLAS GEMM per
    // local expert (general_grouped_gemm: a loop over multi-stream cuBLAS calls): one kernel each.
    g.push_back(gemm("moe.fc1", per_expert, s.expert_ffn * s.gate, s.expert_width, s.experts_local, e));
    g.back().kernels = s.experts_local;
    g.push_back(gemm("moe.fc2", per_expert, s.expert_width, s.expert_ffn, s.experts_local, e));
    g.back().kernels = s.experts_local;
    if (s.shared_ffn > 0) {
      g.push_back(gemm("moe.shared.fc1", t, s.shared_ffn * s.gate, s.hidden, 1, e));
      g.push_back(gemm("moe.shared.fc2", t, s.hidden, s.shared_ffn, 1, e));
    }
  } else {
    g.push_back(gemm("mlp.fc1", t, s.ffn * s.gate, s.hidden, 1, e));
    g.push_back(gemm("mlp.fc2", t, s.hidden, s.ffn, 1, e));
  }
  return g;
}

void mlp_elementwise(std::vector<Op>& e, const LayerShape& s, double ffn_elems);

// The SSD scan (Dao & Gu 2024, sec. 6, the chunked algorithm), as mamba_ssm's Triton kernels run it
// on Megatron-Core's memory-efficient path (ops/triton/ssd_combined.py @ d757aef1,
// _mamba_chunk_scan_combined_fwd): five kernels -- the dt softplus and cumulative decay per chunk
// (chunk_cumsum), each chunk's final state (chunk_state), the recurrence over chunks
// (state_passing), C B^T per chunk (bmm_chunk), and the output from both with the D skip and the
// gate y x silu(z) fused in (chunk_scan, which writes the gated and the ungated output). Its
// matmuls are small (chunk x chunk, state x head_dim; ~20 FLOPs per byte): its traffic is what it
// costs. Bytes per token on a rank, counted from the kernels' reads and writes (docs/research/
// mamba2-kernels.md sec. 2; B, C and C B^T shared by a group's heads assumed read once from HBM):
// x read twice and z once, out and out_x written (10 x inner); the chunk states in fp32 written,
// read and rewritten in 16 bits, read (12 x heads x head_dim x state / chunk); C B^T in fp32 written
// and read (8 x groups x chunk); B and C read twice each (8 x groups x state); dt and its fp32
// softplus and decay sums (26 x heads).
double mamba_ssd_bytes(const LayerShape& s) {
  double hp = s.ssm_inner(), states = s.ssm_heads * s.ssm_head_dim * s.ssm_state / s.ssm_chunk;
  return 10 * hp + 12 * states + 8 * s.ssm_groups * s.ssm_chunk + 8 * s.ssm_groups * s.ssm_state + 26 * s.ssm_heads;
}
constexpr double kMambaSsdKernels = 5;
// Its backward (_mamba_chunk_scan_combined_bwd) recomputes the decay sums, C B^T, the chunk states
// and their recurrence it did not keep, then runs the gradient kernels (dz, dstates, the reverse
// recurrence, dx, dB, dC, dCB, the two bmm backwards, the decay gradients) and their zero fills and
// reductions: 34 x inner + 34 x states + 24 x groups x chunk + 54 x groups x state + 60 x heads
// bytes per token in about 35 kernels (same count).
double mamba_ssd_backward_bytes(const LayerShape& s) {
  double hp = s.ssm_inner(), states = s.ssm_heads * s.ssm_head_dim * s.ssm_state / s.ssm_chunk;
  return 34 * hp + 34 * states + 24 * s.ssm_groups * s.ssm_chunk + 54 * s.ssm_groups * s.ssm_state + 60 * s.ssm_heads;
}
constexpr double kMambaSsdBackwardKernels = 35;
// The scan's kernels are bound by their SMs as much as by HBM: their matmuls are chunk-sized
// tl.dot tiles that Triton's gates (num_warps 4 or 8, result rows a multiple of 64) send to the
// warp-level mma.sync path in the winners Megatron-Core recorded for its SSD kernels
// (megatron/core/ssm/ops/tuned_autotune_configs.py: 2-warp configs on GB200 and GB300), around
// exp, cumsum and masking on the CUDA cores -- work that scales with SMs x clock, not with HBM
// bandwidth or the tensor cores' rated peak (docs/research/mamba2-blackwell.md). Anchor: on the H100
// SXM5, where dtsim's SSD prices match Megatron-Bridge's Nemotron 3 Nano row, the SM bound equals
// the traffic bound (dgx-h100: 0.70 x 3,350 GB/s against 132 SMs x 1.98 GHz), so H100 runs are
// priced as before. Check, a pure Mamba-2 1.4B (48 layers, d_model 2048, batch 4 x 4096, bf16;
// state-spaces/mamba #904): A100 : H200 : GB200 measured 1 : 2.33 : 3.52, dtsim 1 : 2.36 : 3.78
// with this bound, 1 : 2.55 : 4.60 on HBM alone (test "cost: the SSD scan is bound by its SMs").
constexpr double kSsdBytesPerSmCycle = 0.70 * 3350e9 / (132 * 1.98e9);
// The causal convolution (Dao-AILab causal-conv1d, channel-last CUDA kernel with SiLU): read and
// write each of x, B and C once; its backward runs the forward again (the memory-efficient path
// keeps only the convolution's input) and the gradient kernel (read the output gradient and the
// input, write the input gradient), with the fp32 weight-gradient buffers zeroed: 2.5 times the
// forward's bytes in 5 kernels.
constexpr double kMambaConvBackward = 2.5;
constexpr double kMambaConvBackwardKernels = 5;
// The grouped RMSNorm after the scan (mamba_ssm layernorm_gated.py, called without z: the gate ran
// in chunk_scan): read y and write it normed, one kernel; backward reads y and the output gradient
// and writes the input gradient (1.5 times), with the weight gradient's reduction and a cast: 3.
constexpr double kMambaNormBackward = 1.5;
constexpr double kMambaNormBackwardKernels = 3;
void attention_elementwise(std::vector<Op>& e, const LayerShape& s, const Fusions& fused);
void mamba_elementwise(std::vector<Op>& e, const LayerShape& s, double norm_bytes, double norm_kernels,
                       double bda_bytes, double bda_kernels);

// Element-wise kernels of the forward pass: two norms (read x, write y), two fused
// bias-dropout-add (read 2, write 1, mask), the MLP activation (read gate inputs, write 1),
// rotary embedding, MoE token permute/unpermute, context parallelism's merges of partial
// attention outputs; fp8 adds a cast of every GEMM input (read 2, write 1).
std::vector<Op> layer_elementwise(const LayerShape& s, Dtype precision, const Fusions& fused) {
  double th = s.tokens * s.hidden * s.sp;
  double ffn_elems = s.experts_local > 0 ? s.expert_tokens * s.expert_ffn * s.experts_local / s.experts_local
                                         : s.tokens * s.ffn;
  // Unfused, per output element: a bias add before the activation (read 2, write 2 per input
  // element) and, gated, SiLU apart from the multiply (its output written and read: 4 bytes);
  // bias add, dropout and residual add as three ops (11 bytes, 15 with the bias, against 7).
  double act_bytes = (s.gate + 1) * kAct, act_kernels = 1;
  // The fused bias-dropout-add writes its mask only when there is dropout to apply.
  double bda_bytes = 3 * kAct + (s.hidden_dropout ? 1 : 0), bda_kernels = 1;
  bool separate_bias = s.mlp_bias && !fused.bias_in_gemm;
  if (!fused.activation) {
    if (separate_bias) act_bytes += s.gate * 2 * kAct, act_kernels += 1;
    if (s.gate > 1) act_bytes += 2 * kAct, act_kernels += 1;
  }
  if (!fused.residual) {
    if (s.hidden_dropout) bda_bytes += 2 * kAct, bda_kernels += 1;
    if (separate_bias) bda_bytes += 2 * kAct, bda_kernels += 1;
  }
  // Unfused RMSNorm (torchtitan RMSNorm.forward: self._norm(x.float()).type_as(x) * self.weight,
  // _norm = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)): upcast (read 2, write 4),
  // pow (4, 4), mean (4), multiply (4, 4), cast back (4, 2), weight (2, 2) = 36 bytes, 8 kernels
  // counting the per-row add and rsqrt.
  double norm_bytes = 2 * kAct, norm_kernels = 1;
  if (!fused.rms_norm && s.rms_norm) norm_bytes = 36, norm_kernels = 8;
  std::vector<Op> e;
  if (s.mamba()) mamba_elementwise(e, s, norm_bytes, norm_kernels, bda_bytes, bda_kernels);
  if (s.attention) {
    e.push_back(memory("norm1", th, norm_bytes, norm_kernels));
    e.push_back(memory("attn.bda", th, bda_bytes, bda_kernels));
  }
  if (s.mlp) {
    e.push_back(memory("norm2", th, norm_bytes, norm_kernels));
    e.push_back(memory("mlp.act", ffn_elems, act_bytes, act_kernels));
    e.push_back(memory("mlp.bda", th, bda_bytes, bda_kernels));
    mlp_elementwise(e, s, ffn_elems);
  }
  if (s.attention) attention_elementwise(e, s, fused);
  (void)precision;
  return e;
}

// The MLP block's element-wise kernels beyond its norm, activation and residual add.
void mlp_elementwise(std::vector<Op>& e, const LayerShape& s, double ffn_elems) {
  // A clamped GLU as Megatron-Core runs it (megatron/core/fusions/fused_bias_geglu.py,
  // weighted_bias_quick_geglu_impl with clamp_value, gpt-oss): the gate and linear halves are
  // clamped and concatenated by PyTorch ops before the fused activation kernel reads them -- two
  // clamps (read 2, write 2 per element of each half) and a cat (read 4, write 4): 16 bytes per
  // element of the activation's output in 3 kernels. (It also builds its linear-offset tensor on the
  // device each call, a blocking copy: the host wait is schedule::layer_cost's.)
  if (s.glu_clamp && s.gate > 1) e.push_back(memory("mlp.act.clamp", ffn_elems, 8 * kAct, 3));
  if (s.experts_local > 0) e.push_back(memory("moe.permute", s.expert_tokens * s.expert_width, 4 * kAct, 2));
  // The alltoall dispatcher's second permutation: the received [rank][local expert] chunks copied
  // into [local expert][rank] order, and the expert outputs copied back before the combine
  // (megatron/core/transformer/moe/token_dispatcher.py, MoEAlltoAllTokenDispatcher: "Permutation 2:
  // Sort tokens by local expert", moe_utils.sort_chunks_by_idxs, torch.split + torch.cat or
  // Transformer Engine's fused sort_chunks_by_index): read and write every routed row once each way.
  if (s.sort_chunks) e.push_back(memory("moe.sort_chunks", s.expert_tokens * s.expert_width, 4 * kAct, 2));
}

// The attention block's element-wise kernels beyond its norm and residual add.
void attention_elementwise(std::vector<Op>& e, const LayerShape& s, const Fusions& fused) {
  // Qwen3's per-head norms of the queries and keys (Megatron-Core SelfAttention q_layernorm and
  // k_layernorm, Transformer Engine RMSNorm modules): read and write every query and key element,
  // one kernel each.
  if (s.qk_norm) e.push_back(memory("attn.qk_norm", s.tokens * (s.q_width + s.kv_width), 2 * kAct, 2));
  // Rotary embedding (Megatron-Core apply_rope_fusion: one fused kernel) rotates Q and K in place.
  // Unfused (torchtitan apply_rotary_emb): per tensor an fp32 upcast (read 2, write 4), a complex
  // multiply (read 8, write 8) and the cast back (read 4, write 2), three kernels each.
  // Megatron-Core with fusion on but YaRN-scaled cos and sin falls back to its own unfused
  // _apply_rotary_pos_emb_bshd (rope_utils.py, since Megatron-LM PR #2038, 2025-10: "mscale is
  // not supported by TE's fused RoPE"): t * cos (read 2, write 2), rotate_half's negation of one
  // half and cat (1 + 1, 2 + 2), * sin (2, 2), the add (4, 2) and the closing cat with the
  // unrotated rest (2, 2): 24 bytes per element (gpt-oss), in 6 kernels per tensor, and 6 more
  // on the [s, 1, 1, d] frequencies each call (torch.cos, * mscale, .to, the same for sin): 24
  // kernels for the query and the key (megatron/core/models/common/embeddings/rope_utils.py).
  double qk = s.tokens * (s.q_width + s.kv_width);
  if (s.rotary)
    e.push_back(!fused.rope          ? memory("attn.rope", qk, 28, 6)
                : s.rope_scaled      ? memory("attn.rope", qk, 24, 24)
                                     : memory("attn.rope", qk, 2 * kAct));
  // FlashAttention on unpadded rows (llm-foundry's MPT flash_attn_fn; flash_attn.bert_padding):
  // unpad_input gathers Q, K and V into packed rows (index_first_axis: read 2, write 2 each) and
  // pad_input writes the output into a zeroed full tensor (zeros 2, index_put read 2, write 2), even
  // when nothing is padded: 4 (q + 2 kv) + 6 q bytes per token in 5 kernels (backward: see
  // layer_backward).
  if (fused.attention_unpad)
    e.push_back(memory("attn.unpad", s.tokens, 4 * (s.q_width + 2 * s.kv_width) + 6 * s.q_width, 5));
  if (s.cp > 1) {
    // Ring attention (Transformer Engine AttnFuncWithCPAndKVP2P.forward): K and V are packed into
    // one p2p buffer (read 2, write 2), the output is zeroed and each of the cp partial results
    // is merged into it by its softmax statistics (read partial, read and write the output).
    e.push_back(memory("attn.cp.kv_pack", s.tokens * 2 * s.kv_width, 2 * kAct));
    e.push_back(memory("attn.cp.merge", s.tokens * s.q_width, (1 + 3 * s.cp) * kAct, 1 + s.cp));
  }
}

// A Mamba-2 layer's kernels besides its two projections, as Megatron-Core's MambaMixer runs them
// on its memory-efficient path (mamba_split_conv1d_scan_combined, mamba_ssm
// ops/triton/ssd_combined.py): the pre-norm (fused into in_proj as the attention's into QKV), the
// causal depthwise convolution with SiLU over x, B and C (read 2, write 2 per element), the SSD
// scan with its gate (mamba_ssd_bytes), the grouped RMSNorm (read 2, write 2), the residual add.
void mamba_elementwise(std::vector<Op>& e, const LayerShape& s, double norm_bytes, double norm_kernels,
                       double bda_bytes, double bda_kernels) {
  double th = s.tokens * s.hidden * s.sp;
  e.push_back(memory("mamba.prenorm", th, norm_bytes, norm_kernels));
  e.push_back(memory("mamba.conv1d", s.tokens * s.ssm_conv_width(), 2 * kAct));
  Op ssd = memory("mamba.ssd", s.tokens, mamba_ssd_bytes(s), kMambaSsdKernels);
  ssd.sm_cycles = ssd.bytes.value() / kSsdBytesPerSmCycle;
  e.push_back(std::move(ssd));
  e.push_back(memory("mamba.norm", s.tokens * s.ssm_inner(), 2 * kAct));
  e.push_back(memory("mamba.bda", th, bda_bytes, bda_kernels));
}

}  // namespace

double gemm_efficiency(const spec::ComputeCalibration& cal, Dtype d, double m, double n, double k, double epilogue,
                       std::string_view gpu) {
  const spec::GemmCurve* c = &cal.curve(d, gpu);
  if (c->max_efficiency <= 0 && (d == Dtype::fp16 || d == Dtype::bf16))
    c = &cal.curve(d == Dtype::fp16 ? Dtype::bf16 : Dtype::fp16);
  if (c->max_efficiency <= 0) c = &cal.curve(Dtype::bf16);
  if (m <= 0 || n <= 0 || k <= 0) return c->max_efficiency;
  return c->at(m * n, k, epilogue);
}

double moe_busiest_rank(std::int64_t ep, double mean_slots, double skew) {
  if (ep <= 1 || mean_slots <= 0) return 1 + skew;
  double e = static_cast<double>(ep);
  return (1 + expected_max_normal(ep) * std::sqrt((1 - 1 / e) / mean_slots)) * (1 + skew);
}

double expected_max_normal(std::int64_t n) {
  if (n <= 1) return 0;
  double nd = static_cast<double>(n);
  double p = (nd - 0.375) / (nd + 0.25);
  // Invert Phi(z) = erfc(-z/sqrt 2)/2 by bisection: Phi is monotone and p < 1 - 1e-9 for any
  // realistic n, so [0, 8] brackets the root; 60 halvings reach double precision.
  double lo = 0, hi = 8;
  for (int i = 0; i < 60; ++i) {
    double mid = 0.5 * (lo + hi);
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double slowest_gpu_pace(double spread, std::int64_t gpus) {
  if (spread <= 0) return 1;
  // The planner asks for the same job size over and over: remember the last answer per thread.
  thread_local std::int64_t last_n = -1;
  thread_local double last_z = 0;
  if (gpus != last_n) {
    last_n = gpus;
    last_z = expected_max_normal(gpus);
  }
  return 1 + spread * last_z;
}

OpTiming op_timing(const Op& op, const ComputeContext& ctx) {
  const spec::ComputeCalibration& cal = *ctx.cal;
  OpTiming t;
  if (op.kind == OpKind::gemm) {
    bool low = ctx.precision == Dtype::fp8 || ctx.precision == Dtype::fp4;
    Dtype d = op.bf16_only && low ? Dtype::bf16 : ctx.precision;
    double rows = op.strided_batch ? op.m * op.batch : op.m;  // one grid of every matrix's tiles
    t.efficiency = gemm_efficiency(cal, d, rows, op.n, op.k, op.epilogue, ctx.gpu->name);
    FlopsPerSecond peak = ctx.gpu->peak(d);
    if (peak.value() <= 0) peak = ctx.gpu->peak(Dtype::bf16);
    t.compute = op.flops / (peak * t.efficiency * op.sm_share);
    // MXFP8's block-scaled kernels against the per-tensor fp8 curve, pass by pass.
    if (ctx.mxfp8 && d == Dtype::fp8) {
      const spec::PassRatios& r = cal.mxfp8_gemm_time;
      t.compute = t.compute * (op.pass == GemmPass::fprop ? r.fprop : op.pass == GemmPass::dgrad ? r.dgrad : r.wgrad);
    }
  } else if (op.kind == OpKind::attention) {
    // op.m: the causal-equivalent length one attention kernel runs (flash()).
    // op.k: the heads' width (flash()).
    t.efficiency = cal.flash_efficiency(ctx.gpu->name, op.backward, op.m, op.k) * op.efficiency_scale;
    if (op.flash2) t.efficiency *= op.backward ? cal.flash2_bwd_ratio : cal.flash2_fwd_ratio;
    // FlashAttention-2 is "around 1.3-1.5x faster than FlashAttention in Triton in the forward pass
    // and around 2x faster in the backward pass" (arXiv:2307.08691 sec. 4.1): 1.4 and 2.
    if (op.flash_triton) t.efficiency /= op.backward ? kTritonBwd : kTritonFwd;
    // Attention runs in 16 bits even in fp8 recipes (Transformer Engine keeps DPA in bf16).
    t.compute = op.flops / (ctx.gpu->peak(Dtype::bf16) * t.efficiency);
  }
  t.memory = op.bytes / (ctx.gpu->hbm_bandwidth * cal.memory_efficiency);
  if (op.sm_cycles > 0 && ctx.gpu->boost_clock_ghz > 0 && ctx.gpu->sm_count > 0) {
    Seconds issue{op.sm_cycles / (static_cast<double>(ctx.gpu->sm_count) * ctx.gpu->boost_clock_ghz * 1e9)};
    t.sm_bound = issue > t.memory && issue > t.compute;
    t.compute = std::max(t.compute, issue);
  }
  t.overhead = cal.kernel_overhead * op.kernels;
  t.total = (std::max(t.compute, t.memory) + t.overhead) * ctx.pace;
  return t;
}

Seconds op_time(const Op& op, const ComputeContext& ctx) { return op_timing(op, ctx).total; }

Seconds ops_time(const std::vector<Op>& ops, const ComputeContext& ctx) {
  Seconds total{0};
  for (const Op& op : ops) total += op_time(op, ctx);
  return total;
}

TpOverlapShape tp_overlap_shape(std::int64_t tp, bool tp_comm_overlap, std::int64_t sm_count,
                                const spec::TpOverlapRs& rs) {
  if (tp <= 1 || !tp_comm_overlap) return {};
  double sms = static_cast<double>(sm_count), ring = static_cast<double>(tp);
  // A pipelined overlap runs 4 chunks (num_splits) on the SMs its communication kernel leaves.
  auto share = [&](int comm_sms) { return sms > comm_sms ? (sms - comm_sms) / sms : 1.0; };
  TpOverlapShape o{.ring_splits = ring};
  o.proj_ring = rs.proj_sms == spec::TpOverlapRs::kRing, o.fc2_ring = rs.fc2_sms == spec::TpOverlapRs::kRing;
  o.proj_splits = o.proj_ring ? ring : 4, o.proj_sm_share = o.proj_ring ? 1.0 : share(rs.proj_sms);
  o.fc2_splits = o.fc2_ring ? ring : 4, o.fc2_sm_share = o.fc2_ring ? 1.0 : share(rs.fc2_sms);
  return o;
}

bool fp8_needs_transpose(const spec::Gpu& gpu) { return gpu.peak_fp4.value() <= 0; }

namespace {

// Bytes per element and kernels to quantize one 16-bit tensor (docs/research/low-precision-
// training.md sec. 5). What produced it matters: TE's norms (LayerNormLinear) write fp8 directly
// (delayed scaling) or compute the amax on the way (current scaling, TE PRs #2004/#2013); MXFP8
// norms do not fuse; a standalone tensor is read by its own kernels. (TE's own activations can
// write fp8 too, but Megatron-Core runs its fused bias-SwiGLU instead.)
enum class Producer { standalone, norm };

struct QuantCost {
  double bytes = 0, kernels = 0;
};

// NVFP4 (Transformer Engine NVFP4BlockScaling): a global amax pass, a second amax after the 16x16
// random Hadamard transform of the column-wise (wgrad) copy, then both copies at 0.5 B + an E4M3
// scale per 16: ~7.1 B per element in ~3 kernels; a norm computes the amax on the way (~5.1 B,
// 2 kernels); the activation does not (with RHT its post-RHT amax is the quantizer's).
QuantCost nvfp4_cost(Producer p) { return p == Producer::norm ? QuantCost{5.1, 2} : QuantCost{7.1, 3}; }

QuantCost quant_cost(spec::Dtype precision, spec::Fp8Recipe r, bool transpose, Producer p) {
  if (precision == Dtype::fp4) return nvfp4_cost(p);
  bool fused = p != Producer::standalone;
  switch (r) {
    case spec::Fp8Recipe::delayed:  // cast (+ transpose): read 2, write 1 (+1)
      if (fused) return transpose ? QuantCost{1, 1} : QuantCost{0, 0};
      return transpose ? QuantCost{4, 1} : QuantCost{3, 1};
    case spec::Fp8Recipe::current:  // an amax pass (read 2), the scale, then cast (+ transpose)
      if (fused) return transpose ? QuantCost{4, 2} : QuantCost{3, 1};
      return transpose ? QuantCost{6, 3} : QuantCost{5, 2};
    case spec::Fp8Recipe::mxfp8:
      // Row- and column-wise copies with a scale per 32 elements: read 2, write 2 x (1 + 1/32) =
      // 4.06 B moved. Both copies of a bf16 8192 x 8192 tensor take 52.34 us on a B200
      // (ROCm/TransformerEngine PR #598, "B200 (us)" column, MXFP8 CAST_ONLY): those bytes at the
      // B200 profile's 0.70 x 7.7 TB/s plus its 2 us per kernel give 52.6 us
      // (tests/cost/compute_test.cc).
      return {2 + 2 * (1 + 1.0 / 32), 1};
  }
  return {};
}

}  // namespace

Op weight_quantize_op(Dtype precision, spec::Fp8Recipe recipe, bool transpose, bool fp8_params, double elements,
                      double tensors) {
  QuantCost c;
  if (precision == Dtype::fp4) {
    // NVFP4 weights take 2D 16x16 block scaling without the Hadamard transform: a global amax
    // pass (read 2) and the cast (read 2, write 0.5 + a scale per 16 for each of two copies):
    // ~5 bytes per element in 2 kernels (docs/research/low-precision-training.md sec. 1, NVFP4).
    c = {5.0, 2.0};
  } else if (precision == Dtype::fp8) {
    bool mx = recipe == spec::Fp8Recipe::mxfp8;
    if (!fp8_params || mx) c = quant_cost(precision, recipe, transpose, Producer::standalone);
    else if (transpose) c = {2.0, 1.0};  // an fp8 parameter's transposed copy: read 1, write 1
  }
  return memory("fp8.quantize.weights", elements, c.bytes, c.kernels * tensors);
}

// LoRA adapters (Hu et al. 2021, arXiv:2106.09685, sec. 4.1): beside each targeted linear
// Y = X W, a rank-r path X A B (A in x r, B r x out) whose output is added to Y, as NeMo's
// ParallelLinearAdapter runs it: two 16-bit GEMMs outside Transformer Engine's fp8 autocast and an
// element-wise add (read both outputs, write the sum). A column-parallel linear (QKV, FC1) reads
// the whole hidden state and writes its tp shard; a row-parallel one (projection, FC2) the
// reverse. Backward: each adapter GEMM's data and weight gradients, and the sum of the two input
// gradients. The adapters' r-wide tensor-parallel collectives are not priced.
std::vector<LoraTarget> lora_targets(const LayerShape& s) {
  std::vector<LoraTarget> out;
  if (s.lora_rank <= 0 || s.lora_targets == 0) return out;
  namespace lt = spec::lora_target;
  bool moe = s.experts_local > 0;
  double rows = moe ? s.expert_tokens : s.tokens, ffn = moe ? s.expert_ffn : s.ffn, experts = moe ? s.experts_local : 1;
  double width = moe ? s.expert_width : s.hidden;
  const LoraTarget all[] = {
      {"lora.qkv", s.tokens, s.hidden, s.q_width + 2 * s.kv_width, 1, false},
      {"lora.proj", s.tokens, s.heads * s.v_dim, s.hidden, 1, false},
      {"lora.fc1", rows, width, ffn * s.gate, experts, moe},
      {"lora.fc2", rows, ffn, width, experts, moe}};
  const std::uint32_t bits[] = {lt::linear_qkv, lt::linear_proj, lt::linear_fc1, lt::linear_fc2};
  for (int i = 0; i < 4; ++i)
    if (s.lora_targets & bits[i]) out.push_back(all[i]);
  return out;
}

std::vector<Op> lora_ops(const LayerShape& s, bool backward) {
  std::vector<Op> ops;
  for (const LoraTarget& t : lora_targets(s)) {
    Op a = gemm(t.name + ".a", t.rows, s.lora_rank, t.in, 1, kAct);
    Op b = gemm(t.name + ".b", t.rows, t.out, s.lora_rank, 1, kAct);
    for (Op* op : {&a, &b}) {
      op->bf16_only = true;
      op->kernels = t.adapters;
    }
    if (!backward) {
      ops.push_back(a);
      ops.push_back(b);
      ops.push_back(memory(t.name + ".add", t.rows * t.out, 3 * kAct, t.adapters));
    } else {
      gemm_backward(ops, b);
      gemm_backward(ops, a);
      ops.push_back(memory(t.name + ".add.bwd", t.rows * t.in, 3 * kAct, t.adapters));
    }
  }
  return ops;
}

std::vector<Op> quantize_ops(const LayerShape& s, const Fusions& f, bool backward, Dtype precision) {
  bool moe = s.experts_local > 0;
  // An MoE layer's expert tensors are quantized expert by expert: Transformer Engine's
  // GroupedLinear splits its input (and its output gradient) with split_quantize, one quantize per
  // expert -- for current scaling the amax zeroing, the amax, the scale and the cast (+ transpose),
  // 4 kernels each; for MXFP8 one. Delayed scaling has a fused multi-tensor kernel and NVFP4
  // grouped ones (docs/research/te-grouped-linear-host-ops.md sec. 2).
  auto q = [&](const char* name, double elems, Producer p, bool experts = false) {
    QuantCost c = quant_cost(precision, f.fp8_recipe, f.fp8_transpose, p);
    if (experts && moe && precision == Dtype::fp8) {
      if (f.fp8_recipe == spec::Fp8Recipe::current) c.kernels = 4 * s.experts_local;
      if (f.fp8_recipe == spec::Fp8Recipe::mxfp8) c.kernels = s.experts_local;
    }
    return memory(name, elems, c.bytes, c.kernels);
  };
  double th = s.tokens * s.hidden * s.sp, t = s.tokens;
  double v_width = s.heads * s.v_dim;
  double ffn_in = moe ? s.expert_tokens * s.expert_ffn : t * s.ffn;
  double mlp_in = moe ? s.expert_tokens * s.expert_width : th;
  std::vector<Op> ops;
  if (s.mamba()) {
    // The Mamba mixer's projections are Transformer Engine linears: in_proj reads the norm's output
    // (TELayerNormColumnParallelLinear), out_proj the gated norm's.
    if (!backward) {
      ops.push_back(q("fp8.quantize.in_proj_in", th, Producer::norm));
      ops.push_back(q("fp8.quantize.out_proj_in", t * s.ssm_inner(), Producer::standalone));
    } else {
      ops.push_back(q("fp8.quantize.in_proj_dgrad", t * s.ssm_in_width(), Producer::standalone));
      ops.push_back(q("fp8.quantize.out_proj_dgrad", th, Producer::standalone));
    }
  }
  if (!backward) {
    if (s.attention) {
      ops.push_back(q("fp8.quantize.qkv_in", th, Producer::norm));
      ops.push_back(q("fp8.quantize.proj_in", t * v_width, Producer::standalone));
    }
    if (s.mlp) {
      // MoE experts quantize the permuted tokens on their own; a dense MLP's input is the norm's.
      ops.push_back(q("fp8.quantize.fc1_in", mlp_in, moe ? Producer::standalone : Producer::norm, true));
      // FC2's input is the activation's bf16 output: Megatron-Core runs its own fused bias-SwiGLU
      // (bias_activation_fusion, which it forbids together with use_te_activation_func) and
      // Transformer Engine's Linear or GroupedLinear then quantizes that input itself.
      ops.push_back(q("fp8.quantize.fc2_in", ffn_in, Producer::standalone, true));
      if (s.shared_ffn > 0) ops.push_back(q("fp8.quantize.shared_fc2_in", t * s.shared_ffn, Producer::standalone));
      if (s.latent > 0) {  // LatentMoE's projections quantize their inputs
        ops.push_back(q("fp8.quantize.latent_in", t / s.tp * s.hidden, Producer::standalone));
        ops.push_back(q("fp8.quantize.latent_out", t / s.tp * s.latent, Producer::standalone));
      }
    }
  } else {
    // Output gradients arrive from the next op's backward: always standalone.
    if (s.attention) {
      ops.push_back(q("fp8.quantize.qkv_dgrad", t * (s.q_width + 2 * s.kv_width), Producer::standalone));
      ops.push_back(q("fp8.quantize.proj_dgrad", th, Producer::standalone));
    }
    if (s.mlp) {
      ops.push_back(q("fp8.quantize.fc1_dgrad", ffn_in * s.gate, Producer::standalone, true));
      ops.push_back(q("fp8.quantize.fc2_dgrad", mlp_in, Producer::standalone, true));
      if (s.shared_ffn > 0) {
        ops.push_back(q("fp8.quantize.shared_fc1_dgrad", t * s.shared_ffn * s.gate, Producer::standalone));
        ops.push_back(q("fp8.quantize.shared_fc2_dgrad", th, Producer::standalone));
      }
      if (s.latent > 0) {
        ops.push_back(q("fp8.quantize.latent_in_dgrad", t / s.tp * s.latent, Producer::standalone));
        ops.push_back(q("fp8.quantize.latent_out_dgrad", t / s.tp * s.hidden, Producer::standalone));
      }
    }
  }
  return ops;
}

// The MoE layer's routing bookkeeping: small kernels over the [tokens x experts] routing map and
// the token counts (which kernels: schedule::layer_kernels), each at the profile's per-kernel cost,
// and, for the map-sized ones, a read and a write of the 4-byte map per kernel -- the router's 3
// forward and the permutation's 3 row-id passes, 1 backward.
namespace {
Op moe_routing_op(const LayerShape& s, bool backward) {
  double kernels = backward ? 1.0 : s.routing_kernels;
  double map_kernels = std::min(kernels, backward ? 1.0 : 6.0);
  return memory(backward ? "moe.route.bwd" : "moe.route", s.tokens * s.experts, 8 * map_kernels, kernels);
}
}  // namespace

std::vector<Op> layer_forward(const LayerShape& s, AttentionKernel attn, Dtype precision, const TpOverlapShape& overlap,
                              const Fusions& fusions) {
  std::vector<Op> ops = layer_gemms(s, precision);
  // Dense layers only: Megatron-Core does not pipeline the experts' GEMMs with TP communication.
  for (const char* name : {"attn.qkv", "mlp.fc1"})
    if (Op* op = find(ops, name)) split_rows(*op, overlap.ring_splits);
  if (Op* op = find(ops, "attn.proj")) split_rows(*op, overlap.proj_splits, overlap.proj_sm_share);
  if (Op* op = find(ops, "mlp.fc2")) split_rows(*op, overlap.fc2_splits, overlap.fc2_sm_share);
  // A ring-exchange reduce-scatter leaves the tp partial chunks in the userbuffer and sums them
  // into the rank's output in one more kernel (TE userbuffers split_overlap_rs_p2p: reduce_bf16):
  // read tp chunks of tokens/tp rows, write one.
  auto ring_reduce = [&](const char* gemm, bool ring) {
    if (ring && find(ops, gemm) != nullptr)
      ops.push_back(memory(std::string(gemm) + ".rs_reduce", s.tokens * s.hidden / s.tp, (s.tp + 1) * kAct));
  };
  ring_reduce("attn.proj", overlap.proj_ring);
  ring_reduce("mlp.fc2", overlap.fc2_ring);
  for (Op& op : lora_ops(s, false)) ops.push_back(std::move(op));
  if (!s.attention) {
  } else if (attn != AttentionKernel::unfused) {
    flash(ops, s, false, attn);
  } else {
    unfused_forward(ops, s);
  }
  for (Op& e : layer_elementwise(s, precision, fusions)) ops.push_back(std::move(e));
  if (s.routing_kernels > 0) ops.push_back(moe_routing_op(s, false));
  if (precision == Dtype::fp8 || precision == Dtype::fp4)
    for (Op& q : quantize_ops(s, fusions, false, precision)) ops.push_back(std::move(q));
  return ops;
}

std::vector<Op> layer_backward(const LayerShape& s, AttentionKernel attn, Dtype precision,
                               const TpOverlapShape& overlap, std::optional<Dtype> accumulate_into,
                               const Fusions& fusions) {
  std::vector<Op> ops;
  for (const Op& g : layer_gemms(s, precision)) {
    gemm_backward(ops, g);
    if (s.frozen) ops.pop_back();  // frozen weights: no weight gradient (the .wgrad just added)
    else if (accumulate_into) accumulate(ops.back(), *accumulate_into);
  }
  for (Op& op : lora_ops(s, true)) ops.push_back(std::move(op));
  for (const char* name : {"attn.proj.dgrad", "mlp.fc2.dgrad"})
    if (Op* op = find(ops, name)) split_rows(*op, overlap.ring_splits);
  if (!s.attention) {
  } else if (attn != AttentionKernel::unfused) {
    flash(ops, s, true, attn);
  } else {
    unfused_backward(ops, s);
  }
  // Element-wise backward kernels move about twice the forward bytes (read grad and saved input).
  // Token permutations move gradients the other way instead: the permutation's backward
  // unpermutes the output gradient (read each routed row, write each token), the unpermutation's
  // reads the gradient again per routed row and the expert outputs it saved (for the routing
  // probabilities' gradient) and writes the routed rows' gradients -- 2 + 6 bytes per routed row
  // and element against the forward's 4 + 4 (Transformer Engine moe_permute / moe_unpermute
  // backward); the sort by local expert is the same copy with the inverse order.
  // Megatron's unfused RoPE backward: the gradient times cos and times sin (2 + 2 each), the
  // negation's and chunk's inverses (1 + 1, 2 + 2) and the two branches summed (4 + 2): 20 bytes
  // per element against the forward's 24.
  // Unpadded attention's backward: pad_input's gradient gathered back (4 q), each of Q, K and V's
  // gradients scattered into a zeroed full tensor (zeros 2, scatter_ read 2, write 2), and the
  // three concatenated into the fused QKV linear's output gradient (the split's backward: read 2,
  // write 2): 4 q + 10 (q + 2 kv) bytes per token in 8 kernels.
  double qkv = s.q_width + 2 * s.kv_width;
  double unpad = (4 * s.q_width + 10 * qkv) / (4 * qkv + 6 * s.q_width);
  bool megatron_unfused_rope = fusions.rope && s.rope_scaled;
  for (Op& e : layer_elementwise(s, precision, fusions)) {
    double k = e.name == "moe.permute" || e.name == "moe.sort_chunks" ? 1.0
               : e.name == "attn.rope" && megatron_unfused_rope  ? 20.0 / 24.0
               : e.name == "attn.unpad"                          ? unpad
               : e.name == "mamba.ssd"                           ? mamba_ssd_backward_bytes(s) / mamba_ssd_bytes(s)
               : e.name == "mamba.conv1d"                        ? kMambaConvBackward
               : e.name == "mamba.norm"                          ? kMambaNormBackward
                                                                 : 2.0;
    if (e.name == "attn.unpad") e.kernels = 8;
    if (e.name == "mamba.ssd") e.kernels = kMambaSsdBackwardKernels;
    if (e.name == "mamba.conv1d") e.kernels = kMambaConvBackwardKernels;
    if (e.name == "mamba.norm") e.kernels = kMambaNormBackwardKernels;
    if (e.name == "attn.rope" && megatron_unfused_rope) e.kernels = 12;  // 6 per tensor; the frequencies take no gradient
    e.name += ".bwd";
    e.bytes = e.bytes * k;
    e.sm_cycles *= k;
    ops.push_back(std::move(e));
  }
  // Biases added in the GEMM's epilogue get their gradients from reductions of their own (PyTorch
  // AddmmBackward: grad.sum(0)), reading the output gradient of the QKV, projection, FC1 and FC2.
  if (s.mlp_bias && fusions.bias_in_gemm && s.attention && s.mlp)
    ops.push_back(memory("linear.bias.bwd", s.tokens, kAct * (qkv + 2 * s.hidden * s.sp + s.ffn * s.gate), 4));
  if (s.routing_kernels > 0) ops.push_back(moe_routing_op(s, true));
  if (precision == Dtype::fp8 || precision == Dtype::fp4)
    for (Op& q : quantize_ops(s, fusions, true, precision)) ops.push_back(std::move(q));
  return ops;
}

std::vector<Op> selective_recompute(const std::vector<Op>& forward, const LayerShape& s, std::uint32_t modules) {
  namespace rm = spec::recompute_module;
  bool moe = s.experts_local > 0, mla = s.kv_lora > 0;
  auto any = [](std::string_view name, std::initializer_list<std::string_view> names) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  auto recomputed = [&](const Op& op) {
    std::string_view n = op.name;
    // core_attn: the attention kernels (every softmax, score and dropout kernel when unfused) and
    // context parallelism's merges of the partial results.
    if ((modules & rm::core_attn) && (op.kind == OpKind::attention || n.starts_with("attn.cp.") ||
                                      any(n, {"attn.qk", "attn.softmax", "attn.dropout", "attn.av"})))
      return true;
    // layernorm: the norms that are modules of their own in Megatron-Core's Transformer Engine
    // layer spec -- before the experts (pre_mlp_layernorm) and before MLA's down-projections
    // (input_layernorm); the others are fused into the next Linear (TELayerNormColumnParallelLinear).
    if ((modules & rm::layernorm) && ((moe && n == "norm2") || (mla && n == "norm1"))) return true;
    if ((modules & rm::mla_up_proj) && mla && any(n, {"attn.q_up", "attn.kv_up", "attn.rope"})) return true;
    bool act = any(n, {"mlp.act", "mlp.act.clamp"});
    if ((modules & rm::moe_act) && moe && act) return true;
    bool mlp = act || any(n, {"mlp.fc1", "mlp.fc2", "fp8.quantize.fc1_in", "fp8.quantize.fc2_in"});
    if ((modules & rm::mlp) && !moe && mlp) return true;
    bool shared = n.starts_with("moe.shared.") || n == "fp8.quantize.shared_fc2_in";
    if ((modules & (rm::moe | rm::shared_experts)) && moe && shared) return true;
    return (modules & rm::moe) && moe && (mlp || n.starts_with("moe.") || n.starts_with("fp8.quantize.latent_"));
  };
  std::vector<Op> ops;
  for (const Op& op : forward)
    if (recomputed(op)) ops.push_back(op);
  if (modules & rm::op_sac) {
    // torchtitan's per-op policy (torchtitan/models/llama/parallelize_llama.py _apply_ac_to_transformer_block,
    // selective_ac_option "op": "Saves output of all compute ops, except every second mm"; the save list
    // is aten.mm, the SDPA kernels and the TP reduce-scatter): within a block, matmuls counted in call
    // order -- wq, wk, wv, wo, then w1, w3, w2 (gated) or fc1, fc2 -- have every even one recomputed, and
    // every op outside the list (norms, activations, RoPE, residual adds, casts) with them. Attention is
    // saved. Dense layers with separate Q, K and V projections (torchtitan's models).
    for (const Op& op : forward) {
      std::string_view n = op.name;
      bool saved = op.kind == OpKind::attention || op.kind == OpKind::gemm || n.starts_with("attn.cp.");
      if (!saved && !recomputed(op)) ops.push_back(op);
    }
    auto part = [&](const std::string& name, double width) {
      for (const Op& op : forward)
        if (op.name == name && op.kind == OpKind::gemm) {
          Op p = gemm(name + ".sac", op.m, width, op.k, op.batch, op.elem_bytes);
          p.kernels = op.kernels;
          p.bf16_only = op.bf16_only;
          ops.push_back(std::move(p));
        }
    };
    part("attn.qkv", s.kv_width);  // wk (2nd)
    part("attn.proj", s.hidden);   // wo (4th)
    if (s.gate > 1) part("mlp.fc1", s.ffn);  // w3 (6th)
    else part("mlp.fc2", s.hidden);          // fc2 (6th)
  }
  return ops;
}

std::vector<Op> embedding_ops(const LayerShape& s, bool backward) {
  double th = s.tokens * s.hidden * s.sp;
  if (!backward) return {memory("embedding", th, 2 * kAct + 1)};
  if (s.frozen) return {};  // a frozen embedding table takes no gradient
  // Gradient scatter-add into the fp32 main-grad of the embedding table.
  return {memory("embedding.bwd", th, kAct + 8)};
}

Op cross_entropy_op(double logits, spec::CrossEntropy ce, bool backward) {
  // Bytes per bf16 logit and kernels. The Megatron-Core and PyTorch paths are measured: Liger-Kernel's
  // benchmark of Megatron-Core's own functions on an H100 80GB HBM3 (8,192 tokens x 131,072 bf16
  // logits; linkedin/Liger-Kernel benchmark/data/all_benchmark_data_megatron.csv @ 7097ab9c, script
  // benchmark/scripts/benchmark_megatron_cross_entropy.py, whose backward rows include the forward):
  // unfused forward 15.82 ms, backward 21.25 - 15.82 = 5.43 ms; fused (fusions/fused_cross_entropy.py) 11.80 and 6.14;
  // F.cross_entropy on .float() logits 8.81 and 9.03. Each is written as the bytes that take that
  // long at dgx-h100's memory rate (0.70 x 3.35 TB/s: t x 2.345e12 / 1.0737e9). Counting the unfused
  // path's passes over the fp32 copy gives 38 B forward (cast 2+4, max 4, subtract 8, exp 8, sum 4,
  // divide 8) and 14 backward (multiply 8, cast to bf16 4+2): these eager kernels stream at 0.77 and
  // 0.83 of the HBM rate, above the profile's average for a step's memory-bound kernels.
  // The fused functions are torch.compile'd (megatron/core/jit.py: jit_fuser on torch >= 2.2) and the
  // benchmark sweeps six vocabulary sizes, so dynamo may have compiled them for dynamic shapes: the
  // fused figure is an upper bound. No stack defaults to it.
  // Transformer Engine's Triton kernels (transformer_engine/pytorch/triton/cross_entropy.py) stream
  // the bf16 logits once forward (online softmax; a second kernel reads only per-row max and sum) and
  // read and overwrite them with the gradient backward: 2 and 4 B per logit, by the code.
  // apex's xentropy kernels (apex/contrib/csrc/xentropy/xentropy_kernel.cu, which flash-attn 1.x's
  // CrossEntropyLoss calls): the forward, one block per row, reads the 16-bit row twice (max and
  // sum in one reduction, the sum of exponentials in a second) and keeps only the per-row log-sum-
  // exp; the backward reads the logits once and writes a new 16-bit gradient: 4 and 4 B, by the code.
  // torch's under torch.compile (torchtitan's compiled loss): Inductor folds the .float() cast into
  // the row's max and sum-of-exponentials reductions, which read the 16-bit row twice (a looped
  // reduction over a vocabulary too wide for one block), saves only the per-row statistics beside
  // the logits, and recomputes the softmax in the backward's one kernel, which reads the logits and
  // writes the 16-bit gradient: 4 and 4 B, as xentropy (derived from Inductor's decomposition and
  // partitioning, not measured).
  struct Cost {
    double forward, backward;
    double kernels_fwd, kernels_bwd;
  };
  Cost c{};
  switch (ce) {
    case spec::CrossEntropy::unfused: c = {34.5, 11.9, 6, 2}; break;
    case spec::CrossEntropy::native: c = {25.8, 13.4, 4, 2}; break;
    case spec::CrossEntropy::te: c = {2, 4, 2, 1}; break;
    case spec::CrossEntropy::torch: c = {19.3, 19.7, 4, 3}; break;
    case spec::CrossEntropy::xentropy: c = {4, 4, 1, 1}; break;
    case spec::CrossEntropy::compiled: c = {4, 4, 2, 1}; break;
  }
  return backward ? memory("cross_entropy.bwd", logits, c.backward, c.kernels_bwd)
                  : memory("cross_entropy", logits, c.forward, c.kernels_fwd);
}

std::vector<Op> logits_ops(const LayerShape& s, spec::CrossEntropy ce_impl, bool backward,
                           std::optional<Dtype> accumulate_into) {
  // Megatron-Core's LM head (GPTModel.output_layer) is its own tensor_parallel.ColumnParallelLinear,
  // not a Transformer Engine module: fp8 and fp4 autocasts leave it in bf16
  // (megatron/core/models/gpt/gpt_model.py).
  Op head = gemm("logits", s.tokens, s.vocab_local, s.hidden, 1, kAct);
  head.bf16_only = true;
  Op ce = cross_entropy_op(s.tokens * s.vocab_local, ce_impl, backward);
  std::vector<Op> ops;
  if (!backward) {
    ops = {head, ce};
  } else {
    ops.push_back(ce);
    gemm_backward(ops, head);
    if (s.frozen) ops.pop_back();  // a frozen LM head computes no weight gradient
    else if (accumulate_into) accumulate(ops.back(), *accumulate_into);
  }
  ops.push_back(memory(backward ? "final_norm.bwd" : "final_norm", s.tokens * s.hidden * s.sp, (backward ? 4 : 2) * kAct));
  return ops;
}

Op grad_accumulation_op(double params, Dtype main_grad, double tensors, bool cast) {
  double main = spec::dtype_bytes(main_grad);
  return memory("grad accumulation", params, 2.0 + (cast ? 4.0 : 2.0) * main, cast ? 2 * tensors : tensors);
}

// ProcessGroupNCCL::allgather with an output list gathers into a flattened tensor, then "Copy the
// flattened output tensors to the outputs", outputTensors[i][j].copy_(...) for each rank j
// (pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp); reduce_scatter copies the
// inputs in the same way before the collective. Each element is read and written once (16 bits);
// PyTorch PR #33924 measured the cost on 8 V100s: 100 all-gathers of 1024^3 floats took 13.96 s
// with the copies, 3.01 s without.
Op list_collective_copies_op(double params, double ranks) {
  return memory("list collective copies", params, 2 * kAct, ranks);
}

// DeepSpeed v0.3 partition_parameters.py _allgather_param: `flat_tensor = torch.zeros(
// aligned_param_size, ...)` then torch.cuda.synchronize() before the all_gather; stage3.py
// fetch_sub_module, after the gathers complete, for every parameter of the submodule:
// print_rank_0(f"Param ... norm={param.norm()}", force=False) -- the f-string is built before
// print_rank_0 decides not to print, and formatting a 0-dim CUDA tensor calls .item(). PR #1188
// (2021-06-25) removed the norm and gathers into torch.empty buffers.
std::vector<Op> zero3_fetch_ops(double params, bool zero_fill, bool norm) {
  std::vector<Op> ops;
  if (zero_fill) ops.push_back(memory("zero3 zero fill", params, kAct));
  if (norm) ops.push_back(memory("zero3 param norm", params, kAct));
  return ops;
}

// What each layer's 16-bit weight gradient goes through before its reduce-scatter:
// - ds_bucket, DeepSpeed stage3.py: the gradient hook copies each gradient into the contiguous ipg
//   buffer (`new_grad_tensor.copy_(param.grad.view(-1))` in 2021, `new_grad_tensor.copy_(param.grad,
//   non_blocking=True)` on the reduce stream later) and average_tensor divides the bucket in place
//   (`tensor.div_(dist.get_world_size(...))`) before reduce_gradients_at_owner reduce-scatters it,
//   8 bytes per element in 2 kernels. Without contiguous_gradients the fallback flattens and
//   divides as well (and all-reduces).
// - flat_param, PyTorch FSDP1 (torch/distributed/fsdp, 2.0-2.x): a unit's parameters are views of
//   its flat parameter (FlatParamHandle._get_unflat_views: torch.split, then .view), so autograd's
//   SplitWithSizesBackward concatenates their gradients into one flat gradient (r 2, w 2); the
//   post-backward hook casts it to the reduce dtype when that differs (`flat_param.grad.to(
//   handle._reduce_dtype)`, _runtime_utils.py _post_backward_hook: r 2, w R) and _reduce_grad
//   divides it in place by the gradient pre-divide factor (_div_if_needed, a factor above 1 for any
//   world size of 2 or more: r/w 2R) before reduce_scatter_tensor. fp32 reduction: 18 bytes per
//   element in 3 kernels; 16-bit: 8 in 2.
// - chunk_cat, PyTorch FSDP2 (foreach_reduce, _fsdp_collectives.py): the unit's per-parameter
//   gradients are copied into the reduce-scatter input by one torch._chunk_cat, which casts to the
//   reduce dtype (r 2, w R), on the compute stream since PR #129721 (2024-06); the reduce-scatter
//   averages inside NCCL (ReduceOp.AVG for fp32 since #120919, bf16 since #123362: no divide
//   kernel). 6 bytes per element with an fp32 reduction, 4 with bf16. docs/research/fsdp2-copies.md.
std::vector<Op> zero3_grad_ops(double params, spec::Zero3GradPath path, spec::Dtype reduce) {
  double r = spec::dtype_bytes(reduce);
  switch (path) {
    case spec::Zero3GradPath::direct: return {};
    case spec::Zero3GradPath::ds_bucket: return {memory("zero3 grad bucket", params, 4 * kAct, 2)};
    case spec::Zero3GradPath::flat_param: {
      std::vector<Op> ops{memory("fsdp flat grad cat", params, 2 * kAct)};
      if (r != kAct) ops.push_back(memory("fsdp grad cast", params, kAct + r));
      ops.push_back(memory("fsdp grad predivide", params, 2 * r));
      return ops;
    }
    case spec::Zero3GradPath::chunk_cat: return {memory("fsdp2 reduce-scatter copy-in", params, kAct + r)};
  }
  return {};
}

// PyTorch FSDP2 (foreach_all_gather_copy_out, _fsdp_collectives.py, every version to 2.9): after
// the all-gather, torch.split_with_sizes_copy copies the gathered flat buffer into the unit's
// per-parameter tensors on the compute stream (r 2, w 2), at every unshard: forward, and again in
// backward after a reshard. docs/research/fsdp2-copies.md sec. 1.
Op zero3_gather_copy_out_op(double params) { return memory("fsdp2 all-gather copy-out", params, 2 * kAct); }

// Bytes per parameter of each pass (r = read, w = write; fp32 master weights, Adam's m and v):
// - the update: gradient r (fp32, or the 16-bit bucket for apex) + master r/w 8 + Adam m, v r/w 16
//   (SGD: momentum r/w 8);
// - megatron (MixedPrecisionOptimizer.step, megatron/core/optimizer/optimizer.py):
//   _copy_model_grads_to_main_grads makes fp32 copies of 16-bit main grads (`.float()`: r 2, w 4;
//   free when they are fp32 already); fp16's loss scaler then unscales them and checks for inf/NaN
//   (torch._amp_foreach_non_finite_check_and_unscale_: r/w 8); clip_grad_norm reads them (4);
//   the fused Adam (apex/TE FusedAdam, multi_tensor_adam) updates; _copy_main_params_to_model_params
//   reads the master weights again and writes the model's parameters (r 4, w 2; 1 in fp8);
// - apex_distributed (apex contrib DistributedFusedAdam, NeMo 1.x): clip_grad_norm reads the
//   16-bit gradient buckets (2); distributed_adam_cuda.multi_tensor_fused_adam (or
//   _with_param_remainders: tensor lists p_in, p_rem, m, v, g, p_out) reads the bucket's gradient
//   (2), unscales in-kernel and writes the parameter in the same kernel: with remainders the bf16
//   parameter and its 16-bit remainder r/w 8 stand for the master's 8;
// - torch (torch.optim.AdamW over FSDP's fp32 shards): clip_grad_norm_ reads the fp32 grads (4)
//   and always multiplies them by the clamped coefficient (r/w 8); the fused step writes the fp32
//   parameter in place (no copy);
// - loop (Composer DecoupledAdamW.adamw, composer/optim/decoupled_weight_decay.py): the same
//   clipping (12), then per parameter tensor param.mul_ (weight decay, r/w 8), exp_avg.mul_ (8)
//   .add_(grad) (r 8, w 4), exp_avg_sq.mul_ (8) .addcmul_(grad, grad) (r 8, w 4), denom =
//   exp_avg_sq.sqrt() (r 4, w 4) / c (r 4, w 4) .add_(eps) (r/w 8), param.addcdiv_(exp_avg, denom)
//   (r 12, w 4): 88 bytes in 9 kernels (Adam); SGD with momentum (DecoupledSGDW) decays (8), updates
//   the buffer (mul_ 8, add_ 12) and adds it (12): 40 in 4.
double optimizer_bytes_per_param(const spec::Training& t, spec::OptimizerImpl impl) {
  double state = t.optimizer == spec::Optimizer::adam ? 16.0 : 8.0;  // m and v, or momentum, r/w
  double model_param = t.fp8_params ? 1.0 : 2.0;
  switch (impl) {
    case spec::OptimizerImpl::apex_distributed: {
      double grad = spec::dtype_bytes(t.grad_dtype);
      return grad /* norm */ + grad + 8.0 + state + (t.param_remainders ? 0.0 : model_param);
    }
    case spec::OptimizerImpl::torch: return 4.0 + 8.0 + (4.0 + 8.0 + state);
    case spec::OptimizerImpl::loop: return 4.0 + 8.0 + (t.optimizer == spec::Optimizer::adam ? 88.0 : 40.0);
    case spec::OptimizerImpl::megatron: break;
  }
  double copy = t.grad_dtype == Dtype::fp32 ? 0.0 : spec::dtype_bytes(t.grad_dtype) + 4.0;
  double unscale = t.precision == Dtype::fp16 ? 8.0 : 0.0;
  return copy + unscale + 4.0 /* norm */ + (4.0 + 8.0 + state) + (4.0 + model_param);
}

MuonOps muon_ops(const LayerShape& s) {
  constexpr double kSteps = 5;  // Newton-Schulz iterations (Emerging-Optimizers default num_ns_steps)
  MuonOps out;
  for (const Op& w : layer_gemms(s, Dtype::bf16)) {
    double a = std::min(w.n, w.k), b = std::max(w.n, w.k), count = w.batch * kSteps;
    std::vector<Op>& to = w.name == "moe.fc1" || w.name == "moe.fc2" ? out.expert : out.dense;
    for (Op g : {gemm("muon." + w.name + ".gram", a, a, b, count, 2), gemm("muon." + w.name + ".poly", a, a, a, count, 2),
                 gemm("muon." + w.name + ".update", a, b, a, count, 2)}) {
      g.kernels = count;
      g.bf16_only = true;
      to.push_back(std::move(g));
    }
  }
  return out;
}

Op optimizer_op(double params, const spec::Training& t, spec::OptimizerImpl impl) {
  double passes = 2.0;
  if (impl == spec::OptimizerImpl::megatron) passes = 3.0 + (t.grad_dtype != Dtype::fp32) + (t.precision == Dtype::fp16);
  if (impl == spec::OptimizerImpl::loop) passes = 2.0 + (t.optimizer == spec::Optimizer::adam ? 9.0 : 4.0);
  return memory("optimizer", params, optimizer_bytes_per_param(t, impl), passes);
}

}  // namespace dtsim::cost
