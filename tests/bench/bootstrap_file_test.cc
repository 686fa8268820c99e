// The file launcher's meeting point (tools/dtsim-bench/bootstrap_file.h), on a temporary directory.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "bootstrap_file.h"

using namespace dtsim::bench;
using Catch::Matchers::Equals;
using namespace std::chrono_literals;

namespace {

// A fresh directory per test, removed afterwards.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::random_device rd;
    path = std::filesystem::temp_directory_path() / ("dtsim-bench-test-" + std::to_string(rd()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  [[nodiscard]] std::string file(const std::string& name) const { return (path / name).string(); }
};

BootstrapRecord record(int nranks, const std::string& job) {
  BootstrapRecord r{.nranks = nranks, .job = job};
  for (int i = 0; i < 128; ++i) r.id.push_back(static_cast<unsigned char>(i * 7));  // NCCL_UNIQUE_ID_BYTES
  return r;
}

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& n) -> std::optional<std::string> {
    auto it = vars.find(n);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

}  // namespace

TEST_CASE("bench::format_bootstrap_record: text that parses back", "[bench]") {
  BootstrapRecord r = record(16, "4242.0");
  std::string text = format_bootstrap_record(r);
  CHECK(text.rfind("dtsim-bench-nccl-bootstrap/1\nnranks 16\njob 4242.0\nid 00070e15", 0) == 0);
  CHECK(parse_bootstrap_record(text) == r);
  CHECK(parse_bootstrap_record(format_bootstrap_record(record(2, ""))) == record(2, ""));
  CHECK_FALSE(parse_bootstrap_record(""));
  CHECK_FALSE(parse_bootstrap_record("dtsim-bench-nccl-bootstrap/1\nnranks 16\njob \nid 0g\n"));
  CHECK_FALSE(parse_bootstrap_record(text.substr(0, 40)));  // cut short
}

TEST_CASE("bench::bootstrap_job_tag: the SLURM job step", "[bench]") {
  CHECK(bootstrap_job_tag(env_of({{"SLURM_JOB_ID", "4242"}, {"SLURM_STEP_ID", "3"}})) == "4242.3");
  CHECK(bootstrap_job_tag(env_of({{"SLURM_JOB_ID", "4242"}})) == "4242.0");
  CHECK(bootstrap_job_tag(env_of({})) == "");
}

TEST_CASE("bench::wait_for_bootstrap_record: finds what rank 0 published", "[bench]") {
  TempDir dir;
  const std::string path = dir.file("id");
  publish_bootstrap_record(path, record(4, "7.0"));
  CHECK(wait_for_bootstrap_record(path, 4, "7.0", 1s, 10ms) == record(4, "7.0"));
  CHECK(wait_for_bootstrap_record(path, 4, "", 1s, 10ms) == record(4, "7.0"));  // outside SLURM: any job
  // Only the record remains beside it: the temporary file was renamed, not copied.
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path), std::filesystem::directory_iterator()) == 1);
  remove_bootstrap_record(path);
  CHECK_FALSE(std::filesystem::exists(path));
  remove_bootstrap_record(path);  // already gone: fine
}

TEST_CASE("bench::wait_for_bootstrap_record: a clear error when it times out", "[bench]") {
  TempDir dir;
  const std::string path = dir.file("id");
  CHECK_THROWS_WITH(wait_for_bootstrap_record(path, 4, "", 20ms, 5ms),
                    Equals("--bootstrap-file: expected rank 0 to write " + path + " for 4 ranks within 0.02 s, got "
                           "no file"));
  publish_bootstrap_record(path, record(8, "6.0"));  // another run's: 8 ranks, job 6.0
  CHECK_THROWS_WITH(wait_for_bootstrap_record(path, 4, "7.0", 20ms, 5ms),
                    Equals("--bootstrap-file: expected rank 0 to write " + path + " for 4 ranks of job 7.0 within "
                           "0.02 s, got a file for 8 ranks of job 6.0 (left over from another run?)"));
  CHECK_THROWS_AS(wait_for_bootstrap_record(path, 8, "7.0", 20ms, 5ms), BootstrapError);  // right size, wrong job
  std::ofstream(path) << "hello";
  CHECK_THROWS_WITH(wait_for_bootstrap_record(path, 4, "", 20ms, 5ms),
                    Equals("--bootstrap-file: expected rank 0 to write " + path + " for 4 ranks within 0.02 s, got "
                           "a file that is not a dtsim-bench bootstrap record"));
}

TEST_CASE("bench::publish_bootstrap_record: an unwritable path names itself", "[bench]") {
  CHECK_THROWS_WITH(publish_bootstrap_record("/nonexistent-dir/id", record(2, "")),
                    Catch::Matchers::StartsWith("--bootstrap-file: cannot write /nonexistent-dir/id.tmp."));
}
