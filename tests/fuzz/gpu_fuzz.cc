// GPU files (topologies/gpus/).
#include "fuzz_common.h"
#include "spec/load.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return dtsim::fuzz::guarded([&] { (void)dtsim::spec::parse_gpu(dtsim::fuzz::text(data, size), "fuzz.json"); });
}
