#include "calibrate/nccl_tests.h"

// The entry points. The importer's parts are in nccl_tests_*.{h,cc} (the header lists them).

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "calibrate/nccl_tests_facts.h"
#include "calibrate/nccl_tests_sweep.h"
#include "calibrate/nccl_tests_tables.h"
#include "core/errors.h"
#include "core/text.h"

namespace dtsim::calibrate {
namespace {

void check_hints(const NcclTestsHints& hints) {
  if (hints.ranks && *hints.ranks < 1)
    throw SpecError("--ranks", "expected an integer >= 1, got " + detail::str(*hints.ranks));
  if (hints.gpus_per_node && *hints.gpus_per_node < 1)
    throw SpecError("--gpus-per-node", "expected an integer >= 1, got " + detail::str(*hints.gpus_per_node));
}

std::string read_text(const std::string& path) {
  if (std::string problem = path_problem(path); !problem.empty()) throw SpecError("--nccl-tests", problem);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw SpecError("--nccl-tests", "cannot read " + path + " (a directory)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SpecError("--nccl-tests", "cannot read " + path + " (" + std::strerror(errno) + ")");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw SpecError("--nccl-tests", "cannot read " + path + " (read error)");
  return text.str();
}

}  // namespace

NcclTestsLog parse_nccl_tests(const std::string& text, const std::string& file, const NcclTestsHints& hints) {
  check_hints(hints);
  std::string clean = detail::plain(text);
  std::vector<detail::Line> lines = detail::split_lines(clean);
  detail::Table t{.scan = detail::scan(lines, file)};
  t.rows = detail::sweep(t.scan, t.row_notes);
  NcclTestsLog log = detail::decide_log(t, hints);
  log.first_line = 1;
  log.last_line = static_cast<int>(lines.size());
  return log;
}

NcclTestsLog load_nccl_tests(const std::string& path, const NcclTestsHints& hints) {
  return parse_nccl_tests(read_text(path), path, hints);
}

std::vector<NcclTestsLog> parse_nccl_tests_all(const std::string& text, const std::string& file,
                                               const NcclTestsHints& hints) {
  check_hints(hints);
  std::string clean = detail::plain(text);
  return detail::parse_tables(detail::split_lines(clean), file, hints);
}

std::vector<NcclTestsLog> load_nccl_tests_all(const std::string& path, const NcclTestsHints& hints) {
  return parse_nccl_tests_all(read_text(path), path, hints);
}

}  // namespace dtsim::calibrate
