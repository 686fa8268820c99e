#include "report/svg.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "core/text.h"

namespace dtsim::report::svg {
namespace {

// std::to_chars: no locale, unlike printf.
std::string chars(double v, std::chars_format f, int precision) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, f, precision);
  return ec == std::errc() ? std::string(buf, end) : std::string("0");
}

// A coordinate in px: two decimals are finer than any screen.
std::string px(double v) { return fixed_text(v, 2); }

std::string attr(const char* name, std::string_view value) {
  return std::string(" ") + name + "=\"" + escape(value) + "\"";
}

std::string tooltip_tail(std::string_view tag, std::string_view tooltip) {
  if (tooltip.empty()) return "/>";
  return "><title>" + escape(tooltip) + "</title></" + std::string(tag) + ">";
}

}  // namespace

std::string escape(std::string_view s) {
  std::string in = printable(s), out;
  out.reserve(in.size());
  for (char c : in) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string num(double v) {
  if (!std::isfinite(v) || v == 0) return "0";
  return chars(v, std::chars_format::general, 4);
}

std::string fixed_text(double v, int digits) {
  if (!std::isfinite(v)) return "0";
  std::string s = chars(v, std::chars_format::fixed, digits);
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

std::vector<double> ticks(double lo, double hi, int target) {
  if (!std::isfinite(lo) || !std::isfinite(hi) || !(hi > lo)) return {std::isfinite(lo) ? lo : 0.0};
  double raw = (hi - lo) / std::max(target, 1);
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double norm = raw / mag;
  double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
  double first = std::ceil(lo / step - 1e-9) * step;
  std::vector<double> out;
  for (int k = 0; k < 100; ++k) {
    double v = first + k * step;  // from the first tick each time: no drift
    if (v > hi + step * 1e-9) break;
    out.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  }
  return out;
}

std::vector<double> log_ticks(double lo, double hi, int target) {
  if (!(lo > 0) || !std::isfinite(hi) || !(hi > lo)) return ticks(lo, hi, target);
  std::vector<double> all, decades;
  for (double k = std::floor(std::log10(lo)); k <= std::ceil(std::log10(hi)) && all.size() < 300; ++k) {
    for (double m : {1.0, 2.0, 5.0}) {
      double v = m * std::pow(10.0, k);
      if (v < lo * (1 - 1e-12) || v > hi * (1 + 1e-12)) continue;
      all.push_back(v);
      if (m == 1) decades.push_back(v);
    }
  }
  return static_cast<int>(all.size()) <= target || decades.size() < 2 ? all : decades;
}

double Scale::operator()(double v) const {
  double a = log ? std::log10(lo) : lo, b = log ? std::log10(hi) : hi, x = log ? std::log10(v) : v;
  double span = b - a;
  if (!std::isfinite(span) || !(span > 0) || !std::isfinite(x)) return (p0 + p1) / 2;
  return p0 + (x - a) / span * (p1 - p0);
}

std::vector<double> Scale::ticks(int target) const {
  return log ? log_ticks(lo, hi, target) : svg::ticks(lo, hi, target);
}

Scale padded(double lo, double hi, double p0, double p1, double log_if) {
  if (log_if > 1 && lo > 0 && hi / lo > log_if) {
    double pad = std::pow(hi / lo, 0.06);
    return {lo / pad, hi * pad, p0, p1, true};
  }
  double pad = hi > lo ? (hi - lo) * 0.06 : std::max(std::fabs(hi) * 0.05, 1e-6);
  return {lo - pad, hi + pad, p0, p1};
}

std::string open(double w, double h, std::string_view title) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + px(w) + "\" height=\"" + px(h) + "\" viewBox=\"0 0 " +
         px(w) + " " + px(h) + "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\" role=\"img\"><title>" +
         escape(title) + "</title>" + rect(0, 0, w, h, "#ffffff");
}

std::string close() { return "</svg>\n"; }

std::string rect(double x, double y, double w, double h, std::string_view fill, std::string_view cls,
                 std::string_view tooltip, double opacity) {
  std::string out = "<rect x=\"" + px(x) + "\" y=\"" + px(y) + "\" width=\"" + px(std::max(w, 0.0)) + "\" height=\"" +
                    px(std::max(h, 0.0)) + "\"" + attr("fill", fill);
  if (!cls.empty()) out += attr("class", cls);
  if (opacity < 1) out += " fill-opacity=\"" + fixed_text(std::max(opacity, 0.0), 2) + "\"";
  return out + tooltip_tail("rect", tooltip);
}

std::string text(double x, double y, std::string_view raw, const TextStyle& s) {
  std::string out = "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\"";
  if (std::string_view(s.anchor) != "start") out += attr("text-anchor", s.anchor);
  if (s.size != 12) out += " font-size=\"" + num(s.size) + "\"";
  out += attr("fill", s.fill);
  if (s.bold) out += " font-weight=\"bold\"";
  if (*s.cls) out += attr("class", s.cls);
  if (s.halo) out += " stroke=\"#ffffff\" stroke-width=\"4\" stroke-linejoin=\"round\" paint-order=\"stroke\"";
  if (s.rotate != 0) out += " transform=\"rotate(" + num(s.rotate) + " " + px(x) + " " + px(y) + ")\"";
  return out + ">" + escape(raw) + "</text>";
}

std::string line(double x1, double y1, double x2, double y2, std::string_view stroke, double width,
                 std::string_view dash) {
  std::string out = "<line x1=\"" + px(x1) + "\" y1=\"" + px(y1) + "\" x2=\"" + px(x2) + "\" y2=\"" + px(y2) + "\"" +
                    attr("stroke", stroke) + " stroke-width=\"" + num(width) + "\"";
  if (!dash.empty()) out += attr("stroke-dasharray", dash);
  return out + "/>";
}

std::string circle(double cx, double cy, double r, std::string_view fill, std::string_view cls,
                   std::string_view tooltip, std::string_view stroke) {
  std::string out = "<circle cx=\"" + px(cx) + "\" cy=\"" + px(cy) + "\" r=\"" + px(r) + "\"" + attr("fill", fill);
  if (!cls.empty()) out += attr("class", cls);
  if (!stroke.empty()) out += attr("stroke", stroke) + " stroke-width=\"1.5\"";
  return out + tooltip_tail("circle", tooltip);
}

std::string polyline(const std::vector<double>& xy, std::string_view stroke, double width) {
  std::string points;
  for (std::size_t i = 0; i + 1 < xy.size(); i += 2) points += (i ? " " : "") + px(xy[i]) + "," + px(xy[i + 1]);
  return "<polyline points=\"" + points + "\" fill=\"none\"" + attr("stroke", stroke) + " stroke-width=\"" +
         num(width) + "\"/>";
}

std::string legend(double x, double y, const std::vector<LegendEntry>& entries, std::size_t columns, double column_px) {
  std::string out;
  columns = std::max<std::size_t>(columns, 1);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    double ex = x + static_cast<double>(i % columns) * column_px, ey = y + static_cast<double>(i / columns) * 20;
    out += rect(ex, ey - 10, 12, 12, entries[i].colour, "legend") + text(ex + 18, ey, entries[i].label);
  }
  return out;
}

