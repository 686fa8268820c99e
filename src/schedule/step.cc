#include "schedule/step.h"

#include <algorithm>
#include <array>
#include <span>
#include <stdexcept>

#include "cost/compute.h"
#include "cost/layer_shape.h"
#include "cost/memory.h"
#include "cost/partition.h"
#include "schedule/pipeline_order.h"
#include "spec/job_rules.h"

namespace dtsim::schedule {
namespace {

struct Streams {
  StreamId compute, pp_fwd, pp_bwd, dp;
};

// Megatron-LM DDP bucket: max(40M, 1M x dp) parameters (distributed_data_parallel_config.py);
// bucketing is off for model chunks after the first in the interleaved schedule.
constexpr std::int64_t kMaxBuckets = 1 << 16;

double bucket_params(const spec::Parallel& par) {
  return std::max(40e6, 1e6 * static_cast<double>(par.dp * par.cp));
}

class Builder {
 public:
  Builder(const StepSpec& s, const CommPricer& net, StepGraph& out) : s_(s), net_(net), out_(out) {}
  void build();

 private:
  static constexpr int kKinds = 16;
  std::int64_t layers(std::int64_t stage, std::int64_t chunk) const {
    return out_.partition.layers(stage, chunk);
  }
  /// Layers of a chunk by kind: bits 0-1 the layer's variant (variant()), bit 2 a layer an
  /// fp8/fp4 run keeps in bf16 (bf16_layers_start/end), bit 3 a layer that does not recompute
  /// under partial full recompute (recompute_layers). Kind 0: the model's layer.
  std::array<std::int64_t, kKinds> layer_kinds(std::int64_t stage, std::int64_t chunk) const;
  /// Which model prices layer `i`: 0 the model's own layer (a hybrid model's MoE block, else its
  /// dense MLP block), 1 a dense layer of an MoE model (its moe_dense_layers, or a hybrid's '-'
  /// blocks), 2 a hybrid's Mamba block, 3 its attention block.
  int variant(std::int64_t i) const;
  /// The model a variant's layers are priced as, and their parallel layout (no experts, no EP).
  const spec::Model& variant_model(int v) const { return v == 0 && !s_.model->hybrid() ? *s_.model : variants_[v]; }
  spec::Parallel variant_par(int v) const {
    spec::Parallel par = s_.par;
    if (!variant_model(v).is_moe()) par.ep = 1, par.etp = 0;
    return par;
  }
  /// The cost of a layer of `kind` (priced in build() for the kinds the model has).
  const LayerCost& kind_cost(int kind) const { return out_.layer[static_cast<std::size_t>(kind_index_[kind])]; }

  /// Multi-token-prediction modules run after the model's last layer: the last stage's last chunk.
  bool holds_mtp(std::int64_t stage, std::int64_t chunk) const {
    return s_.model->mtp_layers > 0 && stage == p_ - 1 && chunk == v_ - 1;
  }
  /// The variant a block of pattern letter `c` is priced as (see variant()); 'T' a transformer layer.
  int block_variant(char c) const;
  /// Layers of each kind the MTP modules run, all depths: each module's blocks (spec::Model::
  /// mtp_blocks) by variant, with the bf16 bit when an fp8/fp4 run keeps them in bf16 (mtp_bf16).
  std::array<std::int64_t, kKinds> mtp_kinds() const;
  /// Of those, the share whose weights the chunk holds: one set of weights per module, or one for
  /// all (spec::Model::mtp_shared_weights).
  double mtp_weight_share() const {
    return static_cast<double>(s_.model->mtp_weight_sets()) / static_cast<double>(s_.model->mtp_layers);
  }
  /// Layers of each variant whose weights a rank of `stage` holds in `chunk`: its layers and, in
  /// the chunk that runs them, the MTP modules' blocks times mtp_weight_share; `quantized`: only
  /// those an fp8/fp4 run quantizes (not kept in bf16).
  std::array<double, 4> weight_layers(std::int64_t stage, std::int64_t chunk, bool quantized = false) const;
  /// What one rank of `stage` trains of `chunk`: dense parameters (reduced and sharded over
  /// dp x cp) and expert weights (over the expert-data-parallel group, Group::edp); with LoRA
  /// only the adapters.
  cost::LocalLayerParams chunk_params(std::int64_t stage, std::int64_t chunk) const;
  /// ZeRO-3 with trained weights: each layer's gradients are reduced in its backward (see add_backward).
  bool zero3_layerwise() const { return s_.par.zero_stage >= 3 && !s_.train.frozen_base(); }
  /// ZeRO-3: the parameters outside the layers a chunk holds (0 otherwise; see add_backward).
  double zero3_extras(std::int64_t stage, std::int64_t chunk) const;
  /// A data-parallel collective of `params` x `bytes_per_param`: the dense part over dp x cp,
  /// the expert part over edp (Megatron-Core DDP keeps expert parameters in their own buffers and
  /// reduces them over the expert-data-parallel group, distributed_data_parallel.py); the task
  /// that finishes last is appended to `done` when given, the last one returned.
  TaskId dp_comm(StreamId stream, Comm::Op op, const cost::LocalLayerParams& params, double bytes_per_param,
                 std::span<const TaskId> deps, Label label, std::vector<TaskId>* done = nullptr);
  /// Bytes per parameter of the ZeRO parameter all-gather: 16-bit, or fp8 (--fp8-param-gather).
  /// MXFP8 parameters travel in bf16: Megatron-Core gathers them through the gradient buffer
  /// (reuse_grad_buf_for_mxfp8_param_ag, param_and_grad_buffer.py: "param_data ... view(torch.bfloat16)")
  /// and casts them to MXFP8 during the copy out, since row- and column-wise MXFP8 copies cannot be
  /// derived from one another (TE docs/features/low_precision_training/mxfp8).
  double param_gather_bytes() const {
    bool fp8_wire = s_.train.fp8_params && s_.train.precision == spec::Dtype::fp8 &&
                    !s_.software.mxfp8(s_.train.precision);
    return fp8_wire ? 1.0 : 2.0;
  }
  PassCost pass_cost(std::int64_t stage, std::int64_t chunk, bool forward) const;
  /// Interned cost of a (stage, chunk, direction) pass: computed once, shared by its micro-batches.
  CostId pass_cost_id(std::int64_t stage, std::int64_t chunk, bool forward);
  /// Megatron DDP's buckets of a chunk's parameters (see add_grad_reduce).
  std::int64_t buckets(std::int64_t stage, std::int64_t chunk) const;
  /// A pass's cost cut into `pieces` equal parts: the first part's id (it takes the rounding) and the others'.
  std::pair<CostId, CostId> split_cost(CostId cost, std::int64_t pieces);
  /// What quantizing a chunk's fp8/fp4 weights once per step costs one rank (weight_quantize_time):
  /// its layers but those the run keeps in 16 bits, its MTP modules; the embedding and the LM
  /// head stay 16-bit.
  Seconds weight_quantize(std::int64_t stage, std::int64_t chunk) const;
  /// `cost` with the chunk's weight quantization added, for the first micro-batch's forward.
  CostId with_weight_quantize(CostId cost, std::int64_t stage, std::int64_t chunk);
  bool try_add(std::int64_t stage, std::int64_t pos);
  TaskId add_forward(std::int64_t stage, const PassRef& pass, std::span<const TaskId> deps);
  TaskId add_backward(std::int64_t stage, const PassRef& pass, std::span<const TaskId> deps);
  void add_grad_reduce(std::int64_t stage, std::int64_t chunk, CostId cost, std::span<const TaskId> deps, TaskId& last);
  void add_param_gathers();
  void finish_step();
  TaskId comm(StreamId stream, Comm::Op op, Group g, Bytes size, Category cat, std::span<const TaskId> deps,
              Label label);
  // Pipeline p2p (see try_add): positions in a stage's order, its passes and their transfers.
  std::size_t at(std::int64_t stage, std::int64_t pos) const { return static_cast<std::size_t>(stage * len_ + pos); }
  PassRef pass_at(std::int64_t stage, std::int64_t pos) const {
    const BuildScratch::Slot& s = slots_[at(stage, pos)];
    return {s.forward, s.chunk, s.microbatch};
  }
  std::int64_t position(std::int64_t stage, const PassRef& p) const {
    return pos_[at(stage, (p.forward ? 0 : v_ * m_) + p.chunk * m_ + p.microbatch)];
  }
  std::int64_t post_point(std::int64_t stage, std::int64_t pos) const;
  std::int64_t wait_point(std::int64_t stage, std::int64_t pos) const;
  /// The stage and pass a pass's output goes to; false if none (last virtual stage of its direction).
  bool receiver(std::int64_t stage, const PassRef& p, std::int64_t& to_stage, PassRef& to_pass) const;
  /// Adds the transfer of the output of slot `producer` (on `stage`) once the producing pass and
  /// the receiver's post point exist.
  void try_transfer(std::int64_t stage, std::int32_t producer);
  /// Stage `stage` cannot go on until the transfer of slot `producer`'s output exists.
  bool wait_for(std::int64_t stage, std::int32_t producer) {
    waiting_[static_cast<std::size_t>(stage)] = producer;
    return false;
  }
  TaskId comm(StreamId stream, Comm::Op op, Group g, Bytes size, Category cat, std::initializer_list<TaskId> deps,
              Label label) {
    return comm(stream, op, g, size, cat, std::span<const TaskId>(deps.begin(), deps.size()), label);
  }

