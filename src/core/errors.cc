#include "core/errors.h"

namespace dtsim {

SpecError::SpecError(std::string where, std::string message)
    : std::runtime_error(where + ": " + message), where_(std::move(where)), message_(std::move(message)) {}

std::string escape_pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

}  // namespace dtsim
