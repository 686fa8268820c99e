#pragma once
// CUDA error checking and the facts about the GPU a benchmark ran on.
#include <cstddef>
#include <stdexcept>
#include <string>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <nlohmann/json.hpp>

namespace dtsim::bench {

/// A CUDA or cuBLASLt call failed; the message names the call and the library's error string.
struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(cudaError_t e, const char* what);
void check(cublasStatus_t s, const char* what);

/// Name, SM count, compute capability, clocks and library versions of the current device.
[[nodiscard]] nlohmann::json device_info();

/// Device memory freed on scope exit.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  [[nodiscard]] void* get() const { return ptr_; }
  [[nodiscard]] std::size_t size() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

/// Times GPU work between two events on the default stream.
class EventTimer {
 public:
  EventTimer();
  ~EventTimer();
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;
  void start();
  /// Seconds since start(), after waiting for the work to finish.
  [[nodiscard]] double stop();

 private:
  cudaEvent_t begin_ = nullptr, end_ = nullptr;
};

}  // namespace dtsim::bench
