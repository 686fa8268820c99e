#include "schedule/pass_cost.h"

#include <algorithm>

#include "cost/compute.h"
#include "cost/layer_shape.h"
#include "cost/memory.h"
#include "topology/placement.h"

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

Seconds category_time(const PassCost& p, Category c) {
  for (const Segment& seg : p.segments)
    if (seg.category == c) return to_seconds(seg.duration);
  return Seconds{0};
}

Seconds gemm_time(const std::vector<Op>& ops, const cost::ComputeContext& ctx) {
  Seconds t{0};
  for (const Op& op : ops)
    if (op.kind == OpKind::gemm) t += cost::op_time(op, ctx);
  return t;
}

Seconds named_time(const std::vector<Op>& ops, std::initializer_list<const char*> names,
                   const cost::ComputeContext& ctx) {
  Seconds t{0};
  for (const Op& op : ops)
    for (const char* n : names)
      if (op.name == n) t += cost::op_time(op, ctx);
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
// (Korthikanti et al. sec. 4.2.2: same volume). What TP overlap (Transformer Engine userbuffers)
// costs the GEMMs themselves is priced in their shapes (cost::TpOverlapShape: chunked rows,
// reserved SMs).
//
// Without TE overlap, a stack with asynchronous TP backward (Megatron-LM 2022 on, megatron/mpu/
// layers.py LinearWithGradAccumulationAndAsyncCommunication) issues the column-parallel layers'
// (QKV, FC1) input-gradient all-reduce, or with SP their reduce-scatter, asynchronously and runs
// their weight-gradient GEMMs meanwhile: that part hides behind them.
//
// With TP overlap and SP, collective by collective as Transformer Engine pipelines them
// (transformer_engine/common/comm_gemm_overlap/comm_gemm_overlap.cpp; the layers' use of them in
// transformer_engine/pytorch/module/{layernorm_linear,linear}.py):
// - forward: the all-gathers before QKV and FC1 and a ring-exchange reduce-scatter trade one chunk
//   with a neighbour per step while the previous chunk's GEMM runs (split_overlap_ag_p2p /
//   split_overlap_rs_p2p: tp GEMM chunks, tp-1 exchanges, each exposed only where it outlasts its
//   GEMM chunk); a pipelined reduce-scatter (split_overlap_rs, "pipeline" in a ub config)
//   reduce-scatters chunk i while chunk i+1 multiplies and runs the last chunk's after the last
//   GEMM, which the main stream waits for: that chunk is exposed whole;
// - backward: the projection's and FC2's output gradients are all-gathered by ring exchange beside
//   their data-gradient GEMMs; QKV's and FC1's saved inputs are all-gathered again beside their
//   data-gradient GEMMs and the data gradients reduce-scattered beside the weight-gradient GEMMs
//   ("bulk" overlaps, ub_bulk_dgrad / ub_bulk_wgrad): 4 all-gathers and 2 reduce-scatters. A bulk
//   collective shares the SMs with its GEMM, which slows by the calibrated overlap factor for
//   the time they run together.
// Collectives of GEMMs the layer does not pipeline (an MoE layer's experts) hide behind the pass's
// other GEMMs (the backward's at the overlap factor).
// PyTorch's micro-pipeline TP (spec::TpOverlapImpl) fuses the forward's collectives as ring
// exchanges over tp chunks (copy-engine transfers) and, backward, the output gradients'
// all-gathers into the projection's and FC2's data-gradient matmuls; the QKV and FC1 input
// gradients' reduce-scatters run whole after their matmuls, and nothing is gathered again (the
// forward's gathered inputs are saved; what op_sac re-gathers is priced with its recompute).
// The blocks of a layer whose input is gathered and whose output is reduced over TP (attention,
// MLP or experts, Mamba mixer): 2 in a transformer layer, 1 in a hybrid model's.
int tp_block_pairs(const spec::Model& m) {
  return (m.has_attention() ? 1 : 0) + (m.has_mlp() ? 1 : 0) + (m.block == spec::Block::mamba ? 1 : 0);
}

Seconds tp_overlap_exposed(const StepSpec& s, const CommPricer& net, Bytes act, const std::vector<Op>& ops,
                           const cost::ComputeContext& ctx, bool backward) {
  cost::TpOverlapShape o = cost::tp_overlap_shape(s.par.tp, true, s.cluster->gpu.sm_count, s.software.tp_overlap_rs);
  double tp = static_cast<double>(s.par.tp), slowdown = s.cal->compute.overlap_slowdown;
  // fp8 runs gather what the GEMMs read: TE's all-gather userbuffers hold 1-byte data
  // (initialize_ub: fp8_buf for every all-gather overlap, a uint8 buffer under fp8 quantization);
  // the reduce-scatters carry the 16-bit GEMM outputs. MXFP8 data goes through the userbuffer,
  // but its E8M0 scales (one byte per 32 elements) through a separate, blocking NCCL all-gather
  // before the GEMM (fill_userbuffers_buffer_for_all_gather): exposed, once per all-gather.
  bool fp8 = s.train.precision == spec::Dtype::fp8;
  Seconds gather = net.time({Comm::Op::all_gather, Group::tp, fp8 ? act / 2.0 : act});
  Seconds scatter = net.time({Comm::Op::reduce_scatter, Group::tp, act});
  Seconds scales = s.software.mxfp8(s.train.precision)
                       ? net.time({Comm::Op::all_gather, Group::tp, act / 2.0 / 32.0})
                       : Seconds{0};
  enum class How { ring, pipeline, bulk };
  struct Pair {
    const char* gemm;
    bool gathers;
    How how;
    double splits;
  };
  auto way = [](bool ring) { return ring ? How::ring : How::pipeline; };
  // A block's pairs: its column-parallel GEMM after the gather, its row-parallel one before the
  // reduce-scatter. A Mamba mixer's in_proj and out_proj take the MLP's userbuffer methods
  // (assumed: the ub config names no Mamba entries).
  struct Block {
    bool on;
    const char *column, *row;
    bool row_ring;
    double row_splits;
  };
  const spec::Model& m = *s.model;
  std::vector<Block> blocks{{m.has_attention(), "attn.qkv", "attn.proj", o.proj_ring, o.proj_splits},
                            {m.block == spec::Block::mamba, "mamba.in_proj", "mamba.out_proj", o.fc2_ring, o.fc2_splits},
                            {m.has_mlp(), "mlp.fc1", "mlp.fc2", o.fc2_ring, o.fc2_splits}};
  std::vector<std::string> names;  // the pairs' GEMM names, kept alive for Pair's pointers
  names.reserve(12);
  auto name = [&](const char* base, const char* pass) { return names.emplace_back(std::string(base) + pass).c_str(); };
  std::vector<Pair> pairs;
  for (const Block& b : blocks) {
    if (!b.on) continue;
    if (!backward) {
      pairs.push_back({b.column, true, How::ring, tp});
      pairs.push_back({b.row, false, way(b.row_ring), b.row_splits});
    } else if (s.software.tp_overlap_impl == spec::TpOverlapImpl::micro_pipeline) {
      pairs.push_back({name(b.row, ".dgrad"), true, How::ring, tp});
    } else {
      pairs.push_back({name(b.row, ".dgrad"), true, How::ring, tp});
      pairs.push_back({name(b.column, ".dgrad"), true, How::bulk, 1});
      pairs.push_back({name(b.column, ".wgrad"), false, How::bulk, 1});
    }
  }
  Seconds exposed{0}, unpaired{0}, others = gemm_time(ops, ctx);
  if (backward && s.software.tp_overlap_impl == spec::TpOverlapImpl::micro_pipeline)
    exposed += scatter * static_cast<double>(tp_block_pairs(m));
  for (const Pair& x : pairs) {
    Seconds comm = x.gathers ? gather : scatter;
    if (x.gathers) exposed += scales;
    if (std::none_of(ops.begin(), ops.end(), [&](const Op& op) { return op.name == x.gemm; })) {
      unpaired += comm;
      continue;
    }
    Seconds g = named_time(ops, {x.gemm}, ctx);
    others -= g;
    switch (x.how) {
      case How::ring:  // tp chunks, tp-1 exchanges
        exposed += (tp - 1) * std::max(Seconds{0}, comm / (tp - 1) - g / tp);
        break;
      case How::pipeline: {  // chunk i's reduce-scatter beside GEMM i+1, the last one after
        Seconds chunk = net.time({Comm::Op::reduce_scatter, Group::tp, act / x.splits});
        exposed += (x.splits - 1) * std::max(Seconds{0}, chunk - g / x.splits) + chunk;
        break;
      }
      case How::bulk:
        exposed += std::max(Seconds{0}, comm - g) + std::min(comm, g) * slowdown;
        break;
    }
  }
  Seconds hidden = std::min(unpaired, std::max(Seconds{0}, others));
  return exposed + unpaired - hidden + (backward ? hidden * slowdown : Seconds{0});
}

void add_tp(PassCost& p, const StepSpec& s, const CommPricer& net, const cost::LayerShape& sh,
            const std::vector<Op>& ops, const cost::ComputeContext& ctx, bool backward) {
  if (s.par.tp == 1) return;
  Bytes act = bytes(sh.tokens * sh.hidden * 2.0);
  if (s.software.tp_comm_overlap && s.par.sequence_parallel)
    return add(p, Category::tp_comm, tp_overlap_exposed(s, net, act, ops, ctx, backward));
  auto blocks = static_cast<double>(tp_block_pairs(*s.model));
  Seconds gathers = s.par.sequence_parallel ? net.time({Comm::Op::all_gather, Group::tp, act}) * blocks : Seconds{0};
  Seconds reductions = s.par.sequence_parallel ? net.time({Comm::Op::reduce_scatter, Group::tp, act}) * blocks
                                               : net.time({Comm::Op::all_reduce, Group::tp, act}) * blocks;
  Seconds comm = gathers + reductions;
  if (!s.software.tp_comm_overlap) {
    if (!backward || !s.software.tp_async_backward) return add(p, Category::tp_comm, comm);
    Seconds hidden =
        std::min(reductions, named_time(ops, {"attn.qkv.wgrad", "mlp.fc1.wgrad", "mamba.in_proj.wgrad"}, ctx));
    // With SP the column layers' inputs are all-gathered again for their weight gradients,
    // asynchronously beside their data-gradient GEMMs (same Megatron-LM function).
    Seconds regather =
        std::min(gathers, named_time(ops, {"attn.qkv.dgrad", "mlp.fc1.dgrad", "mamba.in_proj.dgrad"}, ctx));
    return add(p, Category::tp_comm,
               comm - hidden + (hidden + regather) * s.cal->compute.overlap_slowdown + gathers - regather);
  }
  // Userbuffers overlap without SP (all-reduces): hidden behind the pass's GEMMs.
  Seconds hidden = std::min(comm, gemm_time(ops, ctx));
  double shared = backward ? 0.5 : 0.0;
  add(p, Category::tp_comm, comm - hidden + hidden * shared * s.cal->compute.overlap_slowdown);
}

// Context parallelism (Megatron-LM/Transformer Engine ring attention): cp-1 steps exchange the
// local K and V (b*s/cp tokens x 2 kv widths, 16 bits; backward also returns dK, dV), each
// overlapped with one step of attention compute; only the excess is exposed.
void add_cp(PassCost& p, const StepSpec& s, const CommPricer& net, const cost::LayerShape& sh, Seconds attn,
            bool backward) {
  if (s.par.cp == 1) return;
  if (sh.mamba()) {
    // A Mamba mixer splits its heads over the CP ranks instead (Megatron-Core
    // megatron/core/ssm/mamba_context_parallel.py): z, x, B, C and dt all-to-all from sequence to
    // head shards before the convolution and the scan, y back after; the backward sends their
    // gradients the same way. The calls are priced as one all-to-all of their 16-bit bytes.
    Bytes moved = bytes(sh.tokens * (sh.ssm_in_width() + sh.ssm_inner()) * 2.0);
    add(p, Category::cp_comm, net.time({Comm::Op::all_to_all, Group::cp, moved}));
  }
  if (!sh.attention) return;
  Bytes kv = bytes(sh.tokens * 2.0 * sh.kv_width * 2.0 * (backward ? 2.0 : 1.0));
  Seconds comm = net.time({Comm::Op::send_recv, Group::cp, kv}) * static_cast<double>(s.par.cp - 1);
  add(p, Category::cp_comm, std::max(Seconds{0}, comm - attn));
}

// Expert parallelism: dispatch and combine of the routed tokens per MoE layer and direction, as
// the stack's dispatcher moves them (Megatron-Core token_dispatcher.py):
// - alltoall: every routed copy (b*s/cp*topk rows of h, 16 bits) all-to-all, both ways (GShard
//   sec. 2.2);
// - allgather: every rank's tokens all-gathered over the EP group, the outputs reduce-scattered;
// - flex (DeepEP, HybridEP): a token crosses to each node holding one of its experts once
//   (DeepSeek-V3 sec. 3.2.2: dispatch over InfiniBand to nodes, then NVLink forwarding), so the
//   bytes shrink to the expected number of distinct destination nodes; inside one NVLink domain it
//   is the all-to-all. Uniform routing: a node's E/N experts all miss a token's top-k with
//   probability C(E - E/N, k) / C(E, k).
// With moe_a2a_overlap (Megatron-Core's combined 1F1B, docs/research/ep-a2a-overlap.md) a
// micro-batch's dispatch and combine run on a second stream under another micro-batch's compute
// (the forward of micro-batch i+1 beside the backward of i): what exceeds that compute shows.
// - Passes without a partner keep their traffic exposed: on each pipeline rank the warmup
//   forwards and the cooldown backwards, (pp-1)*2 + (vp-1)*pp + 1 model chunks of the first
//   stage's m*vp (megatron/core/pipeline_parallel/schedules.py get_pp_rank_microbatches, one more
//   warmup micro-batch with the overlap; with pp 1, the first forward and the last backward).
// - While the traffic runs, its kernels hold SMs the compute cannot use (NCCL CTAs never share an
//   SM with compute kernels, NVIDIA/nccl #689): the compute under it runs on the rest, so each
//   second hidden costs held / (sm_count - held) of compute time. NCCL's all-to-all is one
//   SendRecv kernel of 32 CTAs (its p2p channels: "32 p2p channels" in NCCL's init logs on H100
//   and B200 systems; 32 CTAs per call on GB300, NVIDIA/nccl #2421); DeepEP keeps 20 SMs
//   (Megatron-Core moe_deepep_num_sms, whose "about a 20% GEMM-efficiency cost" the Megatron-Core
//   MoE report measured; HybridEP's default is 16-24). Published A/Bs on 16 H100s, Qwen3-30B-A3B
//   EP16: alltoall 41.25 -> 31.31 s (x1.32, Megatron-Bridge PR #3862), HybridEP 24.71 -> 20.99 s
//   (x1.18, PR #5094); test "cli simulate --moe-a2a-overlap: the speedups published A/Bs measured".
double ep_overlap_comm_sms(spec::MoeDispatcher d) { return d == spec::MoeDispatcher::flex ? 20.0 : 32.0; }

// Compute time lost per second of communication hidden under it when the communication kernels
// hold `held` of the GPU's SMs: held / (sm_count - held); `otherwise` when nothing is held or the
// count leaves no SM to compute on.
double sm_held_slowdown(const StepSpec& s, double held, double otherwise) {
  double sms = static_cast<double>(s.cluster->gpu.sm_count);
  return held > 0 && sms > held ? held / (sms - held) : otherwise;
}

double ep_overlap_unpaired_share(const StepSpec& s) {
  double m = static_cast<double>(s.train.global_batch) / static_cast<double>(s.train.micro_batch * s.par.dp);
  double pp = static_cast<double>(s.par.pp), vp = static_cast<double>(s.par.vp);
  double warmup = (pp - 1) * 2 + (vp - 1) * pp + 1;
  return std::clamp(warmup / std::max(m * vp, 1.0), 0.0, 1.0);
}

void add_ep(PassCost& p, const StepSpec& s, const CommPricer& net, const cost::LayerShape& sh, Seconds compute,
            bool backward) {
  if (!s.model->is_moe() || s.par.ep == 1) return;
  Seconds comm{0};
  double routed = sh.expert_tokens * sh.expert_width * 2.0;
  switch (s.software.moe_dispatcher) {
    case spec::MoeDispatcher::alltoall:
      // Each routed row's probability (4 bytes) goes along with its dispatch: one more all-to-all
      // each pass (the dispatcher's token_dispatch; autograd sends the gradients back).
      comm = net.time({Comm::Op::all_to_all, Group::ep, bytes(routed)}) * 2.0 +
             net.time({Comm::Op::all_to_all, Group::ep, bytes(sh.expert_tokens * 4.0)});
      break;
    case spec::MoeDispatcher::allgather: {
      double local = sh.tokens / sh.tp * sh.expert_width * 2.0 * static_cast<double>(s.par.ep);
      comm = net.time({Comm::Op::all_gather, Group::ep, bytes(local)}) +
             net.time({Comm::Op::reduce_scatter, Group::ep, bytes(local)});
      break;
    }
    case spec::MoeDispatcher::flex: {
      topology::GroupShape g = topology::group_shape(*s.cluster, s.par, topology::GroupKind::ep);
      double nodes = static_cast<double>(g.nodes), k = static_cast<double>(s.model->moe_topk);
      double experts = static_cast<double>(s.model->moe_experts), per_node = experts / std::max(nodes, 1.0);
      double miss = 1;  // C(E - E/N, k) / C(E, k)
      for (double i = 0; i < k; ++i) miss *= (experts - per_node - i) / (experts - i);
      double share = g.nodes > 1 ? nodes * (1 - std::max(miss, 0.0)) / k : 1.0;
      comm = net.time({Comm::Op::all_to_all, Group::ep, bytes(routed * share)}) * 2.0;
      break;
    }
  }
  if (s.software.moe_a2a_overlap) {
    double slowdown =
        sm_held_slowdown(s, ep_overlap_comm_sms(s.software.moe_dispatcher), s.cal->compute.overlap_slowdown);
    Seconds hidden = std::min(comm, compute) * (1 - ep_overlap_unpaired_share(s));
    comm = comm - hidden + hidden * slowdown;
  }
  // Dropless routing with the alltoall dispatcher: before the split sizes reach the host, every
  // rank's per-expert token counts (8 bytes each) are all-gathered over the EP group
  // (preprocess, gather_from_sequence_parallel_region), on the compute stream, forward only.
  if (!backward && s.software.moe_dispatcher == spec::MoeDispatcher::alltoall && s.train.moe_dropless())
    comm += net.time({Comm::Op::all_gather, Group::ep, bytes(sh.experts * 8.0)});
  add(p, Category::ep_comm, comm);
}

// The weight matrices of one layer on one rank, in parameters: fused QKV, projection, FC1 (gate
// and up as two when gated), FC2 -- what DeepSpeed's ZeRO-3 gathers one Linear submodule at a time
// (docs/research/software-stacks.md sec. 3.2: a GPT layer costs 4 gathers forward, 4 backward).
std::vector<double> layer_weights(const cost::LayerShape& sh) {
  std::vector<double> w;
  if (sh.mamba()) w = {sh.hidden * sh.ssm_in_width(), sh.ssm_inner() * sh.hidden};
  if (sh.attention) {
    w.push_back(sh.hidden * (sh.q_width + 2 * sh.kv_width));
    w.push_back(sh.q_width * sh.hidden);
  }
  if (!sh.mlp) return w;
  for (int i = 0; i < static_cast<int>(sh.gate); ++i) w.push_back(sh.hidden * sh.ffn);
  w.push_back(sh.ffn * sh.hidden);
  return w;
}

// The sizes, in parameters, of the collectives a stack gathers (and reduces) one layer with: the
// flat layer (zero3_gather layer) or each weight matrix (module).
std::vector<double> zero3_calls(const StepSpec& s, const cost::LayerShape& sh, double layer_params) {
  return s.software.zero3_gather == spec::Zero3Gather::layer ? std::vector<double>{layer_params} : layer_weights(sh);
}

// Compute that runs beside a ZeRO-3 / FSDP all-gather or reduce-scatter loses the SMs its kernel
// holds (the stack's zero3_comm_sms: a ring collective launches one CTA per NCCL channel and each
// keeps its SM for the whole call, NVIDIA/nccl #689): each second hidden costs held / (sm_count -
// held) of compute time, as the expert-parallel overlap prices it -- 24 SMs: 0.22 on H100, 0.29 on
// A100. Measured on 8 H100s under FSDP: overlapped matmuls 30-40% slower (pytorch/pytorch PR
// #179937), 0.23-0.29 per hidden second (docs/research/nccl-interference.md). The profile's
// overlap_slowdown is the floor, and prices stacks that do not say what their collectives hold.
double zero3_overlap_slowdown(const StepSpec& s) {
  return std::max(s.cal->compute.overlap_slowdown, sm_held_slowdown(s, s.software.zero3_comm_sms, 0.0));
}

// ZeRO-3 / FSDP: the layer's 16-bit parameters all-gathered before forward and backward, and
// its gradients reduce-scattered after backward. As the stack fetches them: one gather of the
// flat layer (FSDP) or one per weight matrix (DeepSpeed, which also reduces each parameter's
// gradient on its own); prefetched on a side stream so they overlap compute (what exceeds it is
// exposed), or blocking, each call also paying its host time.
// A stack that passes the collectives a list of per-rank tensors also pays, per call and rank:
// building the list on the host before the call (zero3_list_build_us), and PyTorch's copy through
// the staging buffer -- a copy kernel on the GPU (cost::list_collective_copies_op) that the host
// must issue first (zero3_list_copy_cpu_us). A gather's copies follow the collective, whose time
// hides their issue; a reduce-scatter's flatten its input before it can start.
// A stack may also run kernels of its own on each gathered parameter (cost::zero3_fetch_ops: a
// zero fill of the buffer before the gather, a norm after it), on the fetch's critical path; what
// it does to each gradient before reducing it is add_grad_path's.
void add_zero3(PassCost& p, const StepSpec& s, const CommPricer& net, const cost::LayerShape& sh,
               double layer_params, Seconds compute, bool backward, const cost::ComputeContext& ctx) {
  if (s.par.zero_stage < 3 || s.par.dp * s.par.cp == 1) return;
  const spec::Software& sw = s.software;
  double ranks = static_cast<double>(s.par.dp * s.par.cp);
  bool lists = sw.zero3_list_collectives;
  Seconds build = us(lists ? sw.zero3_list_build_us * ranks : 0.0);
  Seconds copy_issue = us(lists ? sw.zero3_list_copy_cpu_us * ranks : 0.0);
  auto copies = [&](double params) {
    return lists ? cost::op_time(cost::list_collective_copies_op(params, ranks), ctx) : Seconds{0};
  };
  std::vector<double> calls = zero3_calls(s, sh, layer_params);
  bool grads = backward && !s.train.frozen_base();  // frozen weights have no gradient to reduce
  double grad_bytes = spec::dtype_bytes(s.train.grad_dtype);
  Seconds comm{0}, reduce{0};
  for (double w : calls) {
    Seconds gather = net.time({Comm::Op::all_gather, Group::dp_cp, bytes(w * 2.0)});
    comm += us(sw.zero3_gather_cpu_us) + build + std::max(gather + copies(w), copy_issue) +
            cost::ops_time(cost::zero3_fetch_ops(w, sw.zero3_zero_fill, sw.zero3_fetch_norm), ctx);
    if (grads)
      reduce += build + std::max(copies(w), copy_issue) +
                net.time({Comm::Op::reduce_scatter, Group::dp_cp, bytes(w * grad_bytes)});
  }
  // FSDP2 copies each gathered unit into its parameters on the compute stream before it runs.
  if (sw.zero3_gather_copy_out)
    for (double w : calls) add(p, Category::compute, cost::op_time(cost::zero3_gather_copy_out_op(w), ctx));
  // Blocking gathers (DeepSpeed 2021) synchronize the whole device before each one
  // (torch.cuda.synchronize() in _allgather_param: all streams, the gradient reduction's side
  // stream included), and a module's gradients are reduced only once its backward has produced
  // them, so the next module's gather waits for that reduction: nothing is hidden.
  if (!sw.zero3_prefetch) return add(p, Category::dp_comm_exposed, comm + reduce);
  comm += reduce;
  Seconds hidden = std::min(comm, compute);
  add(p, Category::dp_comm_exposed, comm - hidden + hidden * zero3_overlap_slowdown(s));
}

// The element-wise passes a stack runs over each layer's weight gradient before reduce-scattering
// it (cost::zero3_grad_ops: DeepSpeed's bucket copy and divide, FSDP1's flat-gradient concatenation,
// cast and pre-divide), once per micro-batch wherever gradients are reduced layer by layer (ZeRO-3;
// FSDP's SHARD_GRAD_OP and DeepSpeed's stage 2, which reduce per unit or bucket as well). Some run on
// a side stream (FSDP1's post-backward stream, DeepSpeed's reduction stream), but unlike a
// collective, which holds a few SMs and waits on links, an element-wise kernel takes every SM it is
// given at the GPU's memory bandwidth, and Hopper's GEMMs keep a CTA on each SM for their whole run
// (persistent tile schedulers): it runs in the gaps between the compute stream's kernels, its time
// added to the pass.
void add_grad_path(PassCost& p, const StepSpec& s, const cost::LayerShape& sh, double layer_params,
                   const cost::ComputeContext& ctx) {
  if (s.par.zero_stage < 2 || s.par.dp * s.par.cp == 1 || s.train.frozen_base()) return;
  for (double w : zero3_calls(s, sh, layer_params))
    add(p, Category::compute, cost::ops_time(cost::zero3_grad_ops(w, s.software.zero3_grad_path, s.train.grad_dtype), ctx));
}

// fp8 current scaling and NVFP4 with sequence parallelism: a tensor that is all-gathered over the
// TP ranks before its GEMM is quantized shard by shard, so its amax is first all-reduced over them
// (Transformer Engine's Linear, LayerNormLinear and LayerNormMLP _customize_quantizers_*:
// with_amax_reduction on the column-parallel input and on the row-parallel output gradient): the
// QKV and FC1 inputs forward, the projection's and FC2's output gradients backward -- a dense
// layer's two each way, an MoE layer's one (its experts' tokens arrive by dispatch instead).
// Blocking 4-byte all-reduces on the compute stream. Delayed scaling reduces once per pass
// instead (fp8_amax_reduction); MXFP8's block scales are local.
void add_tp_amax(PassCost& p, const StepSpec& s, const CommPricer& net, const cost::LayerShape& sh) {
  bool scaled = (s.train.precision == spec::Dtype::fp8 && s.software.fp8_recipe == spec::Fp8Recipe::current) ||
                s.train.precision == spec::Dtype::fp4;
  if (!scaled || s.par.tp <= 1 || !s.par.sequence_parallel) return;
  double calls = sh.experts_local > 0 ? 1 : 2;
  add(p, Category::tp_comm, net.time({Comm::Op::all_reduce, Group::tp, bytes(4)}) * calls);
}

// The alltoall dispatcher's preprocess under dropless routing, in calls of a torch op: what the
// one in-situ profile of it measured, not its op census. yanring/Megatron-MoE-ModelZoo #7
// (2025-08-18; 8 B200s on a DGX B200's Xeon 8570, Qwen3-30B-A3B, EP 8, MBS 1, bf16, eager,
// alltoall, dropless, force-balanced) timed the MoE layer's "router and preprocess" NVTX range at a
// mean 2.17 ms (median 1.87); no host wait falls inside it (the token counts' wait is in the
// dispatch, cuda_sync_point "before_ep_alltoall"), so it is host time. Less the router as that
// Megatron-Core ran it (0.14, before router fusion: the gating GEMM as a TE call and 11 ops --
// random logits, top-k, softmax, two scatters into zeroed maps, casts, a sum), 2.17 ms - 61.65 us -
// 11 x 22.96 us = 1.86 ms at that host's in-situ costs (topologies/dgx-b200.json) = 81 calls.
// The census (docs/research/mcore-moe-host-ops.md: 6 kernels, ~8 views, the counts' all-gather
// through c10d, 4 device-to-host copies with their events) gives ~0.5 ms: what the rest is (Python,
// pinned-buffer copies, the collective's host path) is not known. Token drop with padding knows
// its counts in advance and runs none of it; other dispatchers keep their census.
constexpr double kAlltoallDroplessPreprocessCalls = 81;

}  // namespace

