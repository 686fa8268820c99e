#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "core/errors.h"
#include "imports/shell.h"
#include "imports/shell_lexer.h"

using dtsim::imports::shell::Command;
using dtsim::imports::shell::read_script;
using dtsim::imports::shell::Variables;
using Catch::Matchers::Equals;
using Words = std::vector<std::string>;

namespace {

// Each command's words as text ("?" marks a word with a part from outside the script).
std::vector<Words> commands(const std::string& script) {
  std::vector<Words> out;
  read_script(script, "s.sh", [&](const Command& c, const Variables&) {
    Words w;
    for (const auto& word : c.words) w.push_back(word.known ? word.text : "?" + word.text);
    out.push_back(w);
  });
  return out;
}

// The line of every word of the last command.
std::vector<int> lines(const std::string& script) {
  std::vector<int> out;
  read_script(script, "s.sh", [&](const Command& c, const Variables&) {
    out.clear();
    for (const auto& word : c.words) out.push_back(word.line());
  });
  return out;
}

}  // namespace

TEST_CASE("imports::shell::read_script: quoting, continuations and comments", "[imports]") {
  CHECK_THAT(commands("a 'b c' \"d $X\"e\\ f # comment\n"), Equals(std::vector<Words>{{"a", "b c", "?d $Xe f"}}));
  CHECK_THAT(commands("a \\\n  b; c && d | e &\n"), Equals(std::vector<Words>{{"a", "b"}, {"c"}, {"d"}, {"e"}}));
  // Redirections are not words; a here-document's body is not commands.
  CHECK_THAT(commands("cat > out.txt 2>&1 <<'EOF'\nx y\nEOF\nz\n"), Equals(std::vector<Words>{{"cat"}, {"z"}}));
  // Reserved words open no command of their own; assignments are not words.
  CHECK_THAT(commands("if [ -n \"$A\" ]; then B=1 c $B; fi\n"),
             Equals(std::vector<Words>{{"[", "-n", "?$A", "]"}, {"c", "1"}}));
  CHECK_THAT(commands("X=''\nf \"$X\" $X\n"), Equals(std::vector<Words>{{"f", ""}}));  // unquoted empty: no word
}

TEST_CASE("imports::shell::read_script: variables, arrays and defaults", "[imports]") {
  const std::string s = R"(S="a  b
c"
A=(x "y z" $S)
A+=(w)
export N=3 M=${UNSET:-4} K=${N:+set}
echo $S "$S" ${A[@]} "${A[@]}" ${A[1]} ${#A[@]} ${N}${M} $K ${UNSET-d} $1
)";
  std::vector<Words> c = commands(s);
  REQUIRE(c.size() == 2);  // export, echo
  // A holds x, "y z", then $S split (a, b, c), then w.
  CHECK_THAT(c[1], Equals(Words{"echo", "a", "b", "c", "a  b\nc", "x", "y", "z", "a", "b", "c", "w", "x", "y z", "a", "b", "c",
                                "w", "y", "z", "?${#A[@]}", "34", "set", "d", "?$1"}));
  // Each word keeps the line its bytes come from: "b" and "c" of $S on lines 1 and 2.
  CHECK_THAT(lines(s), Equals(std::vector<int>{6, 1, 1, 2, 1, 3, 3, 3, 1, 1, 2, 4, 3, 3, 1, 1, 2, 4, 3, 3, 6, 5, 5, 6, 6}));
}

TEST_CASE("imports::shell::evaluate_arithmetic: integers only, never a guess", "[imports]") {
  Variables v;
  read_script("G=8\nN=' 16 '\nx\n", "s.sh", [&](const Command&, const Variables& vars) { v = vars; });
  using dtsim::imports::shell::evaluate_arithmetic;
  CHECK(evaluate_arithmetic("G * N", v) == 128);
  CHECK(evaluate_arithmetic("$G*(${N} - 6) / 4 % 7", v) == 6);  // 8 * 10 / 4 = 20, 20 % 7 = 6
  CHECK(evaluate_arithmetic("-G + +2", v) == -6);
  CHECK_FALSE(evaluate_arithmetic("G / 0", v));
  CHECK_FALSE(evaluate_arithmetic("UNSET * 2", v));  // from the environment: unknown, not 0
  CHECK_FALSE(evaluate_arithmetic("010", v));        // octal in bash
  CHECK_FALSE(evaluate_arithmetic("9223372036854775807 + 1", v));
  CHECK_FALSE(evaluate_arithmetic("G ** 2", v));
  CHECK_FALSE(evaluate_arithmetic(std::string(1000, '(') + "1" + std::string(1000, ')'), v));
}

TEST_CASE("imports::shell::read_script: errors name the line where a construct opens", "[imports]") {
  auto run = [](const std::string& s) { commands(s); };
  REQUIRE_THROWS_WITH(run("a\nb 'c\nd\n"), "s.sh:2: expected a closing ' for the quote opened here, got end of file");
  REQUIRE_THROWS_WITH(run("a ${X:-y\n"), "s.sh:1: expected } closing ${ opened here, got end of file");
  REQUIRE_THROWS_WITH(run("\n\na $(( 1 + (2 )\n"), "s.sh:3: expected )) closing $(( opened here, got end of file");
  REQUIRE_THROWS_WITH(run("a `b\n"), "s.sh:1: expected a closing ` for the command substitution opened here, got end of file");
  REQUIRE_THROWS_WITH(run("A=(a ; b)\n"), "s.sh:1: expected array elements or ) in A=(...), got \";\"");
  // A variable doubled 30 times would be 2^30 bytes: the budget stops it.
  std::string doubling = "A=xxxxxxxxxxxxxxxx\n";
  for (int i = 0; i < 30; ++i) doubling += "A=$A$A\n";
  REQUIRE_THROWS_WITH(run(doubling), Catch::Matchers::StartsWith("s.sh:") &&
                                         Catch::Matchers::Contains("expected a script whose expansions produce at most 16 MiB"));
  std::string nested = "echo ";
  for (int i = 0; i < 20; ++i) nested += "${U:-";
  nested += "x" + std::string(20, '}') + "\n";
  REQUIRE_THROWS_WITH(run(nested), "s.sh:1: expected ${...} nested at most 16 deep, got deeper");
}
