#include "spec/calibration.h"

#include <cstdio>
#include <cstdlib>

#include "core/errors.h"
#include "spec/json_reader.h"
#include "spec/load.h"

namespace dtsim::spec {
namespace {

constexpr const char* kDtypes[] = {"fp32", "tf32", "fp16", "bf16", "fp8", "fp4"};
constexpr const char* kAlgos[] = {"ring", "tree", "nvls"};
constexpr const char* kProtocols[] = {"LL", "LL128", "Simple"};

double fraction(ObjectReader& r, const std::string& key) {
  double v = r.positive(key);
  if (v > 1.0) r.fail(key, "expected a fraction in (0, 1], got " + describe(nlohmann::json(v)));
  return v;
}

GemmCurve read_curve_fields(ObjectReader& r) {
  GemmCurve c;
  c.max_efficiency = fraction(r, "max_efficiency");
  c.mn_half = r.positive("mn_half", true);
  c.k_half = r.positive("k_half", true);
  return c;
}

GemmCurve read_curve(ObjectReader r) {
  GemmCurve c = read_curve_fields(r);
  r.finish();
  return c;
}

// The objects of array `key`, each read by read(entry, the entries before it); "notes" allowed.
template <class T, class Read>
std::vector<T> read_entries(ObjectReader& r, const std::string& key, Read read) {
  const nlohmann::json& arr = r.array(key);
  std::vector<T> out;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    ObjectReader e(arr[i], r.file(), r.pointer(key) + "/" + std::to_string(i));
    T entry = read(e, out);
    e.skip("notes");
    e.finish();
    out.push_back(std::move(entry));
  }
  return out;
}

// "flash_head_dim": [[WIDTH, FWD, BWD], ...]: widths increasing, multipliers relative to width
// 128, which must be [128, 1, 1] (the curves are measured there).
std::vector<HeadDimPoint> read_head_dim(ObjectReader& r) {
  std::vector<HeadDimPoint> out;
  if (!r.has("flash_head_dim")) {
    r.skip("flash_head_dim");
    return out;
  }
  const nlohmann::json& arr = r.array("flash_head_dim");
  std::string where = r.pointer("flash_head_dim");
  bool has_128 = false;
  for (std::size_t i = 0; i < arr.size(); ++i) {
    const nlohmann::json& p = arr[i];
    std::string at = where + "/" + std::to_string(i);
    bool ok = p.is_array() && p.size() == 3;
    for (std::size_t k = 0; ok && k < 3; ++k) ok = p[k].is_number() && p[k].get<double>() > 0 && std::isfinite(p[k].get<double>());
    if (!ok) throw SpecError(r.file() + ":" + at, "expected [width, forward, backward], three positive numbers, got " + describe(p));
    HeadDimPoint h{p[0].get<double>(), p[1].get<double>(), p[2].get<double>()};
    if (!out.empty() && h.dim <= out.back().dim)
      throw SpecError(r.file() + ":" + at + "/0", "expected widths in increasing order, got " + describe(p[0]) +
                                                      " after " + describe(arr[i - 1][0]));
    if (h.dim == 128) {
      if (h.fwd != 1 || h.bwd != 1)
        throw SpecError(r.file() + ":" + at, "expected [128, 1, 1] (multipliers are relative to width 128), got " +
                                                 describe(p));
      has_128 = true;
    }
    out.push_back(h);
  }
  if (!has_128) throw SpecError(r.file() + ":" + where, "expected a point [128, 1, 1] among the widths, got none");
  return out;
}

// "flash_by_gpu": [{"gpu": NAME, "flash_fwd_efficiency": F, "flash_bwd_efficiency": B,
// "flash_seq_half": L, "flash_head_dim": [...]}, ...], one entry per GPU name.
GpuFlashCurve read_flash_entry(ObjectReader& e, const std::vector<GpuFlashCurve>& seen) {
  GpuFlashCurve g;
  g.gpu = e.string("gpu");
  for (const GpuFlashCurve& s : seen)
    if (s.gpu == g.gpu) e.fail("gpu", "expected one entry per GPU, got \"" + g.gpu + "\" again");
  g.curve.fwd = fraction(e, "flash_fwd_efficiency");
  g.curve.bwd = fraction(e, "flash_bwd_efficiency");
  g.curve.seq_half = e.optional_positive("flash_seq_half", true).value_or(0.0);
  g.curve.head_dim = read_head_dim(e);
  return g;
}

// "gemm_by_gpu": [{"gpu": NAME, "dtype": D, "max_efficiency": E, "mn_half": M, "k_half": K}, ...],
// one entry per GPU and dtype.
GpuGemmCurve read_gemm_entry(ObjectReader& e, const std::vector<GpuGemmCurve>& seen) {
  GpuGemmCurve g;
  g.gpu = e.string("gpu");
  g.dtype = static_cast<Dtype>(e.choice("dtype", {"fp32", "tf32", "fp16", "bf16", "fp8", "fp4"}));
  for (const GpuGemmCurve& s : seen)
    if (s.gpu == g.gpu && s.dtype == g.dtype)
      e.fail("dtype", "expected one entry per GPU and dtype, got \"" + g.gpu + "\" " +
                          kDtypes[static_cast<std::size_t>(g.dtype)] + " again");
  g.curve = read_curve_fields(e);
  return g;
}

ComputeCalibration read_compute(ObjectReader r) {
  ComputeCalibration c;
  ObjectReader g = r.object("gemm");
  for (std::size_t i = 0; i < std::size(kDtypes); ++i) {
    if (g.has(kDtypes[i])) c.gemm[i] = read_curve(g.object(kDtypes[i]));
    else g.skip(kDtypes[i]);
  }
  g.finish();
  if (r.has("gemm_by_gpu")) c.gemm_by_gpu = read_entries<GpuGemmCurve>(r, "gemm_by_gpu", read_gemm_entry);
  else r.skip("gemm_by_gpu");
  c.flash_fwd_efficiency = fraction(r, "flash_fwd_efficiency");
  c.flash_bwd_efficiency = fraction(r, "flash_bwd_efficiency");
  c.flash_seq_half = r.optional_positive("flash_seq_half", true).value_or(0.0);
  c.flash_head_dim = read_head_dim(r);
  if (r.has("flash_by_gpu")) c.flash_by_gpu = read_entries<GpuFlashCurve>(r, "flash_by_gpu", read_flash_entry);
  else r.skip("flash_by_gpu");
  if (r.has("flash2_ratio")) {  // {"fwd": F, "bwd": B}: FlashAttention-2 against the flash curve
    ObjectReader f = r.object("flash2_ratio");
    c.flash2_fwd_ratio = fraction(f, "fwd");
    c.flash2_bwd_ratio = fraction(f, "bwd");
    f.finish();
  } else {
    r.skip("flash2_ratio");
  }
  if (r.has("mxfp8_gemm_time")) {  // {"fprop": F, "dgrad": D, "wgrad": W}: MXFP8 over per-tensor fp8
    ObjectReader f = r.object("mxfp8_gemm_time");
    c.mxfp8_gemm_time = {f.positive("fprop"), f.positive("dgrad"), f.positive("wgrad")};
    f.skip("notes");
    f.finish();
  } else {
    r.skip("mxfp8_gemm_time");
  }
  c.memory_efficiency = fraction(r, "memory_efficiency");
  c.kernel_overhead = us(r.positive("kernel_overhead_us", true));
  c.overlap_slowdown = r.positive("overlap_slowdown", true);
  c.speed_spread = r.positive("speed_spread", true);
  if (c.speed_spread > 0.5)
    r.fail("speed_spread", "expected a relative standard deviation in [0, 0.5], got " +
                               describe(nlohmann::json(c.speed_spread)));
  r.skip("notes");
  r.finish();
  return c;
}

ProtocolCost read_protocol(ObjectReader r) {
  ProtocolCost p;
  p.available = true;
  p.base_latency = us(r.positive("base_latency_us", true));
  p.step_latency = us(r.positive("step_latency_us", true));
  p.bandwidth_efficiency = r.positive("bandwidth_efficiency");
  r.finish();
  return p;
}

// {"ring": {"LL": {...}, "LL128": {...}, "Simple": {...}}, "tree": {...}, "nvls": {...}}
AlgoTable read_algos(ObjectReader r) {
  AlgoTable t{};
  for (std::size_t a = 0; a < 3; ++a) {
    if (!r.has(kAlgos[a])) { r.skip(kAlgos[a]); continue; }
    ObjectReader ar = r.object(kAlgos[a]);
    for (std::size_t p = 0; p < 3; ++p) {
      if (ar.has(kProtocols[p])) t[a][p] = read_protocol(ar.object(kProtocols[p]));
      else ar.skip(kProtocols[p]);
    }
    ar.finish();
  }
  r.finish();
  return t;
}

// {"all_reduce": {"intra_node": {...}, "inter_node": {...}}, ...}: each table as read_algos.
void read_by_collective(ObjectReader r, CollectiveCalibration& c) {
  for (Collective op : kCollectives) {
    const char* name = to_string(op);
    if (!r.has(name)) { r.skip(name); continue; }
    ObjectReader o = r.object(name);
    const char* scopes[] = {"intra_node", "inter_node"};
    for (std::size_t s = 0; s < 2; ++s) {
      if (o.has(scopes[s])) c.by_collective[static_cast<std::size_t>(op)][s] = read_algos(o.object(scopes[s]));
      else o.skip(scopes[s]);
    }
    o.finish();
  }
  r.finish();
}

// `v` to 9 significant digits: undoes the noise of unit conversions (13.6 us stored as seconds
// comes back as 13.600000000000001) so profiles print the numbers that were fitted.
double tidy(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return std::strtod(buf, nullptr);
}

// A table as the profile writes it (the inverse of read_algos), available entries only.
nlohmann::ordered_json table_json(const AlgoTable& t) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (std::size_t a = 0; a < 3; ++a)
    for (std::size_t p = 0; p < 3; ++p) {
      const ProtocolCost& e = t[a][p];
      if (!e.available) continue;
      out[kAlgos[a]][kProtocols[p]] = {{"base_latency_us", tidy(to_us(e.base_latency))},
                                       {"step_latency_us", tidy(to_us(e.step_latency))},
                                       {"bandwidth_efficiency", tidy(e.bandwidth_efficiency)}};
    }
  return out;
}

}  // namespace

