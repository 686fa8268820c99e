#pragma once
// How a model's layers are split over pipeline stages and virtual chunks.
#include <cstdint>
#include <vector>

#include "spec/job.h"
#include "spec/model.h"

namespace dtsim::cost {

/// Layers on each pipeline stage. An explicit split (Parallel::stage_layers) is used as given;
/// otherwise even when pp divides the layers, else ceil(layers/pp) with the shortfall taken one
/// layer each from stages 0, pp-1, 1, pp-2, ... -- the first and last stages hold the embedding
/// and LM head, so Llama 3 (arXiv:2407.21783 sec. 3.3.2) gives them one layer fewer (126 on 16).
[[nodiscard]] std::vector<std::int64_t> stage_layers(const spec::Model& m, const spec::Parallel& par);

/// True when the split is not uniform (reported to the user).
[[nodiscard]] bool uneven_split(const std::vector<std::int64_t>& layers);

/// Layers of virtual chunk `chunk` (0..vp-1) of a stage holding `stage_layers` layers: as even as
/// possible, earlier chunks taking the remainder.
[[nodiscard]] std::int64_t chunk_layers(std::int64_t stage_layers, std::int64_t vp, std::int64_t chunk);

/// Index in the model of the first layer of chunk `chunk` on stage `stage`: Megatron's
/// interleaved order places model chunk chunk*pp + stage on that stage, each model chunk holding
/// consecutive layers.
[[nodiscard]] std::int64_t chunk_first_layer(const std::vector<std::int64_t>& stage_layers, std::int64_t vp,
                                             std::int64_t stage, std::int64_t chunk);
/// Of the layers of chunk `chunk` on stage `stage`, how many are among the model's first `leading`
/// layers (an MoE model's dense layers).
[[nodiscard]] std::int64_t leading_layers_in_chunk(const std::vector<std::int64_t>& stage_layers, std::int64_t vp,
                                                   std::int64_t stage, std::int64_t chunk, std::int64_t leading);

}  // namespace dtsim::cost
