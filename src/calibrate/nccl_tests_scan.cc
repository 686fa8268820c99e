#include "calibrate/nccl_tests_scan.h"

#include <algorithm>

namespace dtsim::calibrate::detail {
namespace {

void add_row(Scan& s, const Line& l, const Words& w) {
  s.row_lines.push_back(l.number);
  if (s.locate_only) return;
  std::string at = where(s.file, l.number);
  if (!s.layout) s.layout = layout_of_row(w, l.number, at);
  if (!s.first_layout) s.first_layout = s.layout;
  s.rows.push_back(read_row(w, *s.layout, l.number, at));
}

// ----------------------------------------------------------------------------------- commands

// The value of option `names` at w[i] ("-np 16", "--ntasks=16") when it is a positive integer.
std::optional<std::int64_t> option(const Words& w, std::size_t i, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names) {
    std::optional<std::string_view> v;
    if (w[i] == n && i + 1 < w.size()) v = unquoted(w[i + 1]);
    if (w[i].size() > n.size() + 1 && w[i].starts_with(n) && w[i][n.size()] == '=')
      v = unquoted(w[i].substr(n.size() + 1));
    std::optional<std::int64_t> x = v ? to_int(*v) : std::nullopt;
    if (x && *x > 0 && *x <= kMaxRanks) return x;
  }
  return std::nullopt;
}

void read_launcher_flags(const Words& w, std::size_t from, std::size_t to, Launch& x) {
  bool srun = x.launcher == "srun";
  for (std::size_t i = from; i < to; ++i) {
    if (auto v = srun ? option(w, i, {"-n", "--ntasks"}) : option(w, i, {"-np", "-n", "--np", "-c"})) x.np = v;
    if (auto v = srun ? option(w, i, {"--ntasks-per-node"}) : option(w, i, {"-npernode", "--npernode", "-N", "-ppn"}))
      x.per_node = v;
    if (auto v = srun ? option(w, i, {"-N", "--nodes"}) : std::nullopt) x.nodes = v;
    std::string_view map = (w[i] == "--map-by" || w[i] == "-map-by") && i + 1 < w.size() ? w[i + 1] : "";
    std::optional<std::int64_t> ppr = map.size() > 9 && map.starts_with("ppr:") && map.ends_with(":node")
                                          ? to_int(map.substr(4, map.size() - 9))
                                          : std::nullopt;
    if (ppr && *ppr > 0 && *ppr <= kMaxRanks) x.per_node = ppr;
  }
}

// Index of the word a shell line runs, past prompts, "sudo", "time" and VAR=value assignments.
std::size_t command_word(const Words& w) {
  std::size_t i = 0;
  auto skip = [](std::string_view t) {
    return t == "$" || t == "+" || t == "#" || t == "sudo" || t == "time" || t == "exec" || t == "env" ||
           t == "nohup" || t.ends_with('$') || (t.find('=') != npos && !t.starts_with('-'));
  };
  while (i < w.size() && skip(w[i])) ++i;
  return i;
}

// A whole command (continuation lines joined): a launcher and its process counts, or the binary run
// directly with its -t/-g. A binary merely named ("Running .../all_reduce_perf test") is not run.
void read_launch(Scan& s, const std::string& text, int line) {
  Words w = words(text);
  auto launcher = std::find_if(w.begin(), w.end(), [](std::string_view t) {
    std::string_view b = basename(t);
    return b.starts_with("mpirun") || b.starts_with("mpiexec") || b == "srun" || b == "orterun";
  });
  auto bin = std::find_if(w.begin(), w.end(), [](std::string_view t) { return binary_of(t) != nullptr; });
  Launch x{.line = line};
  if (bin != w.end()) {
    x.program = std::string(basename(*bin));
    for (std::size_t i = static_cast<std::size_t>(bin - w.begin()); i < w.size(); ++i) {
      if (auto g = option(w, i, {"-g", "--ngpus"})) x.gpus = *g;
      if (auto t = option(w, i, {"-t", "--nthreads"})) x.threads = *t;
    }
  }
  if (launcher != w.end()) {
    x.launcher = std::string(basename(*launcher));
    read_launcher_flags(w, static_cast<std::size_t>(launcher - w.begin()) + 1,
                        static_cast<std::size_t>(bin - w.begin()), x);
    if (x.np && bin == w.end()) s.launch_starts.push_back(line);
  } else if (bin == w.end() || static_cast<std::size_t>(bin - w.begin()) != command_word(w)) {
    return;
  }
  s.launches.push_back(x);
}

// Binaries named on a line; a table can start at `start`, the first line of the command, unless
// the line closes a table ("Collective test concluded: all_reduce_perf").
void read_mentions(Scan& s, const Line& l, const Words& w, int start) {
  std::size_t before = s.mentions.size();
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (const Binary* b = binary_of(w[i])) s.mentions.push_back({b, l.number, false});
    if (w[i] != "-t" || i + 1 == w.size()) continue;
    std::string_view stem = unquoted(w[i + 1]);
    if (stem.ends_with("_perf")) stem.remove_suffix(5);
    if (const Binary* b = binary(stem); b && b->op) s.mentions.push_back({b, l.number, true});
  }
  if (s.mentions.size() > before && !l.body.starts_with("Collective test concluded")) s.starts.push_back(start);
}