// Host (CPU) time to issue one layer's forward from Python, as Megatron-Core's Transformer
// Engine layer spec calls it (counts read off megatron/core/transformer and moe/: TE modules and
// PyTorch eager ops), at the cluster's per-call costs (host_issue_us, from TransformerEngine issue
// #2053), by block in issue order. Attention block: LayerNormLinear (QKV), DotProductAttention,
// Linear (projection) and 4 ops (rotary embedding of q and k, bias-dropout-add, reshape). Dense
// MLP: LayerNormLinear (FC1), Linear (FC2) and 3 ops. MoE block: a norm module; the router (gating
// GEMM and 6 ops of scores, top-k and load-balancing bookkeeping); the dispatcher's preprocessing
// (6 ops: token counts, their device-to-host copy, split sizes); permutation and all-to-all (8
// ops); two GroupedLinear modules with 3 ops per local expert each (torch.split and two
// torch.empty per GEMM, TransformerEngine #1499), each launching its GEMMs after them, and the
// activation; shared experts as a dense MLP;
// combine and unpermutation (6 ops) and bias-dropout-add. CUDA-graph-captured scopes cost nothing.
// The backward costs the same host time (each TE module's backward is a Python autograd function)
// -- an assumption, not a measurement -- plus, in an MoE layer, one more GEMM call per local
// expert in each GroupedLinear: TE's grouped GEMM issues one cuBLAS call per expert, and the
// backward runs two of them (dgrad and wgrad) where the forward runs one
// (docs/research/te-grouped-linear-host-ops.md). Each is priced as a torch op, whose measured unit
// is one Linear call -- a cuBLAS GEMM and its glue (on a DGX B200 host in situ 21.4 us; that
// profile's nvte_cublas_gemm ranges average 20.3 us, docs/research/x86-moe-host.md).
HostBlocks layer_host_blocks(const StepSpec& s, const cost::LayerShape& sh) {
  const spec::Cluster& c = *s.cluster;
  const spec::CudaGraphs& g = s.software.cuda_graphs;
  HostBlocks b;
  if (g.full_iteration || (c.host_torch_op.value() <= 0 && c.host_te_module.value() <= 0)) return b;
  auto issue = [&](double te, double ops) { return c.host_te_module * te + c.host_torch_op * ops; };
  // Megatron-Core's own rotary embedding where TE's fused one cannot take YaRN's scaled cos and sin
  // (gpt-oss; cost::layer_forward's attn.rope): per query and key tensor 15 calls instead of one --
  // two slices, cos, * mscale, .to, sin, * mscale, .to, t * cos, chunk, the negation, cat, * sin,
  // the add and the closing cat (megatron/core/models/common/embeddings/rope_utils.py,
  // _apply_rotary_pos_emb_bshd and _rotate_half).
  double rope_calls = sh.rope_scaled && s.software.rope_fusion ? 2 * 14 : 0;
  // Qwen3's per-head norms of the queries and keys are two more Transformer Engine modules
  // (Megatron-Core SelfAttention q_layernorm and k_layernorm, TENorm in its TE layer spec).
  // Multi-latent attention (DeepSeek-V3) is seven modules where the fused QKV's attention is
  // three: the input norm (TENorm), the query's and the key-value's down projections (TELinear)
  // and up projections (TELayerNormColumnParallelLinear), DotProductAttention and the projection
  // (Megatron-Core get_gpt_layer_with_transformer_engine_spec, multi_latent_attention); the
  // splits, views and concatenations around them are not counted.
  double modules = sh.kv_lora > 0 ? 7 : 3 + (sh.qk_norm ? 2 : 0);
  if (!g.attn && sh.attention) b.attention = issue(modules, 4 + rope_calls);
  if (sh.mamba() && !g.mamba) {
    // A Mamba layer (megatron/core/ssm/mamba_mixer.py, memory-efficient path): in_proj and out_proj
    // (Transformer Engine modules); A = -exp(A_log) and the fp32 dt bias (3 ops), the layout copies
    // around the scan (2), mamba_split_conv1d_scan_combined's convolution and five scan kernels, the
    // grouped RMSNorm and the residual add: 14 calls. Its backward issues the scan's and the
    // convolution's recomputes and gradient kernels, about 40 (docs/research/mamba2-kernels.md
    // sec. 5), where the forward issued 6 of them: 34 more.
    b.attention = issue(2, 14);
    b.backward_gemms = issue(0, 34);
  }
  if (!sh.mlp) return b;
  if (sh.experts_local <= 0) {
    b.fc1 = issue(2, 3);
    return b;
  }
  b.router = issue(1, g.moe_router ? 0 : 7);
  bool measured = s.software.moe_dispatcher == spec::MoeDispatcher::alltoall && s.train.moe_dropless();
  if (!g.moe_preprocess) b.preprocess = issue(0, measured ? kAlltoallDroplessPreprocessCalls : 6);
  // LatentMoE's projections are a Transformer Engine Linear each, before the dispatch and after the combine.
  double latent = sh.latent > 0 ? 1 : 0;
  b.dispatch = issue(latent, 8);
  b.fc1 = issue(1, 3 * sh.experts_local + (sh.glu_clamp ? 4 : 0));  // a clamped GLU's chunk, clamps, cat
  b.act = issue(0, 1);
  b.fc2 = issue(1, 3 * sh.experts_local);
  if (sh.shared_ffn > 0) b.shared = issue(2, 2);
  b.combine = issue(latent, 6 + 1);
  b.backward_gemms = issue(0, 2 * sh.experts_local);
  return b;
}

