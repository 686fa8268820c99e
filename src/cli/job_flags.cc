#include "cli/job_flags.h"

#include <algorithm>
#include <filesystem>

#include "core/errors.h"
#include "cost/compute.h"
#include "spec/job_rules.h"
#include "imports/imports.h"
#include "spec/load.h"
#include "spec/pipeline_layout.h"

namespace dtsim::cli {
namespace {

spec::Dtype parse_dtype(const std::string& flag, const std::string& v, bool gemm) {
  if (v == "fp16") return spec::Dtype::fp16;
  if (v == "bf16") return spec::Dtype::bf16;
  if (gemm && v == "fp8") return spec::Dtype::fp8;
  if (gemm && v == "fp4") return spec::Dtype::fp4;
  if (!gemm && v == "fp32") return spec::Dtype::fp32;
  throw SpecError(flag, std::string("expected one of ") + (gemm ? "fp16, bf16, fp8, fp4" : "fp32, fp16, bf16") +
                            ", got \"" + v + "\"");
}

spec::Recompute parse_recompute(const std::string& v) {
  if (v == "none") return spec::Recompute::none;
  if (v == "selective") return spec::Recompute::selective;
  if (v == "full") return spec::Recompute::full;
  if (v == "auto") return spec::Recompute::automatic;
  throw SpecError("--recompute", "expected one of none, selective, full, auto, got \"" + v + "\"");
}

bool on_off(const std::string& flag, const std::string& v, bool dflt) {
  if (v.empty()) return dflt;
  if (v == "on") return true;
  if (v == "off") return false;
  throw SpecError(flag, "expected on or off, got \"" + v + "\"");
}

void derive_degrees(const JobFlags& f, Job& j) {
  j.par.tp = f.tp; j.par.pp = f.pp; j.par.cp = f.cp; j.par.ep = f.ep; j.par.etp = f.etp; j.par.vp = f.vp;
  std::int64_t mp = f.tp * f.pp * f.cp;
  if (f.gpus == 0 && f.dp == 0) throw SpecError("--gpus", "expected a GPU count (or --dp), got neither");
  if (f.dp == 0) {
    if (f.gpus % mp != 0)
      throw SpecError("--gpus", "expected a multiple of tp*pp*cp (" + std::to_string(mp) + ") to derive dp, got " +
                                    std::to_string(f.gpus));
    j.par.dp = f.gpus / mp;
    j.notes.push_back("dp = gpus/(tp*pp*cp) = " + std::to_string(j.par.dp));
  } else {
    j.par.dp = f.dp;
  }
  j.gpus = f.gpus == 0 ? mp * j.par.dp : f.gpus;
}

}  // namespace

void add_job_flags(CLI::App& app, JobFlags& f, bool with_layout) {
  app.add_option("--model", f.model, "Model preset (models/NAME.json), model file or HF config.json");
  app.add_option("--cluster", f.cluster, "Cluster preset (topologies/NAME.json) or file")->required();
  app.add_option("--calibration", f.calibration, "Calibration profile (default: the cluster's)");
  app.add_option("--framework", f.framework,
                 "Training software stack NAME[@VERSION or @YYYY-MM] (calibration/stacks/; default: megatron-core, "
                 "its latest)");
  app.add_option("--gpus", f.gpus, "GPUs in the job")->check(CLI::Range(1, 1 << 24));
  if (with_layout) {
    app.add_option("--tp", f.tp, "Tensor-parallel degree")->check(CLI::Range(1, 1 << 16));
    app.add_option("--pp", f.pp, "Pipeline-parallel degree")->check(CLI::Range(1, 1 << 16));
    app.add_option("--dp", f.dp, "Data-parallel degree (default: gpus/(tp*pp*cp))")->check(CLI::Range(1, 1 << 24));
    app.add_option("--cp", f.cp, "Context-parallel degree")->check(CLI::Range(1, 1 << 16));
    app.add_option("--ep", f.ep, "Expert-parallel degree")->check(CLI::Range(1, 1 << 16));
    app.add_option("--etp", f.etp,
                   "Expert tensor-parallel degree (default: the stack's, else tp); ep*etp divides tp*cp*dp")
        ->check(CLI::Range(1, 1 << 16));
    app.add_option("--vp", f.vp, "Virtual pipeline chunks per stage (interleaved 1F1B when > 1)")->check(CLI::Range(1, 1 << 10));
    app.add_option("--zero", f.zero,
                   "ZeRO stage 0-3 (1 = Megatron distributed optimizer; default: the stack's, 3 for PyTorch FSDP and "
                   "DeepSpeed ZeRO-3, 0 for Megatron-LM 2021-22, else 1)")
        ->check(CLI::Range(0, 3));
    app.add_flag("--sp", f.sp, "Sequence parallelism");
    app.add_option("--mbs", f.mbs, "Micro-batch size")->check(CLI::Range(1, 1 << 20));
    app.add_option("--recompute", f.recompute, "none|selective|full|auto (auto: least that fits)");
    app.add_option("--recompute-layers", f.recompute_layers,
                   "With --recompute full: recompute only the first N layers of each pipeline chunk (Megatron "
                   "--recompute-method block --recompute-num-layers N; default: all)")
        ->check(CLI::Range(1, 1 << 20));
    app.add_option("--recompute-modules", f.recompute_modules,
                   "With --recompute selective: the Megatron-Core modules recomputed, among core_attn, layernorm, "
                   "mlp, moe_act, mla_up_proj, moe, shared_experts (or torchtitan's per-op policy, op_sac) joined by commas (--recompute-modules; "
                   "default: core_attn)");
    app.add_option("--stage-layers", f.stage_layers, "Layers per pipeline stage, comma separated")->delimiter(',');
    app.add_option("--pipeline-layout", f.pipeline_layout,
                   "Megatron-Core's pipeline layout (--pipeline-model-parallel-layout), e.g. \"Et|(tt|)*30mL\": "
                   "one entry per virtual stage (pp x vp), E embedding, t decoder layer, m MTP module, L loss");
  }
  app.add_option("--gbs", f.gbs, "Global batch size (sequences)")->check(CLI::Range(1, 1 << 30));
  app.add_option("--from-megatron", f.from_megatron, "Import a Megatron-LM launch script or args file (flags given win)");
  app.add_option("--from-nemo", f.from_nemo, "Import a NeMo / Megatron-Bridge recipe YAML (flags given win)");
  app.add_option("--from-deepspeed", f.from_deepspeed, "Import a DeepSpeed config JSON (flags given win)");
  app.add_option("--seq", f.seq, "Sequence length")->check(CLI::Range(1, 1 << 24));
  app.add_option("--sample-len", f.sample_len,
                 "Packed sequences: mean tokens per sample packed into each --seq sequence; fused attention runs "
                 "within each sample (THD; default: one sample per sequence)")
      ->check(CLI::Range(1, 1 << 24));
  app.add_option("--peft", f.peft, "none|lora: LoRA freezes the base weights and trains low-rank adapters");
  app.add_option("--lora-rank", f.lora_rank, "With --peft lora: the adapters' rank (default 32)")
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--lora-targets", f.lora_targets,
                 "With --peft lora: the linears adapted, among linear_qkv, linear_proj, linear_fc1, linear_fc2 "
                 "joined by commas (default: all four)");
  app.add_option("--precision", f.precision, "fp16|bf16|fp8|fp4 (fp4: NVFP4, Blackwell)");
  app.add_option("--grad-dtype", f.grad_dtype, "fp32|fp16|bf16 gradient (and reduction) type (default: the stack's)");
  app.add_option("--optimizer", f.optimizer, "adam|sgd|muon (Muon: Megatron-Core's layer-wise distributed Muon)");
  app.add_option("--attention", f.attention,
                 "flash|flash2|flash_triton|unfused: fused attention as the profile measures it (cuDNN on Hopper and "
                 "Blackwell), FlashAttention-2 (what Transformer Engine runs with NVTE_FUSED_ATTN=0), FlashAttention "
                 "in Triton (llm-foundry's attn_impl triton of 2023), or Megatron's unfused attention (default: the "
                 "stack's)");
  app.add_option("--tp-comm-overlap", f.tp_comm_overlap, "on|off: TP collectives pipelined with GEMMs");
  app.add_option("--compile", f.compile,
                 "on|off: torch.compile of each transformer block fuses the element-wise chains of eager model code "
                 "(norms, SwiGLU, residual adds, RoPE), as torchtitan's --training.compile (default off: the stack's kernels)");
  app.add_option("--overlap-grad-reduce", f.overlap_grad_reduce, "on|off: DP buckets overlap the last backward");
  app.add_option("--overlap-param-gather", f.overlap_param_gather, "on|off: ZeRO param all-gather overlaps forward");
  app.add_option("--moe-imbalance", f.moe_imbalance,
                 "MoE routing skew: the busiest EP rank gets (1 + X) x its balanced share (default 0: routing "
                 "balanced by force, as published benchmarks run)")
      ->check(CLI::Range(0.0, 10.0));
  app.add_option("--moe-capacity-factor", f.moe_capacity_factor,
                 "Token-drop MoE: every expert computes this multiple of its balanced share, padded or dropped "
                 "(default 0: dropless)")
      ->check(CLI::Range(0.0, 64.0));
  app.add_option("--moe-dispatcher", f.moe_dispatcher,
                 "alltoall|allgather|flex: how MoE tokens reach their experts (flex: DeepEP/HybridEP, one copy per "
                 "destination node; default: the stack's)");
  app.add_option("--cross-entropy", f.cross_entropy,
                 "unfused|native|te|torch|xentropy|compiled: the LM head's cross-entropy (Megatron-Core "
                 "vocab_parallel_cross_entropy, its jit_fuser fusion, Transformer Engine's Triton kernels, "
                 "torch.nn.functional.cross_entropy, apex's xentropy kernel, or torch's compiled by Inductor; "
                 "default: the stack's)");
  app.add_option("--moe-a2a-overlap", f.moe_a2a_overlap,
                 "on|off: expert-parallel dispatch/combine overlapped with another micro-batch's compute");
  app.add_option("--bf16-layers-start", f.bf16_layers_start,
                 "fp8/fp4 runs: leading transformer layers kept in bf16 (Megatron --num-layers-at-start-in-bf16; "
                 "default: the stack's for fp8 current scaling, else 0)")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--bf16-layers-end", f.bf16_layers_end,
                 "fp8/fp4 runs: trailing transformer layers kept in bf16 (--num-layers-at-end-in-bf16; default: as "
                 "--bf16-layers-start)")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--cpu-offload-layers", f.offload_layers,
                 "Activations of the first N layers offloaded to host memory between forward and backward "
                 "(Megatron-Core --cpu-offloading-num-layers)")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--cuda-graphs", f.cuda_graphs,
                 "none|full_iteration|SCOPES: CUDA-graph-captured work costs no host time; SCOPES among attn, "
                 "moe_router, moe_preprocess, mamba joined by commas (default: the stack's)");
  app.add_option("--tp-overlap-rs", f.tp_overlap_rs,
                 "PROJ,FC2: how --tp-comm-overlap overlaps the projection's and FC2's forward reduce-scatter, each "
                 "ring (ring exchange) or the SMs its pipelined overlap keeps (Transformer Engine ub config num_sm; "
                 "default: the stack's, TE's 16,16)");
  app.add_option("--fp8-param-gather", f.fp8_param_gather,
                 "on|off: fp8 runs keep parameters in fp8 and all-gather them in fp8 (default: the stack's)");
  app.add_option("--fp8-recipe", f.fp8_recipe,
                 "delayed|current|mxfp8: how fp8 runs scale GEMM operands (default: the stack's; mxfp8 needs Blackwell)");
  app.add_option("--overlap-p2p-comm", f.overlap_p2p_comm,
                 "on|off: interleaved pipeline sends and recvs left in flight across the next pass");
  app.add_option("--speed-spread", f.speed_spread,
                 "Relative std dev of speed between the job's GPUs, which run at the slowest one's pace "
                 "(default: the profile's; 0 = identical GPUs)")
      ->check(CLI::Range(0.0, 0.5));
  app.add_flag("--json", f.json, "Print one JSON object");
}

