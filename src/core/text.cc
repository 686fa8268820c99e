#include "core/text.h"

#include <cstdint>
#include <cstdio>

namespace dtsim {

namespace {

// Length of the well-formed UTF-8 sequence starting at s[i] (RFC 3629 section 4's table), 0 if
// there is none.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  auto cont = [&](std::size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) { return i + k < s.size() && b(k) >= lo && b(k) <= hi; };
  unsigned c = b(0);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
  if (c == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

void hex(std::string& out, unsigned char c) {
  char buf[5];
  std::snprintf(buf, sizeof buf, "\\x%02X", c);
  out += buf;
}

}  // namespace

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = utf8_length(s, i);
    if (n == 0) {
      hex(out, c);
      ++i;
    } else if (n == 1 && (c < 0x20 || c == 0x7F)) {
      if (c == '\n') out += "\\n";
      else if (c == '\r') out += "\\r";
      else if (c == '\t') out += "\\t";
      else hex(out, c);
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string path_problem(std::string_view path) {
  if (path.empty()) return "expected a file path, got \"\"";
  if (path.find('\0') != std::string_view::npos) return "expected a file path, got one holding a NUL byte";
  if (path.size() > kMaxPathBytes)
    return "expected a file path of at most " + std::to_string(kMaxPathBytes) + " bytes, got " +
           std::to_string(path.size());
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (end - start > kMaxNameBytes)
      return "expected a file path whose names are at most " + std::to_string(kMaxNameBytes) + " bytes, got one of " +
             std::to_string(end - start) + " (\"" + printable(path.substr(start, 24)) + "...\")";
    start = end + 1;
  }
  return "";
}

}  // namespace dtsim
