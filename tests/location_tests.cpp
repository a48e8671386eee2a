// io::classify_location: one answer to "is this a URL, and which?", and the
// older predicates that wrap it.
#include <catch2/catch.hpp>

#include <ringfeed/data/dataset.hpp>
#include <ringfeed/io/location.hpp>
#include <ringfeed/io/nfs.hpp>
#include <ringfeed/io/source.hpp>
#include <ringfeed/io/url.hpp>

#include <filesystem>
#include <fstream>
#include <system_error>

#include "test_support.hpp"

using namespace ringfeed::io;

TEST_CASE("classify_location: schemes in any case, else a local path", "[location]") {
  CHECK(classify_location("/data/train") == location_kind::local);
  CHECK(classify_location("shards/train-{000..009}.tar") == location_kind::local);
  CHECK(classify_location("") == location_kind::local);
  CHECK(classify_location("s3://bucket/prefix/") == location_kind::s3);
  CHECK(classify_location("S3://bucket") == location_kind::s3);
  CHECK(classify_location("http://127.0.0.1:9000/x.tar") == location_kind::http);
  CHECK(classify_location("HTTPS://host/x.tar") == location_kind::http);
  CHECK(classify_location("nfs://server/export/train") == location_kind::nfs);
  CHECK(classify_location("NFS://server/export") == location_kind::nfs);
  CHECK(classify_location("lmdb:///data/train.lmdb") == location_kind::lmdb);
  CHECK(classify_location("LMDB:///data/train.lmdb") == location_kind::lmdb);
  CHECK(classify_location("gs://bucket/x") == location_kind::other_url);
  // A prefix is not a scheme: s3x:// and https3:// are others.
  CHECK(classify_location("s3x://b") == location_kind::other_url);
  CHECK(classify_location("https3://b") == location_kind::other_url);
  CHECK(classify_location("s3:/bucket") == location_kind::local);
}

TEST_CASE("classify_location: what counts as a scheme", "[location]") {
  // RFC 3986: a letter, then letters, digits, '+', '-', '.'; then "://".
  CHECK(location_scheme("foo://x") == "foo");
  CHECK(location_scheme("svn+ssh://h/r") == "svn+ssh");
  CHECK(classify_location("foo://x") == location_kind::other_url);
  CHECK(classify_location("C://") == location_kind::other_url);  // as before: not read as a path
  CHECK(location_scheme("C://") == "C");
  // No scheme: a path that holds "://" somewhere.
  CHECK(location_scheme("./a://b") == "");
  CHECK(classify_location("./a://b") == location_kind::local);
  CHECK(classify_location("/data/a://b") == location_kind::local);
  CHECK(classify_location("1x://y") == location_kind::local);
  CHECK(classify_location("://x") == location_kind::local);
  CHECK(classify_location("a b://x") == location_kind::local);
}

TEST_CASE("classify_location_on_disk: LMDB directories and data.mdb files", "[location]") {
  ringfeed::test::temp_dir tmp;
  const auto db = tmp.path() / "db";
  std::filesystem::create_directories(db);
  std::ofstream(db / "data.mdb") << "x";
  CHECK(classify_location(db.string()) == location_kind::local);  // the string alone
  CHECK(classify_location_on_disk(db.string()) == location_kind::lmdb);
  CHECK(classify_location_on_disk((db / "data.mdb").string()) == location_kind::lmdb);
  CHECK(classify_location_on_disk(tmp.path().string()) == location_kind::local);
  CHECK(classify_location_on_disk("s3://b/db") == location_kind::s3);  // no look on disk for a URL
}

TEST_CASE("the older predicates answer as classify_location", "[location]") {
  for (const char* text : {"/data", "s3://b", "S3://b", "http://h/x", "Https://h/x", "nfs://s/e", "lmdb:///x",
                           "LMDB:///x", "foo://x", "./a://b", "C://"}) {
    CAPTURE(text);
    const location_kind kind = classify_location(text);
    CHECK(object_url::is_url(text) == (kind == location_kind::s3 || kind == location_kind::http));
    CHECK(is_object_location(text) == object_url::is_url(text));
    CHECK(nfs_url::is_nfs(text) == (kind == location_kind::nfs));
    CHECK(is_lmdb_location(text) == (kind == location_kind::lmdb));
  }
}

TEST_CASE("datasets refuse a URL they cannot read, by its scheme", "[location]") {
  using ringfeed::data::detect_source_kind;
  CHECK_THROWS_WITH(detect_source_kind("foo://x"), Catch::Contains("unsupported URL scheme 'foo://'"));
  CHECK_THROWS_WITH(detect_source_kind("C://"), Catch::Contains("unsupported URL scheme 'c://'"));
  CHECK_THROWS_WITH(detect_source_kind("HTTPS://h/x.tar"), Catch::Contains("unsupported URL scheme 'https://'"));
  CHECK_THROWS_WITH(detect_source_kind("Nfs://s/e"), Catch::Contains("opened by the loader"));
  // A local path with "://" inside is a path: missing here, so its error.
  CHECK_THROWS_AS(detect_source_kind("./a://b"), std::system_error);
  CHECK(detect_source_kind("./a://{0..1}.tar") == ringfeed::data::source_kind::tar_shards);
}