void add_residuals_flag(CLI::App& app, JobFlags& f) {
  app.add_option("--residuals", f.residuals,
                 "dtsim-residuals/1 file the uncertainty interval comes from (default: calibration/residuals.json, "
                 "written by dtsim validate --residuals)");
}

namespace {

// The residuals an interval comes from (--residuals, else the data dir's), with `how` pricing the
// job's key over them; no file in the data dir: no interval, said so.
calibrate::Uncertainty job_interval(const JobFlags& f, const spec::Cluster& cluster, const std::string& framework,
                                    std::int64_t gpus, spec::Dtype precision,
                                    calibrate::Uncertainty (*how)(const std::vector<spec::ResidualCase>&,
                                                                  const calibrate::JobKey&)) {
  std::string path = f.residuals.empty() ? spec::data_dir() + "/calibration/residuals.json" : f.residuals;
  if (!f.residuals.empty()) spec::require_path("--residuals", path);
  std::error_code ec;
  if (f.residuals.empty() && !std::filesystem::exists(path, ec))
    return calibrate::no_residuals("no residuals file (" + path + ")");
  spec::ResidualsFile file = spec::load_residuals_file(path);
  return how(file.cases, {.gpu = calibrate::gpu_preset(cluster), .framework = framework,
                          .precision = calibrate::precision_class(precision), .gpus = gpus});
}

}  // namespace

