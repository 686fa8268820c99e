#include "nccl_bench.h"

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <vector>

#include <cudaTypedefs.h>

#include "device.h"
#include "nccl_check.h"
#include "nccl_session.h"

namespace dtsim::bench {
namespace {

// cuMemsetD32Async / cuMemsetD16Async, looked up through the runtime so dtsim-bench does not link
// libcuda: the binary then starts (and --dry-run and flag errors work) on machines with no driver.
struct DriverMemset {
  PFN_cuMemsetD32Async_v3020 d32 = nullptr;
  PFN_cuMemsetD16Async_v3020 d16 = nullptr;
};

template <class Fn>
Fn driver_entry(const char* symbol) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  check(cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &found), symbol);
  if (found != cudaDriverEntryPointSuccess || fn == nullptr) throw CudaError(std::string(symbol) + ": not found");
  return reinterpret_cast<Fn>(fn);
}

DriverMemset load_driver_memset() {
  return {driver_entry<PFN_cuMemsetD32Async_v3020>("cuMemsetD32Async"),
          driver_entry<PFN_cuMemsetD16Async_v3020>("cuMemsetD16Async")};
}

ncclDataType_t nccl_type(NcclDtype t) {
  switch (t) {
    case NcclDtype::float32: return ncclFloat;
    case NcclDtype::float16: return ncclHalf;
    case NcclDtype::bfloat16: return ncclBfloat16;
  }
  throw std::logic_error("unknown NcclDtype");
}

// A sweep's buffers on one local rank: each as large as the sweep's largest send or receive.
struct RankBuffers {
  DeviceBuffer send, recv;
};

// Everything one sweep needs, shared by its helpers.
struct Sweep {
  NcclSession& s;
  const NcclOptions& o;
  NcclCollective c;
  DriverMemset memset;
  std::vector<std::unique_ptr<RankBuffers>> bufs;  // per local rank
};

std::size_t ts(const Sweep& w) { return type_size(w.o.dtype); }

char* at(const DeviceBuffer& b, std::int64_t elements, std::size_t ts) {
  return static_cast<char*>(b.get()) + static_cast<std::size_t>(elements) * ts;
}

// nccl-tests' alltoall: a group of sends and receives, `n` elements to and from each peer.
void all_to_all(const char* in, char* out, std::size_t n, std::size_t t, ncclDataType_t type, const LocalRank& l,
                int nranks) {
  check(ncclGroupStart(), "ncclGroupStart");
  for (int r = 0; r < nranks; ++r) {
    check(ncclSend(in + static_cast<std::size_t>(r) * n * t, n, type, r, l.comm, l.stream), "ncclSend");
    check(ncclRecv(out + static_cast<std::size_t>(r) * n * t, n, type, r, l.comm, l.stream), "ncclRecv");
  }
  check(ncclGroupEnd(), "ncclGroupEnd");
}

// sendrecv_perf's ring: to rank + 1, from rank - 1.
void ring_send_recv(const char* in, char* out, std::size_t n, ncclDataType_t type, const LocalRank& l, int nranks) {
  check(ncclGroupStart(), "ncclGroupStart");
  check(ncclSend(in, n, type, (l.rank + 1) % nranks, l.comm, l.stream), "ncclSend");
  check(ncclRecv(out, n, type, (l.rank - 1 + nranks) % nranks, l.comm, l.stream), "ncclRecv");
  check(ncclGroupEnd(), "ncclGroupEnd");
}

// Local rank i's call: inputs and outputs at nccl-tests' in-place offsets when in place.
void launch_one(const Sweep& w, const NcclCounts& k, bool in_place, std::size_t i) {
  const LocalRank& l = w.s.local[i];
  const RankBuffers& b = *w.bufs[i];
  const std::size_t t = ts(w), n = static_cast<std::size_t>(k.count);
  const char* in = in_place ? at(b.recv, k.send_inplace_offset * l.rank, t) : at(b.send, 0, t);
  char* out = in_place ? at(b.recv, k.recv_inplace_offset * l.rank, t) : at(b.recv, 0, t);
  const ncclDataType_t type = nccl_type(w.o.dtype);
  switch (w.c) {
    case NcclCollective::all_reduce:
      return check(ncclAllReduce(in, out, n, type, ncclSum, l.comm, l.stream), "ncclAllReduce");
    case NcclCollective::all_gather: return check(ncclAllGather(in, out, n, type, l.comm, l.stream), "ncclAllGather");
    case NcclCollective::reduce_scatter:
      return check(ncclReduceScatter(in, out, n, type, ncclSum, l.comm, l.stream), "ncclReduceScatter");
    case NcclCollective::broadcast:
      return check(ncclBroadcast(in, out, n, type, root_of(w.c), l.comm, l.stream), "ncclBroadcast");
    case NcclCollective::all_to_all: return all_to_all(in, out, n, t, type, l, w.s.nranks);
    case NcclCollective::send_recv: return ring_send_recv(in, out, n, type, l, w.s.nranks);
  }
}

