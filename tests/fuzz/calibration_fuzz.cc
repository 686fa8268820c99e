// Calibration profiles (calibration/*.json, what dtsim calibrate writes).
#include "fuzz_common.h"
#include "spec/calibration.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return dtsim::fuzz::guarded(
      [&] { (void)dtsim::spec::parse_calibration(dtsim::fuzz::text(data, size), "fuzz.json"); });
}
