#include "report/show.h"
#include "spec/json_reader.h"

#include <nlohmann/json.hpp>

#include "cost/model_stats.h"
#include "report/table.h"
#include "topology/links.h"

namespace dtsim::report {
namespace {

nlohmann::json model_json(const spec::Model& m, std::int64_t seq) {
  cost::ModelParams p = cost::count_params(m);
  cost::TokenFlops f = cost::token_flops(m, seq);
  nlohmann::json j;
  j["name"] = m.name;
  j["source"] = m.source;
  j["architecture"] = {{"layers", m.layers}, {"hidden", m.hidden}, {"heads", m.heads}, {"kv_heads", m.kv_heads},
                       {"head_dim", m.head_dim}, {"ffn_hidden", m.ffn_hidden},
                       {"activation", spec::to_string(m.activation)}, {"vocab", m.vocab},
                       {"position_embedding", spec::to_string(m.position_embedding)},
                       {"max_position", m.max_position}, {"tied_embeddings", m.tied_embeddings},
                       {"norm", spec::to_string(m.norm)}, {"linear_bias", spec::to_string(m.linear_bias)},
                       {"qk_norm", m.qk_norm}, {"moe_experts", m.moe_experts}, {"moe_topk", m.moe_topk},
                       {"moe_ffn_hidden", m.moe_ffn_hidden}, {"moe_shared_ffn_hidden", m.moe_shared_ffn_hidden},
                       {"activation_clamp", m.activation_clamp}, {"rope_mscale", m.rope_mscale},
                       {"hidden_dropout", m.hidden_dropout},
                       {"attention_dropout", m.attention_dropout}, {"hybrid_pattern", m.hybrid_pattern},
                       {"moe_latent", m.moe_latent}, {"mtp_layers", m.mtp_layers}, {"mtp_pattern", m.mtp_pattern},
                       {"mtp_shared_weights", m.mtp_shared_weights}, {"mtp_bf16", m.mtp_bf16}};
  if (m.mamba.on())
    j["architecture"]["mamba"] = {{"heads", m.mamba.heads}, {"head_dim", m.mamba.head_dim}, {"state", m.mamba.state},
                                  {"groups", m.mamba.groups}, {"conv", m.mamba.conv}, {"chunk", m.mamba.chunk}};
  cost::LayerParams all = cost::all_layer_params(m);
  j["all_layers"] = {{"attention", all.attention}, {"mlp", all.mlp}, {"mamba", all.mamba}, {"norms", all.norms},
                     {"total", all.total()}};
  j["parameters"] = p.total(m.layers);
  j["active_parameters"] = p.active(m.layers);
  j["per_layer"] = {{"attention", p.layer.attention}, {"mlp", p.layer.mlp}, {"mlp_active", p.layer.mlp_active},
                    {"norms", p.layer.norms}, {"total", p.layer.total()}};
  j["dense_layers"] = p.dense_layers;  // an MoE model's leading dense layers, each one dense_layer
  j["dense_layer"] = {{"attention", p.dense_layer.attention}, {"mlp", p.dense_layer.mlp},
                      {"norms", p.dense_layer.norms}, {"total", p.dense_layer.total()}};
  j["non_layer"] = {{"embedding", p.embedding}, {"position", p.position}, {"final_norm", p.final_norm},
                    {"lm_head", p.lm_head}, {"mtp", p.mtp}};
  j["pipeline_layouts"] = nlohmann::json::array();
  for (const spec::ReferenceLayout& l : m.pipeline_layouts)
    j["pipeline_layouts"].push_back({{"pp", l.pp}, {"vp", l.vp}, {"layout", l.text}, {"chunk_layers", l.chunk_layers}});
  j["flops_per_token"] = {{"seq_len", seq},
                          {"forward", f.forward().value()},
                          {"backward", f.backward().value()},
                          {"per_layer_forward",
                           {{"attention_proj", f.attention_proj.value()},
                            {"attention_core", f.attention_core.value()},
                            {"mlp", f.mlp.value()},
                            {"mamba", f.mamba.value()}}},
                          {"logits_forward", f.logits.value()}};
  return j;
}

std::string model_text(const spec::Model& m, std::int64_t seq) {
  cost::ModelParams p = cost::count_params(m);
  cost::TokenFlops f = cost::token_flops(m, seq);
  std::string out = m.name + "\n  source: " + (m.source.empty() ? "(none given)" : m.source) + "\n";
  out += "  " + std::to_string(m.layers) + " layers, hidden " + std::to_string(m.hidden) + ", " +
         std::to_string(m.heads) + " heads (" + std::to_string(m.kv_heads) + " kv, head_dim " +
         std::to_string(m.head_dim) + "), ffn " + std::to_string(m.ffn_hidden) + " " +
         spec::to_string(m.activation) + ", vocab " + std::to_string(m.vocab) + "\n";
  out += std::string("  ") + spec::to_string(m.position_embedding) + " positions" +
         (m.rope_mscale != 1.0 ? " (YaRN cos/sin x" + fixed(m.rope_mscale, 3) + ")" : "") + ", " + spec::to_string(m.norm) +
         ", bias " + spec::to_string(m.linear_bias) + (m.tied_embeddings ? ", tied" : ", untied") + " embeddings";
  if (m.is_moe())
    out += ", MoE " + std::to_string(m.moe_experts) + " experts top-" + std::to_string(m.moe_topk) + " (ffn " +
           std::to_string(m.moe_ffn_hidden) + (m.moe_latent > 0 ? ", latent " + std::to_string(m.moe_latent) : "") + ")";
  if (m.mtp_layers > 0)
    out += ", MTP " + std::to_string(m.mtp_layers) + " x " + m.mtp_blocks() + (m.mtp_shared_weights ? " (shared weights)" : "") +
           (m.mtp_bf16 ? " in bf16" : "");
  out += ", dropout " + fixed(m.hidden_dropout, 2) + " hidden / " + fixed(m.attention_dropout, 2) + " attention";
  if (m.hybrid()) {
    out += "\n  hybrid: " + std::to_string(m.count_blocks('M', 0, m.layers)) + " Mamba-2, " +
           std::to_string(m.count_blocks('*', 0, m.layers)) + " attention, " +
           std::to_string(m.count_blocks('-', 0, m.layers)) + " MLP, " + std::to_string(m.count_blocks('E', 0, m.layers)) +
           " MoE layers: " + m.hybrid_pattern;
    if (m.mamba.on())
      out += "\n  Mamba-2: " + std::to_string(m.mamba.heads) + " heads x " + std::to_string(m.mamba.head_dim) +
             " (inner " + std::to_string(m.mamba.inner()) + "), state " + std::to_string(m.mamba.state) + ", " +
             std::to_string(m.mamba.groups) + " groups, conv " + std::to_string(m.mamba.conv) + ", chunk " +
             std::to_string(m.mamba.chunk);
  }
  out += "\n\n  parameters         " + si_count(p.total(m.layers)) + "\n";
  if (m.is_moe()) out += "  active parameters  " + si_count(p.active(m.layers)) + "\n";
  Table t({"part", "parameters", "share"});
  double total = p.total(m.layers);
  auto row = [&](const std::string& name, double v) { t.add({name, si_count(v), fixed(100 * v / total, 2) + "%"}); };
  // Every layer by part: an MoE model's leading dense layers count their own MLP, a hybrid
  // model's blocks their own parts.
  cost::LayerParams all = cost::all_layer_params(m);
  if (all.mamba > 0) row("mamba (all layers)", all.mamba);
  row("attention (all layers)", all.attention);
  row("mlp (all layers)", all.mlp);
  row("norms (all layers)", all.norms + p.final_norm);
  row("embedding", p.embedding + p.position);
  if (p.lm_head > 0) row("lm head", p.lm_head);
  if (p.mtp > 0) row("mtp modules", p.mtp);
  out += "\n" + t.render();
  for (const spec::ReferenceLayout& l : m.pipeline_layouts)
    out += "  pipeline layout for pp " + std::to_string(l.pp) + " x vp " + std::to_string(l.vp) + ": " + l.text + "\n";
  out += "\n  FLOPs per token at seq " + std::to_string(seq) + " (Megatron-LM model FLOPs): forward " +
         si_count(f.forward().value()) + ", backward " + si_count(f.backward().value()) + "\n";
  return out;
}

}  // namespace

std::string show_model(const spec::Model& m, std::int64_t seq, bool json) {
  return json ? spec::json_text(model_json(m, seq)) + "\n" : model_text(m, seq);
}

std::string show_gpu(const spec::Gpu& g, bool json) {
  using spec::Dtype;
  const Dtype all[] = {Dtype::fp32, Dtype::tf32, Dtype::fp16, Dtype::bf16, Dtype::fp8, Dtype::fp4};
  if (json) {
    nlohmann::json j{{"name", g.name},
                     {"memory_GiB", to_gib(g.memory)},
                     {"hbm_bandwidth_GBps", to_gbytes_per_s(g.hbm_bandwidth)},
                     {"sm_count", g.sm_count},
                     {"boost_clock_GHz", g.boost_clock_ghz > 0 ? nlohmann::json(g.boost_clock_ghz) : nlohmann::json()}};
    for (Dtype d : all) j["peak_tflops"][spec::to_string(d)] = to_tflops(g.peak(d));
    return spec::json_text(j) + "\n";
  }
  Table t({"dtype", "peak dense TFLOP/s"});
  for (Dtype d : all) t.add({spec::to_string(d), g.peak(d).value() > 0 ? fixed(to_tflops(g.peak(d)), 1) : "-"});
  std::string sms = std::to_string(g.sm_count) + " SMs" +
                    (g.boost_clock_ghz > 0 ? " at " + fixed(g.boost_clock_ghz, 2) + " GHz" : "");
  return g.name + "\n  memory " + fixed(to_gib(g.memory), 1) + " GiB, HBM " +
         fixed(to_gbytes_per_s(g.hbm_bandwidth), 0) + " GB/s, " + sms + "\n\n" + t.render();
}

namespace {

// What the host costs a job here (pass_cost.cc's host-bound passes, activation offload): "host:
// intel CPU; a PyTorch op 22.96 us, a Transformer Engine module 61.65 us to issue (host_issue_us);
// GPU-host link 64.0 GB/s per GPU per direction". Unstated costs are said to be unstated.
std::string host_text(const spec::Cluster& c) {
  std::string out = std::string("  host: ") + spec::to_string(c.host_cpu) + " CPU; ";
  if (c.host_torch_op.value() > 0 || c.host_te_module.value() > 0)
    out += "a PyTorch op " + fixed(to_us(c.host_torch_op), 2) + " us, a Transformer Engine module " +
           fixed(to_us(c.host_te_module), 2) + " us to issue (host_issue_us)";
  else
    out += "issue costs not stated (no host-bound term)";
  out += "; GPU-host link " +
         (c.host_link.value() > 0 ? fixed(to_gbytes_per_s(c.host_link), 1) + " GB/s per GPU per direction"
                                  : std::string("not stated (no activation offload)")) +
         "\n";
  return out;
}

// A NIC split into planes (cost/collective.cc): "NICs: 2 planes of 50.0 GB/s each; rings and trees
// use both, a point-to-point transfer (send/recv, all-to-all) one". Nothing for a single port.
std::string planes_text(const spec::Cluster& c) {
  if (c.nic_planes <= 1) return "";
  return "  NICs: " + std::to_string(c.nic_planes) + " planes of " +
         fixed(to_gbytes_per_s(c.nic_bandwidth) / static_cast<double>(c.nic_planes), 1) +
         " GB/s each (nic_planes); rings and trees use them all, a point-to-point transfer (send/recv, "
         "all-to-all) one\n";
}

}  // namespace

std::string show_cluster(const spec::Cluster& c, std::int64_t gpus, bool json) {
  std::int64_t nodes = c.nodes_for(gpus);
  int levels = topology::levels_spanned(c, nodes);
  struct Row { std::string name; topology::LinkCost link; };
  std::int64_t per_domain = c.domain_ranks(gpus), domains = (gpus + per_domain - 1) / per_domain;
  bool racks = c.nvlink_domain > c.gpus_per_node;
  std::vector<Row> rows{{std::string(racks ? "NVLink domain " : "intra-node ") + spec::to_string(c.intra.fabric),
                         topology::intra_node_link(c)}};
  for (int l = 1; l <= std::max(levels, 1); ++l)
    rows.push_back({"network, " + std::to_string(l) + " fat-tree level" + (l > 1 ? "s" : ""), topology::network_link(c, l)});
  if (json) {
    nlohmann::json j{{"name", c.name}, {"gpu", c.gpu.name}, {"gpus", gpus}, {"gpus_per_node", c.gpus_per_node},
                     {"nodes", nodes}, {"fabric_levels_used", levels}, {"max_nodes", topology::max_nodes(c)},
                     {"nvlink_domain", c.nvlink_domain}, {"nvlink_domains_used", domains},
                     {"gpus_per_nvlink_domain_used", per_domain},
                     {"nics_per_node", c.nics_per_node}, {"nic_planes", c.nic_planes},
                     {"rail_optimized", c.rail_optimized},
                     {"nvls", c.intra.nvls}, {"calibration", c.calibration}, {"host_cpu", spec::to_string(c.host_cpu)}};
    j["host_issue_us"] = c.host_torch_op.value() > 0 || c.host_te_module.value() > 0
                             ? nlohmann::json{{"torch_op", to_us(c.host_torch_op)}, {"te_module", to_us(c.host_te_module)}}
                             : nlohmann::json();
    j["host_link_GBps"] = c.host_link.value() > 0 ? nlohmann::json(to_gbytes_per_s(c.host_link)) : nlohmann::json();
    for (const Row& r : rows)
      j["links"].push_back({{"class", r.name}, {"bandwidth_GBps", to_gbytes_per_s(r.link.bandwidth)},
                            {"latency_us", to_us(r.link.latency)}});
    return spec::json_text(j) + "\n";
  }
  Table t({"link class", "GB/s per GPU per direction", "latency (us)"});
  for (const Row& r : rows) t.add({r.name, fixed(to_gbytes_per_s(r.link.bandwidth), 1), fixed(to_us(r.link.latency), 2)});
  std::string out = c.name + ": " + std::to_string(gpus) + " x " + c.gpu.name + " in " + std::to_string(nodes) +
                    " node" + (nodes > 1 ? "s" : "") + " of " + std::to_string(c.gpus_per_node) + "; " +
                    std::to_string(c.nics_per_node) + " NICs per node" + (c.rail_optimized ? " (rail-optimized)" : "") +
                    "; fabric levels used: " + std::to_string(levels) + " (max " + std::to_string(topology::max_nodes(c)) +
                    " nodes)\n";
  // NVLink domains: what stays on NVLink and what crosses the NICs (topology/placement.h).
  out += "  NVLink domain: " + std::to_string(c.nvlink_domain) + " GPUs" +
         (racks ? " (" + std::to_string(c.nvlink_domain / c.gpus_per_node) + " nodes of " +
                      std::to_string(c.gpus_per_node) + " on one NVLink switch fabric)"
                : " (one node)") +
         "; this job: " + std::to_string(domains) + " domain" + (domains > 1 ? "s" : "") + " of " +
         std::to_string(per_domain) + " GPUs" +
         (racks && domains > 1 && per_domain < c.nvlink_domain
              ? " (spread evenly in whole nodes: " + std::to_string(per_domain) + " of each domain's " +
                    std::to_string(c.nvlink_domain) + ")"
              : "") +
         ".\n  Groups (TP, CP, EP, DP, PP neighbours) inside one domain talk over NVLink; groups spanning domains "
         "use the NICs.\n" + planes_text(c) + host_text(c) + "  calibration profile: " + c.calibration + "\n\n";
  return out + t.render();
}

namespace {

// Every switch of a stack, under the key its file gives it (calibration/stacks/*.json).
nlohmann::json software_json(const spec::Software& w) {
  return {{"attention", spec::to_string(w.attention)},
          {"tp_comm_overlap", w.tp_comm_overlap},
          {"tp_overlap_rs", spec::to_string(w.tp_overlap_rs)},
          {"tp_async_backward", w.tp_async_backward},
          {"overlap_grad_reduce", w.overlap_grad_reduce},
          {"overlap_param_gather", w.overlap_param_gather},
          {"overlap_p2p_comm", w.overlap_p2p_comm},
          {"pp_p2p_serial", w.pp_p2p_serial},
          {"pp_grad_partitioned", w.pp_grad_partitioned},
          {"pp_scatter_gather", w.pp_scatter_gather},
          {"main_grads", spec::to_string(w.main_grads)},
          {"grad_accumulation_fusion", spec::to_string(w.grad_accumulation_fusion)},
          {"zero3_gather", spec::to_string(w.zero3_gather)},
          {"zero3_prefetch", w.zero3_prefetch},
          {"zero3_comm_sms", w.zero3_comm_sms},
          {"zero3_gather_cpu_us", w.zero3_gather_cpu_us},
          {"zero3_list_collectives", w.zero3_list_collectives},
          {"zero3_list_build_us", w.zero3_list_build_us},
          {"zero3_list_copy_cpu_us", w.zero3_list_copy_cpu_us},
          {"zero3_zero_fill", w.zero3_zero_fill},
          {"zero3_fetch_norm", w.zero3_fetch_norm},
          {"zero3_grad_path", spec::to_string(w.zero3_grad_path)},
          {"zero3_gather_copy_out", w.zero3_gather_copy_out},
          {"zero3_recompute_gathers", w.zero3_recompute_gathers},
          {"fsdp_fp32_params", w.fsdp_fp32_params},
          {"zero3_pp_gathered", w.zero3_pp_gathered},
          {"compile_loss", w.compile_loss},
          {"tp_saves_gathered_input", w.tp_saves_gathered_input},
          {"tp_overlap_impl", spec::to_string(w.tp_overlap_impl)},
          {"bias_activation_fusion", w.bias_activation_fusion},
          {"bias_dropout_add_fusion", w.bias_dropout_add_fusion},
          {"rope_fusion", w.rope_fusion},
          {"rmsnorm_fusion", w.rmsnorm_fusion},
          {"linear_bias_epilogue", w.linear_bias_epilogue},
          {"attention_unpad", w.attention_unpad},
          {"fp8_recipe", spec::to_string(w.fp8_recipe)},
          {"moe_dispatcher", spec::to_string(w.moe_dispatcher)},
          {"moe_a2a_overlap", w.moe_a2a_overlap},
          {"cross_entropy", spec::to_string(w.cross_entropy)},
          {"train_metric_passes", w.train_metric_passes},
          {"optimizer_impl", spec::to_string(w.optimizer_impl)},
          {"param_remainders", w.param_remainders},
          {"cuda_graphs", spec::to_string(w.cuda_graphs)}};
}

// The defaults a stack states; what it leaves unstated falls to the generic rule (null).
nlohmann::json defaults_json(const spec::StackDefaults& d) {
  auto opt = [](const auto& v) -> nlohmann::json { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"recompute", d.recompute ? nlohmann::json(spec::to_string(*d.recompute)) : nlohmann::json(nullptr)},
          {"sequence_parallel", opt(d.sequence_parallel)},
          {"zero_stage", opt(d.zero_stage)},
          {"precision", d.precision ? nlohmann::json(spec::to_string(*d.precision)) : nlohmann::json(nullptr)},
          {"micro_batch", opt(d.micro_batch)},
          {"expert_tensor_parallel", opt(d.expert_tensor_parallel)},
          {"fp8_param_gather", opt(d.fp8_param_gather)},
          {"current_scaling_bf16_layers", opt(d.current_scaling_bf16_layers)},
          {"recompute_modules", d.recompute_modules ? nlohmann::json(spec::recompute_modules_text(*d.recompute_modules))
                                                    : nlohmann::json(nullptr)}};
}

std::string value_text(const nlohmann::json& v) {
  if (v.is_null()) return "-";
  if (v.is_boolean()) return v.get<bool>() ? "on" : "off";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

}  // namespace

std::string show_stack(const spec::Stack& s, bool json) {
  nlohmann::json sw = software_json(s.software), def = defaults_json(s.defaults), recipes = nlohmann::json::array();
  for (const spec::GpuRecipe& g : s.gpu_recipes) {
    nlohmann::json r{{"gpu", g.gpu}};
    if (g.moe_dispatcher) r["moe_dispatcher"] = spec::to_string(*g.moe_dispatcher);
    if (g.attention) r["attention"] = spec::to_string(*g.attention);
    recipes.push_back(r);
  }
  if (json) {
    nlohmann::json j{{"stack", s.label()}, {"name", s.name},     {"version", s.version},   {"since", s.since},
                     {"software", sw},     {"defaults", def},    {"gpu_recipes", recipes}};
    return spec::json_text(j) + "\n";
  }
  std::string out = s.label() + " (since " + s.since + ")\n\nsoftware\n";
  for (const auto& [k, v] : sw.items()) out += "  " + k + std::string(k.size() < 26 ? 26 - k.size() : 1, ' ') + value_text(v) + "\n";
  out += "\ndefaults for fields a run leaves unset (-: the generic rule)\n";
  for (const auto& [k, v] : def.items()) out += "  " + k + std::string(k.size() < 30 ? 30 - k.size() : 1, ' ') + value_text(v) + "\n";
  out += "\nrecipes per GPU";
  if (recipes.empty()) return out + ": none\n";
  out += "\n";
  for (const nlohmann::json& r : recipes) {
    out += "  " + r["gpu"].get<std::string>() + ":";
    for (const auto& [k, v] : r.items())
      if (k != "gpu") out += " " + k + " " + value_text(v);
    out += "\n";
  }
  return out;
}

}  // namespace dtsim::report
