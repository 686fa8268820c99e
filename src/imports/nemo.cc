// NeMo recipes: NeMo 1.x YAML (megatron_gpt_config.yaml: trainer.devices/num_nodes/precision,
// model.tensor_model_parallel_size, model.optim.name, model.activations_checkpoint_*), NeMo 2.0
// serialised configs (trainer.strategy.*, trainer.plugins.precision, data.*, model.config.*), and
// Megatron-Bridge ConfigContainer YAML (model: the provider's fields, train: the batch sizes,
// optimizer:/ddp: the distributed optimizer and overlaps, mixed_precision:).
#include <limits>
#include <string>

#include "core/errors.h"
#include "imports/nemo.h"
#include "spec/job.h"

namespace dtsim::imports::nemo {
namespace {

constexpr std::int64_t kMaxDegree = std::int64_t{1} << 16;
constexpr std::int64_t kMaxGpus = std::int64_t{1} << 24;

// Parallel sizes: model.* (NeMo 1.x, Megatron-Bridge), trainer.strategy.* (NeMo 2.0).
Paths parallel(const std::string& key) { return join_paths(model_paths(key), {"trainer.strategy." + key}); }

void read_gpus(Recipe& r, JobDraft& j, Imported& out) {
  const yaml::Node* devices = r.peek("trainer.devices");
  if (devices != nullptr && devices->kind == yaml::Node::Kind::scalar &&
      (devices->value == "auto" || devices->value == "-1")) {
    r.find({"trainer.devices"});
    out.notes.push_back("gpus: trainer.devices is " + quoted(devices->value) + ", decided at run time; pass --gpus");
    return;
  }
  std::optional<std::int64_t> per_node;
  if (devices != nullptr && devices->kind == yaml::Node::Kind::sequence) {  // a list of device ids
    r.find({"trainer.devices"});
    per_node = static_cast<std::int64_t>(devices->items.size());
  } else {
    per_node = r.integer({"trainer.devices"}, 1, kMaxGpus);
  }
  std::int64_t nodes = r.integer({"trainer.num_nodes"}, 1, kMaxGpus).value_or(1);
  if (!per_node || *per_node == 0) {
    out.notes.push_back(r.has("trainer") ? "gpus: no trainer.devices; pass --gpus"
                                         : "gpus: not in the recipe (the launcher decides them); pass --gpus");
    return;
  }
  if (nodes * *per_node > kMaxGpus)
    throw SpecError(r.file(), "expected at most " + std::to_string(kMaxGpus) + " GPUs, got " + std::to_string(nodes) +
                                  " nodes x " + std::to_string(*per_node));
  j.gpus = nodes * *per_node;
  out.notes.push_back("gpus = " + std::to_string(nodes) + " nodes x " + std::to_string(*per_node) +
                      " (trainer.num_nodes x trainer.devices)");
}

void read_layout(Recipe& r, JobDraft& j, Imported& out) {
  j.tp = r.integer(parallel("tensor_model_parallel_size"), 1, kMaxDegree);
  j.pp = r.integer(parallel("pipeline_model_parallel_size"), 1, kMaxDegree);
  j.vp = r.integer(parallel("virtual_pipeline_model_parallel_size"), 1, kMaxDegree);
  if (auto layout = r.text(parallel("pipeline_model_parallel_layout"))) {
    auto at = [&](const std::string& key) {
      auto f = r.find(parallel(key));
      return f ? r.where(*f) : r.file();
    };
    set_pipeline_layout(j, *layout, at("pipeline_model_parallel_layout"), at("virtual_pipeline_model_parallel_size"),
                        out.notes);
  }
  j.cp = r.integer(parallel("context_parallel_size"), 1, kMaxDegree);
  j.ep = r.integer(parallel("expert_model_parallel_size"), 1, kMaxDegree);
  j.etp = r.integer(parallel("expert_tensor_parallel_size"), 1, kMaxDegree);
  j.sp = r.boolean(parallel("sequence_parallel")).value_or(false);
  if (j.sp && j.tp.value_or(1) == 1) {
    j.sp = false;
    out.notes.push_back("sp: off (sequence parallelism needs tensor parallelism; NeMo turns it off at TP 1)");
  }
}

void read_batch(Recipe& r, JobDraft& j, Imported& out) {
  j.mbs = r.integer({"model.micro_batch_size", "train.micro_batch_size", "data.micro_batch_size"}, 1, 1 << 20);
  j.gbs = r.integer({"model.global_batch_size", "train.global_batch_size", "data.global_batch_size"}, 1, 1 << 30);
  j.seq = r.integer(join_paths(model_paths("encoder_seq_length"), join_paths(model_paths("seq_length"),
                         {"data.seq_length", "dataset.sequence_length", "dataset.seq_length"})),
                    1, 1 << 24);
  if (!j.gbs) out.notes.push_back("gbs: no global_batch_size in the recipe; pass --gbs");
  if (!j.seq) out.notes.push_back("seq: no sequence length in the recipe; dtsim's default applies");
}

// fp16, bf16 or "fp32" from trainer.precision (Lightning's names), a Megatron-Bridge
// mixed_precision recipe name, or the provider's bf16/fp16 switches.
std::optional<std::string> base_precision(Recipe& r) {
  if (auto p = r.text({"trainer.precision", "trainer.plugins.precision"}); p) {
    if (*p == "16" || *p == "16-mixed" || *p == "fp16" || *p == "fp16-mixed") return "fp16";
    if (*p == "bf16" || *p == "bf16-mixed" || *p == "bf16-true") return "bf16";
    if (*p == "32" || *p == "32-true" || *p == "64" || *p == "64-true") return "fp32";
    std::optional<Recipe::Found> f = r.find({"trainer.precision", "trainer.plugins.precision"});
    r.fail(*f, "expected one of 16, 16-mixed, bf16, bf16-mixed, 32 for " + f->path + ", got " + quoted(*p));
  }
  const yaml::Node* mp = r.peek("mixed_precision");
  if (mp != nullptr && mp->kind == yaml::Node::Kind::scalar && !mp->is_null()) {
    std::string name = r.text({"mixed_precision"}).value_or("");
    return name.rfind("fp16", 0) == 0 ? "fp16" : "bf16";  // bf16_mixed, fp16_mixed, bf16_with_fp8_..._mixed
  }
  for (const char* type : {"bf16", "fp16"})
    if (r.boolean(join_paths({std::string("mixed_precision.") + type}, model_paths(type))).value_or(false)) return type;
  return std::nullopt;
}

void read_precision(Recipe& r, JobDraft& j, Imported& out) {
  std::optional<std::string> base = base_precision(r);
  if (base == "fp32") out.notes.push_back("precision: 32-bit training, which dtsim does not simulate; dtsim's default applies");
  else j.precision = base;
  // fp8: NeMo 1.x model.fp8: true; Megatron-Bridge fp8: hybrid|e4m3; or a mixed_precision recipe name
  std::optional<Recipe::Found> fp8 = r.find(join_paths(model_paths("fp8"), {"mixed_precision.fp8"}));
  const yaml::Node* mp = r.peek("mixed_precision");
  bool named = mp != nullptr && mp->kind == yaml::Node::Kind::scalar && mp->value.find("fp8") != std::string::npos;
  bool on = named;
  if (fp8) {
    std::optional<bool> b = yaml_bool(*fp8->node);
    if (!b && fp8->node->kind != yaml::Node::Kind::scalar)
      r.fail(*fp8, "expected true, false or an fp8 format (hybrid, e4m3) for " + fp8->path + ", got " +
                       yaml::describe(*fp8->node));
    on = on || b.value_or(true);  // a format name turns fp8 on
  }
  if (on) {
    j.precision = "fp8";
    out.notes.push_back("precision = fp8 (" + (named ? "mixed_precision " + quoted(mp->value) : fp8->path) + ")");
    if (named && mp->value.find("current") != std::string::npos) j.fp8_recipe = "current";
    if (named && mp->value.find("mxfp8") != std::string::npos) j.fp8_recipe = "mxfp8";
  }
  if (auto recipe = r.text(join_paths(model_paths("fp8_recipe"), {"mixed_precision.fp8_recipe"})); recipe) {
    if (*recipe == "delayed" || *recipe == "mxfp8") j.fp8_recipe = *recipe;
    else if (*recipe == "tensorwise") j.fp8_recipe = "current";
  }
  if (!j.precision) out.notes.push_back("precision: the recipe does not say; dtsim's default applies");
}

void read_recompute(Recipe& r, JobDraft& j, Imported& out) {
  auto granularity = r.choice(join_paths(model_paths("activations_checkpoint_granularity"), model_paths("recompute_granularity")),
                              {"full", "selective"});
  auto method = r.choice(join_paths(model_paths("activations_checkpoint_method"), model_paths("recompute_method")),
                         {"uniform", "block"});
  auto layers = r.integer(join_paths(model_paths("activations_checkpoint_num_layers"), model_paths("recompute_num_layers")),
                          1, std::numeric_limits<std::int32_t>::max());
  auto modules = r.find(model_paths("recompute_modules"));
  if (granularity != "full") {
    if (granularity) j.recompute = "selective";
    if (granularity && modules) {
      // Megatron-Core TransformerConfig.recompute_modules: a list of module names.
      if (modules->node->kind != yaml::Node::Kind::sequence)
        r.fail(*modules, "expected a list of module names for " + modules->path + ", got " + yaml::describe(*modules->node));
      std::string list;
      for (const auto& item : modules->node->items) {
        if (item->kind != yaml::Node::Kind::scalar)
          r.fail(*modules, "expected module names in " + modules->path + ", got " + yaml::describe(*item));
        list += (list.empty() ? "" : ",") + item->value;
      }
      if (!list.empty()) {
        static_cast<void>(spec::parse_recompute_modules(list, r.where(*modules)));
        j.recompute_modules = list;
      }
    }
    return;
  }
  if (modules) out.notes.push_back("recompute_modules: applies only with selective granularity (not used)");
  j.recompute = "full";
  if (method == "block" && layers) {
    j.recompute_layers = layers;
    out.notes.push_back("recompute = full for the first " + std::to_string(*layers) +
                        " layers of each pipeline chunk (recompute method block)");
  } else if (method != "uniform") {
    out.notes.push_back("recompute: full granularity without a uniform or block method with its layer count; taken as "
                        "uniform, every layer recomputed");
  }
}

void read_optimizer(Recipe& r, JobDraft& j, Imported& out) {
  if (auto name = r.text({"model.optim.name", "optim.name"}); name) {
    bool distributed = *name == "distributed_fused_adam" || *name == "mcore_distributed_optim";
    j.zero = distributed ? 1 : 0;
    out.notes.push_back("zero = " + std::to_string(*j.zero) + " (optimizer " + quoted(*name) +
                        (distributed ? ": optimizer states sharded over DP)" : ": not sharded)"));
    if (name->find("sgd") != std::string::npos) j.optimizer = "sgd";
  } else if (auto dist = r.boolean({"optimizer.use_distributed_optimizer", "ddp.use_distributed_optimizer",
                                    "optim.config.use_distributed_optimizer", "trainer.strategy.ddp.use_distributed_optimizer"});
             dist) {
    j.zero = *dist ? 1 : 0;
    out.notes.push_back("zero = " + std::to_string(*j.zero) + " (use_distributed_optimizer: " + (*dist ? "true)" : "false)"));
  } else {
    out.notes.push_back("zero: the recipe does not name its optimizer; dtsim's default applies");
  }
  if (r.text({"optimizer.optimizer"}) == "sgd") j.optimizer = "sgd";
  j.overlap_grad_reduce = r.boolean({"model.optim.overlap_grad_sync", "ddp.overlap_grad_reduce",
                                     "trainer.strategy.ddp.overlap_grad_reduce"});
  j.overlap_param_gather = r.boolean({"model.optim.overlap_param_sync", "ddp.overlap_param_gather",
                                      "trainer.strategy.ddp.overlap_param_gather"});
  j.tp_comm_overlap = r.boolean(join_paths(model_paths("ub_tp_comm_overlap"),
                                     join_paths(model_paths("tp_comm_overlap"), {"comm_overlap.tp_comm_overlap"})));
  // The userbuffer config's forward reduce-scatter overlaps (NeMo 1.x ub_tp_comm_overlap_cfg):
  // "pipeline" with its num_sm (Transformer Engine's default 16 when unstated) or "ring_exchange".
  bool stated = false;
  auto rs = [&](const char* gemm) {
    std::string cfg = std::string("ub_tp_comm_overlap_cfg.") + gemm;
    auto method = r.choice(model_paths(cfg + ".method"), {"pipeline", "ring_exchange"});
    auto sms = r.integer(model_paths(cfg + ".num_sm"), 1, 64);
    stated = stated || method.has_value();
    if (method == "ring_exchange") return std::string("ring");
    return std::to_string(sms.value_or(16));
  };
  std::string proj = rs("proj_fprop"), fc2 = rs("fc2_fprop");
  if (stated) {
    j.tp_overlap_rs = proj + "," + fc2;
    out.notes.push_back("tp-overlap-rs = " + *j.tp_overlap_rs +
                        " (ub_tp_comm_overlap_cfg proj_fprop, fc2_fprop: ring exchange or the pipelined overlap's num_sm)");
  }
}

// The linears a LoRA list names, as --lora-targets: NeMo 1.x's names (attention_qkv,
// attention_dense, mlp_fc1, mlp_fc2 and the groups attention, mlp, all; peft_config.py) or
// Megatron-Core's (linear_qkv, linear_proj, linear_fc1, linear_fc2: NeMo 2, Megatron-Bridge).
std::string lora_target_list(Recipe& r, const Recipe::Found& f) {
  if (f.node->kind != yaml::Node::Kind::sequence)
    r.fail(f, "expected a list of module names for " + f.path + ", got " + yaml::describe(*f.node));
  namespace lt = spec::lora_target;
  std::uint32_t mask = 0;
  for (const auto& item : f.node->items) {
    const std::string& n = item->value;
    std::uint32_t bits = n == "attention_qkv" || n == "linear_qkv"    ? lt::linear_qkv
                         : n == "attention_dense" || n == "linear_proj" ? lt::linear_proj
                         : n == "mlp_fc1" || n == "linear_fc1"          ? lt::linear_fc1
                         : n == "mlp_fc2" || n == "linear_fc2"          ? lt::linear_fc2
                         : n == "attention"                             ? lt::linear_qkv | lt::linear_proj
                         : n == "mlp"                                   ? lt::linear_fc1 | lt::linear_fc2
                         : n == "all" ? lt::linear_qkv | lt::linear_proj | lt::linear_fc1 | lt::linear_fc2
                                      : 0u;
    if (item->kind != yaml::Node::Kind::scalar || bits == 0)
      r.fail(f, "expected LoRA target modules (attention_qkv, attention_dense, mlp_fc1, mlp_fc2, attention, mlp, all, "
                "or linear_qkv, linear_proj, linear_fc1, linear_fc2) in " + f.path + ", got " + yaml::describe(*item));
    mask |= bits;
  }
  if (mask == 0) r.fail(f, "expected at least one LoRA target module in " + f.path + ", got an empty list");
  return spec::lora_targets_text(mask);
}

// Parameter-efficient fine-tuning: NeMo 1.x model.peft (peft_scheme, lora_tuning.adapter_dim and
// target_modules, default attention_qkv: nemo/collections/nlp/parts/peft_config.py) or a
// Megatron-Bridge / NeMo 2 peft: section (LoRA dim and target_modules, default the four linears
// at 32: nemo/collections/llm/peft/lora.py). Packed sequences do not state their samples' length.
void read_peft(Recipe& r, JobDraft& j, Imported& out) {
  // Peeked, not read: the data sections stay listed whole as not simulated.
  auto set = [&](const char* path) {
    const yaml::Node* n = r.peek(path);
    return n != nullptr && n->kind == yaml::Node::Kind::scalar && !n->is_null() && n->value != "false" &&
           n->value != "False" && n->value != "0" && n->value != "-1";
  };
  if (set("model.data.train_ds.packed_sequence") || set("dataset.packed_sequence_specs.packed_sequence_size"))
    out.notes.push_back("packed sequences: pass --sample-len with the data's mean sample length (attention runs within "
                        "each sample)");
  auto scheme = r.text({"model.peft.peft_scheme"});
  auto bridge = r.text({"peft._target_"});
  bool lora_1x = scheme && (*scheme == "lora");
  bool lora_2 = bridge && bridge->find("LoRA") != std::string::npos;
  if (scheme && !lora_1x && *scheme != "none") {
    out.notes.push_back("peft: scheme " + quoted(*scheme) + " is not modelled (LoRA is); simulated as full training");
    return;
  }
  if (!lora_1x && !lora_2) return;
  j.peft = "lora";
  std::string prefix = lora_1x ? "model.peft.lora_tuning." : "peft.";
  j.lora_rank = r.integer({prefix + (lora_1x ? "adapter_dim" : "dim")}, 1, 1 << 16);
  if (auto t = r.find({prefix + "target_modules"})) j.lora_targets = lora_target_list(r, *t);
  else if (lora_1x) j.lora_targets = "linear_qkv";
  out.notes.push_back("peft = lora, rank " + (j.lora_rank ? std::to_string(*j.lora_rank) : std::string("32 (default)")) +
                      " on " + j.lora_targets.value_or("linear_qkv,linear_proj,linear_fc1,linear_fc2 (default)") +
                      " (base weights frozen)");
}

}  // namespace

}  // namespace dtsim::imports::nemo

