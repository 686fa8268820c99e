#pragma once
// A training job as the CLI's flags describe it.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dtsim {

/// The job flags of `dtsim simulate`, `memory` and `plan` (README "Commands"). Unset optionals
/// take the CLI's defaults; `options` holds any other flag by its name without dashes
/// ({"tp-comm-overlap", "on"}, {"sp", ""} for a switch).
struct Job {
  std::string model;    ///< preset name, model file or Hugging Face config.json
  std::string cluster;  ///< preset name or cluster file
  std::optional<std::int64_t> gpus, tp, pp, dp, cp, ep, etp, vp, zero, mbs, gbs, seq;
  std::optional<bool> sp;
  std::optional<std::string> precision, recompute, framework, calibration;
  std::map<std::string, std::string> options;

  /// The command-line words of these flags (no subcommand), in a fixed order; without the layout
  /// (tp, pp, dp, cp, ep, etp, vp, zero, mbs, sp, recompute) when `layout` is false, as `plan` takes them.
  [[nodiscard]] std::vector<std::string> args(bool layout = true) const;
};

/// What `dtsim plan` searches beyond the job: how many configurations to return, fixed fields.
struct PlanOptions {
  std::int64_t top = 10;
  std::map<std::string, std::string> fix;  ///< {"tp", "8"}: --fix tp=8
  std::optional<std::string> objective;    ///< "time" or "cost"
  std::optional<double> price_per_gpu_hour;
  std::optional<std::int64_t> threads;
};

}  // namespace dtsim
