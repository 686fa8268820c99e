#pragma once
// CUDA error checking and the facts about the GPU a benchmark ran on.
#include <algorithm>
#include <cstddef>
#include <cstdint>
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

/// What timing a launch repeatedly found: launches, seconds, and the slowest and fastest batch
/// (launches per second).
struct Window {
  std::int64_t iterations = 0;
  double seconds = 0, min_rate = 0, max_rate = 0;
};

/// Calls `launch` (which enqueues GPU work) in batches of about 50 ms, sized from three timed
/// calls, until `seconds` of GPU time have been timed.
template <class Launch>
Window time_window(Launch&& launch, double seconds) {
  EventTimer timer;
  timer.start();
  for (int i = 0; i < 3; ++i) launch();
  double per = timer.stop() / 3;
  auto batch = static_cast<std::int64_t>(per > 0 ? std::min(std::max(0.05 / per, 1.0), 100000.0) : 100000.0);
  Window w;
  while (w.seconds < seconds) {
    timer.start();
    for (std::int64_t i = 0; i < batch; ++i) launch();
    double dt = timer.stop();
    double rate = static_cast<double>(batch) / dt;
    w.min_rate = w.iterations == 0 ? rate : std::min(w.min_rate, rate);
    w.max_rate = std::max(w.max_rate, rate);
    w.iterations += batch;
    w.seconds += dt;
  }
  return w;
}

}  // namespace dtsim::bench
