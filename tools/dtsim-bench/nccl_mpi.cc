// The MPI launcher: one process per GPU, the local rank from MPI_Comm_split_type, NCCL's unique
// id broadcast and every rank's description gathered by MPI. Built only where CMake finds MPI.
#include <iostream>

#include <mpi.h>

#include "device.h"
#include "nccl_session.h"

namespace dtsim::bench {
namespace {

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw std::runtime_error(std::string(what) + ": " + text);
}

// Owns MPI: initialised with the session, finalised after its communicators are destroyed.
class MpiExchange : public Exchange {
 public:
  MpiExchange() {
    int ready = 0;
    check_mpi(MPI_Initialized(&ready), "MPI_Initialized");
    if (!ready) check_mpi(MPI_Init(nullptr, nullptr), "MPI_Init");
  }
  ~MpiExchange() override {
    int done = 0;
    MPI_Finalized(&done);
    if (!done) MPI_Finalize();
  }
  MpiExchange(const MpiExchange&) = delete;
  MpiExchange& operator=(const MpiExchange&) = delete;
  void barrier() override { check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }
  double max(double v) override {
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
    return v;
  }
  std::int64_t sum(std::int64_t v) override {
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    return v;
  }
  void abort(const std::string& message) override {
    std::cerr << "dtsim-bench: " << message << "\n" << std::flush;
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
};

// This process's rank among those sharing its node.
int local_rank(int rank) {
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type");
  int local = 0;
  MPI_Comm_rank(node, &local);
  MPI_Comm_free(&node);
  return local;
}

}  // namespace

std::unique_ptr<NcclSession> open_mpi(const NcclOptions& o) {
  auto s = std::make_unique<NcclSession>();
  s->exchange = std::make_unique<MpiExchange>();
  int rank = 0, visible = 0;
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &s->nranks), "MPI_Comm_size");
  const int device = o.device.value_or(local_rank(rank));
  check(cudaGetDeviceCount(&visible), "cudaGetDeviceCount");
  if (device >= visible)
    throw std::invalid_argument("--device: expected one of the " + std::to_string(visible) +
                                " visible devices (one per process on a node), got \"" + std::to_string(device) + "\"");
  check(cudaSetDevice(device), "cudaSetDevice");
  ncclUniqueId id{};
  if (rank == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  check_mpi(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
  LocalRank r{.rank = rank, .device = device};
  check(ncclCommInitRank(&r.comm, s->nranks, id, rank), "ncclCommInitRank");
  s->local.push_back(r);
  check(cudaStreamCreateWithFlags(&s->local.back().stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  RankInfo mine = describe_rank(rank, device);
  s->ranks.resize(static_cast<std::size_t>(s->nranks));
  check_mpi(MPI_Allgather(&mine, sizeof mine, MPI_BYTE, s->ranks.data(), sizeof mine, MPI_BYTE, MPI_COMM_WORLD),
            "MPI_Allgather");
  return s;
}

}  // namespace dtsim::bench
