#pragma once
// The configuration space `dtsim plan` searches, and the rules that prune it before simulating.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "spec/calibration.h"
#include "spec/stack.h"
#include "spec/cluster.h"
#include "spec/job.h"
#include "spec/model.h"

namespace dtsim::plan {

/// What the user asks for and constrains.
struct Request {
  const spec::Model* model = nullptr;
  const spec::Cluster* cluster = nullptr;
  const spec::Calibration* calibration = nullptr;
  spec::Software software;
  std::int64_t gpus = 0;
  /// The job's training settings (global batch, sequence, precision, gradients, optimizer, MoE
  /// routing, bf16 layers, fp8 parameters, offload): every candidate starts from them and sets its
  /// own micro-batch and recomputation.
  spec::Training train;
  std::int64_t max_tp = 0;             ///< 0 = GPUs per node
  std::int64_t max_mbs = 16;
  /// Share of each GPU's memory kept free: a layout fits when its predicted peak is at most
  /// (1 - memory_margin) of the GPU's memory (--memory-margin; 0: the whole of it).
  double memory_margin = 0;
  /// Fixed values, by field name: tp, pp, dp, cp, ep, vp, mbs, zero, sp (0/1), recompute (0 none, 1 selective, 2 full).
  std::map<std::string, std::int64_t> fixed;
};

/// One point of the space.
struct Candidate {
  spec::Parallel par;
  spec::Training train;
};

/// Candidates that survived pruning, and how many each rule removed.
struct Space {
  std::vector<Candidate> candidates;
  std::map<std::string, std::int64_t> pruned;  ///< reason -> count
  std::int64_t considered = 0;                  ///< points enumerated before pruning
};

/// Enumerates TP (divisors of the GPUs per node, up to max_tp), PP, CP, DP, EP, VP, micro-batch,
/// ZeRO 0-3, recompute none/selective/full and SP, and prunes: fixed-value filters, invalid
/// layouts (Megatron's rules, counted by rule), configs that do not fit in memory (checked
/// before any simulation), and dominated ones (more recomputation than the least that fits).
/// Deterministic order.
[[nodiscard]] Space enumerate(const Request& r);

}  // namespace dtsim::plan