calibrate::Uncertainty job_uncertainty(const JobFlags& f, const spec::Cluster& cluster, const std::string& framework,
                                       std::int64_t gpus, spec::Dtype precision) {
  return job_interval(f, cluster, framework, gpus, precision, calibrate::uncertainty);
}

calibrate::Uncertainty job_peak_uncertainty(const JobFlags& f, const spec::Cluster& cluster,
                                            const std::string& framework, std::int64_t gpus, spec::Dtype precision) {
  return job_interval(f, cluster, framework, gpus, precision, calibrate::peak_uncertainty);
}

namespace {

// A flag naming one of `all` by its to_string name; empty leaves `out` as it is.
template <typename E>
void enum_flag(const std::string& flag, const std::string& value, std::initializer_list<E> all, E& out) {
  if (value.empty()) return;
  std::string names;
  for (E e : all) {
    if (value == spec::to_string(e)) {
      out = e;
      return;
    }
    names += (names.empty() ? "" : ", ") + std::string(spec::to_string(e));
  }
  std::size_t last = names.rfind(", ");
  if (last != std::string::npos) names.replace(last, 2, " or ");
  throw SpecError(flag, "expected " + names + ", got \"" + value + "\"");
}

}  // namespace

spec::Dtype precision(const JobFlags& f) { return parse_dtype("--precision", f.precision, true); }

