// `dtsim validate FILE...`: predicted vs measured step time of published (or your own) runs.
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "calibrate/cases.h"
#include "calibrate/residuals.h"
#include "cli/commands.h"
#include "network/backend.h"
#include "core/errors.h"
#include "report/validate_report.h"
#include "spec/load.h"
#include "spec/validation_file.h"

namespace dtsim::cli {
namespace {

struct ValidateArgs {
  std::vector<std::string> files;
  std::vector<std::string> recipes;
  std::vector<std::string> only;  ///< --case ids; empty: every case
  std::string calibration;
  std::string residuals;
  std::string network = "analytical";
  std::string engine = "longest-path";
  bool no_recipes = false;
  bool json = false;
  bool verbose = false;
  bool unstated = false;
  bool kernels = false;
};

// The command that produced the residuals, without date or paths of the binary: what a reader
// runs to regenerate them.
std::string provenance(const ValidateArgs& a) {
  std::string s = "dtsim validate";
  for (const std::string& f : a.files) s += " " + f;
  for (const std::string& r : a.recipes) s += " --recipes " + r;
  if (a.no_recipes) s += " --no-recipes";
  if (!a.calibration.empty()) s += " --calibration " + a.calibration;
  for (const std::string& id : a.only) s += " --case " + id;
  return s;
}

// Every recipes file applies to every validation file; an entry is unused only when no file has
// its case.
void apply_all_recipes(std::vector<spec::ValidationFile>& files, const std::vector<std::string>& recipes,
                              bool report_unused) {
  for (const std::string& path : recipes) {
    spec::RecipesFile r = spec::load_recipes_file(path);
    std::map<std::string, std::size_t> misses;
    for (spec::ValidationFile& f : files)
      for (const std::string& id : spec::apply_recipes(f, r)) ++misses[id];
    if (report_unused)
      for (const auto& [id, n] : misses)
        if (n == files.size()) std::cerr << "note: " << path << ": no case " << id << " in the files validated; recipe unused\n";
  }
}

// How many cases took a fact from a recipes file.
std::size_t cases_with_recipes(const std::vector<spec::ValidationFile>& files) {
  std::size_t used = 0;
  for (const spec::ValidationFile& f : files)
    for (const auto& c : f.cases) used += c.recipe_notes.empty() ? 0 : 1;
  return used;
}

// Case ids name runs in the residuals and the report: one per run across the files.
void check_unique_ids(const std::vector<spec::ValidationFile>& files) {
  std::map<std::string, std::string> seen;
  for (const spec::ValidationFile& f : files)
    for (const auto& c : f.cases) {
      auto [it, fresh] = seen.emplace(c.id, f.path);
      if (!fresh)
        throw SpecError(f.path + ":" + c.pointer + "/id",
                        "expected an id no other validated case has, got \"" + c.id + "\" (also in " + it->second + ")");
    }
}

// Keeps the cases `ids` names (all when empty); an id no file has is an error, not an empty report.
void keep_cases(std::vector<spec::ValidationFile>& files, const std::vector<std::string>& ids) {
  if (ids.empty()) return;
  std::set<std::string> wanted(ids.begin(), ids.end()), found;
  for (spec::ValidationFile& f : files)
    std::erase_if(f.cases, [&](const spec::ValidationCase& c) {
      bool keep = wanted.count(c.id) > 0;
      if (keep) found.insert(c.id);
      return !keep;
    });
  for (const std::string& id : ids)
    if (!found.count(id)) throw SpecError("--case", "expected the id of a case in the files validated, got \"" + id + "\"");
}

void write_residuals(const ValidateArgs& a, const std::vector<calibrate::PreparedCase>& prepared,
                     const std::vector<calibrate::CaseOutcome>& outcomes) {
  spec::write_text_file("--residuals", a.residuals,
                        spec::residuals_file_text(calibrate::residuals_file(prepared, outcomes, provenance(a))));
}

}  // namespace

void add_validate(CLI::App& app, Action& action) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* v = app.add_subcommand("validate", "Predicted vs measured step time of dtsim-validation-cases/1 runs");
  v->add_option("files", args->files, "dtsim-validation-cases/1 JSON files (one report, one residuals file)")->required();
  v->add_flag("--json", args->json, "Print one JSON object");
  v->add_flag("--verbose", args->verbose, "List each case's layout and assumptions");
  v->add_flag("--unstated", args->unstated,
              "Also simulate each case with every other value of a micro-batch or recompute its source leaves "
              "null (micro-batches: powers of two up to 16 dividing the sequences per replica), and say whether "
              "the measured step lies within the range they span");
  v->add_option("--network", args->network, "analytical|simgrid: the network backend every case runs on");
  v->add_option("--engine", args->engine,
                "longest-path|events: the engine every case runs on (events with --network simgrid: each case's "
                "step replayed transfer by transfer)");
  v->add_option("--recipes", args->recipes,
                "A dtsim-validation-recipes/1 file: sourced facts for fields the cases leave null, applied to every "
                "file (repeatable; default: calibration/validation-recipes.json)");
  v->add_flag("--no-recipes", args->no_recipes, "Fill nulls by the schema's rules only");
  v->add_option("--case", args->only, "Validate only the case with this id (repeatable)");
  v->add_flag("--kernels", args->kernels,
              "Also list one layer's kernels on one rank of each case validated, as simulate --kernels does "
              "(with --json: a \"kernels\" member per case)");
  v->add_option("--calibration", args->calibration,
                "Simulate every case with this profile (preset or file, e.g. from dtsim calibrate) instead of "
                "its cluster's");
  v->add_option("--residuals", args->residuals,
                "Also write each predicted case's error to this dtsim-residuals/1 file (what simulate and plan "
                "read for their intervals)");
  v->callback([args, &action] {
    action = [args] {
      std::vector<spec::ValidationFile> files;
      for (const std::string& path : args->files) files.push_back(spec::load_validation_file(path));
      check_unique_ids(files);
      std::vector<std::string> recipes = args->recipes;
      if (recipes.empty() && !args->no_recipes) recipes.push_back(spec::data_dir() + "/calibration/validation-recipes.json");
      if (!args->recipes.empty() && args->no_recipes)
        throw SpecError("--no-recipes", "expected it without --recipes, got both");
      apply_all_recipes(files, recipes, !args->recipes.empty());
      keep_cases(files, args->only);
      std::size_t used = cases_with_recipes(files);
      // JSON output carries the same facts in each case's "assumptions".
      if (used > 0 && !args->json) {
        std::string names;
        for (const std::string& r : recipes) names += (names.empty() ? "" : ", ") + r;
        std::cerr << "note: " << used << " case(s) take null fields from " << names
                  << " (--verbose lists them; --no-recipes skips)\n";
      }
      std::optional<spec::Calibration> profile;
      if (!args->calibration.empty()) profile = spec::load_calibration(args->calibration);
      // An outcome's kernel list (--kernels) points into its prepared case's cluster and profile:
      // `prepared` must not reallocate while the outcomes live.
      std::size_t count = 0;
      for (const spec::ValidationFile& f : files) count += f.cases.size();
      std::vector<calibrate::PreparedCase> prepared;
      prepared.reserve(count);
      std::vector<report::CaseOutcome> outcomes;
      network::Kind kind = network::parse_kind(args->network);
      network::Engine eng = network::parse_engine(args->engine);
      for (const spec::ValidationFile& f : files)
        for (const auto& c : f.cases) {
          prepared.push_back(calibrate::prepare_case(c, f.path, profile));
          outcomes.push_back(calibrate::simulate_case(prepared.back(), kind, eng));
          if (args->kernels) outcomes.back().kernels = calibrate::case_kernels(prepared.back(), prepared.back().calibration);
          if (args->unstated)
            outcomes.back().unstated = calibrate::unstated_alternatives(c, f.path, prepared.back(), profile, kind, eng);
        }
      if (!args->residuals.empty()) write_residuals(*args, prepared, outcomes);
      std::cout << report::validate_report(outcomes, args->json, args->verbose);
      return 0;
    };
  });
}

}  // namespace dtsim::cli
