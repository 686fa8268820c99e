#pragma once
// Megatron-Core's custom pipeline layout (--pipeline-model-parallel-layout, Megatron-Bridge
// pipeline_model_parallel_layout), e.g. "Et|(tt|)*30mL": one entry per virtual pipeline stage,
// separated by '|', in the order Megatron numbers them (virtual stage k runs on pipeline rank
// k % pp, model chunk k / pp). 'E' is the embedding, 't' a decoder layer, 'm' a multi-token-
// prediction module, 'L' the loss; "x*n" repeats a character and "(...)*n" a group; commas are
// cosmetic (megatron/core/transformer/pipeline_parallel_layer_layout.py parse_str_to_list).
#include <cstdint>
#include <string>
#include <vector>

#include "spec/model.h"

namespace dtsim::spec {

/// A layout read for a model and a pipeline size.
struct PipelineLayout {
  std::int64_t vp = 1;                     ///< virtual stages per pipeline rank (entries / pp)
  std::vector<std::int64_t> stage_layers;  ///< decoder layers per pipeline rank, all its chunks
};

/// The number of virtual stages `text` lists (its '|'-separated entries once unrolled); throws
/// SpecError naming `where` on a malformed string. What an importer needs to derive vp.
[[nodiscard]] std::int64_t pipeline_layout_stages(const std::string& text, const std::string& where);

/// Reads `text` for `pp` pipeline ranks. Checks what Megatron-Core's validate_layer_layout checks
/// (the embedding first and the loss last, once each; the model's decoder layers and MTP modules,
/// the MTP modules after every decoder layer) and what dtsim can price: the MTP modules in the
/// last rank's last chunk. Throws SpecError naming `where` otherwise.
[[nodiscard]] PipelineLayout parse_pipeline_layout(const std::string& text, const Model& m, std::int64_t pp,
                                                   const std::string& where);

}  // namespace dtsim::spec
