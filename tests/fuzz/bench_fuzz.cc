// dtsim-bench output files (gemm, copy, nccl sweeps) as dtsim calibrate reads them.
#include "fuzz_common.h"
#include "spec/bench_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return dtsim::fuzz::guarded(
      [&] { (void)dtsim::spec::parse_bench_file(dtsim::fuzz::text(data, size), "fuzz.json"); });
}
