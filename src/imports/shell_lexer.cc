// Scanning a bash script into simple commands (bash(1), "SHELL GRAMMAR" and "QUOTING"): blanks
// and operators end words, newlines and ; & | ( ) end commands, quotes and backslashes protect,
// NAME=value and NAME=(...) at the start of a command assign. Expansions: shell_expand.cc.
#include <algorithm>
#include <iterator>
#include <string>

#include "core/errors.h"
#include "imports/draft.h"
#include "imports/shell_lexer.h"

namespace dtsim::imports::shell {
namespace {

bool blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }
bool op(char c) { return c == ';' || c == '&' || c == '|' || c == '(' || c == ')' || c == '<' || c == '>'; }
bool name_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }

bool one_of(const std::string& w, std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (w == n) return true;
  return false;
}
// Words that open or close a compound command; stripped from the front of a command.
bool reserved(const Word& w) {
  return w.known && one_of(w.text, {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "for",
                                    "in", "case", "esac", "{", "}", "!", "time", "function", "select"});
}
// Builtins whose arguments may be assignments (export TP=8, declare -a ARGS=(...)).
bool builtin(const Word& w) {
  return w.known && one_of(w.text, {"export", "declare", "typeset", "local", "readonly"});
}

}  // namespace

Lexer::Lexer(std::string_view text, const std::string& file, int line, Variables& vars, Budget& budget, int depth)
    : s_(text), file_(file), line_(line), vars_(vars), budget_(budget), depth_(depth) {}

void Lexer::fail(int line, const std::string& message) const {
  throw SpecError(file_ + ":" + std::to_string(line), message);
}

void Lexer::advance() {
  if (s_[pos_] == '\n') ++line_;
  ++pos_;
}

bool Lexer::continuation() {
  if (peek() != '\\') return false;
  std::size_t n = peek(1) == '\n' ? 2 : (peek(1) == '\r' && peek(2) == '\n') ? 3 : 0;
  if (n == 0) return false;
  pos_ += n;
  ++line_;
  return true;
}

void Lexer::run(const Visit& visit) {
  visit_ = &visit;
  while (!eof()) token();
  end_command();
}

void Lexer::token() {
  char c = peek();
  if (continuation()) return;
  if (blank(c)) {
    advance();
  } else if (c == '\n') {
    advance();
    end_command();
    skip_heredocs();
  } else if (c == '#') {
    skip_comment();
  } else if (c == '<' || c == '>' || (c == '&' && peek(1) == '>')) {
    redirection();
  } else if (op(c)) {
    advance();
    end_command();
  } else {
    word();
  }
}

void Lexer::skip_comment() {
  while (!eof() && peek() != '\n') advance();
}

void Lexer::word() {
  if (assign_ok_ && assignment()) return;
  std::size_t start = pos_;
  int line = line_;
  Fields f(budget_);
  read_fields(f, true, false);
  std::string_view raw = s_.substr(start, pos_ - start);
  // 2>&1: a file-descriptor number belongs to the redirection, not to the command.
  if (!raw.empty() && raw.find_first_not_of("0123456789") == std::string_view::npos && (peek() == '<' || peek() == '>'))
    return;
  std::vector<Word> words = f.take();
  starts_.insert(starts_.end(), words.size(), line);
  add_words(std::move(words));
}

void Lexer::add_words(std::vector<Word> words) {
  for (Word& w : words) {
    bool option = after_builtin_ && w.known && !w.text.empty() && w.text[0] == '-';
    if (builtin(w)) after_builtin_ = true;
    else if (!option) after_builtin_ = false;
    assign_ok_ = reserved(w) || after_builtin_;
    cmd_.words.push_back(std::move(w));
  }
}

bool Lexer::assignment() {
  std::size_t i = pos_;
  if (!name_start(peek())) return false;
  while (i < s_.size() && name_char(s_[i])) ++i;
  std::string name(s_.substr(pos_, i - pos_));
  bool append = i < s_.size() && s_[i] == '+';
  if (append) ++i;
  if (i >= s_.size() || s_[i] != '=') return false;
  pos_ = i + 1;
  if (peek() == '(') {
    advance();
    array(name, append);
    return true;
  }
  int line = line_;
  Fields f(budget_);
  read_fields(f, false, false);
  std::vector<Word> v = f.take();  // without splitting: at most one field
  Word w = v.empty() ? Word{} : std::move(v.front());
  if (w.lines.empty()) w.lines.emplace_back(0, line);
  vars_.assign(name, Value{{std::move(w)}, false}, append);
  return true;
}

