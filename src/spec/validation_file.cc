#include "spec/validation_file.h"

#include <algorithm>
#include <array>
#include <limits>

#include "core/errors.h"
#include "spec/json_reader.h"
#include "spec/load.h"
#include "spec/model_rules.h"
#include "spec/pipeline_layout.h"

namespace dtsim::spec {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int32_t>::max();

// An integer that may be null: its value, else `fallback` with a note "KEY null -> VALUE (why)".
std::int64_t or_filled(ObjectReader& r, const std::string& key, std::int64_t min, std::int64_t max,
                       std::int64_t fallback, const std::string& why, std::vector<std::string>& notes) {
  if (auto v = r.optional_integer(key, min, max)) return *v;
  notes.push_back(key + " null -> " + std::to_string(fallback) + " (" + why + ")");
  return fallback;
}

CaseModel read_model(ObjectReader r, std::vector<std::string>& notes) {
  CaseModel m;
  m.name = r.optional_string("name").value_or("");
  m.layers = r.integer("layers", 1, 100000);
  m.hidden = r.integer("hidden", 1, kMax);
  m.heads = or_filled(r, "heads", 1, kMax, std::max<std::int64_t>(1, m.hidden / 128), "head dimension 128", notes);
  m.kv_heads = r.optional_integer("kv_heads", 1, kMax);
  auto act = r.optional_choice("activation", {"gelu", "relu", "squared_relu", "swiglu", "gated_gelu"});
  if (!act) notes.push_back("activation null -> gelu (Megatron GPT)");
  m.activation = static_cast<Activation>(act.value_or(0));
  bool gated = m.activation == Activation::swiglu || m.activation == Activation::gated_gelu;
  // Gated MLPs: Llama's rule, 2/3 of 4h rounded up to a multiple of 256 (7B: 11008; 13B: 13824).
  std::int64_t ffn = gated ? 256 * ((8 * m.hidden / 3 + 255) / 256) : 4 * m.hidden;
  m.ffn_hidden = or_filled(r, "ffn_hidden", 1, kMax, ffn, gated ? "Llama's 2/3 of 4h, multiple of 256" : "4h", notes);
  m.vocab = r.optional_integer("vocab", 1, kMax);
  m.moe_experts = r.optional_integer("moe_experts", 1, 1 << 16);
  m.moe_topk = r.optional_integer("moe_topk", 1, 1 << 16);
  m.moe_ffn_hidden = r.optional_integer("moe_ffn_hidden", 1, kMax);
  r.finish();
  return m;
}

void read_parallel(ObjectReader r, ValidationCase& c, std::optional<std::int64_t> gpus) {
  auto& n = c.filled;
  auto tp = r.optional_integer("tp", 1, 1 << 16), pp = r.optional_integer("pp", 1, 1 << 16);
  c.cp = or_filled(r, "cp", 1, 1 << 16, 1, "no context parallelism", n);
  auto dp = r.optional_integer("dp", 1, 1 << 24);
  // One of tp and pp null beside a stated dp: the GPUs determine it, when they divide evenly.
  auto derived = [&](const char* key, std::int64_t known) -> std::optional<std::int64_t> {
    std::int64_t rest = known * *dp * c.cp;
    if (!gpus || *gpus % rest != 0) return std::nullopt;
    n.push_back(std::string(key) + " null -> " + std::to_string(*gpus / rest) + " (gpus / (the other degrees))");
    return *gpus / rest;
  };
  if (dp && !tp && pp) tp = derived("tp", *pp);
  if (dp && tp && !pp) pp = derived("pp", *tp);
  c.tp = tp ? *tp : (n.push_back("tp null -> 1 (no tensor parallelism)"), 1);
  c.pp = pp ? *pp : (n.push_back("pp null -> 1 (no pipeline parallelism)"), 1);
  std::int64_t mp = c.tp * c.pp * c.cp;
  if (dp) {
    c.dp = *dp;
  } else {
    if (!gpus) r.fail("dp", "expected a value, or gpus to derive it from, got null");
    c.dp = std::max<std::int64_t>(1, *gpus / mp);
    n.push_back("dp null -> " + std::to_string(c.dp) + " (gpus / (tp pp cp))");
  }
  c.ep = or_filled(r, "ep", 1, 1 << 16, 1, "no expert parallelism", n);
  c.vp = or_filled(r, "vp", 1, 1 << 10, 1, "no interleaving", n);
  if (auto z = r.optional_integer("zero_stage", 0, 3)) c.zero_stage = static_cast<int>(*z);
  c.sequence_parallel = r.optional_boolean("sequence_parallel");
  r.finish();
}

void read_training(ObjectReader r, ValidationCase& c) {
  c.micro_batch = r.optional_integer("micro_batch", 1, 1 << 20);
  c.global_batch = r.integer("global_batch", 1, 1 << 30);
  c.seq_len = or_filled(r, "seq_len", 1, 1 << 24, 2048, "GPT-3's", c.filled);
  if (auto rc = r.optional_choice("recompute", {"none", "selective", "full"})) c.recompute = static_cast<Recompute>(*rc);
  if (auto p = r.optional_choice("precision", {"fp16", "bf16", "fp8", "fp4"}))
    c.precision = std::array{Dtype::fp16, Dtype::bf16, Dtype::fp8, Dtype::fp4}[*p];
  r.finish();
}

void read_case_into(ValidationCase& c, const nlohmann::json& j, const std::string& file, const std::string& ptr) {
  ObjectReader r(j, file, ptr);
  c.id = r.string("id");
  c.tier = r.optional_string("tier").value_or("");
  c.model = read_model(r.object("model"), c.filled);
  c.cluster = r.string("cluster");
  std::optional<std::int64_t> gpus = r.optional_integer("gpus", 1, 1 << 24);
  c.gpus_per_node = r.optional_integer("gpus_per_node", 1, 1024).value_or(0);  // 0: the cluster's
  read_parallel(r.object("parallel"), c, gpus);
  c.gpus = gpus.value_or(c.tp * c.pp * c.dp * c.cp);
  if (!gpus) c.filled.push_back("gpus null -> " + std::to_string(c.gpus) + " (tp pp dp cp)");
  read_training(r.object("training"), c);
  ObjectReader measured = r.object("measured");
  c.measured_s = measured.positive("iteration_s");
  c.measured_peak_gib = measured.optional_positive("peak_memory_gib");
  // Type-checked but informational; other keys of "measured" (MFU, tokens/s) are tolerated.
  static_cast<void>(measured.optional_string("derivation"));
  static_cast<void>(measured.optional_string("confidence"));
  r.skip("source");  // free-form citation object
  static_cast<void>(r.optional_string("notes"));
  if (r.has("framework")) {
    ObjectReader fw = r.object("framework");
    c.framework = {fw.optional_string("name"), fw.optional_string("version"), fw.optional_string("date")};
    fw.finish();
  } else {
    r.skip("framework");
  }
  // Top-level keys the schema does not define are reported in the case's assumptions; inside
  // model, parallel, training and framework an unknown key fails the case (it would change what is
  // simulated).
  c.ignored = r.unread();
}

// A case as read; one that cannot be read keeps what it could (its id, else "#N") and the reason.
ValidationCase read_case(const nlohmann::json& j, const std::string& file, const std::string& ptr, std::size_t i) {
  ValidationCase c;
  c.pointer = ptr;
  try {
    read_case_into(c, j, file, ptr);
  } catch (const SpecError& e) {
    // Keep what identifies the case in the report: its id, tier and measured time, when readable.
    auto text = [&](const char* key) -> std::optional<std::string> {
      if (j.is_object() && j.contains(key) && j.at(key).is_string()) return j.at(key).get<std::string>();
      return std::nullopt;
    };
    c.id = text("id").value_or("#" + std::to_string(i));
    c.tier = text("tier").value_or("");
    const nlohmann::json* m = j.is_object() && j.contains("measured") ? &j.at("measured") : nullptr;
    if (m && m->is_object() && m->contains("iteration_s") && m->at("iteration_s").is_number())
      c.measured_s = m->at("iteration_s").get<double>();
    c.invalid = e.what();
  }
  return c;
}

// Architecture facts the schema leaves out, by family (inferred from the activation).
void apply_family(Model& m, const CaseModel& cm, std::int64_t seq, std::vector<std::string>& notes) {
  switch (cm.activation) {
    case Activation::gelu:
    case Activation::relu:
      m.position_embedding = PositionEmbedding::learned;
      m.max_position = seq;
      m.tied_embeddings = true;
      m.norm = Norm::layernorm;
      m.linear_bias = LinearBias::all;
      notes.push_back("architecture: Megatron GPT (learned positions, tied embeddings, LayerNorm, biases)");
      break;
    case Activation::squared_relu:
      m.position_embedding = PositionEmbedding::rotary;
      m.norm = Norm::layernorm;
      m.linear_bias = LinearBias::none;
      notes.push_back("architecture: Nemotron (rotary, untied, LayerNorm, no biases)");
      break;
    default:
      m.position_embedding = PositionEmbedding::rotary;
      m.norm = Norm::rmsnorm;
      m.linear_bias = LinearBias::none;
      notes.push_back("architecture: Llama (rotary, untied, RMSNorm, no biases)");
  }
  if (!cm.vocab) {
    m.vocab = cm.activation == Activation::swiglu ? 32000 : cm.activation == Activation::squared_relu ? 256000 : 51200;
    notes.push_back("vocab null -> " + std::to_string(m.vocab) + " (the family's tokenizer)");
  }
}

// The model presets (models/*.json) of the data directory, parsed once per directory.
const std::vector<Model>& model_presets() {
  static std::string dir;
  static std::vector<Model> presets;
  if (dir != data_dir() || presets.empty()) {
    dir = data_dir();
    presets.clear();
    for (const std::string& n : preset_names("models")) presets.push_back(load_model(n));
  }
  return presets;
}

// The preset a case's model is: named alike (the preset's name, or it followed by " (" and a
// remark, as "DeepSeek-V3 (671B total / 37B active)") and agreeing with every field the case
// gives. The case schema has no fields for head_dim, q/k norms, MLA, leading dense layers, MTP
// or sliding windows; a preset carries them with their sources.
const Model* matching_preset(const CaseModel& cm, const Model& built) {
  for (const Model& p : model_presets()) {
    bool named = cm.name == p.name || cm.name.starts_with(p.name + " (");
    bool agrees = named && p.layers == built.layers && p.hidden == built.hidden && p.heads == built.heads &&
                  p.ffn_hidden == built.ffn_hidden && p.gated() == built.gated() &&
                  (!cm.kv_heads || p.kv_heads == *cm.kv_heads) && (!cm.vocab || p.vocab == *cm.vocab) &&
                  p.moe_experts == built.moe_experts && p.moe_topk == built.moe_topk &&
                  p.moe_ffn_hidden == built.moe_ffn_hidden;
    if (agrees) return &p;
  }
  return nullptr;
}

// Reads the "schema" key of a file's top object; anything but `expected` is an error.
}  // namespace

