// ringfeed text: bytes from outside (file contents, file names, tar member
// names, manifest fields) made safe to show in a message, a line of a text
// file, or JSON; and the small ASCII helpers every layer parses with.
//
// File names on Linux are bytes, not UTF-8, and a damaged file can hold any
// byte. Every message the library builds quotes such bytes through
// escape_bytes(), and every JSON it writes encodes strings with
// json_string(), so one hostile byte never makes a report unreadable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ringfeed {

/// `bytes` fit to quote in a message or a line of text. Printable ASCII
/// stays, and so do well-formed UTF-8 sequences of printable characters
/// (U+00A0 and up); a backslash becomes `\\`; every other byte (control
/// characters such as tab and newline, DEL, the C1 controls U+0080–U+009F,
/// bytes that are not well-formed UTF-8) becomes `\xNN`, two lowercase hex
/// digits. The result is valid UTF-8 without control characters, holds no
/// tab or newline, and is reversible. Any thread.
[[nodiscard]] std::string escape_bytes(std::string_view bytes);

/// `bytes` as a JSON string literal, quotes included, that is valid UTF-8
/// (in fact ASCII-safe where it matters) whatever `bytes` holds:
/// well-formed UTF-8 is kept as is, `"`, `\` and control characters are
/// escaped as JSON requires (DEL too), and each byte that is not part of well-formed
/// UTF-8 becomes the escape `\udcNN` (U+DC00 + the byte). That is Python's
/// `surrogateescape`: `json.loads` gives the same str as
/// `os.fsdecode(bytes)` (on a UTF-8 file system encoding), and
/// `os.fsencode` of it gives back the original bytes, so a path reported in
/// JSON opens the file. Any thread.
[[nodiscard]] std::string json_string(std::string_view bytes);

/// Length of the well-formed UTF-8 sequence (Unicode Table 3-7) at the
/// start of `bytes`: 1 to 4, or 0 when it does not start with one.
[[nodiscard]] std::size_t utf8_sequence_length(std::string_view bytes) noexcept;

/// The ASCII white space: what std::isspace accepts in the "C" locale.
inline constexpr std::string_view ascii_space = " \t\n\v\f\r";

/// `text` without its leading and trailing characters that are in `chars`
/// (by default ASCII white space; bytes from 0x80 up are never space).
[[nodiscard]] std::string_view trim(std::string_view text, std::string_view chars = ascii_space) noexcept;

/// Whether `text` starts with `prefix`, ASCII letters compared in any case
/// (other bytes as they are): `starts_with_ci("S3://b", "s3://")`.
[[nodiscard]] bool starts_with_ci(std::string_view text, std::string_view prefix) noexcept;

/// Whether `text` ends with `suffix`, ASCII letters compared in any case
/// (other bytes as they are): `ends_with_ci("a.TAR", ".tar")`.
[[nodiscard]] bool ends_with_ci(std::string_view text, std::string_view suffix) noexcept;

/// `value` as 16 lowercase hex digits, zero-padded (index file names).
[[nodiscard]] std::string hex64(std::uint64_t value);

/// The spellings parse_flag() takes, for a message: "1/0, true/false,
/// yes/no or on/off".
inline constexpr std::string_view flag_spellings = "1/0, true/false, yes/no or on/off";

/// A boolean option's value as every front end spells it: true for "1",
/// "true", "yes", "on"; false for "0", "false", "no", "off" (lowercase,
/// exactly); std::nullopt for anything else, which the caller refuses
/// naming its option and flag_spellings. Any thread.
[[nodiscard]] std::optional<bool> parse_flag(std::string_view text) noexcept;

/// How byte_size_text() writes a count of bytes.
enum class byte_unit : std::uint8_t {
  exact,  ///< "588 MiB" when a whole number of MiB, else "2408448 bytes"
  mib,    ///< whole MiB, rounded down: "7212 MiB"
  gib,    ///< GiB with one decimal: "15.6 GiB"
};

/// `bytes` for a message (a stats() reason, an error), in `unit`. Any thread.
[[nodiscard]] std::string byte_size_text(std::uint64_t bytes, byte_unit unit = byte_unit::exact);

}  // namespace ringfeed
