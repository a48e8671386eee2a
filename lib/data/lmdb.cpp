// data::index_lmdb: the index of an LMDB database in the convention of the
// PyTorch ImageNet/LMDB guides — keys b"0", b"1", … each holding msgpack
// [image_bytes, label], and b"__len__" the count.
//
// Records are never read whole here (an ImageNet database is ~140 GB): a
// record's first bytes give the array header and the image's length, hence
// where the image lies; its last bytes (the listing gives the value's size)
// give the label. `depth` workers keep that many of these small reads in
// flight, so indexing a million records is not a million round trips.
// Each record still costs a page fault at either end: from the page cache
// that measured ~15 µs a record on a busy 2-core machine (two hops to an
// I/O thread and back per read); from an HDD or NFS, about one pass over
// the file (a database written in one pass holds its records in key order,
// and readahead covers both ends of most). The index is not cached.
#include <ringfeed/data/dataset.hpp>
#include <ringfeed/text.hpp>

#include <msgpuck.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <ringfeed/sync_wait.hpp>
#include <ringfeed/task.hpp>
#include <ringfeed/when_all.hpp>

#include "data/data_detail.hpp"

namespace ringfeed::data {
namespace {

constexpr std::string_view len_key = "__len__";
// An array header (1, 3 or 5 bytes) and a bin/str header (1 to 5 bytes).
constexpr std::uint64_t head_bytes = 16;
// Records this small are read in one piece (no image is this small, but
// tests and odd databases have them).
constexpr std::uint64_t small_record = 64;
// The most bytes a msgpack integer takes (0xd3 + 8), with room for a label
// written in another type, so its error can name that type.
constexpr std::uint64_t max_tail_bytes = 64;

// The index of a key in the convention: canonical decimal ("0", "17"; not
// "007", "+1" or " 1").
std::optional<std::uint64_t> key_index(std::string_view key) noexcept {
  if (key.empty() || key.size() > 19 || (key.size() > 1 && key.front() == '0')) return std::nullopt;
  std::uint64_t v = 0;
  for (const char c : key) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return v;
}

const char* type_name(mp_type t) noexcept {
  switch (t) {
    case MP_NIL: return "nil";
    case MP_UINT: return "unsigned integer";
    case MP_INT: return "negative integer";
    case MP_STR: return "str";
    case MP_BIN: return "bin";
    case MP_ARRAY: return "array";
    case MP_MAP: return "map";
    case MP_BOOL: return "bool";
    case MP_FLOAT: return "float";
    case MP_DOUBLE: return "double";
    case MP_EXT: return "ext";
  }
  return "unknown type";
}

// Decodes one msgpack integer that must fill [p, end) exactly.
std::optional<std::int64_t> decode_whole_int(const char* p, const char* end, std::string& why) {
  if (p == end) {
    why = "is missing";
    return std::nullopt;
  }
  const mp_type t = mp_typeof(*p);
  if (t != MP_UINT && t != MP_INT) {
    why = std::string("is a msgpack ") + type_name(t) + ", not an integer";
    return std::nullopt;
  }
  if ((t == MP_UINT ? mp_check_uint(p, end) : mp_check_int(p, end)) > 0) {
    why = "is truncated";
    return std::nullopt;
  }
  std::int64_t v = 0;
  if (t == MP_UINT) {
    const std::uint64_t u = mp_decode_uint(&p);
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      why = "does not fit a signed 64-bit integer";
      return std::nullopt;
    }
    v = static_cast<std::int64_t>(u);
  } else {
    v = mp_decode_int(&p);
  }
  if (p != end) {
    why = "is followed by " + std::to_string(end - p) + " more bytes";
    return std::nullopt;
  }
  return v;
}

struct record {
  std::uint64_t offset = 0;  // of the image bytes in the value
  std::uint64_t size = 0;
  std::int64_t label = 0;
};

class indexer {
 public:
  indexer(io::source& src, std::vector<std::uint64_t> value_sizes)
      : m_src(src), m_value_sizes(std::move(value_sizes)), m_records(m_value_sizes.size()) {}

