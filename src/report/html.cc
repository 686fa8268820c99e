#include "report/html.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "report/svg.h"

namespace dtsim::report {
namespace {

using svg::element;
using svg::escape;
using svg::fixed_text;
using svg::num;

// Categories in schedule::Category order (Tableau 10 and its light tones).
constexpr const char* kCategoryColour[schedule::kCategories] = {
    "#4e79a7", "#a0cbe8", "#f28e2b", "#ffbe7d", "#59a14f", "#8cd17d", "#bab0ac", "#e15759", "#b07aa1", "#9d7660",
    "#d4a6c8"};

// What a timeline rectangle is; recompute is the leading part of a backward pass.
enum class Kind { forward, backward, recompute, send_activations, send_gradients, grad_reduce, param_gather,
                  other_comm, optimizer, other };
constexpr std::size_t kKinds = 10;
constexpr const char* kKindName[kKinds] = {"forward", "backward", "recompute", "send activations", "send gradients",
                                           "gradient reduction", "parameter all-gather", "other communication",
                                           "optimizer", "other"};
constexpr const char* kKindColour[kKinds] = {"#4e79a7", "#f28e2b", "#edc948", "#76b7b2", "#59a14f",
                                             "#e15759", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

Kind kind_of(const schedule::Task& t) {
  using L = schedule::Label::Kind;
  switch (t.label.kind) {
    case L::forward: return Kind::forward;
    case L::backward: return Kind::backward;
    case L::send_activations: return Kind::send_activations;
    case L::send_gradients: return Kind::send_gradients;
    case L::grad_bucket:
    case L::grad_reduce: return Kind::grad_reduce;
    case L::param_gather: return Kind::param_gather;
    case L::tied_embedding:
    case L::grad_norm: return Kind::other_comm;
    case L::optimizer: return Kind::optimizer;
    default: return t.kind == schedule::TaskKind::comm ? Kind::other_comm : Kind::other;
  }
}

double seconds(SimTime t) { return to_seconds(t).value(); }

std::string share_text(double part, double whole) { return fixed_text(whole > 0 ? 100 * part / whole : 0, 1) + "%"; }

// ---- timeline ----

struct Row {
  std::int32_t stage = 0;
  bool compute = false;
  std::string name;
  std::vector<svg::Item> items;
};

// The items of task `i` on its row: a backward pass with recomputation is split in proportion to
// its busy segments, the recompute (which runs first) then the rest.
void add_items(const schedule::Graph& g, std::size_t i, const engine::TaskTiming& t, double px_per_s,
               std::vector<svg::Item>& out) {
  const schedule::Task& task = g.tasks()[i];
  double x0 = seconds(t.start) * px_per_s, x1 = seconds(t.end) * px_per_s;
  auto ref = static_cast<std::int32_t>(i);
  Kind k = kind_of(task);
  SimTime re = 0, total = g.duration(task);
  if (k == Kind::backward)
    for (const schedule::Segment& s : g.segments(task))
      re += s.category == schedule::Category::recompute ? s.duration : 0;
  if (re > 0 && total > 0) {
    double mid = x0 + (x1 - x0) * static_cast<double>(re) / static_cast<double>(total);
    out.push_back({x0, mid, static_cast<int>(Kind::recompute), ref});
    x0 = mid;
  }
  out.push_back({x0, x1, static_cast<int>(k), ref});
}

// Rows by stage, the compute stream first; communication streams that ran nothing are left out.
std::vector<Row> timeline_rows(const engine::Simulation& sim, double px_per_s) {
  const schedule::Graph& g = sim.step.graph;
  std::vector<Row> rows(g.streams().size());
  for (std::size_t s = 0; s < rows.size(); ++s) rows[s] = {g.streams()[s].rank, false, g.streams()[s].name, {}};
  for (schedule::StreamId c : sim.step.compute)
    if (c >= 0 && static_cast<std::size_t>(c) < rows.size()) rows[static_cast<std::size_t>(c)].compute = true;
  std::size_t n = std::min(g.tasks().size(), sim.timeline.tasks.size());
  for (std::size_t i = 0; i < n; ++i) {
    const engine::TaskTiming& t = sim.timeline.tasks[i];
    if (t.end > t.start) add_items(g, i, t, px_per_s, rows[static_cast<std::size_t>(g.tasks()[i].stream)].items);
  }
  std::erase_if(rows, [](const Row& r) { return !r.compute && r.items.empty(); });
  std::stable_sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    return a.stage != b.stage ? a.stage < b.stage : a.compute > b.compute;
  });
  return rows;
}

std::string run_tooltip(const engine::Simulation& sim, const svg::Run& run, double px_per_s) {
  double t0 = run.x0 / px_per_s, t1 = run.x1 / px_per_s;
  if (run.count == 1) {
    auto i = static_cast<std::size_t>(run.ref);
    std::string what = schedule::to_string(sim.step.graph.tasks()[i].label);
    if (run.kind == static_cast<int>(Kind::recompute)) what = "recompute of " + what;
    return what + ": " + num(t1 - t0) + " s from " + num(t0) + " s";
  }
  double busy = run.busy_total();
  std::string shares;
  for (std::size_t k = 0; k < kKinds; ++k)
    if (run.busy[k] > 0)
      shares += (shares.empty() ? "" : ", ") + std::string(kKindName[k]) + " " + share_text(run.busy[k], busy);
  return std::to_string(run.count) + " tasks merged, " + num(t0) + "-" + num(t1) + " s: " + shares + "; busy " +
         share_text(run.busy_share(), 1);
}

std::string timeline_row(const engine::Simulation& sim, const Row& row, double left, double y, double px_per_s,
                         std::size_t& rects) {
  std::string out = row.compute ? svg::text(left - 8, y + 13, "stage " + std::to_string(row.stage),
                                            {.anchor = "end", .bold = true, .cls = "stage-label"})
                                : svg::text(left - 8, y + 12, row.name,
                                            {.anchor = "end", .size = 10, .fill = "#57606a", .cls = "stream-label"});
  double top = row.compute ? y + 2 : y + 5, height = row.compute ? 14 : 8;
  for (const svg::Run& run : svg::pack_row(row.items)) {
    // A merged run stacks its kinds by share of busy time, fainter where the row was idle.
    std::string tip = run_tooltip(sim, run, px_per_s);
    double busy = run.busy_total(), y0 = top, opacity = run.count == 1 ? 1 : std::max(run.busy_share(), 0.2);
    bool stacked = run.count > 1 && busy > 0 && run.busy[static_cast<std::size_t>(run.kind)] < busy;  // 2+ kinds
    for (std::size_t k = 0; k < kKinds; ++k) {
      if (stacked ? !(run.busy[k] > 0) : static_cast<int>(k) != run.kind) continue;
      double h = stacked ? height * run.busy[k] / busy : height;
      // At least 1 px wide: a task is seen however short it is.
      out += svg::rect(left + run.x0, y0, std::max(run.x1 - run.x0, 1.0), h, kKindColour[k], "task", tip, opacity);
      y0 += h;
      ++rects;
    }
  }
  return out;
}

// ---- Pareto front ----

// mask[i]: no config is no slower and no larger than ranked[i] and better in one. Sorted by
// (memory, time), a config is on the front when it is the fastest of its memory and faster than
// everything smaller.
std::vector<bool> pareto_mask(const std::vector<plan::Result>& v) {
  std::vector<std::size_t> order(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) order[i] = i;
  auto finite = [](double x) { return std::isfinite(x) ? x : std::numeric_limits<double>::infinity(); };
  auto mem = [&](std::size_t i) { return finite(v[i].peak_memory.value()); };
  auto time = [&](std::size_t i) { return finite(v[i].step.step_time.value()); };
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return mem(a) != mem(b) ? mem(a) < mem(b) : time(a) < time(b);
  });
  std::vector<bool> mask(v.size(), false);
  double best_smaller = std::numeric_limits<double>::infinity();
  for (std::size_t g = 0; g < order.size();) {
    std::size_t end = g;
    while (end < order.size() && mem(order[end]) == mem(order[g])) ++end;
    double fastest = time(order[g]);
    for (std::size_t k = g; k < end && time(order[k]) == fastest; ++k) mask[order[k]] = fastest < best_smaller;
    best_smaller = std::min(best_smaller, fastest);
    g = end;
  }
  return mask;
}