spec::Dtype grad_dtype(const JobFlags& f, const spec::Software& sw, spec::Dtype precision) {
  // The flag, else the software stack's main grads for this precision.
  return !f.grad_dtype.empty() ? parse_dtype("--grad-dtype", f.grad_dtype, false) : spec::main_grad_dtype(sw, precision);
}

spec::Training resolve_training(const JobFlags& f, const spec::Stack& stack, const spec::Software& sw) {
  spec::Training t;
  t.global_batch = f.gbs;
  t.seq_len = f.seq;
  t.precision = precision(f);
  t.grad_dtype = grad_dtype(f, sw, t.precision);
  if (f.optimizer != "adam" && f.optimizer != "sgd" && f.optimizer != "muon")
    throw SpecError("--optimizer", "expected adam, sgd or muon, got \"" + f.optimizer + "\"");
  t.optimizer = f.optimizer == "adam" ? spec::Optimizer::adam : f.optimizer == "sgd" ? spec::Optimizer::sgd : spec::Optimizer::muon;
  t.moe_imbalance = f.moe_imbalance;
  t.moe_capacity_factor = f.moe_capacity_factor;
  std::int64_t edge = spec::current_scaling_bf16_layers(stack.defaults, t.precision, sw.fp8_recipe);
  t.bf16_layers_start = f.bf16_layers_start >= 0 ? f.bf16_layers_start : edge;
  t.bf16_layers_end = f.bf16_layers_end >= 0 ? f.bf16_layers_end : edge;
  t.offload_layers = f.offload_layers;
  t.sample_len = f.sample_len;
  // The stack's selective recompute (torchtitan's per-op policy): what --recompute selective,
  // --recompute auto and plan's selective layouts recompute on it unless --recompute-modules says.
  t.recompute_modules = stack.defaults.recompute_modules.value_or(0);
  if (f.peft != "none" && f.peft != "lora") throw SpecError("--peft", "expected none or lora, got \"" + f.peft + "\"");
  if (f.peft == "none" && (f.lora_rank > 0 || !f.lora_targets.empty()))
    throw SpecError(f.lora_rank > 0 ? "--lora-rank" : "--lora-targets", "expected --peft lora with it, got --peft none");
  if (f.peft == "lora") {
    // NeMo 2 / Megatron-Bridge LoRA defaults: dim 32 on linear_qkv, linear_proj, linear_fc1, linear_fc2
    // (nemo/collections/llm/peft/lora.py).
    t.peft = spec::Peft::lora;
    t.lora_rank = f.lora_rank > 0 ? f.lora_rank : 32;
    t.lora_targets = f.lora_targets.empty() ? spec::parse_lora_targets("linear_qkv,linear_proj,linear_fc1,linear_fc2", "")
                                            : spec::parse_lora_targets(f.lora_targets, "--lora-targets");
  }
  // Muon's layer-wise optimizer gathers bf16 parameters: the stack's fp8 gather does not apply.
  bool fp8_gather_default = stack.defaults.fp8_param_gather.value_or(false) && t.optimizer != spec::Optimizer::muon;
  t.fp8_params = t.precision == spec::Dtype::fp8 && on_off("--fp8-param-gather", f.fp8_param_gather, fp8_gather_default);
  t.param_remainders = spec::param_remainders(sw, t);
  return t;
}

