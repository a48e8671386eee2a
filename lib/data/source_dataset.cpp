// data::open_dataset(io::source&): a dataset listed through the storage
// interface, whatever holds it.
#include <ringfeed/data/dataset.hpp>
#include <ringfeed/io/url.hpp>
#include <ringfeed/sync_wait.hpp>

#include <algorithm>
#include <cstring>

#include "data/data_detail.hpp"

namespace ringfeed::data {
namespace {

std::vector<listed_entry> list_through(io::source& src, const std::string& relative) {
  std::vector<listed_entry> out;
  for (auto& e : src.list(relative))
    out.push_back({std::move(e.name), e.is_directory, e.is_directory ? unknown_size : e.size});
  return out;
}

std::string read_object(io::source& src, const std::string& file) {
  io::read_buffer buf;
  const auto bytes = sync_wait(src.read(io::sample_ref{file}, buf));
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

dataset object_dataset(io::source& src, const dataset_options& options) {
  const std::string& location = src.location();
  const std::string path = detail::ascii_lower(location.substr(0, location.find('?')));
  const auto ends = [&](std::string_view suffix) { return path.ends_with(suffix); };
  source_kind kind = options.kind;
  bool url_list = false;
  if (kind == source_kind::auto_detect) {
    if (ends(".csv") || ends(".tsv")) {
      kind = source_kind::manifest;
    } else if (ends(".txt")) {
      kind = source_kind::tar_shards;
      url_list = true;
    } else if (ends(".tar") || path.find('{') != std::string::npos) {
      kind = source_kind::tar_shards;
    } else {
      kind = source_kind::image_folder;
    }
  }
  // Entries of a manifest or a URL list are relative to it.
  const auto resolve = [&location](std::string_view ref) { return io::object_url::parse(location).resolve(ref).str(); };
  switch (kind) {
    case source_kind::image_folder: {
      detail::dataset_contents c = detail::listed_image_folder_contents(
          location, [&src](const std::string& relative) { return list_through(src, relative); }, options);
      // Objects the listing held that no tree can (io::source::excluded):
      // named with the reason, as the directories a scan leaves out are.
      for (io::excluded_entry& e : src.excluded()) c.report.skipped.push_back({std::move(e.path), std::move(e.reason)});
      return dataset(std::move(c));
    }
    case source_kind::manifest: {
      detail::dataset_contents c = detail::manifest_text_contents(read_object(src, location), location);
      detail::string_table names;
      for (std::size_t i = 0; i < c.names.size(); ++i) {
        try {
          names.push_back(resolve(c.names[i]));
        } catch (const std::invalid_argument& e) {
          throw dataset_error(location, e.what());
        }
      }
      c.names = std::move(names);
      c.root.clear();
      c.source = location;
      return dataset(std::move(c));
    }
    case source_kind::tar_shards: {
      std::vector<std::string> urls;
      if (url_list) {
        const std::string text = read_object(src, location);
        std::size_t at = 0;
        while (at < text.size()) {
          std::size_t eol = text.find('\n', at);
          if (eol == std::string::npos) eol = text.size();
          std::string_view line(text.data() + at, eol - at);
          while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
          while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
          if (!line.empty() && line.front() != '#')
            for (auto& u : io::expand_braces(line)) urls.push_back(resolve(u));
          at = eol + 1;
        }
        if (urls.empty()) throw dataset_error(location, "the list names no shard");
      } else {
        urls = io::expand_url_spec(location);
      }
      const std::size_t part = std::max<std::size_t>(options.object_part_bytes, 64 * 1024);
      auto open = [&src, part](const std::string& url) {
        const std::uint64_t size = src.file_size(url);
        auto read = [&src, url, size](std::uint64_t offset, std::span<char> out) -> std::size_t {
          if (offset >= size) return 0;
          const std::uint64_t n = std::min<std::uint64_t>(out.size(), size - offset);
          io::read_buffer buf;
          const auto bytes = sync_wait(src.read(io::sample_ref{url, true, offset, n}, buf));
          std::memcpy(out.data(), bytes.data(), bytes.size());
          return bytes.size();
        };
        return tar_reader(url, size, std::move(read), part);
      };
      detail::dataset_contents c = detail::remote_tar_contents(urls, open, options);
      c.source = location;
      return dataset(std::move(c));
    }
    case source_kind::lmdb:
      throw dataset_error(location, "an LMDB database cannot be read from object storage");
    case source_kind::auto_detect:
      break;
  }
  throw std::invalid_argument("open_dataset: bad source_kind");
}

}  // namespace

dataset open_dataset(io::source& src, const dataset_options& options) {
  const std::string_view scheme = src.scheme();
  if (scheme == "lmdb") {
    if (options.kind != source_kind::auto_detect && options.kind != source_kind::lmdb)
      throw dataset_error(src.location(), "an LMDB database holds records, not another kind of dataset");
    return index_lmdb(src, options);
  }
  if (scheme == "https" || scheme == "s3") return object_dataset(src, options);
  if (scheme != "nfs") return open_dataset(src.location(), options);
  // A tree on storage with no local path: an ImageFolder, listed through the source.
  if (options.kind != source_kind::auto_detect && options.kind != source_kind::image_folder)
    throw dataset_error(src.location(),
                        "only an ImageFolder can be read from nfs:// (mount the export to read manifests or tar "
                        "shards on it, or pack it: `ringfeed pack " + src.location() + " OUT`)");
  return scan_listed_image_folder(
      src.location(), [&src](const std::string& relative) { return list_through(src, relative); }, options);
}

}  // namespace ringfeed::data
