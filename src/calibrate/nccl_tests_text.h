#pragma once
// Text helpers of the nccl-tests importer (calibrate/nccl_tests.h): words, numbers as printf
// writes them, shell words, and the pieces its messages are built from. Internal to src/calibrate.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim::calibrate::detail {

using Words = std::vector<std::string_view>;
inline constexpr std::size_t npos = std::string_view::npos;

/// Space, tab, CR, VT or FF.
[[nodiscard]] bool is_space(char c);
/// '0' to '9'.
[[nodiscard]] bool is_digit(char c);
/// `s` without leading and trailing spaces.
[[nodiscard]] std::string_view trim(std::string_view s);
/// The space-separated words of `s`, as views into it.
[[nodiscard]] Words words(std::string_view s);
/// The index of the first non-digit at or after `i`.
[[nodiscard]] std::size_t skip_digits(std::string_view s, std::size_t i);
/// Shaped like a number as printf writes one ("-1", "1211.2", "5e-07", "1e400"), fitting or not.
[[nodiscard]] bool looks_numeric(std::string_view s);
/// The whole of `s` as an int64, or nullopt.
[[nodiscard]] std::optional<std::int64_t> to_int(std::string_view s);
/// The whole of `s` as a finite double, or nullopt.
[[nodiscard]] std::optional<double> to_real(std::string_view s);
/// `v` with `decimals` digits after the point ("%.*f").
[[nodiscard]] std::string fixed(double v, int decimals);
/// `v` in decimal.
[[nodiscard]] std::string str(std::int64_t v);
/// "FILE:LINE".
[[nodiscard]] std::string where(const std::string& file, int line);
/// "1 rank", "2 ranks"; `many` when the plural is not `one` + "s".
[[nodiscard]] std::string plural(std::int64_t n, const std::string& one, const std::string& many = "");
/// quoted_token of a view.
[[nodiscard]] std::string shown(std::string_view token);
/// The word stripped of shell quoting and separators: "'/usr/bin/x_perf;" -> "/usr/bin/x_perf".
[[nodiscard]] std::string_view unquoted(std::string_view t);
/// The last path component of an unquoted word.
[[nodiscard]] std::string_view basename(std::string_view t);

}  // namespace dtsim::calibrate::detail
