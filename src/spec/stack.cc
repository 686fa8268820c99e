#include "spec/stack.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "core/errors.h"
#include "spec/json_reader.h"
#include "spec/load.h"

namespace dtsim::spec {
namespace {

// "YYYY-MM" with a month 01-12.
bool is_month(const std::string& s) {
  if (s.size() != 7 || s[4] != '-') return false;
  for (std::size_t i : {0, 1, 2, 3, 5, 6})
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  int m = std::stoi(s.substr(5));
  return m >= 1 && m <= 12;
}

// A run's date as a month to compare with "since": YYYY-MM as is, YYYY as its middle month (a
// year alone says the run was in that year; its middle is the least wrong guess of when, where the
// year's end would always pick the year's newest, fastest release).
std::optional<std::string> as_month(const std::string& date) {
  if (is_month(date)) return date;
  if (date.size() == 4 && std::all_of(date.begin(), date.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return date + "-06";
  return std::nullopt;
}

Software read_software(ObjectReader r) {
  Software s;
  s.attention = static_cast<AttentionKernel>(r.choice("attention", {"flash", "unfused", "flash2", "flash_triton"}));
  s.tp_comm_overlap = r.boolean("tp_comm_overlap");
  s.tp_overlap_impl = static_cast<TpOverlapImpl>(
      r.optional_choice("tp_overlap_impl", {"userbuffers", "micro_pipeline"}).value_or(0));
  s.tp_async_backward = r.boolean("tp_async_backward");
  s.overlap_grad_reduce = r.boolean("overlap_grad_reduce");
  s.overlap_param_gather = r.boolean("overlap_param_gather");
  s.overlap_p2p_comm = r.boolean("overlap_p2p_comm");
  s.pp_p2p_serial = r.optional_boolean("pp_p2p_serial").value_or(false);
  s.pp_grad_partitioned = r.optional_boolean("pp_grad_partitioned").value_or(true);
  s.pp_scatter_gather = r.optional_boolean("pp_scatter_gather").value_or(false);
  s.main_grads = static_cast<MainGrads>(r.choice("main_grads", {"fp32", "param", "fp32_if_bf16"}));
  s.grad_accumulation_fusion =
      static_cast<GradAccumFusion>(r.choice("grad_accumulation_fusion", {"off", "on", "fp32_only", "cast"}));
  s.zero3_gather = static_cast<Zero3Gather>(r.optional_choice("zero3_gather", {"layer", "module"}).value_or(0));
  s.zero3_prefetch = r.optional_boolean("zero3_prefetch").value_or(true);
  s.zero3_comm_sms = r.optional_positive("zero3_comm_sms", true).value_or(0.0);
  s.zero3_gather_cpu_us = r.optional_positive("zero3_gather_cpu_us", true).value_or(0.0);
  s.zero3_list_collectives = r.optional_boolean("zero3_list_collectives").value_or(false);
  for (auto [key, field] : {std::pair{"zero3_list_build_us", &s.zero3_list_build_us},
                            std::pair{"zero3_list_copy_cpu_us", &s.zero3_list_copy_cpu_us}}) {
    *field = r.optional_positive(key, true).value_or(0.0);
    if (*field > 0 && !s.zero3_list_collectives)
      r.fail(key, "expected 0 unless zero3_list_collectives is true (a per-rank list cost), got " + describe(nlohmann::json(*field)));
  }
  s.zero3_zero_fill = r.optional_boolean("zero3_zero_fill").value_or(false);
  s.zero3_fetch_norm = r.optional_boolean("zero3_fetch_norm").value_or(false);
  s.zero3_grad_path = static_cast<Zero3GradPath>(
      r.optional_choice("zero3_grad_path", {"direct", "ds_bucket", "flat_param", "chunk_cat"}).value_or(0));
  s.zero3_gather_copy_out = r.optional_boolean("zero3_gather_copy_out").value_or(false);
  s.zero3_recompute_gathers = r.optional_boolean("zero3_recompute_gathers").value_or(true);
  s.fsdp_fp32_params = r.optional_boolean("fsdp_fp32_params").value_or(false);
  s.zero3_pp_gathered = r.optional_boolean("zero3_pp_gathered").value_or(false);
  s.compile_loss = r.optional_boolean("compile_loss").value_or(false);
  s.tp_saves_gathered_input = r.optional_boolean("tp_saves_gathered_input").value_or(false);
  s.bias_activation_fusion = r.optional_boolean("bias_activation_fusion").value_or(true);
  s.bias_dropout_add_fusion = r.optional_boolean("bias_dropout_add_fusion").value_or(true);
  s.rope_fusion = r.optional_boolean("rope_fusion").value_or(true);
  s.rmsnorm_fusion = r.optional_boolean("rmsnorm_fusion").value_or(true);
  s.linear_bias_epilogue = r.optional_boolean("linear_bias_epilogue").value_or(false);
  s.attention_unpad = r.optional_boolean("attention_unpad").value_or(false);
  s.fp8_recipe = static_cast<Fp8Recipe>(r.optional_choice("fp8_recipe", {"delayed", "current", "mxfp8"}).value_or(0));
  s.moe_dispatcher =
      static_cast<MoeDispatcher>(r.optional_choice("moe_dispatcher", {"alltoall", "allgather", "flex"}).value_or(0));
  s.moe_a2a_overlap = r.optional_boolean("moe_a2a_overlap").value_or(false);
  s.param_remainders = r.optional_boolean("param_remainders").value_or(false);
  s.cross_entropy =
      static_cast<CrossEntropy>(r.optional_choice("cross_entropy", {"unfused", "native", "te", "torch", "xentropy", "compiled"}).value_or(0));
  s.train_metric_passes = r.optional_integer("train_metric_passes", 0, 16).value_or(0);
  s.optimizer_impl = static_cast<OptimizerImpl>(
      r.optional_choice("optimizer_impl", {"megatron", "apex_distributed", "torch", "loop"}).value_or(0));
  if (auto g = r.optional_string("cuda_graphs")) s.cuda_graphs = parse_cuda_graphs(*g, r.where("cuda_graphs"));
  if (auto o = r.optional_string("tp_overlap_rs")) s.tp_overlap_rs = parse_tp_overlap_rs(*o, r.where("tp_overlap_rs"));
  r.finish();
  return s;
}

}  // namespace

std::int64_t current_scaling_bf16_layers(const StackDefaults& defaults, Dtype precision, Fp8Recipe recipe) {
  return precision == Dtype::fp8 && recipe == Fp8Recipe::current ? defaults.current_scaling_bf16_layers.value_or(0) : 0;
}

namespace {

StackDefaults read_defaults(ObjectReader r) {
  StackDefaults d;
  if (auto rc = r.optional_choice("recompute", {"none", "selective", "full"})) d.recompute = static_cast<Recompute>(*rc);
  d.sequence_parallel = r.optional_boolean("sequence_parallel");
  if (auto z = r.optional_integer("zero_stage", 0, 3)) d.zero_stage = static_cast<int>(*z);
  if (auto p = r.optional_choice("precision", {"fp16", "bf16"})) d.precision = *p == 0 ? Dtype::fp16 : Dtype::bf16;
  d.micro_batch = r.optional_integer("micro_batch", 1, 1 << 20);
  d.expert_tensor_parallel = r.optional_integer("expert_tensor_parallel", 1, 1 << 16);
  d.fp8_param_gather = r.optional_boolean("fp8_param_gather");
  d.current_scaling_bf16_layers = r.optional_integer("current_scaling_bf16_layers", 0, 1 << 20);
  if (auto m = r.optional_string("recompute_modules")) d.recompute_modules = parse_recompute_modules(*m, r.where("recompute_modules"));
  r.finish();
  return d;
}

Stack read_version(ObjectReader r, const std::string& name) {
  Stack s{.name = name};
  s.version = r.string("version");
  s.since = r.string("since");
  if (!is_month(s.since)) r.fail("since", "expected a month YYYY-MM, got \"" + s.since + "\"");
  s.software = read_software(r.object("software"));
  s.defaults = read_defaults(r.object("defaults"));
  if (r.has("gpu_recipes")) {
    const nlohmann::json& a = r.array("gpu_recipes");
    for (std::size_t i = 0; i < a.size(); ++i) {
      ObjectReader g(a[i], r.file(), r.pointer("gpu_recipes") + "/" + std::to_string(i));
      GpuRecipe gr;
      gr.gpu = load_gpu(g.string("gpu"), g.where("gpu")).name;  // a GPU preset, by its file name
      for (const GpuRecipe& other : s.gpu_recipes)
        if (other.gpu == gr.gpu) g.fail("gpu", "expected one entry per GPU, got " + gr.gpu + " again");
      if (auto d = g.optional_choice("moe_dispatcher", {"alltoall", "allgather", "flex"}))
        gr.moe_dispatcher = static_cast<MoeDispatcher>(*d);
      if (auto k = g.optional_choice("attention", {"flash", "unfused", "flash2", "flash_triton"}))
        gr.attention = static_cast<AttentionKernel>(*k);
      g.skip("source");
      g.finish();
      s.gpu_recipes.push_back(gr);
    }
  } else {
    r.skip("gpu_recipes");
  }
  r.skip("sources");
  r.skip("notes");
  r.finish();
  return s;
}

StackFamily load_family(const std::string& name, const std::string& flag) {
  return load_spec("calibration/stacks", name, flag, parse_stack_family);
}

// The latest version out by `month`, or nullopt when all came later.
std::optional<Stack> by_date(const StackFamily& f, const std::string& month) {
  std::optional<Stack> out;
  for (const Stack& s : f.versions)
    if (s.since <= month) out = s;
  return out;
}

}  // namespace

Software software_on(const Stack& stack, const std::string& gpu, bool moe, std::vector<std::string>* notes,
                     RecipeOverrides set) {
  Software s = stack.software;
  for (const GpuRecipe& g : stack.gpu_recipes) {
    if (g.gpu != gpu) continue;
    if (g.moe_dispatcher && *g.moe_dispatcher != s.moe_dispatcher) {
      s.moe_dispatcher = *g.moe_dispatcher;
      if (notes && moe && !set.moe_dispatcher)
        notes->push_back(std::string("moe dispatcher ") + to_string(s.moe_dispatcher) + " (" + stack.label() +
                         " recipes on " + gpu + ")");
    }
    if (g.attention && *g.attention != s.attention) {
      s.attention = *g.attention;
      if (notes && !set.attention)
        notes->push_back(std::string("attention ") + to_string(s.attention) + " (" + stack.label() + " recipes on " +
                         gpu + ")");
    }
  }
  return s;
}

const char* to_string(GradAccumFusion g) {
  switch (g) {
    case GradAccumFusion::off: return "off";
    case GradAccumFusion::on: return "on";
    case GradAccumFusion::fp32_only: return "fp32_only";
    case GradAccumFusion::cast: return "cast";
  }
  return "?";
}

const char* to_string(Zero3Gather g) { return g == Zero3Gather::layer ? "layer" : "module"; }

const char* to_string(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::flash: return "flash";
    case AttentionKernel::unfused: return "unfused";
    case AttentionKernel::flash2: return "flash2";
    case AttentionKernel::flash_triton: return "flash_triton";
  }
  return "?";
}

void check_attention(AttentionKernel attention, const ComputeCalibration& cal, const std::string& cal_name,
                     const std::string& where) {
  bool fa2_based = attention == AttentionKernel::flash2 || attention == AttentionKernel::flash_triton;
  if (fa2_based && (cal.flash2_fwd_ratio <= 0 || cal.flash2_bwd_ratio <= 0))
    throw SpecError(where, "expected a calibration profile with flash2_ratio (FlashAttention-2 measured against its "
                           "flash curve) for " + std::string(to_string(attention)) + ", got " + cal_name + " without one");
}

const char* to_string(MainGrads g) {
  switch (g) {
    case MainGrads::fp32: return "fp32";
    case MainGrads::param: return "param";
    case MainGrads::fp32_if_bf16: return "fp32_if_bf16";
  }
  return "?";
}

const char* to_string(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::delayed: return "delayed";
    case Fp8Recipe::current: return "current";
    case Fp8Recipe::mxfp8: return "mxfp8";
  }
  return "?";
}

std::string to_string(const CudaGraphs& g) {
  if (g.full_iteration) return "full_iteration";
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (on) s += (s.empty() ? "" : ",") + std::string(name);
  };
  add(g.attn, "attn");
  add(g.moe_router, "moe_router");
  add(g.moe_preprocess, "moe_preprocess");
  add(g.mamba, "mamba");
  return s.empty() ? "none" : s;
}

