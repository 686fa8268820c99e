#include "calibrate/nccl_tests_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "calibrate/nccl_tests.h"

namespace dtsim::calibrate {
namespace detail {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

Words words(std::string_view s) {
  Words out;
  for (std::size_t i = 0; i < s.size();) {
    while (i < s.size() && is_space(s[i])) ++i;
    std::size_t j = i;
    while (j < s.size() && !is_space(s[j])) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::size_t skip_digits(std::string_view s, std::size_t i) {
  while (i < s.size() && is_digit(s[i])) ++i;
  return i;
}

bool looks_numeric(std::string_view s) {
  std::size_t i = !s.empty() && (s[0] == '-' || s[0] == '+') ? 1 : 0;
  std::size_t end = skip_digits(s, i), digits = end - i;
  if (end < s.size() && s[end] == '.') {
    std::size_t dot = end;
    end = skip_digits(s, dot + 1);
    digits += end - dot - 1;
  }
  if (digits == 0) return false;
  if (end < s.size() && (s[end] == 'e' || s[end] == 'E')) {
    std::size_t e = end + 1 < s.size() && (s[end + 1] == '-' || s[end + 1] == '+') ? end + 2 : end + 1;
    end = skip_digits(s, e);
    if (end == e) return false;
  }
  return end == s.size();
}

std::optional<std::int64_t> to_int(std::string_view s) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> to_real(std::string_view s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string str(std::int64_t v) { return std::to_string(v); }
std::string where(const std::string& file, int line) { return file + ":" + std::to_string(line); }
std::string plural(std::int64_t n, const std::string& one, const std::string& many) {
  return str(n) + " " + (n == 1 ? one : many.empty() ? one + "s" : many);
}
std::string shown(std::string_view token) { return quoted_token(std::string(token)); }

std::string_view unquoted(std::string_view t) {
  auto junk = [](char c) { return c == '\'' || c == '"' || c == ';' || c == '`' || c == '(' || c == ')'; };
  while (!t.empty() && junk(t.front())) t.remove_prefix(1);
  while (!t.empty() && junk(t.back())) t.remove_suffix(1);
  return t;
}

std::string_view basename(std::string_view t) {
  t = unquoted(t);
  std::size_t slash = t.rfind('/');
  return slash == npos ? t : t.substr(slash + 1);
}

}  // namespace detail

namespace {

// Length of the valid UTF-8 sequence starting at s[i] (2 to 4 bytes), or 0.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  std::size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  unsigned char c1 = byte(i + 1);  // overlong forms, surrogates, beyond U+10FFFF
  if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) || (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F))
    return 0;
  return n;
}

}  // namespace

std::string quoted_token(const std::string& token) {
  constexpr std::size_t kMax = 40;
  std::string_view s(token.data(), std::min(token.size(), kMax));
  std::string out = "\"";
  for (std::size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = c >= 0x80 ? utf8_length(s, i) : 0;
    if (c == '"' || c == '\\') {
      out += '\\', out += static_cast<char>(c), ++i;
    } else if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c), ++i;
    } else if (n) {
      out.append(s.substr(i, n)), i += n;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      out += buf, ++i;
    }
  }
  out += '"';
  if (token.size() > kMax) out += "... (" + std::to_string(token.size()) + " bytes)";
  return out;
}

}  // namespace dtsim::calibrate