spec::Software resolve_software(const JobFlags& f, const spec::Software& d) {
  spec::Software s = d;
  if (!f.attention.empty()) {
    if (f.attention != "flash" && f.attention != "flash2" && f.attention != "flash_triton" && f.attention != "unfused")
      throw SpecError("--attention", "expected flash, flash2, flash_triton or unfused, got \"" + f.attention + "\"");
    s.attention = f.attention == "flash"          ? spec::AttentionKernel::flash
                  : f.attention == "flash2"       ? spec::AttentionKernel::flash2
                  : f.attention == "flash_triton" ? spec::AttentionKernel::flash_triton
                                                  : spec::AttentionKernel::unfused;
  }
  if (on_off("--compile", f.compile, false)) spec::apply_compile(s);
  s.tp_comm_overlap = on_off("--tp-comm-overlap", f.tp_comm_overlap, d.tp_comm_overlap);
  s.overlap_grad_reduce = on_off("--overlap-grad-reduce", f.overlap_grad_reduce, d.overlap_grad_reduce);
  s.overlap_param_gather = on_off("--overlap-param-gather", f.overlap_param_gather, d.overlap_param_gather);
  s.overlap_p2p_comm = on_off("--overlap-p2p-comm", f.overlap_p2p_comm, d.overlap_p2p_comm);
  s.moe_a2a_overlap = on_off("--moe-a2a-overlap", f.moe_a2a_overlap, d.moe_a2a_overlap);
  if (!f.cuda_graphs.empty()) s.cuda_graphs = spec::parse_cuda_graphs(f.cuda_graphs, "--cuda-graphs");
  if (!f.tp_overlap_rs.empty()) s.tp_overlap_rs = spec::parse_tp_overlap_rs(f.tp_overlap_rs, "--tp-overlap-rs");
  enum_flag("--moe-dispatcher", f.moe_dispatcher,
            {spec::MoeDispatcher::alltoall, spec::MoeDispatcher::allgather, spec::MoeDispatcher::flex},
            s.moe_dispatcher);
  enum_flag("--cross-entropy", f.cross_entropy,
            {spec::CrossEntropy::unfused, spec::CrossEntropy::native, spec::CrossEntropy::te, spec::CrossEntropy::torch,
             spec::CrossEntropy::xentropy, spec::CrossEntropy::compiled},
            s.cross_entropy);
  enum_flag("--fp8-recipe", f.fp8_recipe, {spec::Fp8Recipe::delayed, spec::Fp8Recipe::current, spec::Fp8Recipe::mxfp8},
            s.fp8_recipe);
  return s;
}

