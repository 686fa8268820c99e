#include "calibrate/cases.h"

#include <algorithm>
#include <cmath>

#include "calibrate/stats.h"
#include "core/errors.h"
#include "cost/compute.h"
#include "cost/layer_shape.h"
#include "cost/memory.h"
#include "engine/analytical.h"
#include "engine/simulate.h"
#include "network/backend.h"
#include "spec/job_rules.h"
#include "spec/load.h"

namespace dtsim::calibrate {
namespace {

std::string layout(const spec::Parallel& p, const spec::Training& t) {
  auto n = [](std::int64_t v) { return std::to_string(v); };
  return "tp " + n(p.tp) + " pp " + n(p.pp) + " dp " + n(p.dp) + " cp " + n(p.cp) + " ep " + n(p.ep) + (p.ep > 1 ? " etp " + n(p.expert_tp()) : "") + " vp " +
         n(p.vp) + " zero " + std::to_string(p.zero_stage) + (p.sequence_parallel ? " sp" : "") + " mbs " +
         n(t.micro_batch) + " gbs " + n(t.global_batch) + " seq " + n(t.seq_len) + " " +
         spec::to_string(t.precision) + " recompute " + cost::recompute_text(t);
}

// Least recomputation that fits, as the README's rule for recompute: null says.
void pick_recompute(spec::ResolvedCase& rc, const spec::Cluster& c, const spec::Software& sw) {
  rc.train = cost::least_recompute_that_fits(rc.model, c, rc.par, rc.train, sw);
  rc.assumptions.push_back("recompute -> " + cost::recompute_text(rc.train));
}

// The stack a case names; a case naming none runs on the default stack, said so.
spec::Stack case_stack(const spec::ValidationCase& vc, const std::string& file, std::vector<std::string>& notes) {
  const spec::FrameworkRef& f = vc.framework;
  if (!f.name) {
    notes.push_back(std::string("framework null -> ") + spec::kDefaultFramework + " (latest)");
    return spec::load_stack(spec::kDefaultFramework);
  }
  std::optional<std::string> file_name = spec::stack_file_for(*f.name);
  if (!file_name) {
    notes.push_back("framework " + *f.name + " has no stack profile (calibration/stacks/): simulated as " +
                    spec::kDefaultFramework + " (latest)");
    return spec::load_stack(spec::kDefaultFramework);
  }
  const std::string& name = *file_name;
  spec::Stack s = spec::find_stack(name, f.version, f.date, file + ":" + vc.pointer + "/framework/name");
  notes.push_back("stack " + s.label() + " (framework " + *f.name + (f.version ? " " + *f.version : "") +
                  (f.date ? ", " + *f.date : "") + (name != *f.name ? "; " + name + " lists it as an alias" : "") + ")");
  return s;
}

void prepare(PreparedCase& p, const spec::ValidationCase& vc, const std::string& file,
             const std::optional<spec::Calibration>& profile, const std::optional<spec::Stack>& stack) {
  std::vector<std::string> stack_notes;
  p.stack = stack ? *stack : case_stack(vc, file, stack_notes);
  p.outcome.stack = p.stack.label();
  if (stack) stack_notes.push_back("stack " + p.stack.label() + " (--framework)");
  p.resolved = spec::resolve_case(vc, file, p.stack);
  p.resolved.assumptions.insert(p.resolved.assumptions.begin(), stack_notes.begin(), stack_notes.end());
  spec::ResolvedCase& rc = p.resolved;
  p.cluster = spec::load_cluster(vc.cluster, file + ":" + vc.pointer + "/cluster");
  if (vc.gpus_per_node == 0)
    p.resolved.assumptions.push_back("gpus_per_node null -> " + std::to_string(p.cluster.gpus_per_node) + " (" +
                                     p.cluster.name + ")");
  else if (p.cluster.gpus_per_node != vc.gpus_per_node)
    throw SpecError(file + ":" + vc.pointer + "/gpus_per_node", "expected " + std::to_string(p.cluster.gpus_per_node) +
                                                                    " (the " + p.cluster.name + " preset), got " +
                                                                    std::to_string(vc.gpus_per_node));
  p.calibration = profile ? *profile : spec::load_calibration(p.cluster.calibration, file + ":" + vc.pointer + "/cluster");
  std::vector<std::string> recipe_notes;
  p.stack.software = spec::software_on(p.stack, p.cluster.gpu.name, rc.model.is_moe(), &recipe_notes,
                                       {.moe_dispatcher = rc.moe_dispatcher.has_value(), .attention = rc.attention.has_value()});
  rc.assumptions.insert(rc.assumptions.end(), recipe_notes.begin(), recipe_notes.end());
  if (rc.moe_dispatcher) p.stack.software.moe_dispatcher = *rc.moe_dispatcher;
  if (rc.moe_a2a_overlap) p.stack.software.moe_a2a_overlap = *rc.moe_a2a_overlap;
  if (rc.cuda_graphs) p.stack.software.cuda_graphs = *rc.cuda_graphs;
  if (rc.tp_overlap_rs) p.stack.software.tp_overlap_rs = *rc.tp_overlap_rs;
  if (rc.fp8_recipe) p.stack.software.fp8_recipe = *rc.fp8_recipe;
  if (rc.attention) p.stack.software.attention = *rc.attention;
  if (rc.compile.value_or(false)) spec::apply_compile(p.stack.software);
  if (rc.tp_comm_overlap) p.stack.software.tp_comm_overlap = *rc.tp_comm_overlap;
  spec::check_attention(p.stack.software.attention, p.calibration.compute, p.calibration.name,
                        file + ":" + vc.pointer + "/attention");
  const spec::Software& sw = p.stack.software;
  rc.train.grad_dtype = spec::main_grad_dtype(sw, rc.train.precision);
  rc.train.param_remainders = spec::param_remainders(sw, rc.train);
  if (rc.auto_recompute) pick_recompute(rc, p.cluster, sw);
  spec::FieldNamer namer = [&](const std::string& f) {
    std::string section = (f == "gbs" || f == "seq" || f == "precision" || f == "mbs") ? "/training/" : "/parallel/";
    return file + ":" + vc.pointer + section + f;
  };
  spec::check_job(rc.model, p.cluster, vc.gpus, rc.par, rc.train, namer);
  if (sw.mxfp8(rc.train.precision) && cost::fp8_needs_transpose(p.cluster.gpu))
    throw SpecError(file + ":" + vc.pointer + "/training/precision",
                    "expected a Blackwell cluster for an MXFP8 recipe (block-scaled tensor cores), got " +
                        p.cluster.gpu.name);
  p.outcome.assumptions = rc.assumptions;
  p.outcome.layout = layout(rc.par, rc.train);
  if (rc.model.is_moe() && !rc.train.moe_dropless()) {
    p.outcome.assumptions.push_back("moe token drop: every expert computes " +
                                    std::to_string(rc.train.moe_capacity_factor).substr(0, 4) +
                                    " x its balanced share (padded or dropped to capacity)");
  } else if (rc.model.is_moe() && rc.par.ep > 1) {
    cost::LayerShape sh = cost::layer_shape(rc.model, rc.par, rc.train);
    p.outcome.assumptions.push_back("moe routing balanced by force (as the published benchmarks run): the busiest of " +
                                    std::to_string(rc.par.ep) + " EP ranks gets x" +
                                    std::to_string(cost::moe_busiest_rank(rc.par.ep, sh.expert_tokens, 0)).substr(0, 5) +
                                    " the mean tokens");
  }
  auto mem = cost::estimate_memory(rc.model, p.cluster, rc.par, rc.train, sw);
  p.outcome.peak_gib = to_gib(mem.peak().total());
  p.outcome.fits = mem.fits();
  if (!p.outcome.fits) p.outcome.assumptions.push_back("predicted memory exceeds capacity; simulated anyway");
}

}  // namespace

namespace {

std::optional<double> signed_error_pct(const std::optional<double>& predicted_s, double measured_s) {
  if (!predicted_s) return std::nullopt;
  return (*predicted_s - measured_s) / measured_s * 100.0;
}

}  // namespace

std::optional<double> CaseOutcome::error_pct() const { return signed_error_pct(predicted_s, measured_s); }

std::optional<double> CaseOutcome::peak_error_pct() const {
  if (!measured_peak_gib) return std::nullopt;
  return signed_error_pct(peak_gib, *measured_peak_gib);
}

std::optional<double> CaseOutcome::error_pct(const Alternative& a) const {
  return signed_error_pct(a.predicted_s, measured_s);
}

namespace {

ErrorSummary summarize_errors(const std::vector<CaseOutcome>& cases,
                              std::optional<double> (CaseOutcome::*error)() const) {
  std::vector<double> errs;
  for (const CaseOutcome& c : cases)
    if (auto e = (c.*error)()) errs.push_back(std::fabs(*e));
  ErrorSummary s;
  s.n = errs.size();
  if (errs.empty()) return s;
  double sum = 0;
  for (double e : errs) sum += e;
  s.mape = sum / static_cast<double>(errs.size());
  s.median_abs_pct = median(errs);
  s.max_abs_pct = *std::max_element(errs.begin(), errs.end());
  return s;
}

}  // namespace

ErrorSummary summarize(const std::vector<CaseOutcome>& cases) {
  return summarize_errors(cases, &CaseOutcome::error_pct);
}

ErrorSummary summarize_peak(const std::vector<CaseOutcome>& cases) {
  return summarize_errors(cases, &CaseOutcome::peak_error_pct);
}

PreparedCase prepare_case(const spec::ValidationCase& vc, const std::string& file,
                          const std::optional<spec::Calibration>& profile, const std::optional<spec::Stack>& stack) {
  PreparedCase p;
  p.outcome = {.id = vc.id, .tier = vc.tier, .framework = vc.framework.name.value_or("(none)"),
               .measured_s = vc.measured_s, .measured_peak_gib = vc.measured_peak_gib};
  p.gpus = vc.gpus;
  p.outcome.gpus = vc.gpus;
  if (!vc.invalid.empty()) {  // the case could not even be read: reported with that reason
    p.outcome.failure = vc.invalid;
    return p;
  }
  try {
    prepare(p, vc, file, profile, stack);
  } catch (const SpecError& e) {
    p.outcome.failure = e.what();
  }
  return p;
}

CaseOutcome simulate_case(const PreparedCase& p, const spec::Calibration& cal) {
  engine::Workspace ws;
  return simulate_case(p, cal, ws);
}

CaseOutcome simulate_case(const PreparedCase& p, const spec::Calibration& cal, engine::Workspace& ws,
                          network::Kind kind, network::Engine eng) {
  CaseOutcome out = p.outcome;
  if (!p.runnable()) return out;
  const spec::ResolvedCase& rc = p.resolved;
  schedule::StepSpec s{&rc.model, &p.cluster, rc.par, rc.train, &cal, p.stack.software};
  engine::StepResult r;
  try {
    r = network::simulate(s, kind, eng, ws);
  } catch (const SpecError& e) {  // a step too large to replay: reported, not fatal
    out.failure = e.where() + ": " + e.message();
    return out;
  }
  out.predicted_s = r.step_time.value();
  out.breakdown_s.emplace();
  for (std::size_t c = 0; c < schedule::kCategories; ++c) (*out.breakdown_s)[c] = r.breakdown[c].value();
  out.pace = r.pace;
  out.speed_spread = cal.compute.speed_spread;
  out.profile = cal.name;
  return out;
}

std::optional<schedule::LayerKernels> case_kernels(const PreparedCase& p, const spec::Calibration& cal) {
  if (!p.runnable()) return std::nullopt;
  const spec::ResolvedCase& rc = p.resolved;
  return schedule::listed_kernels({&rc.model, &p.cluster, rc.par, rc.train, &cal, p.stack.software});
}

double estimate_case(const PreparedCase& p, const spec::Calibration& cal, engine::Workspace& ws) {
  const spec::ResolvedCase& rc = p.resolved;
  schedule::StepSpec s{&rc.model, &p.cluster, rc.par, rc.train, &cal, p.stack.software};
  engine::AnalyticalNetwork net(p.cluster, rc.par, cal.collectives);
  return engine::estimate_step(s, net, 0, ws).step_time.value();
}

CaseOutcome simulate_case(const PreparedCase& p, network::Kind net, network::Engine eng) {
  engine::Workspace ws;
  return simulate_case(p, p.calibration, ws, net, eng);
}

std::vector<Alternative> unstated_alternatives(const spec::ValidationCase& vc, const std::string& file,
                                               const PreparedCase& taken,
                                               const std::optional<spec::Calibration>& profile, network::Kind net,
                                               network::Engine eng) {
  std::vector<Alternative> out;
  if (!taken.runnable()) return out;
  auto run = [&](const spec::ValidationCase& alt, std::string field, std::string value) {
    PreparedCase p = prepare_case(alt, file, profile);
    if (!p.runnable()) return;  // a value the layout rules out (the interleaved schedule's micro-batch count)
    Alternative a{.field = std::move(field), .value = std::move(value)};
    CaseOutcome o = simulate_case(p, net, eng);
    a.predicted_s = o.predicted_s;
    a.fits = o.fits;
    a.failure = o.failure;
    out.push_back(std::move(a));
  };
  if (!vc.micro_batch && vc.dp > 0 && vc.global_batch % vc.dp == 0) {
    std::int64_t per_replica = vc.global_batch / vc.dp;
    for (std::int64_t mbs = 1; mbs <= 16 && mbs <= per_replica; mbs *= 2) {
      if (per_replica % mbs != 0 || mbs == taken.resolved.train.micro_batch) continue;
      spec::ValidationCase alt = vc;
      alt.micro_batch = mbs;
      run(alt, "micro_batch", std::to_string(mbs));
    }
  }
  if (!vc.recompute)
    for (spec::Recompute r : {spec::Recompute::none, spec::Recompute::selective, spec::Recompute::full}) {
      if (r == taken.resolved.train.recompute) continue;
      spec::ValidationCase alt = vc;
      alt.recompute = r;
      alt.recompute_modules.reset();  // selective: the stack's default modules
      run(alt, "recompute", spec::to_string(r));
    }
  return out;
}

}  // namespace dtsim::calibrate
