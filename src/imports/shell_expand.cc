// Parameter and arithmetic expansion (bash(1), "EXPANSION"), limited to what a launch script needs:
// $NAME, ${NAME}, ${NAME[@]}, ${NAME[i]}, ${NAME:-word} (and -, :=, =, :+, +), $((integer math)).
// Command substitution is never run: $(...) and `...` stay unknown, as do $1, $@ and the like.
#include <cstring>
#include <limits>
#include <string>

#include "imports/draft.h"
#include "imports/shell_lexer.h"

namespace dtsim::imports::shell {
namespace {

bool name_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }
bool digit(char c) { return c >= '0' && c <= '9'; }

constexpr int kMaxDepth = 16;  // ${A:-${B:-...}} nesting, and $((...)) parentheses x 4

bool empty(const Value& v) { return v.items.empty() || (v.items.size() == 1 && v.items[0].known && v.items[0].text.empty()); }
bool unknown(const Value& v) { return !v.items.empty() && !v.items[0].known; }

// Integer arithmetic by recursive descent (sum > product > factor); nullopt for anything else.
class Arithmetic {
 public:
  Arithmetic(std::string_view s, const Variables& vars) : s_(s), vars_(vars) {}
  std::optional<std::int64_t> run() {
    std::optional<std::int64_t> v = sum(0);
    skip();
    return i_ == s_.size() ? v : std::nullopt;
  }

 private:
  void skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n')) ++i_;
  }
  char peek() {
    skip();
    return i_ < s_.size() ? s_[i_] : '\0';
  }
  std::optional<std::int64_t> sum(int depth) {
    std::optional<std::int64_t> a = product(depth);
    for (char c = peek(); a && (c == '+' || c == '-'); c = peek()) {
      ++i_;
      std::optional<std::int64_t> b = product(depth);
      std::int64_t r = 0;
      if (!b || (c == '+' ? __builtin_add_overflow(*a, *b, &r) : __builtin_sub_overflow(*a, *b, &r))) return {};
      a = r;
    }
    return a;
  }
  std::optional<std::int64_t> product(int depth) {
    std::optional<std::int64_t> a = factor(depth);
    for (char c = peek(); a && (c == '*' || c == '/' || c == '%'); c = peek()) {
      ++i_;
      std::optional<std::int64_t> b = factor(depth);
      if (!b) return {};
      std::int64_t r = 0;
      if (c == '*') {
        if (__builtin_mul_overflow(*a, *b, &r)) return {};
      } else {
        if (*b == 0 || (*a == std::numeric_limits<std::int64_t>::min() && *b == -1)) return {};
        r = c == '/' ? *a / *b : *a % *b;
      }
      a = r;
    }
    return a;
  }
  std::optional<std::int64_t> factor(int depth) {
    if (depth > 4 * kMaxDepth) return {};
    char c = peek();
    if (c == '(') {
      ++i_;
      std::optional<std::int64_t> v = sum(depth + 1);
      if (peek() != ')') return {};
      ++i_;
      return v;
    }
    if (c == '+' || c == '-') {
      ++i_;
      std::optional<std::int64_t> v = factor(depth + 1);
      if (!v || (c == '-' && *v == std::numeric_limits<std::int64_t>::min())) return {};
      return c == '-' ? -*v : *v;
    }
    if (digit(c)) return number();
    return variable();
  }
  std::optional<std::int64_t> number() {
    std::size_t b = i_;
    while (i_ < s_.size() && name_char(s_[i_])) ++i_;
    std::string_view text = s_.substr(b, i_ - b);
    if (text.size() > 1 && text[0] == '0') return {};  // octal or hex in bash: not taken on trust
    return parse_integer(text);
  }
  // NAME, $NAME or ${NAME}: a variable the script set to an integer.
  std::optional<std::int64_t> variable() {
    bool braced = false;
    if (i_ < s_.size() && s_[i_] == '$') {
      ++i_;
      braced = i_ < s_.size() && s_[i_] == '{';
      if (braced) ++i_;
    }
    std::size_t b = i_;
    while (i_ < s_.size() && name_char(s_[i_])) ++i_;
    if (i_ == b || !name_start(s_[b])) return {};
    std::string name(s_.substr(b, i_ - b));
    if (braced && (i_ >= s_.size() || s_[i_++] != '}')) return {};
    const Value* v = vars_.find(name);
    if (v == nullptr || v->items.empty() || !v->items[0].known) return {};
    std::string_view text = v->items[0].text;
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
    return parse_integer(text);
  }

