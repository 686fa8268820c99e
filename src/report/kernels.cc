#include "report/kernels.h"

#include <nlohmann/json.hpp>

#include "report/table.h"

namespace dtsim::report {
namespace {

const char* kind_text(cost::OpKind k) {
  switch (k) {
    case cost::OpKind::gemm: return "gemm";
    case cost::OpKind::attention: return "attention";
    case cost::OpKind::memory: return "memory";
  }
  return "memory";
}

// What sets the kernel's time: its math, its HBM traffic, or its fixed per-kernel cost.
const char* bound_text(const cost::OpTiming& t) {
  Seconds body = std::max(t.compute, t.memory);
  if (t.overhead > body) return "launch";
  if (t.sm_bound) return "sm";
  return t.memory_bound() ? "memory" : "math";
}

std::string shape_text(const cost::Op& op) {
  if (op.kind != cost::OpKind::gemm) return "";
  std::string s = fixed(op.m, 0) + "x" + fixed(op.n, 0) + "x" + fixed(op.k, 0);
  if (op.batch > 1) s += " (x" + fixed(op.batch, 0) + ")";
  return s;
}

void add_pass(std::string& out, const char* title, const std::vector<cost::Op>& ops, const cost::ComputeContext& ctx) {
  if (ops.empty()) return;
  Table t({"kernel", "kind", "m x n x k", "GFLOP", "MB", "us", "share", "eff", "bound"});
  Seconds total{0};
  std::vector<cost::OpTiming> times;
  for (const cost::Op& op : ops) {
    times.push_back(cost::op_timing(op, ctx));
    total += times.back().total;
  }
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const cost::Op& op = ops[i];
    const cost::OpTiming& tm = times[i];
    t.add({op.name, kind_text(op.kind), shape_text(op), fixed(op.flops.value() / 1e9, 1),
           fixed(op.bytes.value() / 1e6, 1), fixed(tm.total.value() * 1e6, 1),
           fixed(total.value() > 0 ? 100 * tm.total.value() / total.value() : 0, 1) + "%",
           op.kind == cost::OpKind::memory ? "" : fixed(100 * tm.efficiency, 1) + "%", bound_text(tm)});
  }
  out += std::string(title) + ": " + std::to_string(ops.size()) + " kernel groups, " +
         fixed(total.value() * 1e3, 3) + " ms\n" + t.render() + "\n";
}

nlohmann::json pass_json(const std::vector<cost::Op>& ops, const cost::ComputeContext& ctx) {
  nlohmann::json a = nlohmann::json::array();
  for (const cost::Op& op : ops) {
    cost::OpTiming tm = cost::op_timing(op, ctx);
    a.push_back({{"name", op.name},
                 {"kind", kind_text(op.kind)},
                 {"m", op.m},
                 {"n", op.n},
                 {"k", op.k},
                 {"batch", op.batch},
                 {"kernels", op.kernels},
                 {"flops", op.flops.value()},
                 {"bytes", op.bytes.value()},
                 {"compute_s", tm.compute.value()},
                 {"memory_s", tm.memory.value()},
                 {"overhead_s", tm.overhead.value()},
                 {"time_s", tm.total.value()},
                 {"efficiency", tm.efficiency},
                 {"bound", bound_text(tm)}});
  }
  return a;
}

// The host blocks in issue order, with their names as printed.
std::vector<std::pair<const char*, Seconds>> host_rows(const schedule::HostBlocks& h) {
  return {{"attention", h.attention}, {"router", h.router}, {"preprocess", h.preprocess},
          {"dispatch", h.dispatch},   {"fc1", h.fc1},       {"act", h.act},
          {"fc2", h.fc2},             {"shared", h.shared}, {"combine", h.combine}};
}

nlohmann::json host_json(const schedule::HostBlocks& h) {
  nlohmann::json j;
  for (const auto& [name, time] : host_rows(h)) j[std::string(name) + "_s"] = time.value();
  j["backward_gemms_s"] = h.backward_gemms.value();
  j["forward_s"] = h.total().value();
  j["backward_s"] = h.backward().value();
  return j;
}

void add_host(std::string& out, const schedule::HostBlocks& h, Seconds forward_gpu, Seconds backward_gpu) {
  if (h.total().value() <= 0 && h.backward_gemms.value() <= 0) return;
  Table t({"block", "us"});
  for (const auto& [name, time] : host_rows(h))
    if (time.value() > 0) t.add({name, fixed(time.value() * 1e6, 1)});
  out += "host: " + fixed(h.total().value() * 1e3, 3) + " ms to issue the forward against " +
         fixed(forward_gpu.value() * 1e3, 3) + " ms of its kernels, " + fixed(h.backward().value() * 1e3, 3) +
         " ms the backward (no preprocess, " + fixed(h.backward_gemms.value() * 1e6, 1) + " us more GEMM calls) against " +
         fixed(backward_gpu.value() * 1e3, 3) +
         " ms (the cluster's host_issue_us; what outlasts the GPU's work, or follows a wait, is the breakdown's host)\n" +
         t.render() + "\n";
}

}  // namespace

std::string kernels_table(const schedule::LayerKernels& k) {
  std::string out = (k.blocks.empty() ? std::string("kernels of one layer on one rank")
                                      : "kernels of one layer of each block kind (" + k.blocks +
                                            ", prefixed to each kernel's name: M Mamba-2, * attention, - MLP, E MoE) on one rank") +
                    " (communication not included; x" + fixed(k.ctx.pace, 3) + " pace applied)\n";
  add_pass(out, "forward", k.forward, k.ctx);
  add_pass(out, "recompute", k.recompute, k.ctx);
  add_pass(out, "backward", k.backward, k.ctx);
  add_host(out, k.host, cost::ops_time(k.forward, k.ctx), cost::ops_time(k.backward, k.ctx));
  out += "kernels once per micro-batch beside the layers: the embedding on the first stage, the final norm, LM head "
         "and cross-entropy on the last\n";
  add_pass(out, "embedding forward", k.embedding_forward, k.ctx);
  add_pass(out, "embedding backward", k.embedding_backward, k.ctx);
  add_pass(out, "head forward", k.head_forward, k.ctx);
  add_pass(out, "head backward", k.head_backward, k.ctx);
  return out;
}

nlohmann::json kernels_json(const schedule::LayerKernels& k) {
  return {{"pace", k.ctx.pace},
          {"forward", pass_json(k.forward, k.ctx)},
          {"recompute", pass_json(k.recompute, k.ctx)},
          {"backward", pass_json(k.backward, k.ctx)},
          {"embedding", {{"forward", pass_json(k.embedding_forward, k.ctx)},
                         {"backward", pass_json(k.embedding_backward, k.ctx)}}},
          {"head", {{"forward", pass_json(k.head_forward, k.ctx)}, {"backward", pass_json(k.head_backward, k.ctx)}}},
          {"host", host_json(k.host)}};
}

}  // namespace dtsim::report