std::string layout_text(const plan::Candidate& c) {
  const spec::Parallel& p = c.par;
  auto n = [](std::int64_t v) { return std::to_string(v); };
  return "tp " + n(p.tp) + " pp " + n(p.pp) + " dp " + n(p.dp) + " cp " + n(p.cp) + " ep " + n(p.ep) +
         (p.ep > 1 ? " etp " + n(p.expert_tp()) : "") + " vp " + n(p.vp) + " mbs " + n(c.train.micro_batch) + " zero " +
         std::to_string(p.zero_stage) + " sp " + (p.sequence_parallel ? "on" : "off") + " recompute " +
         spec::to_string(c.train.recompute);
}

double gib(const plan::Result& x) { return to_gib(x.peak_memory); }

// Grey points (one per pixel), the front in red joined by memory, and the best ranked labelled.
std::string pareto_points(const std::vector<plan::Result>& v, const std::vector<bool>& front, const svg::Scale& xs,
                          const svg::Scale& ys) {
  std::string out;
  std::set<std::pair<long, long>> drawn;  // pixels already holding a grey point
  std::vector<std::pair<double, std::size_t>> line;
  for (std::size_t i = 0; i < v.size(); ++i) {
    double x = xs(gib(v[i])), y = ys(v[i].step.step_time.value());
    if (front[i]) line.push_back({x, i});
    else if (drawn.insert({std::lround(x), std::lround(y)}).second) out += svg::circle(x, y, 2.5, "#8c959f", "config");
  }
  std::sort(line.begin(), line.end());
  std::vector<double> xy;
  for (const auto& [x, i] : line) xy.insert(xy.end(), {x, ys(v[i].step.step_time.value())});
  out += svg::polyline(xy, "#e15759", 1.5);
  for (const auto& [x, i] : line)
    out += svg::circle(x, ys(v[i].step.step_time.value()), 4.5, "#e15759", "pareto",
                       "#" + std::to_string(i + 1) + " " + layout_text(v[i].config) + ": " +
                           num(v[i].step.step_time.value()) + " s, " + fixed_text(gib(v[i]), 2) + " GiB",
                       "#ffffff");
  double bx = xs(gib(v[0])), by = ys(v[0].step.step_time.value());
  bool right = bx > (xs.p0 + xs.p1) / 2;
  return out + svg::circle(bx, by, 8, "none", "best", {}, "#1f2328") +
         svg::text(right ? bx - 12 : bx + 12, std::max(by - 16, ys.p1 + 12), "#1 " + layout_text(v[0].config),
                   {.anchor = right ? "end" : "start", .bold = true, .cls = "best-label", .halo = true});
}

