#pragma once
// Internal to src/spec: cross-field model rules and the Hugging Face reader.
#include <optional>
#include <string>

#include "spec/json_reader.h"
#include "spec/model.h"

namespace dtsim::spec {

/// Cross-field checks (heads vs kv_heads and hidden, learned positions need a table size).
/// Fills head_dim when zero. Errors point at the offending key of `r`.
void check_model(Model& m, const ObjectReader& r);

/// A hybrid pattern's rules, the failure naming `key` of `r`: only 'M', '*', '-' and 'E'; its
/// length sets `layers` when the reader has none (a Hugging Face config), else must equal it; 'E'
/// needs experts and experts an 'E'; 'M' needs the Mamba mixer and the mixer an 'M'; no MoE
/// leading dense layers or sliding windows (not modelled for hybrids).
void check_hybrid_pattern(Model& m, const ObjectReader& r, const std::string& key);
/// A hybrid model's MTP blocks (`key` names mtp_pattern as the file spells it): required with
/// mtp_layers, letters the model can build; none for a transformer.
void check_mtp_pattern(const Model& m, const ObjectReader& r, const std::string& key);

/// A Mamba mixer's rule, the failure naming `groups_key` of `r`: its groups divide its heads
/// (Megatron-Core MambaMixer: nheads % ngroups == 0).
void check_mamba(const Mamba& mamba, const ObjectReader& r, const std::string& groups_key);

/// The keys a file spells a Mamba mixer's fields with (dtsim's `mamba` object, Hugging Face's
/// nemotron_h config).
struct MambaKeys {
  const char *heads, *head_dim, *state, *groups, *conv, *chunk;
};
/// A Mamba mixer read from `r` under `keys`: heads, head_dim, state and groups required, conv and
/// chunk Megatron-Core's defaults (4, 128) when absent; checked with check_mamba.
[[nodiscard]] Mamba read_mamba(ObjectReader& r, const MambaKeys& keys);

/// A dropout probability at `name`: a number in [0, 1), or nullopt when absent or null.
[[nodiscard]] std::optional<double> read_probability(ObjectReader& r, const std::string& name);

/// Reads a Hugging Face config.json (Llama, Mistral, Mixtral, Qwen2, Qwen3, GPT-2, GPT-NeoX).
/// Keys it does not use are ignored: config.json carries many training-irrelevant keys.
[[nodiscard]] Model read_hf_config(ObjectReader& r);

}  // namespace dtsim::spec
