// Words, variables and the fields a word expands to: the values the shell lexer works on.
#include <algorithm>
#include <string>
#include <utility>

#include "core/errors.h"
#include "imports/shell_lexer.h"

namespace dtsim::imports::shell {
namespace {

// Marks that byte `offset` of `w` comes from source line `line`.
void mark(Word& w, std::size_t offset, int line) {
  if (!w.lines.empty() && w.lines.back().first == offset) w.lines.back().second = line;
  else if (w.lines.empty() || w.lines.back().second != line) w.lines.emplace_back(offset, line);
}

}  // namespace

int Word::line_at(std::size_t offset) const {
  int line = this->line();
  for (const auto& [o, l] : lines) {
    if (o > offset) break;
    line = l;
  }
  return line;
}

const Value* Variables::find(const std::string& name) const {
  auto it = vars_.find(name);
  return it == vars_.end() ? nullptr : &it->second;
}

void Variables::assign(const std::string& name, Value v, bool append) {
  auto it = vars_.find(name);
  if (!append || it == vars_.end() || it->second.items.empty()) {
    vars_[name] = std::move(v);
    return;
  }
  Value& old = it->second;
  if (v.array) {  // A+=(x y): more elements
    old.array = true;
    for (Word& w : v.items) old.items.push_back(std::move(w));
    return;
  }
  if (v.items.empty()) return;
  Word& first = old.items.front();  // A+=x appends to the string (an array's first element)
  std::size_t base = first.text.size();
  for (const auto& [o, l] : v.items.front().lines) mark(first, base + o, l);
  if (first.known && !v.items.front().known) first.unknown_from = base + std::min(v.items.front().unknown_from, v.items.front().text.size());
  first.text += v.items.front().text;
  first.known = first.known && v.items.front().known;
}

void Fields::charge(std::size_t bytes, int line) {
  budget_.used += bytes;
  if (budget_.used > Budget::kLimit)
    throw SpecError(budget_.file + ":" + std::to_string(line),
                    "expected a script whose expansions produce at most 16 MiB in all, got more (a variable "
                    "expanded or doubled too often)");
}

void Fields::literal(char c, int line) {
  charge(1, line);
  mark(cur_, cur_.text.size(), line);
  cur_.text += c;
  started_ = true;
}

void Fields::mark_quoted(int line) {
  if (cur_.lines.empty()) mark(cur_, 0, line);
  started_ = true;
}

void Fields::text(const Word& w) {
  charge(w.text.size(), w.line());
  std::size_t base = cur_.text.size();
  for (const auto& [o, l] : w.lines) mark(cur_, base + o, l);
  if (cur_.known && !w.known) cur_.unknown_from = base + std::min(w.unknown_from, w.text.size());
  cur_.text += w.text;
  cur_.known = cur_.known && w.known;
  if (!w.text.empty() || !w.known) started_ = true;
}

void Fields::split(const Word& w) {
  if (!w.known) {  // its value is not known, so neither is how it splits: one field
    text(w);
    return;
  }
  charge(w.text.size(), w.line());
  std::size_t m = 0;  // the mark in effect, walked forward with i (linear in the text)
  int line = w.line();
  for (std::size_t i = 0; i < w.text.size(); ++i) {
    while (m < w.lines.size() && w.lines[m].first <= i) line = w.lines[m++].second;
    char c = w.text[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      next();
      continue;
    }
    mark(cur_, cur_.text.size(), line);
    cur_.text += c;
    started_ = true;
  }
}

void Fields::unknown(std::string_view raw, int line) {
  charge(raw.size(), line);
  mark(cur_, cur_.text.size(), line);
  if (cur_.known) cur_.unknown_from = cur_.text.size();
  cur_.text += raw;
  cur_.known = false;
  started_ = true;
}

void Fields::next() {
  if (!started_) return;
  charge(1, cur_.line());
  done_.push_back(std::move(cur_));
  cur_ = Word{};
  started_ = false;
}

std::vector<Word> Fields::take() {
  next();
  return std::move(done_);
}

}  // namespace dtsim::imports::shell
