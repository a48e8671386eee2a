// loader_core's side of cache=pixels (issue 40): opening the cache and the
// key of a sample. The reads and stores are in work() (loader_run.cpp).
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

#include <ringfeed/detail/path_inside.hpp>
#include <ringfeed/image/decode.hpp>
#include <ringfeed/text.hpp>

#include "loader_core.hpp"

namespace ringfeed::detail {

void loader_core::open_pixel_cache() {
  if (m_opt.cache != cache_kind::pixels || m_opt.cache_dir.empty()) return;
  const std::string dir = escape_bytes(m_opt.cache_dir);
  if (m_opt.pixels) {
    log("cache_dir '" + dir + "' not used: the samples are pixels in memory already");
    return;
  }
  // In a folder that is read as the dataset, its directory would become a
  // class (with no image in it) at the next listing.
  std::error_code ec;
  if (!m_src && std::filesystem::is_directory(m_opt.source, ec) && path_inside(m_opt.cache_dir, m_opt.source))
    throw std::invalid_argument("loader: cache_dir '" + dir + "' is inside the source '" + escape_bytes(m_opt.source) +
                                "', which would list the cache as part of the dataset; put it elsewhere");
  pixel_cache_options po;
  po.dir = std::filesystem::path(m_opt.cache_dir) / "pixels";
  // The option's default means "not set": the pixel cache then sizes itself by the disk.
  if (m_opt.cache_bytes != loader_options{}.cache_bytes) po.max_bytes = m_opt.cache_bytes;
  po.direct = m_opt.direct;
  po.log = [this](std::string_view line) { log(line); };
  try {
    m_pixels = std::make_unique<pixel_cache>(std::move(po));
  } catch (const std::system_error& e) {
    if (m_opt.on_error == error_policy::fail) throw;
    log(std::string(e.what()) + ": going on without the pixel cache (on_error=skip)");
    return;
  }
  m_pixel_decode = "ringfeed pixels 1; libjpeg-turbo " + std::to_string(image::jpeg_library_version()) + "; exif " +
                   (m_plan.pipe.decoding().apply_exif_orientation ? "applied" : "ignored");
  // A deterministic head (Resize + CenterCrop: a val list) is run once and
  // its output kept, smaller than the decode and one resize less per epoch;
  // a random one (RandomResizedCrop, a flip) runs every epoch on the decode.
  m_pixel_head = m_plan.pipe.head_deterministic();
  if (m_pixel_head) m_pixel_decode += "; " + m_plan.pipe.head_spec();
  // Local files are stat'ed for each key; storage listed through a source
  // (LMDB, nfs://, object stores) is open by now and tells versions itself.
  m_local_files = !m_src;
  if (m_src) {
    // The listing and index are made: from here on the versions hold still.
    m_src->seal_versions();
    std::string scratch;
    if (!m_ds.empty() && m_src->version(std::string(m_ds.ref(0, scratch).file)).empty())
      log("pixel cache: " + std::string(m_src->scheme()) + " storage tells no version of a file before reading it "
          "(an ETag from a listing, an mtime): entries are keyed by name and size (by name alone where the "
          "listing gives no size, as a manifest's), so a file replaced by one of the same size is not noticed; "
          "empty '" + dir + "/pixels' when the data set changes");
  }
  const pixel_cache_counters c = m_pixels->counters();
  log("pixel cache '" + dir + "/pixels': " + std::to_string(c.entries) + " entries, " +
      byte_size_text(c.bytes, byte_unit::gib) + "; " + c.reason + "; keeps " +
      (m_pixel_head ? "the output of the deterministic " + m_plan.pipe.head_spec() : std::string("the decoded image")));
}

pixel_cache::key loader_core::pixel_key(const io::sample_ref& ref) const {
  // Where the bytes come from and which bytes they are: a changed file
  // (size, mtime) or another range is another key, so stale pixels are
  // never read. Storage read through a source adds what it tells of the
  // version (an ETag from the listing or index, an LMDB database's mtime).
  std::string id = m_opt.source;
  id.push_back('\0');
  id.append(ref.file);
  char numbers[128];
  std::snprintf(numbers, sizeof numbers, "|%d|%llu|%llu", ref.range ? 1 : 0,
                static_cast<unsigned long long>(ref.offset), static_cast<unsigned long long>(ref.size));
  id += numbers;
  if (!m_local_files) {  // an object's ETag, an LMDB database's mtime
    const std::string version = m_src->version(std::string(ref.file));
    if (!version.empty()) id.append("|").append(version);
  } else {
    struct stat st {};
    const std::string path(ref.file);
    if (::stat(path.c_str(), &st) == 0) {
      std::snprintf(numbers, sizeof numbers, "|%lld|%lld.%09ld", static_cast<long long>(st.st_size),
                    static_cast<long long>(st.st_mtim.tv_sec), st.st_mtim.tv_nsec);
      id += numbers;
    }
  }
  return pixel_cache::key_of(m_pixel_decode, id);
}

}  // namespace ringfeed::detail
