#include "calibrate/collective_fit.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <utility>

#include "calibrate/minimize.h"
#include "calibrate/stats.h"
#include "core/errors.h"
#include "cost/collective.h"
#include "topology/placement.h"

namespace dtsim::calibrate {
namespace {

using spec::CollAlgo;
using spec::Collective;
using spec::Protocol;

// Limits of the fitted values: a base latency between 10 ns and 10 ms, an efficiency between
// 1e-4 and 1 (above 1 the measured link would be faster than the cluster file says it is).
constexpr double kMinLatency = 1e-8, kMaxLatency = 1e-2, kMinEfficiency = 1e-4;

struct Entry {
  CollAlgo algo;
  Protocol protocol;
};

// A sample with the group shape it runs on.
struct Point {
  const CollectiveSample* sample;
  topology::GroupShape shape;
};

std::size_t index(Collective op) { return static_cast<std::size_t>(op); }

spec::ProtocolCost& own_entry(spec::CollectiveCalibration& c, Collective op, bool inter, Entry e) {
  return c.by_collective[index(op)][inter ? 1 : 0][static_cast<std::size_t>(e.algo)]
                        [static_cast<std::size_t>(e.protocol)];
}

// The entries of one link class that `op` can be priced with (cost/collective.cc): ring with
// every protocol (point-to-point has no LL128); all_reduce also tree across nodes and NVLS where
// the switch reduces. Only those the base profile has.
std::vector<Entry> entries_for(Collective op, bool inter, const spec::Cluster& cluster,
                               const spec::CollectiveCalibration& base, const std::vector<Point>& pts) {
  bool p2p = op == Collective::all_to_all || op == Collective::send_recv;
  std::vector<Entry> all;
  for (Protocol p : {Protocol::ll, Protocol::ll128, Protocol::simple})
    if (!(p2p && p == Protocol::ll128)) all.push_back({CollAlgo::ring, p});
  if (op == Collective::all_reduce) {
    if (inter)
      for (Protocol p : {Protocol::ll, Protocol::ll128, Protocol::simple}) all.push_back({CollAlgo::tree, p});
    bool local_pairs = std::any_of(pts.begin(), pts.end(), [](const Point& x) { return x.shape.ranks_per_node > 1; });
    if (cluster.intra.nvls && local_pairs) all.push_back({CollAlgo::nvls, Protocol::simple});
  }
  std::vector<Entry> out;
  for (Entry e : all)
    if (base.at(op, inter, e.algo, e.protocol).available) out.push_back(e);
  return out;
}

// One (collective, link class) fit: its parameters, the samples, and the calibration it edits.
class ScopeProblem {
 public:
  ScopeProblem(Collective op, bool inter, std::vector<Point> pts, std::vector<Entry> entries, const spec::Cluster& c,
               spec::CollectiveCalibration& cal)
      : op_(op), inter_(inter), pts_(std::move(pts)), entries_(std::move(entries)), cluster_(c), cal_(cal) {
    std::set<std::pair<std::int64_t, std::int64_t>> shapes;
    for (const Point& p : pts_) shapes.insert({p.shape.ranks, p.shape.ranks_per_node});
    fit_steps_ = shapes.size() > 1;
    // Start from (and pull towards) the shared table, not an earlier fit of this collective:
    // refitting a fitted profile to the same data then gives the same profile.
    for (Entry e : entries_) {
      const spec::ProtocolCost& shared = cal_.at(inter_, e.algo, e.protocol);
      spec::ProtocolCost b = shared.available ? shared : cal_.at(op_, inter_, e.algo, e.protocol);
      base_.push_back(b);
      // (NCCL's NVLS base latency is 0: the search works on ln, so it starts at the 10 ns floor.)
      prior_.push_back(std::log(std::clamp(b.base_latency.value(), kMinLatency, kMaxLatency)));
      prior_.push_back(std::log(std::clamp(b.bandwidth_efficiency, kMinEfficiency, 1.0)));
    }
    if (fit_steps_) prior_.push_back(0.0);  // ln of the step-latency scale
  }

  [[nodiscard]] const std::vector<double>& prior() const { return prior_; }
  [[nodiscard]] const std::vector<Entry>& entries() const { return entries_; }
  [[nodiscard]] bool fits_steps() const { return fit_steps_; }

  // Writes parameters `x` into the collective's own table (rounded when asked).
  void apply(const std::vector<double>& x, bool round) const {
    double scale = fit_steps_ ? std::clamp(std::exp(x.back()), 0.1, 10.0) : 1.0;
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      spec::ProtocolCost e = base_[i];
      double lat = std::clamp(std::exp(x[2 * i]), kMinLatency, kMaxLatency);
      double eff = std::clamp(std::exp(x[2 * i + 1]), kMinEfficiency, 1.0);
      double step = e.step_latency.value() * scale;
      if (round) {
        lat = significant(lat * 1e6, 3) * 1e-6;
        eff = significant(eff, 3);
        step = significant(step * 1e6, 3) * 1e-6;
      }
      e.available = true;
      e.base_latency = Seconds(lat);
      e.bandwidth_efficiency = eff;
      e.step_latency = Seconds(step);
      own_entry(cal_, op_, inter_, entries_[i]) = e;
    }
  }