const char* to_string(Collective op) {
  switch (op) {
    case Collective::all_reduce: return "all_reduce";
    case Collective::all_gather: return "all_gather";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::all_to_all: return "all_to_all";
    case Collective::broadcast: return "broadcast";
    case Collective::send_recv: return "send_recv";
  }
  return "?";
}

std::optional<Collective> parse_collective(std::string_view name) {
  for (Collective op : kCollectives)
    if (name == to_string(op)) return op;
  return std::nullopt;
}

const char* to_string(Protocol p) { return kProtocols[static_cast<std::size_t>(p)]; }
const char* to_string(CollAlgo a) { return kAlgos[static_cast<std::size_t>(a)]; }

Calibration parse_calibration(const std::string& text, const std::string& file) {
  nlohmann::json j = parse_json_text(text, file);
  ObjectReader r(j, file, "");
  Calibration c;
  c.name = r.string("name");
  if (r.has("software"))
    r.fail("software", "expected no software section (a profile describes hardware; the training stack is "
                       "--framework, calibration/stacks/), got one");
  c.compute = read_compute(r.object("compute"));
  ObjectReader coll = r.object("collectives");
  c.collectives.intra = read_algos(coll.object("intra_node"));
  c.collectives.inter = read_algos(coll.object("inter_node"));
  if (coll.has("by_collective")) read_by_collective(coll.object("by_collective"), c.collectives);
  else coll.skip("by_collective");
  coll.skip("notes");
  coll.finish();
  r.skip("derivation");
  r.skip("calibrated_by");
  r.skip("sources");
  r.finish();
  return c;
}