// pytorch/torchtitan torchtitan/models/llama/parallelize_llama.py apply_compile (@0596be3a): "torch.compile
// each TransformerBlock", fullgraph=True; the loss stays eager (PR #755, 2024-12-19: "turning off
// compile on loss function") until build_loss_fn compiles it when training.compile is set (PR #1033,
// 2025-04-01): a stack's compile_loss.
void apply_compile(Software& s) {
  s.bias_activation_fusion = true;
  s.bias_dropout_add_fusion = true;
  s.rope_fusion = true;
  s.rmsnorm_fusion = true;
  if (s.compile_loss && s.cross_entropy == CrossEntropy::torch) s.cross_entropy = CrossEntropy::compiled;
}

CudaGraphs parse_cuda_graphs(const std::string& text, const std::string& where) {
  CudaGraphs g;
  if (text == "none") return g;
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t comma = text.find(',', at);
    std::string scope = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (scope == "full_iteration") g.full_iteration = true;
    else if (scope == "attn") g.attn = true;
    else if (scope == "moe_router") g.moe_router = true;
    else if (scope == "moe_preprocess") g.moe_preprocess = true;
    else if (scope == "mamba") g.mamba = true;
    else
      throw SpecError(where, "expected none, full_iteration or scopes among attn, moe_router, moe_preprocess, mamba "
                             "joined by commas, got \"" + text + "\"");
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return g;
}

