#include "copy.h"

#include <algorithm>

#include "device.h"

namespace dtsim::bench {

nlohmann::json run_copy(const std::vector<std::int64_t>& sizes, double seconds) {
  std::int64_t largest = *std::max_element(sizes.begin(), sizes.end());
  DeviceBuffer src(static_cast<std::size_t>(largest)), dst(static_cast<std::size_t>(largest));
  check(cudaMemset(src.get(), 0x5a, src.size()), "cudaMemset");
  nlohmann::json results = nlohmann::json::array();
  for (std::int64_t bytes : sizes) {
    auto n = static_cast<std::size_t>(bytes);
    Window w = time_window(
        [&] { check(cudaMemcpyAsync(dst.get(), src.get(), n, cudaMemcpyDeviceToDevice, 0), "cudaMemcpyAsync"); },
        seconds);
    std::int64_t iterations = w.iterations;
    double total = w.seconds;
    double moved = 2.0 * static_cast<double>(bytes) * static_cast<double>(iterations);  // read + write
    results.push_back(
        {{"bytes", bytes}, {"gb_per_s", moved / total / 1e9}, {"iterations", iterations}, {"seconds", total}});
  }
  return {{"seconds_per_size", seconds}, {"counts", "bytes read + bytes written"}, {"results", results}};
}

}  // namespace dtsim::bench
