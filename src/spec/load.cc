#include "spec/load.h"

#include <algorithm>
#include <dlfcn.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <filesystem>
#include <vector>

#include "core/errors.h"
#include "core/text.h"
#include "spec/json_reader.h"

namespace dtsim::spec {

std::string data_dir() {
  const char* env = std::getenv("DTSIM_DATA_DIR");
  if (env != nullptr && *env != '\0') return env;
  // The source tree it was built from; else an installed tree: share/dtsim beside the bin/ or
  // lib/ holding this code (the binary or libdtsim.so, wherever the package put it), else the
  // install prefix it was configured with.
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(fs::path(DTSIM_DATA_DIR) / "models", ec)) return DTSIM_DATA_DIR;
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&data_dir), &self) != 0 && self.dli_fname != nullptr) {
    fs::path near = fs::path(self.dli_fname).parent_path().parent_path() / "share" / "dtsim";
    if (fs::is_directory(near / "models", ec)) return near.string();
  }
  return DTSIM_INSTALL_DATA_DIR;
}

std::string read_spec_text(const std::string& path) { return read_text_file(path); }

void require_path(const std::string& where, const std::string& path) {
  if (std::string problem = path_problem(path); !problem.empty()) throw SpecError(where, problem);
}

void write_text_file(const std::string& flag, const std::string& path, const std::string& text) {
  require_path(flag, path);
  std::ofstream out(path, std::ios::binary);
  if (!(out << text) || !out.flush())
    throw SpecError(flag, "expected a writable file path, got \"" + printable(path) + "\" (" + std::strerror(errno) + ")");
}

std::vector<std::string> preset_names(const std::string& subdir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(data_dir()) / subdir, ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string resolve_preset(const std::string& subdir, const std::string& name_or_path, const std::string& flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (name_or_path.empty()) throw SpecError(flag, "expected a preset name or a file path, got \"\"");
  require_path(flag, name_or_path);
  if (fs::is_regular_file(name_or_path, ec)) return name_or_path;
  // A directory holding config.json (a Hugging Face checkout) works too.
  if (fs::is_directory(name_or_path, ec) && fs::is_regular_file(fs::path(name_or_path) / "config.json", ec))
    return (fs::path(name_or_path) / "config.json").string();
  bool looks_like_path = name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".json");
  fs::path preset = fs::path(data_dir()) / subdir / (name_or_path + ".json");
  if (!looks_like_path && fs::is_regular_file(preset, ec)) return preset.string();
  if (looks_like_path) throw SpecError(flag, "expected an existing file, got \"" + name_or_path + "\" (no such file)");
  std::vector<std::string> names = preset_names(subdir);  // sorted: the same message on every filesystem
  std::string known;
  for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
  throw SpecError(flag, "expected a preset name (" + (known.empty() ? "none found in " + (fs::path(data_dir()) / subdir).string() : known) +
                            ") or a file path, got \"" + name_or_path + "\"");
}

}  // namespace dtsim::spec