// ---- HTML ----

constexpr const char* kCss =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;color:#1f2328;"
    "margin:24px auto;max-width:1440px;padding:0 16px}"
    "h1{font-size:20px;margin:0 0 6px}h2{font-size:16px;margin:24px 0 4px}"
    ".job{color:#57606a;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13px}"
    ".kpis{display:flex;flex-wrap:wrap;gap:12px;margin:16px 0}"
    ".kpi{border:1px solid #d0d7de;border-radius:6px;padding:8px 14px;min-width:150px}"
    ".kpi b{display:block;font-size:22px}.kpi span{color:#57606a;font-size:12px}"
    ".bad{color:#cf222e}.note{color:#57606a;font-size:13px;margin:2px 0}"
    "svg{max-width:100%;height:auto;display:block;margin:8px 0 16px}"
    "table{border-collapse:collapse;font-size:13px}th,td{padding:4px 10px;border-bottom:1px solid #eaeef2;"
    "text-align:right;white-space:nowrap}th{background:#f6f8fa}.l{text-align:left}"
    "tr.front td{background:#fff8e6}";

std::string kpi(const std::string& value, const std::string& label, bool bad = false) {
  return std::string("<div class=\"kpi") + (bad ? " bad" : "") + "\"><b>" + escape(value) + "</b><span>" +
         escape(label) + "</span></div>";
}

