#pragma once
// dtsim-check/1: scenarios (a dtsim command line each) and the values their --json output must
// keep, by JSON pointer. Read by `dtsim check` (src/cli/cmd_check.cc).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtsim::spec {

/// One expectation: the value at a JSON pointer of the scenario's output.
struct Expectation {
  std::string pointer;              ///< RFC 6901, e.g. "/configs/0/step_time_s"
  nlohmann::json value;             ///< numbers compare within tolerance_pct, anything else exactly
  std::optional<double> tolerance_pct;  ///< as written (absent: kDefaultTolerancePct)
};

inline constexpr double kDefaultTolerancePct = 1.0;

struct Scenario {
  std::string name;
  std::vector<std::string> run;  ///< dtsim's arguments, the subcommand first
  std::vector<Expectation> expect;  ///< in file order; empty: `--update` records the defaults
  bool has_expect = false;          ///< "expect" present (possibly empty)
};

struct CheckFile {
  std::vector<Scenario> scenarios;
};

/// The subcommands a scenario may run (each prints one JSON object with --json).
[[nodiscard]] const std::vector<std::string>& checkable_commands();

/// Parses a dtsim-check/1 file. Throws SpecError with file and JSON pointer: unknown keys, a run
/// that is not a non-empty array of strings naming a checkable subcommand, a pointer that is not
/// RFC 6901 syntax, a tolerance outside [0, 1000], duplicate scenario names.
[[nodiscard]] CheckFile parse_check_file(const std::string& text, const std::string& file);

/// The file's text for `f`: keys in schema order, expectations by pointer (sorted), numbers as
/// written (recorded values are rounded to 6 significant digits by the caller), 2-space indent.
[[nodiscard]] std::string check_file_text(const CheckFile& f);

}  // namespace dtsim::spec
