// `dtsim bench`: speed figures measured in-process, as ratios against a baseline run in the
// same process (targets live here, never in unit tests).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <sstream>
#include <memory>

#include "cli/commands.h"
#include "engine/analytical.h"
#include "engine/events.h"
#include "network/backend.h"
#include "engine/simulate.h"
#include "plan/planner.h"
#include "report/table.h"
#include "spec/calibration.h"
#include "spec/load.h"

namespace dtsim::cli {
namespace {

struct BenchCase {
  std::string name;
  std::string model, cluster;
  spec::Parallel par;
  spec::Training train;
};

// Median wall time of `reps` simulations of `c` (specs loaded once, outside the timing).
double time_simulate(const BenchCase& c, int reps) {
  spec::Model m = spec::load_model(c.model);
  spec::Cluster cl = spec::load_cluster(c.cluster);
  spec::Calibration cal = spec::load_calibration(cl.calibration);
  spec::Stack stack = spec::load_stack(spec::kDefaultFramework);
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto start = std::chrono::steady_clock::now();
    schedule::StepSpec s{&m, &cl, c.par, c.train, &cal, stack.software};
    engine::AnalyticalNetwork net(cl, c.par, cal.collectives);
    auto sim = engine::simulate_step(s, net);
    if (sim.result.step_time.value() <= 0) throw std::logic_error("bench: empty simulation");
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// The two engines on one built graph of `c` over the analytical network: the longest-path pass
// (the fast path simulate and plan use) and the event-driven engine (the one SimGrid needs);
// median wall time of each run, graph built once outside the timing.
struct EngineSpeed {
  double longest_path = 0, events = 0;
  std::size_t tasks = 0;
};

EngineSpeed time_engines(const BenchCase& c, int reps) {
  spec::Model m = spec::load_model(c.model);
  spec::Cluster cl = spec::load_cluster(c.cluster);
  spec::Calibration cal = spec::load_calibration(cl.calibration);
  schedule::StepSpec s{&m, &cl, c.par, c.train, &cal, spec::load_stack(spec::kDefaultFramework).software};
  engine::AnalyticalNetwork net(cl, c.par, cal.collectives);
  schedule::StepGraph g = schedule::build_step(s, net);
  engine::Timeline a, b;
  auto median = [reps](auto&& run) {
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
      auto start = std::chrono::steady_clock::now();
      run();
      t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  EngineSpeed e;
  e.tasks = g.graph.tasks().size();
  e.longest_path = median([&] { engine::Simulator(net, cal.compute.overlap_slowdown).run(g.graph, a); });
  e.events = median([&] {
    engine::PricedTransfers priced(net);
    engine::EventSimulator(cal.compute.overlap_slowdown).run(g.graph, priced, b);
  });
  if (a.makespan != b.makespan) throw std::logic_error("bench: the two engines disagree on the analytical network");
  return e;
}

// Issue 5's planner case: GPT-3 175B on 1,024 A100s, gbs 1536, seq 2048, fp16, whole space, with
// the Megatron-LM of the README's run (2021).
struct PlanSpeed {
  std::size_t evaluated = 0;
  double seconds = 0;
};

PlanSpeed time_plan(unsigned threads) {
  spec::Model m = spec::load_model("gpt3-175b");
  spec::Cluster cl = spec::load_cluster("dgx-a100");
  spec::Calibration cal = spec::load_calibration(cl.calibration);
  plan::Request r{&m, &cl, &cal, spec::load_stack("megatron-lm@2021").software, 1024,
                  {.global_batch = 1536, .seq_len = 2048}};
  r.train.precision = spec::Dtype::fp16;
  r.train.grad_dtype = spec::Dtype::fp32;
  plan::Plan p = plan::plan(r, plan::Options{.threads = threads});
  return {p.ranked.size(), p.seconds.value_or(0)};
}

// Issue 16's SimGrid case: Llama 3.1 405B on 2,048 H100s (TP 8, PP 16, VP 4) with the SimGrid
// backend, once: with per-kind contention factors (each kind a SimGrid run in a child process),
// or, with `replay`, every transfer replayed on SimGrid by the event-driven engine
// (simulate --network simgrid --engine events; `stats` gets its counts). Wall seconds.
double time_simgrid_405b(bool replay, network::ReplayStats* stats = nullptr) {
  spec::Model m = spec::load_model("llama3-405b");
  spec::Cluster cl = spec::load_cluster("dgx-h100");
  spec::Calibration cal = spec::load_calibration(cl.calibration);
  spec::Stack stack = spec::load_stack(spec::kDefaultFramework);
  spec::Parallel par{.tp = 8, .pp = 16, .dp = 16, .vp = 4, .zero_stage = 1, .sequence_parallel = true};
  spec::Training train{.micro_batch = 1, .global_batch = 2048, .seq_len = 8192};
  auto start = std::chrono::steady_clock::now();
  schedule::StepSpec s{&m, &cl, par, train, &cal, stack.software};
  engine::Workspace ws;
  engine::StepResult r = network::simulate(s, network::Kind::simgrid,
                                           replay ? network::Engine::events : network::Engine::longest_path, ws, stats);
  if (r.step_time.value() <= 0) throw std::logic_error("bench: empty simulation");
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Issue 17's scale case: `dtsim simulate` on 131,072 H100s (Llama 3.1 405B, TP 8, PP 16, DP
// 1,024, gbs 16,384 at 8,192 tokens), the whole command as a user runs it (presets loaded,
// memory estimated, report printed to a string), in this process. Median wall seconds.
double time_command(const std::vector<std::string>& args, int reps) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    std::string out;
    auto start = std::chrono::steady_clock::now();
    if (run_in_process(args, out) != 0) throw std::logic_error("bench: the scale case failed");
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

double peak_child_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // Linux reports KiB
}

int run_bench(int reps) {
  using report::fixed;
  // Issue 4's speed case: Llama-3.1-405B on 16,384 H100s (Llama 3 paper Table 4 layout).
  BenchCase big{"llama3-405b 16384 GPUs tp8 pp16 dp128", "llama3-405b", "dgx-h100",
                {.tp = 8, .pp = 16, .dp = 128, .zero_stage = 1, .sequence_parallel = true},
                {.micro_batch = 1, .global_batch = 2048, .seq_len = 8192, .recompute = spec::Recompute::full}};
  // Same per-replica work at DP 8 and DP 128: cost must not grow with DP (DESIGN.md).
  BenchCase dp8{"gpt3-175b tp8 pp16 dp8", "gpt3-175b", "dgx-a100", {.tp = 8, .pp = 16, .dp = 8, .zero_stage = 1},
                {.micro_batch = 1, .global_batch = 8 * 64, .seq_len = 2048, .precision = spec::Dtype::fp16}};
  BenchCase dp128 = dp8;
  dp128.name = "gpt3-175b tp8 pp16 dp128";
  dp128.par.dp = 128;
  dp128.train.global_batch = 128 * 64;
  double t_big = time_simulate(big, reps), t8 = time_simulate(dp8, reps), t128 = time_simulate(dp128, reps);
  report::Table t({"simulate", "median wall (ms)"});
  t.add({big.name, fixed(t_big * 1e3, 3)});
  t.add({dp8.name, fixed(t8 * 1e3, 3)});
  t.add({dp128.name, fixed(t128 * 1e3, 3)});
  std::cout << t.render() << "\nratio dp128 / dp8 wall time: " << fixed(t128 / t8, 3) << " (target <= 1.5)\n"
            << "405B on 16,384 GPUs: " << fixed(t_big * 1e3, 3) << " ms (target < 100 ms)\n"
            << "peak resident memory of this process: " << fixed(peak_rss_mib(), 1) << " MiB (target < 256 MB)\n";
  double t_scale = time_command({"simulate", "--model", "llama3-405b", "--cluster", "dgx-h100", "--gpus", "131072", "--tp",
                                 "8", "--pp", "16", "--gbs", "16384", "--seq", "8192", "--json"},
                                std::max(1, reps / 4));
  std::cout << "dtsim simulate llama3-405b on 131,072 H100s (tp8 pp16 dp1024, the whole command): " << fixed(t_scale * 1e3, 1)
            << " ms (target < 1 s); peak resident memory of this process after it: " << fixed(peak_rss_mib(), 1)
            << " MiB (target < 1 GB)\n";
  EngineSpeed e = time_engines(big, reps);
  std::cout << "\nengines on the analytical network (" << big.name << ", " << e.tasks << " tasks, graph built once):\n"
            << "  longest-path pass: " << fixed(e.longest_path * 1e3, 3) << " ms   event-driven: " << fixed(e.events * 1e3, 3)
            << " ms   ratio event / longest-path: " << fixed(e.events / e.longest_path, 2)
            << " (simulate and plan keep the longest-path pass while it is the faster; identical timelines)\n";
  double t_sg = time_simgrid_405b(false);
  std::cout << "\nsimulate llama3-405b on 2048 H100s (tp8 pp16 vp4) with --network simgrid: " << fixed(t_sg, 3)
            << " s (target <= 10 s); largest SimGrid child process: " << fixed(peak_child_rss_mib(), 1) << " MiB\n";
  network::ReplayStats rs;
  double t_replay = time_simgrid_405b(true, &rs);
  std::cout << "  and with --engine events (" << rs.transfers << " transfers replayed as " << rs.flows
            << " SimGrid flows): " << fixed(t_replay, 3) << " s (target <= 10 s); largest SimGrid child process: "
            << fixed(peak_child_rss_mib(), 1) << " MiB\n";
  PlanSpeed one = time_plan(1), all = time_plan(0);
  std::cout << "\nplan gpt3-175b on 1024 A100s (gbs 1536, seq 2048, fp16): " << all.evaluated << " configurations\n"
            << "  1 thread:    " << fixed(one.seconds, 3) << " s, " << fixed(one.evaluated / one.seconds, 0) << " configs/s\n"
            << "  all cores:   " << fixed(all.seconds, 3) << " s, " << fixed(all.evaluated / all.seconds, 0)
            << " configs/s (target >= 10,000 on 2 cores; speedup over 1 thread " << fixed(one.seconds / all.seconds, 2)
            << "x)\n";
  return 0;
}

}  // namespace

void add_bench(CLI::App& app, Action& action) {
  auto reps = std::make_shared<int>(21);
  CLI::App* b = app.add_subcommand("bench", "Measure simulation speed (ratios against in-process baselines)");
  b->add_option("--reps", *reps, "Repetitions per case (median reported)")->check(CLI::Range(1, 10000));
  b->callback([reps, &action] { action = [reps] { return run_bench(*reps); }; });
}

}  // namespace dtsim::cli
