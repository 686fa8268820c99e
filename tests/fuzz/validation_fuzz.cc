// dtsim-validation-cases/1 files, with the shipped recipes applied to their null fields.
#include "fuzz_common.h"
#include "spec/load.h"
#include "spec/validation_file.h"

namespace {
dtsim::spec::RecipesFile recipes() {
  std::string path = std::string(DTSIM_SOURCE_DIR) + "/calibration/validation-recipes.json";
  return dtsim::spec::parse_recipes_file(dtsim::spec::read_spec_text(path), path);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const dtsim::spec::RecipesFile r = recipes();
  return dtsim::fuzz::guarded([&] {
    dtsim::spec::ValidationFile f = dtsim::spec::parse_validation_file(dtsim::fuzz::text(data, size), "fuzz.json");
    (void)dtsim::spec::apply_recipes(f, r);
  });
}
