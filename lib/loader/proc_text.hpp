// Private: reading the kernel's text files (/proc, /sys, cgroup files) for
// node.cpp and numa.cpp: one reader, one "Key:\tvalue" lookup.
#pragma once

#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include <ringfeed/text.hpp>

namespace ringfeed::detail {

/// The whole file, or nullopt when it cannot be opened.
inline std::optional<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The value of "Key:\tvalue" in /proc files (trimmed), or nullopt.
inline std::optional<std::string> field(const std::string& text, std::string_view key) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(key) && line.size() > key.size() && line[key.size()] == ':')
      return std::string(trim(std::string_view(line).substr(key.size() + 1)));
  return std::nullopt;
}

}  // namespace ringfeed::detail
