#include <catch2/catch.hpp>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string_view>

#include "cost/memory.h"
#include "engine/analytical.h"
#include "engine/simulate.h"
#include "plan/planner.h"
#include "report/html.h"
#include "report/svg.h"
#include "spec/load.h"
#include "spec/stack.h"

using namespace dtsim;
using Catch::Matchers::Contains;

namespace {

// ---- a small XML checker: balanced tags, quoted attributes, entities only, finite numbers ----

bool entity_at(std::string_view d, std::size_t at) {
  for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&#39;", "&apos;"})
    if (d.compare(at, std::strlen(e), e) == 0) return true;
  return false;
}

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == ':'; }

bool finite_numbers(std::string_view v) {
  std::string s(v);
  for (char& c : s) c = c == ',' ? ' ' : c;
  const char* p = s.c_str();
  while (*p) {
    char* end = nullptr;
    double x = std::strtod(p, &end);
    if (end == p || !std::isfinite(x)) return false;
    p = end;
    while (*p == ' ') ++p;
  }
  return true;
}

// Empty when the attribute is fine, else what is wrong.
std::string attribute_problem(const std::string& name, std::string_view value) {
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (value[i] == '<') return "< in attribute " + name;
    if (value[i] == '&' && !entity_at(value, i)) return "unescaped & in attribute " + name;
  }
  static const std::set<std::string> numeric{"x", "y", "width", "height", "cx", "cy", "r", "x1", "y1", "x2", "y2",
                                             "fill-opacity", "stroke-width", "font-size", "points"};
  if (numeric.count(name) && !finite_numbers(value))
    return "not a finite number: " + name + "=\"" + std::string(value) + "\"";
  return "";
}

// Parses the attributes of a tag from `k` to its '>' (k moves past it); empty or what is wrong.
std::string tag_rest(std::string_view d, std::size_t& k, bool closing, bool& self_closing) {
  std::set<std::string> seen;
  for (;;) {
    while (k < d.size() && std::isspace(static_cast<unsigned char>(d[k]))) ++k;
    if (k >= d.size()) return "unterminated tag";
    if (d[k] == '>') return ++k, "";
    if (d.compare(k, 2, "/>") == 0) return k += 2, self_closing = true, "";
    if (closing) return "attribute in a closing tag";
    std::size_t a = k;
    while (k < d.size() && name_char(d[k])) ++k;
    std::string name(d.substr(a, k - a));
    if (name.empty() || d.compare(k, 2, "=\"") != 0) return "malformed attribute at " + std::to_string(a);
    if (!seen.insert(name).second) return "duplicate attribute " + name;
    std::size_t close = d.find('"', k + 2);
    if (close == std::string_view::npos) return "unterminated attribute " + name;
    if (std::string p = attribute_problem(name, d.substr(k + 2, close - k - 2)); !p.empty()) return p;
    k = close + 1;
  }
}

// Empty when `d` is one well-formed XML element (after an optional <!DOCTYPE>), else what is wrong.
std::string xml_problem(std::string_view d) {
  std::vector<std::string> open;
  int roots = 0;
  for (std::size_t i = 0; i < d.size();) {
    char c = d[i];
    if (c == '&' && !entity_at(d, i)) return "unescaped & at " + std::to_string(i);
    if (c != '<') {
      if (open.empty() && !std::isspace(static_cast<unsigned char>(c)))
        return "text outside the root at " + std::to_string(i);
      ++i;
      continue;
    }
    if (d.compare(i, 2, "<!") == 0 || d.compare(i, 2, "<?") == 0) {
      if (!open.empty() || roots > 0) return "declaration inside the document at " + std::to_string(i);
      std::size_t e = d.find('>', i);
      if (e == std::string_view::npos) return "unterminated declaration";
      i = e + 1;
      continue;
    }
    bool closing = d.compare(i, 2, "</") == 0;
    std::size_t j = i + (closing ? 2 : 1), k = j;
    while (k < d.size() && name_char(d[k])) ++k;
    if (k == j || !std::isalpha(static_cast<unsigned char>(d[j]))) return "unescaped < at " + std::to_string(i);
    std::string name(d.substr(j, k - j));
    bool self_closing = false;
    if (std::string p = tag_rest(d, k, closing, self_closing); !p.empty()) return p;
    if (closing) {
      if (open.empty() || open.back() != name)
        return "</" + name + "> closes <" + (open.empty() ? "" : open.back()) + ">";
      open.pop_back();
    } else {
      if (open.empty()) ++roots;
      if (!self_closing) open.push_back(name);
    }
    i = k;
  }
  if (!open.empty()) return "<" + open.back() + "> not closed";
  return roots == 1 ? "" : "expected one root element, got " + std::to_string(roots);
}

