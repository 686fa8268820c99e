#include "device.h"

namespace dtsim::bench {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw CudaError(std::string(what) + ": " + cudaGetErrorString(e));
}

void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw CudaError(std::string(what) + ": " + cublasLtGetStatusString(s));
}

nlohmann::json device_info() {
  int dev = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, dev), "cudaGetDeviceProperties");
  int driver = 0, runtime = 0, clock_khz = 0, mem_clock_khz = 0;
  check(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  check(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  // Maximum clocks as the driver reports them (cudaDevAttrClockRate: kHz); the sustained clock
  // under the power cap is lower and is what the GEMM rates below show.
  check(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev), "cudaDeviceGetAttribute(ClockRate)");
  check(cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, dev),
        "cudaDeviceGetAttribute(MemoryClockRate)");
  return {{"name", p.name},
          {"sm_count", p.multiProcessorCount},
          {"compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor)},
          {"memory_bytes", p.totalGlobalMem},
          {"l2_bytes", p.l2CacheSize},
          {"max_sm_clock_mhz", clock_khz / 1000},
          {"max_memory_clock_mhz", mem_clock_khz / 1000},
          {"cuda_driver", driver},
          {"cuda_runtime", runtime},
          {"cublaslt", cublasLtGetVersion()}};
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  check(cudaMalloc(&ptr_, bytes), ("cudaMalloc(" + std::to_string(bytes) + " bytes)").c_str());
}

DeviceBuffer::~DeviceBuffer() { cudaFree(ptr_); }

EventTimer::EventTimer() {
  check(cudaEventCreate(&begin_), "cudaEventCreate");
  check(cudaEventCreate(&end_), "cudaEventCreate");
}

EventTimer::~EventTimer() {
  cudaEventDestroy(begin_);
  cudaEventDestroy(end_);
}

void EventTimer::start() { check(cudaEventRecord(begin_), "cudaEventRecord"); }

double EventTimer::stop() {
  check(cudaEventRecord(end_), "cudaEventRecord");
  check(cudaEventSynchronize(end_), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, begin_, end_), "cudaEventElapsedTime");
  return static_cast<double>(ms) * 1e-3;
}

}  // namespace dtsim::bench
