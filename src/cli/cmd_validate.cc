// `dtsim validate FILE`: predicted vs measured step time of published (or your own) runs.
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "core/errors.h"
#include "cost/memory.h"
#include "engine/analytical.h"
#include "engine/simulate.h"
#include "report/simulate_report.h"
#include "report/validate_report.h"
#include "spec/job_rules.h"
#include "spec/load.h"
#include "spec/validation_file.h"

namespace dtsim::cli {
namespace {

struct ValidateArgs {
  std::string file;
  std::string recipes;
  bool no_recipes = false;
  bool json = false;
  bool verbose = false;
};

std::string layout(const spec::Parallel& p, const spec::Training& t) {
  auto n = [](std::int64_t v) { return std::to_string(v); };
  return "tp " + n(p.tp) + " pp " + n(p.pp) + " dp " + n(p.dp) + " cp " + n(p.cp) + " ep " + n(p.ep) + " vp " +
         n(p.vp) + " zero " + std::to_string(p.zero_stage) + (p.sequence_parallel ? " sp" : "") + " mbs " +
         n(t.micro_batch) + " gbs " + n(t.global_batch) + " seq " + n(t.seq_len) + " " +
         spec::to_string(t.precision) + " recompute " + spec::to_string(t.recompute);
}

// Least recomputation that fits, as the README's rule for recompute: null says.
void pick_recompute(spec::ResolvedCase& rc, const spec::Cluster& c, spec::AttentionKernel attn) {
  for (auto r : {spec::Recompute::none, spec::Recompute::selective, spec::Recompute::full}) {
    rc.train.recompute = r;
    if (cost::estimate_memory(rc.model, c, rc.par, rc.train, attn).fits()) break;
  }
  rc.assumptions.push_back(std::string("recompute -> ") + spec::to_string(rc.train.recompute));
}

report::CaseOutcome run_case(const spec::ValidationCase& vc, const std::string& file) {
  report::CaseOutcome out{.id = vc.id, .tier = vc.tier, .measured_s = vc.measured_s};
  try {
    spec::ResolvedCase rc = spec::resolve_case(vc, file);
    spec::Cluster cluster = spec::load_cluster(vc.cluster, file + ":" + vc.pointer + "/cluster");
    if (cluster.gpus_per_node != vc.gpus_per_node)
      throw SpecError(file + ":" + vc.pointer + "/gpus_per_node", "expected " + std::to_string(cluster.gpus_per_node) +
                                                                      " (the " + cluster.name + " preset), got " +
                                                                      std::to_string(vc.gpus_per_node));
    spec::Calibration cal = spec::load_calibration(cluster.calibration, file + ":" + vc.pointer + "/cluster");
    rc.train.grad_dtype = cal.software.fp32_grads ? spec::Dtype::fp32
                          : rc.train.precision == spec::Dtype::fp16 ? spec::Dtype::fp16 : spec::Dtype::bf16;
    if (rc.auto_recompute) pick_recompute(rc, cluster, cal.software.attention);
    spec::FieldNamer namer = [&](const std::string& f) {
      std::string section = (f == "gbs" || f == "seq" || f == "precision" || f == "mbs") ? "/training/" : "/parallel/";
      return file + ":" + vc.pointer + section + f;
    };
    spec::check_job(rc.model, cluster, vc.gpus, rc.par, rc.train, namer);
    out.assumptions = rc.assumptions;
    out.layout = layout(rc.par, rc.train);
    auto mem = cost::estimate_memory(rc.model, cluster, rc.par, rc.train, cal.software.attention);
    out.peak_gib = to_gib(mem.peak().total());
    out.fits = mem.fits();
    if (!out.fits) out.assumptions.push_back("predicted memory exceeds capacity; simulated anyway");
    schedule::StepSpec s{&rc.model, &cluster, rc.par, rc.train, &cal, cal.software};
    engine::AnalyticalNetwork net(cluster, rc.par, cal.collectives);
    engine::StepResult r = engine::simulate_step(s, net).result;
    out.predicted_s = r.step_time.value();
    if (r.pace > 1)
      out.assumptions.push_back(report::pace_text(r.pace, vc.gpus, cal.compute.speed_spread, cal.name));
  } catch (const SpecError& e) {
    out.failure = e.what();
  }
  return out;
}

}  // namespace

void add_validate(CLI::App& app, Action& action) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* v = app.add_subcommand("validate", "Predicted vs measured step time of dtsim-validation-cases/1 runs");
  v->add_option("file", args->file, "A dtsim-validation-cases/1 JSON file")->required();
  v->add_flag("--json", args->json, "Print one JSON object");
  v->add_flag("--verbose", args->verbose, "List each case's layout and assumptions");
  v->add_option("--recipes", args->recipes,
                "A dtsim-validation-recipes/1 file: sourced facts for fields the cases leave null "
                "(default: calibration/validation-recipes.json)");
  v->add_flag("--no-recipes", args->no_recipes, "Fill nulls by the schema's rules only");
  v->callback([args, &action] {
    action = [args] {
      spec::ValidationFile f = spec::load_validation_file(args->file);
      std::string recipes = args->recipes;
      if (recipes.empty() && !args->no_recipes) recipes = spec::data_dir() + "/calibration/validation-recipes.json";
      if (!recipes.empty()) {
        std::vector<std::string> unused = spec::apply_recipes(f, spec::load_recipes_file(recipes));
        std::size_t used = 0;
        for (const auto& c : f.cases) used += c.recipe_notes.empty() ? 0 : 1;
        // JSON output carries the same facts in each case's "assumptions".
        if (used > 0 && !args->json)
          std::cerr << "note: " << used << " case(s) take null fields from " << recipes
                    << " (--verbose lists them; --no-recipes skips)\n";
        if (!args->recipes.empty())
          for (const std::string& id : unused)
            std::cerr << "note: " << recipes << ": no case " << id << " in " << args->file << "; recipe unused\n";
      }
      std::vector<report::CaseOutcome> outcomes;
      for (const auto& c : f.cases) outcomes.push_back(run_case(c, args->file));
      std::cout << report::validate_report(outcomes, args->json, args->verbose);
      return 0;
    };
  });
}

}  // namespace dtsim::cli