  std::string_view s_;
  std::size_t i_ = 0;
  const Variables& vars_;
};

}  // namespace

std::optional<std::int64_t> evaluate_arithmetic(std::string_view expr, const Variables& vars) {
  return Arithmetic(expr, vars).run();
}

void Lexer::dollar(Fields& f, bool quoted, bool split) {
  char n = peek(1);
  if (n == '(' && peek(2) == '(') return arithmetic(f);
  if (n == '(') return substitution(f);
  if (n == '{') return brace(f, quoted, split);
  if (n == '\'' && !quoted) return ansi_c(f);
  if (n == '"' && !quoted) return advance();  // $"..." (a translated string) is "..."
  int line = line_;
  std::size_t start = pos_;
  if (name_start(n)) {
    advance();
    while (!eof() && name_char(peek())) advance();
    std::string name(s_.substr(start + 1, pos_ - start - 1));
    return expand(f, name, "", quoted, split, s_.substr(start, pos_ - start), line);
  }
  if (n != '\0' && (digit(n) || std::strchr("@*#?$!-", n) != nullptr)) {  // $1, $@, $#...: set at run time
    advance();
    advance();
    return f.unknown(s_.substr(start, 2), line);
  }
  f.literal('$', line);
  advance();
}

void Lexer::expand(Fields& f, const std::string& name, const std::string& index, bool quoted, bool split,
                   std::string_view raw, int line) {
  const Value* v = vars_.find(name);
  if (v == nullptr) return f.unknown(raw, line);  // not assigned in the script: from the environment
  std::vector<const Word*> items;
  bool all = index == "@" || index == "*";
  if (all) {
    for (const Word& w : v->items) items.push_back(&w);
  } else {
    std::optional<std::int64_t> i = index.empty() ? 0 : parse_integer(index);
    if (!i || *i < 0) return f.unknown(raw, line);
    if (static_cast<std::size_t>(*i) < v->items.size()) items.push_back(&v->items[static_cast<std::size_t>(*i)]);
  }
  // "${A[@]}" and unquoted ${A[@]} in a command give one field per element; elsewhere they join.
  bool fields = split && all && (index == "@" || !quoted);
  for (std::size_t k = 0; k < items.size(); ++k) {
    if (k > 0 && fields) f.next();
    else if (k > 0) f.literal(' ', line);
    if (split && !quoted) f.split(*items[k]);
    else f.text(*items[k]);
  }
}

std::string_view Lexer::balanced(char open, char close, const char* what, const char* closing, int start_line) {
  std::size_t begin = pos_;
  int depth = 0;
  for (;;) {
    if (eof())
      fail(start_line, std::string("expected ") + closing + " closing " + what + " opened here, got end of file");
    char c = peek();
    if (c == '\\') {
      advance();
      if (!eof()) advance();
      continue;
    }
    if (c == '\'' || c == '"') {  // a quoted span inside: its brackets do not count
      advance();
      while (!eof() && peek() != c) {
        if (c == '"' && peek() == '\\') advance();
        if (!eof()) advance();
      }
      if (!eof()) advance();
      continue;
    }
    if (c == close && depth == 0) {
      std::string_view inside = s_.substr(begin, pos_ - begin);
      advance();
      return inside;
    }
    if (c == open) ++depth;
    if (c == close) --depth;
    advance();
  }
}

void Lexer::brace(Fields& f, bool quoted, bool split) {
  int line = line_;
  std::size_t start = pos_;
  advance();
  advance();
  std::string_view body = balanced('{', '}', "${", "}", line);
  parameter(f, body, s_.substr(start, pos_ - start), line, quoted, split);
}

