// Tar archives: member headers (ustar, GNU, pax) and the WebDataset shard
// index built from them.
#include <ringfeed/data/tar.hpp>
#include <ringfeed/text.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <system_error>
#include <utility>

#include "data/data_detail.hpp"
#include "data/index_cache.hpp"

namespace ringfeed::data {
namespace {

constexpr std::size_t block = 512;

std::uint64_t round_up_block(std::uint64_t n) { return (n + block - 1) / block * block; }

// tarfile.nts: the bytes up to the first NUL.
std::string_view nts(std::string_view field) {
  const std::size_t nul = field.find('\0');
  return nul == std::string_view::npos ? field : field.substr(0, nul);
}

// tarfile.nti: octal (NUL/space padded) or GNU base-256. nullopt if invalid.
std::optional<std::uint64_t> number_field(std::string_view field) {
  const auto first = static_cast<unsigned char>(field[0]);
  if (first == 0x80 || first == 0xFF) {
    if (first == 0xFF) return std::nullopt;  // negative: no valid size or offset
    std::uint64_t n = 0;
    for (std::size_t i = 1; i < field.size(); ++i) {
      if (n >> 56 != 0) return std::nullopt;
      n = (n << 8) | static_cast<unsigned char>(field[i]);
    }
    return n;
  }
  const std::string_view s = trim(nts(field), " \t\n");
  std::uint64_t n = 0;
  for (const char c : s) {
    if (c < '0' || c > '7' || n >> 60 != 0) return std::nullopt;
    n = n * 8 + static_cast<std::uint64_t>(c - '0');
  }
  return n;
}

// tarfile.calc_chksums: the header summed with the checksum field as spaces,
// as unsigned and as signed bytes; either may match the stored value.
bool checksum_ok(std::string_view h) {
  const auto stored = number_field(h.substr(148, 8));
  if (!stored) return false;
  std::int64_t unsigned_sum = 8 * ' ';
  std::int64_t signed_sum = 8 * ' ';
  for (std::size_t i = 0; i < block; ++i) {
    if (i >= 148 && i < 156) continue;
    unsigned_sum += static_cast<unsigned char>(h[i]);
    signed_sum += static_cast<signed char>(h[i]);
  }
  return static_cast<std::int64_t>(*stored) == unsigned_sum || static_cast<std::int64_t>(*stored) == signed_sum;
}

bool is_supported_non_regular(char type) {
  // tarfile.SUPPORTED_TYPES that are not regular: their data (if a size is
  // claimed) is not skipped, exactly as tarfile reads them.
  return type == '1' || type == '2' || type == '3' || type == '4' || type == '5' || type == '6';
}

std::string offset_text(std::uint64_t offset) { return "header at offset " + std::to_string(offset); }

}  // namespace

tar_reader::tar_reader(const std::filesystem::path& path) : m_path(path.native()) {
  m_fd.reset(::open(m_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!m_fd) detail::throw_errno(errno, "cannot open tar shard", m_path);
  struct stat st {};
  if (::fstat(m_fd.get(), &st) != 0) detail::throw_errno(errno, "cannot stat tar shard", m_path);
  m_size = static_cast<std::uint64_t>(st.st_size);
}

tar_reader::tar_reader(std::string name, std::uint64_t size, tar_read_function read, std::size_t window)
    : m_read(std::move(read)), m_window(std::max<std::size_t>(window, block)), m_path(std::move(name)), m_size(size) {}

tar_reader::~tar_reader() = default;
tar_reader::tar_reader(tar_reader&& other) noexcept = default;
tar_reader& tar_reader::operator=(tar_reader&& other) noexcept = default;

std::string_view tar_reader::window(std::uint64_t offset, std::size_t n) {
  if (offset >= m_buffer_offset && offset - m_buffer_offset + n <= m_buffer.size()) {
    return std::string_view(m_buffer).substr(static_cast<std::size_t>(offset - m_buffer_offset), n);
  }
  const std::size_t want = std::max(m_window, n);
  m_buffer.resize(want);
  std::size_t got = 0;
  if (m_read) {
    try {
      got = m_read(offset, std::span<char>(m_buffer.data(), want));
    } catch (...) {
      m_buffer.clear();
      throw;
    }
  }
  while (!m_read && got < want) {
    const ssize_t r = ::pread(m_fd.get(), m_buffer.data() + got, want - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      const int err = errno;
      m_buffer.clear();
      detail::throw_errno(err, "cannot read tar shard", m_path);
    }
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  m_buffer.resize(got);
  m_buffer_offset = offset;
  return std::string_view(m_buffer).substr(0, std::min(n, got));
}

void tar_reader::read_at(std::uint64_t offset, std::span<char> out) {
  if (out.size() <= m_window || m_read) {
    const std::string_view v = window(offset, out.size());
    if (v.size() < out.size()) {
      throw dataset_error(m_path, "unexpected end of file reading " + std::to_string(out.size()) + " bytes at offset " +
                                      std::to_string(offset));
    }
    std::copy(v.begin(), v.end(), out.begin());
    return;
  }
  std::size_t got = 0;
  while (got < out.size()) {
    const ssize_t r = ::pread(m_fd.get(), out.data() + got, out.size() - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) detail::throw_errno(errno, "cannot read tar shard", m_path);
    if (r == 0) {
      throw dataset_error(m_path, "unexpected end of file reading " + std::to_string(out.size()) + " bytes at offset " +
                                      std::to_string(offset));
    }
    got += static_cast<std::size_t>(r);
  }
}

std::optional<tar_member> tar_reader::next() {
  if (m_done) return std::nullopt;
  // Values from extension headers, for the member that follows them. As in
  // tarfile's recursive _proc_gnulong/_proc_pax, the earliest header wins.
  std::optional<std::string> long_name;
  std::optional<std::uint64_t> pax_size;
  bool sparse = false;
  bool pending = false;
  // Python's tarfile and GNU tar refuse it; it is no archive of no sample.
  if (m_size == 0) throw dataset_error(m_path, "empty file, not a tar archive");
  for (;;) {
    const std::uint64_t at = m_next;
    if (at >= m_size) {
      if (pending) throw dataset_error(m_path, "archive ends after an extension header (" + offset_text(at) + ")");
      m_done = true;
      return std::nullopt;
    }
    const std::string_view h = window(at, block);
    if (h.size() < block) throw dataset_error(m_path, "truncated " + offset_text(at));
    if (std::all_of(h.begin(), h.end(), [](char c) { return c == '\0'; })) {
      if (pending) throw dataset_error(m_path, "end-of-archive block after an extension header (" + offset_text(at) + ")");
      m_done = true;
      return std::nullopt;
    }
    if (!checksum_ok(h)) throw dataset_error(m_path, "bad header checksum (" + offset_text(at) + ")");
    const auto size = number_field(h.substr(124, 12));
    if (!size) throw dataset_error(m_path, "bad size field (" + offset_text(at) + ")");
    const char type = h[156];
    std::string name(nts(h.substr(0, 100)));
    const bool posix = h.substr(257, 6) == std::string_view("ustar\0", 6);
    const bool gnu_type = type == 'L' || type == 'K' || type == 'S';
    if (posix && !gnu_type) {
      const std::string_view prefix = nts(h.substr(345, 155));
      if (!prefix.empty()) name = std::string(prefix) + "/" + name;
    }
    const std::uint64_t data = at + block;
    auto data_end = [&](std::uint64_t n) {
      if (n > m_size || data > m_size - n) {
        throw dataset_error(m_path, "member '" + escape_bytes(name) + "' (" + offset_text(at) + ") claims " + std::to_string(n) +
                                        " bytes but the file ends at " + std::to_string(m_size));
      }
      return data + round_up_block(n);
    };

    if (type == 'L' || type == 'K') {  // GNU long name / long link name
      const std::uint64_t next = data_end(*size);
      if (type == 'L') {
        if (*size > (1u << 20)) throw dataset_error(m_path, "GNU long name longer than 1 MiB (" + offset_text(at) + ")");
        std::string value(static_cast<std::size_t>(*size), '\0');
        read_at(data, value);
        if (!long_name) long_name = std::string(nts(value));
      }
      m_next = next;
      pending = true;
      continue;
    }
    if (type == 'x' || type == 'X' || type == 'g') {  // pax extended / Solaris / global header
      const std::uint64_t next = data_end(*size);
      if (*size > (16u << 20)) throw dataset_error(m_path, "pax header longer than 16 MiB (" + offset_text(at) + ")");
      std::string buf(static_cast<std::size_t>(*size), '\0');
      read_at(data, buf);
      std::vector<std::pair<std::string, std::string>> records;
      std::size_t pos = 0;
      while (pos < buf.size() && buf[pos] != '\0') {
        std::size_t k = pos;
        std::size_t length = 0;
        while (k < buf.size() && buf[k] >= '0' && buf[k] <= '9') length = length * 10 + static_cast<std::size_t>(buf[k++] - '0');
        const std::size_t eq = buf.find('=', k);
        if (k == pos || k >= buf.size() || buf[k] != ' ' || length == 0 || pos + length > buf.size() ||
            eq == std::string::npos || eq >= pos + length || buf[pos + length - 1] != '\n') {
          throw dataset_error(m_path, "malformed pax record (" + offset_text(at) + ")");
        }
        records.emplace_back(buf.substr(k + 1, eq - k - 1), buf.substr(eq + 1, pos + length - 1 - eq - 1));
        pos += length;
      }
      auto merge = [](std::vector<std::pair<std::string, std::string>>& into, const auto& from) {
        for (const auto& record : from) {  // not a structured binding: clang 14 cannot capture one
          auto it = std::find_if(into.begin(), into.end(), [&](const auto& kv) { return kv.first == record.first; });
          if (it != into.end()) {
            it->second = record.second;
          } else {
            into.push_back(record);
          }
        }
      };
      if (type == 'g') {
        merge(m_global_pax, records);  // tarfile keeps these for later 'x' headers only
      } else {
        auto effective = m_global_pax;
        merge(effective, records);
        for (const auto& [key, value] : effective) {
          if (key == "path" && !long_name) long_name = value;
          if (key == "size" && !pax_size) {
            const auto v = detail::parse_int(value);
            if (!v || *v < 0)
              throw dataset_error(m_path, "bad pax size '" + escape_bytes(value) + "' (" + offset_text(at) + ")");
            pax_size = static_cast<std::uint64_t>(*v);
          }
          if (key.rfind("GNU.sparse.", 0) == 0) sparse = true;
        }
      }
      m_next = next;
      pending = true;
      continue;
    }

    tar_member m;
    m.name = long_name ? std::move(*long_name) : std::move(name);
    m.type = sparse ? 'S' : type;
    m.header_offset = at;
    m.data_offset = data;
    m.size = pax_size ? *pax_size : *size;
    if (m.type == '\0' && !m.name.empty() && m.name.back() == '/') m.type = '5';
    if (m.type == '5') {
      while (m.name.size() > 1 && m.name.back() == '/') m.name.pop_back();
    }
    name = m.name;
    m_next = is_supported_non_regular(m.type) ? data : data_end(m.size);
    return m;
  }
}

std::optional<webdataset_name> split_webdataset_name(std::string_view s) noexcept {
  // ^((?:.*/|)[^.]+)[.]([^/]*)$ — the group `.*/` is greedy: it tries the
  // last slash first, then earlier ones, then the empty alternative. From a
  // start p, `[^.]+[.]` must run to the first dot after p (at least one char
  // before it), and the rest after that dot must hold no slash.
  auto try_from = [&](std::size_t p) -> std::optional<webdataset_name> {
    const std::size_t dot = s.find('.', p);
    if (dot == std::string_view::npos || dot == p) return std::nullopt;
    if (s.find('/', dot + 1) != std::string_view::npos) return std::nullopt;
    return webdataset_name{s.substr(0, dot), s.substr(dot + 1)};
  };
  for (std::size_t slash = s.rfind('/'); slash != std::string_view::npos;
       slash = slash == 0 ? std::string_view::npos : s.rfind('/', slash - 1)) {
    if (auto r = try_from(slash + 1)) return r;
  }
  return try_from(0);
}

bool is_webdataset_meta(std::string_view name) noexcept {
  if (name.find('/') == std::string_view::npos && name.size() >= 2 && name.substr(0, 2) == "__" &&
      name.substr(name.size() - 2) == "__") {
    return true;
  }
  // re.match(r"__[^/]*__($|/)", name)
  if (name.substr(0, 2) != "__") return false;
  const std::size_t slash = name.find('/');
  const std::string_view head = name.substr(0, slash);  // [^/]* cannot cross a slash
  return head.size() >= 4 && head.substr(head.size() - 2) == "__";
}

// --- the shard index -------------------------------------------------------

namespace detail {
namespace {

constexpr std::string_view tar_magic = "RFTARIX1";
constexpr std::uint32_t tar_version = 1;
constexpr std::array<std::string_view, 9> image_suffixes{"jpg", "jpeg", "png", "ppm", "pgm", "bmp", "tif", "tiff", "webp"};

struct shard_index {
  std::vector<std::uint64_t> offsets;
  std::vector<std::uint64_t> sizes;
  std::vector<std::int64_t> labels;
  string_table names;
  std::string index_path;
  std::string note;
  std::uint64_t shard_size = 0;
  bool from_cache = false;
};

std::uint64_t tar_fingerprint(const dataset_options& options) {
  std::string f = "label=" + options.label_suffix + ";require=" + (options.require_labels ? "1" : "0") + ";img=";
  for (const auto s : image_suffixes) {
    f.append(s);
    f.push_back(',');
  }
  return hash_bytes(f);
}

shard_index parse_shard(tar_reader& reader, const dataset_options& options) {
  shard_index out;
  const std::string& path = reader.path();
  const std::string label_suffix = ascii_lower(options.label_suffix);
  struct part {
    std::string suffix;  // lowercased
    tar_member member;
  };
  std::string key;
  std::vector<part> group;
  auto flush = [&] {
    if (group.empty()) return;
    const part* image = nullptr;
    for (const auto want : image_suffixes) {
      for (const part& p : group) {
        if (p.suffix == want) {
          image = &p;
          break;
        }
      }
      if (image != nullptr) break;
    }
    if (image == nullptr) {
      std::string members;
      for (const part& p : group) members += (members.empty() ? "" : ", ") + p.member.name;
      throw dataset_error(path, "sample '" + escape_bytes(key) + "' has no image member (jpg, jpeg, png, ppm, pgm, bmp, tif, tiff, webp); "
                                "its members: " + members);
    }
    std::int64_t label = -1;
    const auto cls = std::find_if(group.begin(), group.end(), [&](const part& p) { return p.suffix == label_suffix; });
    if (cls != group.end()) {
      if (cls->member.size > 64) {
        throw dataset_error(path, "label member '" + escape_bytes(cls->member.name) + "' has " + std::to_string(cls->member.size) +
                                      " bytes; expected an integer as text");
      }
      std::string text(static_cast<std::size_t>(cls->member.size), '\0');
      reader.read_at(cls->member.data_offset, text);
      const auto v = parse_int(text);
      if (!v)
        throw dataset_error(path, "label member '" + escape_bytes(cls->member.name) + "' holds '" + escape_bytes(text) +
                                      "', not an integer");
      label = *v;
    } else if (options.require_labels) {
      throw dataset_error(path, "sample '" + escape_bytes(key) + "' has no ." + options.label_suffix + " label member");
    }
    out.offsets.push_back(image->member.data_offset);
    out.sizes.push_back(image->member.size);
    out.labels.push_back(label);
    out.names.push_back(image->member.name);
    group.clear();
  };
  while (auto m = reader.next()) {
    if (m->type == 'S') {
      throw dataset_error(path,
                          "member '" + escape_bytes(m->name) + "' is a sparse file; a shard index cannot point into it");
    }
    if (!m->is_regular() || is_webdataset_meta(m->name)) continue;
    const auto split = split_webdataset_name(m->name);
    if (!split) continue;
    if (group.empty() || split->key != key) {
      flush();
      key.assign(split->key);
    }
    std::string suffix = ascii_lower(split->suffix);
    if (std::any_of(group.begin(), group.end(), [&](const part& p) { return p.suffix == suffix; })) {
      throw dataset_error(path, "duplicate file name in tar file: '" + escape_bytes(m->name) + "' repeats suffix '" + escape_bytes(suffix) +
                                    "' of sample '" + escape_bytes(key) + "'");
    }
    group.push_back({std::move(suffix), std::move(*m)});
  }
  flush();
  return out;
}

std::string serialize(const shard_index& s, std::uint64_t fingerprint, const file_stamp& stamp) {
  index_writer w;
  write_index_header(w, tar_magic, tar_version);
  w.u64(fingerprint);
  w.u64(stamp.size);
  w.i64(stamp.mtime_sec);
  w.i64(stamp.mtime_nsec);
  w.array(s.offsets);
  w.array(s.sizes);
  w.array(s.labels);
  w.array(s.names.ends());
  w.str(s.names.chars());
  return w.finish();
}

std::optional<shard_index> load_index(const std::filesystem::path& file, std::uint64_t fingerprint,
                                      const file_stamp& stamp) {
  auto bytes = read_whole_file(file);
  if (!bytes) return std::nullopt;
  try {
    index_reader in(std::move(*bytes));
    if (!read_index_header(in, tar_magic, tar_version) || in.u64() != fingerprint) return std::nullopt;
    if (in.u64() != stamp.size || in.i64() != stamp.mtime_sec || in.i64() != stamp.mtime_nsec) return std::nullopt;
    shard_index s;
    s.offsets = in.array<std::uint64_t>();
    s.sizes = in.array<std::uint64_t>();
    s.labels = in.array<std::int64_t>();
    auto ends = in.array<std::uint64_t>();
    auto chars = in.str();
    if (!in.at_end() || s.sizes.size() != s.offsets.size() || s.labels.size() != s.offsets.size() ||
        ends.size() != s.offsets.size()) {
      return std::nullopt;
    }
    for (std::size_t k = 0; k < s.offsets.size(); ++k) {
      if (s.offsets[k] > stamp.size || s.sizes[k] > stamp.size - s.offsets[k]) return std::nullopt;
    }
    s.names.assign(std::move(chars), std::move(ends));
    s.index_path = file.native();
    s.from_cache = true;
    return s;
  } catch (const std::exception&) {
    return std::nullopt;  // corrupt or foreign: rebuilt below
  }
}

shard_index index_one_shard(const std::string& shard, const dataset_options& options, std::uint64_t fingerprint) {
  tar_reader reader(shard);
  struct stat st {};
  if (::stat(shard.c_str(), &st) != 0) throw_errno(errno, "cannot stat tar shard", shard);
  const file_stamp stamp = stamp_of(st);

  std::vector<std::filesystem::path> candidates;
  const std::filesystem::path beside = shard + ".ringfeed.idx";
  std::optional<std::filesystem::path> cached;
  if (options.use_cache) {
    if (options.index_beside_shards) candidates.push_back(beside);
    if (auto dir = cache_dir(options)) {
      cached = *dir / ("tar-" + hex64(hash_bytes(shard, fingerprint)) + ".idx");
      candidates.push_back(*cached);
    }
    for (const auto& c : candidates) {
      if (auto s = load_index(c, fingerprint, stamp)) {
        if (c == cached) index_cache_used(c);
        s->shard_size = stamp.size;
        return std::move(*s);
      }
    }
  }

  shard_index s = parse_shard(reader, options);
  s.shard_size = stamp.size;
  if (!options.use_cache) {
    s.note = "cache disabled";
  } else if (is_racy(stamp, wall_clock_now())) {
    s.note = "index of " + shard + " not saved: the shard was modified less than 2 s ago (it may still be changing)";
  } else if (candidates.empty()) {
    s.note = "index of " + shard + " not saved: no cache directory (set RINGFEED_CACHE_DIR, XDG_CACHE_HOME or HOME)";
  } else {
    const std::string bytes = serialize(s, fingerprint, stamp);
    std::string errors;
    for (const auto& c : candidates) {
      const std::string err = write_file_atomically(c, bytes);
      if (err.empty()) {
        if (c == cached) prune_index_cache(c.parent_path());
        s.index_path = c.native();
        errors.clear();
        break;
      }
      errors += (errors.empty() ? "" : "; ") + err;
    }
    if (!errors.empty()) s.note = "index of " + shard + " not saved: " + errors;
  }
  return s;
}

}  // namespace

dataset_contents tar_contents(const std::vector<std::filesystem::path>& shards, const dataset_options& options) {
  const auto start = std::chrono::steady_clock::now();
  if (shards.empty()) throw dataset_error("(no shards)", "no tar shard given");
  if (shards.size() >= no_shard) throw dataset_error(shards.front().native(), "too many shards");
  const std::uint64_t fingerprint = tar_fingerprint(options);
  std::vector<shard_index> parts(shards.size());
  std::vector<std::string> paths(shards.size());
  for (std::size_t k = 0; k < shards.size(); ++k) {
    std::error_code ec;
    const auto abs = std::filesystem::absolute(shards[k], ec);
    paths[k] = (ec ? shards[k] : abs.lexically_normal()).native();
  }
  parallel_for(shards.size(), scan_threads(options, shards.size()),
               [&](std::size_t k) { parts[k] = index_one_shard(paths[k], options, fingerprint); });

  dataset_contents c;
  c.kind = dataset_kind::tar_shards;
  c.source = shards.size() == 1 ? paths.front() : paths.front() + " (+" + std::to_string(shards.size() - 1) + " shards)";
  std::size_t total = 0;
  std::size_t chars = 0;
  for (const auto& p : parts) {
    total += p.offsets.size();
    chars += p.names.chars().size();
  }
  c.names.reserve(total, chars);
  c.labels.reserve(total);
  c.offsets.reserve(total);
  c.sizes.reserve(total);
  c.shard_of.reserve(total);
  for (std::size_t k = 0; k < parts.size(); ++k) {
    shard_index& p = parts[k];
    shard_info info;
    info.path = paths[k];
    info.size = p.shard_size;
    info.index_path = p.index_path;
    c.shards.push_back(std::move(info));
    c.names.append(p.names);
    c.labels.insert(c.labels.end(), p.labels.begin(), p.labels.end());
    c.offsets.insert(c.offsets.end(), p.offsets.begin(), p.offsets.end());
    c.sizes.insert(c.sizes.end(), p.sizes.begin(), p.sizes.end());
    c.shard_of.insert(c.shard_of.end(), p.offsets.size(), static_cast<std::uint32_t>(k));
    if (p.from_cache) {
      ++c.report.shards_from_cache;
    } else {
      ++c.report.shards_indexed;
    }
    if (c.report.cache_note.empty()) c.report.cache_note = p.note;
  }
  c.report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return c;
}

dataset_contents remote_tar_contents(const std::vector<std::string>& urls,
                                     const std::function<tar_reader(const std::string&)>& open,
                                     const dataset_options& options) {
  const auto start = std::chrono::steady_clock::now();
  if (urls.empty()) throw dataset_error("(no shards)", "no tar shard given");
  if (urls.size() >= no_shard) throw dataset_error(urls.front(), "too many shards");
  std::vector<shard_index> parts(urls.size());
  parallel_for(urls.size(), scan_threads(options, urls.size()), [&](std::size_t k) {
    tar_reader reader = open(urls[k]);
    parts[k] = parse_shard(reader, options);
    parts[k].shard_size = reader.file_size();
  });
  dataset_contents c;
  c.kind = dataset_kind::tar_shards;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    shard_index& p = parts[k];
    c.shards.push_back({urls[k], p.shard_size, {}});
    c.names.append(p.names);
    c.labels.insert(c.labels.end(), p.labels.begin(), p.labels.end());
    c.offsets.insert(c.offsets.end(), p.offsets.begin(), p.offsets.end());
    c.sizes.insert(c.sizes.end(), p.sizes.begin(), p.sizes.end());
    c.shard_of.insert(c.shard_of.end(), p.offsets.size(), static_cast<std::uint32_t>(k));
    ++c.report.shards_indexed;
  }
  c.report.cache_note = "indexes of shards in object storage are not saved (they are built in one pass)";
  c.report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return c;
}

}  // namespace detail
}  // namespace ringfeed::data