void Lexer::array(const std::string& name, bool append) {
  int open = line_;
  Value v;
  v.array = true;
  for (;;) {
    if (eof()) fail(open, "expected ) closing the array " + name + "=( opened here, got end of file");
    char c = peek();
    if (continuation()) continue;
    if (blank(c) || c == '\n') {
      advance();
    } else if (c == '#') {
      skip_comment();
    } else if (c == ')') {
      advance();
      break;
    } else if (op(c)) {
      fail(line_, "expected array elements or ) in " + name + "=(...), got " + quoted(std::string(1, c)));
    } else {
      Fields f(budget_);
      read_fields(f, true, false);
      for (Word& w : f.take()) v.items.push_back(std::move(w));
    }
  }
  vars_.assign(name, std::move(v), append);
}

void Lexer::read_fields(Fields& f, bool split, bool to_end) {
  while (!eof()) {
    char c = peek();
    if (!to_end && (blank(c) || c == '\n' || op(c))) return;
    if (continuation()) continue;
    if (c == '\\') {
      advance();
      if (eof()) {
        f.literal('\\', line_);
        return;
      }
      f.literal(peek(), line_);
      advance();
    } else if (c == '\'') {
      single_quoted(f);
    } else if (c == '"') {
      double_quoted(f, split);
    } else if (c == '$') {
      dollar(f, false, split);
    } else if (c == '`') {
      backtick(f);
    } else {
      f.literal(c, line_);
      advance();
    }
  }
}

void Lexer::single_quoted(Fields& f) {
  int open = line_;
  advance();
  f.mark_quoted(open);
  for (;;) {
    if (eof()) fail(open, "expected a closing ' for the quote opened here, got end of file");
    if (peek() == '\'') {
      advance();
      return;
    }
    f.literal(peek(), line_);
    advance();
  }
}

void Lexer::double_quoted(Fields& f, bool split) {
  int open = line_;
  advance();
  f.mark_quoted(open);
  for (;;) {
    if (eof()) fail(open, "expected a closing \" for the quote opened here, got end of file");
    char c = peek();
    if (c == '"') {
      advance();
      return;
    }
    if (continuation()) continue;
    char n = peek(1);
    if (c == '\\' && (n == '$' || n == '`' || n == '"' || n == '\\')) {  // the only escapes inside "..."
      advance();
      f.literal(n, line_);
      advance();
    } else if (c == '$') {
      dollar(f, true, split);
    } else if (c == '`') {
      backtick(f);
    } else {
      f.literal(c, line_);
      advance();
    }
  }
}

void Lexer::redirection() {
  std::size_t start = pos_;
  while (!eof() && pos_ - start < 3 && (peek() == '<' || peek() == '>' || peek() == '&' || peek() == '|')) advance();
  std::string_view o = s_.substr(start, pos_ - start);
  bool strip_tabs = o == "<<" && peek() == '-';
  if (strip_tabs) advance();
  while (!eof() && blank(peek())) advance();
  if (o == "<<") {  // a here-document: its delimiter, quotes removed; the body follows the line
    std::string delimiter;
    while (!eof() && !blank(peek()) && peek() != '\n' && !op(peek())) {
      if (peek() != '\'' && peek() != '"' && peek() != '\\') delimiter += peek();
      advance();
    }
    if (!delimiter.empty()) heredocs_.emplace_back(delimiter, strip_tabs);
    return;
  }
  Fields target(budget_);  // the file (or descriptor) redirected to: not part of the command
  read_fields(target, true, false);
}

void Lexer::skip_heredocs() {
  for (const auto& [delimiter, strip_tabs] : heredocs_) {
    while (!eof()) {
      std::size_t end = s_.find('\n', pos_);
      std::string_view text = s_.substr(pos_, end == std::string_view::npos ? std::string_view::npos : end - pos_);
      pos_ = end == std::string_view::npos ? s_.size() : end + 1;
      ++line_;
      if (strip_tabs) text.remove_prefix(std::min(text.find_first_not_of('\t'), text.size()));
      if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
      if (text == delimiter) break;
    }
  }
  heredocs_.clear();
}

void Lexer::end_command() {
  std::size_t skip = 0;
  while (skip < cmd_.words.size() && reserved(cmd_.words[skip])) ++skip;
  if (skip < cmd_.words.size() && visit_ != nullptr) {
    Command c;
    c.words.assign(std::make_move_iterator(cmd_.words.begin() + static_cast<std::ptrdiff_t>(skip)),
                   std::make_move_iterator(cmd_.words.end()));
    c.line = starts_[skip];
    (*visit_)(c, vars_);
  }
  cmd_ = Command{};
  starts_.clear();
  assign_ok_ = true;
  after_builtin_ = false;
}

Word Lexer::value() {
  int line = line_;
  Fields f(budget_);
  read_fields(f, false, true);
  std::vector<Word> v = f.take();
  Word w = v.empty() ? Word{} : std::move(v.front());
  if (w.lines.empty()) w.lines.emplace_back(0, line);
  return w;
}

void read_script(const std::string& text, const std::string& file, const Visit& visit) {
  Variables vars;
  Budget budget{.used = 0, .file = file};
  Lexer lexer(text, file, 1, vars, budget, 0);
  lexer.run(visit);
}

}  // namespace dtsim::imports::shell