ValidationFile parse_validation_file(const std::string& text, const std::string& file) {
  nlohmann::json j = parse_json_text(text, file);
  ObjectReader r(j, file, "");
  expect_schema(r, "dtsim-validation-cases/1");
  const nlohmann::json& cases = r.array("cases");
  r.finish();
  ValidationFile f{file, {}};
  for (std::size_t i = 0; i < cases.size(); ++i)
    f.cases.push_back(read_case(cases[i], file, "/cases/" + std::to_string(i), i));
  return f;
}

ValidationFile load_validation_file(const std::string& path) {
  return parse_validation_file(read_spec_text(path), path);
}

RecipesFile parse_recipes_file(const std::string& text, const std::string& file) {
  nlohmann::json j = parse_json_text(text, file);
  ObjectReader r(j, file, "");
  expect_schema(r, "dtsim-validation-recipes/1");
  static_cast<void>(r.optional_string("description"));
  ObjectReader cases = r.object("cases");
  r.finish();
  RecipesFile out{file, {}};
  const nlohmann::json& obj = j.at("cases");
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    RecipeFacts f;
    f.pointer = cases.pointer(it.key());
    ObjectReader e = cases.object(it.key());
    if (auto z = e.optional_integer("zero_stage", 0, 3)) f.zero_stage = static_cast<int>(*z);
    f.sequence_parallel = e.optional_boolean("sequence_parallel");
    f.micro_batch = e.optional_integer("micro_batch", 1, 1 << 20);
    if (auto rc = e.optional_choice("recompute", {"none", "selective", "full"})) f.recompute = static_cast<Recompute>(*rc);
    if (auto p = e.optional_choice("precision", {"fp16", "bf16", "fp8"}))
      f.precision = *p == 0 ? Dtype::fp16 : *p == 1 ? Dtype::bf16 : Dtype::fp8;
    f.vocab = e.optional_integer("vocab", 1, 1 << 30);
    f.moe_capacity_factor = e.optional_positive("moe_capacity_factor");
    if (auto d = e.optional_choice("moe_dispatcher", {"alltoall", "allgather", "flex"}))
      f.moe_dispatcher = static_cast<MoeDispatcher>(*d);
    f.moe_a2a_overlap = e.optional_boolean("moe_a2a_overlap");
    f.offload_layers = e.optional_integer("offload_layers", 1, 1 << 20);
    f.recompute_layers = e.optional_integer("recompute_layers", 1, 1 << 20);
    if (auto g = e.optional_string("cuda_graphs")) f.cuda_graphs = parse_cuda_graphs(*g, e.where("cuda_graphs"));
    if (auto o = e.optional_string("tp_overlap_rs")) f.tp_overlap_rs = parse_tp_overlap_rs(*o, e.where("tp_overlap_rs"));
    f.mtp_layers = e.optional_integer("mtp_layers", 0, 64);
    f.pipeline_layout = e.optional_string("pipeline_layout");
    if (auto r = e.optional_choice("fp8_recipe", {"delayed", "current", "mxfp8"})) f.fp8_recipe = static_cast<Fp8Recipe>(*r);
    if (auto m = e.optional_string("recompute_modules")) {
      f.recompute_modules = parse_recompute_modules(*m, e.where("recompute_modules"));
      if (f.recompute && *f.recompute != Recompute::selective)
        e.fail("recompute_modules", std::string("expected \"recompute\": \"selective\" (or none) beside it, got \"") +
                                        to_string(*f.recompute) + "\"");
    }
    f.fp8_param_gather = e.optional_boolean("fp8_param_gather");
    f.bf16_layers_start = e.optional_integer("bf16_layers_start", 0, 1 << 20);
    f.bf16_layers_end = e.optional_integer("bf16_layers_end", 0, 1 << 20);
    if (auto o = e.optional_choice("optimizer", {"adam", "sgd", "muon"})) f.optimizer = static_cast<Optimizer>(*o);
    if (auto a = e.optional_choice("attention", {"flash", "unfused", "flash2", "flash_triton"})) f.attention = static_cast<AttentionKernel>(*a);
    f.compile = e.optional_boolean("compile");
    f.tp_comm_overlap = e.optional_boolean("tp_comm_overlap");
    if (auto p = e.optional_choice("peft", {"none", "lora"})) f.peft = static_cast<Peft>(*p);
    f.lora_rank = e.optional_integer("lora_rank", 1, 1 << 16);
    if (auto t = e.optional_string("lora_targets")) f.lora_targets = parse_lora_targets(*t, e.where("lora_targets"));
    if ((f.lora_rank || f.lora_targets) && f.peft != Peft::lora)
      e.fail(f.lora_rank ? "lora_rank" : "lora_targets", "expected \"peft\": \"lora\" beside it, got none");
    f.sample_len = e.optional_integer("sample_len", 1, 1 << 24);
    f.source = e.string("source");
    static_cast<void>(e.optional_string("notes"));
    if (f.source.empty()) e.fail("source", "expected where the recipe says so (repository, path, commit), got \"\"");
    e.finish();
    out.cases.emplace_back(it.key(), std::move(f));
  }
  cases.finish();
  return out;
}