  // The fastest candidate for point `i`, or, with `only`, that entry's own (non-hierarchical) one.
  [[nodiscard]] cost::CollectiveEstimate predict(std::size_t i, const Entry* only = nullptr) const {
    const Point& p = pts_[i];
    std::vector<cost::CollectiveEstimate> c =
        cost::collective_candidates(op_, Bytes(p.sample->bytes), p.shape, cluster_, cal_);
    cost::CollectiveEstimate best{.time = Seconds(INFINITY)};
    for (const auto& e : c) {
      if (only != nullptr && (e.hierarchical || e.algo != only->algo || e.protocol != only->protocol)) continue;
      if (e.time < best.time) best = e;
    }
    return best;
  }

  [[nodiscard]] double residual(std::size_t i, const cost::CollectiveEstimate& e) const {
    return std::log(e.time.value() / pts_[i].sample->time.value());
  }

  // Sum of squared log residuals of the points in `which` (all when empty), plus the prior.
  [[nodiscard]] double objective(const std::vector<double>& x, const std::vector<std::size_t>& which = {},
                                 const Entry* only = nullptr) const {
    apply(x, false);
    double sse = 0;
    auto add = [&](std::size_t i) {
      double r = residual(i, predict(i, only));
      sse += r * r;
    };
    if (which.empty())
      for (std::size_t i = 0; i < pts_.size(); ++i) add(i);
    else
      for (std::size_t i : which) add(i);
    for (std::size_t j = 0; j < x.size(); ++j) sse += kPriorWeight * (x[j] - prior_[j]) * (x[j] - prior_[j]);
    for (std::size_t i = 0; i < entries_.size(); ++i)  // efficiency above 1: steep penalty
      if (x[2 * i + 1] > 0) sse += 100.0 * x[2 * i + 1] * x[2 * i + 1];
    return sse;
  }

  [[nodiscard]] std::size_t size() const { return pts_.size(); }
  [[nodiscard]] const Point& point(std::size_t i) const { return pts_[i]; }
  [[nodiscard]] const spec::ProtocolCost& base(std::size_t i) const { return base_[i]; }