  // Reads every record's layout, `workers` reads in flight.
  std::vector<record> run(std::size_t workers) {
    workers = std::clamp<std::size_t>(workers, 1, m_records.size());
    std::vector<task<void>> tasks;
    tasks.reserve(workers);
    for (std::size_t w = 0; w < workers; ++w) tasks.push_back(worker());
    sync_wait(when_all(std::move(tasks)));
    return std::move(m_records);
  }

  [[noreturn]] void bad(const std::string& key, const std::string& reason) const {
    throw dataset_error(m_src.location(), "record '" + escape_bytes(key) + "': " + reason);
  }

 private:
  task<void> worker() {
    io::read_buffer buffer;
    std::string key;
    for (;;) {
      // relaxed: the flag only stops hand-outs early; when_all carries the error.
      if (m_failed.load(std::memory_order_relaxed)) co_return;
      const std::size_t i = m_next.fetch_add(1, std::memory_order_relaxed);
      if (i >= m_records.size()) co_return;
      key = std::to_string(i);
      try {
        m_records[i] = co_await read_record(key, m_value_sizes[i], buffer);
      } catch (...) {
        m_failed.store(true, std::memory_order_relaxed);
        throw;
      }
    }
  }

  task<record> read_record(const std::string& key, std::uint64_t value_size, io::read_buffer& buffer) {
    const bool whole = value_size <= small_record;
    const std::uint64_t first = whole ? value_size : head_bytes;
    std::span<const std::byte> bytes = co_await m_src.read({key, true, 0, first}, buffer);
    const char* const data = reinterpret_cast<const char*>(bytes.data());
    const char* const end = data + bytes.size();
    const char* p = data;
    auto truncated = [&](const char* what) {
      bad(key, std::string("truncated: the value (") + std::to_string(value_size) + " bytes) ends inside " + what);
    };

    if (p == end) bad(key, "the value is empty, not a msgpack array [image, label]");
    if (mp_typeof(*p) != MP_ARRAY) {
      bad(key, std::string("not a msgpack array [image, label]: the value is a msgpack ") + type_name(mp_typeof(*p)));
    }
    if (mp_check_array(p, end) > 0) truncated("the array header");
    const std::uint32_t elements = mp_decode_array(&p);
    if (elements != 2) {
      bad(key, "a msgpack array of " + std::to_string(elements) + " elements, not [image, label]");
    }
    if (p == end) truncated("the array, before the image");
    const mp_type image_type = mp_typeof(*p);
    if (image_type != MP_BIN && image_type != MP_STR) {
      bad(key, std::string("the image is a msgpack ") + type_name(image_type) + ", not bytes (bin, or str)");
    }
    if ((image_type == MP_BIN ? mp_check_binl(p, end) : mp_check_strl(p, end)) > 0) truncated("the image's header");
    record r;
    r.size = image_type == MP_BIN ? mp_decode_binl(&p) : mp_decode_strl(&p);
    r.offset = static_cast<std::uint64_t>(p - data);
    const std::uint64_t image_end = r.offset + r.size;
    if (image_end >= value_size) {
      bad(key, "truncated: the image's " + std::to_string(r.size) + " bytes end at byte " + std::to_string(image_end) +
                   " of a " + std::to_string(value_size) + "-byte value, leaving no room for the label");
    }
    const std::uint64_t tail = value_size - image_end;
    if (tail > max_tail_bytes) {
      bad(key, std::to_string(tail) + " bytes follow the image, where one msgpack integer (the label) was expected");
    }
    const char* label_at = data + image_end;
    if (!whole) {
      bytes = co_await m_src.read({key, true, image_end, tail}, buffer);
      label_at = reinterpret_cast<const char*>(bytes.data());
    }
    std::string why;
    const std::optional<std::int64_t> label = decode_whole_int(label_at, label_at + tail, why);
    if (!label) bad(key, "the label " + why);
    r.label = *label;
    co_return r;
  }

