#pragma once
// Shared test helpers: fixture paths and running the real dtsim binary.
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include <unistd.h>

namespace dtsim::test {

/// Path of a file in the source tree.
inline std::string source_path(const std::string& rel) { return std::string(DTSIM_SOURCE_DIR) + "/" + rel; }

/// A JSON object from "key": value lines, leaving out the line of key `drop` and appending
/// `extra` (more "key": value text) -- how tests vary one field of a valid spec.
template <std::size_t N>
std::string json_object(const std::string (&lines)[N], const std::string& extra, const std::string& drop) {
  std::string body;
  for (const std::string& k : lines) {
    if (!drop.empty() && k.find("\"" + drop + "\"") == 0) continue;
    body += (body.empty() ? "" : ",\n") + k;
  }
  if (!extra.empty()) body += ",\n" + extra;
  return "{\n" + body + "\n}";
}

/// `text` with the first `from` replaced by `to`; throws std::logic_error when `from` is absent
/// (a test whose edit no longer applies must fail loudly, not test the unedited input).
inline std::string replaced(std::string text, const std::string& from, const std::string& to) {
  auto at = text.find(from);
  if (at == std::string::npos) throw std::logic_error("test input lacks \"" + from + "\"");
  return text.replace(at, from.size(), to);
}

/// Whole contents of a file; throws std::runtime_error when it cannot be read.
inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// A scratch folder for one test process, removed with everything in it at scope exit.
struct TempDir {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("dtsim_test_" + std::to_string(getpid()));
  TempDir() { std::filesystem::create_directories(dir); }
  ~TempDir() { std::filesystem::remove_all(dir); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  /// Writes `text` to dir/name and returns the path.
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};

/// Result of running the dtsim binary.
struct Run {
  int status = -1;
  std::string out;  ///< stdout
  std::string err;  ///< stderr
};

/// Runs `build/dtsim ARGS` through the shell (in directory `cwd` when given), capturing stdout
/// and stderr separately.
inline Run run_dtsim(const std::string& args, const std::string& cwd = "") {
  char err_name[] = "/tmp/dtsim_test_stderr_XXXXXX";
  int fd = mkstemp(err_name);
  if (fd < 0) throw std::runtime_error("mkstemp failed");
  close(fd);
  std::string err_file = err_name;
  std::string cmd = (cwd.empty() ? "" : "cd '" + cwd + "' && ") + "DTSIM_DATA_DIR='" + DTSIM_SOURCE_DIR + "' '" +
                    DTSIM_BINARY + "' " + args + " 2>" + err_file;
  Run r;
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  std::size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  FILE* e = fopen(err_file.c_str(), "r");
  while (e && (n = fread(buf.data(), 1, buf.size(), e)) > 0) r.err.append(buf.data(), n);
  if (e) fclose(e);
  std::remove(err_file.c_str());
  return r;
}

}  // namespace dtsim::test
