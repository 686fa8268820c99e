#include "plan/planner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>

#include "cost/memory.h"
#include "engine/analytical.h"

namespace dtsim::plan {
namespace {

auto order_key(const Candidate& c) {
  const spec::Parallel& p = c.par;
  return std::make_tuple(p.tp, p.pp, p.dp, p.cp, p.ep, p.expert_tp(), p.vp, c.train.micro_batch, p.zero_stage,
                         static_cast<int>(c.train.recompute), p.sequence_parallel);
}

Result evaluate_one(const Request& r, const Candidate& c, const Options& o, engine::Workspace& ws) {
  schedule::StepSpec s{r.model, r.cluster, c.par, c.train, r.calibration, r.software};
  engine::AnalyticalNetwork net(*r.cluster, c.par, r.calibration->collectives);
  // Steady-state extrapolation (exact, see engine::estimate_step) keeps every evaluation short.
  Result res{c, engine::estimate_step(s, net, 0, ws), {}, {}, 0, -1};
  auto mem = cost::estimate_memory(*r.model, *r.cluster, c.par, c.train, r.software);
  res.peak_memory = mem.peak().total();
  res.capacity = mem.capacity;
  double t = res.step.step_time.value();
  if (o.objective == Objective::cost_per_token) {
    double dollars = t / 3600.0 * static_cast<double>(r.gpus) * o.price_per_gpu_hour;
    res.objective = dollars / (static_cast<double>(r.train.global_batch * r.train.seq_len) / 1e6);
  } else {
    res.objective = t;
  }
  return res;
}

}  // namespace

void rank(std::vector<Result>& results) {
  std::stable_sort(results.begin(), results.end(), [](const Result& a, const Result& b) {
    if (a.objective != b.objective) return a.objective < b.objective;
    // Equally fast (e.g. ZeRO 1 and 2 when the gradients' reduce-scatter hides either way): the
    // one that leaves more memory free first.
    if (a.peak_memory != b.peak_memory) return a.peak_memory < b.peak_memory;
    return order_key(a.config) < order_key(b.config);
  });
}

std::vector<Result> evaluate(const Request& r, const std::vector<Candidate>& all, const Options& o) {
  std::vector<std::int64_t> mine;  // this shard's candidates
  for (std::size_t i = 0; i < all.size(); ++i)
    if (static_cast<std::int64_t>(i) % o.shards == o.shard) mine.push_back(static_cast<std::int64_t>(i));
  std::vector<Candidate> cands;
  for (std::int64_t i : mine) cands.push_back(all[static_cast<std::size_t>(i)]);
  std::vector<Result> out(cands.size());
  std::atomic<std::size_t> next{0}, done{0};
  unsigned threads = o.threads > 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, std::max<std::size_t>(1, cands.size())));
  std::size_t step = std::max<std::size_t>(1, cands.size() / 100);
  auto work = [&] {
    engine::Workspace ws;  // per thread: graph and timeline storage reused across candidates
    for (std::size_t i = next++; i < cands.size(); i = next++) {
      out[i] = evaluate_one(r, cands[i], o, ws);  // each slot written by exactly one thread
      out[i].candidate = mine[i];
      std::size_t d = ++done;
      if (o.progress && (d % step == 0 || d == cands.size())) o.progress(d, cands.size());
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  rank(out);
  return out;
}

Plan plan(const Request& r, const Options& o) {
  auto start = std::chrono::steady_clock::now();
  Plan p;
  p.space = enumerate(r);
  p.ranked = evaluate(r, p.space.candidates, o);
  if (o.timed) p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return p;
}

Plan merge(const Request& r, std::vector<Result> results) {
  Plan p;
  p.space = enumerate(r);
  std::vector<bool> seen(p.space.candidates.size(), false);
  for (Result& x : results) {
    if (x.candidate < 0 || x.candidate >= static_cast<std::int64_t>(seen.size()) || seen[static_cast<std::size_t>(x.candidate)])
      throw std::invalid_argument("plan::merge: candidate " + std::to_string(x.candidate) + " out of range or repeated");
    seen[static_cast<std::size_t>(x.candidate)] = true;
    x.config = p.space.candidates[static_cast<std::size_t>(x.candidate)];
  }
  p.ranked = std::move(results);
  rank(p.ranked);
  return p;
}

}  // namespace dtsim::plan
