// The single-process and file launchers (the MPI one is nccl_mpi.cc, built where MPI is found).
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include <unistd.h>

#include "bootstrap_file.h"
#include "device.h"
#include "nccl_session.h"

namespace dtsim::bench {
namespace {

// One process holds every rank: nothing to agree with.
class LocalExchange : public Exchange {
 public:
  void barrier() override {}
  double max(double v) override { return v; }
  std::int64_t sum(std::int64_t v) override { return v; }
};

// Agreement through the run's own communicator: one-element all-reduces on a scratch buffer.
class NcclExchange : public Exchange {
 public:
  explicit NcclExchange(LocalRank* r) : r_(r), scratch_(sizeof(double)) {}
  void barrier() override { (void)sum(0); }
  double max(double v) override { return reduce(v, ncclDouble, ncclMax); }
  std::int64_t sum(std::int64_t v) override { return reduce(v, ncclInt64, ncclSum); }
  // Frees this rank's NCCL resources; the peers may still wait (srun --kill-on-bad-exit ends them).
  void abort(const std::string&) override {
    ncclCommAbort(r_->comm);
    r_->comm = nullptr;  // not destroyed again with the session
  }

 private:
  template <class T>
  T reduce(T v, ncclDataType_t type, ncclRedOp_t op) {
    // All on the rank's stream: it does not wait for the legacy default stream (non-blocking).
    check(cudaSetDevice(r_->device), "cudaSetDevice");
    check(cudaMemcpyAsync(scratch_.get(), &v, sizeof v, cudaMemcpyHostToDevice, r_->stream), "cudaMemcpyAsync");
    check(ncclAllReduce(scratch_.get(), scratch_.get(), 1, type, op, r_->comm, r_->stream), "ncclAllReduce");
    check(cudaMemcpyAsync(&v, scratch_.get(), sizeof v, cudaMemcpyDeviceToHost, r_->stream), "cudaMemcpyAsync");
    sync_streams({*r_});
    return v;
  }
  LocalRank* r_;  // the session's, which outlives this exchange's use
  DeviceBuffer scratch_;
};

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

int visible_devices() {
  int n = 0;
  check(cudaGetDeviceCount(&n), "cudaGetDeviceCount");
  if (n < 1) throw CudaError("cudaGetDeviceCount: no CUDA device is visible");
  return n;
}

cudaStream_t make_stream(int device) {
  check(cudaSetDevice(device), "cudaSetDevice");
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  return s;
}

// Every rank's RankInfo, through an all-gather of fixed-size records on the communicator.
std::vector<RankInfo> gather_over_nccl(const LocalRank& r, int nranks) {
  RankInfo mine = describe_rank(r.rank, r.device);
  DeviceBuffer buf(sizeof(RankInfo) * static_cast<std::size_t>(nranks));
  auto* all = static_cast<unsigned char*>(buf.get());
  unsigned char* slot = all + sizeof(RankInfo) * static_cast<std::size_t>(r.rank);  // in place: own slot
  std::vector<RankInfo> out(static_cast<std::size_t>(nranks));
  check(cudaMemcpyAsync(slot, &mine, sizeof mine, cudaMemcpyHostToDevice, r.stream), "cudaMemcpyAsync");
  check(ncclAllGather(slot, all, sizeof(RankInfo), ncclUint8, r.comm, r.stream), "ncclAllGather");
  check(cudaMemcpyAsync(out.data(), all, buf.size(), cudaMemcpyDeviceToHost, r.stream), "cudaMemcpyAsync");
  sync_streams({r});
  return out;
}

ncclUniqueId meet_through_file(const NcclOptions& o) {
  ncclUniqueId id{};
  const std::string job = bootstrap_job_tag(process_env());
  if (*o.rank == 0) {
    check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    const auto* bytes = reinterpret_cast<const unsigned char*>(&id);
    publish_bootstrap_record(o.bootstrap_file, {*o.nranks, job, std::vector<unsigned char>(bytes, bytes + sizeof id)});
    return id;
  }
  BootstrapRecord r = wait_for_bootstrap_record(o.bootstrap_file, *o.nranks, job,
                                                std::chrono::seconds(o.bootstrap_timeout_s),
                                                std::chrono::milliseconds(200));
  if (r.id.size() != sizeof id)
    throw BootstrapError("--bootstrap-file: expected a " + std::to_string(sizeof id) + "-byte NCCL unique id in " +
                         o.bootstrap_file + ", got " + std::to_string(r.id.size()) + " bytes");
  std::memcpy(&id, r.id.data(), sizeof id);
  return id;
}

}  // namespace

void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw NcclError(std::string(what) + ": " + ncclGetErrorString(r));
}

