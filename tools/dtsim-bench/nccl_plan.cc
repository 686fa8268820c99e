#include "nccl_plan.h"

#include <array>
#include <stdexcept>

namespace dtsim::bench {
namespace {

struct CollectiveNames {
  NcclCollective c;
  const char* name;
  const char* binary;
};

constexpr std::array<CollectiveNames, 6> kCollectives{{
    {NcclCollective::all_reduce, "all_reduce", "all_reduce_perf"},
    {NcclCollective::all_gather, "all_gather", "all_gather_perf"},
    {NcclCollective::reduce_scatter, "reduce_scatter", "reduce_scatter_perf"},
    {NcclCollective::all_to_all, "all_to_all", "alltoall_perf"},
    {NcclCollective::broadcast, "broadcast", "broadcast_perf"},
    {NcclCollective::send_recv, "send_recv", "sendrecv_perf"},
}};

const CollectiveNames& names_of(NcclCollective c) { return kCollectives.at(static_cast<std::size_t>(c)); }

}  // namespace

const char* to_string(NcclCollective c) { return names_of(c).name; }

const char* nccl_tests_binary(NcclCollective c) { return names_of(c).binary; }

const char* redop_name(NcclCollective c) {
  // nccl-tests passes the reduction's name for the reductions and for sendrecv_perf (whose loop
  // over operations it shares), and "none" for all_gather, alltoall and broadcast.
  switch (c) {
    case NcclCollective::all_reduce:
    case NcclCollective::reduce_scatter:
    case NcclCollective::send_recv: return "sum";
    default: return "none";
  }
}

int root_of(NcclCollective c) { return c == NcclCollective::broadcast ? 0 : -1; }

std::optional<NcclCollective> parse_collective_name(std::string_view name) {
  for (const CollectiveNames& n : kCollectives)
    if (name == n.name) return n.c;
  return std::nullopt;
}

const std::vector<NcclCollective>& all_collectives() {
  static const std::vector<NcclCollective> all{NcclCollective::all_reduce,     NcclCollective::all_gather,
                                               NcclCollective::reduce_scatter, NcclCollective::all_to_all,
                                               NcclCollective::broadcast,      NcclCollective::send_recv};
  return all;
}

const char* to_string(NcclDtype t) {
  switch (t) {
    case NcclDtype::float32: return "float";
    case NcclDtype::float16: return "half";
    case NcclDtype::bfloat16: return "bfloat16";
  }
  throw std::logic_error("unknown NcclDtype");
}

std::optional<NcclDtype> parse_dtype_name(std::string_view name) {
  for (NcclDtype t : {NcclDtype::float32, NcclDtype::float16, NcclDtype::bfloat16})
    if (name == to_string(t)) return t;
  return std::nullopt;
}

std::size_t type_size(NcclDtype t) { return t == NcclDtype::float32 ? 4 : 2; }

std::vector<std::int64_t> sweep_sizes(std::int64_t min_bytes, std::int64_t max_bytes, std::int64_t step_factor,
                                      std::int64_t step_bytes) {
  if (min_bytes < 1 || (step_factor <= 1 && step_bytes < 1))
    throw std::logic_error("sweep_sizes: the sweep would not advance");
  std::vector<std::int64_t> out;
  for (std::int64_t s = min_bytes; s <= max_bytes; s = step_factor > 1 ? s * step_factor : s + step_bytes)
    out.push_back(s);
  return out;
}

NcclCounts nccl_counts(NcclCollective c, std::int64_t requested_bytes, NcclDtype t, int nranks) {
  if (nranks < 1) throw std::logic_error("nccl_counts: nranks must be >= 1");
  const auto ts = static_cast<std::int64_t>(type_size(t));
  const std::int64_t count = requested_bytes / ts, per_rank = count / nranks, n = nranks;
  NcclCounts k;
  switch (c) {
    case NcclCollective::all_gather:  // each rank contributes count/n; the output is the whole
      k = {.count = per_rank, .send_count = per_rank, .recv_count = per_rank * n, .send_inplace_offset = per_rank};
      break;
    case NcclCollective::reduce_scatter:  // the input is the whole; each rank keeps count/n
      k = {.count = per_rank, .send_count = per_rank * n, .recv_count = per_rank, .recv_inplace_offset = per_rank};
      break;
    case NcclCollective::all_to_all:  // count/n to each peer, from and into whole buffers
      k = {.count = per_rank, .send_count = per_rank * n, .recv_count = per_rank * n};
      break;
    default:  // all_reduce, broadcast, send_recv: one buffer of `count` elements
      k = {.count = count, .send_count = count, .recv_count = count};
  }
  k.size_bytes = std::max(k.send_count, k.recv_count) * ts;
  return k;
}

double bus_factor(NcclCollective c, int nranks) {
  const double n = nranks;
  switch (c) {
    case NcclCollective::all_reduce: return 2 * (n - 1) / n;
    case NcclCollective::all_gather:
    case NcclCollective::reduce_scatter:
    case NcclCollective::all_to_all: return (n - 1) / n;
    case NcclCollective::broadcast:
    case NcclCollective::send_recv: return 1;
  }
  throw std::logic_error("unknown NcclCollective");
}

double algbw_gbps(std::int64_t size_bytes, double time_us) {
  return time_us > 0 ? static_cast<double>(size_bytes) / 1e9 / (time_us * 1e-6) : 0.0;
}

std::vector<NcclSweepPlan> plan_sweeps(const std::vector<NcclCollective>& ops, const std::vector<std::int64_t>& sizes,
                                       NcclDtype t, int nranks) {
  std::vector<NcclSweepPlan> out;
  for (NcclCollective c : ops) {
    NcclSweepPlan p{.collective = c};
    for (std::int64_t s : sizes) p.sizes.push_back(nccl_counts(c, s, t, nranks));
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace dtsim::bench
