// libFuzzer target: the records of an LMDB dataset (msgpack [image, label]
// values and the `__len__` count), indexed by data::open_dataset through an
// io::source, as for `lmdb://` locations. The source here serves a database
// from memory: the input, split at each "\nRFKEY\n", is the value of
// `__len__` (first piece; absent when empty) and of keys "0", "1", ... (the
// rest, at most 16). Bad records must be dataset_error naming the location
// and the key; an index that is built must point inside each value.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <ringfeed/data/dataset.hpp>
#include <ringfeed/io/source.hpp>
#include <ringfeed/sync_wait.hpp>

#include "fuzz_support.hpp"

namespace io = ringfeed::io;
namespace data = ringfeed::data;
using ringfeed::fuzz::require;

namespace {

/// A read-only key-value store in memory, listed and read like LMDB.
class memory_lmdb final : public io::source {
 public:
  explicit memory_lmdb(std::map<std::string, std::string> values)
      : source("lmdb:///fuzz", io::storage_info{}, 4), m_values(std::move(values)) {}

  std::string_view scheme() const noexcept override { return "lmdb"; }
  std::string_view backend_name() const noexcept override { return "memory"; }
  std::vector<io::source_entry> list(const std::string& dir) override {
    if (!dir.empty()) throw std::system_error(ENOTDIR, std::system_category(), "lmdb:///fuzz/" + dir);
    std::vector<io::source_entry> out;
    for (const auto& [k, v] : m_values) out.push_back({k, false, v.size()});
    return out;
  }
  ringfeed::task<std::span<const std::byte>> read(io::sample_ref ref, io::read_buffer& buffer) override {
    const auto it = m_values.find(std::string(ref.file));
    if (it == m_values.end())
      throw std::system_error(ENOENT, std::system_category(), "lmdb:///fuzz: key " + std::string(ref.file));
    const std::string& v = it->second;
    std::uint64_t offset = 0, n = v.size();
    if (ref.range) {
      require(ref.offset <= v.size() && ref.size <= v.size() - ref.offset, "the indexer reads inside a value");
      offset = ref.offset;
      n = ref.size;
    }
    buffer.reserve(n);
    if (n != 0) std::memcpy(buffer.data(), v.data() + offset, n);
    buffer.set_size(n);
    co_return buffer.bytes();
  }
  io::source_stats stats() const override { return {}; }

 private:
  std::map<std::string, std::string> m_values;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  static constexpr std::string_view sep = "\nRFKEY\n";
  const std::string_view input(reinterpret_cast<const char*>(bytes), size);
  std::vector<std::string_view> pieces;
  for (std::size_t at = 0;;) {
    const std::size_t next = input.find(sep, at);
    pieces.push_back(input.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at));
    if (next == std::string_view::npos || pieces.size() > 16) break;
    at = next + sep.size();
  }
  std::map<std::string, std::string> values;
  if (!pieces[0].empty()) values["__len__"] = std::string(pieces[0]);
  for (std::size_t i = 1; i < pieces.size(); ++i) values[std::to_string(i - 1)] = std::string(pieces[i]);

  memory_lmdb src(std::move(values));
  try {
    const data::dataset ds = data::open_dataset(src);
    require(!ds.empty(), "an index that opens holds records");
    for (std::size_t i = 0; i < ds.size(); ++i) {
      const data::sample_location at = ds.location(i);
      const std::size_t value = pieces.at(i + 1).size();
      require(at.offset <= value && at.size <= value - at.offset, "a record's image lies inside its value");
    }
  } catch (const data::dataset_error& e) {
    require(e.path() == "lmdb:///fuzz", "the error names the location");
  }
  return 0;
}