namespace {

// Where an MoE layer's forward makes the host wait for the GPU, the host cannot run ahead: from
// the wait it issues the blocks that follow in order, each block's kernels start only once it has
// issued them, and the GPU idles for whatever the host has not issued yet.
// - Dropless routing: Megatron-Core's token dispatcher copies the token counts to the host and
//   synchronizes on that copy's event before the expert-parallel all-to-all
//   (megatron/core/transformer/moe/token_dispatcher.py, _maybe_dtoh_and_synchronize at
//   "before_ep_alltoall"; at the grouped GEMM without EP or TP): the all-to-all's split sizes and
//   the grouped GEMM's m_splits are host lists. Token drop with padding to capacity knows them in
//   advance and does not wait.
// - A clamped GLU (gpt-oss): Megatron-Core's weighted_bias_quick_geglu_impl builds its linear
//   offset with torch.tensor(..., device=input.device) on every call
//   (megatron/core/fusions/fused_bias_geglu.py), a blocking copy from pageable host memory
//   (PyTorch's copy_ with non_blocking=False synchronizes the stream): the host waits for FC1 and
//   the clamps before it issues the activation and FC2.
// `gpu` is the forward pass's GPU time (collectives included); returns how much longer the forward
// takes than max(gpu, host), what it would take if the host could run ahead. MoE layers only.
Seconds moe_forward_waits(const StepSpec& s, const cost::LayerShape& sh, const HostBlocks& h,
                          const std::vector<Op>& fwd, const cost::ComputeContext& ctx, Seconds ep_comm, Seconds gpu) {
  bool counts = s.train.moe_dropless(), offset = sh.glu_clamp;
  if (sh.experts_local <= 0 || !(counts || offset) || h.total().value() <= 0) return Seconds{0};
  Seconds permute = named_time(fwd, {"moe.permute"}, ctx) * 0.5;
  Seconds router = named_time(fwd, {"norm2", "moe.router", "moe.route", "moe.latent_in", "fp8.quantize.latent_in"}, ctx) + permute;
  Seconds sort = named_time(fwd, {"moe.sort_chunks"}, ctx) * 0.5;
  Seconds dispatch = ep_comm * 0.5 + sort;
  Seconds fc1 = named_time(fwd, {"moe.fc1", "mlp.act.clamp", "fp8.quantize.fc1_in"}, ctx);
  Seconds act = named_time(fwd, {"mlp.act"}, ctx);
  Seconds fc2 = named_time(fwd, {"moe.fc2", "fp8.quantize.fc2_in"}, ctx);
  Seconds shared = named_time(fwd, {"moe.shared.fc1", "moe.shared.fc2", "fp8.quantize.shared_fc2_in"}, ctx);
  Seconds combine =
      ep_comm * 0.5 + sort + permute + named_time(fwd, {"mlp.bda", "moe.latent_out", "fp8.quantize.latent_out"}, ctx);
  Seconds attention = std::max(Seconds{0}, gpu - router - dispatch - fc1 - act - fc2 - shared - combine);
  struct Block {
    Seconds host, work;
    bool wait_before;  ///< the host waits for the GPU before issuing this block
  };
  // One layer's blocks in issue order, from the first wait to the same point of the next layer:
  // the token counts' wait (before the dispatch) when routing is dropless, else the offset's.
  std::vector<Block> blocks{{h.dispatch, dispatch, counts}, {h.fc1, fc1, false}, {h.act, act, offset},
                            {h.fc2, fc2, false},         {h.shared, shared, false}, {h.combine, combine, false},
                            {h.attention, attention, false}, {h.router + h.preprocess, router, false}};
  if (!counts) std::rotate(blocks.begin(), blocks.begin() + 2, blocks.end());  // start at the activation
  Seconds end{0}, issued{0};
  for (const Block& b : blocks) {
    if (b.wait_before) issued = std::max(issued, end);
    issued += b.host;
    end = std::max(end, issued) + b.work;
  }
  return std::max(Seconds{0}, end - std::max(gpu, h.total()));
}

// The word embedding's (or LM head's) rows on one tensor-parallel rank.
double vocab_rows(const StepSpec& s) {
  return static_cast<double>(s.model->vocab) / static_cast<double>(s.par.tp) * static_cast<double>(s.model->hidden);
}

// Without gradient-accumulation fusion each micro-batch's weight gradients are added to the main
// grads by an element-wise kernel per parameter tensor (cost::grad_accumulation_op), in the
// backward on the compute stream. With ZeRO-2/3 the gradients are reduce-scattered every
// micro-batch and accumulated into the 1/dp shard: negligible, not priced.
void add_grad_accumulation(PassCost& p, const StepSpec& s, double params, double tensors,
                           const cost::ComputeContext& ctx) {
  if (spec::fused_grad_accumulation(s.software, s.train.precision) || s.par.zero_stage >= 2 || params <= 0) return;
  bool cast = s.software.grad_accumulation_fusion == spec::GradAccumFusion::cast;
  add(p, Category::compute, cost::op_time(cost::grad_accumulation_op(params, s.train.grad_dtype, tensors, cast), ctx));
}

// The main-grad type weight-gradient GEMMs accumulate into, when the stack fuses it.
std::optional<spec::Dtype> fused_accumulation(const StepSpec& s) {
  if (!spec::fused_grad_accumulation(s.software, s.train.precision)) return std::nullopt;
  return s.train.grad_dtype;
}

// The last stage's final norm, LM head and cross-entropy, as the stack runs them; after the
// backward, the trainer's training metrics, each a forward cross-entropy in fp32 over the logits
// outside autograd (Composer's Trainer._train_microbatch calls _eval_train_metrics after every
// micro-batch's backward; llm-foundry's ComposerMPTCausalLM has train_metrics
// [LanguageCrossEntropy(), LanguagePerplexity()], each updated with torch.nn.CrossEntropyLoss under
// the autocast context, which runs cross_entropy in fp32).
std::vector<Op> head_ops(const StepSpec& s, const cost::LayerShape& sh, bool backward) {
  std::vector<Op> ops = cost::logits_ops(sh, s.software.cross_entropy, backward, fused_accumulation(s));
  if (backward && s.software.train_metric_passes > 0) {
    Op metrics = cost::cross_entropy_op(sh.tokens * sh.vocab_local, spec::CrossEntropy::torch, false);
    metrics.name = "train_metrics";
    metrics.bytes = metrics.bytes * static_cast<double>(s.software.train_metric_passes);
    metrics.kernels *= static_cast<double>(s.software.train_metric_passes);
    ops.push_back(metrics);
  }
  return ops;
}

}  // namespace

