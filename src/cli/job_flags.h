#pragma once
// The job flags shared by `dtsim simulate`, `dtsim memory` and `dtsim plan`, and turning them
// into validated specs.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "calibrate/residuals.h"
#include "spec/calibration.h"
#include "spec/cluster.h"
#include "spec/job.h"
#include "spec/model.h"
#include "spec/stack.h"

namespace dtsim::cli {

/// Raw flag values as parsed.
struct JobFlags {
  std::string model, cluster, calibration, framework;
  std::int64_t gpus = 0;
  std::int64_t tp = 1, pp = 1, dp = 0, cp = 1, ep = 1, etp = 0, vp = 1;
  int zero = -1;  ///< < 0: the stack's recipes' (defaults.zero_stage), else 1
  bool sp = false;
  std::int64_t mbs = 1, gbs = 0, seq = 2048;
  std::string recompute = "none", precision = "bf16", grad_dtype, optimizer = "adam";
  std::string attention, tp_comm_overlap, overlap_grad_reduce, overlap_param_gather, overlap_p2p_comm, schedule;
  std::string fp8_recipe, fp8_param_gather, cuda_graphs, recompute_modules, tp_overlap_rs;
  double moe_imbalance = 0, moe_capacity_factor = 0;
  std::int64_t bf16_layers_start = -1, bf16_layers_end = -1;  ///< -1: the stack's (current scaling), else 0
  std::int64_t offload_layers = 0, recompute_layers = 0;
  std::string moe_dispatcher, moe_a2a_overlap;
  std::string cross_entropy, compile;
  std::string peft = "none", lora_targets;
  std::int64_t lora_rank = 0, sample_len = 0;  ///< 0: LoRA's default rank; one sample per sequence
  std::vector<std::int64_t> stage_layers;
  std::string pipeline_layout;  ///< Megatron-Core's layout string (spec::parse_pipeline_layout)
  double speed_spread = -1;  ///< < 0: the profile's
  std::string residuals;     ///< dtsim-residuals/1 file; empty: calibration/residuals.json of the data dir
  bool json = false;
  std::string from_megatron, from_nemo, from_deepspeed;  ///< framework configs to import (apply_imports)
  std::optional<spec::Model> imported_model;  ///< an architecture an import defined (no preset matched)
  std::vector<std::string> import_notes;      ///< what the imports derived and what they ignored
};

/// --from-megatron / --from-nemo / --from-deepspeed (src/imports): reads each file given and sets
/// every flag it yields that `sub` was not given on the command line, as if given (the command
/// line wins); a model the config defines goes to `f.imported_model`, what was derived and what
/// was ignored to `f.import_notes`. Then requires --model (or an imported model) and --gbs.
/// Call from a subcommand's callback, after parsing. Throws SpecError.
void apply_imports(CLI::App& sub, JobFlags& f);

/// The job's model: --model, else the one an import defined.
[[nodiscard]] spec::Model job_model(const JobFlags& f);

/// A fully resolved job: loaded specs, checked against each other.
struct Job {
  spec::Model model;
  spec::Cluster cluster;
  spec::Calibration calibration;
  spec::Stack stack;         ///< --framework's (default today's Megatron-Core)
  spec::Software software;   ///< the stack's, with the on|off flags applied
  std::int64_t gpus = 0;
  spec::Parallel par;
  spec::Training train;
  bool auto_recompute = false;
  std::vector<std::string> notes;  ///< derived values and assumptions, shown to the user
  std::string network = "analytical";  ///< the network backend that priced the step
  std::string engine = "longest-path";  ///< the engine that ran the op graph
};

/// Registers the job flags on `app`; `with_layout` adds the parallel-layout flags.
void add_job_flags(CLI::App& app, JobFlags& f, bool with_layout);

/// Registers --residuals (simulate and plan: the interval's source).
void add_residuals_flag(CLI::App& app, JobFlags& f);

/// The interval of a job on `cluster` with stack `framework`, `gpus` GPUs and `precision`, from
/// --residuals (a bad or missing file throws SpecError naming it and the JSON pointer), else from
/// calibration/residuals.json in the data dir (absent: no interval, said in `missing`).
[[nodiscard]] calibrate::Uncertainty job_uncertainty(const JobFlags& f, const spec::Cluster& cluster,
                                                     const std::string& framework, std::int64_t gpus,
                                                     spec::Dtype precision);
/// The same for the job's predicted peak memory (calibrate::peak_uncertainty).
[[nodiscard]] calibrate::Uncertainty job_peak_uncertainty(const JobFlags& f, const spec::Cluster& cluster,
                                                          const std::string& framework, std::int64_t gpus,
                                                          spec::Dtype precision);

/// The cluster's profile, or --calibration's, with --speed-spread applied.
[[nodiscard]] spec::Calibration resolve_calibration(const JobFlags& f, const spec::Cluster& cluster);

/// Loads and validates; throws SpecError naming the flag or file on bad input.
[[nodiscard]] Job resolve_job(const JobFlags& f);

/// The --framework stack (default spec::kDefaultFramework).
[[nodiscard]] spec::Stack resolve_stack(const JobFlags& f);

/// Applies on|off overrides of the software stack to the stack's switches.
[[nodiscard]] spec::Software resolve_software(const JobFlags& f, const spec::Software& defaults);
/// --precision (fp16, bf16, fp8, fp4), the one parser every subcommand uses.
[[nodiscard]] spec::Dtype precision(const JobFlags& f);
/// Every training flag but the layout's (--mbs, --recompute, --recompute-layers): batch, sequence,
/// precision, gradient type, optimizer, MoE routing, bf16 layers, fp8 parameters, offload. The one
/// parser simulate, memory and plan share.
[[nodiscard]] spec::Training resolve_training(const JobFlags& f, const spec::Stack& stack, const spec::Software& sw);
/// --grad-dtype (fp32, fp16, bf16), else the stack's main grads for `precision`.
[[nodiscard]] spec::Dtype grad_dtype(const JobFlags& f, const spec::Software& sw, spec::Dtype precision);

}  // namespace dtsim::cli
