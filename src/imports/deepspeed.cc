// DeepSpeed config JSON (deepspeed.ai/docs/config-json): batch sizes, ZeRO stage, precision.
// DeepSpeed checks train_batch_size = train_micro_batch_size_per_gpu x gradient_accumulation_steps
// x data-parallel size (runtime/config.py _batch_assertion); the config never states that size,
// so with all three batch keys the DP size follows, and with fewer it stays open.
#include <string>

#include "core/errors.h"
#include "core/text.h"
#include "imports/draft.h"
#include "spec/json_reader.h"

namespace dtsim::imports {
namespace {

using nlohmann::json;
using spec::ObjectReader;

constexpr std::int64_t kMaxBatch = std::int64_t{1} << 30;

// "auto" is the Hugging Face Trainer's placeholder, filled in at launch: known only then.
bool is_auto(const ObjectReader& r, const json& object, const std::string& key, Imported& out) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string() || it->get<std::string>() != "auto") return false;
  out.notes.push_back(key + ": \"auto\" in " + r.where(key) + " (filled in at launch by the Hugging Face Trainer)");
  return true;
}

std::optional<std::int64_t> batch_key(ObjectReader& r, const json& j, const std::string& key, Imported& out) {
  if (is_auto(r, j, key, out)) return std::nullopt;
  return r.optional_integer(key, 1, kMaxBatch);
}

void read_batch(ObjectReader& r, const json& j, JobDraft& job, Imported& out) {
  auto total = batch_key(r, j, "train_batch_size", out);
  auto micro = batch_key(r, j, "train_micro_batch_size_per_gpu", out);
  auto steps = batch_key(r, j, "gradient_accumulation_steps", out);
  job.gbs = total;
  job.mbs = micro;
  std::int64_t per_rank = micro.value_or(1) * steps.value_or(1);  // at most 2^60
  if (total && (micro || steps) && *total % per_rank != 0) {
    std::string factors = micro && steps ? "train_micro_batch_size_per_gpu x gradient_accumulation_steps (" +
                                               std::to_string(*micro) + " x " + std::to_string(*steps) + " = " +
                                               std::to_string(per_rank) + ")"
                          : micro ? "train_micro_batch_size_per_gpu (" + std::to_string(*micro) + ")"
                                  : "gradient_accumulation_steps (" + std::to_string(*steps) + ")";
    r.fail("train_batch_size", "expected a multiple of " + factors +
                                   ", as train_batch_size = micro x accumulation x dp, got " + std::to_string(*total));
  }
  if (total && micro && steps) {
    job.dp = *total / per_rank;
    out.notes.push_back("dp = train_batch_size / (train_micro_batch_size_per_gpu x gradient_accumulation_steps) = " +
                        std::to_string(*total) + " / (" + std::to_string(*micro) + " x " + std::to_string(*steps) +
                        ") = " + std::to_string(*job.dp));
    return;
  }
  out.notes.push_back("dp: a DeepSpeed config does not state it, and without all of train_batch_size, "
                      "train_micro_batch_size_per_gpu and gradient_accumulation_steps it does not follow; pass --dp or --gpus");
  if (!total && micro)
    out.notes.push_back("gbs = train_micro_batch_size_per_gpu x gradient_accumulation_steps x dp = " +
                        std::to_string(per_rank) + " x dp; pass --gbs");
  if (total && !micro)
    out.notes.push_back("mbs = train_batch_size / (gradient_accumulation_steps x dp); pass --mbs");
  if (!total && !micro) out.notes.push_back("gbs: no train_batch_size or train_micro_batch_size_per_gpu; pass --gbs");
}

// offload_optimizer / offload_param: {"device": "cpu" | "nvme" | "none"}; legacy cpu_offload: true.
void read_offload(ObjectReader& z, const json& zj, Imported& out) {
  for (const char* key : {"offload_optimizer", "offload_param"}) {
    if (!z.has(key)) continue;
    ObjectReader o = z.object(key);
    std::string device = o.optional_string("device").value_or("none");
    if (device != "none")
      out.ignored.push_back(std::string("zero_optimization.") + key + " (" + device +
                            (key == std::string("offload_optimizer") ? ": dtsim does not model optimizer offload)"
                                                                     : ": dtsim does not model parameter offload)"));
  }
  if (zj.contains("cpu_offload") && z.optional_boolean("cpu_offload").value_or(false))
    out.ignored.push_back("zero_optimization.cpu_offload (dtsim does not model optimizer offload)");
}

