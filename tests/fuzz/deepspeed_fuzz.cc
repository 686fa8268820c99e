// deepspeed configs as --from-deepspeed reads them (src/imports).
#include "fuzz_common.h"
#include "imports/imports.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  dtsim::fuzz::use_source_tree();  // a shape is matched against the shipped model presets
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return dtsim::fuzz::guarded([&] { (void)dtsim::imports::from_deepspeed(dtsim::fuzz::text(data, size), "fuzz.cfg"); });
}