NcclSession::~NcclSession() {
  for (LocalRank& r : local) {
    if (r.comm) ncclCommDestroy(r.comm);
    if (r.stream) cudaStreamDestroy(r.stream);
  }
}

RankInfo describe_rank(int rank, int device) {
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
  RankInfo r{.rank = rank, .pid = static_cast<std::int32_t>(getpid()), .device = device,
             .pci_domain = p.pciDomainID, .pci_bus = p.pciBusID, .pci_device = p.pciDeviceID};
  set_field(r.host, host_name());
  set_field(r.name, p.name);
  return r;
}

void sync_streams(const std::vector<LocalRank>& local) {
  std::vector<bool> done(local.size(), false);
  std::size_t remaining = local.size();
  while (remaining > 0) {
    for (std::size_t i = 0; i < local.size(); ++i) {
      if (done[i]) continue;
      cudaError_t e = cudaStreamQuery(local[i].stream);
      if (e == cudaSuccess) {
        done[i] = true;
        --remaining;
        continue;
      }
      if (e != cudaErrorNotReady) check(e, "cudaStreamQuery");
      ncclResult_t async = ncclSuccess;  // a failed peer or network shows here, not as a hang
      check(ncclCommGetAsyncError(local[i].comm, &async), "ncclCommGetAsyncError");
      check(async, "NCCL asynchronous error");
    }
    if (remaining > 0) std::this_thread::yield();
  }
}

std::unique_ptr<NcclSession> open_single_process(const NcclOptions& o) {
  const int visible = visible_devices();
  const int n = o.gpus.value_or(visible);
  if (n > visible)
    throw std::invalid_argument("--gpus: expected at most the " + std::to_string(visible) + " visible devices, got \"" +
                                std::to_string(n) + "\"");
  auto s = std::make_unique<NcclSession>();
  s->exchange = std::make_unique<LocalExchange>();
  s->nranks = n;
  std::vector<int> devices(static_cast<std::size_t>(n));
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) devices[static_cast<std::size_t>(i)] = i;
  check(ncclCommInitAll(comms.data(), n, devices.data()), "ncclCommInitAll");
  for (int i = 0; i < n; ++i)  // owned by the session before anything else can throw
    s->local.push_back({.rank = i, .device = i, .comm = comms[static_cast<std::size_t>(i)]});
  for (LocalRank& r : s->local) {
    r.stream = make_stream(r.device);
    s->ranks.push_back(describe_rank(r.rank, r.device));
  }
  return s;
}

std::unique_ptr<NcclSession> open_file(const NcclOptions& o) {
  const int visible = visible_devices();
  const int device = o.device.value_or(*o.rank % visible);  // no local rank known: spread by rank
  if (device >= visible)
    throw std::invalid_argument("--device: expected one of the " + std::to_string(visible) +
                                " visible devices, got \"" + std::to_string(device) + "\"");
  check(cudaSetDevice(device), "cudaSetDevice");
  ncclUniqueId id = meet_through_file(o);
  auto s = std::make_unique<NcclSession>();
  s->nranks = *o.nranks;
  LocalRank r{.rank = *o.rank, .device = device};
  check(ncclCommInitRank(&r.comm, s->nranks, id, r.rank), "ncclCommInitRank");
  s->local.push_back(r);  // owned by the session from here on
  if (r.rank == 0) remove_bootstrap_record(o.bootstrap_file);  // every rank has joined: the id is spent
  s->local.back().stream = make_stream(device);
  s->exchange = std::make_unique<NcclExchange>(&s->local.back());
  s->ranks = gather_over_nccl(s->local.back(), s->nranks);
  return s;
}

#ifndef DTSIM_BENCH_HAVE_MPI
std::unique_ptr<NcclSession> open_mpi(const NcclOptions&) {
  throw std::logic_error("open_mpi: dtsim-bench was built without MPI");  // resolve_nccl_options refuses it first
}
#endif

}  // namespace dtsim::bench