cost::ComputeContext compute_context(const StepSpec& s) {
  std::int64_t gpus = s.par.tp * s.par.pp * s.par.dp * s.par.cp;
  double pace = cost::slowest_gpu_pace(s.cal->compute.speed_spread, gpus);
  return {&s.cluster->gpu, &s.cal->compute, s.train.precision, pace, s.software.mxfp8(s.train.precision)};
}

SimTime PassCost::total() const {
  SimTime t = 0;
  for (const Segment& s : segments) t += s.duration;
  return t;
}

void accumulate(PassCost& a, const PassCost& b, double k) {
  for (const Segment& seg : b.segments) add(a, seg.category, to_seconds(seg.duration) * k);
}

LayerKernels layer_kernels(const StepSpec& s) {
  LayerKernels k;
  k.shape = cost::layer_shape(*s.model, s.par, s.train);
  cost::LayerShape& sh = k.shape;
  // The experts' work and traffic are those of the busiest expert-parallel rank, or of the
  // capacity every expert is padded to in token-drop runs.
  sh.sort_chunks = s.software.moe_dispatcher == spec::MoeDispatcher::alltoall && sh.experts_local > 1;
  // The routing bookkeeping no other op prices (docs/research/mcore-moe-host-ops.md, summary table:
  // Megatron-Core 0.14/0.15 with router and permutation fusion). Forward: the router's random
  // logits of force-balanced routing, as the published benchmarks run (clone, normal_), and its
  // fused top-k with score function; the permutation's three row-id-map passes (HybridEP, what the
  // flex dispatcher runs here, permutes inside its dispatch kernel instead); the alltoall
  // dispatcher's six count reductions when routing is dropless and, with several local experts,
  // its two chunk-sort maps and the copy of the split sizes before the unsort. Backward: the
  // top-k's.
  if (sh.experts_local > 0) {
    bool alltoall = s.software.moe_dispatcher == spec::MoeDispatcher::alltoall;
    sh.routing_kernels = 3 + (s.software.moe_dispatcher == spec::MoeDispatcher::flex ? 0 : 3) +
                         (alltoall && s.train.moe_dropless() ? 6 : 0) + (sh.sort_chunks ? 3 : 0);
  }
  sh.expert_tokens *= s.train.moe_dropless()
                          ? cost::moe_busiest_rank(s.par.ep, sh.expert_tokens, s.train.moe_imbalance)
                          : s.train.moe_capacity_factor;
  k.ctx = compute_context(s);
  auto attn = s.software.attention;
  cost::TpOverlapShape overlap = cost::tp_overlap_shape(s.par.tp, s.software.tp_comm_overlap, s.cluster->gpu.sm_count,
                                                            s.software.tp_overlap_rs);
  cost::Fusions fusions{.activation = s.software.bias_activation_fusion,
                        .residual = s.software.bias_dropout_add_fusion,
                        .rope = s.software.rope_fusion,
                        .rms_norm = s.software.rmsnorm_fusion,
                        .bias_in_gemm = s.software.linear_bias_epilogue,
                        .attention_unpad = s.software.attention_unpad,
                        .fp8_recipe = s.software.fp8_recipe,
                        .fp8_transpose = cost::fp8_needs_transpose(s.cluster->gpu)};
  k.forward = cost::layer_forward(sh, attn, s.train.precision, overlap, fusions);
  k.backward = cost::layer_backward(sh, attn, s.train.precision, overlap, fused_accumulation(s), fusions);
  if (s.train.recompute == spec::Recompute::full)
    k.recompute = k.forward;
  else if (s.train.recompute == spec::Recompute::selective)
    k.recompute = cost::selective_recompute(k.forward, sh, s.train.selective_modules());
  k.host = layer_host_blocks(s, sh);
  return k;
}

