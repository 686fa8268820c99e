#pragma once
// A calibration profile: how fast one cluster's hardware runs GEMMs, memory-bound kernels and
// NCCL collectives (the training software is a stack, spec/stack.h). Shipped profiles are
// derived from public numbers (calibration/*.md says how); `dtsim calibrate` fits them from
// measurements.
#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "core/units.h"
#include "spec/gpu.h"

namespace dtsim::spec {

/// GEMM efficiency as a fitted curve: eff(m,n,k) = max * mn/(mn + mn_half) * k/(k + k_half).
/// The first factor is output-tile parallelism (too few tiles leave SMs idle), the second the
/// main-loop depth (short reductions pay the prologue/epilogue). calibration/README.md fits it.
struct GemmCurve {
  double max_efficiency = 0.0;
  double mn_half = 0.0;  ///< output elements m*n at which tile parallelism halves efficiency
  double k_half = 0.0;   ///< reduction depth at which the main loop halves efficiency
  /// The curve at output size m*n = `mn` and reduction depth `k`. The k term is each output
  /// tile's epilogue (its store, not overlapped with the tile's main loop: k_half = the main
  /// loop's depth that takes as long as storing a 16-bit output); `epilogue` scales it for an
  /// output that moves more bytes per element (4: read and write an fp32 accumulator).
  [[nodiscard]] double at(double mn, double k, double epilogue = 1.0) const {
    return max_efficiency * (mn / (mn + mn_half)) * (k / (k + k_half * epilogue));
  }
  bool operator==(const GemmCurve&) const = default;
};

/// The fused attention kernel's efficiency (fraction of the bf16 peak) over its length:
/// An attention kernel's speed at head width `dim` relative to width 128 (the width the curve is
/// measured at), forward and backward: a tile's softmax and bookkeeping do not shrink with the
/// head, so narrow heads run their FLOPs slower (calibration/dgx-h100.md, dgx-b200.md).
struct HeadDimPoint {
  double dim = 128, fwd = 1, bwd = 1;
  bool operator==(const HeadDimPoint&) const = default;
};

/// The multiplier of `points` (increasing widths) at width `dim`: linear between points, flat
/// beyond the ends; 1 without points or without a width (dim <= 0).
[[nodiscard]] inline double head_width_factor(std::span<const HeadDimPoint> points, bool backward, double dim) {
  if (points.empty() || dim <= 0) return 1.0;
  auto value = [&](const HeadDimPoint& p) { return backward ? p.bwd : p.fwd; };
  if (dim <= points.front().dim) return value(points.front());
  for (std::size_t i = 1; i < points.size(); ++i) {
    const HeadDimPoint &a = points[i - 1], &b = points[i];
    if (dim <= b.dim) return value(a) + (value(b) - value(a)) * (dim - a.dim) / (b.dim - a.dim);
  }
  return value(points.back());
}

/// eff(L) = fwd or bwd * L / (L + seq_half), L the causal-equivalent sequence one kernel runs
/// (cuDNN's measured throughput rises with length as the causal diagonal's partial tiles and the
/// per-launch prologue amortize; calibration/dgx-b200.md). seq_half 0: the same at every length.
struct FlashCurve {
  double fwd = 0.0, bwd = 0.0, seq_half = 0.0;
  /// Increasing widths; linear between points, flat beyond the ends; empty: no width effect.
  std::vector<HeadDimPoint> head_dim;
  /// Efficiency of a kernel of `length` causal-equivalent tokens (0: the flat value) whose heads
  /// are `dim` wide (the mean of the query/key and value widths; 0: 128).
  [[nodiscard]] double at(bool backward, double length, double dim = 0) const {
    double e = backward ? bwd : fwd;
    if (seq_half > 0 && length > 0) e *= length / (length + seq_half);
    return e * width_factor(backward, dim);
  }
  [[nodiscard]] double width_factor(bool backward, double dim) const {
    return head_width_factor(head_dim, backward, dim);
  }
  bool operator==(const FlashCurve&) const = default;
};

/// A GPU whose attention kernels run at their own efficiency in a profile shared by several
/// (Blackwell Ultra's doubled exponential throughput, calibration/dgx-b200.md).
struct GpuFlashCurve {
  std::string gpu;  ///< the GPU file's "name" (topologies/gpus/)
  FlashCurve curve;
  bool operator==(const GpuFlashCurve&) const = default;
};

/// A GPU whose GEMMs of one dtype run on their own curve in a profile shared by several (Blackwell
/// Ultra's NVFP4, calibration/dgx-b200.md).
struct GpuGemmCurve {
  std::string gpu;  ///< the GPU file's "name" (topologies/gpus/)
  Dtype dtype = Dtype::bf16;
  GemmCurve curve;
  bool operator==(const GpuGemmCurve&) const = default;
};

/// A ratio for each of a linear layer's three GEMMs: forward, data gradient, weight gradient.
struct PassRatios {
  double fprop = 1, dgrad = 1, wgrad = 1;
  bool operator==(const PassRatios&) const = default;
};

/// Compute-side calibration.
struct ComputeCalibration {
  /// Per dtype (indexed by Dtype); an entry with max_efficiency 0 means "not calibrated".
  std::array<GemmCurve, 6> gemm{};
  std::vector<GpuGemmCurve> gemm_by_gpu;  ///< GPUs whose curve for a dtype differs
  double flash_fwd_efficiency = 0.0;   ///< fraction of peak for the attention core, forward
  double flash_bwd_efficiency = 0.0;   ///< same, backward
  double flash_seq_half = 0.0;         ///< FlashCurve::seq_half of those two (0: flat)
  std::vector<HeadDimPoint> flash_head_dim;  ///< FlashCurve::head_dim of the profile's curve
  std::vector<GpuFlashCurve> flash_by_gpu;  ///< GPUs whose attention curve differs
  /// FlashAttention-2's speed as a fraction of the flash curve's, forward and backward (the
  /// --attention flash2 kernels); 0 when the profile has no measurement of it.
  double flash2_fwd_ratio = 0.0;
  double flash2_bwd_ratio = 0.0;
  /// MXFP8 (block-scaled) GEMM time over a per-tensor-scaled fp8 GEMM's at the same shape, by pass
  /// (forward, data gradient, weight gradient): the E8M0 scales the kernel loads beside its operands.
  /// The fp8 curves are per-tensor; 1 when the profile has no measurement of the two side by side.
  PassRatios mxfp8_gemm_time;
  double memory_efficiency = 0.0;      ///< achieved / peak HBM bandwidth for element-wise kernels
  Seconds kernel_overhead;             ///< fixed cost per kernel (launch, tail)
  double overlap_slowdown = 0.0;       ///< compute slowdown while NCCL kernels share the SMs (0.1 = 10%)
  double speed_spread = 0.0;           ///< relative std dev of kernel speed across the cluster's GPUs
  [[nodiscard]] const GemmCurve& curve(Dtype d) const { return gemm[static_cast<std::size_t>(d)]; }
  /// The curve of dtype `d` on GPU `gpu` (by name): its own entry, else the profile's.
  [[nodiscard]] const GemmCurve& curve(Dtype d, std::string_view gpu) const {
    for (const GpuGemmCurve& g : gemm_by_gpu)
      if (g.dtype == d && g.gpu == gpu) return g.curve;
    return curve(d);
  }
  /// The attention curve of GPU `gpu` (by name): its own entry, else the profile's.
  [[nodiscard]] FlashCurve flash(std::string_view gpu) const {
    for (const GpuFlashCurve& g : flash_by_gpu)
      if (g.gpu == gpu) {
        FlashCurve c = g.curve;
        if (c.head_dim.empty()) c.head_dim = flash_head_dim;  // the profile's, unless its own
        return c;
      }
    return {flash_fwd_efficiency, flash_bwd_efficiency, flash_seq_half, flash_head_dim};
  }
  /// flash(gpu).at(backward, length, dim) without copying the curve (the cost model's hot path).
  [[nodiscard]] double flash_efficiency(std::string_view gpu, bool backward, double length, double dim) const {
    for (const GpuFlashCurve& g : flash_by_gpu)
      if (g.gpu == gpu) {
        const FlashCurve& c = g.curve;
        double e = (backward ? c.bwd : c.fwd);
        if (c.seq_half > 0 && length > 0) e *= length / (length + c.seq_half);
        return e * head_width_factor(c.head_dim.empty() ? flash_head_dim : c.head_dim, backward, dim);
      }
    double e = backward ? flash_bwd_efficiency : flash_fwd_efficiency;
    if (flash_seq_half > 0 && length > 0) e *= length / (length + flash_seq_half);
    return e * head_width_factor(flash_head_dim, backward, dim);
  }
  bool operator==(const ComputeCalibration&) const = default;
};

/// The collectives dtsim prices, named as nccl-tests names its binaries (all_reduce_perf, ...).
enum class Collective { all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv };
/// Every Collective, in declaration order.
inline constexpr std::array<Collective, 6> kCollectives = {Collective::all_reduce, Collective::all_gather,
                                                           Collective::reduce_scatter, Collective::all_to_all,
                                                           Collective::broadcast, Collective::send_recv};

/// NCCL protocols (src/device/prims_*.h): LL (8-byte flag+data), LL128 (128-byte lines), Simple.
enum class Protocol { ll, ll128, simple };
/// Collective algorithms (NCCL_ALGO): ring, double binary tree, NVLink SHARP in-switch reduction.
enum class CollAlgo { ring, tree, nvls };

/// One (algorithm, protocol) on one link class, in NCCL's tuner form (src/graph/tuning.cc):
/// time = base_latency + steps * step_latency + bus bytes / (link bandwidth * efficiency).
struct ProtocolCost {
  bool available = false;
  Seconds base_latency;          ///< per call
  Seconds step_latency;          ///< per algorithm step (ring step, tree hop)
  double bandwidth_efficiency = 0.0;  ///< achieved bus bandwidth / link bandwidth, large messages
  bool operator==(const ProtocolCost&) const = default;
};

/// Index [algorithm][protocol].
using AlgoTable = std::array<std::array<ProtocolCost, 3>, 3>;

/// Collective calibration for the two link classes. NCCL's tuner keeps its latency and
/// bandwidth tables per collective function (src/graph/tuning.cc: comm->latencies[coll][a][p]);
/// a profile has one shared table per link class and, where a collective was measured on its
/// own (`dtsim calibrate --nccl-tests`), that collective's entries, which take precedence.
struct CollectiveCalibration {
  AlgoTable intra{};   ///< inside a node (NVLink/NVSwitch or PCIe)
  AlgoTable inter{};   ///< across nodes (NIC + fat tree)
  /// [collective][0 = intra, 1 = inter]: an available entry overrides the shared one.
  std::array<std::array<AlgoTable, 2>, kCollectives.size()> by_collective{};
  /// The shared entry of a link class.
  [[nodiscard]] const ProtocolCost& at(bool inter_node, CollAlgo a, Protocol p) const {
    return (inter_node ? inter : intra)[static_cast<std::size_t>(a)][static_cast<std::size_t>(p)];
  }
  /// The entry `op` uses: its own when the profile has one, else the shared one.
  [[nodiscard]] const ProtocolCost& at(Collective op, bool inter_node, CollAlgo a, Protocol p) const {
    const ProtocolCost& own = by_collective[static_cast<std::size_t>(op)][inter_node ? 1 : 0]
                                           [static_cast<std::size_t>(a)][static_cast<std::size_t>(p)];
    return own.available ? own : at(inter_node, a, p);
  }
  bool operator==(const CollectiveCalibration&) const = default;
};

/// A whole profile.
struct Calibration {
  std::string name;
  ComputeCalibration compute;
  CollectiveCalibration collectives;
  bool operator==(const Calibration&) const = default;
};

[[nodiscard]] const char* to_string(Collective op);
/// Inverse of to_string(Collective); nullopt for an unknown name.
[[nodiscard]] std::optional<Collective> parse_collective(std::string_view name);
[[nodiscard]] const char* to_string(Protocol p);
[[nodiscard]] const char* to_string(CollAlgo a);

/// Parses a calibration profile (calibration/*.json format, see calibration/README.md).
[[nodiscard]] Calibration parse_calibration(const std::string& text, const std::string& file);
/// Loads calibration/NAME.json or a file.
[[nodiscard]] Calibration load_calibration(const std::string& name_or_path,
                                           const std::string& flag = "--calibration");

/// Fields measured or fitted on a cluster, to write into a profile. Unset fields keep the base's.
struct ProfilePatch {
  std::vector<std::pair<Dtype, GemmCurve>> gemm;  ///< curves replacing (or adding) these dtypes
  std::optional<double> memory_efficiency;
  std::optional<double> flash_fwd_efficiency, flash_bwd_efficiency;
  /// Per-GPU attention and GEMM curves replacing the base's entries of the same GPUs (notes kept).
  std::vector<GpuFlashCurve> flash_by_gpu;
  std::vector<GpuGemmCurve> gemm_by_gpu;
  std::optional<double> kernel_overhead_us, overlap_slowdown;
  /// Tables written under collectives.by_collective.<op>.<intra_node|inter_node>, replacing
  /// what the base has there: (collective, inter_node, table; unavailable entries are left out).
  std::vector<std::tuple<Collective, bool, AlgoTable>> collective_tables;
  /// The command that fitted the fields; written as "calibrated_by" (replacing an earlier one).
  std::string calibrated_by;
  /// Where the new profile is explained, written as "derivation"; empty keeps the base's.
  std::string derivation;
};

/// `c` with `patch`'s fields written in (what the printed profile will hold).
[[nodiscard]] Calibration apply_patch(Calibration c, const ProfilePatch& patch);
/// The fields in which `now` differs from `base`, as a patch of `base` (collective tables whole).
[[nodiscard]] ProfilePatch profile_patch(const Calibration& base, const Calibration& now);

/// The profile `name_or_path` (validated as load_calibration does) as JSON text with `patch`
/// applied and renamed `name`; every other field kept as written. The result parses as a profile.
[[nodiscard]] std::string patched_profile_text(const std::string& name_or_path, const ProfilePatch& patch,
                                               const std::string& name, const std::string& flag = "--profile");

}  // namespace dtsim::spec
