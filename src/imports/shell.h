#pragma once
// Internal to src/imports: a small, honest reader of bash launch scripts. It splits a script into
// simple commands and expands the variables the script itself assigns (quotes, backslash
// continuations, comments, $VAR, ${VAR}, ${VAR:-default}, arrays, $((arithmetic))); it never runs
// anything, so a value from outside the script ($1, an unset variable, $(command)) stays unknown.
//
// Limits, on purpose: control flow is not followed (an assignment inside `if` applies as if the
// branch ran; later assignments win), functions are not called, globs and braces stay literal.
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace dtsim::imports::shell {

/// One word after expansion. `known` is false when part of it comes from outside the script; its
/// text is then the source text (e.g. "$DATA_PATH/train"), for messages.
struct Word {
  std::string text;
  bool known = true;
  std::size_t unknown_from = std::string::npos;  ///< where the part from outside starts (npos: none)
  /// Where the word's bytes come from: (offset in text, source line) at each change of line.
  std::vector<std::pair<std::size_t, int>> lines;
  [[nodiscard]] int line() const { return lines.empty() ? 0 : lines.front().second; }
  /// Source line of byte `offset` of the text.
  [[nodiscard]] int line_at(std::size_t offset) const;
};

/// A variable's value: a string (one item) or an array's elements.
struct Value {
  std::vector<Word> items;
  bool array = false;
};

/// The variables the script has assigned so far.
class Variables {
 public:
  /// The value of `name`, or nullptr when the script has not assigned it.
  [[nodiscard]] const Value* find(const std::string& name) const;
  /// NAME=value or NAME=(...); `append` for NAME+=.
  void assign(const std::string& name, Value v, bool append);

 private:
  std::map<std::string, Value> vars_;
};

/// A simple command after expansion, without its leading assignments and reserved words.
struct Command {
  std::vector<Word> words;
  int line = 0;  ///< where it starts
};

using Visit = std::function<void(const Command&, const Variables&)>;

/// Calls `visit` for each simple command of the script in order, with the variables as they are
/// when it would run. Throws SpecError("FILE:LINE", ...) for an unterminated quote, substitution
/// or array, or a script whose expansions exceed 16 MiB (a variable doubled again and again).
void read_script(const std::string& text, const std::string& file, const Visit& visit);

}  // namespace dtsim::imports::shell
