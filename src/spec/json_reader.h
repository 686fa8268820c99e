#pragma once
// Typed, validating access to one JSON object. Every error names the file and the JSON
// pointer, what was expected and what was found; unknown keys are rejected by finish().
// Internal to src/spec: the only place nlohmann/json is read.
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace dtsim::spec {

/// Parses `text` as JSON; throws SpecError("file", "malformed JSON at line L, column C: ...").
[[nodiscard]] nlohmann::json parse_json_text(const std::string& text, const std::string& file);
/// `j` as text (`indent` < 0: one line), bytes that are not UTF-8 replaced by U+FFFD: output
/// never fails on what an input string held.
[[nodiscard]] std::string json_text(const nlohmann::json& j, int indent = 2);
/// Reads a whole file; throws SpecError naming the file when it cannot be opened.
[[nodiscard]] std::string read_text_file(const std::string& path);
/// Short description of a JSON value for error messages: `"abc"`, `-3`, `an array`, `null`.
[[nodiscard]] std::string describe(const nlohmann::json& v);

/// Reads the keys of one JSON object; remembers which were read so finish() can reject the rest.
class ObjectReader {
 public:
  /// Throws SpecError if `j` is not an object.
  ObjectReader(const nlohmann::json& j, std::string file, std::string pointer);

  [[nodiscard]] bool has(const std::string& key) const;  ///< present and not null
  /// Required integer in [min, max].
  [[nodiscard]] std::int64_t integer(const std::string& key, std::int64_t min, std::int64_t max);
  /// Integer in [min, max], or nullopt when absent or null.
  [[nodiscard]] std::optional<std::int64_t> optional_integer(const std::string& key, std::int64_t min,
                                                             std::int64_t max);
  /// Required number > 0 (or >= 0 when `allow_zero`).
  [[nodiscard]] double positive(const std::string& key, bool allow_zero = false);
  /// Number > 0 (or >= 0), or nullopt when absent or null.
  [[nodiscard]] std::optional<double> optional_positive(const std::string& key, bool allow_zero = false);
  [[nodiscard]] std::string string(const std::string& key);
  [[nodiscard]] std::optional<std::string> optional_string(const std::string& key);
  [[nodiscard]] bool boolean(const std::string& key);
  [[nodiscard]] std::optional<bool> optional_boolean(const std::string& key);
  /// Required string that must be one of `choices`; returns its index.
  [[nodiscard]] std::size_t choice(const std::string& key, std::initializer_list<const char*> choices);
  /// Like choice() but nullopt when absent or null.
  [[nodiscard]] std::optional<std::size_t> optional_choice(const std::string& key,
                                                           std::initializer_list<const char*> choices);
  /// A nested object (required).
  [[nodiscard]] ObjectReader object(const std::string& key);
  /// A required array; returns the raw elements (use element_pointer for errors).
  [[nodiscard]] const nlohmann::json& array(const std::string& key);
  /// Marks an optional key as understood without reading it (free-form fields such as "sources").
  void skip(const std::string& key);
  /// Throws SpecError for the first key that was never read.
  void finish() const;
  /// The keys never read, in the object's order (for readers that report them instead of failing).
  [[nodiscard]] std::vector<std::string> unread() const;

  [[nodiscard]] std::string pointer(const std::string& key) const;  ///< pointer of a child key
  [[nodiscard]] std::string where(const std::string& key) const;    ///< "file:pointer" of a key
  [[nodiscard]] const std::string& file() const { return file_; }
  [[nodiscard]] const std::string& own_pointer() const { return pointer_; }
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

 private:
  const nlohmann::json* value(const std::string& key);  ///< marks read; nullptr when absent/null
  const nlohmann::json* required(const std::string& key);

  const nlohmann::json& j_;
  std::string file_;
  std::string pointer_;
  std::set<std::string> read_;
};

/// Reads the "schema" key of a file's top object; throws SpecError unless it is `expected`.
void expect_schema(ObjectReader& r, const std::string& expected);

}  // namespace dtsim::spec
