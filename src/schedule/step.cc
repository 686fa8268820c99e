#include "schedule/step.h"

#include <algorithm>
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
double bucket_params(const spec::Parallel& par) {
  return std::max(40e6, 1e6 * static_cast<double>(par.dp * par.cp));
}

class Builder {
 public:
  Builder(const StepSpec& s, const CommPricer& net, StepGraph& out) : s_(s), net_(net), out_(out) {}
  void build();

 private:
  std::int64_t vstage(std::int64_t stage, std::int64_t chunk) const { return chunk * p_ + stage; }
  /// Slot of a send from virtual stage `vs` for micro-batch `mb`.
  std::size_t idx(std::int64_t vs, std::int64_t mb) const { return static_cast<std::size_t>(vs * m_ + mb); }
  std::int64_t layers(std::int64_t stage, std::int64_t chunk) const {
    return cost::chunk_layers(out_.stage_layers[static_cast<std::size_t>(stage)], v_, chunk);
  }
  double chunk_params(std::int64_t stage, std::int64_t chunk) const;
  PassCost pass_cost(std::int64_t stage, std::int64_t chunk, bool forward) const;
  /// Interned cost of a (stage, chunk, direction) pass: computed once, shared by its micro-batches.
  CostId pass_cost_id(std::int64_t stage, std::int64_t chunk, bool forward);
  bool try_add(std::int64_t stage, const PassRef& pass);
  void add_forward(std::int64_t stage, const PassRef& pass, TaskId pred_send);
  void add_backward(std::int64_t stage, const PassRef& pass, TaskId succ_send);
  void add_grad_reduce(std::int64_t stage, std::int64_t chunk, const PassCost& cost, std::span<const TaskId> deps,
                       TaskId& last);
  void add_param_gathers();
  void finish_step();
  TaskId comm(StreamId stream, Comm::Op op, Group g, Bytes size, Category cat, std::span<const TaskId> deps,
              Label label);
  /// A p2p send of one micro-batch's activations or gradients (interned once per build).
  TaskId send(StreamId stream, TaskId after, Label label);
  TaskId comm(StreamId stream, Comm::Op op, Group g, Bytes size, Category cat, std::initializer_list<TaskId> deps,
              Label label) {
    return comm(stream, op, g, size, cat, std::span<const TaskId>(deps.begin(), deps.size()), label);
  }

  const StepSpec& s_;
  const CommPricer& net_;
  StepGraph& out_;
  std::int64_t p_ = 1, v_ = 1, m_ = 1;
  bool zero_sharded_ = false;
  std::vector<Streams> st_;
  std::vector<TaskId>& fwd_send_ = out_.scratch.fwd_send;
  std::vector<TaskId>& bwd_send_ = out_.scratch.bwd_send;
  std::vector<std::vector<TaskId>>& grad_done_ = out_.scratch.grad_done;  // per stage: what the grad-norm sync waits for
  std::vector<TaskId> param_gather_;
  std::vector<CostId> pass_costs_;               // per (stage, chunk, direction), -2 = not yet
  Bytes p2p_bytes_;
  CommId p2p_comm_ = -1;
};

TaskId Builder::send(StreamId stream, TaskId after, Label label) {
  Task& t = out_.graph.emplace_task(stream, std::span<const TaskId>(&after, 1));
  t.kind = TaskKind::comm;
  t.comm = p2p_comm_;
  t.comm_category = Category::pp_comm;
  t.wait_category = Category::pp_comm;
  t.label = label;
  return out_.graph.last_task();
}

CostId Builder::pass_cost_id(std::int64_t stage, std::int64_t chunk, bool forward) {
  auto& id = pass_costs_[static_cast<std::size_t>((stage * v_ + chunk) * 2 + (forward ? 0 : 1))];
  if (id == -2) id = out_.graph.add_cost(pass_cost(stage, chunk, forward).segments);
  return id;
}

