#include "plan/space.h"

#include <algorithm>

#include "core/errors.h"
#include "cost/memory.h"
#include "spec/job_rules.h"

namespace dtsim::plan {
namespace {

std::vector<std::int64_t> divisors(std::int64_t n) {
  std::vector<std::int64_t> d;
  for (std::int64_t i = 1; i * i <= n; ++i) {
    if (n % i == 0) {
      d.push_back(i);
      if (i != n / i) d.push_back(n / i);
    }
  }
  std::sort(d.begin(), d.end());
  return d;
}

bool allowed(const Request& r, const char* field, std::int64_t v) {
  auto it = r.fixed.find(field);
  return it == r.fixed.end() || it->second == v;
}

// The first rule a layout breaks, named after the flag it concerns ("invalid: --tp"), or "".
std::string invalid_reason(const Request& r, const spec::Parallel& p, const spec::Training& t) {
  try {
    spec::check_job(*r.model, *r.cluster, r.gpus, p, t);
  } catch (const SpecError& e) {
    return "invalid: " + e.where();
  }
  return "";
}

// Virtual chunks: 1, or divisors of the per-stage layers that leave >= 1 layer per chunk (even chunks).
std::vector<std::int64_t> vp_values(const Request& r, std::int64_t pp) {
  std::vector<std::int64_t> out{1};
  if (pp == 1 || r.model->layers % pp != 0) return out;
  for (std::int64_t v : divisors(r.model->layers / pp))
    if (v > 1) out.push_back(v);
  return out;
}

std::vector<std::int64_t> mbs_values(const Request& r, std::int64_t dp) {
  std::vector<std::int64_t> out;
  if (r.train.global_batch % dp != 0) return out;
  for (std::int64_t b = 1; b <= r.max_mbs; b *= 2)
    if ((r.train.global_batch / dp) % b == 0) out.push_back(b);
  return out;
}

class Enumerator {
 public:
  explicit Enumerator(const Request& r) : r_(r) {}
  Space run();

 private:
  void layout(std::int64_t tp, std::int64_t pp, std::int64_t cp, std::int64_t ep, std::int64_t etp);
  void training(const spec::Parallel& par);
  void count(const std::string& reason) { ++space_.pruned[reason]; }

  const Request& r_;
  Space space_;
};

// For one layout and micro-batch: the least recomputation that fits dominates more of it (same
// work plus recompute). SP is not pruned: with NVLS an all-reduce can beat the all-gather and
// reduce-scatter SP needs (tests/plan/planner_test.cc found such a case).
void Enumerator::training(const spec::Parallel& base) {
  for (std::int64_t mbs : mbs_values(r_, base.dp)) {
    if (!allowed(r_, "mbs", mbs)) { count("filtered"); continue; }
    for (int zero = 0; zero <= 3; ++zero) {
      if (!allowed(r_, "zero", zero)) { count("filtered"); continue; }
      for (int sp = 0; sp <= 1; ++sp) {
        ++space_.considered;
        spec::Parallel par = base;
        par.zero_stage = zero;
        par.sequence_parallel = sp == 1;
        if (!allowed(r_, "sp", sp)) { count("filtered"); continue; }
        spec::Training t = r_.train;
        t.micro_batch = mbs;
        t.recompute = spec::Recompute::none;
        t.recompute_layers = 0;
        if (std::string why = invalid_reason(r_, par, t); !why.empty()) { count(why); continue; }
        bool found = false;
        for (int rc = 0; rc <= 2; ++rc) {
          t.recompute = static_cast<spec::Recompute>(rc);
          if (!allowed(r_, "recompute", rc)) { count("filtered"); continue; }
          if (found) { count("dominated: more recompute than the least that fits"); continue; }
          cost::MemoryEstimate mem = cost::estimate_memory(*r_.model, *r_.cluster, par, t, r_.software);
          if (mem.peak().total() > mem.capacity * (1.0 - r_.memory_margin)) {
            count("memory: does not fit");
            continue;
          }
          found = true;
          space_.candidates.push_back({par, t});
        }
      }
    }
  }
}

void Enumerator::layout(std::int64_t tp, std::int64_t pp, std::int64_t cp, std::int64_t ep, std::int64_t etp) {
  std::int64_t dp = r_.gpus / (tp * pp * cp);
  if (!allowed(r_, "dp", dp)) { count("filtered"); return; }
  for (std::int64_t vp : vp_values(r_, pp)) {
    if (!allowed(r_, "vp", vp)) { count("filtered"); continue; }
    training(spec::Parallel{.tp = tp, .pp = pp, .dp = dp, .cp = cp, .ep = ep, .etp = etp, .vp = vp});
  }
}

// Expert TP degrees worth trying: the divisors of tp (Megatron's default etp = tp, and the
// smaller ones MoE parallel folding allows) that divide the experts' FFN width; 1 for dense models.
std::vector<std::int64_t> etp_values(const Request& r, std::int64_t tp) {
  if (!r.model->is_moe()) return {1};
  std::vector<std::int64_t> out;
  for (std::int64_t e : divisors(tp))
    if (r.model->moe_ffn_hidden % e == 0) out.push_back(e);
  return out;
}

Space Enumerator::run() {
  // TP stays inside the NVLink domain: a node, or up to 8 GPUs of an NVL72 rack.
  std::int64_t max_tp = r_.max_tp > 0 ? r_.max_tp
                                      : std::max(r_.cluster->gpus_per_node, std::min<std::int64_t>(r_.cluster->nvlink_domain, 8));
  for (std::int64_t tp : divisors(r_.gpus)) {
    if (tp > max_tp) { count("filtered: tp > --max-tp"); continue; }
    if (!allowed(r_, "tp", tp)) { count("filtered"); continue; }
    for (std::int64_t pp : divisors(r_.gpus / tp)) {
      if (pp > r_.model->layers || !allowed(r_, "pp", pp)) { count(pp > r_.model->layers ? "invalid: pp > layers" : "filtered"); continue; }
      for (std::int64_t cp : divisors(r_.gpus / (tp * pp))) {
        if (r_.train.seq_len % (2 * cp) != 0) { count("invalid: --seq"); continue; }
        if (!allowed(r_, "cp", cp)) { count("filtered"); continue; }
        std::int64_t dp = r_.gpus / (tp * pp * cp);
        for (std::int64_t ep : r_.model->is_moe() ? divisors(r_.model->moe_experts) : std::vector<std::int64_t>{1}) {
          if (!allowed(r_, "ep", ep)) { count("filtered"); continue; }
          for (std::int64_t etp : etp_values(r_, tp)) {
            // MoE parallel folding: the experts' etp x ep tiles each stage's tp x cp x dp ranks.
            if ((tp * cp * dp) % (ep * etp) != 0) { count("invalid: --ep"); continue; }
            if (!allowed(r_, "etp", etp)) { count("filtered"); continue; }
            layout(tp, pp, cp, ep, etp);
          }
        }
      }
    }
  }
  return std::move(space_);
}

}  // namespace

Space enumerate(const Request& r) { return Enumerator(r).run(); }

}  // namespace dtsim::plan
