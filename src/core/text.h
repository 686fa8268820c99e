#pragma once
// Text from the input on its way to a terminal or a report: one line, valid UTF-8.
#include <string>
#include <string_view>

namespace dtsim {

/// `s` with every byte that is not part of a well-formed UTF-8 sequence (RFC 3629: no overlong
/// forms, no surrogates, nothing above U+10FFFF) written as \xNN, and control characters (C0,
/// DEL) as \n, \r, \t or \xNN, so an error line stays one printable line whatever a file or a
/// flag held.
[[nodiscard]] std::string printable(std::string_view s);

/// The longest a path may be, and any one of its components (Linux PATH_MAX and NAME_MAX).
inline constexpr std::size_t kMaxPathBytes = 4096;
inline constexpr std::size_t kMaxNameBytes = 255;

/// Empty when `path` can be handed to the filesystem (non-empty, no NUL byte, at most
/// kMaxPathBytes, no component longer than kMaxNameBytes); otherwise what is wrong with it, in
/// the "expected ..., got ..." form of SpecError messages.
[[nodiscard]] std::string path_problem(std::string_view path);

}  // namespace dtsim