double Builder::chunk_params(std::int64_t stage, std::int64_t chunk) const {
  double p = cost::local_layer_params(*s_.model, s_.par).total() * static_cast<double>(layers(stage, chunk));
  // Embedding and LM head weights belong to the chunk that runs them.
  bool holds_extras = stage == 0 ? chunk == 0 : (stage == p_ - 1 && chunk == v_ - 1);
  if (holds_extras) p += cost::non_layer_params(*s_.model, s_.par, stage);
  return p;
}

PassCost Builder::pass_cost(std::int64_t stage, std::int64_t chunk, bool forward) const {
  PassCost c;
  const LayerCost& lc = out_.layer.front();
  accumulate(c, forward ? lc.forward : lc.backward, static_cast<double>(layers(stage, chunk)));
  if (stage == 0 && chunk == 0) accumulate(c, embedding_cost(s_, net_, !forward));
  if (stage == p_ - 1 && chunk == v_ - 1) accumulate(c, head_cost(s_, net_, !forward));
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

void Builder::add_forward(std::int64_t stage, const PassRef& pass, TaskId pred_send) {
  const Streams& ss = st_[static_cast<std::size_t>(stage)];
  auto chunk = static_cast<std::int32_t>(pass.chunk), mb = static_cast<std::int32_t>(pass.microbatch);
  CostId cost = pass_cost_id(stage, pass.chunk, true);
  TaskId deps[2];
  std::size_t n = 0;
  if (pred_send >= 0) deps[n++] = pred_send;
  if (pass.microbatch == 0 && !param_gather_.empty()) deps[n++] = param_gather_[static_cast<std::size_t>(stage * v_ + pass.chunk)];
  Task& t = out_.graph.emplace_task(ss.compute, std::span<const TaskId>(deps, n));
  t.cost = cost;
  t.label = {Label::Kind::forward, chunk, mb};
  TaskId f = out_.graph.last_task();
  if (vstage(stage, pass.chunk) + 1 < p_ * v_)
    fwd_send_[idx(vstage(stage, pass.chunk), pass.microbatch)] = send(ss.pp_fwd, f, {Label::Kind::send_activations, chunk, mb});
}

void Builder::add_grad_reduce(std::int64_t stage, std::int64_t chunk, const PassCost& cost,
                              std::span<const TaskId> deps, TaskId& last) {
  const Streams& ss = st_[static_cast<std::size_t>(stage)];
  double params = chunk_params(stage, chunk);
  bool overlap = s_.software.overlap_grad_reduce;
  std::int64_t buckets =
      (overlap && chunk == 0) ? std::max<std::int64_t>(1, static_cast<std::int64_t>(params / bucket_params(s_.par))) : 1;
  Comm::Op op = zero_sharded_ ? Comm::Op::reduce_scatter : Comm::Op::all_reduce;
  Bytes size = bytes(params / static_cast<double>(buckets) * spec::dtype_bytes(s_.train.grad_dtype));
  // The last backward is split into one piece per bucket; a bucket reduces once its piece is done.
  std::vector<Segment> first, rest;
  for (const Segment& seg : cost.segments) {
    first.push_back({seg.category, seg.duration / buckets + seg.duration % buckets});
    rest.push_back({seg.category, seg.duration / buckets});
  }
  CostId first_id = out_.graph.add_cost(std::move(first)), rest_id = buckets > 1 ? out_.graph.add_cost(std::move(rest)) : first_id;
  auto c = static_cast<std::int32_t>(chunk), mb = static_cast<std::int32_t>(m_ - 1);
  for (std::int64_t k = 0; k < buckets; ++k) {
    Task piece{.stream = ss.compute, .kind = TaskKind::compute, .cost = k == 0 ? first_id : rest_id,
               .label = {Label::Kind::backward, c, mb, static_cast<std::int32_t>(k)}};
    last = out_.graph.add_task(piece, deps);
    deps = {};
    if (overlap)
      grad_done_[static_cast<std::size_t>(stage)].push_back(comm(ss.dp, op, Group::dp_cp, size, Category::dp_comm_exposed,
                                                                 {last}, {Label::Kind::grad_bucket, c, -1, static_cast<std::int32_t>(k)}));
  }
}

void Builder::add_backward(std::int64_t stage, const PassRef& pass, TaskId succ_send) {
  const Streams& ss = st_[static_cast<std::size_t>(stage)];
  auto chunk = static_cast<std::int32_t>(pass.chunk), mb = static_cast<std::int32_t>(pass.microbatch);
  std::span<const TaskId> deps(&succ_send, succ_send >= 0 ? 1 : 0);
  TaskId last = -1;
  if (pass.microbatch == m_ - 1 && s_.par.dp * s_.par.cp > 1) {
    add_grad_reduce(stage, pass.chunk, pass_cost(stage, pass.chunk, false), deps, last);
  } else {
    CostId cost = pass_cost_id(stage, pass.chunk, false);
    Task& t = out_.graph.emplace_task(ss.compute, deps);
    t.cost = cost;
    t.label = {Label::Kind::backward, chunk, mb};
    last = out_.graph.last_task();
  }
  if (vstage(stage, pass.chunk) > 0)
    bwd_send_[idx(vstage(stage, pass.chunk), pass.microbatch)] = send(ss.pp_bwd, last, {Label::Kind::send_gradients, chunk, mb});
  if (pass.microbatch == m_ - 1 && pass.chunk == 0) grad_done_[static_cast<std::size_t>(stage)].push_back(last);
}

bool Builder::try_add(std::int64_t stage, const PassRef& pass) {
  std::int64_t vs = vstage(stage, pass.chunk);
  if (pass.forward) {
    TaskId pred = -1;
    if (vs > 0) {
      pred = fwd_send_[idx(vs - 1, pass.microbatch)];
      if (pred < 0) return false;
    }
    add_forward(stage, pass, pred);
  } else {
    TaskId succ = -1;
    if (vs + 1 < p_ * v_) {
      succ = bwd_send_[idx(vs + 1, pass.microbatch)];
      if (succ < 0) return false;
    }
    add_backward(stage, pass, succ);
  }
  return true;
}

void Builder::add_param_gathers() {
  if (!zero_sharded_ || s_.par.zero_stage >= 3 || !s_.software.overlap_param_gather || s_.par.dp * s_.par.cp == 1)
    return;
  // Distributed optimizer: the updated parameter shards are all-gathered while the next
  // step's forward runs; chunk c's first forward waits for its gather.
  param_gather_.assign(static_cast<std::size_t>(p_ * v_), -1);
  for (std::int64_t i = 0; i < p_; ++i)
    for (std::int64_t c = 0; c < v_; ++c)
      param_gather_[static_cast<std::size_t>(i * v_ + c)] =
          comm(st_[static_cast<std::size_t>(i)].dp, Comm::Op::all_gather, Group::dp_cp, bytes(chunk_params(i, c) * 2.0),
               Category::dp_comm_exposed, {}, {Label::Kind::param_gather, static_cast<std::int32_t>(c)});
}

void Builder::finish_step() {
  const double dp = static_cast<double>(s_.par.dp * s_.par.cp);
  bool tied_copy = s_.model->tied_embeddings && p_ > 1;
  std::vector<TaskId> sync_deps;
  for (std::int64_t i = 0; i < p_; ++i) {
    const Streams& ss = st_[static_cast<std::size_t>(i)];
    auto& done = grad_done_[static_cast<std::size_t>(i)];
    TaskId last_b = out_.graph.last_task_on(ss.compute);
    if (!s_.software.overlap_grad_reduce && dp > 1) {
      for (std::int64_t c = 0; c < v_; ++c)
        done.push_back(comm(ss.dp, zero_sharded_ ? Comm::Op::reduce_scatter : Comm::Op::all_reduce, Group::dp_cp,
                            bytes(chunk_params(i, c) * spec::dtype_bytes(s_.train.grad_dtype)),
                            Category::dp_comm_exposed, {last_b}, {Label::Kind::grad_reduce, static_cast<std::int32_t>(c)}));
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
    double params = cost::local_layer_params(*s_.model, s_.par).total() *
                        static_cast<double>(out_.stage_layers[static_cast<std::size_t>(i)]) +
                    cost::non_layer_params(*s_.model, s_.par, i);
    double owned = params / (s_.par.zero_stage >= 1 ? dp : 1.0);
    cost::ComputeContext ctx = compute_context(s_);
    Seconds opt_time = cost::op_time(cost::optimizer_op(owned, s_.train.optimizer), ctx);
    Task opt{.stream = ss.compute, .kind = TaskKind::compute,
             .cost = out_.graph.add_cost({{Category::optimizer, to_sim_time(opt_time)}}), .label = {Label::Kind::optimizer}};
    TaskId o = out_.graph.add_task(opt);
    Task end{.stream = ss.compute, .kind = TaskKind::marker, .label = {Label::Kind::step_end}};
    if (zero_sharded_ && s_.par.zero_stage < 3 && !s_.software.overlap_param_gather && dp > 1)
      out_.end.push_back(out_.graph.add_task(end, {comm(ss.dp, Comm::Op::all_gather, Group::dp_cp, bytes(params * 2.0),
                                                        Category::dp_comm_exposed, {o}, {Label::Kind::param_gather})}));
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
  out_.stage_layers = cost::stage_layers(*s_.model, s_.par);
  out_.layer.push_back(layer_cost(s_, net_));
  for (std::int64_t i = 0; i < p_; ++i) {
    auto r = static_cast<std::int32_t>(i);
    st_.push_back({out_.graph.add_stream(r, "compute"), out_.graph.add_stream(r, "pp send fwd"),
                   out_.graph.add_stream(r, "pp send bwd"), out_.graph.add_stream(r, "dp")});
    out_.compute.push_back(st_.back().compute);
  }
  std::size_t n = static_cast<std::size_t>(p_ * v_ * m_);
  fwd_send_.assign(n, -1);
  bwd_send_.assign(n, -1);
  grad_done_.resize(static_cast<std::size_t>(p_));
  for (auto& g : grad_done_) g.clear();
  pass_costs_.assign(static_cast<std::size_t>(p_ * v_ * 2), -2);
  {
    cost::LayerShape sh = cost::layer_shape(*s_.model, s_.par, s_.train.micro_batch, s_.train.seq_len);
    // Megatron sends b*s/cp x h activations, split over the TP ranks (SP, or SC'21's scatter-gather).
    p2p_bytes_ = bytes(sh.tokens * sh.hidden * 2.0 / sh.tp);
    p2p_comm_ = out_.graph.add_comm(Comm{Comm::Op::send_recv, Group::pp, p2p_bytes_});
  }
  out_.graph.reserve(n * 4 + static_cast<std::size_t>(p_) * 64, n * 5 + static_cast<std::size_t>(p_ * p_) * 8);
  add_param_gathers();
  auto schedule = default_schedule(s_.par);
  auto& order = out_.scratch.order;
  order.clear();
  for (std::int64_t i = 0; i < p_; ++i) order.emplace_back(schedule, p_, v_, m_, i);
  // Add passes in an order that respects cross-stage dependencies: sweep the stages, each
  // adding passes until one waits for a send not yet added.
  auto& cursor = out_.scratch.cursor;
  cursor.assign(static_cast<std::size_t>(p_), 0);
  // Sweeps alternate direction: forwards flow down the stages, backwards up.
  for (bool progress = true, up = false; progress; up = !up) {
    progress = false;
    for (std::int64_t k = 0; k < p_; ++k) {
      std::int64_t i = up ? p_ - 1 - k : k;
      auto& c = cursor[static_cast<std::size_t>(i)];
      const StageOrder& ord = order[static_cast<std::size_t>(i)];
      while (c < ord.size() && try_add(i, ord[c])) { ++c; progress = true; }
    }
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