std::size_t count(const std::string& s, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = s.find(needle); at != std::string::npos; at = s.find(needle, at + needle.size())) ++n;
  return n;
}

// ---- inputs ----

struct Fixture {
  spec::Model model;
  spec::Cluster cluster;
  spec::Calibration cal;
  spec::Software software;
};

Fixture load() {
  setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1);
  std::string root = DTSIM_SOURCE_DIR;
  spec::Cluster c = spec::load_cluster(root + "/topologies/dgx-h100.json");
  return {spec::load_model(root + "/models/llama3-8b.json"), c,
          spec::load_calibration(root + "/calibration/" + c.calibration + ".json"),
          spec::load_stack("nemo@24.11").software};
}

// Llama-3-8B on 16 H100s, TP 2 PP 2 DP 4, gbs 32 (8 micro-batches per replica), seq 4096.
spec::Parallel small_par() { return {.tp = 2, .pp = 2, .dp = 4}; }
spec::Training small_train(spec::Recompute rc = spec::Recompute::none) {
  return {.global_batch = 32, .seq_len = 4096, .recompute = rc, .grad_dtype = spec::Dtype::bf16};
}

engine::Simulation simulate(const Fixture& f, const spec::Parallel& par, const spec::Training& train) {
  schedule::StepSpec s{&f.model, &f.cluster, par, train, &f.cal, f.software};
  engine::AnalyticalNetwork net(f.cluster, par, f.cal.collectives);
  return engine::simulate_step(s, net);
}

// Tasks with a duration (what the timeline draws), and those of them that recompute.
std::size_t drawn_tasks(const engine::Simulation& sim, bool recomputing_only = false) {
  std::size_t n = 0;
  const auto& g = sim.step.graph;
  for (std::size_t i = 0; i < g.tasks().size(); ++i) {
    if (sim.timeline.tasks[i].end <= sim.timeline.tasks[i].start) continue;
    bool re = false;
    for (const schedule::Segment& s : g.segments(g.tasks()[i])) re |= s.category == schedule::Category::recompute;
    n += !recomputing_only || (re && g.tasks()[i].label.kind == schedule::Label::Kind::backward) ? 1 : 0;
  }
  return n;
}

plan::Result result(double gib_peak, double step_s, std::int64_t tp) {
  plan::Result r;
  r.config.par.tp = tp;
  r.config.par.dp = 8 / tp;
  r.step.step_time = seconds(step_s);
  r.peak_memory = gib(gib_peak);
  r.capacity = gib(80);
  r.objective = step_s;
  return r;
}

}  // namespace

TEST_CASE("report::breakdown_svg: a segment and legend entry per non-zero category, and the total", "[report]") {
  engine::StepResult r;
  r.step_time = seconds(2.5);
  r.breakdown[static_cast<std::size_t>(schedule::Category::compute)] = seconds(1.5);
  r.breakdown[static_cast<std::size_t>(schedule::Category::pp_bubble)] = seconds(0.75);
  r.breakdown[static_cast<std::size_t>(schedule::Category::dp_comm_exposed)] = seconds(0.25);
  std::string s = report::breakdown_svg(r, "step");
  CHECK(xml_problem(s) == "");
  CHECK_THAT(s, Catch::StartsWith("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  CHECK(count(s, "class=\"legend\"") == 3);
  CHECK(count(s, "class=\"segment\"") == 3);
  CHECK_THAT(s, Contains(">total 2.5 s</text>"));
  // Shares of 2.5 s: 1.5 -> 60%, 0.75 -> 30%, 0.25 -> 10%; the bar is 868 px, so compute is 520.8 px.
  CHECK_THAT(s, Contains("compute 1.5 s (60.0%)"));
  CHECK_THAT(s, Contains("pp_bubble 0.75 s (30.0%)"));
  CHECK_THAT(s, Contains("dp_comm_exposed 0.25 s (10.0%)"));
  CHECK_THAT(s, Contains("width=\"520.80\""));
}

TEST_CASE("report::breakdown_svg: a zero-length step draws no segment and no NaN", "[report]") {
  std::string s = report::breakdown_svg(engine::StepResult{}, "empty");
  CHECK(xml_problem(s) == "");
  CHECK(count(s, "class=\"legend\"") == 0);
  CHECK_THAT(s, Contains(">total 0 s</text>"));
}

