// String helpers (DyNet's dynet/str-util.h).
#pragma once

#include <string>
#include <vector>

namespace dynet {

inline bool startswith(const std::string& str, const std::string& key) { return str.compare(0, key.size(), key) == 0; }

inline bool endswith(const std::string& str, const std::string& key) {
  return str.size() >= key.size() && str.compare(str.size() - key.size(), key.size(), key) == 0;
}

// The non-empty pieces of str between separators.
inline std::vector<std::string> str_split(const std::string& str, const char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= str.size()) {
    size_t end = str.find(sep, start);
    if (end == std::string::npos) end = str.size();
    if (end > start) parts.push_back(str.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

}  // namespace dynet
