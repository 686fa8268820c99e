#include "calibrate/residuals.h"

#include <algorithm>
#include <filesystem>
#include <span>
#include <stdexcept>

namespace dtsim::calibrate {
namespace {

constexpr Constraint kRelaxOrder[] = {Constraint::scale, Constraint::framework, Constraint::precision,
                                      Constraint::gpu};

bool relaxes(const std::vector<Constraint>& relaxed, Constraint c) {
  return std::find(relaxed.begin(), relaxed.end(), c) != relaxed.end();
}

bool same_scale(std::int64_t run_gpus, std::int64_t job_gpus) {
  return run_gpus * kScaleFactor >= job_gpus && run_gpus <= job_gpus * kScaleFactor;
}

std::vector<const spec::ResidualCase*> members(const std::vector<spec::ResidualCase>& runs, const JobKey& job,
                                               const std::vector<Constraint>& relaxed) {
  std::vector<const spec::ResidualCase*> out;
  for (const spec::ResidualCase& r : runs)
    if (in_family(r, job, relaxed)) out.push_back(&r);
  return out;
}

Family family_of(const JobKey& job, const std::vector<Constraint>& relaxed,
                 const std::vector<const spec::ResidualCase*>& runs) {
  Family f;
  if (!relaxes(relaxed, Constraint::gpu)) f.gpu = job.gpu;
  if (!relaxes(relaxed, Constraint::framework)) f.framework = job.framework;
  if (!relaxes(relaxed, Constraint::precision)) f.precision = job.precision;
  for (const spec::ResidualCase* r : runs) {
    f.gpus_min = std::min(f.gpus_min.value_or(r->gpus), r->gpus);
    f.gpus_max = std::max(f.gpus_max.value_or(r->gpus), r->gpus);
  }
  return f;
}

}  // namespace

const char* to_string(PrecisionClass c) { return c == PrecisionClass::sixteen_bit ? "16-bit" : "fp8/fp4"; }

const char* to_string(Constraint c) {
  switch (c) {
    case Constraint::scale: return "scale";
    case Constraint::framework: return "framework";
    case Constraint::precision: return "precision";
    case Constraint::gpu: return "gpu";
  }
  return "?";
}

// Training runs in fp16, bf16 or fp8 (spec::Training); fp32/tf32 never reach here as a
// training precision and would count with the 16-bit runs, the nearest in speed.
PrecisionClass precision_class(spec::Dtype d) {
  return d == spec::Dtype::fp8 || d == spec::Dtype::fp4 ? PrecisionClass::eight_bit_or_less : PrecisionClass::sixteen_bit;
}

PrecisionClass precision_class(const std::string& precision) {
  return precision == "fp8" || precision == "fp4" ? PrecisionClass::eight_bit_or_less : PrecisionClass::sixteen_bit;
}

std::string gpu_preset(const spec::Cluster& c) { return std::filesystem::path(c.gpu_name).stem().string(); }

double measured_vs_predicted_pct(double error_pct) { return 100.0 * (1.0 / (1.0 + error_pct / 100.0) - 1.0); }

bool in_family(const spec::ResidualCase& run, const JobKey& job, const std::vector<Constraint>& relaxed) {
  return (relaxes(relaxed, Constraint::gpu) || run.gpu == job.gpu) &&
         (relaxes(relaxed, Constraint::framework) || run.framework == job.framework) &&
         (relaxes(relaxed, Constraint::precision) || precision_class(run.precision) == job.precision) &&
         (relaxes(relaxed, Constraint::scale) || same_scale(run.gpus, job.gpus));
}

namespace {

// The interval over `runs` of the error `error` reads (nullopt: the run does not count), relaxing
// the constraints of `order` one by one until kFamilyRuns match.
Uncertainty interval(const std::vector<spec::ResidualCase>& runs, const JobKey& job, std::span<const Constraint> order,
                     std::optional<double> (*error)(const spec::ResidualCase&), const char* missing) {
  std::vector<spec::ResidualCase> counted;
  for (const spec::ResidualCase& r : runs)
    if (error(r)) counted.push_back(r);
  Uncertainty u;
  std::vector<const spec::ResidualCase*> family = members(counted, job, u.relaxed);
  for (Constraint c : order) {
    if (family.size() >= kFamilyRuns) break;
    u.relaxed.push_back(c);
    family = members(counted, job, u.relaxed);
  }
  u.runs = family.size();
  u.family = family_of(job, u.relaxed, family);
  if (u.runs < kIntervalRuns) {
    u.missing = missing;
    return u;
  }
  for (const spec::ResidualCase* r : family) {
    double m = measured_vs_predicted_pct(*error(*r));
    u.low_pct = std::min(u.low_pct.value_or(m), m);
    u.high_pct = std::max(u.high_pct.value_or(m), m);
  }
  return u;
}

std::optional<double> step_error(const spec::ResidualCase& r) { return r.error_pct; }
std::optional<double> peak_error(const spec::ResidualCase& r) { return r.peak_error_pct; }

}  // namespace

Uncertainty uncertainty(const std::vector<spec::ResidualCase>& runs, const JobKey& job) {
  return interval(runs, job, kRelaxOrder, step_error, "no comparable published runs");
}

Uncertainty peak_uncertainty(const std::vector<spec::ResidualCase>& runs, const JobKey& job) {
  static constexpr Constraint kPeakOrder[] = {Constraint::scale, Constraint::precision, Constraint::gpu};
  return interval(runs, job, kPeakOrder, peak_error, "no published run of this stack with a measured peak");
}

Uncertainty no_residuals(const std::string& why) { return Uncertainty{.missing = why}; }

std::optional<spec::ResidualCase> residual(const PreparedCase& p, const CaseOutcome& o) {
  std::optional<double> e = o.error_pct();
  if (!e || !p.runnable()) return std::nullopt;
  return spec::ResidualCase{.id = o.id, .tier = o.tier, .gpu = gpu_preset(p.cluster), .cluster = p.cluster.name,
                            .framework = p.stack.name, .gpus = p.gpus,
                            .precision = spec::to_string(p.resolved.train.precision), .error_pct = *e,
                            .peak_error_pct = o.peak_error_pct()};
}

spec::ResidualsFile residuals_file(const std::vector<PreparedCase>& prepared, const std::vector<CaseOutcome>& outcomes,
                                   const std::string& source) {
  if (prepared.size() != outcomes.size())
    throw std::logic_error("residuals_file: " + std::to_string(prepared.size()) + " prepared cases but " +
                           std::to_string(outcomes.size()) + " outcomes");
  spec::ResidualsFile f{.source = source};
  for (std::size_t i = 0; i < prepared.size(); ++i)
    if (auto r = residual(prepared[i], outcomes[i])) f.cases.push_back(*r);
  return f;
}

}  // namespace dtsim::calibrate