std::string x_axis(const Scale& s, double y_top, double y_bottom, std::string_view label) {
  std::string out = line(std::min(s.p0, s.p1), y_bottom, std::max(s.p0, s.p1), y_bottom, "#8c959f");
  for (double t : s.ticks(8)) {
    double x = s(t);
    out += line(x, y_top, x, y_bottom, "#e5e7eb") + text(x, y_bottom + 15, num(t), {.anchor = "middle", .size = 11});
  }
  return out + text((s.p0 + s.p1) / 2, y_bottom + 32, label, {.anchor = "middle", .fill = "#57606a"});
}

std::string y_axis(const Scale& s, double x_left, double x_right, std::string_view label) {
  std::string out = line(x_left, std::min(s.p0, s.p1), x_left, std::max(s.p0, s.p1), "#8c959f");
  for (double t : s.ticks(6)) {
    double y = s(t);
    out += line(x_left, y, x_right, y, "#e5e7eb") + text(x_left - 6, y + 4, num(t), {.anchor = "end", .size = 11});
  }
  double mid = (s.p0 + s.p1) / 2;
  return out + text(x_left - 52, mid, label, {.anchor = "middle", .fill = "#57606a", .rotate = -90});
}

double Run::busy_total() const {
  double total = 0;
  for (double b : busy) total += b;
  return total;
}

double Run::busy_share() const {
  double w = x1 - x0;
  return w > 0 ? std::min(busy_total() / w, 1.0) : 1.0;
}

std::vector<Run> pack_row(const std::vector<Item>& items, double gap_px, double phase_px) {
  std::vector<Run> out;
  Run cur;
  bool pure = true;  // every item of `cur` has the first one's kind
  auto flush = [&] {
    if (cur.count == 0) return;
    cur.kind = static_cast<int>(std::max_element(cur.busy.begin(), cur.busy.end()) - cur.busy.begin());
    out.push_back(cur);
    cur = Run{};
  };
  for (const Item& it : items) {
    double w = std::max(it.x1 - it.x0, 0.0);
    bool joins = cur.count > 0 && w < 1 && it.x0 - cur.x1 < gap_px &&
                 !(pure && it.kind != cur.kind && cur.x1 - cur.x0 > phase_px);
    if (!joins) {
      flush();
      cur = Run{.x0 = it.x0, .x1 = it.x1, .kind = it.kind, .ref = it.ref};
      pure = true;
    }
    pure = pure && it.kind == cur.kind;
    cur.x1 = std::max(cur.x1, it.x1);
    cur.busy[static_cast<std::size_t>(it.kind)] += w;
    ++cur.count;
    if (w >= 1) flush();  // a wide item stands alone
  }
  flush();
  return out;
}

std::string page_open(std::string_view title, std::string_view css) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/><title>" +
         escape(title) + "</title><style>" + std::string(css) + "</style></head><body>" + element("h1", title);
}

std::string page_close() { return "</body></html>\n"; }

std::string element(std::string_view tag, std::string_view raw, std::string_view cls) {
  std::string t(tag);
  return "<" + t + (cls.empty() ? "" : attr("class", cls)) + ">" + escape(raw) + "</" + t + ">";
}

std::string table_row(const std::vector<std::string>& cells, std::string_view tag, std::size_t left,
                      std::string_view row_class) {
  std::string out = "<tr" + (row_class.empty() ? std::string() : attr("class", row_class)) + ">";
  for (std::size_t i = 0; i < cells.size(); ++i) out += element(tag, cells[i], i == left ? "l" : "");
  return out + "</tr>";
}

}  // namespace dtsim::report::svg
