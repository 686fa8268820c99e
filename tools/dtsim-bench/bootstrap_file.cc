#include "bootstrap_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <unistd.h>

namespace dtsim::bench {
namespace {

constexpr const char* kHeader = "dtsim-bench-nccl-bootstrap/1";

std::string to_hex(const std::vector<unsigned char>& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += digits[b >> 4];
    out += digits[b & 15];
  }
  return out;
}

std::optional<std::vector<unsigned char>> from_hex(const std::string& text) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  if (text.size() % 2 != 0) return std::nullopt;
  std::vector<unsigned char> out;
  for (std::size_t i = 0; i < text.size(); i += 2) {
    int hi = nibble(text[i]), lo = nibble(text[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<unsigned char>(hi * 16 + lo));
  }
  return out;
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string describe(const BootstrapRecord& r) {
  return "a file for " + std::to_string(r.nranks) + " ranks" + (r.job.empty() ? "" : " of job " + r.job);
}

}  // namespace

std::string bootstrap_job_tag(const EnvLookup& env) {
  std::optional<std::string> job = env("SLURM_JOB_ID");
  if (!job) return "";
  return *job + "." + env("SLURM_STEP_ID").value_or("0");
}

std::string format_bootstrap_record(const BootstrapRecord& r) {
  return std::string(kHeader) + "\nnranks " + std::to_string(r.nranks) + "\njob " + r.job + "\nid " + to_hex(r.id) +
         "\n";
}

std::optional<BootstrapRecord> parse_bootstrap_record(const std::string& text) {
  std::istringstream in(text);
  std::string header, key, hex;
  BootstrapRecord r;
  if (!std::getline(in, header) || header != kHeader) return std::nullopt;
  if (!(in >> key >> r.nranks) || key != "nranks" || r.nranks < 1) return std::nullopt;
  std::string job_line;
  std::getline(in, job_line);  // the end of the nranks line
  if (!std::getline(in, job_line) || job_line.rfind("job ", 0) != 0) return std::nullopt;
  r.job = job_line.substr(4);
  if (!(in >> key >> hex) || key != "id") return std::nullopt;
  std::optional<std::vector<unsigned char>> id = from_hex(hex);
  if (!id || id->empty()) return std::nullopt;
  r.id = *id;
  return r;
}

void publish_bootstrap_record(const std::string& path, const BootstrapRecord& r) {
  // Beside the target so the rename stays within one filesystem (atomic there, NFS included).
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << format_bootstrap_record(r);
    out.flush();
    if (!out) throw std::runtime_error("--bootstrap-file: cannot write " + tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw std::runtime_error("--bootstrap-file: cannot rename " + tmp + " to " + path);
  }
}

BootstrapRecord wait_for_bootstrap_record(const std::string& path, int nranks, const std::string& job,
                                          std::chrono::milliseconds timeout, std::chrono::milliseconds poll) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string found = "no file";
  while (true) {
    if (std::optional<std::string> text = read_file(path)) {
      std::optional<BootstrapRecord> r = parse_bootstrap_record(*text);
      if (r && r->nranks == nranks && (job.empty() || r->job.empty() || r->job == job)) return *r;
      found = r ? describe(*r) + " (left over from another run?)" : "a file that is not a dtsim-bench bootstrap record";
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(poll);
  }
  auto seconds = std::chrono::duration<double>(timeout).count();
  std::ostringstream s;
  s << "--bootstrap-file: expected rank 0 to write " << path << " for " << nranks << " ranks"
    << (job.empty() ? "" : " of job " + job) << " within " << seconds << " s, got " << found;
  throw BootstrapError(s.str());
}

void remove_bootstrap_record(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove(path, ec);
}

}  // namespace dtsim::bench
