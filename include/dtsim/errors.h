#pragma once
// Errors the API throws.
#include <stdexcept>
#include <string>

namespace dtsim {

/// Bad input (exit status 2 on the command line): a file, a JSON pointer or an option, with what
/// was expected and what was found. what() is the CLI's one line without "dtsim: ".
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace dtsim