RecipesFile load_recipes_file(const std::string& path) { return parse_recipes_file(read_spec_text(path), path); }

namespace {

// Fills `field` from `fact` when the case left it null; a set field is an error. The note names
// the field; apply_recipes adds the entry's source once, before the first of them.
template <typename T>
void fill(std::optional<T>& field, const std::optional<T>& fact, const std::string& key, const std::string& shown,
          const RecipesFile& recipes, const RecipeFacts& facts, ValidationCase& c) {
  if (!fact) return;
  if (field)
    throw SpecError(recipes.path + ":" + facts.pointer + "/" + key,
                    "expected a field the case leaves null, but case " + c.id + " sets it");
  field = fact;
  c.recipe_notes.push_back(key + " null -> " + shown + " (recipe)");
}

}  // namespace

std::vector<std::string> apply_recipes(ValidationFile& f, const RecipesFile& recipes) {
  std::vector<std::string> unmatched;
  for (const auto& [id, facts] : recipes.cases) {
    bool found = false;
    for (ValidationCase& c : f.cases) {
      if (c.id != id) continue;
      found = true;
      std::size_t before = c.recipe_notes.size();
      fill(c.zero_stage, facts.zero_stage, "zero_stage", facts.zero_stage ? std::to_string(*facts.zero_stage) : "",
           recipes, facts, c);
      fill(c.sequence_parallel, facts.sequence_parallel, "sequence_parallel",
           facts.sequence_parallel.value_or(false) ? "on" : "off", recipes, facts, c);
      fill(c.micro_batch, facts.micro_batch, "micro_batch", facts.micro_batch ? std::to_string(*facts.micro_batch) : "",
           recipes, facts, c);
      fill(c.recompute, facts.recompute, "recompute", facts.recompute ? to_string(*facts.recompute) : "", recipes,
           facts, c);
      fill(c.precision, facts.precision, "precision", facts.precision ? to_string(*facts.precision) : "", recipes,
           facts, c);
      fill(c.model.vocab, facts.vocab, "vocab", facts.vocab ? std::to_string(*facts.vocab) : "", recipes, facts, c);
      fill(c.moe_capacity_factor, facts.moe_capacity_factor, "moe_capacity_factor",
           facts.moe_capacity_factor ? std::to_string(*facts.moe_capacity_factor).substr(0, 4) : "", recipes, facts, c);
      fill(c.moe_dispatcher, facts.moe_dispatcher, "moe_dispatcher",
           facts.moe_dispatcher ? to_string(*facts.moe_dispatcher) : "", recipes, facts, c);
      fill(c.moe_a2a_overlap, facts.moe_a2a_overlap, "moe_a2a_overlap",
           facts.moe_a2a_overlap.value_or(false) ? "on" : "off", recipes, facts, c);
      fill(c.offload_layers, facts.offload_layers, "offload_layers",
           facts.offload_layers ? std::to_string(*facts.offload_layers) : "", recipes, facts, c);
      fill(c.recompute_layers, facts.recompute_layers, "recompute_layers",
           facts.recompute_layers ? std::to_string(*facts.recompute_layers) : "", recipes, facts, c);
      if (c.recompute_layers && c.recompute != Recompute::full)
        throw SpecError(recipes.path + ":" + facts.pointer + "/recompute_layers",
                        "expected case " + c.id + " to recompute \"full\" (after its recipe), got \"" +
                            (c.recompute ? to_string(*c.recompute) : std::string("null")) + "\"");
      fill(c.cuda_graphs, facts.cuda_graphs, "cuda_graphs", facts.cuda_graphs ? to_string(*facts.cuda_graphs) : "",
           recipes, facts, c);
      fill(c.tp_overlap_rs, facts.tp_overlap_rs, "tp_overlap_rs",
           facts.tp_overlap_rs ? to_string(*facts.tp_overlap_rs) : "", recipes, facts, c);
      fill(c.mtp_layers, facts.mtp_layers, "mtp_layers", facts.mtp_layers ? std::to_string(*facts.mtp_layers) : "",
           recipes, facts, c);
      fill(c.pipeline_layout, facts.pipeline_layout, "pipeline_layout", facts.pipeline_layout.value_or(""), recipes,
           facts, c);
      fill(c.fp8_recipe, facts.fp8_recipe, "fp8_recipe", facts.fp8_recipe ? to_string(*facts.fp8_recipe) : "", recipes,
           facts, c);
      fill(c.recompute_modules, facts.recompute_modules, "recompute_modules",
           facts.recompute_modules ? recompute_modules_text(*facts.recompute_modules) : "", recipes, facts, c);
      fill(c.fp8_param_gather, facts.fp8_param_gather, "fp8_param_gather",
           facts.fp8_param_gather.value_or(false) ? "on" : "off", recipes, facts, c);
      fill(c.bf16_layers_start, facts.bf16_layers_start, "bf16_layers_start",
           facts.bf16_layers_start ? std::to_string(*facts.bf16_layers_start) : "", recipes, facts, c);
      fill(c.bf16_layers_end, facts.bf16_layers_end, "bf16_layers_end",
           facts.bf16_layers_end ? std::to_string(*facts.bf16_layers_end) : "", recipes, facts, c);
      fill(c.optimizer, facts.optimizer, "optimizer", facts.optimizer ? to_string(*facts.optimizer) : "", recipes, facts, c);
      fill(c.attention, facts.attention, "attention", facts.attention ? to_string(*facts.attention) : "", recipes, facts,
           c);
      fill(c.compile, facts.compile, "compile", facts.compile.value_or(false) ? "on" : "off", recipes, facts, c);
      fill(c.tp_comm_overlap, facts.tp_comm_overlap, "tp_comm_overlap", facts.tp_comm_overlap.value_or(false) ? "on" : "off",
           recipes, facts, c);
      fill(c.peft, facts.peft, "peft", facts.peft ? to_string(*facts.peft) : "", recipes, facts, c);
      fill(c.lora_rank, facts.lora_rank, "lora_rank", facts.lora_rank ? std::to_string(*facts.lora_rank) : "", recipes,
           facts, c);
      fill(c.lora_targets, facts.lora_targets, "lora_targets",
           facts.lora_targets ? lora_targets_text(*facts.lora_targets) : "", recipes, facts, c);
      fill(c.sample_len, facts.sample_len, "sample_len", facts.sample_len ? std::to_string(*facts.sample_len) : "",
           recipes, facts, c);
      if (c.recipe_notes.size() > before)
        c.recipe_notes.insert(c.recipe_notes.begin() + static_cast<std::ptrdiff_t>(before), "recipe source: " + facts.source);
    }
    if (!found) unmatched.push_back(id);
  }
  return unmatched;
}