std::string job_line(const JobView& j) {
  auto n = [](std::int64_t v) { return std::to_string(v); };
  const spec::Parallel& p = j.par;
  return "tp " + n(p.tp) + " · pp " + n(p.pp) + " · dp " + n(p.dp) + " · cp " + n(p.cp) + " · ep " + n(p.ep) +
         (p.ep > 1 ? " · etp " + n(p.expert_tp()) : "") + " · vp " + n(p.vp) + " · zero " + n(p.zero_stage) +
         " · sp " + (p.sequence_parallel ? "on" : "off") + " · mbs " + n(j.train.micro_batch) + " · gbs " +
         n(j.train.global_batch) + " · seq " + n(j.train.seq_len) + " · " + spec::to_string(j.train.precision) +
         " · recompute " + cost::recompute_text(j.train) + " · " + j.stack + " · network " + j.network + ", engine " +
         j.engine;
}

}  // namespace

std::string breakdown_svg(const engine::StepResult& r, const std::string& title) {
  constexpr double kLeft = 16, kBar = 868;
  double whole = r.step_time.value(), sum = 0, x = kLeft;
  for (const Seconds& s : r.breakdown) sum += std::max(s.value(), 0.0);
  whole = std::max(whole, sum);
  std::vector<svg::LegendEntry> legend;
  std::string bar;
  for (std::size_t c = 0; c < schedule::kCategories; ++c) {
    double v = r.breakdown[c].value();
    if (!(v > 0)) continue;
    std::string what = std::string(schedule::to_string(static_cast<schedule::Category>(c))) + " " + num(v) + " s (" +
                       share_text(v, whole) + ")";
    double w = whole > 0 ? v / whole * kBar : 0;
    bar += svg::rect(x, 40, w, 32, kCategoryColour[c], "segment", what);
    x += w;
    legend.push_back({kCategoryColour[c], what});
  }
  return svg::open(900, 100 + 20 * static_cast<double>((legend.size() + 2) / 3), title) +
         svg::text(kLeft, 24, title, {.size = 15, .bold = true}) +
         svg::text(kLeft + kBar, 24, "total " + num(r.step_time.value()) + " s",
                   {.anchor = "end", .size = 14, .bold = true, .cls = "total"}) +
         svg::rect(kLeft, 40, kBar, 32, "#f6f8fa") + bar + svg::legend(kLeft, 98, legend, 3, kBar / 3) + svg::close();
}

std::string timeline_svg(const engine::Simulation& sim, const std::string& title, double width_px) {
  constexpr double kLeft = 150, kRow = 18;
  double width = std::isfinite(width_px) && width_px >= 100 ? std::min(width_px, 1e6) : kTimelineWidthPx;
  double span = sim.timeline.makespan > 0 ? seconds(sim.timeline.makespan) : 1.0;
  double px_per_s = width / span;
  std::vector<Row> rows = timeline_rows(sim, px_per_s);
  std::array<bool, kKinds> used{};
  std::size_t rects = 0, items = 0, tasks = 0;  // a task is one item, or two when it recomputes
  for (const Row& row : rows) {
    for (const svg::Item& it : row.items) {
      used[static_cast<std::size_t>(it.kind)] = true;
      tasks += it.kind != static_cast<int>(Kind::recompute) ? 1 : 0;
    }
    items += row.items.size();
  }
  std::vector<svg::LegendEntry> legend;
  for (std::size_t k = 0; k < kKinds; ++k)
    if (used[k]) legend.push_back({kKindColour[k], kKindName[k]});
  auto columns = std::max<std::size_t>(1, static_cast<std::size_t>((kLeft + width - 16) / 170));
  double top = 52 + 20 * static_cast<double>((legend.size() + columns - 1) / columns);
  double bottom = top + static_cast<double>(rows.size()) * kRow;
  std::string out = svg::open(kLeft + width + 24, bottom + 66, title) +
                    svg::text(16, 22, title, {.size = 15, .bold = true}) + svg::legend(16, 46, legend, columns, 170) +
                    svg::x_axis({0, span, kLeft, kLeft + width}, top - 4, bottom + 2, "time (s)");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    double y = top + static_cast<double>(i) * kRow;
    if (rows[i].compute && i > 0) out += svg::line(16, y, kLeft + width, y, "#d0d7de");
    out += timeline_row(sim, rows[i], kLeft, y, px_per_s, rects);
  }
  std::string merged = items > tasks ? "; recomputing backward passes drawn in two parts" : "";
  if (rects < items)
    merged += "; runs of tasks narrower than 1 px merged, their kinds stacked by share of busy time and fainter "
              "where idle (tooltips say what)";
  return out + svg::text(16, bottom + 58,
                         std::to_string(tasks) + " tasks as " + std::to_string(rects) + " rectangles" + merged,
                         {.size = 11, .fill = "#57606a"}) +
         svg::close();
}

