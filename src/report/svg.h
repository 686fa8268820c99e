#pragma once
// Markup primitives for the HTML reports (report/html.h): XML escaping, locale-free numbers, SVG
// elements, axes, legends, the packing of one timeline row into few rectangles, and the frame of
// an HTML page. Every function is pure and returns text; nothing here knows about simulations or
// plans.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim::report::svg {

/// `s` as XML text or attribute value: made printable first (dtsim::printable: valid UTF-8, no
/// control bytes, which XML 1.0 forbids), then & < > " ' written as entities.
[[nodiscard]] std::string escape(std::string_view s);
/// `v` with 4 significant digits, as %.4g prints it but without the locale; "0" when not finite.
[[nodiscard]] std::string num(double v);
/// `v` with `digits` decimals without the locale, never "-0"; "0" when not finite.
[[nodiscard]] std::string fixed_text(double v, int digits);

/// Round values covering [lo, hi], about `target` of them, 1, 2 or 5 x 10^k apart (at most 100).
[[nodiscard]] std::vector<double> ticks(double lo, double hi, int target);

/// Round values covering [lo, hi] (both > 0) on a log axis: 1, 2 and 5 x 10^k, or only the powers
/// of ten when that gives more than `target`.
[[nodiscard]] std::vector<double> log_ticks(double lo, double hi, int target);

/// A map from data [lo, hi] to pixels [p0, p1] (p0 > p1 for an upward y axis), linear or (`log`,
/// for positive data) logarithmic; an empty or non-finite range maps everything to the middle.
struct Scale {
  double lo = 0, hi = 1, p0 = 0, p1 = 1;
  bool log = false;
  [[nodiscard]] double operator()(double v) const;
  /// ticks() or log_ticks() of the range, about `target` of them.
  [[nodiscard]] std::vector<double> ticks(int target) const;
};

/// A scale for data in [lo, hi] padded by 6% on each side (around a single value: 5% of it), so no
/// point sits on a border; logarithmic when `log_if` > 1 and hi / lo exceeds it (the step times of a
/// plan can span 30x, and the configs that matter are the fast ones).
[[nodiscard]] Scale padded(double lo, double hi, double p0, double p1, double log_if = 0);

/// How a text element looks; names are trusted (written by the caller, never from input).
struct TextStyle {
  const char* anchor = "start";  ///< start | middle | end
  double size = 12;              ///< px
  const char* fill = "#1f2328";
  bool bold = false;
  const char* cls = "";          ///< class attribute, none when empty
  double rotate = 0;             ///< degrees about (x, y)
  bool halo = false;             ///< a white outline, to stay readable over points
};

/// Opens a standalone SVG document of `w` x `h` px whose <title> is `title` (escaped), on white.
[[nodiscard]] std::string open(double w, double h, std::string_view title);
/// Closes the document open() began.
[[nodiscard]] std::string close();
/// A filled rectangle (negative sizes drawn as 0); `tooltip` (escaped) becomes its <title>.
[[nodiscard]] std::string rect(double x, double y, double w, double h, std::string_view fill, std::string_view cls = {},
                               std::string_view tooltip = {}, double opacity = 1);
/// `raw` (escaped) at (x, y).
[[nodiscard]] std::string text(double x, double y, std::string_view raw, const TextStyle& style = {});
/// A straight line; `dash` is a stroke-dasharray, none when empty.
[[nodiscard]] std::string line(double x1, double y1, double x2, double y2, std::string_view stroke, double width = 1,
                               std::string_view dash = {});
/// A circle; `stroke` none when empty; `tooltip` (escaped) becomes its <title>.
[[nodiscard]] std::string circle(double cx, double cy, double r, std::string_view fill, std::string_view cls = {},
                                 std::string_view tooltip = {}, std::string_view stroke = {});
/// An open polyline through `xy` (x0, y0, x1, y1, ...).
[[nodiscard]] std::string polyline(const std::vector<double>& xy, std::string_view stroke, double width);

/// One entry of a legend: a swatch of `colour` and `label`.
struct LegendEntry {
  std::string colour;
  std::string label;
};
/// Entries in `columns` columns `column_px` apart, rows 20 px apart, the first baseline at `y`;
/// each swatch is a rect of class "legend".
[[nodiscard]] std::string legend(double x, double y, const std::vector<LegendEntry>& entries, std::size_t columns,
                                 double column_px);

/// Vertical grid lines from `y_top` to `y_bottom` at the ticks of `s`, their labels and `label`
/// below `y_bottom`.
[[nodiscard]] std::string x_axis(const Scale& s, double y_top, double y_bottom, std::string_view label);
/// Horizontal grid lines from `x_left` to `x_right` at the ticks of `s`, their labels and `label`
/// (rotated) left of `x_left`.
[[nodiscard]] std::string y_axis(const Scale& s, double x_left, double x_right, std::string_view label);

/// Most kinds a timeline row may use.
inline constexpr std::size_t kMaxKinds = 16;
/// One interval of a timeline row in px, of kind `kind` (< kMaxKinds); `ref` is the caller's.
struct Item {
  double x0 = 0, x1 = 0;
  int kind = 0;
  std::int32_t ref = -1;
};
/// Consecutive items drawn together: `count` of them, busy px by kind, `kind` the busiest kind
/// and `ref` the first item's.
struct Run {
  double x0 = 0, x1 = 0;
  int kind = 0;
  std::int32_t ref = -1;
  std::size_t count = 0;
  std::array<double, kMaxKinds> busy{};
  /// Busy px of every kind.
  [[nodiscard]] double busy_total() const;
  /// Busy px over the run's width: 1 for one item, less when merged items left gaps.
  [[nodiscard]] double busy_share() const;
};
/// Packs `items` (in x order) into runs: an item 1 px wide or more is its own run; a narrower one
/// joins the run before it when the gap is under `gap_px`, unless that run is of another kind and
/// already wider than `phase_px` (so a phase of one kind, like a pipeline's warm-up, keeps its own
/// run). A row of any number of sub-pixel tasks thus costs O(width / gap_px + wide items) runs.
[[nodiscard]] std::vector<Run> pack_row(const std::vector<Item>& items, double gap_px = 3, double phase_px = 2);

/// The start of an HTML page (polyglot: also well-formed XML) titled `title` (escaped) with the
/// style sheet `css` inline and `title` as its <h1>.
[[nodiscard]] std::string page_open(std::string_view title, std::string_view css);
/// Closes the page page_open() began.
[[nodiscard]] std::string page_close();
/// <tag class="cls">raw</tag> with `raw` escaped; no class attribute when `cls` is empty.
[[nodiscard]] std::string element(std::string_view tag, std::string_view raw, std::string_view cls = {});
/// A table row of `tag` cells (th or td), the cell at `left` (if any) of class "l".
[[nodiscard]] std::string table_row(const std::vector<std::string>& cells, std::string_view tag,
                                    std::size_t left, std::string_view row_class = {});

}  // namespace dtsim::report::svg