Calibration load_calibration(const std::string& name_or_path, const std::string& flag) {
  return load_spec("calibration", name_or_path, flag, parse_calibration);
}

std::string patched_profile_text(const std::string& name_or_path, const ProfilePatch& patch, const std::string& name,
                                 const std::string& flag) {
  std::string path = resolve_preset("calibration", name_or_path, flag);
  std::string text = read_spec_text(path);
  (void)parse_calibration(text, path);  // the base must be a valid profile
  // Keep the base's key order (ordered_json) so the result reads like the profile it came from.
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(text);
  j["name"] = name;
  if (!patch.calibrated_by.empty()) j["calibrated_by"] = patch.calibrated_by;
  if (!patch.derivation.empty()) j["derivation"] = patch.derivation;
  for (const auto& [dtype, curve] : patch.gemm)
    j["compute"]["gemm"][to_string(dtype)] = {
        {"max_efficiency", curve.max_efficiency}, {"mn_half", curve.mn_half}, {"k_half", curve.k_half}};
  auto set = [&](const char* key, const std::optional<double>& v) {
    if (v) j["compute"][key] = *v;
  };
  set("memory_efficiency", patch.memory_efficiency);
  set("flash_fwd_efficiency", patch.flash_fwd_efficiency);
  set("flash_bwd_efficiency", patch.flash_bwd_efficiency);
  set("kernel_overhead_us", patch.kernel_overhead_us);
  set("overlap_slowdown", patch.overlap_slowdown);
  for (const GpuFlashCurve& g : patch.flash_by_gpu)
    for (auto& e : j["compute"]["flash_by_gpu"])
      if (e.at("gpu") == g.gpu) {
        e["flash_fwd_efficiency"] = tidy(g.curve.fwd);
        e["flash_bwd_efficiency"] = tidy(g.curve.bwd);
      }
  for (const GpuGemmCurve& g : patch.gemm_by_gpu)
    for (auto& e : j["compute"]["gemm_by_gpu"])
      if (e.at("gpu") == g.gpu && e.at("dtype") == to_string(g.dtype)) e["max_efficiency"] = tidy(g.curve.max_efficiency);
  for (const auto& [op, inter, table] : patch.collective_tables)
    j["collectives"]["by_collective"][to_string(op)][inter ? "inter_node" : "intra_node"] = table_json(table);
  std::string out = spec::json_text(j) + "\n";
  (void)parse_calibration(out, name + " (patched " + path + ")");
  return out;
}

