#pragma once
// Plain-text tables with aligned columns, for the readable (non --json) outputs.
#include <string>
#include <vector>

namespace dtsim::report {

/// Rows of cells; the first row is the header. Numbers right-aligned, text left-aligned.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  /// Renders with two spaces between columns and a rule under the header.
  [[nodiscard]] std::string render() const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

/// Formats `v` with `digits` decimals.
[[nodiscard]] std::string fixed(double v, int digits);
/// Formats a count with an SI suffix: 174.6B, 70.55B, 124.4M (4 significant digits).
[[nodiscard]] std::string si_count(double v);
/// Formats bytes as GiB with two decimals ("45.56 GiB").
[[nodiscard]] std::string gib_text(double bytes);

}  // namespace dtsim::report
