// libFuzzer target: CSV/TSV manifests (`path,label` per line, RFC 4180
// quoting, an optional header line, a UTF-8 BOM), read by data::read_manifest.
// The input's size picks the file name's extension (.csv, .tsv, or .txt,
// where the delimiter is sniffed from the first line), so seeds stay plain
// manifests. Bad text must be dataset_error naming the file (and the line);
// a manifest that opens lists non-empty paths without NUL bytes.
#include <cstddef>
#include <cstdint>
#include <system_error>

#include <ringfeed/data/dataset.hpp>

#include "fuzz_support.hpp"

namespace data = ringfeed::data;
using ringfeed::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* bytes, std::size_t size) {
  static const char* const names[] = {"list.csv", "list.tsv", "list.txt"};
  const auto path = ringfeed::fuzz::scratch_dir() / names[size % 3];
  ringfeed::fuzz::write_file(path, bytes, size);
  try {
    const data::dataset ds = data::read_manifest(path);
    require(!ds.empty(), "a manifest that opens lists samples");
    for (std::size_t i = 0; i < ds.size(); ++i) {
      require(!ds.name(i).empty(), "every path is non-empty");
      require(ds.name(i).find('\0') == std::string_view::npos, "no path holds a NUL byte");
    }
  } catch (const data::dataset_error& e) {
    require(e.path() == path.native(), "the error names the manifest");
  } catch (const std::system_error&) {
  }
  return 0;
}
