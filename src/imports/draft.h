#pragma once
// Internal to src/imports: what every importer fills in before it becomes flags -- the job's
// fields as read (each optional: absent means the config did not say) and the model's shape.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "imports/imports.h"
#include "spec/model.h"

namespace dtsim::imports {

/// The job as read from a config; an absent field gives no flag (dtsim's default applies).
struct JobDraft {
  std::optional<std::string> model;  ///< a preset name
  std::optional<std::int64_t> gpus, tp, pp, dp, vp, cp, ep, etp;
  bool sp = false;
  std::optional<std::int64_t> mbs, gbs, seq;
  std::optional<std::string> precision;  ///< fp16, bf16 or fp8
  std::optional<std::string> recompute;  ///< none, selective or full
  std::optional<std::int64_t> recompute_layers;
  std::optional<std::string> recompute_modules;  ///< comma separated, as --recompute-modules
  std::optional<int> zero;
  std::optional<std::string> grad_dtype, optimizer, attention, fp8_recipe;
  std::optional<std::string> tp_overlap_rs;  ///< as --tp-overlap-rs: PROJ,FC2
  std::optional<std::string> pipeline_layout;  ///< as --pipeline-layout (Megatron-Core's layout string)
  std::optional<bool> tp_comm_overlap, overlap_grad_reduce, overlap_param_gather, fp8_param_gather;
  std::optional<std::string> framework;  ///< a calibration/stacks name
  std::optional<std::string> peft, lora_targets;  ///< as --peft and --lora-targets
  std::optional<std::int64_t> lora_rank;
};

/// A Megatron-Core pipeline layout read from a config (`where` names it): sets `j.pipeline_layout`
/// and `j.vp` = its virtual stages / pp, checked against a vp the config also gives (`vp_where`).
void set_pipeline_layout(JobDraft& j, const std::string& layout, const std::string& where, const std::string& vp_where,
                         std::vector<std::string>& notes);

/// The flags of `j` in a fixed order: --model --gpus --tp --pp --dp --vp --cp --ep --etp --sp --mbs
/// --gbs --seq --precision --recompute --recompute-layers --zero --grad-dtype --optimizer, then the software switches, --framework.
[[nodiscard]] std::vector<std::string> job_flags(const JobDraft& j);

/// One number of the model's shape and where the config gave it (for errors).
struct Sized {
  std::int64_t value = 0;
  std::string where;  ///< "FILE:LINE"
  std::string name;   ///< the config's own name, e.g. "--num-layers" or "model.num_layers"
};

/// The model's shape as a config states it; `vocab` may be unknown (a tokenizer dtsim cannot size).
struct ModelDraft {
  std::optional<Sized> layers, hidden, heads, kv_heads, head_dim, ffn_hidden, vocab, max_position;
  std::optional<Sized> moe_experts, moe_topk, moe_ffn_hidden, moe_shared_ffn_hidden;
  spec::Activation activation = spec::Activation::gelu;
  spec::PositionEmbedding position_embedding = spec::PositionEmbedding::learned;
  bool tied_embeddings = true;
  spec::Norm norm = spec::Norm::layernorm;
  spec::LinearBias linear_bias = spec::LinearBias::all;
  bool qk_norm = false;
  /// Dropout probabilities: Megatron-LM's and Megatron-Core's defaults unless the config sets them.
  double hidden_dropout = 0.1, attention_dropout = 0.1;
  std::string vocab_unknown;  ///< why vocab is absent, e.g. "tokenizer HuggingFaceTokenizer"
  std::string origin;         ///< what the model was read from, for notes: "the script"
};

/// Turns the shape into `--model PRESET` (when a shipped preset has the same shape in every field
/// that changes a step: name, source and an unused max_position aside) or into `out.model`, and
/// says which in `out.notes`. An incomplete shape gives neither, with a note. Throws SpecError at
/// the offending field's `where` when the shape is inconsistent (heads not dividing hidden, ...).
void resolve_model(const ModelDraft& d, const std::string& file, JobDraft& job, Imported& out);

/// `s` as a decimal integer (optional sign, no spaces); nullopt when it is not one or overflows.
[[nodiscard]] std::optional<std::int64_t> parse_integer(std::string_view s);
/// `s` as a probability in [0, 1) (a decimal number: 0, 0.1, 1e-1); nullopt otherwise.
[[nodiscard]] std::optional<double> parse_probability(std::string_view s);
/// `s` quoted and printable for an error message: "abc" (at most 80 bytes of it).
[[nodiscard]] std::string quoted(std::string_view s);
/// "expected an integer in [min, max]" (or ">= min" when max is INT64_MAX).
[[nodiscard]] std::string integer_range(std::int64_t min, std::int64_t max);

/// Why a setting an importer does not read has no place in a simulated step: settings whose name
/// matches `pattern` ('*' at either end matches any prefix or suffix, at both ends any infix).
struct IgnoreReason {
  const char* pattern;
  const char* why;
};
inline constexpr const char* kNoEffect = "no effect on step time";
inline constexpr const char* kLogging = "logging, evaluation and checkpoints: not simulated";
inline constexpr const char* kKernelChoice = "kernel choice: dtsim prices the stack's kernels";
/// Whether `name` matches `pattern` (see IgnoreReason).
[[nodiscard]] bool glob_matches(const std::string& name, std::string pattern);
/// The `why` of the first reason whose pattern `name` matches, else "not read by dtsim".
[[nodiscard]] std::string ignore_reason(const std::string& name, std::span<const IgnoreReason> reasons);

}  // namespace dtsim::imports
