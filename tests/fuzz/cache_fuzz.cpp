// libFuzzer target: the read-through cache's entry files, which a later run
// (or another process, or a crash) may have left in any state. The input is
// written as the entry file of one key; then a cache opens the directory
// (scanning and indexing what is there, removing leftovers) and get() reads
// the key with and without an expected size. A hit must return exactly the
// payload the file holds after a header naming this key; anything else is a
// miss, never a crash or a wrong byte.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

#include <ringfeed/io/buffer.hpp>
#include <ringfeed/io/cache.hpp>

#include "fuzz_support.hpp"

namespace io = ringfeed::io;
using ringfeed::fuzz::require;

namespace {

constexpr std::string_view key = "nfs://server/export/train/n01440764/x.JPEG";
constexpr std::size_t header = 8 + 4 + 8 + key.size();  // magic, key length, payload length, key

io::cache_options options() {
  io::cache_options o;
  o.dir = ringfeed::fuzz::scratch_dir() / "cache";
  o.max_bytes = std::uint64_t{1} << 30;
  o.log = [](std::string_view) {};
  return o;
}

const std::filesystem::path& entry_file() {
  static const std::filesystem::path file = [] {
    const io::cache c(options());
    return c.file_of(key);
  }();
  return file;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  const std::filesystem::path& file = entry_file();
  std::filesystem::create_directories(file.parent_path());
  ringfeed::fuzz::write_file(file, bytes, size);
  io::cache c(options());
  io::read_buffer buffer;
  const std::uint64_t sizes[] = {io::unknown_size, size >= header ? size - header : 0, size};
  for (const std::uint64_t expected : sizes) {
    if (!c.get(key, expected, buffer)) continue;
    require(size >= header && buffer.bytes().size() == size - header, "a hit is the whole payload");
    require(size == header || std::memcmp(buffer.bytes().data(), bytes + header, size - header) == 0,
            "a hit is the file's bytes after the header");
  }
  const io::cache_stats st = c.stats();
  require(st.hits + st.misses == 3, "every get() is a hit or a miss");
  return 0;
}
