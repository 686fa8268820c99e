// Megatron-LM arguments (megatron/training/arguments.py) mapped to dtsim job flags and a model
// shape, with Megatron's own defaults and derivations: --ffn-hidden-size 4h (swiglu: 8h/3 rounded
// down to a multiple of 64), the vocabulary padded to a multiple of --make-vocab-size-divisible-by
// x TP, --recompute-activations meaning selective recompute, sequence parallelism off without TP.
#include <limits>
#include <string>

#include "core/errors.h"
#include "imports/megatron.h"
#include "spec/job.h"

namespace dtsim::imports::megatron {
namespace {

constexpr std::int64_t kMaxDegree = std::int64_t{1} << 16;  // as dtsim's --tp, --pp, ...
constexpr std::int64_t kMaxSize = std::numeric_limits<std::int32_t>::max();

void read_layout(Args& a, JobDraft& j, Imported& out) {
  j.tp = a.integer("--tensor-model-parallel-size", 1, kMaxDegree);
  j.pp = a.integer("--pipeline-model-parallel-size", 1, kMaxDegree);
  j.cp = a.integer("--context-parallel-size", 1, kMaxDegree);
  j.ep = a.integer("--expert-model-parallel-size", 1, kMaxDegree);
  j.etp = a.integer("--expert-tensor-parallel-size", 1, kMaxDegree);
  j.sp = a.flag("--sequence-parallel");
  if (j.sp && j.tp.value_or(1) == 1) {
    j.sp = false;
    out.notes.push_back("sp: off (Megatron-LM turns --sequence-parallel off without tensor parallelism)");
  }
  bool distributed = a.flag("--use-distributed-optimizer");
  j.zero = distributed ? 1 : 0;
  out.notes.push_back(distributed ? "zero = 1 (--use-distributed-optimizer shards the optimizer states over DP)"
                                  : "zero = 0 (no --use-distributed-optimizer: every DP rank holds all optimizer states)");
  if (a.flag("--use-torch-fsdp2")) {
    j.zero = 3;
    out.notes.push_back("zero = 3 (--use-torch-fsdp2 shards parameters, gradients and optimizer states)");
  }
  if (auto stage = a.integer("--zero-stage", 0, 3); stage) {
    j.zero = static_cast<int>(*stage);
    out.notes.push_back("zero = " + std::to_string(*stage) + " (Megatron-DeepSpeed --zero-stage)");
  }
  if (a.flag("--overlap-grad-reduce")) j.overlap_grad_reduce = true;
  else out.notes.push_back("overlap-grad-reduce: not set, so dtsim's stack default applies (Megatron-LM without "
                           "--overlap-grad-reduce reduces gradients after the backward: --overlap-grad-reduce off)");
  if (a.flag("--overlap-param-gather")) j.overlap_param_gather = true;
  if (a.flag("--tp-comm-overlap")) j.tp_comm_overlap = true;
}

void read_virtual(Args& a, const ModelDraft& d, JobDraft& j, Imported& out) {
  auto vp = a.integer("--virtual-pipeline-model-parallel-size", 1, kMaxDegree);
  if (auto layout = a.text("--pipeline-model-parallel-layout")) {
    j.vp = vp;
    std::string name = "--pipeline-model-parallel-layout";
    set_pipeline_layout(j, *layout, a.where(name), a.where("--virtual-pipeline-model-parallel-size"), out.notes);
    return;
  }
  auto per_chunk = a.integer("--num-layers-per-virtual-pipeline-stage", 1, kMaxSize);
  if (!per_chunk) {
    j.vp = vp;
    return;
  }
  std::string name = "--num-layers-per-virtual-pipeline-stage";
  if (!d.layers) throw SpecError(a.where(name), "expected --num-layers with " + name + ", got none");
  std::int64_t layers = d.layers->value, pp = j.pp.value_or(1);
  if (layers % pp != 0 || (layers / pp) % *per_chunk != 0)
    throw SpecError(a.where(name), "expected a divisor of the layers per pipeline stage (--num-layers " +
                                       std::to_string(layers) + " over --pipeline-model-parallel-size " +
                                       std::to_string(pp) + ") for " + name + ", got " + std::to_string(*per_chunk));
  j.vp = layers / pp / *per_chunk;
  out.notes.push_back("vp = " + std::to_string(layers) + " layers / " + std::to_string(pp) + " stages / " +
                      std::to_string(*per_chunk) + " layers per chunk = " + std::to_string(*j.vp) + " (" + name + ")");
}

void read_batch(Args& a, JobDraft& j, Imported& out) {
  j.mbs = a.integer("--micro-batch-size", 1, std::int64_t{1} << 20);
  j.gbs = a.integer("--global-batch-size", 1, std::int64_t{1} << 30);
  j.seq = a.integer("--seq-length", 1, std::int64_t{1} << 24);
  if (!j.gbs)
    out.notes.push_back("gbs: no --global-batch-size (Megatron-LM then steps on one micro-batch per DP rank); pass --gbs");
  if (!j.seq) out.notes.push_back("seq: no --seq-length; dtsim's default applies");
}

void read_precision(Args& a, JobDraft& j, Imported& out) {
  bool fp16 = a.flag("--fp16"), bf16 = a.flag("--bf16");
  if (fp16 && bf16) throw SpecError(a.where("--bf16"), "expected one of --fp16 and --bf16, got both");
  std::optional<std::string> fp8 = a.choice("--fp8-format", {"e4m3", "hybrid"});
  j.precision = fp8 ? "fp8" : fp16 ? "fp16" : bf16 ? "bf16" : std::optional<std::string>();
  if (fp8) out.notes.push_back("precision = fp8 (--fp8-format " + *fp8 + ")");
  if (!j.precision)
    out.notes.push_back("precision: neither --fp16 nor --bf16 (Megatron-LM then trains in fp32, which dtsim does not "
                        "simulate); dtsim's default applies");
  if (auto recipe = a.text("--fp8-recipe"); recipe) {
    if (*recipe == "delayed" || *recipe == "mxfp8") j.fp8_recipe = *recipe;
    else if (*recipe == "tensorwise") j.fp8_recipe = "current";
    else a.ignore("--fp8-recipe", "dtsim models the delayed, tensorwise and mxfp8 recipes");
  }
  if (a.flag("--fp8-param-gather")) j.fp8_param_gather = true;
  if (a.flag("--accumulate-allreduce-grads-in-fp32")) j.grad_dtype = "fp32";
}

void read_recompute(Args& a, JobDraft& j, Imported& out) {
  const std::string method_flag = "--recompute-method", layers_flag = "--recompute-num-layers";
  auto granularity = a.choice("--recompute-granularity", {"full", "selective"});
  auto method = a.choice(method_flag, {"uniform", "block"});
  auto layers = a.integer(layers_flag, 1, kMaxSize);
  if (a.flag("--recompute-activations")) granularity = "selective";  // as arguments.py sets it
  if (a.flag("--checkpoint-activations") && !granularity) {
    granularity = "full";
    method = "uniform";
    out.notes.push_back("recompute = full (--checkpoint-activations, the old --recompute-granularity full)");
  }
  auto modules = a.words("--recompute-modules");
  if (granularity != "full") {
    if (granularity) j.recompute = "selective";
    if (!granularity && modules) a.ignore("--recompute-modules", "applies only with --recompute-granularity selective");
    if (granularity && modules && !modules->empty()) {
      std::string list;
      for (const std::string& m : *modules) list += (list.empty() ? "" : ",") + m;
      static_cast<void>(spec::parse_recompute_modules(list, a.where("--recompute-modules")));
      j.recompute_modules = list;
    }
    if (method) a.ignore(method_flag, "applies only with --recompute-granularity full");
    if (layers) a.ignore(layers_flag, "applies only with --recompute-granularity full");
    return;
  }
  j.recompute = "full";
  if (modules) a.ignore("--recompute-modules", "applies only with --recompute-granularity selective");
  if (!method) {
    out.notes.push_back("recompute: --recompute-granularity full without --recompute-method (Megatron-LM needs "
                        "uniform or block); taken as uniform, every layer recomputed");
  } else if (*method == "block") {
    if (!layers) throw SpecError(a.where(method_flag), "expected " + layers_flag + " with --recompute-method block, got none");
    j.recompute_layers = layers;
    out.notes.push_back("recompute = full for the first " + std::to_string(*layers) +
                        " layers of each pipeline chunk (--recompute-method block)");
  } else if (layers && *layers > 1) {
    out.notes.push_back("recompute = full: --recompute-method uniform recomputes every layer (in groups of " +
                        std::to_string(*layers) + "; dtsim keeps one checkpoint per layer)");
  }
}

void read_attention(Args& a, JobDraft& j) {
  auto backend = a.choice("--attention-backend", {"auto", "flash", "fused", "unfused", "local"});
  if (backend && (*backend == "unfused" || *backend == "local")) j.attention = "unfused";
  else if (backend) a.ignore("--attention-backend", "dtsim's default attention is flash");
  if (auto optimizer = a.text("--optimizer"); optimizer) {
    if (*optimizer == "adam" || *optimizer == "sgd" || *optimizer == "muon") j.optimizer = *optimizer;
    else if (*optimizer == "dist_muon") j.optimizer = "muon";  // Muon with the layer-wise distributed optimizer
    else a.ignore("--optimizer", "dtsim models adam, sgd and muon");
  }
}

}  // namespace

void read_args(const Launch& launch, const std::string& file, JobDraft& job, Imported& out) {
  Args a(launch.args, file, out);
  read_layout(a, job, out);
  read_batch(a, job, out);
  ModelDraft d = read_shape(a, job, out);
  read_virtual(a, d, job, out);
  read_precision(a, job, out);
  read_recompute(a, job, out);
  read_attention(a, job);
  resolve_model(d, file, job, out);
  a.ignore_rest();
}

}  // namespace dtsim::imports::megatron

namespace dtsim::imports {

Imported from_megatron(const std::string& text, const std::string& file) {
  Imported out;
  JobDraft job;
  megatron::Launch launch = megatron::find_launch(text, file);
  megatron::read_gpus(launch, file, job, out);
  megatron::read_args(launch, file, job, out);
  out.flags = job_flags(job);
  return out;
}

}  // namespace dtsim::imports
