#pragma once
// A training software stack of one time (Megatron-LM 2021, NeMo 24.11, DeepSpeed 2021, ...):
// which kernels, overlaps and fusions it runs and what its published recipes set for fields a
// run does not state. calibration/stacks/NAME.json holds a stack's versions, each with sources;
// `--framework NAME[@VERSION]` picks one, and `dtsim validate` picks each case's from its
// "framework" field. Hardware speed lives in calibration profiles (spec/calibration.h).
#include <optional>
#include <string>
#include <vector>

#include "spec/gpu.h"
#include "spec/job.h"

namespace dtsim::spec {

/// Attention kernels a stack uses: fused flash attention (FlashAttention-2/3, cuDNN) or
/// Megatron's unfused batched GEMMs with a fused scale-mask-softmax kernel.
enum class AttentionKernel { flash, unfused };

/// What a stack runs. Flags of `dtsim simulate` override each switch.
struct Software {
  AttentionKernel attention = AttentionKernel::flash;
  bool tp_comm_overlap = false;       ///< TP all-gather/reduce-scatter pipelined with GEMMs (TE userbuffers)
  bool overlap_grad_reduce = true;    ///< DP gradient buckets reduced during the last backward
  bool overlap_param_gather = true;   ///< ZeRO-1/2 parameter all-gather overlapped with the next forward
  /// Interleaved pipeline p2p left in flight until the next pass of the same direction
  /// (Megatron-Core overlap_p2p_comm), else each transfer completes before the next pass.
  bool overlap_p2p_comm = false;
  bool fp32_grads = true;             ///< fp32 main grads reduced in fp32 (Megatron-LM), else 16-bit (NeMo)
  bool operator==(const Software&) const = default;
};

/// What a stack's recipes of the time set for the fields a run may leave unstated (the
/// validation README's rule: "assume what the framework's published recipe would have used").
/// nullopt: the generic rule (recompute: least that fits; SP: on when tp > 1; ZeRO 1; bf16; mbs 1).
struct StackDefaults {
  std::optional<Recompute> recompute;
  std::optional<bool> sequence_parallel;  ///< true: on whenever tp > 1
  std::optional<int> zero_stage;
  std::optional<Dtype> precision;
  std::optional<std::int64_t> micro_batch;
  bool operator==(const StackDefaults&) const = default;
};

/// One version of a stack.
struct Stack {
  std::string name;      ///< "megatron-lm"
  std::string version;   ///< "2021", "24.11"
  std::string since;     ///< "YYYY-MM": the first month this version describes
  Software software;
  StackDefaults defaults;
  bool operator==(const Stack&) const = default;
  /// "megatron-lm@2021".
  [[nodiscard]] std::string label() const { return name + "@" + version; }
};

/// A stack file: every version, oldest first.
struct StackFamily {
  std::string name;
  std::vector<Stack> versions;
};

/// The stack `dtsim simulate`, `memory` and `plan` assume without --framework: today's Megatron-Core.
inline constexpr const char* kDefaultFramework = "megatron-core";

[[nodiscard]] const char* to_string(AttentionKernel k);

/// Parses calibration/stacks/NAME.json; throws SpecError (file + JSON pointer) on a malformed one
/// (versions out of date order, a "since" that is not YYYY-MM, unknown keys).
[[nodiscard]] StackFamily parse_stack_family(const std::string& text, const std::string& file);

/// "NAME" (its latest version), "NAME@VERSION" (a version string as the file writes it) or
/// "NAME@YYYY[-MM]" (the latest version out by then); NAME a preset of calibration/stacks/ or a
/// file. Throws SpecError naming `flag` for an unknown name or version.
[[nodiscard]] Stack load_stack(const std::string& spec, const std::string& flag = "--framework");

/// The stack a run used, from its framework fields: `version` when it names one in the file,
/// else the latest version out by `date` (YYYY or YYYY-MM; a year alone means its end), else the
/// latest. Throws SpecError naming `where` for a name with no stack file.
[[nodiscard]] Stack find_stack(const std::string& name, const std::optional<std::string>& version,
                               const std::optional<std::string>& date, const std::string& where);

/// Stack names with a file in calibration/stacks/, sorted.
[[nodiscard]] std::vector<std::string> stack_names();

}  // namespace dtsim::spec