  io::source& m_src;
  const std::vector<std::uint64_t> m_value_sizes;
  std::vector<record> m_records;  // slot i written only by the worker that took i
  std::atomic<std::size_t> m_next{0};
  std::atomic<bool> m_failed{false};
};

// __len__: a msgpack integer, or ASCII decimal. A single byte '0'..'9' is
// both (msgpack fixints 48..57, or the digits 0..9): the reading that
// matches the numeric keys present wins, else the digit.
std::uint64_t parse_len(const std::string& location, std::string_view value, std::size_t numeric_keys) {
  std::string why;
  const std::optional<std::int64_t> packed = decode_whole_int(value.data(), value.data() + value.size(), why);
  const std::optional<std::int64_t> text = detail::parse_int(value);
  std::optional<std::int64_t> n = text ? text : packed;
  if (packed && text && *packed != *text && static_cast<std::uint64_t>(*packed) == numeric_keys) n = packed;
  if (!n) throw dataset_error(location, "key '__len__' is neither a msgpack integer nor decimal text");
  if (*n < 0) throw dataset_error(location, "key '__len__' is negative (" + std::to_string(*n) + ")");
  return static_cast<std::uint64_t>(*n);
}

}  // namespace

dataset index_lmdb(io::source& src, const dataset_options& /*options: nothing applies to LMDB*/) {
  const auto start = std::chrono::steady_clock::now();
  const std::string& location = src.location();

  std::vector<std::pair<std::uint64_t, std::uint64_t>> numbered;  // (index, value size), LMDB's key order
  std::optional<std::uint64_t> len_size;
  for (const io::source_entry& e : src.list("")) {
    if (e.name == len_key) {
      len_size = e.size;
    } else if (const auto i = key_index(e.name)) {
      numbered.emplace_back(*i, e.size);
    }
  }
  std::sort(numbered.begin(), numbered.end());
  // The first index in 0..n-1 that no key has, or n when none is missing.
  auto first_missing = [&](std::uint64_t n) {
    std::uint64_t i = 0;
    while (i < numbered.size() && i < n && numbered[i].first == i) ++i;
    return i;
  };

  std::uint64_t n = numbered.size();
  if (len_size) {
    if (*len_size > small_record) {
      throw dataset_error(location, "key '__len__' holds " + std::to_string(*len_size) + " bytes, not a count");
    }
    io::read_buffer buffer;
    const std::string key(len_key);
    const std::span<const std::byte> bytes = sync_wait(src.read({key, false, 0, *len_size}, buffer));
    n = parse_len(location, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
                  numbered.size());
    const std::uint64_t missing = first_missing(n);
    if (missing < n) {
      throw dataset_error(location, "record '" + std::to_string(missing) + "' is missing (key '__len__' says " +
                                        std::to_string(n) + " records)");
    }
  } else {
    if (numbered.empty()) throw dataset_error(location, "no records: neither a key '__len__' nor keys '0', '1', …");
    const std::uint64_t missing = first_missing(n);
    if (missing < n) {
      throw dataset_error(location, "without a key '__len__' the numeric keys must be 0.." + std::to_string(n - 1) +
                                        ", but record '" + std::to_string(missing) + "' is missing");
    }
  }
  if (n == 0) throw dataset_error(location, "no records: key '__len__' says 0");

  std::vector<std::uint64_t> value_sizes(n);
  for (std::uint64_t i = 0; i < n; ++i) value_sizes[i] = numbered[i].second;
  indexer idx(src, std::move(value_sizes));
  const std::vector<record> records = idx.run(src.depth());

  detail::dataset_contents c;
  c.kind = dataset_kind::lmdb;
  c.source = location;
  c.root = location;
  std::size_t chars = 0;
  for (std::uint64_t i = 0; i < n; ++i) chars += std::to_string(i).size();
  c.names.reserve(n, chars);
  c.labels.reserve(n);
  c.offsets.reserve(n);
  c.sizes.reserve(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    c.names.push_back(std::to_string(i));
    c.labels.push_back(records[i].label);
    c.offsets.push_back(records[i].offset);
    c.sizes.push_back(records[i].size);
  }
  c.report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return dataset(std::move(c));
}

}  // namespace ringfeed::data
