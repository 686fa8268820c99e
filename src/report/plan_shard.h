#pragma once
// dtsim-plan-shard/1: what `dtsim plan --shard I/N` writes and `dtsim merge` reads -- the plan
// command's arguments and the results of candidates i with i mod N == I, every number exact.
#include <cstdint>
#include <string>
#include <vector>

#include "plan/planner.h"

namespace dtsim::report {

struct PlanShard {
  std::int64_t shard = 0, shards = 1;
  std::int64_t candidates = 0;     ///< candidates of the whole space (all shards)
  std::vector<std::string> args;   ///< the plan command's arguments, without --shard and the output format
  std::vector<plan::Result> results;  ///< config left empty: merge() takes it from the space
};

/// The shard as JSON text (doubles round-trip exactly).
[[nodiscard]] std::string plan_shard_text(const PlanShard& s);
/// Parses a shard file; SpecError with file and JSON pointer for anything else.
[[nodiscard]] PlanShard parse_plan_shard(const std::string& text, const std::string& file);

}  // namespace dtsim::report