TEST_CASE("report::breakdown_svg: a simulated step has one legend entry per non-zero category", "[report]") {
  Fixture f = load();
  engine::Simulation sim = simulate(f, small_par(), small_train());
  std::size_t nonzero = 0;
  for (const Seconds& c : sim.result.breakdown) nonzero += c.value() > 0 ? 1 : 0;
  std::string s = report::breakdown_svg(sim.result, "step");
  CHECK(xml_problem(s) == "");
  CHECK(nonzero >= 2);  // compute and at least the pipeline bubble of PP 2
  CHECK(count(s, "class=\"legend\"") == nonzero);
  CHECK_THAT(s, Contains(">total " + report::svg::num(sim.result.step_time.value()) + " s</text>"));
}

TEST_CASE("report::timeline_svg: a row per stage, a rectangle per task", "[report]") {
  Fixture f = load();
  engine::Simulation sim = simulate(f, small_par(), small_train());
  std::size_t tasks = drawn_tasks(sim);
  REQUIRE(tasks > 0);
  SECTION("wide enough that no task is under a pixel: one rectangle each") {
    // At 1e6 px per step every task of 1 us or more is at least 1 px wide.
    SimTime shortest = sim.timeline.makespan;
    for (const auto& t : sim.timeline.tasks)
      if (t.end > t.start) shortest = std::min(shortest, t.end - t.start);
    double width = 1e6;
    REQUIRE(to_seconds(shortest).value() * width / to_seconds(sim.timeline.makespan).value() >= 1);
    std::string s = report::timeline_svg(sim, "tl", width);
    CHECK(xml_problem(s) == "");
    CHECK(count(s, "class=\"task\"") == tasks);
    CHECK(count(s, "class=\"stage-label\"") == 2);
    CHECK_THAT(s, Contains(">stage 0</text>") && Contains(">stage 1</text>"));
  }
  SECTION("at the default width: merged, never more rectangles than tasks") {
    std::string s = report::timeline_svg(sim, "tl");
    CHECK(xml_problem(s) == "");
    std::size_t rects = count(s, "class=\"task\"");
    CHECK(rects > 0);
    CHECK(rects <= tasks);
    CHECK(count(s, "class=\"stage-label\"") == 2);
    CHECK_THAT(s, Contains(">forward</text>") && Contains(">backward</text>") && Contains(">time (s)</text>"));
  }
}

TEST_CASE("report::timeline_svg: an empty simulation gives an empty, valid chart", "[report]") {
  std::string s = report::timeline_svg(engine::Simulation{}, "a<b & \"c\"");
  CHECK(xml_problem(s) == "");
  CHECK(count(s, "class=\"task\"") == 0);
  CHECK_THAT(s, Contains("<title>a&lt;b &amp; &quot;c&quot;</title>"));
  CHECK_THAT(s, Contains(">0 tasks as 0 rectangles</text>"));
}

TEST_CASE("report::timeline_svg: full recompute shows the recomputation of each backward pass", "[report]") {
  Fixture f = load();
  engine::Simulation sim = simulate(f, small_par(), small_train(spec::Recompute::full));
  std::size_t tasks = drawn_tasks(sim), recomputing = drawn_tasks(sim, true);
  REQUIRE(recomputing > 0);
  std::string s = report::timeline_svg(sim, "tl", 1e6);
  CHECK(xml_problem(s) == "");
  // Every recomputing backward pass is two rectangles: its recompute, then the rest.
  CHECK(count(s, "class=\"task\"") == tasks + recomputing);
  CHECK_THAT(s, Contains(">recompute</text>"));
}

TEST_CASE("report::timeline_svg: 16 stages x 1000 micro-batches stays small", "[report]") {
  Fixture f = load();
  spec::Parallel par{.pp = 16};
  spec::Training train{.global_batch = 1000, .seq_len = 2048};
  engine::Simulation sim = simulate(f, par, train);
  std::size_t tasks = drawn_tasks(sim);
  REQUIRE(tasks > 32000);  // 2 passes x 1000 micro-batches x 16 stages, plus sends
  std::string s = report::timeline_svg(sim, "big");
  CHECK(xml_problem(s) == "");
  std::size_t rects = count(s, "class=\"task\"");
  CHECK(rects > 0);
  CHECK(rects * 4 < tasks);
  CHECK(s.size() < 3'000'000);
  CHECK(count(s, "class=\"stage-label\"") == 16);
}

