#include "cost/partition.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace dtsim::cost {

const std::vector<std::int64_t>* given_chunks(const spec::Model& m, const spec::Parallel& par) {
  if (!par.chunk_layers.empty()) return &par.chunk_layers;
  if (!par.stage_layers.empty()) return nullptr;
  const spec::ReferenceLayout* ref = m.reference_layout(par.pp, par.vp);
  return ref != nullptr ? &ref->chunk_layers : nullptr;
}

std::vector<std::int64_t> stage_layers(const spec::Model& m, const spec::Parallel& par) {
  if (!par.stage_layers.empty()) return par.stage_layers;
  if (const auto* chunks = given_chunks(m, par)) return LayerPartition(par.pp, par.vp, *chunks).stage_layers();
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

namespace {

// Each stage's layers over its vp chunks as evenly as possible, earlier chunks taking the
// remainder, in virtual-stage order.
std::vector<std::int64_t> even_chunks(const std::vector<std::int64_t>& stages, std::int64_t vp) {
  auto pp = static_cast<std::int64_t>(stages.size());
  std::vector<std::int64_t> chunks(static_cast<std::size_t>(pp * vp));
  for (std::int64_t s = 0; s < pp; ++s) {
    std::int64_t l = stages[static_cast<std::size_t>(s)];
    for (std::int64_t c = 0; c < vp; ++c) chunks[static_cast<std::size_t>(c * pp + s)] = l / vp + (c < l % vp ? 1 : 0);
  }
  return chunks;
}

std::vector<std::int64_t> chunks_for(const spec::Model& m, const spec::Parallel& par) {
  const std::vector<std::int64_t>* given = given_chunks(m, par);
  return given != nullptr ? *given : even_chunks(stage_layers(m, par), par.vp);
}

}  // namespace

LayerPartition::LayerPartition(const spec::Model& m, const spec::Parallel& par)
    : LayerPartition(par.pp, par.vp, chunks_for(m, par)) {}

LayerPartition::LayerPartition(std::int64_t pp, std::int64_t vp, std::vector<std::int64_t> chunks)
    : pp_(pp), chunks_(std::move(chunks)), first_(chunks_.size()), stages_(static_cast<std::size_t>(pp), 0) {
  if (pp < 1 || vp < 1 || static_cast<std::int64_t>(chunks_.size()) != pp * vp)
    throw std::logic_error("cost::LayerPartition: expected pp x vp chunks");
  std::int64_t first = 0;
  for (std::size_t k = 0; k < chunks_.size(); ++k) {
    first_[k] = first;
    first += chunks_[k];
    stages_[k % static_cast<std::size_t>(pp_)] += chunks_[k];
  }
}

std::int64_t LayerPartition::leading_in_chunk(std::int64_t stage, std::int64_t chunk, std::int64_t leading) const {
  if (leading <= 0) return 0;
  return std::clamp<std::int64_t>(leading - first_layer(stage, chunk), 0, layers(stage, chunk));
}

}  // namespace dtsim::cost
