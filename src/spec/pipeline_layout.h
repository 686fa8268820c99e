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

#include "spec/job.h"
#include "spec/model.h"

namespace dtsim::spec {

/// The number of virtual stages `text` lists (its '|'-separated entries once unrolled); throws
/// SpecError naming `where` on a malformed string. What an importer needs to derive vp.
[[nodiscard]] std::int64_t pipeline_layout_stages(const std::string& text, const std::string& where);

/// Reads `text` for `pp` pipeline ranks of `vp` chunks each (pp x vp entries) and returns the
/// decoder layers of each entry, in its order (Parallel::chunk_layers). Checks what Megatron-Core's
/// validate_layer_layout checks (the embedding first and the loss last, once each; the model's
/// decoder layers and MTP modules, the MTP modules after every decoder layer) and what dtsim can
/// price: the MTP modules in the last rank's last chunk. Throws SpecError naming `where` otherwise.
[[nodiscard]] std::vector<std::int64_t> parse_pipeline_layout(const std::string& text, const Model& m,
                                                              std::int64_t pp, std::int64_t vp, const std::string& where);

/// What a report says when a job takes the model's reference layout (Model::reference_layout: no
/// layout and no split by stage of its own); empty otherwise.
[[nodiscard]] std::string reference_layout_note(const Model& m, const Parallel& par);

}  // namespace dtsim::spec
