#include "engine/simulate.h"

#include <algorithm>

#include "cost/model_stats.h"
#include "spec/job_rules.h"

namespace dtsim::engine {
namespace {

// Megatron-LM model FLOPs per GPU per step, and recompute FLOPs per GPU (HFU).
void flops_figures(const schedule::StepSpec& s, const schedule::StepGraph& g, StepResult& r) {
  double gpus = static_cast<double>(s.par.tp * s.par.pp * s.par.dp * s.par.cp);
  double tokens = static_cast<double>(s.train.global_batch * s.train.seq_len);
  double model = cost::step_model_flops(*s.model, s.train, tokens).value() / gpus;
  // Each rank recomputes its layers' share for every micro-batch it runs.
  double layers_per_rank = static_cast<double>(s.model->layers) / static_cast<double>(s.par.pp);
  if (s.train.recompute == spec::Recompute::full && s.train.recompute_layers > 0)  // the chunks' first N
    layers_per_rank = std::min(layers_per_rank, static_cast<double>(s.train.recompute_layers * s.par.vp));
  double recompute = g.layer.front().recompute_flops.value() * layers_per_rank * static_cast<double>(r.microbatches);
  double t = r.step_time.value();
  double peak = s.cluster->gpu.peak(s.train.precision).value();
  r.tokens_per_s = tokens / t;
  r.model_tflops_per_gpu = model / t / 1e12;
  r.mfu = model / t / peak;
  r.hfu = (model + recompute) / t / peak;
}

}  // namespace

Simulation simulate_step(const schedule::StepSpec& s, const NetworkBackend& net) {
  Workspace ws;
  StepResult r = simulate_into(s, net, ws);
  return Simulation{std::move(ws.step), std::move(ws.timeline), r};
}

StepResult simulate_into(const schedule::StepSpec& s, const NetworkBackend& net, Workspace& ws) {
  schedule::build_step(s, net, ws.step);
  Simulator(net, s.cal->compute.overlap_slowdown).run(ws.step.graph, ws.timeline);
  return summarize(s, ws);
}

StepResult summarize(const schedule::StepSpec& s, const Workspace& ws) {
  StepResult r;
  r.pace = schedule::compute_context(s).pace;
  r.microbatches = spec::micro_batches(s.par, s.train);
  r.tasks = ws.step.graph.tasks().size();
  // The step ends when the last stage's end marker does; that stage's compute stream is the
  // critical path the breakdown follows.
  for (std::size_t i = 0; i < ws.step.end.size(); ++i) {
    if (ws.timeline.tasks[static_cast<std::size_t>(ws.step.end[i])].end >
        ws.timeline.tasks[static_cast<std::size_t>(ws.step.end[static_cast<std::size_t>(r.critical_stage)])].end)
      r.critical_stage = static_cast<std::int64_t>(i);
  }
  auto stream = ws.step.compute[static_cast<std::size_t>(r.critical_stage)];
  Breakdown b = attribute(ws.step.graph, ws.timeline, stream);
  SimTime total = 0;
  for (std::size_t c = 0; c < schedule::kCategories; ++c) {
    r.breakdown[c] = to_seconds(b[c]);
    total += b[c];
  }
  r.step_time = to_seconds(total);
  flops_figures(s, ws.step, r);
  return r;
}

StepResult estimate_step(const schedule::StepSpec& s, const NetworkBackend& net, std::int64_t max_microbatches) {
  Workspace ws;
  return estimate_step(s, net, max_microbatches, ws);
}

StepResult estimate_step(const schedule::StepSpec& s, const NetworkBackend& net, std::int64_t max_microbatches,
                         Workspace& ws) {
  std::int64_t m = spec::micro_batches(s.par, s.train);
  std::int64_t group = s.par.vp > 1 ? s.par.pp : 1;
  // Past warm-up on every stage: 1F1B reaches steady state once m > p; the interleaved
  // schedule's warm-up spans two groups of p (and m == p is all warm-up), so it needs 2p.
  std::int64_t m1 = std::max<std::int64_t>(s.par.vp > 1 ? 2 * s.par.pp : s.par.pp + 1, 4);
  m1 = (m1 + group - 1) / group * group;
  std::int64_t m2 = m1 + std::max<std::int64_t>(group, 2);
  if (m <= std::max(max_microbatches, m2)) return simulate_into(s, net, ws);
  auto run = [&](std::int64_t mb) {
    schedule::StepSpec short_step = s;
    short_step.train.global_batch = mb * s.train.micro_batch * s.par.dp;
    return simulate_into(short_step, net, ws);
  };
  StepResult a = run(m1), b = run(m2);
  double k = static_cast<double>(m - m1) / static_cast<double>(m2 - m1);
  StepResult r = b;
  Seconds total{0};
  for (std::size_t c = 0; c < schedule::kCategories; ++c) {
    r.breakdown[c] = a.breakdown[c] + (b.breakdown[c] - a.breakdown[c]) * k;
    total += r.breakdown[c];
  }
  r.step_time = total;
  r.microbatches = m;
  r.tasks = a.tasks + b.tasks;
  // Throughput figures for the real batch, from the extrapolated step time.
  double tokens = static_cast<double>(s.train.global_batch * s.train.seq_len);
  double scale = a.model_tflops_per_gpu * a.step_time.value() /
                 (static_cast<double>(m1 * s.train.micro_batch * s.par.dp * s.train.seq_len));  // TFLOP per token per GPU
  r.tokens_per_s = tokens / total.value();
  r.model_tflops_per_gpu = scale * tokens / total.value();
  double peak_tflops = s.cluster->gpu.peak(s.train.precision).value() / 1e12;
  r.mfu = r.model_tflops_per_gpu / peak_tflops;
  double hw_scale = a.hfu * peak_tflops * a.step_time.value() / static_cast<double>(m1);  // TFLOP per micro-batch
  r.hfu = hw_scale * static_cast<double>(m) / total.value() / peak_tflops;
  return r;
}

}  // namespace dtsim::engine
