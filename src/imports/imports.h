#pragma once
// Importing the launch configurations users already have (a Megatron-LM launch script, a NeMo or
// Megatron-Bridge recipe, a DeepSpeed config) as dtsim job flags. Nothing is executed: a script's
// variables are expanded as far as the script itself assigns them, and what cannot be mapped is
// listed, never dropped silently.
#include <optional>
#include <string>
#include <vector>

#include "spec/model.h"

namespace dtsim::imports {

/// What an import produced: dtsim job flags (argv words, e.g. {"--tp", "8", "--pp", "16"}), a
/// model when the config defines the architecture instead of naming a preset, and what it ignored.
struct Imported {
  std::vector<std::string> flags;    ///< dtsim job flags, always in one order: --model --gpus --tp --pp ...
  std::optional<spec::Model> model;  ///< architecture read from the config when no preset matches it
  std::vector<std::string> ignored;  ///< each "NAME (why)", e.g. "--lr (no effect on step time)"
  std::vector<std::string> notes;    ///< how a value was derived, or why a flag is missing
};

/// Reads a Megatron-LM launch script (bash: torchrun / python -m torch.distributed.launch /
/// deepspeed / srun running pretrain_*.py) or an args file (--flag value ...). `file` names the
/// input in errors. Throws SpecError("FILE:LINE", "expected ..., got ...") on bad input.
[[nodiscard]] Imported from_megatron(const std::string& text, const std::string& file);

/// Reads a NeMo 1.x / 2.0 recipe YAML (trainer:, model:) or a Megatron-Bridge config (model:,
/// train:). Throws SpecError("FILE:LINE", ...) on malformed YAML or a value of the wrong type.
[[nodiscard]] Imported from_nemo(const std::string& text, const std::string& file);

/// Reads a DeepSpeed config JSON (batch sizes, ZeRO stage, precision). Throws
/// SpecError("FILE:/json/pointer", ...) on malformed JSON, a wrong type or inconsistent batch sizes.
[[nodiscard]] Imported from_deepspeed(const std::string& text, const std::string& file);

}  // namespace dtsim::imports
