#pragma once
// What simulate, memory, plan and validate return: the numbers most callers want, and the whole
// --json document for the rest.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace dtsim {

/// Per-GPU memory of the most loaded pipeline stage, bytes.
struct Memory {
  double parameters = 0, gradients = 0, optimizer = 0, activations = 0, other = 0, peak = 0, capacity = 0;
  bool fits = false;
};

/// One simulated training step.
struct StepResult {
  double step_time_s = 0, tokens_per_s = 0, mfu = 0, model_tflops_per_gpu = 0;
  std::map<std::string, double> breakdown_s;  ///< seconds by category (compute, tp_comm, pp_bubble, ...)
  Memory memory;
  std::vector<std::string> notes;
  std::string json;  ///< `dtsim simulate --json`, byte for byte
};

/// `dtsim memory`: the memory of one layout without simulating it.
struct MemoryResult {
  Memory memory;
  double parameters = 0;  ///< model parameters
  std::string json;
};

/// One configuration `plan` ranked.
struct PlanConfig {
  std::int64_t tp = 1, pp = 1, dp = 1, cp = 1, ep = 1, etp = 1, vp = 1, micro_batch = 1, zero_stage = 0;
  bool sequence_parallel = false;
  std::string recompute;
  double step_time_s = 0, tokens_per_s = 0, mfu = 0, peak_bytes_per_gpu = 0, objective = 0;
};

/// `dtsim plan`: configurations best first.
struct PlanResult {
  std::vector<PlanConfig> configs;
  std::int64_t evaluated = 0, considered = 0;
  std::map<std::string, std::int64_t> pruned;  ///< reason -> layouts removed
  std::string json;
};

/// One case of `dtsim validate`.
struct ValidatedCase {
  std::string id, tier;
  double measured_s = 0;
  double predicted_s = 0;  ///< 0 when not predicted
  bool predicted = false;
  double error_pct = 0;    ///< signed, (predicted - measured) / measured
};

/// Median, mean and max |error| of a set of cases.
struct ErrorSummary {
  std::int64_t n = 0;
  double mape = 0, median_abs_pct = 0, max_abs_pct = 0;
};

/// `dtsim validate FILE`.
struct ValidateResult {
  std::vector<ValidatedCase> cases;
  ErrorSummary summary;
  std::map<std::string, ErrorSummary> tiers;
  std::string json;
};

}  // namespace dtsim