void read_command(Scan& s, const Line& l, const Words& w) {
  if (s.command_line == 0) s.command_line = l.number;
  read_mentions(s, l, w, s.command_line);
  std::string_view body = l.body;
  bool continued = body.ends_with('\\');
  if (continued) body.remove_suffix(1);
  s.command.append(body).append(" ");
  if (continued) return;
  read_launch(s, s.command, s.command_line);
  s.command.clear();
  s.command_line = 0;
}

// ---------------------------------------------------------------- devices, versions, headers

// "Rank  0 Group  0 Pid  66421 on HOST device  0 [0x00] NVIDIA A100-SXM4-80GB" (older: no Group).
bool read_device(Scan& s, const Line& l, const Words& w) {
  auto on = std::find(w.begin(), w.end(), "on");
  std::optional<std::int64_t> rank = w.size() > 1 ? to_int(w[1]) : std::nullopt;
  if (w[0] != "Rank" || !rank || w.end() - on < 4 || on[2] != "device") return false;
  std::string_view last = on[3];
  if (w.end() - on > 4 && on[4].starts_with('[')) last = on[4];
  std::size_t name_at = static_cast<std::size_t>(last.data() - l.body.data()) + last.size();
  s.devices.push_back({*rank, std::string(on[1]), std::string(trim(l.body.substr(name_at))), l.number});
  return true;
}

bool read_params(Scan& s, const Line& l, const Words& w) {
  s.starts.push_back(l.number);
  Params p{.line = l.number};
  for (std::size_t i = 0; i + 1 < w.size(); ++i) {
    std::optional<std::int64_t> v = to_int(w[i + 1]);
    if (!v || *v < 1) continue;
    if (w[i] == "nThread" && *v <= kMaxRanks) p.threads = *v;
    if (w[i] == "nGpus" && *v <= kMaxRanks) p.gpus = *v;
    if (w[i] == "maxBytes") p.max_bytes = *v;
  }
  if (!s.params) s.params = p;
  return true;
}

bool read_versions(Scan& s, const Line& l, const Words& w) {
  if (w.size() > 2 && w[0] == "NCCL" && !s.version) s.version = {std::string(w[2]), l.number};
  for (std::string_view t : w)
    if (t.starts_with("nccl-library=") && !s.library) s.library = {std::string(t.substr(13)), l.number};
  return true;
}

bool read_header(Scan& s, const Line& l, const Words& w) {
  s.starts.push_back(l.number);
  if (s.locate_only) return true;
  s.layout = header_layout(w, l.number, where(s.file, l.number));
  if (!l.hash) ++s.bare_header;
  return true;
}

bool read_ellipsis(Scan& s, const Line& l) {
  if (s.rows.empty()) s.ellipses.push_back(l.number);
  return true;
}

// Lines nccl-tests prints around its table; false for anything else.
bool read_known(Scan& s, const Line& l, const Words& w) {
  std::string_view b = l.body;
  if (w[0] == "nThread") return read_params(s, l, w);
  if (w[0] == "Rank" && read_device(s, l, w)) return true;
  if ((b.size() >= 3 && b.find_first_not_of('.') == npos) || b == "\u2026") return read_ellipsis(s, l);
  if ((w[0] == "NCCL" || w[0] == "nccl-tests") && w.size() > 1 && w[1] == "version") return read_versions(s, l, w);
  if (w[0] == "size" && w.size() > 1 && w[1] == "count") return read_header(s, l, w);
  return w[0] == "(B)" || w[0] == "out-of-place" || b.starts_with("Out of bounds values") ||
         b.starts_with("Avg bus bandwidth") || b.starts_with("Using devices") || b.starts_with("Collective test");
}

// "# nccl-tests version 2.17.6 nccl-headers=22809 nccl-library=22809", the first line of a run
// (dtsim-bench: "# dtsim-bench nccl (nccl-tests 2.17 output) nccl-headers=..."), starts a table.
void read_banner(Scan& s, const Line& l, const Words& w) {
  if (std::any_of(w.begin(), w.end(), [](std::string_view t) { return t.starts_with("nccl-headers="); }))
    s.starts.push_back(l.number);
}

void read_line(Scan& s, const Line& l) {
  s.prefixes.add(l.stripped);
  Words w = words(l.body);
  if (w.empty()) return;
  if (l.body.find("NCCL INFO") != npos || l.body.find("NCCL WARN") != npos) {
    ++s.nccl_lines;
    return;
  }
  if (looks_like_row(w)) return add_row(s, l, w);
  read_command(s, l, w);
  read_banner(s, l, w);
  if (!read_known(s, l, w)) ++(l.hash ? s.comment_lines : s.other_lines);
}

}  // namespace

Scan scan(std::span<const Line> lines, const std::string& file, bool locate_only) {
  Scan s{.file = file, .at = file, .locate_only = locate_only};
  for (const Line& l : lines) read_line(s, l);
  if (!s.command.empty()) read_launch(s, s.command, s.command_line);
  std::sort(s.starts.begin(), s.starts.end());
  std::sort(s.launch_starts.begin(), s.launch_starts.end());
  return s;
}

}  // namespace dtsim::calibrate::detail