std::string to_string(const TpOverlapRs& o) {
  auto one = [](int sms) { return sms == TpOverlapRs::kRing ? std::string("ring") : std::to_string(sms); };
  return one(o.proj_sms) + "," + one(o.fc2_sms);
}

TpOverlapRs parse_tp_overlap_rs(const std::string& text, const std::string& where) {
  auto fail = [&] {
    throw SpecError(where, "expected PROJ,FC2 with each \"ring\" or an SM count in [1, 64] (e.g. 24,20), got \"" +
                               text + "\"");
  };
  std::size_t comma = text.find(',');
  if (comma == std::string::npos || text.find(',', comma + 1) != std::string::npos) fail();
  auto one = [&](const std::string& part) {
    if (part == "ring") return static_cast<int>(TpOverlapRs::kRing);
    if (part.empty() || part.size() > 2 || part.find_first_not_of("0123456789") != std::string::npos) fail();
    int sms = std::stoi(part);
    if (sms < 1 || sms > 64) fail();
    return sms;
  };
  return {.proj_sms = one(text.substr(0, comma)), .fc2_sms = one(text.substr(comma + 1))};
}

const char* to_string(CrossEntropy c) {
  switch (c) {
    case CrossEntropy::unfused: return "unfused";
    case CrossEntropy::native: return "native";
    case CrossEntropy::te: return "te";
    case CrossEntropy::torch: return "torch";
    case CrossEntropy::xentropy: return "xentropy";
    case CrossEntropy::compiled: return "compiled";
  }
  return "?";
}