TEST_CASE("report::pareto_svg: a hand-made plan", "[report]") {
  plan::Plan p;
  // (GiB, s): (20, 1) and its twin are on the front (none smaller is as fast), (10, 2) too (the
  // smallest); (15, 3) is beaten by (10, 2) on both; (25, 1) is beaten by (20, 1) on memory.
  p.ranked = {result(20, 1, 1), result(20, 1, 2), result(10, 2, 4), result(15, 3, 8), result(25, 1, 8)};
  std::string s = report::pareto_svg(p, "front");
  CHECK(xml_problem(s) == "");
  CHECK(count(s, "class=\"pareto\"") == 3);
  CHECK(count(s, "class=\"config\"") == 2);
  CHECK_THAT(s, Contains(">#1 tp 1 pp 1 dp 8 cp 1 ep 1 vp 1 mbs 1 zero 0 sp off recompute none</text>"));
  CHECK_THAT(s, Contains("5 configurations, 3 Pareto-optimal"));
}

TEST_CASE("report::pareto_svg: a single config and an empty plan", "[report]") {
  plan::Plan one;
  one.ranked = {result(30, 0.5, 2)};
  std::string s = report::pareto_svg(one, "one");
  CHECK(xml_problem(s) == "");
  CHECK(count(s, "class=\"pareto\"") == 1);
  std::string e = report::pareto_svg(plan::Plan{}, "none");
  CHECK(xml_problem(e) == "");
  CHECK_THAT(e, Contains(">no configuration fits</text>"));
  CHECK(count(e, "<circle") == 0);
}

TEST_CASE("report::pareto_svg and plan_html: a planned search", "[report]") {
  Fixture f = load();
  plan::Request r{&f.model, &f.cluster, &f.cal, f.software, 16, small_train()};
  r.max_mbs = 2;
  plan::Options o{.threads = 2};
  plan::Plan p = plan::plan(r, o);
  REQUIRE(p.ranked.size() > 1);
  // The front by its definition, pair by pair.
  std::size_t front = 0;
  for (const plan::Result& a : p.ranked) {
    bool dominated = false;
    for (const plan::Result& b : p.ranked) {
      bool le = b.step.step_time <= a.step.step_time && b.peak_memory <= a.peak_memory;
      dominated |= le && (b.step.step_time < a.step.step_time || b.peak_memory < a.peak_memory);
    }
    front += dominated ? 0 : 1;
  }
  std::string s = report::pareto_svg(p, "front");
  CHECK(xml_problem(s) == "");
  CHECK(count(s, "class=\"pareto\"") == front);
  const plan::Result& best = p.ranked.front();
  const spec::Parallel& q = best.config.par;
  std::string layout = "tp " + std::to_string(q.tp) + " pp " + std::to_string(q.pp) + " dp " + std::to_string(q.dp);
  CHECK_THAT(s, Contains(">#1 " + layout));
  std::string page = report::plan_html(r, p, o, calibrate::Uncertainty{.missing = "no residuals"}, 5);
  CHECK(xml_problem(page) == "");
  CHECK(count(page, "<tr") == 1 + std::min<std::size_t>(5, p.ranked.size()));
  CHECK(count(page, "<svg") == 1);
  CHECK_THAT(page, Contains(layout));
}

TEST_CASE("report::plan_html: an empty plan says no configuration fits", "[report]") {
  Fixture f = load();
  plan::Request r{&f.model, &f.cluster, &f.cal, f.software, 16, small_train()};
  plan::Plan p;
  p.space.considered = 12;
  p.space.pruned["does not fit in memory"] = 12;
  std::string page = report::plan_html(r, p, plan::Options{}, calibrate::Uncertainty{}, 10);
  CHECK(xml_problem(page) == "");
  CHECK_THAT(page, Contains(">no configuration fits</p>"));
  CHECK_THAT(page, Contains("<li>does not fit in memory: 12</li>"));
  CHECK(count(page, "<svg") == 0);
}

