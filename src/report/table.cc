#include "report/table.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace dtsim::report {
namespace {

bool numeric(const std::string& s) {
  if (s.empty()) return false;
  char c = s[0];
  return std::isdigit(static_cast<unsigned char>(c)) || ((c == '-' || c == '+') && s.size() > 1);
}

}  // namespace

std::string Table::render() const {
  std::vector<std::size_t> width;
  for (const auto& row : rows_) {
    if (width.size() < row.size()) width.resize(row.size(), 0);
    for (std::size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (std::size_t r = 0; r < rows_.size(); ++r) {
    std::string line;
    for (std::size_t i = 0; i < rows_[r].size(); ++i) {
      const std::string& cell = rows_[r][i];
      std::string pad(width[i] - cell.size(), ' ');
      bool right = r > 0 && numeric(cell);
      line += (i ? "  " : "") + (right ? pad + cell : cell + (i + 1 < rows_[r].size() ? pad : ""));
    }
    out += line + "\n";
    if (r == 0) {
      std::size_t total = 0;
      for (std::size_t w : width) total += w;
      out += std::string(total + 2 * (width.empty() ? 0 : width.size() - 1), '-') + "\n";
    }
  }
  return out;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string si_count(double v) {
  const char* suffix[] = {"", "K", "M", "B", "T"};
  int i = 0;
  while (std::fabs(v) >= 1000 && i < 4) { v /= 1000; ++i; }
  int digits = std::fabs(v) >= 100 ? 1 : std::fabs(v) >= 10 ? 2 : 3;
  if (i == 0) digits = 0;
  return fixed(v, digits) + suffix[i];
}

std::string gib_text(double bytes) { return fixed(bytes / 1073741824.0, 2) + " GiB"; }

}  // namespace dtsim::report