std::string pareto_svg(const plan::Plan& p, const std::string& title) {
  constexpr double kW = 900, kH = 560, kL = 90, kR = 870, kT = 50, kB = 490;
  std::string out = svg::open(kW, kH, title) + svg::text(16, 24, title, {.size = 15, .bold = true});
  if (p.ranked.empty())
    return out + svg::text(kW / 2, kH / 2, "no configuration fits", {.anchor = "middle", .size = 16}) + svg::close();
  double m_lo = gib(p.ranked[0]), m_hi = m_lo, t_lo = p.ranked[0].step.step_time.value(), t_hi = t_lo;
  for (const plan::Result& x : p.ranked) {
    m_lo = std::min(m_lo, gib(x)), m_hi = std::max(m_hi, gib(x));
    t_lo = std::min(t_lo, x.step.step_time.value()), t_hi = std::max(t_hi, x.step.step_time.value());
  }
  svg::Scale xs = svg::padded(m_lo, m_hi, kL, kR), ys = svg::padded(t_lo, t_hi, kB, kT, 4);
  std::vector<bool> front = pareto_mask(p.ranked);
  auto on_front = static_cast<std::size_t>(std::count(front.begin(), front.end(), true));
  return out + svg::x_axis(xs, kT, kB, "peak memory per GPU (GiB)") +
         svg::y_axis(ys, kL, kR, ys.log ? "step time (s, log scale)" : "step time (s)") +
         pareto_points(p.ranked, front, xs, ys) +
         svg::text(kL, kH - 12,
                   std::to_string(p.ranked.size()) + " configurations, " + std::to_string(on_front) +
                       " Pareto-optimal (red: no other is both no slower and no larger)",
                   {.size = 11, .fill = "#57606a"}) +
         svg::close();
}

