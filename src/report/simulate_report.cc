#include "report/simulate_report.h"
#include "spec/json_reader.h"

#include <nlohmann/json.hpp>

#include "cost/memory.h"
#include "cost/model_stats.h"
#include "cost/partition.h"
#include "report/table.h"

namespace dtsim::report {
namespace {

// The stack's element-wise chains (spec::Software's fusion flags): one kernel each, eager ops, or a mix.
std::string elementwise_text(const spec::Software& s) {
  int fused = int{s.bias_activation_fusion} + int{s.bias_dropout_add_fusion} + int{s.rope_fusion} + int{s.rmsnorm_fusion};
  return fused == 4 ? "fused" : fused == 0 ? "eager" : "partly fused";
}


// The selective-recompute modules in effect, by name (empty unless recompute is selective).
nlohmann::json recompute_module_list(std::uint32_t mask) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [name, bit] : spec::recompute_module_names())
    if (mask & bit) out.push_back(name);
  return out;
}

nlohmann::json config_json(const JobView& j) {
  return {{"model", j.model->name}, {"cluster", j.cluster->name}, {"gpu", j.cluster->gpu.name},
          {"calibration", j.calibration}, {"gpus", j.gpus}, {"nodes", j.cluster->nodes_for(j.gpus)},
          {"tp", j.par.tp}, {"pp", j.par.pp}, {"dp", j.par.dp}, {"cp", j.par.cp}, {"ep", j.par.ep}, {"etp", j.par.expert_tp()},
          {"vp", j.par.vp}, {"zero_stage", j.par.zero_stage}, {"sequence_parallel", j.par.sequence_parallel},
          {"micro_batch", j.train.micro_batch}, {"global_batch", j.train.global_batch},
          {"seq_len", j.train.seq_len}, {"recompute", spec::to_string(j.train.recompute)}, {"recompute_layers", j.train.recompute_layers},
          {"recompute_modules", recompute_module_list(j.train.selective_modules())},
          {"precision", spec::to_string(j.train.precision)}, {"grad_dtype", spec::to_string(j.train.grad_dtype)},
          {"bf16_layers_start", j.train.bf16_layers_start}, {"bf16_layers_end", j.train.bf16_layers_end},
          {"optimizer", spec::to_string(j.train.optimizer)}, {"peft", spec::to_string(j.train.peft)},
          {"lora_rank", j.train.lora_rank}, {"lora_targets", spec::lora_targets_text(j.train.lora_targets)},
          {"sample_len", j.train.sample_len}, {"framework", j.stack},
          {"attention", spec::to_string(j.software.attention)}, {"tp_comm_overlap", j.software.tp_comm_overlap},
          {"overlap_grad_reduce", j.software.overlap_grad_reduce},
          {"overlap_param_gather", j.software.overlap_param_gather},
          {"overlap_p2p_comm", j.software.overlap_p2p_comm}, {"fp8_recipe", spec::to_string(j.software.fp8_recipe)},
          {"cuda_graphs", spec::to_string(j.software.cuda_graphs)},
          {"cross_entropy", spec::to_string(j.software.cross_entropy)},
          {"elementwise", elementwise_text(j.software)},
          {"optimizer_impl", spec::to_string(j.software.optimizer_impl)},
          {"tp_overlap_rs", spec::to_string(j.software.tp_overlap_rs)}, {"network", j.network},
          {"engine", j.engine}, {"stage_layers", cost::stage_layers(*j.model, j.par)},
          {"chunk_layers", cost::LayerPartition(*j.model, j.par).chunks()}};
}

nlohmann::json memory_json(const cost::MemoryEstimate& mem, const calibrate::Uncertainty* peak) {
  const cost::StageMemory& s = mem.peak();
  nlohmann::json j{{"parameters_bytes", s.weights.value()}, {"gradients_bytes", s.gradients.value()},
                   {"optimizer_bytes", s.optimizer.value()}, {"activations_bytes", s.activations.value()},
                   {"other_bytes", s.other.value()}, {"peak_bytes_per_gpu", s.total().value()},
                   {"capacity_bytes", mem.capacity.value()}, {"fits", mem.fits()}, {"peak_stage", s.stage},
                   {"parameters_per_gpu", s.parameters}};
  if (peak) j["uncertainty"] = uncertainty_json(*peak);
  return j;
}