void read_zero(ObjectReader& r, const json& j, JobDraft& job, Imported& out) {
  if (!r.has("zero_optimization")) {
    job.zero = 0;
    out.notes.push_back("zero = 0 (no zero_optimization: DeepSpeed's default stage 0)");
    return;
  }
  const json& zj = j.at("zero_optimization");
  if (zj.is_boolean()) {  // the old form: true meant stage 1
    job.zero = zj.get<bool>() ? 1 : 0;
    out.notes.push_back("zero = " + std::to_string(*job.zero) + " (zero_optimization: " + (zj.get<bool>() ? "true" : "false") + ")");
    return;
  }
  ObjectReader z = r.object("zero_optimization");
  job.zero = is_auto(z, zj, "stage", out) ? 0 : static_cast<int>(z.optional_integer("stage", 0, 3).value_or(0));
  out.notes.push_back("zero = " + std::to_string(*job.zero) + " (zero_optimization.stage)");
  read_offload(z, zj, out);
  if (!is_auto(z, zj, "overlap_comm", out)) job.overlap_grad_reduce = z.optional_boolean("overlap_comm");
  for (const auto& [key, value] : zj.items()) {
    if (key == "stage" || key == "overlap_comm" || key == "offload_optimizer" || key == "offload_param" || key == "cpu_offload")
      continue;
    out.ignored.push_back("zero_optimization." + printable(key) + " (not read by dtsim)");
  }
}

// fp16.enabled / bf16.enabled (also the old "bfloat16" and apex "amp" sections); DeepSpeed's
// default for each is false. The sections' other keys tune loss scaling.
bool enabled(ObjectReader& r, const json& j, const std::string& key, Imported& out) {
  if (!r.has(key)) return false;
  ObjectReader s = r.object(key);
  for (const auto& [k, value] : j.at(key).items())
    if (k != "enabled") out.ignored.push_back(key + "." + printable(k) + " (loss scaling: no effect on step time)");
  if (is_auto(s, j.at(key), "enabled", out)) return false;
  return s.optional_boolean("enabled").value_or(false);
}

void read_precision(ObjectReader& r, const json& j, JobDraft& job, Imported& out) {
  bool fp16 = enabled(r, j, "fp16", out), amp = enabled(r, j, "amp", out);  // each section read: its keys listed
  bool bf16 = enabled(r, j, "bf16", out), bfloat16 = enabled(r, j, "bfloat16", out);
  fp16 = fp16 || amp;
  bf16 = bf16 || bfloat16;
  if (fp16 && bf16)
    r.object(r.has("bf16") ? "bf16" : "bfloat16").fail("enabled", "expected fp16 or bf16 enabled, not both (DeepSpeed refuses), got both");
  if (fp16 || bf16) job.precision = fp16 ? "fp16" : "bf16";
  else out.notes.push_back("precision: neither fp16 nor bf16 enabled (DeepSpeed then trains in fp32, which dtsim does not "
                           "simulate); dtsim's default applies");
}

void read_checkpointing(ObjectReader& r, const json& j, Imported& out) {
  if (!r.has("activation_checkpointing")) return;
  static_cast<void>(r.object("activation_checkpointing"));  // an object, or a SpecError naming it
  std::string set;
  for (const auto& [key, value] : j.at("activation_checkpointing").items())
    if (value.is_boolean() && value.get<bool>()) set += (set.empty() ? "" : ", ") + printable(key);
  out.notes.push_back("recompute: activation_checkpointing" + (set.empty() ? std::string() : " (" + set + ")") +
                      " tunes the checkpointing the model code asks for (deepspeed.checkpointing.checkpoint); the "
                      "config does not say which layers: pass --recompute full if every layer is checkpointed");
}

std::string reason(const std::string& key) {
  if (key == "optimizer" || key == "scheduler" || key == "gradient_clipping" || key == "prescale_gradients" ||
      key == "gradient_predivide_factor")
    return "no effect on step time";
  if (key == "steps_per_print" || key == "wall_clock_breakdown" || key == "tensorboard" || key == "wandb" ||
      key == "csv_monitor" || key == "comms_logger" || key == "flops_profiler" || key == "checkpoint")
    return "logging and checkpoints: not simulated";
  return "not read by dtsim";
}

}  // namespace

Imported from_deepspeed(const std::string& text, const std::string& file) {
  json j = spec::parse_json_text(text, file);
  ObjectReader r(j, file, "");
  Imported out;
  JobDraft job;
  read_batch(r, j, job, out);
  read_zero(r, j, job, out);
  read_precision(r, j, job, out);
  read_checkpointing(r, j, out);
  for (const auto& [key, value] : j.items()) {
    if (key == "train_batch_size" || key == "train_micro_batch_size_per_gpu" || key == "gradient_accumulation_steps" ||
        key == "zero_optimization" || key == "fp16" || key == "bf16" || key == "bfloat16" || key == "amp" ||
        key == "activation_checkpointing")
      continue;
    out.ignored.push_back(printable(key) + " (" + reason(key) + ")");
  }
  job.framework = "deepspeed";
  out.notes.push_back("framework = deepspeed (a DeepSpeed config: DeepSpeed's kernels and ZeRO gathers)");
  out.notes.push_back("model, seq: a DeepSpeed config holds neither; pass --model and --seq");
  out.flags = job_flags(job);
  return out;
}

}  // namespace dtsim::imports
