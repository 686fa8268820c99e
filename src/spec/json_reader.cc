#include "spec/json_reader.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/errors.h"
#include "core/text.h"

namespace dtsim::spec {
namespace {

// Line and column of a byte offset, for parse errors a person can find.
std::pair<std::size_t, std::size_t> line_column(const std::string& text, std::size_t offset) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') { ++line; col = 1; } else { ++col; }
  }
  return {line, col};
}

std::string join(std::initializer_list<const char*> items) {
  std::string out;
  for (const char* s : items) out += (out.empty() ? "" : ", ") + std::string(s);
  return out;
}

}  // namespace

nlohmann::json parse_json_text(const std::string& text, const std::string& file) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    auto [line, col] = line_column(text, e.byte == 0 ? 0 : e.byte - 1);
    std::string what = e.what();
    // nlohmann prefixes "[json.exception.parse_error.101] parse error at line 1, column 2: "
    auto pos = what.find(": ");
    std::string detail = pos == std::string::npos ? what : what.substr(pos + 2);
    throw SpecError(file, "malformed JSON at line " + std::to_string(line) + ", column " +
                              std::to_string(col) + ": " + detail);
  } catch (const nlohmann::json::out_of_range& e) {
    // 406: a number beyond a double's range ("1e400"); nlohmann gives no position for it.
    std::string what = e.what();
    auto pos = what.find("] ");
    throw SpecError(file, "expected JSON numbers within a double's range, got " +
                              (pos == std::string::npos ? what : what.substr(pos + 2)));
  }
}

std::string json_text(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string read_text_file(const std::string& path) {
  if (std::string problem = path_problem(path); !problem.empty())
    throw SpecError(printable(path.substr(0, 64)) + (path.size() > 64 ? "..." : ""), problem);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SpecError(path, std::string("cannot open file (") + std::strerror(errno) + ")");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}


std::string describe(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::string: return v.dump();
    case nlohmann::json::value_t::boolean: return v.get<bool>() ? "true" : "false";
    default: return v.dump();
  }
}

ObjectReader::ObjectReader(const nlohmann::json& j, std::string file, std::string pointer)
    : j_(j), file_(std::move(file)), pointer_(std::move(pointer)) {
  if (!j_.is_object())
    throw SpecError(file_ + ":" + (pointer_.empty() ? "/" : pointer_), "expected an object, got " + describe(j_));
}

std::string ObjectReader::pointer(const std::string& key) const {
  return pointer_ + "/" + escape_pointer_token(key);
}

std::string ObjectReader::where(const std::string& key) const { return file_ + ":" + pointer(key); }

void ObjectReader::fail(const std::string& key, const std::string& message) const {
  throw SpecError(where(key), message);
}

bool ObjectReader::has(const std::string& key) const {
  auto it = j_.find(key);
  return it != j_.end() && !it->is_null();
}

const nlohmann::json* ObjectReader::value(const std::string& key) {
  read_.insert(key);
  auto it = j_.find(key);
  if (it == j_.end() || it->is_null()) return nullptr;
  return &*it;
}

const nlohmann::json* ObjectReader::required(const std::string& key) {
  const nlohmann::json* v = value(key);
  if (v == nullptr) {
    bool present = j_.contains(key);
    fail(key, present ? "expected a value, got null" : "missing required key");
  }
  return v;
}

std::optional<std::int64_t> ObjectReader::optional_integer(const std::string& key, std::int64_t min,
                                                           std::int64_t max) {
  const nlohmann::json* v = value(key);
  if (v == nullptr) return std::nullopt;
  std::string range = max == std::numeric_limits<std::int64_t>::max()
                          ? ">= " + std::to_string(min)
                          : "in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  // A float counts when it is a whole number an int64 holds (casting 1e70 would be undefined).
  auto whole = [](double d) { return d >= -9.2e18 && d <= 9.2e18 && d == std::trunc(d); };
  bool integral = v->is_number_integer() || (v->is_number_float() && whole(v->get<double>()));
  if (!integral) fail(key, "expected an integer " + range + ", got " + describe(*v));
  std::int64_t x = v->is_number_unsigned() && v->get<std::uint64_t>() > static_cast<std::uint64_t>(max)
                       ? max + (max < std::numeric_limits<std::int64_t>::max() ? 1 : 0)
                       : v->get<std::int64_t>();
  if (x < min || x > max) fail(key, "expected an integer " + range + ", got " + describe(*v));
  return x;
}

std::int64_t ObjectReader::integer(const std::string& key, std::int64_t min, std::int64_t max) {
  required(key);
  return *optional_integer(key, min, max);
}

std::optional<double> ObjectReader::optional_positive(const std::string& key, bool allow_zero) {
  const nlohmann::json* v = value(key);
  if (v == nullptr) return std::nullopt;
  const char* want = allow_zero ? "expected a number >= 0, got " : "expected a number > 0, got ";
  if (!v->is_number()) fail(key, want + describe(*v));
  double x = v->get<double>();
  if (!(allow_zero ? x >= 0 : x > 0) || !std::isfinite(x)) fail(key, want + describe(*v));
  return x;
}

double ObjectReader::positive(const std::string& key, bool allow_zero) {
  required(key);
  return *optional_positive(key, allow_zero);
}

std::optional<std::string> ObjectReader::optional_string(const std::string& key) {
  const nlohmann::json* v = value(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) fail(key, "expected a string, got " + describe(*v));
  return v->get<std::string>();
}

std::string ObjectReader::string(const std::string& key) {
  required(key);
  return *optional_string(key);
}

std::optional<bool> ObjectReader::optional_boolean(const std::string& key) {
  const nlohmann::json* v = value(key);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) fail(key, "expected true or false, got " + describe(*v));
  return v->get<bool>();
}

bool ObjectReader::boolean(const std::string& key) {
  required(key);
  return *optional_boolean(key);
}

std::optional<std::size_t> ObjectReader::optional_choice(const std::string& key,
                                                         std::initializer_list<const char*> choices) {
  const nlohmann::json* v = value(key);
  if (v == nullptr) return std::nullopt;
  if (v->is_string()) {
    std::size_t i = 0;
    for (const char* c : choices) {
      if (v->get<std::string>() == c) return i;
      ++i;
    }
  }
  fail(key, "expected one of " + join(choices) + ", got " + describe(*v));
}

std::size_t ObjectReader::choice(const std::string& key, std::initializer_list<const char*> choices) {
  required(key);
  return *optional_choice(key, choices);
}

ObjectReader ObjectReader::object(const std::string& key) {
  return ObjectReader(*required(key), file_, pointer(key));
}

const nlohmann::json& ObjectReader::array(const std::string& key) {
  const nlohmann::json* v = required(key);
  if (!v->is_array()) fail(key, "expected an array, got " + describe(*v));
  return *v;
}

void ObjectReader::skip(const std::string& key) { read_.insert(key); }

std::vector<std::string> ObjectReader::unread() const {
  std::vector<std::string> keys;
  for (const auto& [key, v] : j_.items())
    if (read_.count(key) == 0) keys.push_back(key);
  return keys;
}

void ObjectReader::finish() const {
  for (const auto& [key, v] : j_.items()) {
    if (read_.count(key) == 0) {
      std::string known;
      for (const auto& k : read_) known += (known.empty() ? "" : ", ") + k;
      fail(key, "unknown key (expected one of: " + known + ")");
    }
  }
}

void expect_schema(ObjectReader& r, const std::string& expected) {
  std::string schema = r.string("schema");
  if (schema != expected) r.fail("schema", "expected \"" + expected + "\", got \"" + schema + "\"");
}

}  // namespace dtsim::spec