LayerKernels listed_kernels(const StepSpec& s) {
  LayerKernels k;
  if (s.model->hybrid()) {
    // One layer of each block kind the model has, in pattern order of first appearance, each
    // kernel's name prefixed by its block's pattern character; the host's blocks summed.
    std::string seen;
    for (char c : s.model->hybrid_pattern) {
      if (seen.find(c) != std::string::npos) continue;
      seen += c;
      spec::Model b = spec::block_variant(*s.model, c);
      StepSpec v = s;
      v.model = &b;
      if (!b.is_moe()) v.par.ep = 1, v.par.etp = 0;
      LayerKernels x = layer_kernels(v);
      auto append = [&](std::vector<Op>& to, std::vector<Op>& from) {
        for (Op& op : from) {
          op.name = std::string(1, c) + ":" + op.name;
          to.push_back(std::move(op));
        }
      };
      append(k.forward, x.forward);
      append(k.backward, x.backward);
      append(k.recompute, x.recompute);
      for (Seconds HostBlocks::*part : {&HostBlocks::attention, &HostBlocks::router, &HostBlocks::preprocess,
                                        &HostBlocks::dispatch, &HostBlocks::fc1, &HostBlocks::act, &HostBlocks::fc2,
                                        &HostBlocks::shared, &HostBlocks::combine, &HostBlocks::backward_gemms})
        k.host.*part += x.host.*part;
      k.ctx = x.ctx;
    }
    k.blocks = seen;
    k.shape = cost::layer_shape(*s.model, s.par, s.train);
  } else {
    k = layer_kernels(s);
  }
  k.embedding_forward = cost::embedding_ops(k.shape, false);
  k.embedding_backward = cost::embedding_ops(k.shape, true);
  k.head_forward = head_ops(s, k.shape, false);
  k.head_backward = head_ops(s, k.shape, true);
  return k;
}

