#include "schedule/pass_cost.h"

#include <algorithm>

#include "cost/compute.h"
#include "cost/layer_shape.h"
#include "cost/memory.h"

namespace dtsim::schedule {
namespace {

using cost::Op;
using cost::OpKind;

SimTime ticks(Seconds s) { return to_sim_time(s); }

void add(PassCost& p, Category c, Seconds s) {
  if (s.value() <= 0) return;
  for (Segment& seg : p.segments) {
    if (seg.category == c) { seg.duration += ticks(s); return; }
  }
  p.segments.push_back({c, ticks(s)});
}

Seconds gemm_time(const std::vector<Op>& ops, const cost::ComputeContext& ctx) {
  Seconds t{0};
  for (const Op& op : ops)
    if (op.kind == OpKind::gemm) t += cost::op_time(op, ctx);
  return t;
}

Seconds attention_time(const std::vector<Op>& ops, const cost::ComputeContext& ctx) {
  Seconds t{0};
  for (const Op& op : ops)
    if (op.kind == OpKind::attention) t += cost::op_time(op, ctx);  // CP runs with fused attention only
  return t;
}

Flops total_flops(const std::vector<Op>& ops) {
  Flops f{0};
  for (const Op& op : ops) f += op.flops;
  return f;
}

// Tensor parallelism per layer and direction: two all-reduces of the b*s/cp x h activation
// (Shoeybi et al. 2019, Megatron-LM sec. 3), or with SP an all-gather and a reduce-scatter each
// (Korthikanti et al. sec. 4.2.2: same volume). With TP overlap (Transformer Engine userbuffers)
// the collectives are pipelined with the GEMMs and only the excess is exposed. What overlap costs
// the GEMMs is priced in their shapes (cost::TpOverlapShape: chunked rows, reserved SMs) except
// for the backward's "bulk" reduce-scatters (half the backward volume), which share the SMs with
// the data-gradient GEMMs: that half slows compute by the calibrated overlap factor.
void add_tp(PassCost& p, const StepSpec& s, const CommPricer& net, const cost::LayerShape& sh, Seconds gemms,
            bool backward) {
  if (s.par.tp == 1) return;
  Bytes act = bytes(sh.tokens * sh.hidden * 2.0);
  Seconds comm = s.par.sequence_parallel
                     ? (net.time({Comm::Op::all_gather, Group::tp, act}) + net.time({Comm::Op::reduce_scatter, Group::tp, act})) * 2.0
                     : net.time({Comm::Op::all_reduce, Group::tp, act}) * 2.0;
  if (!s.software.tp_comm_overlap) return add(p, Category::tp_comm, comm);
  Seconds hidden = std::min(comm, gemms);
  double shared = backward ? 0.5 : 0.0;
  add(p, Category::tp_comm, comm - hidden + hidden * shared * s.cal->compute.overlap_slowdown);
}

// Context parallelism (Megatron-LM/Transformer Engine ring attention): cp-1 steps exchange the
// local K and V (b*s/cp tokens x 2 kv widths, 16 bits; backward also returns dK, dV), each
// overlapped with one step of attention compute; only the excess is exposed.
void add_cp(PassCost& p, const StepSpec& s, const CommPricer& net, const cost::LayerShape& sh, Seconds attn,
            bool backward) {
  if (s.par.cp == 1) return;
  Bytes kv = bytes(sh.tokens * 2.0 * sh.kv_width * 2.0 * (backward ? 2.0 : 1.0));
  Seconds comm = net.time({Comm::Op::send_recv, Group::cp, kv}) * static_cast<double>(s.par.cp - 1);
  add(p, Category::cp_comm, std::max(Seconds{0}, comm - attn));
}

// Expert parallelism: all-to-all dispatch and combine of the routed tokens (b*s/cp*topk x h,
// 16 bits) per MoE layer and direction (Lepikhin et al. 2020, GShard sec. 2.2).
void add_ep(PassCost& p, const StepSpec& s, const CommPricer& net, const cost::LayerShape& sh) {
  if (!s.model->is_moe() || s.par.ep == 1) return;
  Bytes routed = bytes(sh.expert_tokens * sh.hidden * 2.0);
  add(p, Category::ep_comm, net.time({Comm::Op::all_to_all, Group::ep, routed}) * 2.0);
}

// ZeRO-3 / FSDP: all-gather of the layer's parameters before forward and backward, and a
// reduce-scatter of its gradients after backward, prefetched one layer ahead so they overlap
// compute; what exceeds the compute is exposed.
void add_zero3(PassCost& p, const StepSpec& s, const CommPricer& net, double layer_params, Seconds compute,
               bool backward) {
  if (s.par.zero_stage < 3 || s.par.dp * s.par.cp == 1) return;
  Bytes weights = bytes(layer_params * 2.0);
  Bytes grads = bytes(layer_params * spec::dtype_bytes(s.train.grad_dtype));
  Seconds comm = net.time({Comm::Op::all_gather, Group::dp_cp, weights});
  if (backward) comm += net.time({Comm::Op::reduce_scatter, Group::dp_cp, grads});
  Seconds hidden = std::min(comm, compute);
  add(p, Category::dp_comm_exposed, comm - hidden + hidden * s.cal->compute.overlap_slowdown);
}

}  // namespace

cost::ComputeContext compute_context(const StepSpec& s) {
  std::int64_t gpus = s.par.tp * s.par.pp * s.par.dp * s.par.cp;
  double pace = cost::slowest_gpu_pace(s.cal->compute.speed_spread, gpus);
  return {&s.cluster->gpu, &s.cal->compute, s.train.precision, pace};
}

SimTime PassCost::total() const {
  SimTime t = 0;
  for (const Segment& s : segments) t += s.duration;
  return t;
}

void accumulate(PassCost& a, const PassCost& b, double k) {
  for (const Segment& seg : b.segments) add(a, seg.category, to_seconds(seg.duration) * k);
}

LayerCost layer_cost(const StepSpec& s, const CommPricer& net) {
  cost::LayerShape sh = cost::layer_shape(*s.model, s.par, s.train.micro_batch, s.train.seq_len);
  cost::ComputeContext ctx = compute_context(s);
  auto attn = s.software.attention;
  cost::TpOverlapShape overlap = cost::tp_overlap_shape(s.par.tp, s.software.tp_comm_overlap, s.cluster->gpu.sm_count);
  std::vector<Op> fwd = cost::layer_forward(sh, attn, s.train.precision, overlap);
  std::vector<Op> bwd = cost::layer_backward(sh, attn, s.train.precision, overlap);
  LayerCost lc;
  Seconds fwd_t = cost::ops_time(fwd, ctx), bwd_t = cost::ops_time(bwd, ctx);
  add(lc.forward, Category::compute, fwd_t);
  add_tp(lc.forward, s, net, sh, gemm_time(fwd, ctx), false);
  add_cp(lc.forward, s, net, sh, attention_time(fwd, ctx), false);
  add_ep(lc.forward, s, net, sh);
  double layer_params = cost::local_layer_params(*s.model, s.par).total();  // what ZeRO-3 gathers
  add_zero3(lc.forward, s, net, layer_params, fwd_t, false);
  lc.forward_flops = total_flops(fwd);

  if (s.train.recompute == spec::Recompute::full) {
    accumulate(lc.backward, lc.forward);  // the whole forward again, collectives included
    for (Segment& seg : lc.backward.segments) seg.category = Category::recompute;
    lc.recompute_flops = lc.forward_flops;
  } else if (s.train.recompute == spec::Recompute::selective) {
    std::vector<Op> re = cost::selective_recompute(sh, attn);
    add(lc.backward, Category::recompute, cost::ops_time(re, ctx));
    lc.recompute_flops = total_flops(re);
  }
  add(lc.backward, Category::compute, bwd_t);
  add_tp(lc.backward, s, net, sh, gemm_time(bwd, ctx), true);
  add_cp(lc.backward, s, net, sh, attention_time(bwd, ctx), true);
  add_ep(lc.backward, s, net, sh);
  add_zero3(lc.backward, s, net, layer_params, bwd_t, true);
  return lc;
}

PassCost embedding_cost(const StepSpec& s, const CommPricer& net, bool backward) {
  cost::LayerShape sh = cost::layer_shape(*s.model, s.par, s.train.micro_batch, s.train.seq_len);
  PassCost p;
  add(p, Category::compute, cost::ops_time(cost::embedding_ops(sh, backward), compute_context(s)));
  // Vocab-parallel embedding: the partial lookups are all-reduced (reduce-scattered with SP).
  if (s.par.tp > 1 && !backward) {
    Bytes act = bytes(sh.tokens * sh.hidden * 2.0);
    add(p, Category::tp_comm,
        net.time({s.par.sequence_parallel ? Comm::Op::reduce_scatter : Comm::Op::all_reduce, Group::tp, act}));
  }
  return p;
}

PassCost head_cost(const StepSpec& s, const CommPricer& net, bool backward) {
  cost::LayerShape sh = cost::layer_shape(*s.model, s.par, s.train.micro_batch, s.train.seq_len);
  PassCost p;
  add(p, Category::compute, cost::ops_time(cost::logits_ops(sh, s.train.precision, backward), compute_context(s)));
  if (s.par.tp > 1) {
    // SP gathers the final norm's output before the LM head (reduce-scatter in backward); the
    // vocab-parallel cross-entropy all-reduces max, sum and target logit (3 x b*s/cp floats).
    Bytes act = bytes(sh.tokens * sh.hidden * 2.0);
    if (s.par.sequence_parallel)
      add(p, Category::tp_comm, net.time({backward ? Comm::Op::reduce_scatter : Comm::Op::all_gather, Group::tp, act}));
    if (!backward) add(p, Category::tp_comm, net.time({Comm::Op::all_reduce, Group::tp, bytes(sh.tokens * 12.0)}));
  }
  return p;
}

}  // namespace dtsim::schedule
