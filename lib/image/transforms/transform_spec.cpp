// The transform spec grammar (transform_spec.hpp): a small recursive-descent
// parser over Python call syntax. Hand-written because the grammar is a
// dozen lines and every error must name its column; a parser generator or
// an embedded interpreter would be a larger thing to fuzz than this.
#include <ringfeed/image/transform_spec.hpp>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace ringfeed::image {

transform_spec_error::transform_spec_error(std::size_t column, const std::string& reason)
    : std::invalid_argument(column > 0 ? "transform spec, column " + std::to_string(column) + ": " + reason
                                       : "transform spec: " + reason),
      m_column(column) {}

std::string spec_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, res.ptr);
  // Keep integral floats readable as floats where it matters to no one: the
  // binder converts, so "2" and "2.0" bind the same.
  return s;
}

namespace {

constexpr int max_depth = 32;

class parser {
 public:
  explicit parser(std::string_view text) : m_text(text) {}

  std::vector<spec_call> top() {
    std::vector<spec_call> calls;
    skip_space();
    if (at_end()) return calls;
    calls.push_back(call(0));
    while (true) {
      skip_space();
      if (at_end()) break;
      expect(';');
      skip_space();
      if (at_end()) break;
      calls.push_back(call(0));
    }
    // A Compose in the list is its own list, in place (any depth): the same
    // ops in the same order, and a list whose spec() parses back equal. (One
    // with other arguments stays, for the op's binding to name the error.)
    std::vector<spec_call> flat;
    for (spec_call& c : calls) splice(std::move(c), flat);
    return flat;
  }

 private:
  static void splice(spec_call c, std::vector<spec_call>& out) {
    if (c.name != "Compose" || c.positional.size() + c.keywords.size() > 1) {
      out.push_back(std::move(c));
      return;
    }
    const spec_value* list = !c.positional.empty()                                        ? &c.positional[0]
                             : !c.keywords.empty() && c.keywords[0].first == "transforms" ? &c.keywords[0].second
                                                                                          : nullptr;
    if (list == nullptr || list->type != spec_value::kind::list)
      throw transform_spec_error(c.column, "Compose takes one list of transforms");
    for (const spec_value& v : list->items) {
      if (v.type != spec_value::kind::call)
        throw transform_spec_error(v.column, "Compose's list holds transforms, not values");
      splice(*v.call, out);
    }
  }

  std::string_view m_text;
  std::size_t m_pos = 0;

  bool at_end() const { return m_pos >= m_text.size(); }
  std::size_t column() const { return m_pos + 1; }
  char peek() const { return at_end() ? '\0' : m_text[m_pos]; }

  void skip_space() {
    while (!at_end() && std::isspace(static_cast<unsigned char>(m_text[m_pos]))) ++m_pos;
  }

  [[noreturn]] void fail(const std::string& what) const {
    if (at_end()) throw transform_spec_error(column(), what + ", found the end");
    throw transform_spec_error(column(), what + ", found '" + std::string(1, m_text[m_pos]) + "'");
  }

  void expect(char c) {
    skip_space();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++m_pos;
  }

  static bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
  static bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

  std::string name() {
    skip_space();
    if (!name_start(peek())) fail("expected a name");
    const std::size_t start = m_pos;
    while (!at_end() && name_char(m_text[m_pos])) ++m_pos;
    return std::string(m_text.substr(start, m_pos - start));
  }

  spec_call call(int depth) {
    if (depth > max_depth) fail("nested too deeply");
    skip_space();
    spec_call c;
    c.column = column();
    c.name = name();
    expect('(');
    args(c, depth);
    return c;
  }

