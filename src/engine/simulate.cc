#include "engine/simulate.h"

#include "cost/model_stats.h"
#include "spec/job_rules.h"

namespace dtsim::engine {
namespace {

// Megatron-LM model FLOPs per GPU per step, and recompute FLOPs per GPU (HFU).
void flops_figures(const schedule::StepSpec& s, const schedule::StepGraph& g, StepResult& r) {
  double gpus = static_cast<double>(s.par.tp * s.par.pp * s.par.dp * s.par.cp);
  double tokens = static_cast<double>(s.train.global_batch * s.train.seq_len);
  double model = cost::step_model_flops(*s.model, s.train.seq_len, tokens).value() / gpus;
  // Each rank recomputes its layers' share for every micro-batch it runs.
  double layers_per_rank = static_cast<double>(s.model->layers) / static_cast<double>(s.par.pp);
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
  Simulation sim{schedule::build_step(s, net), {}, {}};
  Simulator simulator(net, s.cal->compute.overlap_slowdown);
  sim.timeline = simulator.run(sim.step.graph);
  StepResult& r = sim.result;
  r.microbatches = spec::micro_batches(s.par, s.train);
  r.tasks = sim.step.graph.tasks().size();
  // The step ends when the last stage's end marker does; that stage's compute stream is the
  // critical path the breakdown follows.
  for (std::size_t i = 0; i < sim.step.end.size(); ++i) {
    if (sim.timeline.tasks[static_cast<std::size_t>(sim.step.end[i])].end >
        sim.timeline.tasks[static_cast<std::size_t>(sim.step.end[static_cast<std::size_t>(r.critical_stage)])].end)
      r.critical_stage = static_cast<std::int64_t>(i);
  }
  auto stream = sim.step.compute[static_cast<std::size_t>(r.critical_stage)];
  Breakdown b = attribute(sim.step.graph, sim.timeline, stream);
  SimTime total = 0;
  for (std::size_t c = 0; c < schedule::kCategories; ++c) {
    r.breakdown[c] = to_seconds(b[c]);
    total += b[c];
  }
  r.step_time = to_seconds(total);
  flops_figures(s, sim.step, r);
  return sim;
}

}  // namespace dtsim::engine
