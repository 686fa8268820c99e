// `dtsim plan`: search the layout space for the fastest (or cheapest) configs that fit.
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <mutex>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "spec/json_reader.h"
#include "cli/job_flags.h"
#include "core/errors.h"
#include "engine/simulate.h"
#include "network/backend.h"
#include "plan/planner.h"
#include "report/html.h"
#include "report/plan_report.h"
#include "report/plan_shard.h"
#include "report/table.h"
#include "spec/load.h"

namespace dtsim::cli {
namespace {

struct PlanArgs {
  JobFlags job;
  std::size_t top = 10;
  bool csv = false;
  std::int64_t max_tp = 0, max_mbs = 16;
  double memory_margin_pct = 0;
  std::vector<std::string> fix;
  std::string objective = "time";
  double price = 0;
  unsigned threads = 0;
  std::string refine;  ///< "simgrid": re-rank the top configs under contention
  std::string engine = "longest-path";  ///< with --refine: per-kind factors, or the replay (events)
  std::string shard;                    ///< "I/N": evaluate one slice, print a dtsim-plan-shard/1 file
  bool no_timing = false;               ///< reports without wall time (byte-reproducible)
  std::vector<std::string> raw;         ///< the arguments as given, for a shard file (format flags aside)
  std::string html, svg;                ///< report files: the page, the Pareto plot alone
};

// --shard I/N: 0 <= I < N.
std::pair<std::int64_t, std::int64_t> parse_shard(const std::string& s) {
  auto slash = s.find('/');
  auto whole = [](const std::string& t) {
    return !t.empty() && t.size() <= 6 && std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (slash != std::string::npos && whole(s.substr(0, slash)) && whole(s.substr(slash + 1))) {
    std::int64_t i = std::stoll(s.substr(0, slash)), n = std::stoll(s.substr(slash + 1));
    if (n >= 1 && i < n) return {i, n};
  }
  throw SpecError("--shard", "expected I/N with 0 <= I < N (e.g. 3/16), got \"" + s + "\"");
}

// --refine simgrid: the top `k` configs again with the SimGrid backend (contention of every group
// of a kind at once), re-ranked by that step time; what moved is said.
struct Refined {
  std::size_t was = 0;  ///< 0-based rank in the analytical ranking
  double analytical_s = 0, simgrid_s = 0;
};

std::vector<Refined> refine(const plan::Request& r, const plan::Plan& p, std::size_t k, network::Engine eng) {
  std::vector<Refined> out;
  for (std::size_t i = 0; i < std::min(k, p.ranked.size()); ++i) {
    const plan::Candidate& c = p.ranked[i].config;
    schedule::StepSpec s{r.model, r.cluster, c.par, c.train, r.calibration, r.software};
    engine::Workspace ws;
    double t = network::simulate(s, network::Kind::simgrid, eng, ws).step_time.value();
    out.push_back({i, p.ranked[i].step.step_time.value(), t});
  }
  std::stable_sort(out.begin(), out.end(), [](const Refined& a, const Refined& b) { return a.simgrid_s < b.simgrid_s; });
  return out;
}

std::string layout_text(const plan::Candidate& c) {
  auto n = [](std::int64_t v) { return std::to_string(v); };
  const spec::Parallel& p = c.par;
  return "tp " + n(p.tp) + " pp " + n(p.pp) + " dp " + n(p.dp) + " cp " + n(p.cp) + " ep " + n(p.ep) + " vp " +
         n(p.vp) + " mbs " + n(c.train.micro_batch) + " zero " + std::to_string(p.zero_stage) + " sp " +
         (p.sequence_parallel ? "on" : "off") + " recompute " + spec::to_string(c.train.recompute);
}

// --fix key=value; keys as in the space (recompute and sp take names).
void parse_fix(const std::string& f, plan::Request& r) {
  auto eq = f.find('=');
  std::string key = f.substr(0, eq), val = eq == std::string::npos ? "" : f.substr(eq + 1);
  static const char* keys[] = {"tp", "pp", "dp", "cp", "ep", "etp", "vp", "mbs", "zero", "sp", "recompute"};
  if (eq == std::string::npos || std::find(std::begin(keys), std::end(keys), key) == std::end(keys))
    throw SpecError("--fix", "expected KEY=VALUE with KEY one of tp, pp, dp, cp, ep, etp, vp, mbs, zero, sp, recompute, got \"" + f + "\"");
  if (key == "recompute") {
    const char* names[] = {"none", "selective", "full"};
    auto it = std::find(std::begin(names), std::end(names), val);
    if (it == std::end(names)) throw SpecError("--fix", "expected recompute=none|selective|full, got \"" + f + "\"");
    r.fixed[key] = it - std::begin(names);
  } else if (key == "sp") {
    if (val != "on" && val != "off") throw SpecError("--fix", "expected sp=on|off, got \"" + f + "\"");
    r.fixed[key] = val == "on";
  } else {
    try {
      std::size_t used = 0;
      long long v = std::stoll(val, &used);
      if (used != val.size() || v < 0) throw std::invalid_argument("not a count");
      r.fixed[key] = v;
    } catch (const std::exception&) {
      throw SpecError("--fix", "expected " + key + "=N with N a non-negative integer, got \"" + f + "\"");
    }
  }
}

int run_plan(const PlanArgs& a, const std::vector<plan::Result>* merged = nullptr) {
  if (a.job.gpus == 0) throw SpecError("--gpus", "expected a GPU count, got none");
  spec::Model model = job_model(a.job);
  if (!a.job.json && a.shard.empty())
    for (const std::string& n : a.job.import_notes) std::cerr << "dtsim: note: " << n << "\n";
  spec::Cluster cluster = spec::load_cluster(a.job.cluster, "--cluster");
  spec::Calibration cal = resolve_calibration(a.job, cluster);
  spec::Stack stack = resolve_stack(a.job);
  spec::Software software = resolve_software(a.job, spec::software_on(stack, cluster.gpu.name, model.is_moe()));
  spec::check_attention(software.attention, cal.compute, cal.name, a.job.attention.empty() ? "--framework" : "--attention");
  plan::Request r{&model, &cluster, &cal, software, a.job.gpus, resolve_training(a.job, stack, software)};
  r.max_tp = a.max_tp;
  r.max_mbs = a.max_mbs;
  if (!(a.memory_margin_pct >= 0 && a.memory_margin_pct <= 90))
    throw SpecError("--memory-margin", "expected a percent from 0 to 90, got " + report::fixed(a.memory_margin_pct, 1));
  r.memory_margin = a.memory_margin_pct / 100.0;
  for (const std::string& f : a.fix) parse_fix(f, r);
  plan::Options o;
  o.threads = a.threads;
  if (a.objective == "cost") {
    if (a.price <= 0) throw SpecError("--price-per-gpu-hour", "expected a price > 0 for --objective cost, got none");
    o.objective = plan::Objective::cost_per_token;
    o.price_per_gpu_hour = a.price;
  } else if (a.objective != "time") {
    throw SpecError("--objective", "expected time or cost, got \"" + a.objective + "\"");
  }
  std::mutex io;
  if (isatty(STDERR_FILENO)) {
    o.progress = [&io](std::size_t done, std::size_t total) {
      std::lock_guard<std::mutex> lock(io);
      std::cerr << "\rsimulating " << done << "/" << total << (done == total ? "\n" : "") << std::flush;
    };
  }
  o.timed = !a.no_timing;
  if (!a.shard.empty()) {
    if (!a.refine.empty()) throw SpecError("--shard", "expected no --refine with it (refine the merged plan), got --refine");
    std::tie(o.shard, o.shards) = parse_shard(a.shard);
    plan::Plan part = plan::plan(r, o);
    std::cout << report::plan_shard_text({o.shard, o.shards, static_cast<std::int64_t>(part.space.candidates.size()),
                                          a.raw, part.ranked});
    return 0;
  }
  calibrate::Uncertainty u = job_uncertainty(a.job, cluster, stack.name, r.gpus, r.train.precision);
  plan::Plan p = merged ? plan::merge(r, *merged) : plan::plan(r, o);
  if (!a.html.empty()) spec::write_text_file("--html", a.html, report::plan_html(r, p, o, u, a.top));
  if (!a.svg.empty())
    spec::write_text_file("--svg", a.svg + "-pareto.svg",
                          report::pareto_svg(p, model.name + " on " + std::to_string(r.gpus) + " x " + cluster.gpu.name));
  auto fmt = a.job.json ? report::PlanFormat::json : a.csv ? report::PlanFormat::csv : report::PlanFormat::text;
  std::string text = report::plan_report(r, p, o, u, a.top, fmt);
  if (a.refine.empty()) {
    std::cout << text;
    return 0;
  }
  if (network::parse_kind(a.refine, "--refine") != network::Kind::simgrid)
    throw SpecError("--refine", "expected simgrid, got \"" + a.refine + "\"");
  if (fmt == report::PlanFormat::csv) throw SpecError("--refine", "expected text or --json output, got --csv");
  network::Engine eng = network::parse_engine(a.engine);
  bool replay = eng == network::Engine::events;
  std::vector<Refined> moved = refine(r, p, a.top, eng);
  if (fmt == report::PlanFormat::json) {
    nlohmann::json j = nlohmann::json::parse(text);
    j["refined"] = nlohmann::json::array();
    for (std::size_t i = 0; i < moved.size(); ++i)
      j["refined"].push_back({{"rank", i + 1}, {"was", moved[i].was + 1}, {"layout", layout_text(p.ranked[moved[i].was].config)},
                              {"step_time_s_analytical", moved[i].analytical_s},
                              {"step_time_s_simgrid", moved[i].simgrid_s}});
    j["network"] = "simgrid";
    j["engine"] = a.engine;
    std::cout << spec::json_text(j) << "\n";
    return 0;
  }
  report::Table t({"#", "was", "layout", "analytical s", "simgrid s", "change"});
  for (std::size_t i = 0; i < moved.size(); ++i)
    t.add({std::to_string(i + 1), "#" + std::to_string(moved[i].was + 1), layout_text(p.ranked[moved[i].was].config),
           report::fixed(moved[i].analytical_s, 3), report::fixed(moved[i].simgrid_s, 3),
           report::fixed(100 * (moved[i].simgrid_s / moved[i].analytical_s - 1), 1) + "%"});
  std::size_t changed = 0;
  for (std::size_t i = 0; i < moved.size(); ++i) changed += moved[i].was != i ? 1 : 0;
  std::cout << text << "\nrefined with simgrid ("
            << (replay ? "every transfer of the step replayed as flows" : "every group of a kind at once on the cluster's links")
            << "): "
            << (changed == 0 ? std::string("the order holds") : std::to_string(changed) + " of " +
                                                                 std::to_string(moved.size()) + " configs moved")
            << "\n" << t.render();
  return 0;
}

}  // namespace

namespace {

// The plan flags on a new `plan` subcommand of `app`, parsed into `a`.
CLI::App* plan_flags(CLI::App& app, const std::shared_ptr<PlanArgs>& a) {
  CLI::App* p = app.add_subcommand("plan", "Find the fastest layouts that fit, and explain the choice");
  add_job_flags(*p, a->job, false);
  add_residuals_flag(*p, a->job);
  p->add_option("--top", a->top, "Configs to print")->check(CLI::Range(1, 100000));
  p->add_flag("--csv", a->csv, "Print CSV");
  p->add_option("--max-tp", a->max_tp, "Largest TP degree (default: GPUs per node)")->check(CLI::Range(1, 1 << 16));
  p->add_option("--max-mbs", a->max_mbs, "Largest micro-batch tried (powers of 2)")->check(CLI::Range(1, 1 << 16));
  p->add_option("--memory-margin", a->memory_margin_pct,
                "Percent of each GPU's memory kept free: layouts whose predicted peak exceeds the rest do not fit "
                "(default 0; the memory model's error on published runs: README, Accuracy today)");
  p->add_option("--fix", a->fix, "Fix a field, e.g. --fix tp=8 --fix recompute=selective (repeatable)");
  p->add_option("--objective", a->objective, "time (step time) or cost (dollars per million tokens)");
  p->add_option("--price-per-gpu-hour", a->price, "Dollars per GPU-hour for --objective cost");
  p->add_option("--threads", a->threads, "Worker threads (default: all cores)")->check(CLI::Range(1, 1024));
  p->add_option("--refine", a->refine,
                "simgrid: simulate the --top configs again with the SimGrid network backend and re-rank them");
  p->add_option("--engine", a->engine,
                "With --refine simgrid: longest-path (per-kind contention factors) or events (each config's step "
                "replayed transfer by transfer on SimGrid)");
  p->add_option("--shard", a->shard,
                "I/N: evaluate candidates i with i mod N = I only and print a dtsim-plan-shard/1 file for dtsim merge");
  p->add_flag("--no-timing", a->no_timing, "Leave wall time out of the report (reproducible byte for byte)");
  p->add_option("--html", a->html, "Write a self-contained HTML report (top configs, Pareto front) to FILE");
  p->add_option("--svg", a->svg, "Write the Pareto plot alone to PREFIX-pareto.svg");
  return p;
}

// The arguments given to `p`, as words, without the output format and --shard.
std::vector<std::string> given_args(const CLI::App& p) {
  std::vector<std::string> out;
  for (const CLI::Option* o : p.get_options()) {
    std::string name = o->get_name();
    if (o->count() == 0 || name == "--help" || name == "--json" || name == "--csv" || name == "--shard") continue;
    if (o->get_expected_max() == 0) {
      out.push_back(name);
      continue;
    }
    for (const std::string& v : o->results()) out.insert(out.end(), {name, v});
  }
  return out;
}

// dtsim merge: every shard of one plan, checked to be exactly that, then the plan report.
int run_merge(const std::vector<std::string>& files, bool json, bool csv) {
  std::vector<report::PlanShard> shards;
  for (const std::string& f : files) {
    spec::require_path("FILE", f);
    shards.push_back(report::parse_plan_shard(spec::read_spec_text(f), f));
  }
  const report::PlanShard& first = shards.front();
  std::vector<int> seen(static_cast<std::size_t>(first.shards), 0);
  std::vector<plan::Result> all;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const report::PlanShard& s = shards[i];
    if (s.args != first.args || s.shards != first.shards || s.candidates != first.candidates)
      throw SpecError(files[i], "expected a shard of the same plan as " + files.front() + " (same arguments, " +
                                    std::to_string(first.shards) + " shards), got another");
    if (seen[static_cast<std::size_t>(s.shard)]++ > 0)
      throw SpecError(files[i], "expected each shard once, got shard " + std::to_string(s.shard) + " twice");
    all.insert(all.end(), s.results.begin(), s.results.end());
  }
  for (std::size_t k = 0; k < seen.size(); ++k)
    if (seen[k] == 0)
      throw SpecError("FILE", "expected all " + std::to_string(first.shards) + " shards, got none for shard " +
                                  std::to_string(k) + "/" + std::to_string(first.shards));
  auto a = std::make_shared<PlanArgs>();
  CLI::App app{"dtsim"};
  CLI::App* p = plan_flags(app, a);
  std::vector<std::string> args{"plan"};
  args.insert(args.end(), first.args.begin(), first.args.end());
  if (json) args.emplace_back("--json");
  if (csv) args.emplace_back("--csv");
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  app.parse(reversed);
  apply_imports(*p, a->job);
  return run_plan(*a, &all);
}

}  // namespace

void add_plan(CLI::App& app, Action& action) {
  auto a = std::make_shared<PlanArgs>();
  CLI::App* p = plan_flags(app, a);
  p->callback([a, p, &action] {
    apply_imports(*p, a->job);
    a->raw = given_args(*p);
    action = [a] {
      if (a->refine.empty() && a->engine != "longest-path")
        throw SpecError("--engine", "expected --refine simgrid with it (plan ranks with the longest-path pass)");
      return run_plan(*a);
    };
  });
}

void add_merge(CLI::App& app, Action& action) {
  struct MergeArgs {
    std::vector<std::string> files;
    bool json = false, csv = false;
  };
  auto a = std::make_shared<MergeArgs>();
  CLI::App* m = app.add_subcommand("merge", "Combine the dtsim-plan-shard/1 files of plan --shard I/N into the plan");
  m->add_option("files", a->files, "Every shard's file, in any order")->required();
  m->add_flag("--json", a->json, "Print one JSON object");
  m->add_flag("--csv", a->csv, "Print CSV");
  m->callback([a, &action] { action = [a] { return run_merge(a->files, a->json, a->csv); }; });
}

}  // namespace dtsim::cli
