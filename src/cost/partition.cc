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

std::int64_t chunk_first_layer(const std::vector<std::int64_t>& stage_layers, std::int64_t vp, std::int64_t stage,
                               std::int64_t chunk) {
  auto pp = static_cast<std::int64_t>(stage_layers.size());
  std::int64_t first = 0;
  for (std::int64_t c = 0; c <= chunk; ++c)
    for (std::int64_t s = 0; s < pp && (c < chunk || s < stage); ++s)
      first += chunk_layers(stage_layers[static_cast<std::size_t>(s)], vp, c);
  return first;
}

std::int64_t leading_layers_in_chunk(const std::vector<std::int64_t>& stage_layers, std::int64_t vp,
                                     std::int64_t stage, std::int64_t chunk, std::int64_t leading) {
  if (leading <= 0) return 0;
  std::int64_t n = chunk_layers(stage_layers[static_cast<std::size_t>(stage)], vp, chunk);
  return std::clamp<std::int64_t>(leading - chunk_first_layer(stage_layers, vp, stage, chunk), 0, n);
}

}  // namespace dtsim::cost
