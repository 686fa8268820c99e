#pragma once
// Shared by the libFuzzer targets (tools/fuzz.sh builds and runs them): a parser may reject its
// input only with dtsim::SpecError (exit 2 in the CLI); anything else escaping it -- another
// exception, a sanitizer report, a timeout -- is a finding.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/errors.h"

namespace dtsim::fuzz {

/// The input as text.
inline std::string text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Presets (a cluster's "gpu", a profile's name) come from the source tree.
inline void use_source_tree() { setenv("DTSIM_DATA_DIR", DTSIM_SOURCE_DIR, 1); }

/// Runs `f`; bad input (SpecError) is the expected outcome for most inputs.
template <class F>
int guarded(F f) {
  try {
    f();
  } catch (const SpecError&) {
  }
  return 0;
}

}  // namespace dtsim::fuzz
