#pragma once
// The ranks this process drives, once a launcher has made their communicators, and the little
// agreement the benchmark needs across processes (a barrier, the slowest time, the wrong count).
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "nccl_options.h"
#include "nccl_report.h"

namespace dtsim::bench {

/// An NCCL call failed; the message names the call and NCCL's error string.
struct NcclError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Throws NcclError naming `what` unless `r` is ncclSuccess.
void check(ncclResult_t r, const char* what);

/// Agreement across the processes of a run; one process alone agrees with itself.
class Exchange {
 public:
  virtual ~Exchange() = default;
  /// Returns once every process has called it.
  virtual void barrier() = 0;
  /// The largest `v` over processes.
  [[nodiscard]] virtual double max(double v) = 0;
  /// The sum of `v` over processes.
  [[nodiscard]] virtual std::int64_t sum(std::int64_t v) = 0;
  /// After an error on this process: stops the others where the launcher can (MPI prints
  /// `message` first, as it ends this process too).
  virtual void abort(const std::string& /*message*/) {}
};

/// One rank driven by this process.
struct LocalRank {
  int rank = 0;
  int device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
};

/// A launched run: its local ranks (destroyed with it) and every rank's description.
struct NcclSession {
  std::unique_ptr<Exchange> exchange;  // declared first: outlives the communicators (MPI_Finalize)
  std::vector<LocalRank> local;
  int nranks = 0;
  std::vector<RankInfo> ranks;
  NcclSession() = default;
  NcclSession(const NcclSession&) = delete;
  NcclSession& operator=(const NcclSession&) = delete;
  ~NcclSession();
};

/// This process's description of a rank on `device` (host name, pid, PCI address, GPU name).
[[nodiscard]] RankInfo describe_rank(int rank, int device);

/// Waits for every local stream, polling NCCL's asynchronous errors as nccl-tests does.
void sync_streams(const std::vector<LocalRank>& local);

/// One process, devices 0..N-1, ncclCommInitAll.
[[nodiscard]] std::unique_ptr<NcclSession> open_single_process(const NcclOptions& o);

/// One process per GPU meeting through --bootstrap-file; exchanges go through NCCL itself.
[[nodiscard]] std::unique_ptr<NcclSession> open_file(const NcclOptions& o);

/// One MPI process per GPU; throws std::logic_error when built without MPI.
[[nodiscard]] std::unique_ptr<NcclSession> open_mpi(const NcclOptions& o);

}  // namespace dtsim::bench
