#include "nccl_options.h"

#include <cstdlib>
#include <utility>

#include <CLI/CLI.hpp>

namespace dtsim::bench {
namespace {

constexpr std::int64_t kMaxSize = std::int64_t{1} << 40;  // 1T: far above any GPU's memory
constexpr std::int64_t kMaxSweep = 10000;                  // sizes per sweep
constexpr int kMaxRanks = 1 << 20;

std::string in_quotes(const std::string& s) { return "\"" + s + "\""; }

[[noreturn]] void fail(const std::string& flag, const std::string& expected, const std::string& got) {
  throw OptionError(flag + ": expected " + expected + ", got " + got);
}

std::optional<std::string> given(const NcclArgs& a, const std::string& flag) {
  auto it = a.given.find(flag);
  return it == a.given.end() ? std::nullopt : std::optional<std::string>(it->second);
}

// The first of `vars` set in the environment, as an integer in [lo, hi]; nullopt when none is.
std::optional<int> env_int(const EnvLookup& env, std::initializer_list<const char*> vars, int lo, int hi) {
  for (const char* v : vars)
    if (std::optional<std::string> text = env(v)) return parse_int(v, *text, lo, hi);
  return std::nullopt;
}

// A flag's integer, else the first environment variable set, else nullopt.
std::optional<int> flag_or_env(const NcclArgs& a, const std::string& flag, const EnvLookup& env,
                               std::initializer_list<const char*> vars, int lo, int hi) {
  if (std::optional<std::string> text = given(a, flag)) return parse_int(flag, *text, lo, hi);
  return env_int(env, vars, lo, hi);
}

std::vector<NcclCollective> parse_ops(const std::string& text) {
  if (text == "all") return all_collectives();
  std::vector<NcclCollective> out;
  std::size_t pos = 0;
  while (true) {
    std::size_t end = text.find(',', pos);
    std::string item = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    std::optional<NcclCollective> c = parse_collective_name(item);
    if (!c)
      fail("--op", "all or a comma list of all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv",
           in_quotes(item));
    bool seen = false;
    for (NcclCollective o : out) seen = seen || o == *c;
    if (!seen) out.push_back(*c);
    if (end == std::string::npos) return out;
    pos = end + 1;
  }
}

void resolve_sweep(const NcclArgs& a, NcclOptions& o) {
  if (auto t = given(a, "--min-bytes")) o.min_bytes = parse_size("--min-bytes", *t);
  if (auto t = given(a, "--max-bytes")) o.max_bytes = parse_size("--max-bytes", *t);
  if (o.max_bytes < o.min_bytes)
    fail("--max-bytes", "a size >= --min-bytes (" + std::to_string(o.min_bytes) + ")",
         in_quotes(given(a, "--max-bytes").value_or(std::to_string(o.max_bytes))));
  std::optional<std::string> factor = given(a, "--step-factor"), step = given(a, "--step-bytes");
  if (factor && step) fail("--step-bytes", "either --step-factor or --step-bytes", "both");
  if (factor) o.step_factor = parse_int("--step-factor", *factor, 2, 1024);
  if (step) {
    o.step_factor = 1;
    o.step_bytes = parse_size("--step-bytes", *step);
    std::int64_t n = (o.max_bytes - o.min_bytes) / o.step_bytes + 1;
    if (n > kMaxSweep)
      fail("--step-bytes", "at most " + std::to_string(kMaxSweep) + " sizes from --min-bytes to --max-bytes",
           std::to_string(n) + " sizes");
  }
}

void resolve_run(const NcclArgs& a, NcclOptions& o) {
  if (auto t = given(a, "--op")) o.ops = parse_ops(*t);
  if (auto t = given(a, "--dtype")) {
    std::optional<NcclDtype> d = parse_dtype_name(*t);
    if (!d) fail("--dtype", "float, half or bfloat16", in_quotes(*t));
    o.dtype = *d;
  }
  if (auto t = given(a, "--warmup")) o.warmup_iters = parse_int("--warmup", *t, 0, 1000000);
  if (auto t = given(a, "--iters")) o.iters = parse_int("--iters", *t, 1, 1000000);
  if (auto t = given(a, "--check")) o.check = parse_int("--check", *t, 0, 1) == 1;
  o.json = a.json;
  o.dry_run = a.dry_run;
}

NcclLauncher resolve_launcher(const NcclArgs& a, const EnvLookup& env, bool have_mpi) {
  if (auto t = given(a, "--launcher")) {
    if (*t == "single") return NcclLauncher::single_process;
    if (*t == "file") return NcclLauncher::file;
    if (*t == "mpi" && have_mpi) return NcclLauncher::mpi;
    fail("--launcher",
         have_mpi ? "single, mpi or file" : "single or file (this dtsim-bench was built without MPI)", in_quotes(*t));
  }
  if (given(a, "--bootstrap-file")) return NcclLauncher::file;
  if (have_mpi && (env("OMPI_COMM_WORLD_SIZE") || env("PMI_SIZE") || env("PMIX_RANK"))) return NcclLauncher::mpi;
  // Started as many tasks without MPI: each would run alone on all GPUs of its node.
  std::optional<int> tasks = env_int(env, {"OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"}, 1, kMaxRanks);
  if (tasks && *tasks > 1)
    fail("--bootstrap-file",
         "a path on a shared filesystem when started as " + std::to_string(*tasks) +
             " processes without MPI (or --launcher single)",
         "none");
  return NcclLauncher::single_process;
}

// Flags that mean nothing to a launcher are refused rather than ignored.
void refuse_foreign_flags(const NcclArgs& a, NcclLauncher l) {
  if (l != NcclLauncher::single_process)
    if (auto t = given(a, "--gpus"))
      fail("--gpus", "only in single-process mode (the mpi and file launchers drive one GPU per process)",
           in_quotes(*t));
  if (l == NcclLauncher::single_process)
    if (auto t = given(a, "--device"))
      fail("--device", "only with the mpi or file launcher (single-process mode uses devices 0 to -g minus 1)",
           in_quotes(*t));
  if (l == NcclLauncher::file) return;
  for (const char* f : {"--rank", "--nranks", "--bootstrap-file", "--bootstrap-timeout"})
    if (auto t = given(a, f)) fail(f, "only with the file launcher (--bootstrap-file)", in_quotes(*t));
}

void resolve_file_launch(const NcclArgs& a, const EnvLookup& env, NcclOptions& o) {
  std::optional<std::string> path = given(a, "--bootstrap-file");
  if (!path || path->empty()) fail("--bootstrap-file", "a path on a shared filesystem for the file launcher", "none");
  o.bootstrap_file = *path;
  if (auto t = given(a, "--bootstrap-timeout")) o.bootstrap_timeout_s = parse_int("--bootstrap-timeout", *t, 1, 86400);
  o.nranks = flag_or_env(a, "--nranks", env, {"OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"}, 1, kMaxRanks);
  if (!o.nranks) fail("--nranks", "the number of ranks (or OMPI_COMM_WORLD_SIZE or SLURM_NTASKS set)", "none");
  std::optional<std::string> flag = given(a, "--rank");
  const char* var = env("OMPI_COMM_WORLD_RANK") ? "OMPI_COMM_WORLD_RANK" : "SLURM_PROCID";
  if (flag) o.rank = parse_int("--rank", *flag, 0, *o.nranks - 1);
  else if (std::optional<std::string> text = env(var)) o.rank = parse_int(var, *text, 0, *o.nranks - 1);
  else fail("--rank", "this process's rank (or OMPI_COMM_WORLD_RANK or SLURM_PROCID set)", "none");
  o.device = flag_or_env(a, "--device", env, {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"}, 0, 1023);
}

void resolve_launch(const NcclArgs& a, const EnvLookup& env, bool have_mpi, NcclOptions& o) {
  o.launcher = resolve_launcher(a, env, have_mpi);
  refuse_foreign_flags(a, o.launcher);
  switch (o.launcher) {
    case NcclLauncher::single_process:
      if (auto t = given(a, "--gpus")) o.gpus = parse_int("--gpus", *t, 1, 1024);
      if (o.dry_run && !o.gpus)
        fail("--gpus", "the number of GPUs with --dry-run (counting them needs a device)", "none");
      break;
    case NcclLauncher::mpi:
      if (auto t = given(a, "--device")) o.device = parse_int("--device", *t, 0, 1023);
      o.nranks = env_int(env, {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}, 1, kMaxRanks);
      o.rank = env_int(env, {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}, 0, kMaxRanks);  // MPI has the truth
      if (o.dry_run && !o.nranks)
        fail("--dry-run", "the number of MPI ranks in OMPI_COMM_WORLD_SIZE, PMI_SIZE or SLURM_NTASKS", "none");
      break;
    case NcclLauncher::file: resolve_file_launch(a, env, o); break;
  }
}

}  // namespace

const char* to_string(NcclLauncher l) {
  switch (l) {
    case NcclLauncher::single_process: return "single-process";
    case NcclLauncher::mpi: return "mpi";
    case NcclLauncher::file: return "file";
  }
  return "?";
}

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
}

std::int64_t parse_size(const std::string& flag, const std::string& text) {
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  std::string suffix = text.substr(digits);
  int shift = suffix.empty() ? 0 : suffix == "K" || suffix == "k" ? 10 : suffix == "M" || suffix == "m" ? 20
                                  : suffix == "G" || suffix == "g" ? 30 : -1;
  if (digits == 0 || digits > 13 || shift < 0)
    fail(flag, "a size in bytes with an optional K, M or G suffix (1024-based)", in_quotes(text));
  std::int64_t v = std::stoll(text.substr(0, digits));
  if (v < 1) fail(flag, "a size of at least 1 byte", in_quotes(text));
  if (v > (kMaxSize >> shift))
    fail(flag, "a size of at most 1T (" + std::to_string(kMaxSize) + " bytes)", in_quotes(text));
  return v << shift;
}

int parse_int(const std::string& flag, const std::string& text, int lo, int hi) {
  std::size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(text, &used, 10);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || v < lo || v > hi)
    fail(flag, "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", in_quotes(text));
  return static_cast<int>(v);
}

NcclOptions resolve_nccl_options(const NcclArgs& args, const EnvLookup& env, bool have_mpi) {
  NcclOptions o;
  resolve_sweep(args, o);
  resolve_run(args, o);
  resolve_launch(args, env, have_mpi, o);
  return o;
}

std::optional<int> planned_ranks(const NcclOptions& o) {
  return o.launcher == NcclLauncher::single_process ? o.gpus : o.nranks;
}

void add_nccl_options(CLI::App& sub, NcclArgs& args) {
  // Every value is taken as text and checked by resolve_nccl_options, so each error reads the same.
  struct Flag {
    const char* names;
    const char* type;
    const char* help;
  };
  const Flag kFlags[] = {
      {"--op", "LIST",
       "Collectives: all or a comma list of all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv "
       "(default all)"},
      {"-b,--min-bytes", "SIZE", "Smallest size, with K/M/G suffixes (default 8)"},
      {"-e,--max-bytes", "SIZE", "Largest size (default 128M)"},
      {"-f,--step-factor", "N", "Multiply the size by this (default 2)"},
      {"-i,--step-bytes", "SIZE", "Add this to the size instead of -f"},
      {"--dtype", "TYPE", "float, half or bfloat16 (default float)"},
      {"-w,--warmup", "N", "Warm-up iterations at the largest and smallest size (default 5)"},
      {"-n,--iters", "N", "Timed iterations per size (default 20)"},
      {"-c,--check", "0|1", "1: check results (default), 0: do not"},
      {"-g,--gpus", "N", "single-process: GPUs to use (default all visible)"},
      {"--launcher", "NAME",
       "single, mpi or file (default: file with --bootstrap-file, mpi under an MPI launcher, else single)"},
      {"--bootstrap-file", "PATH", "file: path on a shared filesystem where rank 0 publishes the NCCL unique id"},
      {"--rank", "N", "file: this process's rank (default OMPI_COMM_WORLD_RANK or SLURM_PROCID)"},
      {"--nranks", "N", "file: number of ranks (default OMPI_COMM_WORLD_SIZE or SLURM_NTASKS)"},
      {"--device", "N", "mpi, file: CUDA device (default the local rank)"},
      {"--bootstrap-timeout", "SECONDS", "file: how long ranks wait for rank 0's file (default 120)"},
  };
  for (const Flag& f : kFlags) {
    std::string names = f.names;
    std::string key = names.substr(names.find("--"));
    sub.add_option_function<std::string>(names, [&args, key](const std::string& v) { args.given[key] = v; }, f.help)
        ->type_name(f.type);
  }
  sub.add_flag("--json", args.json, "Print one JSON object (dtsim-bench/1) instead of nccl-tests' tables");
  sub.add_flag("--dry-run", args.dry_run, "Print the plan (ranks, sizes, counts) without touching a device");
}

}  // namespace dtsim::bench