  // After '(' up to and including ')'.
  void args(spec_call& c, int depth) {
    skip_space();
    if (peek() == ')') {
      ++m_pos;
      return;
    }
    while (true) {
      skip_space();
      const std::size_t save = m_pos;
      if (name_start(peek())) {
        const std::string n = name();
        skip_space();
        if (peek() == '=') {
          ++m_pos;
          for (const auto& kw : c.keywords)
            if (kw.first == n) throw transform_spec_error(save + 1, "argument '" + n + "' given twice");
          c.keywords.emplace_back(n, value(depth + 1));
        } else {
          m_pos = save;
          if (!c.keywords.empty()) fail("positional argument after a keyword argument");
          c.positional.push_back(value(depth + 1));
        }
      } else {
        if (!c.keywords.empty()) fail("positional argument after a keyword argument");
        c.positional.push_back(value(depth + 1));
      }
      skip_space();
      if (peek() == ',') {
        ++m_pos;
        skip_space();
        if (peek() == ')') {
          ++m_pos;
          return;
        }
        continue;
      }
      if (peek() == ')') {
        ++m_pos;
        return;
      }
      fail("expected ',' or ')'");
    }
  }

  spec_value value(int depth) {
    if (depth > max_depth) fail("nested too deeply");
    skip_space();
    spec_value v;
    v.column = column();
    const char c = peek();
    if (c == '[' || c == '(') {
      const char close = c == '[' ? ']' : ')';
      ++m_pos;
      v.type = spec_value::kind::list;
      skip_space();
      while (peek() != close) {
        v.items.push_back(value(depth + 1));
        skip_space();
        if (peek() == ',') {
          ++m_pos;
          skip_space();
          continue;
        }
        if (peek() != close) fail(std::string("expected ',' or '") + close + "'");
      }
      ++m_pos;
      return v;
    }
    if (c == '\'' || c == '"') {
      ++m_pos;
      const std::size_t start = m_pos;
      while (!at_end() && m_text[m_pos] != c) ++m_pos;
      if (at_end()) throw transform_spec_error(v.column, "unterminated string");
      v.type = spec_value::kind::string;
      v.text = std::string(m_text.substr(start, m_pos - start));
      ++m_pos;
      return v;
    }
    if (name_start(c)) {
      const std::size_t save = m_pos;
      std::string n = name();
      skip_space();
      if (peek() == '(') {
        m_pos = save;
        v.type = spec_value::kind::call;
        v.call = std::make_shared<const spec_call>(call(depth + 1));
        return v;
      }
      if (n == "None") {
        v.type = spec_value::kind::none;
      } else if (n == "True" || n == "False") {
        v.type = spec_value::kind::boolean;
        v.boolean = n == "True";
      } else if (n == "inf" || n == "nan") {
        v.type = spec_value::kind::number;
        v.number = n == "inf" ? HUGE_VAL : std::nan("");
      } else {
        v.type = spec_value::kind::name;
        v.text = std::move(n);
      }
      return v;
    }
    return number(v);
  }

  spec_value number(spec_value v) {
    const std::size_t start = m_pos;
    if (peek() == '+' || peek() == '-') ++m_pos;
    if (m_text.substr(m_pos, 3) == "inf") {
      m_pos += 3;
      v.type = spec_value::kind::number;
      v.number = m_text[start] == '-' ? -HUGE_VAL : HUGE_VAL;
      return v;
    }
    bool integral = true;
    bool digits = false;
    while (!at_end()) {
      const char d = m_text[m_pos];
      if (std::isdigit(static_cast<unsigned char>(d))) {
        digits = true;
      } else if (d == '.' || d == 'e' || d == 'E') {
        integral = false;
        if ((d == 'e' || d == 'E') && m_pos + 1 < m_text.size() &&
            (m_text[m_pos + 1] == '+' || m_text[m_pos + 1] == '-'))
          ++m_pos;
      } else {
        break;
      }
      ++m_pos;
    }
    if (!digits) {
      m_pos = start;
      fail("expected a value");
    }
    std::string_view lit = m_text.substr(start, m_pos - start);
    if (!lit.empty() && lit[0] == '+') lit.remove_prefix(1);
    double out = 0;
    const auto res = std::from_chars(lit.data(), lit.data() + lit.size(), out);
    if (res.ec != std::errc() || res.ptr != lit.data() + lit.size())
      throw transform_spec_error(v.column, "bad number '" + std::string(lit) + "'");
    v.type = spec_value::kind::number;
    v.number = out;
    v.integral = integral;
    return v;
  }
};

}  // namespace

std::vector<spec_call> parse_spec_calls(std::string_view spec) { return parser(spec).top(); }

}  // namespace ringfeed::image