 private:
  Collective op_;
  bool inter_;
  std::vector<Point> pts_;
  std::vector<Entry> entries_;
  const spec::Cluster& cluster_;
  spec::CollectiveCalibration& cal_;
  std::vector<spec::ProtocolCost> base_;
  std::vector<double> prior_;
  bool fit_steps_ = false;
};

// Starting point: assign each sample to the entry that wins it, fit each entry's latency and
// efficiency to its own samples, and repeat (the winners change as the entries move).
std::vector<double> assign_and_fit(const ScopeProblem& sp) {
  std::vector<double> x = sp.prior();
  for (int round = 0; round < 6; ++round) {
    sp.apply(x, false);
    std::vector<std::vector<std::size_t>> owned(sp.entries().size());
    for (std::size_t i = 0; i < sp.size(); ++i) {
      cost::CollectiveEstimate e = sp.predict(i);
      for (std::size_t k = 0; k < sp.entries().size(); ++k)
        if (!e.hierarchical && sp.entries()[k].algo == e.algo && sp.entries()[k].protocol == e.protocol)
          owned[k].push_back(i);
    }
    for (std::size_t k = 0; k < owned.size(); ++k) {
      if (owned[k].empty()) continue;
      const Entry& only = sp.entries()[k];
      auto sub = [&](const std::vector<double>& y) {
        std::vector<double> z = x;
        z[2 * k] = y[0];
        z[2 * k + 1] = y[1];
        return sp.objective(z, owned[k], &only);
      };
      Minimum m = nelder_mead(sub, {x[2 * k], x[2 * k + 1]}, {.step = 0.5, .max_evaluations = 400, .restarts = 1});
      x[2 * k] = m.x[0];
      x[2 * k + 1] = m.x[1];
    }
  }
  return x;
}

// An entry that wins no sample is not measured by them: put it back to its base values when
// that costs nothing (if it then wins somewhere, or moves a hierarchical candidate, the data
// say it cannot be that fast, and the fitted value stands).
void restore_unseen(const ScopeProblem& sp, std::vector<double>& x) {
  for (std::size_t k = 0; k < sp.entries().size(); ++k) {
    std::vector<double> y = x;
    y[2 * k] = sp.prior()[2 * k];
    y[2 * k + 1] = sp.prior()[2 * k + 1];
    double before = sp.objective(x), after = sp.objective(y);
    if (after <= before + 1e-12 * before) x = y;
  }
  sp.apply(x, false);
}

ScopeFit report_fit(const ScopeProblem& sp, Collective op, bool inter, const std::vector<double>& x,
                    const spec::CollectiveCalibration& before_cal, const spec::Cluster& cluster) {
  ScopeFit f{.op = op, .inter_node = inter};
  sp.apply(x, true);
  double scale = sp.fits_steps() ? std::clamp(std::exp(x.back()), 0.1, 10.0) : 1.0;
  for (std::size_t i = 0; i < sp.entries().size(); ++i) {
    const Entry& e = sp.entries()[i];
    const spec::ProtocolCost& b = sp.base(i);
    double eff = std::exp(x[2 * i + 1]);
    f.params.push_back({e.algo, e.protocol, "base_latency_us", b.base_latency.value() * 1e6,
                        significant(std::clamp(std::exp(x[2 * i]), kMinLatency, kMaxLatency) * 1e6, 3), false});
    f.params.push_back({e.algo, e.protocol, "bandwidth_efficiency", b.bandwidth_efficiency,
                        significant(std::clamp(eff, kMinEfficiency, 1.0), 3), eff >= 0.999});
    if (sp.fits_steps())
      f.params.push_back({e.algo, e.protocol, "step_latency_us", b.step_latency.value() * 1e6,
                          significant(b.step_latency.value() * scale * 1e6, 3), scale <= 0.1 || scale >= 10.0});
  }
  double sb = 0, sa = 0;
  for (std::size_t i = 0; i < sp.size(); ++i) {
    const Point& p = sp.point(i);
    cost::CollectiveEstimate now = sp.predict(i);
    Seconds was = cost::collective_time(op, Bytes(p.sample->bytes), p.shape, cluster, before_cal).time;
    f.samples.push_back({*p.sample, was, now.time, now.algo, now.protocol, now.hierarchical});
    double rb = std::log(was.value() / p.sample->time.value()), ra = sp.residual(i, now);
    sb += rb * rb;
    sa += ra * ra;
  }
  double n = static_cast<double>(sp.size());
  f.rms_log_before = std::sqrt(sb / n);
  f.rms_log_after = std::sqrt(sa / n);
  return f;
}

topology::GroupShape shape_of(const CollectiveSample& s, const spec::Cluster& c, const std::string& flag) {
  try {
    return topology::flat_group_shape(c, s.ranks, s.ranks_per_node);
  } catch (const std::invalid_argument&) {
    throw SpecError(flag, s.source + ": expected a group that fits cluster " + c.name + " (" +
                              std::to_string(c.gpus_per_node) + " GPUs per node, ranks a multiple of ranks per node), got " +
                              std::to_string(s.ranks) + " ranks, " + std::to_string(s.ranks_per_node) + " per node");
  }
}

}  // namespace

double bus_bandwidth(const CollectiveSample& s, Seconds t) {
  return cost::bus_factor(s.op, s.ranks) * s.bytes / t.value();
}

double median_busbw_error(const ScopeFit& f, double min_bytes, bool after) {
  std::vector<double> e;
  for (const SampleFit& s : f.samples)
    if (s.sample.bytes >= min_bytes) e.push_back(std::fabs(s.sample.time.value() / (after ? s.after : s.before).value() - 1.0));
  return median(e);
}

CollectiveFit fit_collectives(const std::vector<CollectiveSample>& samples, const spec::Cluster& cluster,
                              const spec::CollectiveCalibration& base, const std::string& flag) {
  CollectiveFit out{.calibration = base};
  for (bool inter : {false, true}) {
    for (Collective op : spec::kCollectives) {
      std::vector<Point> pts;
      for (const CollectiveSample& s : samples) {
        if (s.op != op || s.ranks <= 1) continue;
        topology::GroupShape g = shape_of(s, cluster, flag);
        if ((g.nodes > 1) == inter) pts.push_back({&s, g});
      }
      if (pts.empty()) continue;
      std::vector<Entry> entries = entries_for(op, inter, cluster, out.calibration, pts);
      if (entries.empty())
        throw SpecError(flag, std::string("expected the base profile to have ") + (inter ? "inter_node" : "intra_node") +
                                  " entries for " + spec::to_string(op) + " to fit, got none");
      ScopeProblem sp(op, inter, std::move(pts), std::move(entries), cluster, out.calibration);
      std::vector<double> x = assign_and_fit(sp);
      x = nelder_mead([&](const std::vector<double>& y) { return sp.objective(y); }, x,
                      {.step = 0.3, .max_evaluations = 6000, .restarts = 3})
              .x;
      restore_unseen(sp, x);
      out.scopes.push_back(report_fit(sp, op, inter, x, base, cluster));
    }
  }
  return out;
}

}  // namespace dtsim::calibrate