spec::Stack resolve_stack(const JobFlags& f) {
  return spec::load_stack(f.framework.empty() ? spec::kDefaultFramework : f.framework, "--framework");
}

spec::Calibration resolve_calibration(const JobFlags& f, const spec::Cluster& cluster) {
  // The profile named by the cluster file unless --calibration overrides it.
  spec::Calibration c = f.calibration.empty() ? spec::load_calibration(cluster.calibration, "--cluster")
                                              : spec::load_calibration(f.calibration, "--calibration");
  if (f.speed_spread >= 0) c.compute.speed_spread = f.speed_spread;
  return c;
}

void apply_imports(CLI::App& sub, JobFlags& f) {
  struct Source {
    const char* flag;
    const std::string& path;
    imports::Imported (*read)(const std::string&, const std::string&);
  };
  for (const Source& s : {Source{"--from-megatron", f.from_megatron, imports::from_megatron},
                          Source{"--from-nemo", f.from_nemo, imports::from_nemo},
                          Source{"--from-deepspeed", f.from_deepspeed, imports::from_deepspeed}}) {
    if (s.path.empty()) continue;
    spec::require_path(s.flag, s.path);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(s.path, ec))
      throw SpecError(s.flag, "expected an existing file, got \"" + s.path + "\" (no such file)");
    imports::Imported in = s.read(spec::read_spec_text(s.path), s.path);
    const std::vector<std::string>& w = in.flags;
    for (std::size_t i = 0; i < w.size(); ++i) {
      bool has_value = i + 1 < w.size() && w[i + 1].rfind("--", 0) != 0;
      std::string value = has_value ? w[i + 1] : "true";
      CLI::Option* o = sub.get_option_no_throw(w[i]);
      if (o == nullptr)
        f.import_notes.push_back(s.path + ": " + w[i] + (has_value ? " " + value : "") + " not used (not a flag of " +
                                 sub.get_name() + ")");
      else if (o->count() == 0) {
        o->add_result(value);
        o->run_callback();
      }
      if (has_value) ++i;
    }
    if (in.model && f.model.empty() && !f.imported_model) f.imported_model = *in.model;
    for (const std::string& n : in.notes) f.import_notes.push_back(s.path + ": " + n);
    for (const std::string& n : in.ignored) f.import_notes.push_back(s.path + ": ignored " + n);
  }
  if (f.model.empty() && !f.imported_model)
    throw SpecError("--model", "expected a preset name or a file (or a config whose architecture --from-megatron or "
                               "--from-nemo reads), got none");
  if (f.gbs == 0) throw SpecError("--gbs", "expected a global batch size (or an imported config stating it), got none");
}

spec::Model job_model(const JobFlags& f) {
  return f.model.empty() && f.imported_model ? *f.imported_model : spec::load_model(f.model, "--model");
}