Word Lexer::sub_value(std::string_view text, int line) {
  if (depth_ >= kMaxDepth)
    fail(line, "expected ${...} nested at most " + std::to_string(kMaxDepth) + " deep, got deeper");
  Lexer sub(text, file_, line, vars_, budget_, depth_ + 1);
  return sub.value();
}

void Lexer::parameter(Fields& f, std::string_view body, std::string_view raw, int line, bool quoted, bool split) {
  if (body.empty() || !name_start(body[0])) return f.unknown(raw, line);  // ${#A}, ${!A}, ${1}, ${@}
  std::size_t i = 0;
  while (i < body.size() && name_char(body[i])) ++i;
  std::string name(body.substr(0, i)), index;
  if (i < body.size() && body[i] == '[') {
    std::size_t e = body.find(']', i);
    if (e == std::string_view::npos) return f.unknown(raw, line);
    index = std::string(body.substr(i + 1, e - i - 1));
    i = e + 1;
  }
  std::string_view rest = body.substr(i);
  if (rest.empty()) return expand(f, name, index, quoted, split, raw, line);
  bool colon = rest[0] == ':';
  if (colon) rest.remove_prefix(1);
  if (rest.empty() || (rest[0] != '-' && rest[0] != '=' && rest[0] != '+'))
    return f.unknown(raw, line);  // ${A:2}, ${A%x}, ${A/x/y}, ...: not followed
  char operation = rest[0];
  const Value* v = vars_.find(name);
  if (v != nullptr && unknown(*v)) return f.unknown(raw, line);
  bool set = v != nullptr && !(colon && empty(*v));
  if (operation != '+' && set) return expand(f, name, index, quoted, split, raw, line);
  if (operation == '+' && !set) return;
  Word w = sub_value(rest.substr(1), line);
  if (operation == '=') vars_.assign(name, Value{{w}, false}, false);
  if (split && !quoted) f.split(w);
  else f.text(w);
}

void Lexer::arithmetic(Fields& f) {
  int line = line_;
  std::size_t start = pos_;
  for (int k = 0; k < 3; ++k) advance();
  std::string_view body = balanced('(', ')', "$((", "))", line);
  if (peek() != ')') {  // $((a) b): a command substitution starting with a subshell
    balanced('(', ')', "$(", ")", line);
    return f.unknown(s_.substr(start, pos_ - start), line);
  }
  advance();
  std::optional<std::int64_t> v = evaluate_arithmetic(body, vars_);
  if (!v) return f.unknown(s_.substr(start, pos_ - start), line);
  for (char c : std::to_string(*v)) f.literal(c, line);
}

void Lexer::substitution(Fields& f) {
  int line = line_;
  std::size_t start = pos_;
  advance();
  advance();
  balanced('(', ')', "$(", ")", line);
  f.unknown(s_.substr(start, pos_ - start), line);
}

void Lexer::backtick(Fields& f) {
  int line = line_;
  std::size_t start = pos_;
  advance();
  for (;;) {
    if (eof()) fail(line, "expected a closing ` for the command substitution opened here, got end of file");
    char c = peek();
    advance();
    if (c == '`') break;
    if (c == '\\' && !eof()) advance();
  }
  f.unknown(s_.substr(start, pos_ - start), line);
}

void Lexer::ansi_c(Fields& f) {
  int open = line_;
  advance();
  advance();
  f.mark_quoted(open);
  for (;;) {
    if (eof()) fail(open, "expected a closing ' for the $'...' quote opened here, got end of file");
    char c = peek();
    advance();
    if (c == '\'') return;
    if (c != '\\' || eof()) {
      f.literal(c, line_);
      continue;
    }
    char e = peek();
    advance();
    switch (e) {
      case 'n': f.literal('\n', line_); break;
      case 't': f.literal('\t', line_); break;
      case '\\': case '\'': case '"': f.literal(e, line_); break;
      default: f.literal('\\', line_); f.literal(e, line_);
    }
  }
}

}  // namespace dtsim::imports::shell
