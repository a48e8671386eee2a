// ringfeed::io::classify_location — what kind of storage a location string
// names. The one answer to "is this a URL, and which?" that source::open,
// the dataset layer, the loader and the bindings ask; object_url::is_url,
// nfs_url::is_nfs, is_object_location and is_lmdb_location are one-line
// wrappers over it.
//
// Pure parsing except classify_location_on_disk(); any thread; nothing throws.
#pragma once

#include <string_view>

namespace ringfeed::io {

enum class location_kind {
  local,      ///< a path: no scheme (`/data/train`, `shards/{0..9}.tar`, `./a://b`)
  nfs,        ///< `nfs://server/export/path`
  s3,         ///< `s3://bucket/key`
  http,       ///< `http://…` or `https://…`
  lmdb,       ///< `lmdb:///path`; classify_location_on_disk also finds LMDB directories
  other_url,  ///< another scheme (`gs://…`, `foo://…`, `C://…`): a URL nothing here reads
};

/// The scheme `text` starts with, as written ("s3", "HTTPS"), or "" when it
/// has none. A scheme is an ASCII letter, then letters, digits, '+', '-' or
/// '.', then "://" (RFC 3986's scheme followed by an authority): `foo://x`
/// and `C://x` have one, `./a://b`, `1x://y` and `://x` do not.
[[nodiscard]] std::string_view location_scheme(std::string_view text) noexcept;

/// The kind `text` names, from the string alone (no I/O): its scheme, in
/// any case (`S3://`, `Nfs://` and `LMDB://` count), or local when it has
/// none. A directory holding an LMDB database is `local` here: see
/// classify_location_on_disk.
[[nodiscard]] location_kind classify_location(std::string_view text) noexcept;

/// classify_location, except that a local path naming an LMDB database (a
/// directory holding `data.mdb`, or a `…/data.mdb` file) is `lmdb`: the kind
/// source::open opens. Looks on disk (stat) for local paths only.
[[nodiscard]] location_kind classify_location_on_disk(std::string_view location) noexcept;

/// s3 or http: objects read through an HTTP client.
[[nodiscard]] constexpr bool is_object_kind(location_kind kind) noexcept {
  return kind == location_kind::s3 || kind == location_kind::http;
}

}  // namespace ringfeed::io
