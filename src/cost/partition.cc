#include "cost/partition.h"

#include <algorithm>

namespace dtsim::cost {

std::vector<std::int64_t> stage_layers(const spec::Model& m, const spec::Parallel& par) {
  if (!par.stage_layers.empty()) return par.stage_layers;
  std::int64_t p = par.pp;
  std::int64_t base = (m.layers + p - 1) / p;
  std::vector<std::int64_t> out(static_cast<std::size_t>(p), base);
  std::int64_t shortfall = base * p - m.layers;
  // Take from the ends inwards: 0, p-1, 1, p-2, ...
  for (std::int64_t i = 0; i < shortfall; ++i) {
    std::int64_t idx = (i % 2 == 0) ? i / 2 : p - 1 - i / 2;
    out[static_cast<std::size_t>(idx)] -= 1;
  }
  return out;
}

bool uneven_split(const std::vector<std::int64_t>& layers) {
  return std::adjacent_find(layers.begin(), layers.end(), std::not_equal_to<>()) != layers.end();
}

std::int64_t chunk_layers(std::int64_t stage_layers, std::int64_t vp, std::int64_t chunk) {
  return stage_layers / vp + (chunk < stage_layers % vp ? 1 : 0);
}

}  // namespace dtsim::cost
