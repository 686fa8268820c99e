#pragma once
// Internal to the shell reader: the lexer that scans a script and expands its words as it goes
// (scanning in shell_lexer.cc, $-expansions in shell_expand.cc).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "imports/shell.h"

namespace dtsim::imports::shell {

/// What a whole script may produce by expansion, bytes and words together, so that a variable
/// doubled 40 times or an array expanded a million times ends as an error, not out of memory.
struct Budget {
  static constexpr std::size_t kLimit = std::size_t{16} << 20;
  std::size_t used = 0;
  std::string file;
};

/// Builds the fields (words) one shell word expands to, from literal bytes and expansions.
class Fields {
 public:
  explicit Fields(Budget& budget) : budget_(budget) {}
  void literal(char c, int line);
  void mark_quoted(int line);              ///< quotes (opened on `line`) make a word even when empty
  void text(const Word& w);                ///< appended as is (quoted, or an assignment's value)
  void split(const Word& w);               ///< an unquoted expansion: blanks separate fields
  void unknown(std::string_view raw, int line);
  void next();  ///< closes the current field ("${A[@]}" gives one field per element)
  [[nodiscard]] std::vector<Word> take();

 private:
  void charge(std::size_t bytes, int line);
  Budget& budget_;
  std::vector<Word> done_;
  Word cur_;
  bool started_ = false;
};

/// Scans shell text from `line` on, expanding with (and assigning to) `vars`.
class Lexer {
 public:
  Lexer(std::string_view text, const std::string& file, int line, Variables& vars, Budget& budget, int depth);
  /// Reads the text as a script, calling `visit` per simple command.
  void run(const Visit& visit);
  /// Reads the whole text as one word without splitting (the word of ${NAME:-word}).
  [[nodiscard]] Word value();

 private:
  // shell_lexer.cc: commands, words, quotes, redirections.
  [[nodiscard]] bool eof() const { return pos_ >= s_.size(); }
  [[nodiscard]] char peek(std::size_t ahead = 0) const { return pos_ + ahead < s_.size() ? s_[pos_ + ahead] : '\0'; }
  void advance();
  bool continuation();
  void token();
  void word();
  bool assignment();
  void array(const std::string& name, bool append);
  void read_fields(Fields& f, bool split, bool to_end);
  void single_quoted(Fields& f);
  void double_quoted(Fields& f, bool split);
  void redirection();
  void skip_heredocs();
  void skip_comment();
  void end_command();
  void add_words(std::vector<Word> words);
  // shell_expand.cc: $NAME, ${...}, $((...)), $(...), `...`, $'...'.
  void dollar(Fields& f, bool quoted, bool split);
  void brace(Fields& f, bool quoted, bool split);
  void expand(Fields& f, const std::string& name, const std::string& index, bool quoted, bool split,
              std::string_view raw, int line);
  void parameter(Fields& f, std::string_view body, std::string_view raw, int line, bool quoted, bool split);
  void arithmetic(Fields& f);
  void substitution(Fields& f);
  void backtick(Fields& f);
  void ansi_c(Fields& f);
  /// Moves past a balanced `open`...`close` span that starts at the current position (just after
  /// its opening `what`, e.g. "${"), skipping quotes; returns its inside. Throws SpecError naming
  /// `closing` when the text ends first.
  std::string_view balanced(char open, char close, const char* what, const char* closing, int start_line);
  [[nodiscard]] Word sub_value(std::string_view text, int line);
  [[noreturn]] void fail(int line, const std::string& message) const;

  std::string_view s_;
  std::size_t pos_ = 0;
  const std::string& file_;
  int line_;
  Variables& vars_;
  Budget& budget_;
  int depth_;
  const Visit* visit_ = nullptr;
  Command cmd_;
  std::vector<int> starts_;     ///< source line where each word of cmd_ starts
  bool assign_ok_ = true;       ///< the next word may be an assignment
  bool after_builtin_ = false;  ///< after export/declare/local/readonly/typeset
  std::vector<std::pair<std::string, bool>> heredocs_;  ///< delimiter, strip leading tabs (<<-)
};

/// $((expr)): + - * / % and parentheses over integers and variables the script set to integers;
/// nullopt when something is unknown, not an integer, divides by zero or overflows.
[[nodiscard]] std::optional<std::int64_t> evaluate_arithmetic(std::string_view expr, const Variables& vars);

}  // namespace dtsim::imports::shell
