// libFuzzer target: tar shards, as ringfeed reads archives it did not write.
// The input is one shard. Two entry points read it:
//  - data::tar_reader, the member walk (ustar, GNU long names and links,
//    pax headers with path/size/linkpath, prefixes, sparse files) that
//    `pack`, the stream reader and the index use;
//  - data::index_tar_shards, the WebDataset offset index (keys, suffixes,
//    labels), with the index cache off so every run parses.
// Bad archives must be dataset_error (or std::system_error for I/O) naming
// the shard; an index that is built must point inside the shard.
#include <cstddef>
#include <cstdint>
#include <system_error>
#include <vector>

#include <ringfeed/data/dataset.hpp>
#include <ringfeed/data/tar.hpp>

#include "fuzz_support.hpp"

namespace data = ringfeed::data;
using ringfeed::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  static const auto path = ringfeed::fuzz::scratch_dir() / "shard.tar";
  ringfeed::fuzz::write_file(path, bytes, size);

  try {
    data::tar_reader reader(path);
    std::vector<char> member;
    while (auto m = reader.next()) {
      require(m->data_offset >= m->header_offset + 512, "a member's data follows its header");
      // Read small regular members whole: a member that ends past the
      // archive must be an error, not a short read.
      if (m->is_regular() && m->size <= 4096) {
        member.resize(m->size);
        reader.read_at(m->data_offset, member);
      }
    }
  } catch (const data::dataset_error&) {
  } catch (const std::system_error&) {
  }

  try {
    data::dataset_options options;
    options.use_cache = false;
    options.scan_threads = 1;
    const data::dataset ds = data::index_tar_shards({path}, options);
    for (std::size_t i = 0; i < ds.size(); ++i) {
      const data::sample_location at = ds.location(i);
      require(at.shard == 0, "samples point into the one shard");
      require(at.offset <= size && at.size <= size - at.offset, "a sample's bytes lie inside the shard");
      require(!ds.name(i).empty(), "samples have a key");
    }
  } catch (const data::dataset_error&) {
  } catch (const std::system_error&) {
  }
  return 0;
}
