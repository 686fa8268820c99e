#include "calibrate/nccl_tests_lines.h"

#include <algorithm>

#include "calibrate/nccl_tests_vocab.h"
#include "core/errors.h"

namespace dtsim::calibrate::detail {
namespace {

// ------------------------------------------------------------------------------------- prefixes

// Length of an mpirun --tag-output prefix "[1,0]<stdout>:" at the start of `s`, or 0.
std::size_t mpirun_tag(std::string_view s) {
  if (!s.starts_with('[')) return 0;
  std::size_t i = skip_digits(s, 1);
  if (i == 1 || i >= s.size() || s[i] != ',') return 0;
  std::size_t j = skip_digits(s, i + 1);
  if (j == i + 1 || s.substr(j, 2) != "]<") return 0;
  std::size_t close = s.find(">:", j + 2);
  return close == npos || close > j + 10 ? 0 : close + 2;
}

// Length of an srun -l prefix "12: " at the start of `s`, or 0.
std::size_t srun_label(std::string_view s) {
  std::size_t i = skip_digits(s, 0);
  if (i == 0 || i >= s.size() || s[i] != ':') return 0;
  return i + 1 == s.size() ? i + 1 : is_space(s[i + 1]) ? i + 2 : 0;
}

std::string_view strip_prefixes(std::string_view s, Prefixes& seen) {
  for (;;) {
    s = trim(s);
    if (std::size_t n = mpirun_tag(s)) {
      s.remove_prefix(n), ++seen.mpirun;
    } else if (std::size_t m = srun_label(s)) {
      s.remove_prefix(m), ++seen.srun;
    } else if (s.starts_with('>')) {
      s.remove_prefix(1), ++seen.quote;
    } else {
      return s;
    }
  }
}

// -------------------------------------------------------------------------------------- columns

std::size_t columns(const Layout& l) { return 3 + l.redop + l.root + (l.in_place ? 8 : 4); }

std::int64_t need_int(std::string_view t, const char* what, std::int64_t min, const std::string& at) {
  std::optional<std::int64_t> v = to_int(t);
  if (!v || *v < min) throw SpecError(at, std::string("expected ") + what + ", got " + shown(t));
  return *v;
}

double need_real(std::string_view t, const std::string& what, bool allow_zero, const std::string& at) {
  std::optional<double> v = to_real(t);
  if (!v || *v < 0 || (*v == 0 && !allow_zero)) throw SpecError(at, "expected " + what + ", got " + shown(t));
  return *v;
}

NcclTiming read_timing(const Words& w, std::size_t i, const std::string& which, const Layout& l, bool empty,
                       const std::string& at) {
  NcclTiming t;
  t.time_us = need_real(w[i], "an " + which + " time in us (a number > 0)", empty, at);
  t.algbw_GBps = need_real(w[i + 1], "an " + which + " algbw in GB/s (a number >= 0)", true, at);
  t.busbw_GBps = need_real(w[i + 2], "an " + which + " busbw in GB/s (a number >= 0)", true, at);
  if (w[i + 3] != "N/A" && !to_real(w[i + 3]))
    throw SpecError(at, "expected an " + which + " " + l.wrong + " (a number or N/A), got " + shown(w[i + 3]));
  return t;
}

bool is_identifier(std::string_view t) {
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  return !t.empty() && alpha(t[0]) && std::all_of(t.begin(), t.end(), [&](char c) { return alpha(c) || is_digit(c); });
}

}  // namespace

std::string plain(std::string text) {
  if (text.starts_with("\xEF\xBB\xBF")) text.replace(0, 3, "   ");
  for (std::size_t at = 0; (at = text.find("\xC2\xA0", at)) != npos;) text.replace(at, 2, "  ");
  return text;
}

std::vector<Line> split_lines(std::string_view text) {
  std::vector<Line> out;
  for (std::size_t pos = 0; pos < text.size();) {
    std::size_t end = std::min(text.find('\n', pos), text.size());
    Line l{.number = static_cast<int>(out.size()) + 1};
    l.body = strip_prefixes(text.substr(pos, end - pos), l.stripped);
    if (l.body.starts_with('#')) {
      l.hash = true;
      l.body = trim(l.body.substr(std::min(l.body.find_first_not_of('#'), l.body.size())));
    }
    out.push_back(l);
    pos = end + 1;
  }
  return out;
}

std::string column_names(const Layout& l) {
  std::string timing = " time algbw busbw " + l.wrong;
  return std::string("size count type") + (l.redop ? " redop" : "") + (l.root ? " root" : "") + timing +
         (l.in_place ? timing : "");
}

bool looks_like_row(const Words& w) {
  if (!looks_numeric(w[0])) return false;
  auto numeric = std::count_if(w.begin(), w.end(), [](std::string_view t) { return looks_numeric(t) || t == "N/A"; });
  return 2 * static_cast<std::size_t>(numeric) >= w.size();
}

NcclTestsRow read_row(const Words& w, const Layout& l, int line, const std::string& at) {
  if (w.size() != columns(l))
    throw SpecError(at, "expected " + str(static_cast<std::int64_t>(columns(l))) + " columns (" + column_names(l) +
                            ") as " + (l.from_header ? "in the header on line " : "on line ") + str(l.line) + ", got " +
                            str(static_cast<std::int64_t>(w.size())));
  NcclTestsRow r{.line = line};
  std::size_t i = 0;
  r.size_bytes = need_int(w[i++], "a size in bytes (an integer >= 0)", 0, at);
  r.count = need_int(w[i++], "a count of elements (an integer >= 0)", 0, at);
  r.type = std::string(w[i++]);
  if (!type_bytes(r.type))
    throw SpecError(at,
                    "expected a data type (int8, uint8, int32, uint32, int64, uint64, half, float, double, "
                    "bfloat16, f8e4m3, f8e5m2), got " +
                        shown(r.type));
  if (l.redop && !is_identifier(w[i]))
    throw SpecError(at, "expected a reduction op (sum, prod, max, min, avg, mulsum or none), got " + shown(w[i]));
  if (l.redop) r.redop = std::string(w[i++]);
  if (l.root) r.root = need_int(w[i++], "a root rank (an integer >= -1)", -1, at);
  r.out_of_place = read_timing(w, i, "out-of-place", l, r.size_bytes == 0, at);
  if (l.in_place) r.in_place = read_timing(w, i + 4, "in-place", l, r.size_bytes == 0, at);
  return r;
}

// 13 values (current format), 12 (older, no root, or an old broadcast's root in place of redop),
// 11 (no redop either); 9, 8, 7 without in-place.
Layout layout_of_row(const Words& w, int line, const std::string& at) {
  std::size_t n = w.size();
  if (n < 7 || n == 10 || n > 13)
    throw SpecError(at, "expected an nccl-tests row (" + column_names(Layout{}) +
                            ": 13 columns, or 12 in the older format without root), got " +
                            str(static_cast<std::int64_t>(n)) + (n == 1 ? " column" : " columns"));
  std::size_t middle = n - 3 - (n >= 11 ? 8 : 4);
  bool numeric = middle == 1 && looks_numeric(w[3]);
  Layout l{.redop = middle == 2 || (middle == 1 && !numeric),
           .root = middle == 2 || numeric,
           .in_place = n >= 11,
           .line = line};
  if (!l.root) l.wrong = "error";
  return l;
}

Layout header_layout(const Words& w, int line, const std::string& at) {
  auto has = [&](std::string_view t) { return std::find(w.begin(), w.end(), t) != w.end(); };
  Layout l{.redop = has("redop"),
           .root = has("root"),
           .in_place = std::count(w.begin(), w.end(), "time") >= 2,
           .line = line,
           .from_header = true};
  for (std::string_view t : {"#wrong", "wrong", "error"})
    if (has(t)) l.wrong = std::string(t);
  std::string got;
  for (std::string_view t : w) got += (got.empty() ? "" : " ") + std::string(t);
  if (got != column_names(l))
    throw SpecError(at, "expected an nccl-tests table header (" + column_names(l) + "), got " + shown(got));
  return l;
}

}  // namespace dtsim::calibrate::detail
