// dtsim-check/1 files, parsed and written back (what --update writes must read back the same).
#include <stdexcept>

#include "fuzz_common.h"
#include "spec/check_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return dtsim::fuzz::guarded([&] {
    dtsim::spec::CheckFile f = dtsim::spec::parse_check_file(dtsim::fuzz::text(data, size), "fuzz.json");
    std::string once = dtsim::spec::check_file_text(f);
    std::string twice = dtsim::spec::check_file_text(dtsim::spec::parse_check_file(once, "rewritten.json"));
    if (once != twice) throw std::logic_error("check_file_text does not read back to itself");
  });
}
