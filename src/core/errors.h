#pragma once
// Errors that reach the user. Only the CLI maps them to exit codes (2 for bad input).
#include <stdexcept>
#include <string>

namespace dtsim {

/// Bad input: a file, a JSON pointer or a flag, and what was expected versus found.
/// what() is one line: "FILE:POINTER: message" or "--flag: message".
class SpecError : public std::runtime_error {
 public:
  /// `where` is "file:/json/pointer", "file" or "--flag"; `message` says expected vs got.
  SpecError(std::string where, std::string message);
  [[nodiscard]] const std::string& where() const { return where_; }
  [[nodiscard]] const std::string& message() const { return message_; }

 private:
  std::string where_;
  std::string message_;
};

/// Escapes one JSON object key for use in a JSON pointer (RFC 6901: ~ -> ~0, / -> ~1).
[[nodiscard]] std::string escape_pointer_token(const std::string& key);

}  // namespace dtsim