std::string layout_line(const JobView& j) {
  auto n = [](std::int64_t v) { return std::to_string(v); };
  return "  layout   tp " + n(j.par.tp) + "  pp " + n(j.par.pp) + "  dp " + n(j.par.dp) + "  cp " + n(j.par.cp) +
         "  ep " + n(j.par.ep) + (j.par.ep > 1 ? "  etp " + n(j.par.expert_tp()) : "") + "  vp " + n(j.par.vp) + "  zero " + std::to_string(j.par.zero_stage) + "  sp " +
         (j.par.sequence_parallel ? "on" : "off") + "\n  training mbs " + n(j.train.micro_batch) + "  gbs " +
         n(j.train.global_batch) + "  seq " + n(j.train.seq_len) +
         (j.train.sample_len > 0 ? " (packed samples of " + n(j.train.sample_len) + ")" : std::string()) + "  " +
         spec::to_string(j.train.precision) +
         (j.train.precision == spec::Dtype::fp8 ? std::string(" (") + spec::to_string(j.software.fp8_recipe) + " scaling)" : "") +
         (j.train.bf16_layers_start + j.train.bf16_layers_end > 0
              ? "  bf16 layers " + n(j.train.bf16_layers_start) + "+" + n(j.train.bf16_layers_end)
              : std::string()) +
         "  recompute " + cost::recompute_text(j.train) + "  grads " + spec::to_string(j.train.grad_dtype) +
         "  " + spec::to_string(j.train.optimizer) +
         (j.train.peft == spec::Peft::lora ? "  lora rank " + n(j.train.lora_rank) + " on " +
                                                 spec::lora_targets_text(j.train.lora_targets) + " (base frozen)"
                                           : std::string()) +
         "\n  software " + j.stack + ": attention " + spec::to_string(j.software.attention) +
         ", tp-comm-overlap " +
         (j.software.tp_comm_overlap ? "on (rs " + spec::to_string(j.software.tp_overlap_rs) + ")" : "off") +
         ", overlap-grad-reduce " +
         (j.software.overlap_grad_reduce ? "on" : "off") + ", overlap-param-gather " +
         (j.software.overlap_param_gather ? "on" : "off") + ", overlap-p2p-comm " +
         (j.software.overlap_p2p_comm ? "on" : "off") + ", cuda-graphs " + spec::to_string(j.software.cuda_graphs) +
         ", cross-entropy " + spec::to_string(j.software.cross_entropy) + ", element-wise " +
         elementwise_text(j.software) + ", optimizer " + spec::to_string(j.software.optimizer_impl) + " (calibration " + j.calibration + ")\n" +
         (j.engine == "events"
              ? "  engine   events: " +
                    (j.network == "analytical"
                         ? std::string("event-driven, every transfer at its analytical time\n")
                         : std::string("event-driven; every transfer (DP, PP, ZeRO, and the TP, CP and EP "
                                       "communication inside passes) replayed as SimGrid flows, sharing links with "
                                       "whatever runs beside it\n"))
              : "") +
         (j.network == "analytical" || j.engine == "events"
              ? ""
              : "  network  " + j.network + ": each ring collective slowed by the contention of every group of its kind at once\n");
}

std::string header(const JobView& j) {
  std::string out = j.model->name + " on " + std::to_string(j.gpus) + " x " + j.cluster->gpu.name + " (" +
                    j.cluster->name + ", " + std::to_string(j.cluster->nodes_for(j.gpus)) + " nodes)\n" + layout_line(j);
  auto layers = cost::stage_layers(*j.model, j.par);
  if (cost::uneven_split(layers)) {
    std::string split;
    for (auto l : layers) split += (split.empty() ? "" : ",") + std::to_string(l);
    out += "  uneven pipeline: layers per stage " + split + "\n";
  }
  if (const auto* given = cost::given_chunks(*j.model, j.par); given != nullptr && j.par.vp > 1) {
    std::string chunks;
    for (auto l : *given) chunks += (chunks.empty() ? "" : ",") + std::to_string(l);
    out += "  pipeline layout: layers per model chunk, in virtual-stage order, " + chunks + "\n";
  }
  for (const std::string& n : j.notes) out += "  note: " + n + "\n";
  return out;
}


// A signed whole percentage: "+9%", "-4%", "+0%" (never "-0%").
std::string signed_pct(double v) {
  std::string s = fixed(v, 0);
  if (s == "-0") s = "0";
  return (s[0] == '-' ? "" : "+") + s + "%";
}

std::string family_text(const calibrate::Uncertainty& u) {
  const calibrate::Family& f = u.family.value_or(calibrate::Family{});
  std::string out = f.gpu.value_or("any GPU") + ", " + f.framework.value_or("any stack") + ", " +
                    (f.precision ? calibrate::to_string(*f.precision) : "any precision");
  if (f.gpus_min && f.gpus_max)
    out += ", " + std::to_string(*f.gpus_min) +
           (*f.gpus_max > *f.gpus_min ? "-" + std::to_string(*f.gpus_max) : std::string()) + " GPUs";
  if (u.relaxed.empty()) return out;
  std::string relaxed;
  for (calibrate::Constraint c : u.relaxed) relaxed += (relaxed.empty() ? "" : ", ") + std::string(to_string(c));
  return out + "; relaxed " + relaxed + ": fewer than " + std::to_string(calibrate::kFamilyRuns) +
         " runs matched otherwise";
}

