#pragma once
// `dtsim-validation-cases/1` files (../shared/validation/README.md): published runs with their
// layout and measured step time. A null means "the source did not say"; resolve_case() fills
// each with the framework's recipe of the time and records the assumption.
#include <optional>
#include <string>
#include <vector>

#include "spec/job.h"
#include "spec/model.h"
#include "spec/stack.h"

namespace dtsim::spec {

/// The model object of a case: the 11 keys the schema has (nulls kept as nullopt).
struct CaseModel {
  std::string name;
  std::int64_t layers = 0, hidden = 0, heads = 0, ffn_hidden = 0;
  std::optional<std::int64_t> kv_heads, vocab, moe_experts, moe_topk, moe_ffn_hidden;
  Activation activation = Activation::gelu;
};

/// The training software a run used, as its source says (any field may be unknown).
struct FrameworkRef {
  std::optional<std::string> name, version, date;
  bool operator==(const FrameworkRef&) const = default;
};

/// One published run as written in the file.
struct ValidationCase {
  std::string id;
  std::string tier;
  std::string pointer;                 ///< "/cases/N", for messages
  CaseModel model;
  std::string cluster;
  std::int64_t gpus = 0, gpus_per_node = 0;
  std::int64_t tp = 1, pp = 1, dp = 1, cp = 1, ep = 1, vp = 1;
  std::optional<int> zero_stage;
  std::optional<bool> sequence_parallel;
  std::optional<std::int64_t> micro_batch;
  std::int64_t global_batch = 0, seq_len = 0;
  std::optional<Recompute> recompute;  ///< automatic never appears here
  std::optional<Dtype> precision;
  double measured_s = 0;
  /// The run's peak memory per GPU as its logs print it (measured.peak_memory_gib, GiB; PyTorch's
  /// max reserved): an optional key, checked against the memory model when present.
  std::optional<double> measured_peak_gib;
  FrameworkRef framework;
  std::vector<std::string> ignored;    ///< unknown top-level keys, reported not dropped silently
  std::vector<std::string> filled;     ///< null fields filled by generic rules while reading (noted)
  std::string invalid;                 ///< why the case cannot be simulated (empty: it can)
  std::vector<std::string> recipe_notes;  ///< nulls filled from a recipes file, with its source
  // Facts the case schema has no field for, only ever set by a recipes file: the MoE settings of
  // the run's recipe (token-drop capacity, dispatcher, overlapped expert-parallel traffic).
  std::optional<double> moe_capacity_factor;
  std::optional<MoeDispatcher> moe_dispatcher;
  std::optional<bool> moe_a2a_overlap;
  std::optional<std::int64_t> offload_layers;  ///< activation offload (cpu_offloading_num_layers)
  /// With full recompute, the layers of each pipeline chunk that recompute (Megatron's block method;
  /// torchtitan's every-N-th-layer checkpointing costs the same): all when unset.
  std::optional<std::int64_t> recompute_layers;
  std::optional<CudaGraphs> cuda_graphs;
  std::optional<TpOverlapRs> tp_overlap_rs;  ///< the recipe's TP reduce-scatter overlaps (ub config)
  std::optional<std::int64_t> mtp_layers;  ///< the run's MTP modules, when it differs from the preset's
  std::optional<std::string> pipeline_layout;  ///< the recipe's Megatron-Core pipeline layout (spec::parse_pipeline_layout)
  std::optional<Fp8Recipe> fp8_recipe;     ///< the run's fp8 scaling (the case's "fp8" covers every recipe)
  std::optional<std::uint32_t> recompute_modules;  ///< selective recompute's modules (recompute_module bits)
  std::optional<bool> fp8_param_gather;
  /// Decoder layers an fp8/fp4 run keeps in bf16 at the start and at the end (Megatron-Core
  /// first_last_layers_bf16 with num_layers_at_start_in_bf16 / num_layers_at_end_in_bf16).
  std::optional<std::int64_t> bf16_layers_start, bf16_layers_end;
  std::optional<Optimizer> optimizer;  ///< the recipe's optimizer (Adam unless a recipe says otherwise)
  std::optional<AttentionKernel> attention;  ///< the recipe's attention kernel (NVTE_FUSED_ATTN=0: flash2)
  std::optional<bool> compile;          ///< torch.compile over eager model code (spec::apply_compile)
  std::optional<bool> tp_comm_overlap;  ///< the recipe's TP overlap (TE userbuffers, PyTorch async TP)
  // Fine-tuning runs: LoRA over frozen weights and packed samples (spec::Training).
  std::optional<Peft> peft;
  std::optional<std::int64_t> lora_rank;
  std::optional<std::uint32_t> lora_targets;  ///< lora_target bits
  std::optional<std::int64_t> sample_len;
};

/// The whole file.
struct ValidationFile {
  std::string path;
  std::vector<ValidationCase> cases;
};

/// Parses a validation file. A malformed file (not JSON, wrong schema, no "cases" array) throws
/// SpecError (file + JSON pointer); a malformed case does not: it comes back with `invalid` set to
/// the error, in its place, so the others are still predicted. Nulls that a generic rule can fill
/// are filled and noted in `filled`: heads (hidden / 128), ffn_hidden (4h, or Llama's
/// 256 * ceil(8h/3/256) for gated MLPs), activation (gelu), tp, pp, cp, ep, vp (1), dp (gpus /
/// (tp pp cp)), gpus (tp pp dp cp), seq_len (2048).
[[nodiscard]] ValidationFile parse_validation_file(const std::string& text, const std::string& file);
/// Reads and parses a file.
[[nodiscard]] ValidationFile load_validation_file(const std::string& path);

/// What the published recipe of a run's time set, for fields the case leaves null
/// (`dtsim-validation-recipes/1`, calibration/README.md): every entry names its source.
struct RecipeFacts {
  std::string pointer;                 ///< "/cases/ID", for messages
  std::optional<int> zero_stage;
  std::optional<bool> sequence_parallel;
  std::optional<std::int64_t> micro_batch;
  std::optional<Recompute> recompute;
  std::optional<Dtype> precision;
  std::optional<std::int64_t> vocab;   ///< the model's tokenizer size (model card / config.json)
  std::optional<double> moe_capacity_factor;
  std::optional<MoeDispatcher> moe_dispatcher;
  std::optional<bool> moe_a2a_overlap;
  std::optional<std::int64_t> offload_layers;
  std::optional<std::int64_t> recompute_layers;
  std::optional<CudaGraphs> cuda_graphs;
  std::optional<TpOverlapRs> tp_overlap_rs;  ///< the recipe's TP reduce-scatter overlaps (ub config)
  std::optional<std::int64_t> mtp_layers;
  std::optional<std::string> pipeline_layout;
  std::optional<Fp8Recipe> fp8_recipe;
  std::optional<std::uint32_t> recompute_modules;
  std::optional<bool> fp8_param_gather;
  std::optional<std::int64_t> bf16_layers_start, bf16_layers_end;
  std::optional<Optimizer> optimizer;
  std::optional<AttentionKernel> attention;  ///< the recipe's attention kernel (NVTE_FUSED_ATTN=0: flash2)
  std::optional<bool> compile;
  std::optional<bool> tp_comm_overlap;
  std::optional<Peft> peft;
  std::optional<std::int64_t> lora_rank;
  std::optional<std::uint32_t> lora_targets;
  std::optional<std::int64_t> sample_len;
  std::string source;
};

/// A recipes file: case id -> facts.
struct RecipesFile {
  std::string path;
  std::vector<std::pair<std::string, RecipeFacts>> cases;
};

/// Parses a `dtsim-validation-recipes/1` file; throws SpecError (file + pointer) on a malformed one.
[[nodiscard]] RecipesFile parse_recipes_file(const std::string& text, const std::string& file);
[[nodiscard]] RecipesFile load_recipes_file(const std::string& path);

/// Fills the null fields of `f`'s cases from `recipes`, noting each with its source. A recipe
/// for a field the case already sets is an error (recipes fill gaps, they do not override
/// measurements' descriptions). Returns the recipe ids that match no case.
std::vector<std::string> apply_recipes(ValidationFile& f, const RecipesFile& recipes);

/// A case turned into specs, with every assumption spelled out.
struct ResolvedCase {
  Model model;
  Parallel par;
  Training train;
  std::optional<MoeDispatcher> moe_dispatcher;  ///< the recipe's, over the stack's
  std::optional<bool> moe_a2a_overlap;
  std::optional<CudaGraphs> cuda_graphs;
  std::optional<TpOverlapRs> tp_overlap_rs;  ///< the recipe's TP reduce-scatter overlaps (ub config)
  std::optional<Fp8Recipe> fp8_recipe;           ///< the recipe's, over the stack's
  std::optional<AttentionKernel> attention;     ///< the recipe's, over the stack's
  std::optional<bool> compile;                  ///< the recipe's torch.compile (true: spec::apply_compile)
  std::optional<bool> tp_comm_overlap;          ///< the recipe's, over the stack's
  bool auto_recompute = false;         ///< recompute was null: least that fits
  std::vector<std::string> assumptions;
};

/// Fills the fields the case leaves null with what `stack`'s recipes of the time set (its
/// defaults), then by the README's rules (recompute: least that fits; zero_stage: 1; sequence
/// parallel: on when tp > 1; micro_batch: 1; precision: bf16), each noted as an assumption, and
/// infers the architecture family the 11 keys leave open from the activation (gelu: Megatron GPT;
/// swiglu: Llama; squared_relu: Nemotron). Throws SpecError naming the case's pointer when the
/// model is invalid.
[[nodiscard]] ResolvedCase resolve_case(const ValidationCase& c, const std::string& file, const Stack& stack);

}  // namespace dtsim::spec