Job resolve_job(const JobFlags& f) {
  Job j;
  j.model = job_model(f);
  j.notes = f.import_notes;
  j.cluster = spec::load_cluster(f.cluster, "--cluster");
  j.calibration = resolve_calibration(f, j.cluster);
  j.stack = resolve_stack(f);
  std::vector<std::string> recipe_notes;
  spec::Software on_gpu = spec::software_on(j.stack, j.cluster.gpu.name, j.model.is_moe(), &recipe_notes,
                                            {.moe_dispatcher = !f.moe_dispatcher.empty(), .attention = !f.attention.empty()});
  j.software = resolve_software(f, on_gpu);
  spec::check_attention(j.software.attention, j.calibration.compute, j.calibration.name,
                        f.attention.empty() ? "--framework" : "--attention");
  j.notes.insert(j.notes.end(), recipe_notes.begin(), recipe_notes.end());
  derive_degrees(f, j);
  if (f.etp == 0 && j.model.is_moe() && j.stack.defaults.expert_tensor_parallel) {
    j.par.etp = *j.stack.defaults.expert_tensor_parallel;
    j.notes.push_back("etp = " + std::to_string(j.par.etp) + " (" + j.stack.label() + " recipes)");
  }
  if (f.zero >= 0) {
    j.par.zero_stage = f.zero;
  } else {
    j.par.zero_stage = j.stack.defaults.zero_stage.value_or(1);
    if (j.par.zero_stage != 1) j.notes.push_back("zero " + std::to_string(j.par.zero_stage) + " (" + j.stack.label() + " recipes)");
  }
  j.par.sequence_parallel = f.sp;
  j.par.stage_layers = f.stage_layers;
  if (!f.pipeline_layout.empty()) {
    if (!f.stage_layers.empty())
      throw SpecError("--pipeline-layout", "expected it or --stage-layers, not both, got both");
    j.par.chunk_layers =
        spec::parse_pipeline_layout(f.pipeline_layout, j.model, j.par.pp, j.par.vp, "--pipeline-layout");
  }
  if (std::string note = spec::reference_layout_note(j.model, j.par); !note.empty()) j.notes.push_back(note);
  j.train = resolve_training(f, j.stack, j.software);
  if ((f.bf16_layers_start < 0 && j.train.bf16_layers_start > 0) || (f.bf16_layers_end < 0 && j.train.bf16_layers_end > 0))
    j.notes.push_back("bf16 layers: first " + std::to_string(j.train.bf16_layers_start) + ", last " +
                      std::to_string(j.train.bf16_layers_end) + " (" + j.stack.label() + " fp8 current-scaling recipe)");
  j.train.micro_batch = f.mbs;
  j.train.recompute = parse_recompute(f.recompute);
  j.auto_recompute = j.train.recompute == spec::Recompute::automatic;
  if (j.auto_recompute) j.train.recompute = spec::Recompute::none;
  j.train.recompute_layers = f.recompute_layers;
  if (f.recompute_layers > 0 && j.train.recompute != spec::Recompute::full)
    throw SpecError("--recompute-layers", "expected --recompute full with it, got --recompute " + f.recompute);
  if (!f.recompute_modules.empty()) {
    if (j.train.recompute != spec::Recompute::selective)
      throw SpecError("--recompute-modules", "expected --recompute selective with it, got --recompute " + f.recompute);
    j.train.recompute_modules = spec::parse_recompute_modules(f.recompute_modules, "--recompute-modules");
  } else if (j.train.recompute_modules != 0 && j.train.recompute == spec::Recompute::selective) {
    j.notes.push_back("recompute modules: " + spec::recompute_modules_text(j.train.recompute_modules) + " (" +
                      j.stack.label() + " recipes)");
  }
  spec::check_job(j.model, j.cluster, j.gpus, j.par, j.train);
  if (j.software.mxfp8(j.train.precision) && cost::fp8_needs_transpose(j.cluster.gpu))
    throw SpecError("--fp8-recipe", "expected delayed or current on " + j.cluster.gpu.name +
                                        " (MXFP8 needs Blackwell's block-scaled tensor cores), got mxfp8");
  return j;
}

}  // namespace dtsim::cli