// The interval around `value` (in `unit`, `digits` decimals) the family's runs give, for one line:
// "8.553-9.712 s: measured -4% / +9% of the prediction on 19 comparable published runs (...)",
// or "none: " and why.
std::string interval_text(const calibrate::Uncertainty& u, double value, int digits, const std::string& unit) {
  if (!u.low_pct || !u.high_pct) {
    if (!u.family) return "none: " + u.missing;
    return "none: " + u.missing + " (" + std::to_string(u.runs) + " in the widest family: " + family_text(u) + ")";
  }
  return fixed(value * (1 + *u.low_pct / 100), digits) + "-" + fixed(value * (1 + *u.high_pct / 100), digits) + unit +
         ": measured " + signed_pct(*u.low_pct) + " / " + signed_pct(*u.high_pct) + " of the prediction on " +
         std::to_string(u.runs) + " comparable published runs (" + family_text(u) + ")";
}

std::string memory_table(const cost::MemoryEstimate& mem, const calibrate::Uncertainty* peak) {
  const cost::StageMemory& s = mem.peak();
  Table t({"memory (stage " + std::to_string(s.stage) + ", most loaded)", "GiB"});
  auto row = [&t](const char* name, Bytes b) { t.add({name, fixed(to_gib(b), 2)}); };
  row("parameters", s.weights);
  row("gradients", s.gradients);
  row("optimizer states", s.optimizer);
  row("activations", s.activations);
  row("other (buffers, workspace, allocator)", s.other);
  row("peak", s.total());
  row("capacity", mem.capacity);
  std::string out = t.render() + (mem.fits() ? "  fits\n" : "  DOES NOT FIT\n");
  if (peak) out += "  peak interval " + interval_text(*peak, to_gib(s.total()), 1, " GiB") + "\n";
  return out;
}

template <class T>
nlohmann::json or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

}  // namespace

std::string uncertainty_text(const calibrate::Uncertainty& u, double step_s) { return interval_text(u, step_s, 3, " s"); }

nlohmann::json uncertainty_json(const calibrate::Uncertainty& u) {
  const calibrate::Family& f = u.family.value_or(calibrate::Family{});
  std::optional<std::string> precision;
  if (f.precision) precision = calibrate::to_string(*f.precision);
  nlohmann::json relaxed = nlohmann::json::array();
  for (calibrate::Constraint c : u.relaxed) relaxed.push_back(calibrate::to_string(c));
  return {{"low_pct", or_null(u.low_pct)}, {"high_pct", or_null(u.high_pct)}, {"runs", u.runs},
          {"family", {{"gpu", or_null(f.gpu)}, {"framework", or_null(f.framework)}, {"precision", or_null(precision)},
                      {"gpus_min", or_null(f.gpus_min)}, {"gpus_max", or_null(f.gpus_max)}}},
          {"relaxed", relaxed}, {"reason", u.missing.empty() ? nlohmann::json() : nlohmann::json(u.missing)}};
}

double moe_busiest_rank_factor(const JobView& job) {
  cost::LayerShape sh = cost::layer_shape(*job.model, job.par, job.train);
  return cost::moe_busiest_rank(job.par.ep, sh.expert_tokens, job.train.moe_imbalance);
}

std::string pace_text(double pace, std::int64_t gpus, double speed_spread, const std::string& profile) {
  return "kernels x" + fixed(pace, 3) + ": the slowest of " + std::to_string(gpus) + " GPUs (speed_spread " +
         fixed(100 * speed_spread, 1) + "% in " + profile + ")";
}

std::string memory_report(const JobView& job, const cost::MemoryEstimate& mem, bool json,
                          const calibrate::Uncertainty* peak) {
  if (json) {
    nlohmann::json j{{"config", config_json(job)}, {"memory", memory_json(mem, peak)},
                     {"parameters", cost::count_params(*job.model).total(job.model->layers)}, {"notes", job.notes}};
    nlohmann::json stages = nlohmann::json::array();
    for (const auto& s : mem.stages) stages.push_back({{"stage", s.stage}, {"peak_bytes", s.total().value()}});
    j["stages"] = stages;
    return spec::json_text(j) + "\n";
  }
  return header(job) + "\n" + memory_table(mem, peak);
}