// One iteration on every local rank; grouped when this process drives several (nccl-tests -g).
void launch_all(const Sweep& w, const NcclCounts& k, bool in_place) {
  if (k.count == 0) return;  // nothing to move: the row times an empty loop
  const bool group = w.s.local.size() > 1;
  if (group) check(ncclGroupStart(), "ncclGroupStart");
  for (std::size_t i = 0; i < w.s.local.size(); ++i) launch_one(w, k, in_place, i);
  if (group) check(ncclGroupEnd(), "ncclGroupEnd");
}

// The slowest rank's mean microseconds per iteration over `iters` iterations.
double time_loop(const Sweep& w, const NcclCounts& k, bool in_place) {
  launch_all(w, k, in_place);  // one untimed call, as nccl-tests
  sync_streams(w.s.local);
  w.s.exchange->barrier();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < w.o.iters; ++i) launch_all(w, k, in_place);
  sync_streams(w.s.local);
  const std::chrono::duration<double, std::micro> dt = std::chrono::steady_clock::now() - t0;
  return w.s.exchange->max(dt.count() / w.o.iters);
}

void fill(const Sweep& w, std::size_t i, const NcclSegment& seg) {
  const LocalRank& l = w.s.local[i];
  const char* p = at(seg.recv_buffer ? w.bufs[i]->recv : w.bufs[i]->send, seg.offset, ts(w));
  auto dst = reinterpret_cast<CUdeviceptr>(p);
  const std::uint32_t bits = value_bits(w.o.dtype, seg.value);
  const auto n = static_cast<std::size_t>(seg.count);
  CUresult r = ts(w) == 4 ? w.memset.d32(dst, bits, n, l.stream)
                          : w.memset.d16(dst, static_cast<unsigned short>(bits), n, l.stream);
  if (r != CUDA_SUCCESS) throw CudaError("cuMemsetD" + std::to_string(ts(w) * 8) + "Async failed");
}

std::int64_t count_wrong(const Sweep& w, std::size_t i, const NcclCheckPlan& p) {
  std::int64_t end = 0;
  for (const NcclSegment& e : p.expect) end = std::max(end, e.offset + e.count);
  std::vector<unsigned char> host(static_cast<std::size_t>(end) * ts(w));
  check(cudaSetDevice(w.s.local[i].device), "cudaSetDevice");  // the rank's stream has finished (check_run)
  check(cudaMemcpy(host.data(), w.bufs[i]->recv.get(), host.size(), cudaMemcpyDeviceToHost), "cudaMemcpy");
  std::int64_t wrong = 0;
  for (const NcclSegment& e : p.expect)
    wrong += count_mismatches(host.data() + static_cast<std::size_t>(e.offset) * ts(w), e.count, ts(w),
                              value_bits(w.o.dtype, e.value));
  return wrong;
}

// One run on known inputs, after the timed loop; wrong elements summed over every rank.
std::optional<std::int64_t> check_run(const Sweep& w, const NcclCounts& k, bool in_place) {
  if (!w.o.check) return std::nullopt;
  std::vector<NcclCheckPlan> plans;
  for (std::size_t i = 0; i < w.s.local.size(); ++i) {
    plans.push_back(check_plan(w.c, k, in_place, w.s.local[i].rank, w.s.nranks, w.o.dtype));
    if (!plans.back().checked) return std::nullopt;
    check(cudaSetDevice(w.s.local[i].device), "cudaSetDevice");
    for (const NcclSegment& seg : plans.back().fills) fill(w, i, seg);
  }
  launch_all(w, k, in_place);
  sync_streams(w.s.local);
  std::int64_t wrong = 0;
  for (std::size_t i = 0; i < w.s.local.size(); ++i) wrong += count_wrong(w, i, plans[i]);
  return w.s.exchange->sum(wrong);
}

