#include "calibrate/nccl_tests_sweep.h"

#include <algorithm>
#include <map>

#include "core/errors.h"

namespace dtsim::calibrate::detail {
namespace {

using spec::Collective;

void check_same_sweep(const NcclTestsRow& first, const NcclTestsRow& r, const std::string& file) {
  const char* tail = ": a second sweep starts here: split the file";
  if (r.type != first.type)
    throw SpecError(where(file, r.line), "expected data type " + first.type + " as on line " + str(first.line) +
                                             ", got " + shown(r.type) + tail);
  if (r.redop != first.redop)
    throw SpecError(where(file, r.line), "expected redop " + first.redop + " as on line " + str(first.line) + ", got " +
                                             shown(r.redop) + tail);
}

void note_sweep(const Scan& s, const std::vector<NcclTestsRow>& out, int repeats, int empty,
                std::vector<std::string>& notes) {
  const Layout& l = *s.first_layout;
  notes.push_back("rows " + str(static_cast<std::int64_t>(out.size())) + ": " + str(out.front().size_bytes) + " to " +
                  str(out.back().size_bytes) + " B, " + out.front().type +
                  (out.front().redop.empty() ? "" : " " + out.front().redop) + "; columns " + column_names(l) +
                  (l.from_header ? " (header on line " : " (no header; first row on line ") + str(l.line) + ")");
  if (repeats) notes.push_back("dropped " + str(repeats) + " repeated rows (identical to earlier ones)");
  if (empty) notes.push_back("dropped " + str(empty) + " rows of size 0 (too small to split across the ranks)");
}

// ------------------------------------------------------------------------------ the arithmetic

void read_multiple(Arithmetic& a, const NcclTestsRow& r, const std::string& file) {
  if (r.count == 0) return;
  std::string at = where(file, r.line), unit_text = "count x " + str(a.type_bytes) + " B (" + a.type + ")";
  if (r.count > r.size_bytes / a.type_bytes || r.size_bytes % (r.count * a.type_bytes) != 0)
    throw SpecError(at, "expected a size that is a whole multiple of " + unit_text + ", got " + str(r.size_bytes) +
                            " B for count " + str(r.count));
  std::int64_t m = r.size_bytes / (r.count * a.type_bytes);
  if (a.multiple && *a.multiple != m)
    throw SpecError(at, "expected size = " + str(*a.multiple) + " x " + unit_text + " as on line " +
                            str(a.multiple_line) + ", got " + str(m) + " x");
  if (!a.multiple) a.multiple = m, a.multiple_line = r.line;
}

void bound_ratio(Arithmetic& a, const NcclTiming& t) {
  constexpr double h = 0.005 + 1e-9;  // half the last digit: algbw and busbw print as %.2f
  if (t.algbw_GBps - h <= 0) return;
  a.ratio_lo = std::max(a.ratio_lo, (t.busbw_GBps - h) / (t.algbw_GBps + h));
  a.ratio_hi = std::min(a.ratio_hi, (t.busbw_GBps + h) / (t.algbw_GBps - h));
  ++a.timings;
}

// Rank counts n >= 2 whose bus factor scale*(n-1)/n (nccl-tests: 2(n-1)/n for all_reduce, (n-1)/n
// for all_gather, reduce_scatter, alltoall) lies within the ratio interval every row allows.
Range rank_range(const Arithmetic& a, double scale) {
  constexpr auto kMax = static_cast<double>(kMaxRanks);
  auto n_at = [&](double f) { return f >= scale ? INFINITY : 1.0 / (1.0 - f / scale); };
  double lo = std::max(2.0, std::ceil(n_at(a.ratio_lo) - 1e-9)), hi = std::floor(n_at(a.ratio_hi) + 1e-9);
  if (lo > kMax || a.ratio_lo > a.ratio_hi) return Range{.lo = 2, .hi = 1};
  return Range{
      .lo = static_cast<std::int64_t>(lo), .hi = hi > kMax ? 0 : static_cast<std::int64_t>(hi), .bounded = hi <= kMax};
}

// The busbw/algbw interval the printed digits allow, e.g. "in [1.9791, 1.9792] over 10 timings".
std::string ratio_text(const Arithmetic& a) {
  if (a.timings == 0) return "unknown (no algbw above 0.00)";
  return "in [" + fixed(a.ratio_lo, 4) + ", " + fixed(a.ratio_hi, 4) + "] over " + plural(a.timings, "timing");
}

}  // namespace

bool same_numbers(NcclTestsRow a, NcclTestsRow b) {
  a.line = b.line = 0;
  return a == b;
}

std::vector<NcclTestsRow> sweep(const Scan& s, std::vector<std::string>& notes) {
  const std::string none = "expected an nccl-tests table (rows of size count type redop ...), found none";
  if (s.rows.empty()) throw SpecError(s.at, none);
  std::map<std::int64_t, const NcclTestsRow*> seen;
  std::vector<NcclTestsRow> out;
  int repeats = 0, empty = 0;
  for (const NcclTestsRow& r : s.rows) {
    check_same_sweep(s.rows.front(), r, s.file);
    if (r.size_bytes == 0) {
      ++empty;
      continue;
    }
    auto [it, fresh] = seen.emplace(r.size_bytes, &r);
    if (!fresh && same_numbers(*it->second, r)) {
      ++repeats;
      continue;
    }
    if (!fresh)
      throw SpecError(where(s.file, r.line), "expected each size once, got " + str(r.size_bytes) +
                                                 " again (first on line " + str(it->second->line) +
                                                 ") with other numbers: a second sweep starts here: split the file");
    out.push_back(r);
  }
  if (out.empty()) throw SpecError(s.at, none + " but rows of size 0");
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.size_bytes < b.size_bytes; });
  note_sweep(s, out, repeats, empty, notes);
  return out;
}