std::string simulate_html(const JobView& job, const engine::Simulation& sim, const cost::MemoryEstimate& mem,
                          const calibrate::Uncertainty& u) {
  const engine::StepResult& r = sim.result;
  std::string title = "dtsim simulate: " + job.model->name + " on " + std::to_string(job.gpus) + " x " +
                      job.cluster->gpu.name;
  std::string out = svg::page_open(title, kCss) +
                    element("p", job.cluster->name + " (" + std::to_string(job.cluster->nodes_for(job.gpus)) +
                                     " nodes) · calibration " + job.calibration, "job") +
                    element("p", job_line(job), "job");
  for (const std::string& n : job.notes) out += element("p", "note: " + n, "note");
  bool has_peak = !mem.stages.empty() && mem.peak_stage < mem.stages.size();
  double peak = has_peak ? to_gib(mem.peak().total()) : 0;
  out += "<div class=\"kpis\">" + kpi(num(r.step_time.value()) + " s", "step time") +
         kpi(fixed_text(r.tokens_per_s, 0), "tokens/s") + kpi(fixed_text(100 * r.mfu, 1) + "%", "MFU") +
         kpi(fixed_text(r.model_tflops_per_gpu, 1), "model TFLOP/s per GPU") +
         kpi(fixed_text(peak, 2) + " GiB",
             "peak memory per GPU of " + fixed_text(to_gib(mem.capacity), 2) +
                 (has_peak && mem.fits() ? " GiB, fits" : " GiB, DOES NOT FIT"),
             !(has_peak && mem.fits())) +
         "</div>" + element("p", "interval " + uncertainty_text(u, r.step_time.value()), "note");
  if (has_peak) {
    const cost::StageMemory& m = mem.peak();
    out += element("p", "memory of stage " + std::to_string(m.stage) + " (GiB): parameters " +
                            fixed_text(to_gib(m.weights), 2) + ", gradients " + fixed_text(to_gib(m.gradients), 2) +
                            ", optimizer " + fixed_text(to_gib(m.optimizer), 2) + ", activations " +
                            fixed_text(to_gib(m.activations), 2) + ", other " + fixed_text(to_gib(m.other), 2),
                   "note");
  }
  out += element("h2", "Where the step goes") +
         breakdown_svg(r, "Breakdown of the critical stage (" + std::to_string(r.critical_stage) + ")");
  out += element("h2", "Timeline") +
         timeline_svg(sim, "One step, " + std::to_string(r.microbatches) + " micro-batches");
  return out + svg::page_close();
}

std::string plan_html(const plan::Request& r, const plan::Plan& p, const plan::Options& o,
                      const calibrate::Uncertainty& u, std::size_t top) {
  bool cost = o.objective == plan::Objective::cost_per_token;
  std::string title = "dtsim plan: " + r.model->name + " on " + std::to_string(r.gpus) + " x " + r.cluster->gpu.name;
  std::string pruned;
  for (const auto& [why, n] : p.space.pruned) pruned += element("li", why + ": " + std::to_string(n));
  std::string out =
      svg::page_open(title, kCss) +
      element("p", r.cluster->name + " · gbs " + std::to_string(r.train.global_batch) + " · seq " +
                       std::to_string(r.train.seq_len) + " · " + spec::to_string(r.train.precision) + " · objective " +
                       (cost ? "dollars per million tokens at " + fixed_text(o.price_per_gpu_hour, 2) + " per GPU-hour"
                             : std::string("step time")),
              "job") +
      element("p", "evaluated " + std::to_string(p.ranked.size()) + " of " + std::to_string(p.space.considered) +
                       " layouts considered; pruned" + (pruned.empty() ? ": none" : ":"), "note") +
      (pruned.empty() ? "" : "<ul class=\"note\">" + pruned + "</ul>");
  if (p.ranked.empty()) return out + element("p", "no configuration fits", "bad") + svg::page_close();
  std::vector<bool> front = pareto_mask(p.ranked);
  std::vector<std::string> head{"#", "layout", "step s", "tokens/s", "MFU", "peak GiB"};
  if (cost) head.push_back("$ per Mtok");
  out += element("h2", "Best configurations") + "<table>" + svg::table_row(head, "th", 1);
  for (std::size_t i = 0; i < std::min(top, p.ranked.size()); ++i) {
    const plan::Result& x = p.ranked[i];
    std::vector<std::string> row{std::to_string(i + 1), layout_text(x.config), fixed_text(x.step.step_time.value(), 3),
                                 fixed_text(x.step.tokens_per_s, 0), fixed_text(100 * x.step.mfu, 1) + "%",
                                 fixed_text(gib(x), 2)};
    if (cost) row.push_back(num(x.objective));
    out += svg::table_row(row, "td", 1, front[i] ? "front" : "");
  }
  out += "</table>" + element("p", "highlighted: on the Pareto front of step time and memory", "note") +
         element("p", "interval of #1 " + uncertainty_text(u, p.ranked.front().step.step_time.value()), "note");
  return out + element("h2", "Step time against memory") + pareto_svg(p, "Every ranked configuration") +
         svg::page_close();
}

}  // namespace dtsim::report