const char* to_string(OptimizerImpl o) {
  switch (o) {
    case OptimizerImpl::megatron: return "megatron";
    case OptimizerImpl::apex_distributed: return "apex_distributed";
    case OptimizerImpl::torch: return "torch";
    case OptimizerImpl::loop: return "loop";
  }
  return "?";
}

const char* to_string(Zero3GradPath p) {
  switch (p) {
    case Zero3GradPath::direct: return "direct";
    case Zero3GradPath::ds_bucket: return "ds_bucket";
    case Zero3GradPath::flat_param: return "flat_param";
    case Zero3GradPath::chunk_cat: return "chunk_cat";
  }
  return "?";
}

const char* to_string(TpOverlapImpl t) {
  switch (t) {
    case TpOverlapImpl::userbuffers: return "userbuffers";
    case TpOverlapImpl::micro_pipeline: return "micro_pipeline";
  }
  return "?";
}

const char* to_string(MoeDispatcher d) {
  switch (d) {
    case MoeDispatcher::alltoall: return "alltoall";
    case MoeDispatcher::allgather: return "allgather";
    case MoeDispatcher::flex: return "flex";
  }
  return "?";
}

Dtype main_grad_dtype(const Software& sw, Dtype precision) {
  Dtype sixteen = precision == Dtype::fp16 ? Dtype::fp16 : Dtype::bf16;  // fp8 runs keep bf16 weights
  switch (sw.main_grads) {
    case MainGrads::fp32: return Dtype::fp32;
    case MainGrads::param: return sixteen;
    case MainGrads::fp32_if_bf16: return sixteen == Dtype::bf16 ? Dtype::fp32 : sixteen;
  }
  return sixteen;
}

bool param_remainders(const Software& sw, const Training& t) {
  return sw.param_remainders && t.optimizer == Optimizer::adam && t.precision != Dtype::fp16 &&
         t.precision != Dtype::fp32 && !t.fp8_params;
}

bool fused_grad_accumulation(const Software& sw, Dtype precision) {
  switch (sw.grad_accumulation_fusion) {
    case GradAccumFusion::off:
    case GradAccumFusion::cast: return false;
    case GradAccumFusion::on: return true;
    case GradAccumFusion::fp32_only: return main_grad_dtype(sw, precision) == Dtype::fp32;
  }
  return true;
}

