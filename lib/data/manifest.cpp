// Manifests: `path,label` CSV or `path<TAB>label` TSV, RFC 4180 quoting.
#include <fcntl.h>

#include <ringfeed/text.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <stdexcept>

#include "data/data_detail.hpp"

namespace ringfeed::data::detail {
namespace {

std::string read_manifest_file(const std::string& path) {
  unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw_errno(errno, "cannot open manifest", path);
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno(errno, "cannot read manifest", path);
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

// One record's fields, and the line it starts on.
struct record {
  std::vector<std::string> fields;
  std::size_t line = 0;
  bool blank = false;  // an empty line
};

class csv_parser {
 public:
  csv_parser(std::string_view text, char delimiter, const std::string& path)
      : m_text(text), m_delimiter(delimiter), m_path(path) {}

  // The next record, or false at the end of the text.
  bool next(record& r) {
    if (m_pos >= m_text.size()) return false;
    r.fields.clear();
    r.line = m_line;
    bool any_quote = false;
    for (;;) {
      std::string field;
      if (m_pos < m_text.size() && m_text[m_pos] == '"') {
        any_quote = true;
        ++m_pos;
        for (;;) {
          if (m_pos >= m_text.size()) throw dataset_error(m_path, "unterminated quoted field", r.line);
          const char c = m_text[m_pos++];
          if (c == '"') {
            if (m_pos < m_text.size() && m_text[m_pos] == '"') {
              field.push_back('"');
              ++m_pos;
              continue;
            }
            break;
          }
          if (c == '\n') ++m_line;
          field.push_back(c);
        }
        if (m_pos < m_text.size() && m_text[m_pos] == '\r' && m_pos + 1 < m_text.size() && m_text[m_pos + 1] == '\n') {
          ++m_pos;
        }
        if (m_pos < m_text.size() && m_text[m_pos] != m_delimiter && m_text[m_pos] != '\n') {
          throw dataset_error(m_path,
                              "unexpected character '" + escape_bytes(std::string_view(&m_text[m_pos], 1)) +
                                  "' after a closing quote",
                              m_line);
        }
      } else {
        while (m_pos < m_text.size() && m_text[m_pos] != m_delimiter && m_text[m_pos] != '\n') {
          field.push_back(m_text[m_pos++]);
        }
        if (!field.empty() && field.back() == '\r' && (m_pos >= m_text.size() || m_text[m_pos] == '\n')) {
          field.pop_back();
        }
      }
      r.fields.push_back(std::move(field));
      if (m_pos >= m_text.size()) break;
      const char sep = m_text[m_pos++];
      if (sep == '\n') {
        ++m_line;
        break;
      }
    }
    r.blank = !any_quote && r.fields.size() == 1 && r.fields[0].empty();
    return true;
  }

 private:
  std::string_view m_text;
  char m_delimiter;
  const std::string& m_path;
  std::size_t m_pos = 0;
  std::size_t m_line = 1;
};

// Digits (with a sign, `_` separators, spaces around): a label, maybe out of
// range, never a header's column name.
bool looks_numeric(std::string_view s) {
  s = trim(s, " \t");
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) s.remove_prefix(1);
  return !s.empty() && s.find_first_not_of("0123456789_") == std::string_view::npos &&
         s.find_first_of("0123456789") != std::string_view::npos;
}

// A header's label column: a name ("label", "class", "target"), which
// starts with neither a digit nor a sign. "1x" on the first line is a
// label mistyped, not a header: refused, where it was skipped with its sample.
bool looks_like_a_column_name(std::string_view s) {
  s = trim(s, " \t");
  return !s.empty() && s.find_first_of("0123456789+-.") != 0 && !looks_numeric(s);
}

}  // namespace

dataset_contents manifest_contents(const std::filesystem::path& manifest, const dataset_options& /*options*/) {
  const auto start = std::chrono::steady_clock::now();
  const std::string path = manifest.native();
  dataset_contents c = manifest_text_contents(read_manifest_file(path), path);
  c.root = manifest.parent_path().native();
  c.report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return c;
}

dataset_contents manifest_text_contents(std::string_view text, const std::string& path) {
  std::string_view body = text;
  if (body.substr(0, 3) == "\xEF\xBB\xBF") body.remove_prefix(3);

  char delimiter = ',';
  if (ends_with_ci(path, ".tsv")) {
    delimiter = '\t';
  } else if (!ends_with_ci(path, ".csv")) {
    const std::string_view first = body.substr(0, body.find('\n'));
    delimiter = first.find('\t') != std::string_view::npos ? '\t' : ',';
  }
  const char* delimiter_name = delimiter == '\t' ? "path<TAB>label" : "path,label";

  dataset_contents c;
  c.kind = dataset_kind::manifest;
  c.source = path;
  csv_parser parser(body, delimiter, path);
  record r;
  bool first = true;
  while (parser.next(r)) {
    if (r.blank) continue;
    if (r.fields.size() < 2) {
      throw dataset_error(path,
                          std::string("expected ") + delimiter_name + ", found one field '" +
                              escape_bytes(r.fields[0]) + "'",
                          r.line);
    }
    const auto label = parse_int(r.fields[1]);
    if (!label) {
      if (first && looks_like_a_column_name(r.fields[1])) {  // a header line: its label column holds a name
        first = false;
        continue;
      }
      throw dataset_error(path, "label '" + escape_bytes(r.fields[1]) + "' is not an integer" +
                                    (looks_numeric(r.fields[1]) ? " in the 64-bit range" : ""), r.line);
    }
    first = false;
    if (r.fields[0].empty()) throw dataset_error(path, "empty path", r.line);
    if (r.fields[0].find('\0') != std::string::npos) throw dataset_error(path, "path contains a NUL byte", r.line);
    c.names.push_back(r.fields[0]);
    c.labels.push_back(*label);
  }
  if (c.labels.empty()) throw dataset_error(path, "the manifest lists no sample");
  return c;
}

}  // namespace ringfeed::data::detail

namespace ringfeed::data {

dataset listed_samples(std::string source, const std::vector<std::string>& paths, std::vector<std::int64_t> labels) {
  if (paths.size() != labels.size())
    throw std::invalid_argument("listed samples '" + escape_bytes(source) + "': " + std::to_string(paths.size()) +
                                " paths but " + std::to_string(labels.size()) + " labels");
  if (paths.empty()) throw std::invalid_argument("listed samples '" + escape_bytes(source) + "': the list is empty");
  detail::dataset_contents c;
  c.kind = dataset_kind::manifest;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const std::string& path = paths[i];
    if (path.empty() || path.find('\0') != std::string::npos)
      throw std::invalid_argument("listed samples '" + escape_bytes(source) + "': sample " + std::to_string(i) +
                                  (path.empty() ? " has an empty path" : " has a path with a NUL byte"));
    c.names.push_back(path);
  }
  c.labels = std::move(labels);
  c.source = std::move(source);
  return dataset(std::move(c));
}

}  // namespace ringfeed::data