Arithmetic arithmetic(const std::vector<NcclTestsRow>& rows, const std::string& file) {
  Arithmetic a{.type_bytes = *type_bytes(rows.front().type), .type = rows.front().type, .redop = rows.front().redop};
  for (const NcclTestsRow& r : rows) {
    if (r.root) a.rooted = a.rooted.value_or(false) || *r.root >= 0;
    read_multiple(a, r, file);
    bound_ratio(a, r.out_of_place);
    if (r.in_place) bound_ratio(a, *r.in_place);
  }
  return a;
}

std::optional<Range> arithmetic_ranks(Collective c, const Arithmetic& a) {
  if (per_rank_count(c) && a.multiple && *a.multiple >= 2) return Range{.lo = *a.multiple, .hi = *a.multiple};
  if (per_rank_count(c)) return rank_range(a, 1);
  if (c == Collective::all_reduce) return rank_range(a, 2);
  return std::nullopt;
}

std::string evidence(const Arithmetic& a) {
  std::string size = !a.multiple        ? "no row with count > 0"
                     : *a.multiple == 1 ? "size = count x " + str(a.type_bytes) + " B"
                                        : "size = " + str(*a.multiple) + " x count x " + str(a.type_bytes) + " B";
  std::string root = !a.rooted ? "" : *a.rooted ? ", root >= 0" : ", root -1";
  return size + (a.redop.empty() ? ", no redop column" : ", redop " + a.redop) + root + ", busbw/algbw " +
         ratio_text(a);
}

std::string ranks_text(Collective c, const Range& r, const Arithmetic& a) {
  if (per_rank_count(c) && r.unique() && a.multiple)
    return "size/(count x " + str(a.type_bytes) + " B) = " + str(r.lo) + " (" + name(c) + " prints per-rank counts)";
  std::string f = c == Collective::all_reduce ? "busbw/algbw = 2(n-1)/n" : "busbw/algbw = (n-1)/n";
  std::string digits = " (the printed digits put busbw/algbw " + ratio_text(a) + ")";
  if (r.empty()) return f + ", which no n fits" + digits;
  if (r.unique()) return f + ", which only n = " + str(r.lo) + " fits" + digits;
  return f + ", which n = " + str(r.lo) + (r.bounded ? " to " + str(r.hi) : " or more") + " fit" + digits;
}

std::string misfit(Collective c, const Arithmetic& a) {
  if (a.multiple && per_rank_count(c) != (*a.multiple >= 2))
    return per_rank_count(c)
               ? "size = count x type size, but " + name(c) + " prints per-rank counts"
               : "size = " + str(*a.multiple) + " x count x type size, but " + name(c) + " prints whole counts";
  if (!a.redop.empty() && (a.redop == "none") != prints_none(c))
    return "redop " + a.redop + ", but " + name(c) + (prints_none(c) ? " prints none" : " prints its reduction op");
  if (a.rooted && *a.rooted != (c == Collective::broadcast))
    return *a.rooted ? "a root >= 0, which only broadcast prints" : "root -1, but broadcast prints its root";
  bool factor_one = c == Collective::broadcast || c == Collective::send_recv;
  if (factor_one && (a.ratio_lo > 1 || a.ratio_hi < 1))
    return "busbw/algbw " + ratio_text(a) + ", but " + name(c) + " has busbw = algbw";
  std::optional<Range> n = arithmetic_ranks(c, a);
  if (n && per_rank_count(c) && n->unique() && !rank_range(a, 1).contains(n->lo))
    return "busbw/algbw " + ratio_text(a) + ", not (n-1)/n for n = " + str(n->lo);
  if (n && n->empty()) return ranks_text(c, *n, a);
  return "";
}

}  // namespace dtsim::calibrate::detail