void allocate(Sweep& w, const std::vector<NcclCounts>& sizes) {
  std::int64_t most = 1;
  for (const NcclCounts& k : sizes) most = std::max({most, k.send_count, k.recv_count});
  const std::size_t bytes = static_cast<std::size_t>(most) * ts(w);
  for (const LocalRank& l : w.s.local) {  // zeroed on the rank's stream, which runs everything else
    check(cudaSetDevice(l.device), "cudaSetDevice");
    w.bufs.emplace_back(new RankBuffers{DeviceBuffer(bytes), DeviceBuffer(bytes)});  // built in place: not movable
    check(cudaMemsetAsync(w.bufs.back()->send.get(), 0, bytes, l.stream), "cudaMemsetAsync");
    check(cudaMemsetAsync(w.bufs.back()->recv.get(), 0, bytes, l.stream), "cudaMemsetAsync");
  }
}

NcclSweepResult run_sweep(NcclSession& s, const NcclOptions& o, NcclCollective c, const DriverMemset& m) {
  std::vector<std::int64_t> sizes = sweep_sizes(o.min_bytes, o.max_bytes, o.step_factor, o.step_bytes);
  NcclSweepPlan plan = plan_sweeps({c}, sizes, o.dtype, s.nranks).front();
  Sweep w{s, o, c, m, {}};
  allocate(w, plan.sizes);
  for (const NcclCounts* k : {&plan.sizes.back(), &plan.sizes.front()}) {  // warm up: largest, then smallest
    for (int i = 0; i < o.warmup_iters; ++i) launch_all(w, *k, false);
    sync_streams(s.local);
  }
  NcclSweepResult out{.collective = c};
  for (const NcclCounts& k : plan.sizes) {
    NcclRow row{.counts = k};
    double t = time_loop(w, k, false);
    row.out_of_place = make_cell(c, k, s.nranks, t, check_run(w, k, false));
    t = time_loop(w, k, true);
    row.in_place = make_cell(c, k, s.nranks, t, check_run(w, k, true));
    out.rows.push_back(row);
  }
  return out;
}

std::unique_ptr<NcclSession> open_session(const NcclOptions& o) {
  switch (o.launcher) {
    case NcclLauncher::single_process: return open_single_process(o);
    case NcclLauncher::mpi: return open_mpi(o);
    case NcclLauncher::file: return open_file(o);
  }
  throw std::logic_error("unknown NcclLauncher");
}

NcclRun measure(NcclSession& s, const NcclOptions& o) {
  NcclRun run{.options = o, .nccl_header_code = NCCL_VERSION_CODE, .nranks = s.nranks,
              .gpus_per_process = static_cast<int>(s.local.size()), .ranks = s.ranks};
  check(ncclGetVersion(&run.nccl_library_code), "ncclGetVersion");
  const DriverMemset m = o.check ? load_driver_memset() : DriverMemset{};
  for (NcclCollective c : o.ops) run.sweeps.push_back(run_sweep(s, o, c, m));
  return run;
}

bool any_wrong(const NcclRun& run) {
  for (const NcclSweepResult& s : run.sweeps)
    for (const NcclRow& r : s.rows)
      if (r.out_of_place.wrong.value_or(0) > 0 || r.in_place.wrong.value_or(0) > 0) return true;
  return false;
}

// Rank 0 prints; its process is the one holding rank 0, and device_info() describes its GPU.
void print(const NcclSession& s, const NcclRun& run) {
  if (s.local.front().rank != 0) return;
  if (!run.options.json) {
    std::cout << format_text(run) << std::flush;
    return;
  }
  check(cudaSetDevice(s.local.front().device), "cudaSetDevice");
  std::cout << nccl_document(run, device_info()).dump(2) << "\n" << std::flush;
}

}  // namespace

int run_nccl_command(const NcclOptions& o) {
  if (o.dry_run) {
    if (o.rank.value_or(0) == 0) std::cout << format_plan(o, *planned_ranks(o)) << std::flush;
    return 0;
  }
  std::unique_ptr<NcclSession> s = open_session(o);
  try {
    NcclRun run = measure(*s, o);
    print(*s, run);
    return any_wrong(run) ? 1 : 0;
  } catch (const std::exception& e) {
    // The other ranks would wait for this one forever.
    s->exchange->abort("rank " + std::to_string(s->local.front().rank) + ": " + e.what());
    throw;
  }
}

}  // namespace dtsim::bench