namespace dtsim::imports {

Imported from_nemo(const std::string& text, const std::string& file) {
  std::shared_ptr<const yaml::Node> root = yaml::parse(text, file);
  if (root->kind != yaml::Node::Kind::mapping)
    throw SpecError(file + ":" + std::to_string(root->line),
                    "expected a mapping of sections (trainer:, model:, ...), got " +
                        (root->is_null() ? std::string("an empty document") : yaml::describe(*root)));
  nemo::Recipe r(root, file);
  Imported out;
  JobDraft job;
  nemo::read_gpus(r, job, out);
  nemo::read_layout(r, job, out);
  nemo::read_batch(r, job, out);
  nemo::read_precision(r, job, out);
  nemo::read_recompute(r, job, out);
  nemo::read_optimizer(r, job, out);
  nemo::read_peft(r, job, out);
  ModelDraft d = nemo::read_shape(r, out);
  resolve_model(d, file, job, out);
  if (!job.model && !out.model) {
    if (auto target = r.text(nemo::model_paths("_target_")); target)
      out.notes.push_back("model: the recipe names " + quoted(*target) + " without its shape; pass the matching --model");
  }
  if (r.has("train") || r.has("trainer")) {
    job.framework = r.has("train") ? "nemo-megatron-bridge" : "nemo";
    out.notes.push_back("framework = " + *job.framework + " (a " + (r.has("train") ? "Megatron-Bridge" : "NeMo") +
                        " recipe: that stack's kernels and overlaps)");
  }
  r.ignore_rest(out);
  out.flags = job_flags(job);
  return out;
}

}  // namespace dtsim::imports
