// dtsim-bench nccl's flags (tools/dtsim-bench/nccl_options.h): parsed through the real CLI11
// subcommand, checked without a device, errors with their exact text.
#include <catch2/catch.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <map>
#include <vector>

#include "nccl_options.h"

using namespace dtsim::bench;
using Catch::Matchers::Equals;

namespace {

using Env = std::map<std::string, std::string>;

EnvLookup fake_env(const Env& vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

// `dtsim-bench nccl ARGS...` through the subcommand main.cc declares, then resolved.
NcclOptions parse(std::vector<std::string> args, const Env& env = {}, bool have_mpi = false) {
  CLI::App app;
  NcclArgs raw;
  CLI::App* sub = app.add_subcommand("nccl");
  add_nccl_options(*sub, raw);
  args.insert(args.begin(), "nccl");
  std::reverse(args.begin(), args.end());  // CLI11 parses a vector from its back
  app.parse(args);
  return resolve_nccl_options(raw, fake_env(env), have_mpi);
}

std::string error_of(std::vector<std::string> args, const Env& env = {}, bool have_mpi = false) {
  try {
    (void)parse(std::move(args), env, have_mpi);
  } catch (const OptionError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("bench::parse_size: bytes with 1024-based suffixes", "[bench]") {
  CHECK(parse_size("-b", "8") == 8);
  CHECK(parse_size("-b", "1K") == 1024);
  CHECK(parse_size("-b", "1k") == 1024);
  CHECK(parse_size("-b", "128M") == 128 * 1024 * 1024);       // 134217728, nccl-tests' usual -e
  CHECK(parse_size("-b", "8G") == std::int64_t{8} << 30);     // 8589934592
  CHECK(parse_size("-b", "1024G") == std::int64_t{1} << 40);  // the 1T limit itself
}

TEST_CASE("bench::parse_size: errors name the flag and the text", "[bench]") {
  const std::string shape = "a size in bytes with an optional K, M or G suffix (1024-based)";
  CHECK_THROWS_WITH(parse_size("--min-bytes", "8X"), Equals("--min-bytes: expected " + shape + ", got \"8X\""));
  CHECK_THROWS_WITH(parse_size("--min-bytes", "-8"), Equals("--min-bytes: expected " + shape + ", got \"-8\""));
  CHECK_THROWS_WITH(parse_size("--min-bytes", ""), Equals("--min-bytes: expected " + shape + ", got \"\""));
  CHECK_THROWS_WITH(parse_size("--min-bytes", "1.5M"), Equals("--min-bytes: expected " + shape + ", got \"1.5M\""));
  CHECK_THROWS_WITH(parse_size("--max-bytes", "0"),
                    Equals("--max-bytes: expected a size of at least 1 byte, got \"0\""));
  CHECK_THROWS_WITH(parse_size("--max-bytes", "1025G"),
                    Equals("--max-bytes: expected a size of at most 1T (1099511627776 bytes), got \"1025G\""));
}

TEST_CASE("bench::resolve_nccl_options: nccl-tests' defaults", "[bench]") {
  NcclOptions o = parse({});
  CHECK(o.ops.size() == 6);  // --op all
  CHECK(o.min_bytes == 8);
  CHECK(o.max_bytes == 134217728);
  CHECK(o.step_factor == 2);
  CHECK(o.dtype == NcclDtype::float32);
  CHECK(o.warmup_iters == 5);
  CHECK(o.iters == 20);
  CHECK(o.check);
  CHECK(o.launcher == NcclLauncher::single_process);
  CHECK_FALSE(o.gpus);  // all visible devices, counted at run time
  CHECK_FALSE(o.json);
  CHECK_FALSE(o.dry_run);
}

TEST_CASE("bench::resolve_nccl_options: nccl-tests' short flags", "[bench]") {
  NcclOptions o = parse({"-b", "1K", "-e", "1G", "-f", "4", "-w", "2", "-n", "50", "-c", "0", "-g", "8", "--op",
                         "send_recv,all_reduce,send_recv", "--dtype", "bfloat16", "--json"});
  CHECK(o.min_bytes == 1024);
  CHECK(o.max_bytes == std::int64_t{1} << 30);
  CHECK(o.step_factor == 4);
  CHECK(o.warmup_iters == 2);
  CHECK(o.iters == 50);
  CHECK_FALSE(o.check);
  CHECK(o.gpus == 8);
  CHECK(o.ops == std::vector<NcclCollective>{NcclCollective::send_recv, NcclCollective::all_reduce});  // deduplicated
  CHECK(o.dtype == NcclDtype::bfloat16);
  CHECK(o.json);
  NcclOptions step = parse({"-i", "1M", "-b", "1M", "-e", "4M"});
  CHECK(step.step_factor == 1);  // -i: nccl-tests' additive step
  CHECK(step.step_bytes == 1048576);
}

TEST_CASE("bench::resolve_nccl_options: flag errors read --flag: expected X, got Y", "[bench]") {
  CHECK_THROWS_WITH(parse({"--op", "all_reduce,alltoall"}),
                    Equals("--op: expected all or a comma list of all_reduce, all_gather, reduce_scatter, all_to_all, "
                           "broadcast, send_recv, got \"alltoall\""));
  CHECK(error_of({"--dtype", "fp8"}) == "--dtype: expected float, half or bfloat16, got \"fp8\"");
  CHECK(error_of({"-n", "0"}) == "--iters: expected an integer in [1, 1000000], got \"0\"");
  CHECK(error_of({"-w", "x"}) == "--warmup: expected an integer in [0, 1000000], got \"x\"");
  CHECK(error_of({"-c", "2"}) == "--check: expected an integer in [0, 1], got \"2\"");
  CHECK(error_of({"-f", "1"}) == "--step-factor: expected an integer in [2, 1024], got \"1\"");
  CHECK(error_of({"-f", "2", "-i", "1K"}) == "--step-bytes: expected either --step-factor or --step-bytes, got both");
  CHECK(error_of({"-b", "1G", "-e", "1M"}) == "--max-bytes: expected a size >= --min-bytes (1073741824), got \"1M\"");
  // 1 to 1M in steps of 8 bytes would be 131072 sizes.
  CHECK(error_of({"-b", "1", "-e", "1M", "-i", "8"}) ==
        "--step-bytes: expected at most 10000 sizes from --min-bytes to --max-bytes, got 131072 sizes");
  CHECK(error_of({"--dry-run"}) == "--gpus: expected the number of GPUs with --dry-run (counting them needs a device), "
                                   "got none");
}

TEST_CASE("bench::resolve_nccl_options: the launcher and its flags", "[bench]") {
  CHECK(parse({}, {{"OMPI_COMM_WORLD_SIZE", "8"}}, true).launcher == NcclLauncher::mpi);
  CHECK(parse({}, {{"PMIX_RANK", "0"}}, true).launcher == NcclLauncher::mpi);
  CHECK(parse({"--launcher", "single"}, {{"OMPI_COMM_WORLD_SIZE", "8"}}, true).launcher ==
        NcclLauncher::single_process);
  CHECK(error_of({"--launcher", "mpi"}) ==
        "--launcher: expected single or file (this dtsim-bench was built without MPI), got \"mpi\"");
  CHECK(error_of({}, {{"SLURM_NTASKS", "16"}}) ==
        "--bootstrap-file: expected a path on a shared filesystem when started as 16 processes without MPI (or "
        "--launcher single), got none");
  CHECK(error_of({"--rank", "1"}) == "--rank: expected only with the file launcher (--bootstrap-file), got \"1\"");
  CHECK(error_of({"--device", "1"}) ==
        "--device: expected only with the mpi or file launcher (single-process mode uses devices 0 to -g minus 1), got "
        "\"1\"");
  CHECK(error_of({"--bootstrap-file", "/tmp/id", "--nranks", "2", "--rank", "0", "-g", "2"}) ==
        "--gpus: expected only in single-process mode (the mpi and file launchers drive one GPU per process), got "
        "\"2\"");
  CHECK(error_of({"-g", "8"}, {{"OMPI_COMM_WORLD_SIZE", "8"}}, true) ==
        "--gpus: expected only in single-process mode (the mpi and file launchers drive one GPU per process), got "
        "\"8\"");
}

TEST_CASE("bench::resolve_nccl_options: file launcher defaults from SLURM and Open MPI", "[bench]") {
  NcclOptions o = parse({"--bootstrap-file", "/shared/id"},
                        {{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "16"}, {"SLURM_LOCALID", "1"}});
  CHECK(o.launcher == NcclLauncher::file);
  CHECK(o.rank == 5);
  CHECK(o.nranks == 16);
  CHECK(o.device == 1);
  CHECK(o.bootstrap_file == "/shared/id");
  CHECK(o.bootstrap_timeout_s == 120);
  // mpirun inside a SLURM allocation sets both; SLURM_PROCID is then the node's daemon, not the rank.
  NcclOptions both = parse({"--bootstrap-file", "/shared/id"},
                           {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"OMPI_COMM_WORLD_RANK", "3"},
                            {"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "3"}});
  CHECK(both.rank == 3);
  CHECK(both.nranks == 8);
  CHECK(both.device == 3);
  NcclOptions flags = parse({"--bootstrap-file", "/shared/id", "--rank", "2", "--nranks", "4", "--device", "0",
                             "--bootstrap-timeout", "30"},
                            {{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "16"}});
  CHECK(flags.rank == 2);
  CHECK(flags.nranks == 4);
  CHECK(flags.device == 0);
  CHECK(flags.bootstrap_timeout_s == 30);
  CHECK_FALSE(parse({"--bootstrap-file", "/x", "--rank", "0", "--nranks", "2"}).device);  // rank mod devices
}

TEST_CASE("bench::resolve_nccl_options: file launcher errors", "[bench]") {
  CHECK(error_of({"--bootstrap-file", "/x", "--rank", "0"}) ==
        "--nranks: expected the number of ranks (or OMPI_COMM_WORLD_SIZE or SLURM_NTASKS set), got none");
  CHECK(error_of({"--bootstrap-file", "/x", "--nranks", "4"}) ==
        "--rank: expected this process's rank (or OMPI_COMM_WORLD_RANK or SLURM_PROCID set), got none");
  CHECK(error_of({"--bootstrap-file", "/x", "--nranks", "4", "--rank", "4"}) ==
        "--rank: expected an integer in [0, 3], got \"4\"");
  CHECK(error_of({"--bootstrap-file", "/x"}, {{"SLURM_PROCID", "x"}, {"SLURM_NTASKS", "4"}}) ==
        "SLURM_PROCID: expected an integer in [0, 3], got \"x\"");
  CHECK(error_of({"--bootstrap-file", "/x", "--nranks", "2", "--rank", "0", "--bootstrap-timeout", "0"}) ==
        "--bootstrap-timeout: expected an integer in [1, 86400], got \"0\"");
  CHECK(error_of({"--launcher", "file"}) ==
        "--bootstrap-file: expected a path on a shared filesystem for the file launcher, got none");
}

TEST_CASE("bench::planned_ranks: what --dry-run counts for", "[bench]") {
  CHECK(planned_ranks(parse({"-g", "4", "--dry-run"})) == 4);
  NcclOptions mpi = parse({"--dry-run"}, {{"OMPI_COMM_WORLD_SIZE", "16"}, {"OMPI_COMM_WORLD_RANK", "3"}}, true);
  CHECK(planned_ranks(mpi) == 16);
  CHECK(mpi.rank == 3);  // only rank 0 prints the plan
  CHECK(planned_ranks(parse({"--bootstrap-file", "/x", "--dry-run"}, {{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}})) ==
        2);
  CHECK(error_of({"--dry-run"}, {{"PMIX_RANK", "0"}}, true) ==
        "--dry-run: expected the number of MPI ranks in OMPI_COMM_WORLD_SIZE, PMI_SIZE or SLURM_NTASKS, got none");
}