ResolvedCase resolve_case(const ValidationCase& c, const std::string& file, const Stack& stack) {
  ResolvedCase rc;
  Model& m = rc.model;
  const CaseModel& cm = c.model;
  m.name = cm.name;
  m.source = c.id;
  m.layers = cm.layers; m.hidden = cm.hidden; m.heads = cm.heads; m.ffn_hidden = cm.ffn_hidden;
  m.kv_heads = cm.kv_heads.value_or(cm.heads);
  m.activation = cm.activation;
  m.vocab = cm.vocab.value_or(0);
  m.moe_experts = cm.moe_experts.value_or(0);
  m.moe_topk = cm.moe_topk.value_or(0);
  m.moe_ffn_hidden = cm.moe_ffn_hidden.value_or(0);
  apply_family(m, cm, c.seq_len, rc.assumptions);
  nlohmann::json dummy = nlohmann::json::object();
  ObjectReader where(dummy, file, c.pointer + "/model");
  check_model(m, where);
  if (const Model* preset = matching_preset(c.model, m)) {
    std::string remark = "model: the " + preset->name + " preset (the case's fields agree; head_dim, norms, MLA, " +
                         "dense layers, MTP and windows from models/" +
                         (preset->hybrid() ? "; its hybrid pattern and Mamba mixer too" : "") + ")";
    m = *preset;
    m.source = c.id;
    for (auto it = rc.assumptions.begin(); it != rc.assumptions.end();)  // the preset replaces the family's guesses
      it = it->starts_with("architecture:") || it->starts_with("vocab null") ? rc.assumptions.erase(it) : it + 1;
    rc.assumptions.push_back(remark);
  }
  if (c.mtp_layers) m.mtp_layers = *c.mtp_layers;
  rc.par = Parallel{.tp = c.tp, .pp = c.pp, .dp = c.dp, .cp = c.cp, .ep = c.ep, .vp = c.vp};
  if (c.pipeline_layout)  // the recipe's layout, which the recipes file gave (noted with its source)
    rc.par.chunk_layers =
        parse_pipeline_layout(*c.pipeline_layout, m, c.pp, c.vp, file + ":" + c.pointer + "/pipeline_layout");
  else if (std::string note = reference_layout_note(m, rc.par); !note.empty())
    rc.assumptions.push_back("pipeline_layout null -> " + note.substr(std::string("pipeline layout ").size()));
  // A null field takes the stack's recipe default, else the README's generic rule.
  const StackDefaults& d = stack.defaults;
  std::string recipe = " (" + stack.label() + " recipes)";
  auto note = [&](const std::string& field, const std::string& value, bool from_stack, const std::string& generic) {
    rc.assumptions.push_back(field + " null -> " + value + (from_stack ? recipe : generic));
  };
  rc.par.zero_stage = c.zero_stage.value_or(d.zero_stage.value_or(1));
  if (!c.zero_stage)
    note("zero_stage", std::to_string(rc.par.zero_stage), d.zero_stage.has_value(), " (Megatron distributed optimizer)");
  // (Sequence parallelism needs tensor parallelism: a stack that uses it does so when tp > 1.)
  // Experts with tensor parallelism run it whatever the recipe says (spec::check_experts).
  bool stack_sp = d.sequence_parallel.value_or(true) && c.tp > 1, required = m.is_moe() && c.tp > 1;
  rc.par.sequence_parallel = c.sequence_parallel.value_or(stack_sp || required);
  if (!c.sequence_parallel)
    note("sequence_parallel", rc.par.sequence_parallel ? "on" : "off", d.sequence_parallel.has_value() && !(required && !stack_sp),
         required && !stack_sp ? " (Megatron-Core requires it for experts with tp > 1)" : "");
  if (m.is_moe() && d.expert_tensor_parallel) {
    rc.par.etp = *d.expert_tensor_parallel;
    note("etp", std::to_string(rc.par.etp), true, "");
  }
  rc.train.micro_batch = c.micro_batch.value_or(d.micro_batch.value_or(1));
  if (!c.micro_batch) note("micro_batch", std::to_string(rc.train.micro_batch), d.micro_batch.has_value(), "");
  rc.train.global_batch = c.global_batch;
  rc.train.moe_capacity_factor = c.moe_capacity_factor.value_or(0.0);
  rc.train.offload_layers = c.offload_layers.value_or(0);
  rc.train.recompute_layers = c.recompute_layers.value_or(0);
  rc.moe_dispatcher = c.moe_dispatcher;
  rc.moe_a2a_overlap = c.moe_a2a_overlap;
  rc.cuda_graphs = c.cuda_graphs;
  rc.tp_overlap_rs = c.tp_overlap_rs;
  rc.fp8_recipe = c.fp8_recipe;
  rc.attention = c.attention;
  rc.compile = c.compile;
  rc.tp_comm_overlap = c.tp_comm_overlap;
  rc.train.seq_len = c.seq_len;
  rc.train.peft = c.peft.value_or(Peft::none);
  rc.train.lora_rank = c.lora_rank.value_or(0);
  rc.train.lora_targets = c.lora_targets.value_or(0);
  rc.train.sample_len = c.sample_len.value_or(0);
  rc.train.precision = c.precision.value_or(d.precision.value_or(Dtype::bf16));
  rc.train.optimizer = c.optimizer.value_or(Optimizer::adam);
  // Muon's layer-wise optimizer gathers bf16 parameters: the stack's fp8 gather does not apply.
  bool fp8_gather = d.fp8_param_gather.value_or(false) && rc.train.optimizer != Optimizer::muon;
  rc.train.fp8_params = rc.train.precision == Dtype::fp8 && c.fp8_param_gather.value_or(fp8_gather);
  if (rc.train.fp8_params && !c.fp8_param_gather)
    rc.assumptions.push_back("fp8 parameters, all-gathered in fp8" + recipe);
  if (!c.precision) note("precision", to_string(rc.train.precision), d.precision.has_value(), "");
  std::int64_t edge =
      current_scaling_bf16_layers(d, rc.train.precision, c.fp8_recipe.value_or(stack.software.fp8_recipe));
  if (edge > 0) {
    rc.train.bf16_layers_start = rc.train.bf16_layers_end = edge;
    rc.assumptions.push_back("fp8 current scaling: the first and last " + std::to_string(edge) +
                             " transformer layer(s) in bf16" + recipe);
  }
  if (c.bf16_layers_start || c.bf16_layers_end) {  // the recipe's own, over the stack's default
    rc.train.bf16_layers_start = c.bf16_layers_start.value_or(0);
    rc.train.bf16_layers_end = c.bf16_layers_end.value_or(0);
  }
  rc.auto_recompute = !c.recompute && !d.recompute;
  rc.train.recompute = c.recompute.value_or(d.recompute.value_or(Recompute::none));
  // The stack's selective recompute stands in for unnamed modules, also where the least recompute
  // that fits is to be found (it may be selective).
  if (rc.train.recompute == Recompute::selective || rc.auto_recompute) {
    rc.train.recompute_modules = c.recompute_modules.value_or(d.recompute_modules.value_or(0));
    if (!c.recompute_modules && d.recompute_modules && rc.train.recompute == Recompute::selective)
      note("recompute_modules", recompute_modules_text(*d.recompute_modules), true, "");
  } else if (c.recompute_modules) {
    rc.assumptions.push_back("recompute_modules ignored: recompute is not selective");
  }
  if (!c.recompute) {
    if (d.recompute) note("recompute", to_string(*d.recompute), true, "");
    else rc.assumptions.push_back("recompute null -> least that fits");
  }
  for (const std::string& n : c.recipe_notes) rc.assumptions.push_back(n);
  for (const std::string& n : c.filled) rc.assumptions.push_back(n);
  for (const std::string& k : c.ignored) rc.assumptions.push_back("ignored unknown field \"" + k + "\"");
  return rc;
}

}  // namespace dtsim::spec