  const StepSpec& s_;
  const CommPricer& net_;
  StepGraph& out_;
  std::array<spec::Model, 4> variants_;  ///< variant() -> the model its layers are priced as (entry 0 for hybrids)
  std::array<int, kKinds> kind_index_{};  ///< layer kind -> its entry in out_.layer
  std::int64_t p_ = 1, v_ = 1, m_ = 1;
  bool zero_sharded_ = false;
  /// Gradients reduce-scattered (the distributed optimizer) rather than all-reduced; Megatron-Core's
  /// Muon all-reduces them even with its layer-wise distributed optimizer (muon-optimizer.md sec. 1.5).
  bool grads_scattered_ = false;
  /// Muon: the updated parameters are all-gathered after the optimizer step, not overlapped with
  /// the next forward (its layer-wise optimizer's all_gather_v).
  bool muon_ = false;
  /// Muon's Newton-Schulz time for the matrices a rank of `stage` owns (see cost::muon_ops).
  Seconds muon_time(std::int64_t stage) const;
  std::vector<Streams> st_;
  std::vector<BuildScratch::Slot>& slots_ = out_.scratch.slots;
  std::vector<std::int32_t>& pos_ = out_.scratch.pos;
  std::int64_t len_ = 0;                         // passes per stage: 2 v m
  std::vector<std::int32_t> waiting_;            // per stage: the slot whose transfer its next pass waits for, -1 = none
  std::vector<std::int64_t> ready_;              // stages to try again
  bool overlap_p2p_ = false;
  std::vector<std::vector<TaskId>>& grad_done_ = out_.scratch.grad_done;  // per stage: what the grad-norm sync waits for
  std::vector<std::vector<TaskId>> param_gather_;  ///< per (stage, chunk): its buckets' all-gathers, in forward order
  std::vector<CostId> pass_costs_;               // per (stage, chunk, direction), -2 = not yet
  CommId p2p_comm_[2] = {-1, -1};  ///< a pipeline transfer: forward (activations), backward (their gradients)
  bool gathered_[2] = {false, false};  ///< the receiver all-gathers that transfer over its TP group
  double pp_tensor_bytes_ = 0;         ///< a pipeline tensor, b*s/cp x h, whole
};

// Megatron-LM's pipeline p2p (megatron/core/pipeline_parallel/p2p_communication.py, schedules.py):
// NCCL send and recv rendezvous, so a transfer starts once the producing pass is done and the
// receiver has posted its recv; the sender waits for it to complete before a later pass.
//  - 1F1B: blocking calls between passes; each recv is posted right before the pass that
//    consumes it, each send completes before the sender's next pass.
//  - interleaved: warm-up and cool-down exchange after every pass; in steady state one combined
//    call after each backward sends both outputs and posts both next recvs. So a forward's recv
//    is posted after the pass before it, a backward's after the previous backward; a forward's
//    send completes before the next forward, a backward's before the next pass.
//  - interleaved with overlap_p2p_comm: the forward exchange follows each forward and the
//    backward exchange each backward, both left in flight; each recv is posted after the
//    previous pass of its direction and each send completes before the next pass of it.
std::int64_t Builder::post_point(std::int64_t stage, std::int64_t pos) const {
  const BuildScratch::Slot& s = slots_[at(stage, pos)];
  if (v_ == 1 || (s.forward && !overlap_p2p_)) return pos - 1;
  return s.prev_same >= 0 ? s.prev_same : pos - 1;
}

std::int64_t Builder::wait_point(std::int64_t stage, std::int64_t pos) const {
  const BuildScratch::Slot& s = slots_[at(stage, pos)];
  if (v_ == 1 || (!s.forward && !overlap_p2p_)) return pos + 1 < len_ ? pos + 1 : -1;
  return s.next_same;
}

bool Builder::receiver(std::int64_t stage, const PassRef& p, std::int64_t& to_stage, PassRef& to_pass) const {
  // Forward outputs go down the virtual stages, backward outputs up (no division: this is hot).
  std::int64_t st = stage + (p.forward ? 1 : -1), chunk = p.chunk;
  if (st == p_) st = 0, ++chunk;
  else if (st < 0) st = p_ - 1, --chunk;
  if (chunk < 0 || chunk >= v_) return false;
  to_stage = st;
  to_pass = {p.forward, chunk, p.microbatch};
  return true;
}

void Builder::try_transfer(std::int64_t stage, std::int32_t producer) {
  BuildScratch::Slot& s = slots_[static_cast<std::size_t>(producer)];
  if (s.task < 0 || s.send >= 0 || !s.output) return;
  TaskId deps[2] = {s.task, -1};
  std::size_t n = 1;
  if (s.receiver_post >= 0) {
    BuildScratch::Slot& post = slots_[static_cast<std::size_t>(s.receiver_post)];
    if (post.task < 0) {
      // The receiver has not posted its recv yet: its post point adds the transfer.
      post.pending[post.pending[0] < 0 ? 0 : 1] = producer;
      return;
    }
    deps[n++] = post.task;
  }
  const Streams& ss = st_[static_cast<std::size_t>(stage)];
  Task& t = out_.graph.emplace_task(s.forward ? ss.pp_fwd : ss.pp_bwd, std::span<const TaskId>(deps, n));
  t.kind = TaskKind::comm;
  t.comm = p2p_comm_[s.forward ? 0 : 1];
  t.comm_category = Category::pp_comm;
  t.wait_category = Category::pp_comm;
  t.label = {s.forward ? Label::Kind::send_activations : Label::Kind::send_gradients, s.chunk, s.microbatch};
  s.send = out_.graph.last_task();
  // Wake the receiver if its next pass waited for this transfer, and the sender if it waited for the send.
  std::int64_t rs = 0;
  PassRef rp;
  receiver(stage, {s.forward, s.chunk, s.microbatch}, rs, rp);  // true: s.output
  for (std::int64_t st : {rs, stage})
    if (waiting_[static_cast<std::size_t>(st)] == producer) {
      waiting_[static_cast<std::size_t>(st)] = -1;
      ready_.push_back(st);
    }
}

CostId Builder::pass_cost_id(std::int64_t stage, std::int64_t chunk, bool forward) {
  auto& id = pass_costs_[static_cast<std::size_t>((stage * v_ + chunk) * 2 + (forward ? 0 : 1))];
  if (id == -2) id = out_.graph.add_cost(pass_cost(stage, chunk, forward).segments);
  return id;
}

int Builder::variant(std::int64_t i) const {
  const spec::Model& m = *s_.model;
  if (!m.hybrid()) return i < m.moe_dense_layers ? 1 : 0;
  return block_variant(m.layer_block(i));
}

int Builder::block_variant(char c) const {
  switch (c) {
    case 'M': return 2;
    case '*': return 3;
    case '-': return s_.model->is_moe() ? 1 : 0;
    default: return 0;  // 'E', or a transformer's 'T'
  }
}

std::array<std::int64_t, Builder::kKinds> Builder::mtp_kinds() const {
  std::array<std::int64_t, kKinds> n{};
  const spec::Model& m = *s_.model;
  bool low = s_.train.precision == spec::Dtype::fp8 || s_.train.precision == spec::Dtype::fp4;
  for (char c : m.mtp_blocks()) n[static_cast<std::size_t>(block_variant(c) + (low && m.mtp_bf16 ? 4 : 0))] += m.mtp_layers;
  return n;
}

std::array<std::int64_t, Builder::kKinds> Builder::layer_kinds(std::int64_t stage, std::int64_t chunk) const {
  std::array<std::int64_t, kKinds> n{};
  std::int64_t first = out_.partition.first_layer(stage, chunk), total = s_.model->layers;
  bool low = s_.train.precision == spec::Dtype::fp8 || s_.train.precision == spec::Dtype::fp4;
  bool partial = s_.train.recompute == spec::Recompute::full && s_.train.recompute_layers > 0;
  for (std::int64_t i = first; i < first + layers(stage, chunk); ++i) {
    bool bf16 = low && (i < s_.train.bf16_layers_start || i >= total - s_.train.bf16_layers_end);
    bool kept = partial && i - first >= s_.train.recompute_layers;
    ++n[static_cast<std::size_t>(variant(i) + (bf16 ? 4 : 0) + (kept ? 8 : 0))];
  }
  return n;
}

std::array<double, 4> Builder::weight_layers(std::int64_t stage, std::int64_t chunk, bool quantized) const {
  std::array<std::int64_t, kKinds> k = layer_kinds(stage, chunk), mk{};
  double share = 0;
  if (holds_mtp(stage, chunk)) mk = mtp_kinds(), share = mtp_weight_share();
  std::array<double, 4> n{};
  for (std::size_t kind = 0; kind < kKinds; ++kind)
    if (!(quantized && (kind & 4))) n[kind & 3] += static_cast<double>(k[kind]) + static_cast<double>(mk[kind]) * share;
  return n;
}

cost::LocalLayerParams Builder::chunk_params(std::int64_t stage, std::int64_t chunk) const {
  if (s_.train.frozen_base()) {
    // Only the adapters train: their gradients are what the data-parallel ranks reduce, their
    // states what the optimizer steps (the frozen weights are outside the DDP buffers).
    cost::LocalLayerParams a = cost::local_lora_params(*s_.model, s_.par, s_.train);
    auto n = static_cast<double>(layers(stage, chunk));
    return {.dense = a.dense * n, .expert = a.expert * n};
  }
  std::array<double, 4> by_variant = weight_layers(stage, chunk);
  cost::LocalLayerParams p;
  for (int v = 0; v < 4; ++v) {
    double n = by_variant[static_cast<std::size_t>(v)];
    if (n <= 0) continue;
    cost::LocalLayerParams layer = cost::local_layer_params(variant_model(v), variant_par(v));
    // A dense variant's parameters are all dense (reduced over dp x cp).
    p.dense += (v == 0 ? layer.dense : layer.total()) * n;
    if (v == 0) p.expert += layer.expert * n;
  }
  if (holds_mtp(stage, chunk))  // each MTP module's 2h x h projection
    p.dense += 2.0 * static_cast<double>(s_.model->hidden) * static_cast<double>(s_.model->hidden) /
               static_cast<double>(s_.par.tp) * static_cast<double>(s_.model->mtp_weight_sets());
  // Embedding and LM head weights belong to the chunk that runs them.
  bool holds_extras = stage == 0 ? chunk == 0 : (stage == p_ - 1 && chunk == v_ - 1);
  if (holds_extras) p.dense += cost::non_layer_params(*s_.model, s_.par, stage);
  return p;
}

TaskId Builder::dp_comm(StreamId stream, Comm::Op op, const cost::LocalLayerParams& params, double bytes_per_param,
                        std::span<const TaskId> deps, Label label, std::vector<TaskId>* done) {
  TaskId last = comm(stream, op, Group::dp_cp, bytes(params.dense * bytes_per_param), Category::dp_comm_exposed, deps, label);
  if (params.expert > 0 && s_.par.expert_dp() > 1)
    last = comm(stream, op, Group::edp, bytes(params.expert * bytes_per_param), Category::dp_comm_exposed, deps, label);
  if (done) done->push_back(last);
  return last;
}

PassCost Builder::pass_cost(std::int64_t stage, std::int64_t chunk, bool forward) const {
  PassCost c;
  const LayerCost& lc = out_.layer.front();
  std::array<std::int64_t, kKinds> k = layer_kinds(stage, chunk);
  for (int kind = 0; kind < kKinds; ++kind)
    if (k[kind] > 0) {
      const LayerCost& x = kind_cost(kind);
      accumulate(c, forward ? x.forward : x.backward, static_cast<double>(k[kind]));
    }
  if (std::int64_t off = out_.partition.leading_in_chunk(stage, chunk, s_.train.offload_layers))
    accumulate(c, forward ? lc.offload_forward : lc.offload_backward, static_cast<double>(off));
  // Delayed-scaling fp8: the pass's amax all-reduce. Per Linear, Transformer Engine tracks input,
  // weight and output amaxes forward, output and input gradients backward; 4 Linears per layer
  // (the count only sets the message size, a few hundred bytes: the call is latency-bound).
  std::int64_t fp8_layers = 0;
  for (int kind = 0; kind < kKinds; ++kind)
    if (!(kind & 4)) fp8_layers += k[kind];
  accumulate(c, fp8_amax_reduction(s_, net_, static_cast<double>(fp8_layers) * 4.0 * (forward ? 3.0 : 2.0)));
  // Scatter-gather: a pass that receives its input from another stage first all-gathers the
  // pieces over its TP group (Megatron-LM 2021-22 p2p_communication._communicate:
  // mpu.gather_split_1d_tensor after the exchange, on the compute stream).
  bool receives = forward ? !(stage == 0 && chunk == 0) : !(stage == p_ - 1 && chunk == v_ - 1);
  if (receives && gathered_[forward ? 0 : 1]) {
    PassCost gather;
    gather.segments.push_back(
        {Category::pp_comm, to_sim_time(net_.time({Comm::Op::all_gather, Group::tp, bytes(pp_tensor_bytes_)}))});
    accumulate(c, gather);
  }
  if (stage == 0 && chunk == 0) accumulate(c, embedding_cost(s_, net_, !forward));
  if (stage == p_ - 1 && chunk == v_ - 1) accumulate(c, head_cost(s_, net_, !forward));
  if (holds_mtp(stage, chunk)) {
    // DeepSeek-V3 MTP (arXiv:2412.19437 sec. 2.2): per module a layer (a hybrid model's blocks),
    // its projection (in the layer's GEMM share) and another pass of the shared LM head and
    // cross-entropy.
    std::array<std::int64_t, kKinds> mk = mtp_kinds();
    for (int kind = 0; kind < kKinds; ++kind)
      if (mk[static_cast<std::size_t>(kind)] > 0) {
        const LayerCost& x = kind_cost(kind);
        accumulate(c, forward ? x.forward : x.backward, static_cast<double>(mk[static_cast<std::size_t>(kind)]));
      }
    accumulate(c, head_cost(s_, net_, !forward), static_cast<double>(s_.model->mtp_layers));
  }
  return c;
}

TaskId Builder::comm(StreamId stream, Comm::Op op, Group g, Bytes size, Category cat, std::span<const TaskId> deps,
                     Label label) {
  Task& t = out_.graph.emplace_task(stream, deps);
  t.kind = TaskKind::comm;
  t.comm = out_.graph.add_comm(Comm{op, g, size});
  t.comm_category = cat;
  t.wait_category = cat;
  t.label = label;
  return out_.graph.last_task();
}

// A chunk's first forward waits for its parameters bucket by bucket: Megatron-Core's forward
// pre-hook finishes the all-gather of the bucket group that holds a module's parameters before
// the module runs (finish_param_sync) and only then dispatches the next group's
// (next_param_gather_bucket_group; megatron/core/distributed/distributed_data_parallel.py and
// param_and_grad_buffer.py). So bucket k's gather overlaps the layers of bucket k-1, and the
// forward is cut into one piece per bucket, each waiting for its own gather.
TaskId Builder::add_forward(std::int64_t stage, const PassRef& pass, std::span<const TaskId> deps) {
  const Streams& ss = st_[static_cast<std::size_t>(stage)];
  CostId cost = pass_cost_id(stage, pass.chunk, true);
  auto c = static_cast<std::int32_t>(pass.chunk), mb = static_cast<std::int32_t>(pass.microbatch);
  const std::vector<TaskId>* gathers =
      pass.microbatch == 0 && !param_gather_.empty() ? &param_gather_[static_cast<std::size_t>(stage * v_ + pass.chunk)]
                                                     : nullptr;
  if (gathers != nullptr && gathers->empty()) gathers = nullptr;
  auto pieces = static_cast<std::int64_t>(gathers != nullptr ? gathers->size() : 1);
  auto [first_id, rest_id] = split_cost(cost, pieces);
  if (pass.microbatch == 0) first_id = with_weight_quantize(first_id, stage, pass.chunk);
  TaskId all[4];
  std::size_t n = 0;
  for (TaskId d : deps) all[n++] = d;
  TaskId last = -1;
  for (std::int64_t k = 0; k < pieces; ++k) {
    if (gathers != nullptr) all[n++] = (*gathers)[static_cast<std::size_t>(k)];
    Task piece{.stream = ss.compute, .kind = TaskKind::compute, .cost = k == 0 ? first_id : rest_id,
               .label = {Label::Kind::forward, c, mb, pieces > 1 ? static_cast<std::int32_t>(k) : -1}};
    last = out_.graph.add_task(piece, std::span<const TaskId>(all, n));
    n = 0;
  }
  return last;
}

Seconds Builder::weight_quantize(std::int64_t stage, std::int64_t chunk) const {
  if (s_.train.precision != spec::Dtype::fp8 && s_.train.precision != spec::Dtype::fp4) return Seconds{0};
  std::array<double, 4> n = weight_layers(stage, chunk, true);
  double elems = 0, tensors = 0;
  for (int v = 0; v < 4; ++v) {
    double layers = n[static_cast<std::size_t>(v)];
    if (layers <= 0) continue;
    spec::Parallel par = variant_par(v);
    cost::LayerShape sh = cost::layer_shape(variant_model(v), par, s_.train);
    // Weight tensors: QKV and projection (MLA: the down- and up-projections), FC1 and FC2, or
    // every local expert's two (Transformer Engine's GroupedLinear quantizes expert by expert)
    // and the shared expert's, a Mamba mixer's in_proj and out_proj; the router stays 16-bit.
    double attention = !sh.attention ? 0.0 : sh.kv_lora > 0 ? (sh.q_lora > 0 ? 5.0 : 4.0) : 2.0;
    double mlp = !sh.mlp ? 0.0 : sh.experts_local > 0 ? 2.0 * sh.experts_local + (sh.shared_ffn > 0 ? 2.0 : 0.0) : 2.0;
    double mamba = sh.mamba() ? 2.0 : 0.0;
    elems += cost::local_layer_params(variant_model(v), par).total() * layers;
    tensors += (attention + mlp + mamba) * layers;
  }
  return weight_quantize_time(s_, elems, tensors);
}

CostId Builder::with_weight_quantize(CostId cost, std::int64_t stage, std::int64_t chunk) {
  Seconds t = weight_quantize(stage, chunk);
  if (t.value() <= 0) return cost;
  std::vector<Segment> segs(out_.graph.segments(cost).begin(), out_.graph.segments(cost).end());
  segs.push_back({Category::compute, to_sim_time(t)});
  return out_.graph.add_cost(segs);
}

std::int64_t Builder::buckets(std::int64_t stage, std::int64_t chunk) const {
  // Bucketing needs overlapped reduction (DDP's bucket_size is None otherwise) and is off for
  // the chunks after the first (disable_bucketing for model_chunk_idx > 0).
  if (!s_.software.overlap_grad_reduce || chunk != 0) return 1;
  // At most kMaxBuckets: 2.6T parameters per chunk at 40M per bucket, beyond any real model's chunk;
  // a larger count (a mistyped width) would only cut the backward into pieces too small to time.
  double n = chunk_params(stage, chunk).total() / bucket_params(s_.par);
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(std::min(n, static_cast<double>(kMaxBuckets))), 1, kMaxBuckets);
}

std::pair<CostId, CostId> Builder::split_cost(CostId cost, std::int64_t pieces) {
  if (pieces <= 1) return {cost, cost};
  std::vector<Segment> first, rest;
  for (const Segment& seg : out_.graph.segments(cost)) {  // copied before add_cost moves the pool
    first.push_back({seg.category, seg.duration / pieces + seg.duration % pieces});
    rest.push_back({seg.category, seg.duration / pieces});
  }
  CostId first_id = out_.graph.add_cost(first);
  return {first_id, out_.graph.add_cost(rest)};
}

void Builder::add_grad_reduce(std::int64_t stage, std::int64_t chunk, CostId cost, std::span<const TaskId> deps,
                              TaskId& last) {
  const Streams& ss = st_[static_cast<std::size_t>(stage)];
  cost::LocalLayerParams params = chunk_params(stage, chunk);
  bool overlap = s_.software.overlap_grad_reduce;
  std::int64_t buckets = this->buckets(stage, chunk);
  Comm::Op op = grads_scattered_ ? Comm::Op::reduce_scatter : Comm::Op::all_reduce;
  double per_bucket = 1.0 / static_cast<double>(buckets);
  cost::LocalLayerParams bucket{.dense = params.dense * per_bucket, .expert = params.expert * per_bucket};
  // The last backward is split into one piece per bucket; a bucket reduces once its piece is done.
  auto [first_id, rest_id] = split_cost(cost, buckets);
  auto c = static_cast<std::int32_t>(chunk), mb = static_cast<std::int32_t>(m_ - 1);
  for (std::int64_t k = 0; k < buckets; ++k) {
    Task piece{.stream = ss.compute, .kind = TaskKind::compute, .cost = k == 0 ? first_id : rest_id,
               .label = {Label::Kind::backward, c, mb, static_cast<std::int32_t>(k)}};
    last = out_.graph.add_task(piece, deps);
    deps = {};
    if (overlap)
      dp_comm(ss.dp, op, bucket, spec::dtype_bytes(s_.train.grad_dtype), std::span<const TaskId>(&last, 1),
              {Label::Kind::grad_bucket, c, -1, static_cast<std::int32_t>(k)}, &grad_done_[static_cast<std::size_t>(stage)]);
  }
}

// ZeRO-3 / FSDP reduce-scatters each layer's gradients inside its backward (the pass costs, add_zero3);
// what is left for the end of the last backward is the parameters outside the layers (embedding,
// LM head, final norm: FSDP's root unit), whose gradients are complete only when the backward is.
// Their gather before the first forward is add_param_gathers'.
double Builder::zero3_extras(std::int64_t stage, std::int64_t chunk) const {
  if (!zero3_layerwise()) return 0.0;
  bool holds_extras = stage == 0 ? chunk == 0 : (stage == p_ - 1 && chunk == v_ - 1);
  return holds_extras ? cost::non_layer_params(*s_.model, s_.par, stage) : 0.0;
}

TaskId Builder::add_backward(std::int64_t stage, const PassRef& pass, std::span<const TaskId> deps) {
  const Streams& ss = st_[static_cast<std::size_t>(stage)];
  auto chunk = static_cast<std::int32_t>(pass.chunk), mb = static_cast<std::int32_t>(pass.microbatch);
  TaskId last = -1;
  if (pass.microbatch == m_ - 1 && s_.par.dp * s_.par.cp > 1 && !zero3_layerwise()) {
    add_grad_reduce(stage, pass.chunk, pass_cost_id(stage, pass.chunk, false), deps, last);
  } else {
    CostId cost = pass_cost_id(stage, pass.chunk, false);
    Task& t = out_.graph.emplace_task(ss.compute, deps);
    t.cost = cost;
    t.label = {Label::Kind::backward, chunk, mb};
    last = out_.graph.last_task();
    double extras = zero3_extras(stage, pass.chunk);
    if (pass.microbatch == m_ - 1 && extras > 0 && s_.par.dp * s_.par.cp > 1)
      dp_comm(ss.dp, Comm::Op::reduce_scatter, {.dense = extras}, spec::dtype_bytes(s_.train.grad_dtype),
              std::span<const TaskId>(&last, 1), {Label::Kind::grad_reduce, chunk}, &grad_done_[static_cast<std::size_t>(stage)]);
  }
  if (pass.microbatch == m_ - 1 && pass.chunk == 0) grad_done_[static_cast<std::size_t>(stage)].push_back(last);
  return last;
}

bool Builder::try_add(std::int64_t stage, std::int64_t pos) {
  auto self = static_cast<std::int32_t>(at(stage, pos));
  BuildScratch::Slot& slot = slots_[static_cast<std::size_t>(self)];  // slots_ is not resized while building
  TaskId deps[3];
  std::size_t n = 0;
  // The input: the transfer from the previous virtual stage (forward) or the next (backward).
  if (slot.input >= 0) {
    TaskId in = slots_[static_cast<std::size_t>(slot.input)].send;
    if (in < 0) return wait_for(stage, slot.input);
    deps[n++] = in;
  }
  // Earlier passes' sends this pass waits for: the previous pass's, or its direction's.
  std::int64_t prev = slot.prev_same;
  for (std::int64_t prior : {pos - 1, prev != pos - 1 ? prev : -1}) {
    if (prior < 0 || wait_point(stage, prior) != pos) continue;
    auto k = static_cast<std::int32_t>(at(stage, prior));
    const BuildScratch::Slot& ps = slots_[static_cast<std::size_t>(k)];
    if (!ps.output) continue;
    if (ps.send < 0) return wait_for(stage, k);
    deps[n++] = ps.send;
  }
  std::span<const TaskId> d(deps, n);
  PassRef pass{slot.forward, slot.chunk, slot.microbatch};
  slot.task = pass.forward ? add_forward(stage, pass, d) : add_backward(stage, pass, d);
  try_transfer(stage, self);
  // This pass may be where a receiver posts its recv for transfers whose producers came first.
  for (std::int32_t k : slot.pending)
    if (k >= 0) try_transfer(k / static_cast<std::int32_t>(len_), k);
  return true;
}

void Builder::add_param_gathers() {
  if (zero3_layerwise() && s_.par.dp * s_.par.cp > 1) {
    // ZeRO-3 / FSDP: the parameters outside the layers are gathered once, before the chunk that
    // holds them first runs (FSDP's root unit, which stays gathered through the step).
    param_gather_.assign(static_cast<std::size_t>(p_ * v_), {});
    for (std::int64_t i = 0; i < p_; ++i)
      for (std::int64_t c = 0; c < v_; ++c)
        if (double extras = zero3_extras(i, c); extras > 0)
          param_gather_[static_cast<std::size_t>(i * v_ + c)].push_back(
              dp_comm(st_[static_cast<std::size_t>(i)].dp, Comm::Op::all_gather, {.dense = extras}, param_gather_bytes(), {},
                      {Label::Kind::param_gather, static_cast<std::int32_t>(c)}));
    return;
  }
  if (!zero_sharded_ || s_.par.zero_stage >= 3 || !s_.software.overlap_param_gather || muon_ || s_.par.dp * s_.par.cp == 1)
    return;
  // Distributed optimizer: the updated parameter shards are all-gathered while the next
  // step's forward runs, bucket by bucket in forward order (the reverse of the buckets'
  // gradient order), one after another on the stage's data-parallel stream; chunk c's first
  // forward waits for each bucket's gather before the layers it holds (add_forward).
  param_gather_.assign(static_cast<std::size_t>(p_ * v_), {});
  for (std::int64_t i = 0; i < p_; ++i)
    for (std::int64_t c = 0; c < v_; ++c) {
      std::int64_t b = buckets(i, c);
      cost::LocalLayerParams params = chunk_params(i, c);
      double share = 1.0 / static_cast<double>(b);
      cost::LocalLayerParams bucket{.dense = params.dense * share, .expert = params.expert * share};
      auto& gathers = param_gather_[static_cast<std::size_t>(i * v_ + c)];
      for (std::int64_t k = 0; k < b; ++k)
        gathers.push_back(dp_comm(st_[static_cast<std::size_t>(i)].dp, Comm::Op::all_gather, bucket, param_gather_bytes(),
                                  {}, {Label::Kind::param_gather, static_cast<std::int32_t>(c), -1,
                                       b > 1 ? static_cast<std::int32_t>(k) : -1}));
    }
}

Seconds Builder::muon_time(std::int64_t stage) const {
  // The weight matrices of the stage's layers by variant, its MTP modules' included.
  std::array<double, 4> n{};
  for (std::int64_t c = 0; c < v_; ++c) {
    std::array<double, 4> w = weight_layers(stage, c);
    for (std::size_t v = 0; v < 4; ++v) n[v] += w[v];
  }
  // The layer-wise optimizer hands each whole matrix to one rank: on average 1/dp of the dense
  // matrices' work, 1/edp of the experts' (every rank all of it without a distributed optimizer).
  bool sharded = s_.par.zero_stage >= 1;
  double dp = sharded ? static_cast<double>(s_.par.dp * s_.par.cp) : 1.0;
  double edp = sharded ? static_cast<double>(s_.par.expert_dp()) : 1.0;
  cost::ComputeContext ctx = compute_context(s_);
  ctx.precision = spec::Dtype::bf16, ctx.mxfp8 = false;
  Seconds t{0};
  for (int v = 0; v < 4; ++v) {
    if (n[static_cast<std::size_t>(v)] <= 0) continue;
    cost::MuonOps ops = cost::muon_ops(cost::layer_shape(variant_model(v), variant_par(v), s_.train));
    t += (cost::ops_time(ops.dense, ctx) / dp + cost::ops_time(ops.expert, ctx) / edp) * n[static_cast<std::size_t>(v)];
  }
  return t;
}

void Builder::finish_step() {
  const double dp = static_cast<double>(s_.par.dp * s_.par.cp);
  bool tied_copy = s_.model->tied_embeddings && p_ > 1 && !s_.train.frozen_base();
  std::vector<TaskId> sync_deps;
  for (std::int64_t i = 0; i < p_; ++i) {
    const Streams& ss = st_[static_cast<std::size_t>(i)];
    auto& done = grad_done_[static_cast<std::size_t>(i)];
    TaskId last_b = out_.graph.last_task_on(ss.compute);
    if (!s_.software.overlap_grad_reduce && dp > 1 && !zero3_layerwise()) {
      for (std::int64_t c = 0; c < v_; ++c)
        dp_comm(ss.dp, grads_scattered_ ? Comm::Op::reduce_scatter : Comm::Op::all_reduce, chunk_params(i, c),
                spec::dtype_bytes(s_.train.grad_dtype), std::span<const TaskId>(&last_b, 1),
                {Label::Kind::grad_reduce, static_cast<std::int32_t>(c)}, &done);
    }
    if (tied_copy && (i == 0 || i == p_ - 1)) {
      // The first and last stages sum their copies of the tied embedding's gradient.
      double rows = cost::padded_vocab(*s_.model, s_.par.tp) / static_cast<double>(s_.par.tp) *
                    static_cast<double>(s_.model->hidden);
      done.push_back(comm(ss.dp, Comm::Op::all_reduce, Group::pp_ends,
                          bytes(rows * spec::dtype_bytes(s_.train.grad_dtype)), Category::dp_comm_exposed, {last_b},
                          {Label::Kind::tied_embedding}));
    }
    done.push_back(last_b);
    sync_deps.insert(sync_deps.end(), done.begin(), done.end());
  }
  // Every stage's gradients are ready: one marker joins them (p edges per stage instead of p^2).
  Task join{.stream = out_.graph.add_stream(0, "step sync"), .kind = TaskKind::marker, .label = {Label::Kind::other}};
  TaskId ready = out_.graph.add_task(join, sync_deps);
  for (std::int64_t i = 0; i < p_; ++i) {
    const Streams& ss = st_[static_cast<std::size_t>(i)];
    // Gradient-norm clipping all-reduces one value over the model-parallel ranks: a global sync.
    comm(ss.compute, Comm::Op::all_reduce, Group::model, bytes(8), Category::other, {ready}, {Label::Kind::grad_norm});
    cost::LocalLayerParams params;
    for (std::int64_t c = 0; c < v_; ++c) {
      cost::LocalLayerParams p = chunk_params(i, c);
      params.dense += p.dense;
      params.expert += p.expert;
    }
    // The distributed optimizer owns 1/dp of the dense parameters and 1/edp of the experts.
    double owned = s_.par.zero_stage >= 1
                       ? params.dense / dp + params.expert / static_cast<double>(s_.par.expert_dp())
                       : params.total();
    cost::ComputeContext ctx = compute_context(s_);
    Seconds opt_time = cost::op_time(cost::optimizer_op(owned, s_.train, s_.software.optimizer_impl), ctx);
    if (muon_) opt_time += muon_time(i);
    Task opt{.stream = ss.compute, .kind = TaskKind::compute,
             .cost = out_.graph.add_cost({{Category::optimizer, to_sim_time(opt_time)}}), .label = {Label::Kind::optimizer}};
    TaskId o = out_.graph.add_task(opt);
    Task end{.stream = ss.compute, .kind = TaskKind::marker, .label = {Label::Kind::step_end}};
    if (zero_sharded_ && s_.par.zero_stage < 3 && (!s_.software.overlap_param_gather || muon_) && dp > 1)
      out_.end.push_back(out_.graph.add_task(
          end, {dp_comm(ss.dp, Comm::Op::all_gather, params, param_gather_bytes(), std::span<const TaskId>(&o, 1),
                        {Label::Kind::param_gather})}));
    else
      out_.end.push_back(out_.graph.add_task(end));
  }
}

void Builder::build() {
  out_.graph.clear();
  out_.compute.clear();
  out_.end.clear();
  out_.layer.clear();
  p_ = s_.par.pp;
  v_ = s_.par.vp;
  m_ = spec::micro_batches(s_.par, s_.train);
  zero_sharded_ = s_.par.zero_stage >= 1;
  muon_ = s_.train.optimizer == spec::Optimizer::muon;
  grads_scattered_ = zero_sharded_ && !muon_;
  out_.partition = cost::LayerPartition(*s_.model, s_.par);
  // One cost per kind of layer the model has: its own, its leading dense layers (an MoE model's),
  // both again in bf16 when an fp8/fp4 run keeps some layers there, and all of those without
  // recompute when full recompute covers only the first recompute_layers of each chunk.
  // A hybrid model's blocks are its variants (spec::block_variant); its kind 0 is its MoE or MLP block.
  const spec::Model& m = *s_.model;
  std::array<bool, 4> present{true, m.moe_dense_layers > 0, false, false};
  if (m.hybrid()) {
    variants_[0] = spec::block_variant(m, m.is_moe() ? 'E' : '-');
    variants_[1] = spec::block_variant(m, '-');
    variants_[2] = spec::block_variant(m, 'M');
    variants_[3] = spec::block_variant(m, '*');
    present = {true, m.is_moe() && m.count_blocks('-', 0, m.layers) > 0, m.count_blocks('M', 0, m.layers) > 0,
               m.count_blocks('*', 0, m.layers) > 0};
  } else if (present[1]) {
    variants_[1] = spec::dense_variant(m);
  }
  StepSpec main = s_;
  main.model = &variant_model(0);
  main.par = variant_par(0);
  out_.layer.push_back(layer_cost(main, net_));
  kind_index_ = {};
  bool low = s_.train.precision == spec::Dtype::fp8 || s_.train.precision == spec::Dtype::fp4;
  bool bf16 = low && (s_.train.bf16_layers_start + s_.train.bf16_layers_end > 0 || (m.mtp_layers > 0 && m.mtp_bf16));
  for (char c : m.mtp_pattern) present[static_cast<std::size_t>(block_variant(c))] = true;
  bool partial = s_.train.recompute == spec::Recompute::full && s_.train.recompute_layers > 0;
  for (int kind = 1; kind < kKinds; ++kind) {
    if (!present[static_cast<std::size_t>(kind & 3)] || ((kind & 4) && !bf16) || ((kind & 8) && !partial)) continue;
    StepSpec v = s_;
    v.model = &variant_model(kind & 3);
    v.par = variant_par(kind & 3);
    if (kind & 4) v.train.precision = spec::Dtype::bf16;
    if (kind & 8) v.train.recompute = spec::Recompute::none;
    kind_index_[kind] = static_cast<int>(out_.layer.size());
    out_.layer.push_back(layer_cost(v, net_));
  }
  for (std::int64_t i = 0; i < p_; ++i) {
    auto r = static_cast<std::int32_t>(i);
    st_.push_back({out_.graph.add_stream(r, "compute"), out_.graph.add_stream(r, "pp send fwd"),
                   out_.graph.add_stream(r, "pp send bwd"), out_.graph.add_stream(r, "dp")});
    out_.compute.push_back(st_.back().compute);
  }
  std::size_t n = static_cast<std::size_t>(p_ * v_ * m_);
  grad_done_.resize(static_cast<std::size_t>(p_));
  for (auto& g : grad_done_) g.clear();
  pass_costs_.assign(static_cast<std::size_t>(p_ * v_ * 2), -2);
  {
    cost::LayerShape sh = cost::layer_shape(*s_.model, s_.par, s_.train);
    // A pipeline tensor is b*s/cp x h. Each TP rank sends 1/tp of it with sequence parallelism (its
    // shard) or with the stack's scatter-gather (the receiver all-gathers it: pass_cost), else the
    // whole tensor (Megatron-Core without SP); a stack that does not split the backward's sends
    // ships the whole gradient from every TP rank.
    // Serial p2p (DeepSpeed's PipelineEngine): each pass waits for its step's exchange, both
    // directions one after the other on the pair's stream -- priced as one transfer of both. In
    // steady state every step exchanges once each way; warm-up and cool-down steps carry one.
    double whole = pp_tensor_bytes_ = sh.tokens * sh.hidden * 2.0;
    bool sp = s_.par.sequence_parallel;
    gathered_[0] = !sp && s_.software.pp_scatter_gather && sh.tp > 1;
    gathered_[1] = gathered_[0] && s_.software.pp_grad_partitioned;
    double act = sp || gathered_[0] ? whole / sh.tp : whole;
    double grad = sp || gathered_[1] ? whole / sh.tp : whole;
    double both = act + grad;
    bool serial = s_.software.pp_p2p_serial;
    p2p_comm_[0] = out_.graph.add_comm(Comm{Comm::Op::send_recv, Group::pp, bytes(serial ? both : act)});
    p2p_comm_[1] = out_.graph.add_comm(Comm{Comm::Op::send_recv, Group::pp, bytes(serial ? both : grad)});
  }
  out_.graph.reserve(n * 4 + static_cast<std::size_t>(p_) * 64, n * 5 + static_cast<std::size_t>(p_ * p_) * 8);
  add_param_gathers();
  auto schedule = default_schedule(s_.par);
  auto& order = out_.scratch.order;
  order.clear();
  for (std::int64_t i = 0; i < p_; ++i) order.emplace_back(schedule, p_, v_, m_, i);
  len_ = 2 * v_ * m_;
  overlap_p2p_ = s_.software.overlap_p2p_comm && v_ > 1;
  slots_.assign(static_cast<std::size_t>(p_ * len_), {});
  pos_.resize(slots_.size());
  for (std::int64_t i = 0; i < p_; ++i) {
    std::int32_t last[2] = {-1, -1};  // last forward, last backward seen
    for (std::int64_t c = 0; c < len_; ++c) {
      PassRef q = order[static_cast<std::size_t>(i)][c];
      BuildScratch::Slot& slot = slots_[at(i, c)];
      slot.forward = q.forward;
      slot.chunk = static_cast<std::int32_t>(q.chunk);
      slot.microbatch = static_cast<std::int32_t>(q.microbatch);
      pos_[at(i, (q.forward ? 0 : v_ * m_) + q.chunk * m_ + q.microbatch)] = static_cast<std::int32_t>(c);
      std::int32_t& l = last[q.forward ? 0 : 1];
      slot.prev_same = l;
      if (l >= 0) slots_[at(i, l)].next_same = static_cast<std::int32_t>(c);
      l = static_cast<std::int32_t>(c);
    }
  }
  // Connect each pass's output to the pass that consumes it and to where that pass's stage posts the recv.
  for (std::int64_t i = 0; i < p_; ++i)
    for (std::int64_t c = 0; c < len_; ++c) {
      std::int64_t rs = 0;
      PassRef rp;
      if (!receiver(i, pass_at(i, c), rs, rp)) continue;
      std::int64_t rpos = position(rs, rp), post = post_point(rs, rpos);
      BuildScratch::Slot& slot = slots_[at(i, c)];
      slot.output = true;
      slot.receiver_post = post >= 0 ? static_cast<std::int32_t>(at(rs, post)) : -1;
      slots_[at(rs, rpos)].input = static_cast<std::int32_t>(at(i, c));
    }
  // Add passes in an order that respects cross-stage dependencies: each stage adds passes
  // until one waits for a transfer not yet added, and is woken when that transfer is added.
  auto& cursor = out_.scratch.cursor;
  cursor.assign(static_cast<std::size_t>(p_), 0);
  waiting_.assign(static_cast<std::size_t>(p_), -1);
  ready_.clear();
  for (std::int64_t i = p_ - 1; i >= 0; --i) ready_.push_back(i);
  while (!ready_.empty()) {
    std::int64_t i = ready_.back();
    ready_.pop_back();
    auto& c = cursor[static_cast<std::size_t>(i)];
    const StageOrder& ord = order[static_cast<std::size_t>(i)];
    while (c < ord.size() && try_add(i, c)) ++c;
  }
  for (std::int64_t i = 0; i < p_; ++i)
    if (cursor[static_cast<std::size_t>(i)] != order[static_cast<std::size_t>(i)].size())
      throw std::logic_error("schedule: pipeline order deadlocks at stage " + std::to_string(i));
  finish_step();
}

}  // namespace

void build_step(const StepSpec& s, const CommPricer& net, StepGraph& out) { Builder(s, net, out).build(); }

StepGraph build_step(const StepSpec& s, const CommPricer& net) {
  StepGraph out;
  build_step(s, net, out);
  return out;
}

}  // namespace dtsim::schedule
