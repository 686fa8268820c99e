#pragma once
// How ranks started without MPI meet: rank 0 writes NCCL's unique id to a file on a filesystem
// every rank sees (written to a temporary name, then renamed, so a reader never sees half of it);
// the others poll for it until a timeout. The record names its rank count and, under SLURM, its
// job step, so a file left by another run is not taken for this one's.
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "nccl_options.h"

namespace dtsim::bench {

/// The bootstrap file did not appear, or only a stale one did; exits 1.
struct BootstrapError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What rank 0 publishes.
struct BootstrapRecord {
  int nranks = 0;
  std::string job;                  ///< "SLURM_JOB_ID.SLURM_STEP_ID", or "" outside SLURM
  std::vector<unsigned char> id;    ///< the ncclUniqueId's bytes
  bool operator==(const BootstrapRecord&) const = default;
};

/// The job step this process belongs to, from SLURM_JOB_ID and SLURM_STEP_ID; "" when unknown.
[[nodiscard]] std::string bootstrap_job_tag(const EnvLookup& env);

/// The file's text: a header line, then "nranks N", "job J", "id HEX" lines.
[[nodiscard]] std::string format_bootstrap_record(const BootstrapRecord& r);

/// Inverse of format_bootstrap_record; nullopt for text that is not one.
[[nodiscard]] std::optional<BootstrapRecord> parse_bootstrap_record(const std::string& text);

/// Writes the record to `path` atomically (a temporary file beside it, then rename); throws
/// std::runtime_error naming the path when it cannot.
void publish_bootstrap_record(const std::string& path, const BootstrapRecord& r);

/// Polls `path` every `poll` until it holds a record for `nranks` ranks of job `job` (either job
/// "" matches any); throws BootstrapError saying what it found once `timeout` has passed.
[[nodiscard]] BootstrapRecord wait_for_bootstrap_record(const std::string& path, int nranks, const std::string& job,
                                                        std::chrono::milliseconds timeout,
                                                        std::chrono::milliseconds poll);

/// Deletes the file (rank 0, once every rank has joined); a missing file is fine.
void remove_bootstrap_record(const std::string& path);

}  // namespace dtsim::bench