TEST_CASE("report::simulate_html: one self-contained page with the key numbers and both charts", "[report]") {
  Fixture f = load();
  f.model.name = "a<b & \"c\" 'd'";
  spec::Parallel par = small_par();
  spec::Training train = small_train();
  engine::Simulation sim = simulate(f, par, train);
  report::JobView job{&f.model, &f.cluster, f.cal.name, 16, par, train, f.software, "nemo@24.11", 0, {"x < y"}};
  auto mem = cost::estimate_memory(f.model, f.cluster, par, train, f.software);
  std::string page = report::simulate_html(job, sim, mem, calibrate::Uncertainty{.missing = "no residuals"});
  CHECK(xml_problem(page) == "");
  CHECK_THAT(page, Catch::StartsWith("<!DOCTYPE html>"));
  CHECK(count(page, "<svg") == 2);
  CHECK_THAT(page, Contains("a&lt;b &amp; &quot;c&quot; &#39;d&#39;"));
  CHECK_THAT(page, !Contains("a<b"));
  CHECK_THAT(page, Contains("note: x &lt; y"));
  CHECK_THAT(page, Contains(">" + report::svg::num(sim.result.step_time.value()) + " s</b>"));
  CHECK_THAT(page, Contains("MFU") && Contains("tokens/s") && Contains("peak memory per GPU"));
  for (const char* external : {"<script", "src=", "href=", "url(", "@import"}) CHECK(count(page, external) == 0);
  CHECK(page == report::simulate_html(job, sim, mem, calibrate::Uncertainty{.missing = "no residuals"}));
}

TEST_CASE("report::svg: titles are escaped, numbers are finite and locale-free", "[report]") {
  engine::StepResult r;
  std::string s = report::breakdown_svg(r, "a<b & \"c\"");
  CHECK(xml_problem(s) == "");
  CHECK_THAT(s, Contains("<title>a&lt;b &amp; &quot;c&quot;</title>"));
  CHECK(report::svg::num(std::nan("")) == "0");
  CHECK(report::svg::num(1.0 / 3) == "0.3333");
  CHECK(report::svg::fixed_text(-0.001, 2) == "0.00");
  // (1 - 0) / 5 = 0.2 a tick: 0, 0.2, ... 1.
  std::string labels;
  for (double t : report::svg::ticks(0, 1, 5)) labels += report::svg::num(t) + " ";
  CHECK(labels == "0 0.2 0.4 0.6 0.8 1 ");
}

TEST_CASE("report::svg::pack_row: sub-pixel tasks merge, wide ones stand alone", "[report]") {
  using report::svg::Item;
  using report::svg::pack_row;
  // Three 0.5 px tasks of kind 0 back to back: one run of 1.5 px, fully busy; then a 3 px task.
  auto runs = pack_row({{0, 0.5, 0}, {0.5, 1.0, 0}, {1.0, 1.5, 0}, {2, 5, 1}});
  REQUIRE(runs.size() == 2);
  CHECK(runs[0].count == 3);
  CHECK(runs[0].x1 == 1.5);
  CHECK(runs[0].busy_share() == 1);
  CHECK(runs[1].count == 1);
  CHECK(runs[1].kind == 1);
  // Alternating kinds: one run, coloured by the busiest (kind 1: 0.5 px against 0.3 px each), idle
  // in its 0.5 px gap (1.1 px busy over 1.6 px).
  runs = pack_row({{0, 0.3, 0}, {0.8, 1.3, 1}, {1.3, 1.6, 2}});
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].kind == 1);
  CHECK_THAT(runs[0].busy_share(), Catch::Matchers::WithinRel(1.1 / 1.6, 1e-12));
  // A phase of one kind 3 px long keeps its own run when another kind follows; a gap of 3 px or
  // more starts a new run.
  std::vector<Item> phase;
  for (int i = 0; i < 6; ++i) phase.push_back({0.5 * i, 0.5 * i + 0.5, 0});
  phase.push_back({3, 3.5, 1});
  phase.push_back({7, 7.5, 1});
  runs = pack_row(phase);
  REQUIRE(runs.size() == 3);
  CHECK(runs[0].count == 6);
  CHECK(runs[1].kind == 1);
  CHECK(runs[2].x0 == 7);
}

TEST_CASE("report::svg::log_ticks: 1-2-5 per decade, or decades when that is too many", "[report]") {
  auto text = [](const std::vector<double>& v) {
    std::string out;
    for (double t : v) out += report::svg::num(t) + " ";
    return out;
  };
  CHECK(text(report::svg::log_ticks(1, 300, 10)) == "1 2 5 10 20 50 100 200 ");
  CHECK(text(report::svg::log_ticks(1e-3, 1e3, 6)) == "0.001 0.01 0.1 1 10 100 1000 ");
}
