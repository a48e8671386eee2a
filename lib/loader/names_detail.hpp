// Private: table-driven parsing of the user-facing names (output, io,
// on_error, pipeline), so every front end accepts the same spellings and
// every error reads the same way: `io must be "auto", "uring" or "pread",
// not "aio"`.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ringfeed::detail {

template <class T>
struct named {
  std::string_view name;
  T value;
};

/// The presets of apply_preset (presets.cpp).
enum class preset : unsigned char { train, val };
inline constexpr named<preset> preset_names[] = {{"train", preset::train}, {"val", preset::val}};

/// `what must be "a", "b" or "c", not "value"`.
template <class T, std::size_t N>
std::string bad_name_message(std::string_view what, std::string_view value, const named<T> (&table)[N]) {
  std::string m(what);
  m += " must be ";
  for (std::size_t i = 0; i < N; ++i) {
    if (i > 0) m += i + 1 == N ? " or " : ", ";
    m.append("\"").append(table[i].name).append("\"");
  }
  m.append(", not \"").append(value).append("\"");
  return m;
}

/// The value named `value` in `table`; else std::invalid_argument with
/// bad_name_message.
template <class T, std::size_t N>
T parse_name(std::string_view what, std::string_view value, const named<T> (&table)[N]) {
  for (const auto& e : table)
    if (e.name == value) return e.value;
  throw std::invalid_argument(bad_name_message(what, value, table));
}

}  // namespace ringfeed::detail
