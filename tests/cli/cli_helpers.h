#pragma once
// Running the dtsim binary from Catch2 tests: a successful --json run, and bad input.
#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

#include <nlohmann/json.hpp>

#include "helpers.h"

namespace dtsim::test {

/// Runs `dtsim ARGS`, requires exit 0 and an empty stderr, and parses stdout as one JSON document.
inline nlohmann::json run_json(const std::string& args) {
  auto r = run_dtsim(args);
  INFO("dtsim " << args << "\nstderr: " << r.err);
  REQUIRE(r.status == 0);
  REQUIRE(r.err.empty());
  return nlohmann::json::parse(r.out);  // throws unless stdout is exactly one JSON document
}

/// Bad input: status 2, nothing on stdout, exactly one line on stderr matching `line`.
template <class Matcher>
void check_bad(const std::string& args, const Matcher& line) {
  auto r = run_dtsim(args);
  INFO("dtsim " << args);
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK_THAT(r.err, line);
}

}  // namespace dtsim::test
