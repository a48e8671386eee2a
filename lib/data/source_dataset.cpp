// data::open_dataset(io::source&): a dataset listed through the storage
// interface, whatever holds it.
#include <ringfeed/data/dataset.hpp>

namespace ringfeed::data {

dataset open_dataset(io::source& src, const dataset_options& options) {
  const std::string_view scheme = src.scheme();
  if (scheme == "lmdb") {
    if (options.kind != source_kind::auto_detect && options.kind != source_kind::lmdb)
      throw dataset_error(src.location(), "an LMDB database holds records, not another kind of dataset");
    return index_lmdb(src, options);
  }
  if (scheme != "nfs") return open_dataset(src.location(), options);
  // A tree on storage with no local path: an ImageFolder, listed through the source.
  if (options.kind != source_kind::auto_detect && options.kind != source_kind::image_folder)
    throw dataset_error(src.location(),
                        "only an ImageFolder can be read from nfs:// (mount the export to read manifests or tar "
                        "shards on it, or pack it: `ringfeed pack " + src.location() + " OUT`)");
  return scan_listed_image_folder(
      src.location(),
      [&src](const std::string& relative) {
        std::vector<listed_entry> out;
        for (auto& e : src.list(relative))
          out.push_back({std::move(e.name), e.is_directory, e.is_directory ? unknown_size : e.size});
        return out;
      },
      options);
}

}  // namespace ringfeed::data