Calibration apply_patch(Calibration c, const ProfilePatch& patch) {
  for (const auto& [dtype, curve] : patch.gemm) c.compute.gemm[static_cast<std::size_t>(dtype)] = curve;
  auto set = [](double& field, const std::optional<double>& v) {
    if (v) field = *v;
  };
  set(c.compute.memory_efficiency, patch.memory_efficiency);
  set(c.compute.flash_fwd_efficiency, patch.flash_fwd_efficiency);
  set(c.compute.flash_bwd_efficiency, patch.flash_bwd_efficiency);
  set(c.compute.overlap_slowdown, patch.overlap_slowdown);
  if (patch.kernel_overhead_us) c.compute.kernel_overhead = us(*patch.kernel_overhead_us);
  for (const GpuFlashCurve& g : patch.flash_by_gpu)
    for (GpuFlashCurve& e : c.compute.flash_by_gpu)
      if (e.gpu == g.gpu) e.curve = g.curve;
  for (const GpuGemmCurve& g : patch.gemm_by_gpu)
    for (GpuGemmCurve& e : c.compute.gemm_by_gpu)
      if (e.gpu == g.gpu && e.dtype == g.dtype) e.curve = g.curve;
  for (const auto& [op, inter, table] : patch.collective_tables)
    c.collectives.by_collective[static_cast<std::size_t>(op)][inter ? 1 : 0] = table;
  return c;
}

ProfilePatch profile_patch(const Calibration& base, const Calibration& now) {
  ProfilePatch p;
  const ComputeCalibration &b = base.compute, &n = now.compute;
  for (std::size_t i = 0; i < n.gemm.size(); ++i)
    if (n.gemm[i] != b.gemm[i]) p.gemm.emplace_back(static_cast<Dtype>(i), n.gemm[i]);
  auto diff = [](double was, double is) { return was != is ? std::optional<double>(is) : std::nullopt; };
  p.memory_efficiency = diff(b.memory_efficiency, n.memory_efficiency);
  p.flash_fwd_efficiency = diff(b.flash_fwd_efficiency, n.flash_fwd_efficiency);
  p.flash_bwd_efficiency = diff(b.flash_bwd_efficiency, n.flash_bwd_efficiency);
  p.overlap_slowdown = diff(b.overlap_slowdown, n.overlap_slowdown);
  if (n.kernel_overhead != b.kernel_overhead) p.kernel_overhead_us = tidy(to_us(n.kernel_overhead));
  for (const GpuFlashCurve& g : n.flash_by_gpu)
    if (b.flash(g.gpu) != n.flash(g.gpu)) p.flash_by_gpu.push_back(g);  // as each resolves (head widths filled)
  for (const GpuGemmCurve& g : n.gemm_by_gpu)
    if (b.curve(g.dtype, g.gpu) != g.curve) p.gemm_by_gpu.push_back(g);
  for (Collective op : kCollectives)
    for (bool inter : {false, true}) {
      const AlgoTable& t = now.collectives.by_collective[static_cast<std::size_t>(op)][inter ? 1 : 0];
      if (t != base.collectives.by_collective[static_cast<std::size_t>(op)][inter ? 1 : 0])
        p.collective_tables.emplace_back(op, inter, t);
    }
  return p;
}

}  // namespace dtsim::spec