std::string moe_routing_text(const JobView& job) {
  std::string how_sent = std::string(", dispatcher ") + spec::to_string(job.software.moe_dispatcher) +
                         (job.software.moe_a2a_overlap ? " (overlapped)" : "");
  if (!job.train.moe_dropless())
    return "token drop: every expert computes " + fixed(job.train.moe_capacity_factor, 2) +
           " x its balanced share (padded or dropped)" + how_sent;
  double f = moe_busiest_rank_factor(job);
  std::string how = job.train.moe_imbalance > 0
                        ? "skewed (--moe-imbalance " + fixed(job.train.moe_imbalance, 2) + ")"
                        : "balanced by force, as published MoE benchmarks run it (--moe-imbalance for a skew)";
  return "routing " + how + ": the busiest of " + std::to_string(job.par.ep) + " EP ranks gets x" + fixed(f, 3) +
         " the mean tokens" + how_sent;
}

std::string simulate_report(const JobView& job, const engine::StepResult& r, const cost::MemoryEstimate& mem,
                            const calibrate::Uncertainty& u, bool json, const calibrate::Uncertainty* peak) {
  if (json) {
    nlohmann::json j{{"step_time_s", r.step_time.value()}, {"tokens_per_s", r.tokens_per_s},
                     {"model_tflops_per_gpu", r.model_tflops_per_gpu}, {"mfu", r.mfu}, {"hfu", r.hfu},
                     {"memory", memory_json(mem, peak)}, {"config", config_json(job)}, {"notes", job.notes},
                     {"critical_stage", r.critical_stage}, {"microbatches", r.microbatches}, {"tasks", r.tasks},
                     {"pace", r.pace}, {"uncertainty", uncertainty_json(u)}};
    if (job.model->is_moe())
      j["moe"] = {{"routing", !job.train.moe_dropless()    ? "token-drop"
                              : job.train.moe_imbalance > 0 ? "skewed"
                                                            : "force-balanced"},
                  {"imbalance", job.train.moe_imbalance}, {"capacity_factor", job.train.moe_capacity_factor},
                  {"busiest_rank_factor",
                   job.train.moe_dropless() ? moe_busiest_rank_factor(job) : job.train.moe_capacity_factor},
                  {"dispatcher", spec::to_string(job.software.moe_dispatcher)},
                  {"a2a_overlap", job.software.moe_a2a_overlap}};
    for (std::size_t c = 0; c < schedule::kCategories; ++c)
      j["breakdown"][schedule::to_string(static_cast<schedule::Category>(c))] = r.breakdown[c].value();
    return spec::json_text(j) + "\n";
  }
  std::string out = header(job) + "\n";
  out += "  step time " + fixed(r.step_time.value(), 3) + " s   tokens/s " + fixed(r.tokens_per_s, 0) +
         "   model TFLOP/s per GPU " + fixed(r.model_tflops_per_gpu, 1) + "   MFU " + fixed(100 * r.mfu, 1) +
         "%   HFU " + fixed(100 * r.hfu, 1) + "%\n";
  out += "  interval " + uncertainty_text(u, r.step_time.value()) + "\n";
  if (r.pace > 1)
    out += "  pace     " + pace_text(r.pace, job.gpus, job.speed_spread, job.calibration) + "\n";
  if (job.model->is_moe()) out += "  moe      " + moe_routing_text(job) + "\n";
  out += "\n";
  Table t({"breakdown (critical stage " + std::to_string(r.critical_stage) + ")", "seconds", "share"});
  for (std::size_t c = 0; c < schedule::kCategories; ++c)
    t.add({schedule::to_string(static_cast<schedule::Category>(c)), fixed(r.breakdown[c].value(), 3),
           fixed(100 * r.breakdown[c].value() / r.step_time.value(), 1) + "%"});
  return out + t.render() + "\n" + memory_table(mem, peak);
}

std::string chrome_trace(const engine::Simulation& sim) {
  const auto& g = sim.step.graph;
  nlohmann::json events = nlohmann::json::array();
  for (std::size_t s = 0; s < g.streams().size(); ++s) {
    const auto& st = g.streams()[s];
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", st.rank}, {"args", {{"name", "stage " + std::to_string(st.rank)}}}});
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", st.rank}, {"tid", s}, {"args", {{"name", st.name}}}});
  }
  for (std::size_t i = 0; i < g.tasks().size(); ++i) {
    const auto& task = g.tasks()[i];
    const auto& t = sim.timeline.tasks[i];
    if (t.end == t.start) continue;
    const auto& st = g.streams()[static_cast<std::size_t>(task.stream)];
    events.push_back({{"ph", "X"}, {"name", schedule::to_string(task.label)}, {"pid", st.rank}, {"tid", task.stream},
                      {"ts", static_cast<double>(t.start) * 1e-6}, {"dur", static_cast<double>(t.end - t.start) * 1e-6}});
  }
  return spec::json_text(nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}, -1) + "\n";
}

}  // namespace dtsim::report