LayerCost layer_cost(const StepSpec& s, const CommPricer& net) {
  LayerKernels k = layer_kernels(s);
  const cost::LayerShape& sh = k.shape;
  const cost::ComputeContext& ctx = k.ctx;
  const std::vector<Op>& fwd = k.forward;
  const std::vector<Op>& bwd = k.backward;
  auto attn = s.software.attention;
  LayerCost lc;
  Seconds fwd_t = cost::ops_time(fwd, ctx), bwd_t = cost::ops_time(bwd, ctx);
  add(lc.forward, Category::compute, fwd_t);
  add_tp(lc.forward, s, net, sh, fwd, ctx, false);
  add_tp_amax(lc.forward, s, net, sh);
  add_cp(lc.forward, s, net, sh, attention_time(fwd, ctx), false);
  add_ep(lc.forward, s, net, sh, fwd_t, false);
  double layer_params = cost::local_layer_params(*s.model, s.par).total();  // what ZeRO-3 gathers
  PassCost ungathered = lc.forward;
  add_zero3(lc.forward, s, net, sh, layer_params, fwd_t, false, ctx);
  lc.forward_flops = total_flops(fwd);

  if (s.train.recompute == spec::Recompute::full) {
    // The whole forward again, collectives included -- but for a stack whose backward gathers the
    // layer before autograd recomputes it (spec::Software::zero3_recompute_gathers), not its gather.
    for (const Segment& seg : (s.software.zero3_recompute_gathers ? lc.forward : ungathered).segments)
      add(lc.backward, Category::recompute, to_seconds(seg.duration));
    lc.recompute_flops = lc.forward_flops;
  } else if (s.train.recompute == spec::Recompute::selective) {
    Seconds again = cost::ops_time(k.recompute, ctx);
    add(lc.backward, Category::recompute, again);
    if ((s.train.selective_modules() & spec::recompute_module::op_sac) && s.par.tp > 1 && s.par.sequence_parallel) {
      // torchtitan's per-op policy saves the TP reduce-scatters' outputs but not the all-gathers'
      // (its save list: aten.mm, the SDPA kernels, _c10d_functional.reduce_scatter_tensor, aten.max),
      // so the recomputed wk and w3 gather their sequence-parallel inputs again: the attention's and
      // the MLP's all-gather, behind the recomputed matmuls only when TP overlap pipelines them.
      Seconds gathers = net.time({Comm::Op::all_gather, Group::tp, bytes(sh.tokens * sh.hidden * 2.0)}) * 2.0;
      Seconds hidden = s.software.tp_comm_overlap ? std::min(gathers, gemm_time(k.recompute, ctx)) : Seconds{0};
      add(lc.backward, Category::tp_comm, gathers - hidden + hidden * s.cal->compute.overlap_slowdown);
    }
    if (s.train.selective_modules() & spec::recompute_module::moe) {
      // A recomputed MoE block dispatches and combines its tokens again.
      PassCost ep;
      add_ep(ep, s, net, sh, again, false);
      add(lc.backward, Category::recompute, to_seconds(ep.total()));
    }
    lc.recompute_flops = total_flops(k.recompute);
  }
  add(lc.backward, Category::compute, bwd_t);
  add_tp_amax(lc.backward, s, net, sh);
  add_tp(lc.backward, s, net, sh, bwd, ctx, true);
  add_cp(lc.backward, s, net, sh, attention_time(bwd, ctx), true);
  add_ep(lc.backward, s, net, sh, bwd_t, true);
  add_zero3(lc.backward, s, net, sh, layer_params, bwd_t, true, ctx);
  add_grad_path(lc.backward, s, sh, layer_params, ctx);
  // A GPT layer's parameter tensors: QKV, projection, FC1, FC2 weights and biases and two norms'
  // weights and biases (12; gated MLPs and bias-free models differ by a few, which costs 2 us each).
  if (s.train.frozen_base())  // only the adapters' weight gradients: A and B per adapted linear
    add_grad_accumulation(lc.backward, s, cost::lora_params(sh).total(),
                          2.0 * static_cast<double>(cost::lora_targets(sh).size()), ctx);
  else
    add_grad_accumulation(lc.backward, s, layer_params, 12, ctx);
  // A pass whose host work outlasts its GPU work leaves the GPU waiting for launches: the
  // difference is exposed (the host runs ahead otherwise; TransformerEngine #2053, #761) -- in an
  // MoE forward it cannot run past its waits (moe_forward_waits).
  const HostBlocks& host_blocks = k.host;
  Seconds host = host_blocks.total(), fwd_gpu = to_seconds(lc.forward.total());
  Seconds sync = moe_forward_waits(s, sh, host_blocks, fwd, ctx, category_time(lc.forward, Category::ep_comm), fwd_gpu);
  for (PassCost* pc : {&lc.forward, &lc.backward}) {
    Seconds gpu = to_seconds(pc->total());
    Seconds issue = pc == &lc.backward ? host_blocks.backward() : host;
    if (issue > gpu) add(*pc, Category::host, issue - gpu);
  }
  if (sync.value() > 0) add(lc.forward, Category::host, sync);
  if (s.train.offload_layers > 0 && s.cluster->host_link.value() > 0) {
    // Activation offload (Megatron-Core cpu_offloading): the layer's saved tensors go to host
    // memory over the GPU-host link during its forward and return during its backward, on copy
    // engines beside the compute; only what outlasts the pass is exposed.
    Seconds copy = cost::layer_activation_bytes(*s.model, s.par, s.train, attn) / s.cluster->host_link;
    add(lc.offload_forward, Category::other, std::max(Seconds{0}, copy - fwd_t));
    add(lc.offload_backward, Category::other, std::max(Seconds{0}, copy - bwd_t));
  }
  return lc;
}

