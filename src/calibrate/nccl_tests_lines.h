#pragma once
// Reading nccl-tests output line by line: launcher prefixes and quote marks stripped, and the
// table's columns -- its header, its rows -- told apart from the chatter around them. Internal to
// src/calibrate (calibrate/nccl_tests.h).
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "calibrate/nccl_tests.h"
#include "calibrate/nccl_tests_text.h"

namespace dtsim::calibrate::detail {

/// How many of each prefix were stripped.
struct Prefixes {
  int mpirun = 0, srun = 0, quote = 0;  ///< "[1,0]<stdout>:" (mpirun --tag-output), "12: " (srun -l), "> "
  void add(const Prefixes& p) { mpirun += p.mpirun, srun += p.srun, quote += p.quote; }
};

/// One line of the text.
struct Line {
  int number = 0;         ///< 1-based
  std::string_view body;  ///< without launcher prefixes, indentation and leading '#'
  bool hash = false;      ///< the line started with '#'
  Prefixes stripped;
};

/// Text copied from web pages made plain: a byte order mark and no-break spaces (U+00A0) become as
/// many spaces, so columns and line numbers stay where they were.
[[nodiscard]] std::string plain(std::string text);
/// The lines of `text` (views into it), prefixes stripped.
[[nodiscard]] std::vector<Line> split_lines(std::string_view text);

/// The columns of a table.
struct Layout {
  bool redop = true, root = true, in_place = true;
  std::string wrong = "#wrong";  ///< or "error" (older format) or "wrong" (a lost '#')
  int line = 0;                  ///< the header's, or the first row's without one
  bool from_header = false;
};

/// "size count type redop root time algbw busbw #wrong ..." for the layout.
[[nodiscard]] std::string column_names(const Layout& l);

/// A line is taken for a table row when it starts with a number and at least half its words are
/// numbers (or N/A): "1. Run the test" and "2024-05-01 12:00" stay chatter, "8 2 float sum" does not.
[[nodiscard]] bool looks_like_row(const Words& w);
/// One row in layout `l`; throws SpecError(at, "expected ..., got ...") for a malformed one.
[[nodiscard]] NcclTestsRow read_row(const Words& w, const Layout& l, int line, const std::string& at);
/// The columns of a headerless table from its first row; throws SpecError(at) for a column count
/// no nccl-tests version prints.
[[nodiscard]] Layout layout_of_row(const Words& w, int line, const std::string& at);
/// The columns a header line ("size count ...") announces; throws SpecError(at) if nccl-tests
/// prints no such header.
[[nodiscard]] Layout header_layout(const Words& w, int line, const std::string& at);

}  // namespace dtsim::calibrate::detail
