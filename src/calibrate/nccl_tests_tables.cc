#include "calibrate/nccl_tests_tables.h"

#include <algorithm>
#include <climits>
#include <stdexcept>

#include "calibrate/nccl_tests_facts.h"
#include "calibrate/nccl_tests_sweep.h"

namespace dtsim::calibrate::detail {
namespace {

struct Read {  // a table as read, with its lines and what the rest of the file adds to its notes
  Table table;
  Section lines;
  std::vector<std::string> notes;
};

std::string range(Section s) { return str(s.first) + "-" + str(s.last); }
std::string lines_text(Section s) { return s.first == s.last ? "line " + str(s.first) : "lines " + range(s); }

std::string joined(const std::vector<std::string>& parts) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i)
    out += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return out;
}

// With several tables, what concerns a whole table points at its lines. A section without rows is
// left unswept: only the last can be one (a table starts only after rows), a run that printed none.
Read read_table(std::span<const Line> lines, Section sec, const std::string& file, bool several) {
  auto count = static_cast<std::size_t>(sec.last - sec.first + 1);
  Read r{.table = {.scan = scan(lines.subspan(static_cast<std::size_t>(sec.first - 1), count), file)}, .lines = sec};
  Scan& s = r.table.scan;
  if (several) {
    s.at = file + ":" + range(sec);
    s.scope = "the table";
  }
  if (!several || !s.rows.empty()) r.table.rows = sweep(s, r.table.row_notes);
  return r;
}

bool same_rows(const std::vector<NcclTestsRow>& a, const std::vector<NcclTestsRow>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), same_numbers);
}

// Every section read; a table that repeats an earlier one, and a last run without rows, dropped (noted).
std::vector<Read> read_tables(std::span<const Line> lines, const Split& split, const std::string& file) {
  std::vector<Read> kept;
  for (Section sec : split.sections) {
    Read r = read_table(lines, sec, file, split.sections.size() > 1);
    if (kept.empty() && r.table.rows.empty()) throw std::logic_error("read_tables: the first table has no rows");
    if (r.table.rows.empty()) {
      kept.back().notes.push_back("ignored " + lines_text(sec) + " after the last table: a run starts on line " +
                                  str(sec.first) + " but prints no rows");
      continue;
    }
    auto same =
        std::find_if(kept.begin(), kept.end(), [&](const Read& k) { return same_rows(k.table.rows, r.table.rows); });
    if (same != kept.end()) {
      same->notes.push_back("dropped the table on " + lines_text(sec) + ": the same rows as this one");
      continue;
    }
    kept.push_back(std::move(r));
  }
  return kept;
}

// What the file says once, before the first table, for a table whose own section does not say it.
void inherit(Read& r, const Scan& pre, int pre_last) {
  Scan& s = r.table.scan;
  std::vector<std::string> took;
  if (s.devices.empty() && s.ellipses.empty() && (!pre.devices.empty() || !pre.ellipses.empty())) {
    s.devices = pre.devices;
    s.ellipses = pre.ellipses;
    took.push_back("the device list");
  }
  if (s.launches.empty() && !pre.launches.empty()) {
    s.launches = pre.launches;
    took.push_back("the command line");
  }
  if (!s.version && !s.library && (pre.version || pre.library)) {
    s.version = pre.version;
    s.library = pre.library;
    took.push_back("the NCCL version");
  }
  if (!took.empty())
    r.notes.push_back(joined(took) + ": from " + lines_text({1, pre_last}) + ", before the first table");
}

// The hints and the remedy for an undecided collective: with several tables --collective applies
// only when no table names its binary; else it is dropped, and `unused` says so.
struct Rule {
  NcclTestsHints hints;
  std::string remedy = kPassCollective, unused;
};

Rule collective_rule(const std::vector<Read>& kept, const NcclTestsHints& hints) {
  Rule rule{.hints = hints};
  const Mention* named = nullptr;
  for (const Read& r : kept)
    if (!named && !r.table.scan.mentions.empty()) named = &r.table.scan.mentions.front();
  if (kept.size() < 2 || !named) return rule;
  rule.remedy = "split the file: --collective applies only when no table names its collective";
  if (hints.collective)
    rule.unused = "--collective " + name(*hints.collective) + ": not used, the file names a table's collective (" +
                  mention_text(*named) + "); it applies only when no table does";
  rule.hints.collective.reset();
  return rule;
}

NcclTestsLog table_log(const Read& r, std::size_t index, std::size_t count, const Rule& rule) {
  NcclTestsLog log = decide_log(r.table, rule.hints, rule.remedy);
  log.first_line = r.lines.first;
  log.last_line = r.lines.last;
  if (count > 1)
    log.notes.insert(log.notes.begin(), "table " + str(static_cast<std::int64_t>(index + 1)) + " of " +
                                            str(static_cast<std::int64_t>(count)) + ": " + lines_text(r.lines));
  if (!rule.unused.empty()) log.notes.push_back(rule.unused);
  log.notes.insert(log.notes.end(), r.notes.begin(), r.notes.end());
  return log;
}

}  // namespace

Split split_tables(std::span<const Line> lines, const std::string& file) {
  Scan s = scan(lines, file, /*locate_only=*/true);
  std::vector<int> starts = s.starts;
  starts.insert(starts.end(), s.launch_starts.begin(), s.launch_starts.end());
  std::sort(starts.begin(), starts.end());
  Split out;
  int first = 1;
  for (int start : starts) {
    auto row = std::lower_bound(s.row_lines.begin(), s.row_lines.end(), first);
    if (row == s.row_lines.end() || *row >= start) continue;  // no rows since this section began
    out.sections.push_back({first, start - 1});
    first = start;
  }
  int last = static_cast<int>(lines.size());
  out.sections.push_back({first, last});
  int first_row = s.row_lines.empty() ? INT_MAX : s.row_lines.front();
  int first_start = s.starts.empty() ? INT_MAX : s.starts.front();
  out.preamble_last = std::min({first_row - 1, first_start - 1, last});
  return out;
}

std::vector<NcclTestsLog> parse_tables(std::span<const Line> lines, const std::string& file,
                                       const NcclTestsHints& hints) {
  Split split = split_tables(lines, file);
  std::vector<Read> kept = read_tables(lines, split, file);
  Scan pre = scan(lines.first(static_cast<std::size_t>(split.preamble_last)), file);
  Rule rule = collective_rule(kept, hints);
  std::vector<NcclTestsLog> out;
  for (std::size_t i = 0; i < kept.size(); ++i) {
    if (kept[i].lines.first > 1) inherit(kept[i], pre, split.preamble_last);
    out.push_back(table_log(kept[i], i, kept.size(), rule));
  }
  return out;
}

}  // namespace dtsim::calibrate::detail
