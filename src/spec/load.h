#pragma once
// Loading specs from preset names or files. The only public entry points into JSON.
#include <string>
#include <vector>

#include "spec/cluster.h"
#include "spec/gpu.h"
#include "spec/model.h"

namespace dtsim::spec {

/// Directory holding models/, topologies/ and calibration/: $DTSIM_DATA_DIR, else the
/// source tree the binary was built from.
[[nodiscard]] std::string data_dir();

/// Resolves `name_or_path` to a file: an existing path as given, else `<data_dir>/<subdir>/NAME.json`.
/// Throws SpecError naming `flag` when neither exists.
[[nodiscard]] std::string resolve_preset(const std::string& subdir, const std::string& name_or_path,
                                         const std::string& flag);
/// Names of the presets in `<data_dir>/<subdir>` (NAME of NAME.json), sorted.
[[nodiscard]] std::vector<std::string> preset_names(const std::string& subdir);
/// The text of a spec file; throws SpecError naming the file when it cannot be read.
[[nodiscard]] std::string read_spec_text(const std::string& path);

/// Throws SpecError naming `where` (a flag or "file:/pointer") unless `path` can be handed to the
/// filesystem (core/text.h path_problem): every path from the input passes here first.
void require_path(const std::string& where, const std::string& path);
/// Writes `text` to `path` (an output file named by `flag`); SpecError naming the flag when the
/// path is unusable or the file cannot be written.
void write_text_file(const std::string& flag, const std::string& path, const std::string& text);

/// Resolves a preset or path and parses it with `parse(text, file)`: the one way every spec loads.
template <class Parse>
[[nodiscard]] auto load_spec(const std::string& subdir, const std::string& name_or_path, const std::string& flag,
                             Parse parse) {
  std::string path = resolve_preset(subdir, name_or_path, flag);
  return parse(read_spec_text(path), path);
}

/// Parses a model from JSON text: dtsim's model format, or a Hugging Face config.json
/// (detected by its "model_type"/"architectures" keys). Throws SpecError with file and pointer.
[[nodiscard]] Model parse_model(const std::string& text, const std::string& file);
/// Loads a model preset (models/NAME.json) or file; `flag` names the option in errors.
[[nodiscard]] Model load_model(const std::string& name_or_path, const std::string& flag = "--model");

/// Parses a GPU spec (topologies/gpus/ format).
[[nodiscard]] Gpu parse_gpu(const std::string& text, const std::string& file);
/// Loads a GPU preset (topologies/gpus/NAME.json) or file.
[[nodiscard]] Gpu load_gpu(const std::string& name_or_path, const std::string& flag = "--gpu");

/// Parses a cluster spec; its "gpu" names a GPU preset or file, loaded relative to it.
[[nodiscard]] Cluster parse_cluster(const std::string& text, const std::string& file);
/// Loads a cluster preset (topologies/NAME.json) or file.
[[nodiscard]] Cluster load_cluster(const std::string& name_or_path, const std::string& flag = "--cluster");

}  // namespace dtsim::spec
