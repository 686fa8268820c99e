#include "calibrate/nccl_tests_facts.h"

#include <algorithm>
#include <map>

#include "calibrate/nccl_tests_sweep.h"
#include "core/errors.h"

namespace dtsim::calibrate::detail {
namespace {

using spec::Collective;

// ------------------------------------------------------------------------------ the collective

Collective from_text(const Scan& s, const Arithmetic& a, const Mention& m, const std::string& remedy,
                     std::vector<std::string>& notes) {
  if (!m.binary->op)
    throw SpecError(where(s.file, m.line), std::string("expected an nccl-tests binary dtsim models (") + kModelled +
                                               "), got " + std::string(m.binary->stem) + "_perf");
  if (std::string why = misfit(*m.binary->op, a); !why.empty())
    throw SpecError(s.at, "cannot tell the collective (the text names " + mention_text(m) +
                              " but the rows do not fit it: " + why + "); " + remedy);
  notes.push_back("collective " + name(*m.binary->op) + ": from " + (m.wrapper ? "" : "the binary name ") +
                  mention_text(m));
  return *m.binary->op;
}

Collective from_hint(Collective c, const std::vector<const Mention*>& named, const Arithmetic& a,
                     std::vector<std::string>& notes) {
  std::string note = "collective " + name(c) + ": from --collective";
  if (!named.empty() && (named.size() > 1 || named[0]->binary->op != c))
    note += "; the file names " + mention_text(*named[0]);
  if (std::string why = misfit(c, a); !why.empty()) note += "; the rows do not fit it (" + why + ")";
  notes.push_back(note);
  return c;
}

Collective from_arithmetic(const Scan& s, const Arithmetic& a, const std::string& remedy,
                           std::vector<std::string>& notes) {
  std::vector<Collective> fit;
  std::string fits;
  for (Collective c : spec::kCollectives)
    if (misfit(c, a).empty()) fit.push_back(c), fits += (fits.empty() ? "" : " and ") + name(c);
  if (fit.size() == 1) {
    notes.push_back("collective " + name(fit[0]) + ": from the arithmetic (" + evidence(a) + "); no binary name in " +
                    s.scope);
    return fit[0];
  }
  throw SpecError(s.at, "cannot tell the collective (no binary name in " + s.scope + "; the rows (" + evidence(a) +
                            ") fit " + (fit.empty() ? std::string("none dtsim models") : fits) + "); " + remedy);
}

Collective decide_collective(const Scan& s, const Arithmetic& a, const NcclTestsHints& h, const std::string& remedy,
                             std::vector<std::string>& notes) {
  std::vector<const Mention*> named;  // one per distinct binary
  for (const Mention& m : s.mentions)
    if (std::none_of(named.begin(), named.end(), [&](const Mention* n) { return n->binary == m.binary; }))
      named.push_back(&m);
  if (h.collective) return from_hint(*h.collective, named, a, notes);
  if (named.size() > 1)
    throw SpecError(s.at, "cannot tell the collective (the text names " + mention_text(*named[0]) + " and " +
                              mention_text(*named[1]) + "); " + remedy);
  if (named.size() == 1) return from_text(s, a, *named[0], remedy, notes);
  return from_arithmetic(s, a, remedy, notes);
}

// ----------------------------------------------------------------- devices and command lines

struct DeviceList {
  bool whole = false;  // ranks 0..k-1 once each, not cut short by "..."
  std::int64_t ranks = 0;
  std::int64_t hosts = 0;
  std::optional<std::int64_t> per_host;  // when every host lists as many ranks
  std::string gap;                       // why the list is not whole: "absent", "cut short (...)"
};

DeviceList device_list(const Scan& s) {
  DeviceList d{.ranks = static_cast<std::int64_t>(s.devices.size())};
  int first = s.devices.empty() ? 0 : s.devices.front().line;
  auto cut = std::find_if(s.ellipses.begin(), s.ellipses.end(), [&](int l) { return l > first; });
  std::map<std::string, std::int64_t> per_host;
  for (std::size_t i = 0; i < s.devices.size(); ++i) {
    if (s.devices[i].rank != static_cast<std::int64_t>(i) && d.gap.empty()) d.gap = "skipping or repeating ranks";
    ++per_host[s.devices[i].host];
  }
  if (s.devices.empty())
    d.gap = s.ellipses.empty() ? "absent" : "elided (\"...\" on line " + str(s.ellipses[0]) + ")";
  else if (cut != s.ellipses.end())
    d.gap = "cut short (\"...\" on line " + str(*cut) + ")";
  d.whole = d.gap.empty();
  d.hosts = static_cast<std::int64_t>(per_host.size());
  if (!per_host.empty() && std::all_of(per_host.begin(), per_host.end(),
                                       [&](const auto& p) { return p.second == per_host.begin()->second; }))
    d.per_host = per_host.begin()->second;
  return d;
}

struct Facts {  // what the text itself says, beyond the rows
  DeviceList list;
  const Launch* launch = nullptr;
  std::int64_t per_process = 1;  // ranks per process: nThread x nGpus, or the binary's -t x -g
  bool params_stale = false;
};

Facts facts(const Scan& s, const std::vector<NcclTestsRow>& rows, std::vector<std::string>& notes) {
  Facts f{.list = device_list(s)};
  // A launcher with a process count, else any launcher ("mpirun noticed that ..."), else a direct run.
  auto weight = [](const Launch& l) { return l.launcher.empty() ? 1 : l.np ? 3 : 2; };
  for (const Launch& l : s.launches)
    if (!f.launch || weight(l) > weight(*f.launch)) f.launch = &l;
  if (s.params && s.params->max_bytes && *s.params->max_bytes < rows.back().size_bytes) {
    f.params_stale = true;
    notes.push_back("the nThread line (line " + str(s.params->line) + ") says maxBytes " + str(*s.params->max_bytes) +
                    " but the rows go to " + str(rows.back().size_bytes) + ": a stale line, not used");
  }
  if (s.params && !f.params_stale)
    f.per_process = s.params->threads * s.params->gpus;
  else if (f.launch)
    f.per_process = f.launch->threads * f.launch->gpus;
  f.per_process = std::min(f.per_process, kMaxRanks);  // so that np x per_process cannot overflow
  return f;
}

std::optional<std::int64_t> launch_ranks(const Facts& f) {
  if (!f.launch) return std::nullopt;
  if (f.launch->launcher.empty()) return f.per_process;
  return f.launch->np ? std::optional(*f.launch->np * f.per_process) : std::nullopt;
}

std::optional<std::int64_t> launch_per_node(const Facts& f) {
  if (!f.launch) return std::nullopt;
  const Launch& l = *f.launch;
  if (l.launcher.empty()) return f.per_process;
  if (l.per_node) return *l.per_node * f.per_process;
  if (l.np && l.nodes && *l.np % *l.nodes == 0) return *l.np / *l.nodes * f.per_process;
  return std::nullopt;
}

std::string launch_text(const Facts& f) {
  const Launch& l = *f.launch;
  std::string how = l.launcher.empty() ? l.program + " run directly: one process on one node"
                                       : l.launcher + (l.np ? " -np " + str(*l.np) : "");
  return "the command line on line " + str(l.line) + " (" + how + ", " + plural(f.per_process, "GPU") + " per process)";
}

// ------------------------------------------------------------------- ranks and ranks per node

std::int64_t hinted_ranks(std::int64_t ranks, std::optional<std::int64_t> listed, const std::optional<Range>& arith,
                          const std::string& says, std::vector<std::string>& notes) {
  std::string note = "ranks " + str(ranks) + ": from --ranks";
  if (listed && *listed != ranks) note += "; the device list shows " + str(*listed);
  if (arith && !arith->contains(ranks)) note += "; the file disagrees: " + says;
  notes.push_back(note);
  return ranks;
}

std::int64_t decide_ranks(const Scan& s, Collective c, const Arithmetic& a, const Facts& f, const NcclTestsHints& h,
                          std::vector<std::string>& notes) {
  std::optional<Range> arith = arithmetic_ranks(c, a);
  std::string says = arith ? ranks_text(c, *arith, a) : "busbw = algbw for " + name(c) + " says nothing about n";
  bool list_ok = f.list.whole && (!arith || arith->contains(f.list.ranks));
  std::string listed = plural(f.list.ranks, "rank") + " on " + plural(f.list.hosts, "host");
  if (f.list.whole && !list_ok) notes.push_back("device list: " + listed + ", but " + says + ": taken as incomplete");
  if (!f.list.whole && f.list.ranks > 0) notes.push_back("device list: " + listed + ", " + f.list.gap);
  if (f.list.ranks == 0 && !s.ellipses.empty()) notes.push_back("device list " + f.list.gap);
  if (h.ranks) return hinted_ranks(*h.ranks, list_ok ? std::optional(f.list.ranks) : std::nullopt, arith, says, notes);
  std::optional<std::int64_t> n;
  if (list_ok) {
    n = f.list.ranks;
    notes.push_back("ranks " + str(*n) + ": from the device list (" + listed + ")");
  } else if (arith && arith->unique()) {
    n = arith->lo;
    notes.push_back("ranks " + str(*n) + ": from " + says);
  } else if ((n = launch_ranks(f))) {
    notes.push_back("ranks " + str(*n) + ": from " + launch_text(f));
    return *n;
  }
  std::optional<std::int64_t> launched = launch_ranks(f);
  if (n && launched && *launched != *n) notes.push_back("ranks: " + launch_text(f) + " gives " + str(*launched));
  if (n) return *n;
  throw SpecError(s.at, "rank count not in " + s.scope + " (device list " +
                            (f.list.whole ? listed + " disagrees" : f.list.gap) + "; " + says +
                            "; no command line with a process count); pass --ranks N");
}

std::optional<std::int64_t> decide_per_node(const Scan& s, const Facts& f, std::int64_t ranks,
                                            const NcclTestsHints& h, std::vector<std::string>& notes) {
  bool list_ok = f.list.whole && f.list.ranks == ranks;
  std::optional<std::int64_t> n;
  if (h.gpus_per_node) {
    n = h.gpus_per_node;
    std::string note = "ranks per node " + str(*n) + ": from --gpus-per-node";
    if (f.list.whole && f.list.per_host && *f.list.per_host != *n)
      note += "; the device list shows " + str(*f.list.per_host) + " per host";
    notes.push_back(note);
  } else if (list_ok && f.list.per_host) {
    n = f.list.per_host;
    notes.push_back("ranks per node " + str(*n) + ": from the device list (" + str(*n) +
                    (f.list.hosts == 1 ? " on its one host)" : " on each of " + str(f.list.hosts) + " hosts)"));
  } else if ((n = launch_per_node(f))) {
    notes.push_back("ranks per node " + str(*n) + ": from " + launch_text(f));
  } else {
    notes.push_back(std::string("ranks per node: ") +
                    (list_ok ? "the hosts list different rank counts" : "not in " + s.scope) +
                    "; pass --gpus-per-node N if it matters");
  }
  if (n && ranks % *n != 0) notes.push_back("ranks per node " + str(*n) + " does not divide ranks " + str(ranks));
  return n;
}

// --------------------------------------------------------------------- version and line notes

// NCCL_VERSION_CODE: major*10000 + minor*100 + patch since 2.9, major*1000 + minor*100 + patch before.
std::optional<std::string> decode_version(std::string_view code) {
  std::optional<std::int64_t> v = to_int(code);
  if (!v || *v <= 0) return std::nullopt;
  bool wide = *v >= 10000;
  return str(*v / (wide ? 10000 : 1000)) + "." + str(*v / 100 % (wide ? 100 : 10)) + "." + str(*v % 100);
}

void decide_version(const Scan& s, NcclTestsLog& log) {
  if (s.version) {
    log.nccl_version = s.version->first;
    log.notes.push_back("nccl version " + s.version->first + ": from \"NCCL version\" on line " +
                        str(s.version->second));
  } else if (s.library && (log.nccl_version = decode_version(s.library->first))) {
    log.notes.push_back("nccl version " + *log.nccl_version + ": from nccl-library=" + s.library->first + " on line " +
                        str(s.library->second));
  }
}

void note_lines(const Scan& s, std::vector<std::string>& notes) {
  auto note = [&](int n, const std::string& text) {
    if (n) notes.push_back(text);
  };
  note(s.prefixes.mpirun, "stripped " +
                              plural(s.prefixes.mpirun, "\"[1,N]<stdout>:\" prefix", "\"[1,N]<stdout>:\" prefixes") +
                              " (mpirun --tag-output)");
  note(s.prefixes.srun, "stripped " + plural(s.prefixes.srun, "\"N: \" prefix", "\"N: \" prefixes") + " (srun -l)");
  note(s.prefixes.quote, "stripped " + plural(s.prefixes.quote, "\"> \" quote mark"));
  note(s.bare_header, "read " + plural(s.bare_header, "table header without its", "table headers without their") +
                          " '#' (a docs renderer drops it)");
  note(s.nccl_lines, "ignored " + plural(s.nccl_lines, "NCCL INFO/WARN line"));
  note(s.comment_lines, "ignored " + plural(s.comment_lines, "other comment line"));
  note(s.other_lines,
       "ignored " + plural(s.other_lines, "other line") + " (commands, launcher output, warnings, prompts)");
}

}  // namespace

std::string mention_text(const Mention& m) {
  return (m.wrapper ? "the wrapper flag -t " + std::string(m.binary->stem) : std::string(m.binary->stem) + "_perf") +
         " on line " + str(m.line);
}

NcclTestsLog decide_log(const Table& t, const NcclTestsHints& hints, const std::string& remedy) {
  const Scan& s = t.scan;
  NcclTestsLog log{.path = s.file, .dtype = t.rows.front().type, .rows = t.rows};
  std::vector<std::string> row_notes = t.row_notes;
  Arithmetic a = arithmetic(log.rows, s.file);
  log.collective = decide_collective(s, a, hints, remedy, log.notes);
  Facts f = facts(s, log.rows, row_notes);
  log.ranks = decide_ranks(s, log.collective, a, f, hints, log.notes);
  log.ranks_per_node = decide_per_node(s, f, log.ranks, hints, log.notes);
  for (const Device& d : s.devices) log.devices.push_back(d.name);
  decide_version(s, log);
  log.notes.insert(log.notes.end(), row_notes.begin(), row_notes.end());
  note_lines(s, log.notes);
  return log;
}

}  // namespace dtsim::calibrate::detail
