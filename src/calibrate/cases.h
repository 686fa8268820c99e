#pragma once
// Measured runs (dtsim-validation-cases/1) turned into simulations: what `dtsim validate`
// reports and what `dtsim calibrate --steps` fits a profile to.
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "engine/simulate.h"
#include "network/backend.h"
#include "schedule/pass_cost.h"
#include "spec/calibration.h"
#include "spec/cluster.h"
#include "spec/validation_file.h"

namespace dtsim::calibrate {

/// A value a field the case leaves null could have had, simulated in place of the one the null
/// took (`dtsim validate --unstated`): how much of a case's error an unstated setting can carry.
struct Alternative {
  std::string field;                  ///< "micro_batch" or "recompute"
  std::string value;                  ///< "2", "full"
  std::optional<double> predicted_s;
  bool fits = true;                   ///< the memory model's verdict at that value
  std::string failure;                ///< why there is no prediction (a step too large to replay)
};

/// One case's outcome: a prediction, or the reason there is none.
struct CaseOutcome {
  std::string id;
  std::string tier;
  std::string framework;                ///< as the case names it ("(none)" when null)
  std::string stack;                    ///< the stack profile simulated with, "nemo@24.11"
  double measured_s = 0;
  std::optional<double> predicted_s;
  /// Where the predicted step goes: seconds by category on the critical stage (sums to predicted_s).
  std::optional<std::array<double, schedule::kCategories>> breakdown_s;
  std::string failure;                  ///< why no prediction (invalid config, does not fit)
  std::vector<std::string> assumptions;
  std::string layout;                   ///< "tp 8 pp 16 dp 8 ..." as simulated
  std::optional<double> peak_gib;
  std::optional<double> measured_peak_gib;  ///< the case's measured.peak_memory_gib, when it has one
  bool fits = true;
  double pace = 1;                      ///< kernel-time multiplier of the slowest GPU (engine::StepResult::pace)
  std::int64_t gpus = 0;
  double speed_spread = 0;              ///< of the profile simulated with
  std::string profile;                  ///< its name
  std::vector<Alternative> unstated;    ///< filled by unstated_alternatives (validate --unstated)
  std::optional<schedule::LayerKernels> kernels;  ///< filled by case_kernels (validate --kernels)
  [[nodiscard]] std::optional<double> error_pct() const;  ///< (predicted - measured) / measured * 100
  /// The memory model's peak against the measured one, (predicted - measured) / measured * 100.
  [[nodiscard]] std::optional<double> peak_error_pct() const;
  /// `a`'s error against this case's measurement, when it has a prediction.
  [[nodiscard]] std::optional<double> error_pct(const Alternative& a) const;
};

/// Summary statistics over cases with a prediction.
struct ErrorSummary {
  std::size_t n = 0;
  double mape = 0, median_abs_pct = 0, max_abs_pct = 0;
};

/// Mean, median and max of |error| over `cases` (those with a prediction).
[[nodiscard]] ErrorSummary summarize(const std::vector<CaseOutcome>& cases);
/// The same of the peak-memory error over the cases with a measured peak.
[[nodiscard]] ErrorSummary summarize_peak(const std::vector<CaseOutcome>& cases);

/// A case resolved once (stack, specs, cluster, profile, recompute chosen), ready to simulate
/// with any calibration profile.
struct PreparedCase {
  CaseOutcome outcome;        ///< everything but the prediction; `failure` set when it cannot run
  spec::ResolvedCase resolved;
  spec::Cluster cluster;
  spec::Calibration calibration;  ///< the cluster's profile, or the one given to prepare_case
  spec::Stack stack;              ///< the case's framework's, or the one given to prepare_case
  std::int64_t gpus = 0;
  [[nodiscard]] bool runnable() const { return outcome.failure.empty(); }
};

/// Resolves `vc`: its stack from its "framework" (name, then version or date; none given: the
/// default stack, noted) unless `stack` is given; nulls by that stack's recipe defaults, then the
/// validation README's rules; architecture by activation. Loads its cluster and the cluster's
/// profile (or uses `profile`), checks the layout, and picks the least recompute that fits when
/// the case leaves it open. Bad input is recorded as the outcome's failure, never thrown: a case
/// is reported, not skipped.
[[nodiscard]] PreparedCase prepare_case(const spec::ValidationCase& vc, const std::string& file,
                                        const std::optional<spec::Calibration>& profile = std::nullopt,
                                        const std::optional<spec::Stack>& stack = std::nullopt);

/// The prepared case simulated with `cal` (and the case's stack). Unrunnable cases come back as
/// prepared.
[[nodiscard]] CaseOutcome simulate_case(const PreparedCase& p, const spec::Calibration& cal);
/// simulate_case reusing `ws` for the graph and timeline (no allocation once it has grown; for
/// fits that simulate the same case many times).
[[nodiscard]] CaseOutcome simulate_case(const PreparedCase& p, const spec::Calibration& cal, engine::Workspace& ws,
                                        network::Kind net = network::Kind::analytical,
                                        network::Engine eng = network::Engine::longest_path);
/// The step time of the prepared (runnable) case with `cal`, by the planner's steady-state
/// extrapolation (engine::estimate_step: exact for 1F1B and interleaved 1F1B, and much faster
/// with many micro-batches): what fits evaluate thousands of times. Seconds.
[[nodiscard]] double estimate_case(const PreparedCase& p, const spec::Calibration& cal, engine::Workspace& ws);
/// The fields `vc` leaves null that change a run's speed most and that sources most often omit --
/// its micro-batch (each power of two up to 16 that divides the sequences per replica) and its
/// recompute (none, selective, full) -- each other value resolved and simulated as `vc` is, with
/// the same profile, network and engine; values the layout rules out (an interleaved schedule's
/// micro-batch count not a multiple of pp) are left out. Empty when the case sets both or cannot
/// be simulated.
[[nodiscard]] std::vector<Alternative> unstated_alternatives(const spec::ValidationCase& vc, const std::string& file,
                                                             const PreparedCase& taken,
                                                             const std::optional<spec::Calibration>& profile,
                                                             network::Kind net, network::Engine eng);
/// One layer's kernels on one rank of the prepared case, priced with `cal` as `simulate --kernels`
/// lists them (`validate --kernels`); nullopt when the case cannot run.
[[nodiscard]] std::optional<schedule::LayerKernels> case_kernels(const PreparedCase& p, const spec::Calibration& cal);

/// simulate_case with the case's own profile.
[[nodiscard]] CaseOutcome simulate_case(const PreparedCase& p, network::Kind net = network::Kind::analytical,
                                        network::Engine eng = network::Engine::longest_path);

}  // namespace dtsim::calibrate
