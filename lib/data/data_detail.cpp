#include "data/data_detail.hpp"

#include <ringfeed/detail/atomic_file.hpp>

#include <ringfeed/text.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <mutex>
#include <random>
#include <stdexcept>
#include <system_error>
#include <thread>

namespace ringfeed::data::detail {

void throw_errno(int err, std::string_view what, std::string_view path) {
  std::string message(what);
  message += ' ';
  message += escape_bytes(path);
  throw std::system_error(err, std::generic_category(), message);
}

void parallel_for(std::size_t count, unsigned threads, const std::function<void(std::size_t)>& fn) {
  if (count == 0) return;
  const std::size_t n_threads = std::clamp<std::size_t>(threads, 1, count);
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    for (;;) {
      // Relaxed: the counter only hands out distinct items; results are
      // published to the caller by the thread joins.
      if (failed.load(std::memory_order_relaxed)) return;
      const std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= count) return;
      try {
        fn(i);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
        failed.store(true, std::memory_order_relaxed);
      }
    }
  };
  std::vector<std::thread> helpers;
  helpers.reserve(n_threads - 1);
  try {
    for (std::size_t t = 1; t < n_threads; ++t) helpers.emplace_back(work);
  } catch (...) {
    // Could not start a thread: the ones running (and this one) still finish the work.
  }
  work();
  for (auto& t : helpers) t.join();
  if (error) std::rethrow_exception(error);
}

unsigned scan_threads(const dataset_options& options, std::size_t items) noexcept {
  const unsigned wanted = options.scan_threads != 0 ? options.scan_threads : 8u;
  return static_cast<unsigned>(std::clamp<std::size_t>(items, 1, wanted));
}

namespace {

constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

std::uint64_t hash_bytes(std::string_view bytes, std::uint64_t seed) noexcept {
  std::uint64_t h = mix64(seed ^ 0x9E3779B97F4A7C15ull ^ bytes.size());
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    h = mix64(h ^ w) + 0x9E3779B97F4A7C15ull;
  }
  std::uint64_t tail = 0;
  std::memcpy(&tail, bytes.data() + i, bytes.size() - i);
  return mix64(h ^ tail ^ (static_cast<std::uint64_t>(bytes.size() - i) << 56));
}

std::optional<std::filesystem::path> cache_dir(const dataset_options& options) {
  if (!options.cache_dir.empty()) return options.cache_dir;
  auto env = [](const char* name) -> const char* {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? v : nullptr;
  };
  if (const char* v = env("RINGFEED_CACHE_DIR")) return std::filesystem::path(v);
  if (const char* v = env("XDG_CACHE_HOME")) return std::filesystem::path(v) / "ringfeed";
  if (const char* v = env("HOME")) return std::filesystem::path(v) / ".cache" / "ringfeed";
  return std::nullopt;
}

file_stamp stamp_of(const struct stat& st) noexcept {
  return {static_cast<std::uint64_t>(st.st_ino), static_cast<std::int64_t>(st.st_mtim.tv_sec),
          static_cast<std::int64_t>(st.st_mtim.tv_nsec), static_cast<std::uint64_t>(st.st_size)};
}

double wall_clock_now() noexcept {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// --- index files ---------------------------------------------------------

std::string index_writer::finish() {
  const std::uint64_t sum = hash_bytes(m_out, 0x72696E6766656564ull);
  u64(sum);
  return std::move(m_out);
}

index_reader::index_reader(std::string bytes) : m_bytes(std::move(bytes)) {
  if (m_bytes.size() < sizeof(std::uint64_t)) throw std::runtime_error("index file too short");
  m_end = m_bytes.size() - sizeof(std::uint64_t);
  std::uint64_t stored;
  std::memcpy(&stored, m_bytes.data() + m_end, sizeof stored);
  if (stored != hash_bytes(std::string_view(m_bytes).substr(0, m_end), 0x72696E6766656564ull)) {
    throw std::runtime_error("index file checksum mismatch");
  }
}

std::size_t index_reader::count(std::size_t element_size) {
  const std::uint64_t n = u64();
  if (element_size != 0 && n > (m_end - m_pos) / element_size) throw std::runtime_error("index file truncated");
  return static_cast<std::size_t>(n);
}

void index_reader::need(std::size_t n) const {
  if (n > m_end - m_pos) throw std::runtime_error("index file truncated");
}

void write_index_header(index_writer& w, std::string_view magic, std::uint32_t version) {
  w.raw(magic.data(), magic.size());
  w.u32(version);
  w.u32(0x01020304u);  // byte-order mark
}

bool read_index_header(index_reader& r, std::string_view magic, std::uint32_t version) {
  if (r.bytes(magic.size()) != magic) return false;
  if (r.u32() != version) return false;
  return r.u32() == 0x01020304u;
}

std::optional<std::string> read_whole_file(const std::filesystem::path& path) {
  unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return std::nullopt;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  std::string out(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::read(fd.get(), out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    done += static_cast<std::size_t>(n);
  }
  return out;
}

std::string write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) return "cannot create " + path.parent_path().string() + ": " + ec.message();
  try {
    ringfeed::detail::write_file_atomically(path, {std::as_bytes(std::span(bytes.data(), bytes.size()))});
  } catch (const std::system_error& e) {
    return e.what();
  }
  return {};
}

// --- names -----------------------------------------------------------------

namespace {

// Length of the valid UTF-8 sequence at s[i] (Python's strict rules), or 0.
std::size_t utf8_sequence(std::string_view s, std::size_t i, std::uint32_t& cp) noexcept {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  std::size_t len;
  std::uint32_t min;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2, cp = b0 & 0x1Fu, min = 0x80;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3, cp = b0 & 0x0Fu, min = 0x800;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4, cp = b0 & 0x07u, min = 0x10000;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3Fu);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace

bool is_valid_utf8(std::string_view s) noexcept {
  std::size_t i = 0;
  while (i < s.size()) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    std::uint32_t cp;
    const std::size_t len = utf8_sequence(s, i, cp);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string python_sort_key(std::string_view s) {
  if (is_valid_utf8(s)) return std::string(s);
  std::string out;
  out.reserve(s.size() * 3);
  std::size_t i = 0;
  while (i < s.size()) {
    std::uint32_t cp;
    const std::size_t len = utf8_sequence(s, i, cp);
    if (len == 0) {
      append_utf8(out, 0xDC00u + static_cast<unsigned char>(s[i]));  // surrogateescape
      ++i;
    } else {
      out.append(s.substr(i, len));
      i += len;
    }
  }
  return out;
}

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::optional<std::int64_t> parse_int(std::string_view text) noexcept {
  text = trim(text);
  bool negative = false;
  if (!text.empty() && (text.front() == '+' || text.front() == '-')) {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  if (text.empty()) return std::nullopt;
  std::uint64_t value = 0;
  bool last_digit = false;
  for (const char c : text) {
    if (c == '_') {
      if (!last_digit) return std::nullopt;  // leading or doubled separator
      last_digit = false;
      continue;
    }
    if (c < '0' || c > '9') return std::nullopt;
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (value > (std::uint64_t{1} << 63) / 10) return std::nullopt;
    value = value * 10 + d;
    if (value > (std::uint64_t{1} << 63)) return std::nullopt;
    last_digit = true;
  }
  if (!last_digit) return std::nullopt;  // trailing separator
  if (negative) return value == (std::uint64_t{1} << 63) ? INT64_MIN : -static_cast<std::int64_t>(value);
  if (value == (std::uint64_t{1} << 63)) return std::nullopt;
  return static_cast<std::int64_t>(value);
}

}  // namespace ringfeed::data::detail
