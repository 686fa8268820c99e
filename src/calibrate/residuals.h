#pragma once
// How far measured runs like a job fell from dtsim's predictions: the residuals `dtsim validate`
// records per published run (spec/residuals_file.h), and the interval `dtsim simulate` and
// `dtsim plan` print from the runs of the job's nearest family (hardware, stack, precision, scale).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "calibrate/cases.h"
#include "spec/cluster.h"
#include "spec/gpu.h"
#include "spec/residuals_file.h"

namespace dtsim::calibrate {

/// Training precisions whose errors are kept apart: 16-bit (fp16, bf16) and fp8/fp4.
enum class PrecisionClass { sixteen_bit, eight_bit_or_less };

/// The constraints of a family, in the order they are relaxed when too few runs match.
enum class Constraint { scale, framework, precision, gpu };

/// "16-bit", "fp8/fp4".
[[nodiscard]] const char* to_string(PrecisionClass c);
/// "scale", "framework", "precision", "gpu".
[[nodiscard]] const char* to_string(Constraint c);
/// fp8 is fp8/fp4; every other training type (fp16, bf16) is 16-bit.
[[nodiscard]] PrecisionClass precision_class(spec::Dtype d);
/// As above for a residuals file's precision name ("fp8" and "fp4" are fp8/fp4).
[[nodiscard]] PrecisionClass precision_class(const std::string& precision);

/// A family's runs need at least this many, else the next constraint is relaxed.
inline constexpr std::size_t kFamilyRuns = 5;
/// Fewer runs than this in the widest family give no interval.
inline constexpr std::size_t kIntervalRuns = 3;
/// Same scale: GPU counts within this factor of the job's, either way (inclusive).
inline constexpr std::int64_t kScaleFactor = 8;

/// What a job is compared by.
struct JobKey {
  std::string gpu;        ///< GPU preset name (gpu_preset)
  std::string framework;  ///< stack name ("megatron-core")
  PrecisionClass precision = PrecisionClass::sixteen_bit;
  std::int64_t gpus = 0;
  bool operator==(const JobKey&) const = default;
};

/// The family the interval comes from: a member is nullopt when its constraint was relaxed
/// (gpus_min/max: the GPU counts of the family's runs; nullopt when it has none).
struct Family {
  std::optional<std::string> gpu, framework;
  std::optional<PrecisionClass> precision;
  std::optional<std::int64_t> gpus_min, gpus_max;
  bool operator==(const Family&) const = default;
};

/// The measured step time relative to dtsim's prediction on the job's family of published runs.
struct Uncertainty {
  std::optional<double> low_pct, high_pct;  ///< min, max of (measured / predicted - 1) * 100; nullopt: no interval
  std::size_t runs = 0;                     ///< runs in the family
  std::optional<Family> family;             ///< nullopt when no residuals were read
  std::vector<Constraint> relaxed;          ///< in the order relaxed
  std::string missing;                      ///< why there is no interval; empty when there is one
  bool operator==(const Uncertainty&) const = default;
};

/// The GPU preset name of `c`: its "gpu" as written, without directory or ".json".
[[nodiscard]] std::string gpu_preset(const spec::Cluster& c);

/// (measured / predicted - 1) * 100 of a run whose prediction erred by `error_pct`
/// ((predicted / measured - 1) * 100 = e): 100 * (1 / (1 + e/100) - 1). -20 gives +25.
[[nodiscard]] double measured_vs_predicted_pct(double error_pct);

/// Whether `run` belongs to `job`'s family with the constraints in `relaxed` dropped.
[[nodiscard]] bool in_family(const spec::ResidualCase& run, const JobKey& job, const std::vector<Constraint>& relaxed);

/// The interval of `job` over `runs`: the family with every constraint (same GPU, same stack, same
/// precision class, GPU count within kScaleFactor); with fewer than kFamilyRuns runs, scale is
/// dropped, then stack, then precision, then GPU, until enough match (or none is left to drop).
/// Fewer than kIntervalRuns in the family chosen: no interval, `missing` says so.
[[nodiscard]] Uncertainty uncertainty(const std::vector<spec::ResidualCase>& runs, const JobKey& job);

/// The same for the job's predicted peak memory, over the runs whose measured peak is known: only
/// runs of the job's own stack count (the memory model's mechanisms are the stack's), then scale,
/// precision and GPU are relaxed in that order.
[[nodiscard]] Uncertainty peak_uncertainty(const std::vector<spec::ResidualCase>& runs, const JobKey& job);

/// No interval because there are no residuals to read; `why` says so ("no FILE").
[[nodiscard]] Uncertainty no_residuals(const std::string& why);

/// The residual of a prepared case simulated into `o` (cases.h); nullopt when it was not predicted.
[[nodiscard]] std::optional<spec::ResidualCase> residual(const PreparedCase& p, const CaseOutcome& o);

/// The residuals of every predicted case, in order; `source` is the command that produced them.
/// `prepared` and `outcomes` are parallel; throws std::logic_error when their sizes differ.
[[nodiscard]] spec::ResidualsFile residuals_file(const std::vector<PreparedCase>& prepared,
                                                 const std::vector<CaseOutcome>& outcomes, const std::string& source);

}  // namespace dtsim::calibrate
