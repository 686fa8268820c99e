// nccl-tests logs (as printed or as posted), every table of a log.
#include "calibrate/nccl_tests.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return dtsim::fuzz::guarded(
      [&] { (void)dtsim::calibrate::parse_nccl_tests_all(dtsim::fuzz::text(data, size), "fuzz.log", {}); });
}