StackFamily parse_stack_family(const std::string& text, const std::string& file) {
  nlohmann::json j = parse_json_text(text, file);
  ObjectReader r(j, file, "");
  StackFamily f;
  f.name = r.string("name");
  r.skip("description");
  if (r.has("aliases")) {
    const nlohmann::json& a = r.array("aliases");
    for (std::size_t i = 0; i < a.size(); ++i) {
      std::string where = file + ":" + r.pointer("aliases") + "/" + std::to_string(i);
      if (!a[i].is_string() || a[i].get<std::string>().empty())
        throw SpecError(where, "expected a framework name (a non-empty string), got " + a[i].dump());
      f.aliases.push_back(a[i].get<std::string>());
    }
  } else {
    r.skip("aliases");
  }
  const nlohmann::json& versions = r.array("versions");
  r.finish();
  if (versions.empty()) r.fail("versions", "expected at least one version, got an empty array");
  for (std::size_t i = 0; i < versions.size(); ++i) {
    std::string ptr = r.pointer("versions") + "/" + std::to_string(i);
    Stack s = read_version(ObjectReader(versions[i], file, ptr), f.name);
    if (!f.versions.empty() && s.since < f.versions.back().since)
      throw SpecError(file + ":" + ptr + "/since", "expected versions oldest first (since >= " +
                                                       f.versions.back().since + "), got \"" + s.since + "\"");
    for (const Stack& o : f.versions)
      if (o.version == s.version) throw SpecError(file + ":" + ptr + "/version", "expected a new version, got \"" + s.version + "\" twice");
    f.versions.push_back(s);
  }
  return f;
}

Stack load_stack(const std::string& spec, const std::string& flag) {
  auto at = spec.find('@');
  std::string name = spec.substr(0, at);
  StackFamily f = load_family(stack_file_for(name).value_or(name), flag);
  if (at == std::string::npos) return f.versions.back();
  std::string v = spec.substr(at + 1);
  for (const Stack& s : f.versions)
    if (s.version == v) return s;
  std::string known;
  for (const Stack& s : f.versions) known += (known.empty() ? "" : ", ") + s.version;
  if (auto month = as_month(v))
    if (auto s = by_date(f, *month)) return *s;
  throw SpecError(flag, "expected a version of " + f.name + " (" + known + ") or a date YYYY[-MM] from " +
                            f.versions.front().since + " on, got \"" + v + "\"");
}

Stack find_stack(const std::string& name, const std::optional<std::string>& version,
                 const std::optional<std::string>& date, const std::string& where) {
  std::string path = data_dir() + "/calibration/stacks/" + name + ".json";
  std::error_code ec;
  // A stack's name is a file name under calibration/stacks/: letters, digits, '.', '_', '-'.
  bool plain = !name.empty() && name.size() <= 64 && name.front() != '.' &&
               std::all_of(name.begin(), name.end(), [](char c) {
                 return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
               });
  if (!plain || !std::filesystem::is_regular_file(path, ec)) {
    std::string known;
    for (const std::string& n : stack_names()) known += (known.empty() ? "" : ", ") + n;
    throw SpecError(where, "expected a framework with a stack profile (" + known + "), got \"" + name + "\"");
  }
  StackFamily f = parse_stack_family(read_spec_text(path), path);
  if (version)
    for (const Stack& s : f.versions)
      if (s.version == *version) return s;
  if (date)
    if (auto month = as_month(*date)) {
      if (auto s = by_date(f, *month)) return *s;
      return f.versions.front();  // older than every profile: the oldest is the nearest
    }
  return f.versions.back();
}

std::vector<std::string> stack_names() { return preset_names("calibration/stacks"); }

namespace {

// How sources spell one framework: "Megatron-LM", "megatron_lm", "NVIDIA/Megatron-LM" are
// megatron-lm. Lower case, the part after a repository owner, '_' and ' ' as '-'.
std::string canonical_framework(const std::string& name) {
  std::string c = name.substr(name.find_last_of('/') + 1);  // npos + 1 == 0: no owner
  for (char& ch : c) ch = ch == '_' || ch == ' ' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return c;
}

}  // namespace

std::optional<std::string> stack_file_for(const std::string& name) {
  std::string want = canonical_framework(name);
  std::vector<std::string> files = stack_names();
  if (std::find(files.begin(), files.end(), want) != files.end()) return want;
  for (const std::string& n : files) {
    StackFamily f = load_family(n, "calibration/stacks/" + n + ".json");
    for (const std::string& a : f.aliases)
      if (canonical_framework(a) == want) return n;
  }
  return std::nullopt;
}

}  // namespace dtsim::spec
