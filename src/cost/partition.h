#pragma once
// How a model's layers are split over pipeline stages and virtual chunks.
#include <cstdint>
#include <vector>

#include "spec/job.h"
#include "spec/model.h"

namespace dtsim::cost {

/// The layers per virtual stage a job fixes: its pipeline layout (Parallel::chunk_layers), else,
/// unless it splits by stage (Parallel::stage_layers), the model's reference layout for its pp and
/// vp (spec::Model::reference_layout); nullptr when neither applies.
[[nodiscard]] const std::vector<std::int64_t>* given_chunks(const spec::Model& m, const spec::Parallel& par);

/// Layers on each pipeline stage. An explicit split (Parallel::stage_layers, or the sums of
/// given_chunks) is used as given;
/// otherwise even when pp divides the layers, else ceil(layers/pp) with the shortfall taken one
/// layer each from stages 0, pp-1, 1, pp-2, ... -- the first and last stages hold the embedding
/// and LM head, so Llama 3 (arXiv:2407.21783 sec. 3.3.2) gives them one layer fewer (126 on 16).
[[nodiscard]] std::vector<std::int64_t> stage_layers(const spec::Model& m, const spec::Parallel& par);

/// True when the split is not uniform (reported to the user).
[[nodiscard]] bool uneven_split(const std::vector<std::int64_t>& layers);

/// Decoder layers of every model chunk. Megatron's interleaved order numbers virtual stages
/// k = chunk * pp + stage, each holding consecutive layers of the model.
class LayerPartition {
 public:
  /// An explicit split per virtual stage (given_chunks: a Megatron-Core pipeline layout, the
  /// job's or the model's reference) is used as given; otherwise each stage's layers (stage_layers) are spread over its vp
  /// chunks as evenly as possible, earlier chunks taking the remainder.
  LayerPartition(const spec::Model& m, const spec::Parallel& par);
  /// `chunks` layers per virtual stage (pp x vp, in Megatron's order).
  LayerPartition(std::int64_t pp, std::int64_t vp, std::vector<std::int64_t> chunks);
  /// One stage, one chunk, no layers.
  LayerPartition() : LayerPartition(1, 1, {0}) {}

  /// Layers of chunk `chunk` (0..vp-1) on stage `stage`.
  [[nodiscard]] std::int64_t layers(std::int64_t stage, std::int64_t chunk) const {
    return chunks_[static_cast<std::size_t>(chunk * pp_ + stage)];
  }
  /// Layers on each stage over all its chunks.
  [[nodiscard]] const std::vector<std::int64_t>& stage_layers() const { return stages_; }
  /// Index in the model of the first layer of chunk `chunk` on stage `stage`.
  [[nodiscard]] std::int64_t first_layer(std::int64_t stage, std::int64_t chunk) const {
    return first_[static_cast<std::size_t>(chunk * pp_ + stage)];
  }
  /// Of the layers of chunk `chunk` on stage `stage`, how many are among the model's first
  /// `leading` layers (an MoE model's dense layers, offloaded layers).
  [[nodiscard]] std::int64_t leading_in_chunk(std::int64_t stage, std::int64_t chunk, std::int64_t leading) const;
  /// Layers of every virtual stage, in Megatron's order.
  [[nodiscard]] const std::vector<std::int64_t>& chunks() const { return chunks_; }

 private:
  std::int64_t pp_;
  std::vector<std::int64_t> chunks_, first_, stages_;
};

}  // namespace dtsim::cost
