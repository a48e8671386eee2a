// JSON text of an nlohmann::json value whose strings may hold any bytes
// (file names are bytes on Linux). nlohmann's dump() throws on a string that
// is not UTF-8; this writes each string with ringfeed::json_string()
// (surrogateescape, `\udcNN`) instead, so the text is always valid UTF-8.
// A template so that this header does not need nlohmann's.
#pragma once

#include <string>

#include <ringfeed/text.hpp>

namespace ringfeed::detail {

template <class Json>
void append_json(std::string& out, const Json& j, int indent, int depth) {
  const auto newline = [&](int d) {
    if (indent < 0) return;
    out.push_back('\n');
    out.append(static_cast<std::size_t>(indent * d), ' ');
  };
  if (j.is_object() || j.is_array()) {
    const bool object = j.is_object();
    out.push_back(object ? '{' : '[');
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!first) out.push_back(',');
      first = false;
      newline(depth + 1);
      if (object) {
        out += json_string(it.key());
        out += indent < 0 ? ":" : ": ";
      }
      append_json(out, *it, indent, depth + 1);
    }
    if (!first) newline(depth);
    out.push_back(object ? '}' : ']');
  } else if (j.is_string()) {
    out += json_string(j.template get_ref<const typename Json::string_t&>());
  } else {
    out += j.dump();  // numbers, booleans, null: ASCII
  }
}

/// `j` as JSON text, like j.dump(indent) but valid UTF-8 whatever bytes its
/// strings hold (see ringfeed::json_string).
template <class Json>
[[nodiscard]] std::string json_text(const Json& j, int indent = -1) {
  std::string out;
  append_json(out, j, indent, 0);
  return out;
}

}  // namespace ringfeed::detail