Seconds weight_quantize_time(const StepSpec& s, double elems, double tensors) {
  cost::Op op = cost::weight_quantize_op(s.train.precision, s.software.fp8_recipe,
                                         cost::fp8_needs_transpose(s.cluster->gpu), s.train.fp8_params, elems, tensors);
  if (op.bytes.value() <= 0 || elems <= 0) return Seconds{0};
  return cost::op_time(op, compute_context(s));
}

PassCost fp8_amax_reduction(const StepSpec& s, const CommPricer& net, double tensors) {
  PassCost p;
  if (s.train.precision != spec::Dtype::fp8 || s.software.fp8_recipe != spec::Fp8Recipe::delayed || tensors <= 0)
    return p;
  // The amaxes concatenated (torch.cat), the all-reduce, the fused amax-history and scale update.
  Seconds kernels = s.cal->compute.kernel_overhead * 2.0;
  add(p, Category::other, net.time({Comm::Op::all_reduce, Group::stage, bytes(4.0 * tensors)}) + kernels);
  return p;
}

PassCost embedding_cost(const StepSpec& s, const CommPricer& net, bool backward) {
  cost::LayerShape sh = cost::layer_shape(*s.model, s.par, s.train);
  PassCost p;
  cost::ComputeContext ctx = compute_context(s);
  add(p, Category::compute, cost::ops_time(cost::embedding_ops(sh, backward), ctx));
  if (backward && !s.train.frozen_base())  // the word embedding's gradient (its vocab-parallel rows) into its main grad
    add_grad_accumulation(p, s, vocab_rows(s), 1, ctx);
  // Vocab-parallel embedding: the partial lookups are all-reduced (reduce-scattered with SP).
  if (s.par.tp > 1 && !backward) {
    Bytes act = bytes(sh.tokens * sh.hidden * 2.0);
    add(p, Category::tp_comm,
        net.time({s.par.sequence_parallel ? Comm::Op::reduce_scatter : Comm::Op::all_reduce, Group::tp, act}));
  }
  return p;
}

PassCost head_cost(const StepSpec& s, const CommPricer& net, bool backward) {
  cost::LayerShape sh = cost::layer_shape(*s.model, s.par, s.train);
  PassCost p;
  cost::ComputeContext ctx = compute_context(s);
  add(p, Category::compute, cost::ops_time(head_ops(s, sh, backward), ctx));
  // An untied LM head, or the last stage's copy of a tied one, has its own main grad.
  if (backward && !s.train.frozen_base() && (!s.model->tied_embeddings || s.par.pp > 1))
    add_grad_accumulation(p, s, vocab_rows(s), 1, ctx);
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
