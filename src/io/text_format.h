// Pieces of the text model format shared by io.cc and the tests.
#pragma once

#include <charconv>
#include <cmath>
#include <string>
#include <string_view>

namespace dynet::io_detail {

// Longest text of one value: sign, 1 digit, '.', 8 digits, "e+38", space.
constexpr size_t kMaxValueChars = 20;

// Writes x as C's "%+.8e" followed by one space (DyNet's std::scientific, showpos, precision 8);
// returns the end. x must be finite (then the text is exactly 16 bytes).
inline char* format_value(char* out, float x) {
  if (!std::signbit(x)) *out++ = '+';
  out = std::to_chars(out, out + kMaxValueChars, x, std::chars_format::scientific, 8).ptr;
  *out++ = ' ';
  return out;
}

// Parses one whitespace-free decimal float token (an optional leading '+' allowed).
inline bool parse_float_token(std::string_view token, float* out) {
  if (!token.empty() && token.front() == '+') {
    token.remove_prefix(1);
    if (!token.empty() && (token.front() == '-' || token.front() == '+')) return false;
  }
  if (token.empty()) return false;
  const auto r = std::from_chars(token.data(), token.data() + token.size(), *out, std::chars_format::general);
  return r.ec == std::errc() && r.ptr == token.data() + token.size() && std::isfinite(*out);
}

}  // namespace dynet::io_detail
