// Model files: dtsim's format and Hugging Face config.json; then what `show model` derives.
#include "cost/model_stats.h"
#include "fuzz_common.h"
#include "spec/load.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return dtsim::fuzz::guarded([&] {
    dtsim::spec::Model m = dtsim::spec::parse_model(dtsim::fuzz::text(data, size), "fuzz.json");
    (void)dtsim::cost::count_params(m);
    (void)dtsim::cost::token_flops(m, 2048);
  });
}
