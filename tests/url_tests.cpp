// object_url parsing and resolution, WebDataset brace expansion (Python
// braceexpand's rules), `::` URL specs and URL list files.
#include <catch2/catch.hpp>

#include <ringfeed/io/url.hpp>

#include <fstream>
#include <system_error>

#include "test_support.hpp"

using namespace ringfeed::io;
using strings = std::vector<std::string>;

TEST_CASE("s3 URLs: bucket and raw key", "[url]") {
  const auto u = object_url::parse("s3://my-bucket/train/n01440764/img 1.JPEG");
  CHECK(u.scheme == url_scheme::s3);
  CHECK(u.host == "my-bucket");
  CHECK(u.path == "train/n01440764/img 1.JPEG");
  CHECK(u.file_name() == "img 1.JPEG");
  CHECK(u.str() == "s3://my-bucket/train/n01440764/img 1.JPEG");
  CHECK(object_url::parse("s3://b").path.empty());
  CHECK(object_url::parse("s3://b/").path.empty());
  CHECK(object_url::parse("S3://b/prefix/").path == "prefix/");
  CHECK(object_url::parse("s3://b/a?b#c").path == "a?b#c");  // keys, not URLs
}

TEST_CASE("https URLs: host, port, path, query", "[url]") {
  auto u = object_url::parse("https://example.com:8443/data/shard-000001.tar?X-Amz-Signature=abc&x=1");
  CHECK(u.scheme == url_scheme::https);
  CHECK(u.host == "example.com");
  CHECK(u.port == 8443);
  CHECK(u.path == "/data/shard-000001.tar");
  CHECK(u.query == "X-Amz-Signature=abc&x=1");
  CHECK(u.authority() == "example.com:8443");
  CHECK(u.str() == "https://example.com:8443/data/shard-000001.tar?X-Amz-Signature=abc&x=1");
  u = object_url::parse("http://[::1]:9000");
  CHECK(u.scheme == url_scheme::http);
  CHECK(u.host == "::1");
  CHECK(u.port == 9000);
  CHECK(u.path == "/");
  CHECK(u.authority() == "[::1]:9000");
  CHECK(object_url::parse("https://h/p%20q").path == "/p%20q");  // escapes kept for the wire
}

TEST_CASE("bad URLs are refused with the URL and the reason", "[url]") {
  CHECK_THROWS_WITH(object_url::parse("ftp://x/y"), Catch::Contains("'ftp://x/y'") && Catch::Contains("scheme"));
  CHECK_THROWS_WITH(object_url::parse("s3:///key"), Catch::Contains("no bucket"));
  CHECK_THROWS_WITH(object_url::parse("https://h:99999/"), Catch::Contains("bad port"));
  CHECK_THROWS_WITH(object_url::parse("https://h:/"), Catch::Contains("bad port"));
  CHECK_THROWS_WITH(object_url::parse("https://user:pw@h/"), Catch::Contains("user names"));
  CHECK_THROWS_WITH(object_url::parse("https://h/a#b"), Catch::Contains("fragment"));
  CHECK_THROWS_WITH(object_url::parse("https:///x"), Catch::Contains("no host"));
  CHECK_THROWS_WITH(object_url::parse("s3://b/a\nb"), Catch::Contains("control"));
  CHECK(object_url::is_url("HTTPS://x"));
  CHECK_FALSE(object_url::is_url("/data/train"));
  CHECK_FALSE(object_url::is_url("nfs://h/e"));
}

TEST_CASE("manifest entries resolve against the manifest's URL", "[url]") {
  const auto s3 = object_url::parse("s3://b/sets/v1/manifest.csv");
  CHECK(s3.resolve("img/a.jpg").str() == "s3://b/sets/v1/img/a.jpg");
  CHECK(s3.resolve("../v0/a.jpg").str() == "s3://b/sets/v0/a.jpg");
  CHECK(s3.resolve("./a.jpg").str() == "s3://b/sets/v1/a.jpg");
  CHECK(s3.resolve("/root.jpg").str() == "s3://b/root.jpg");
  CHECK(s3.resolve("https://cdn/x.jpg").str() == "https://cdn/x.jpg");
  CHECK(s3.resolve("s3://other/k").str() == "s3://other/k");
  CHECK_THROWS_WITH(s3.resolve("../../../x"), Catch::Contains("climbs above"));
  const auto h = object_url::parse("https://h:8443/d/manifest.csv?sig=1");
  CHECK(h.resolve("img/a.jpg").str() == "https://h:8443/d/img/a.jpg");  // the manifest's query is its own
  CHECK(h.resolve("/x/a.jpg?s=2").str() == "https://h:8443/x/a.jpg?s=2");
  CHECK(object_url::parse("s3://b/manifest.csv").resolve("a.jpg").str() == "s3://b/a.jpg");
}

TEST_CASE("brace expansion: WebDataset shard ranges, zero-padded", "[url][braces]") {
  const auto shards = expand_braces("s3://b/train/shard-{000000..001023}.tar");
  REQUIRE(shards.size() == 1024);
  CHECK(shards.front() == "s3://b/train/shard-000000.tar");
  CHECK(shards[1] == "s3://b/train/shard-000001.tar");
  CHECK(shards.back() == "s3://b/train/shard-001023.tar");
  CHECK(expand_braces("shard-{0..3}.tar") == strings{"shard-0.tar", "shard-1.tar", "shard-2.tar", "shard-3.tar"});
  CHECK(expand_braces("{8..11}") == strings{"8", "9", "10", "11"});        // no leading zero: no padding
  CHECK(expand_braces("{08..11}") == strings{"08", "09", "10", "11"});     // either bound padded: both
  CHECK(expand_braces("{1..010}") == strings{"001", "002", "003", "004", "005", "006", "007", "008", "009", "010"});
  CHECK(expand_braces("{3..1}") == strings{"3", "2", "1"});
  CHECK(expand_braces("{0..10..5}") == strings{"0", "5", "10"});
  CHECK(expand_braces("{10..0..5}") == strings{"10", "5", "0"});
  CHECK(expand_braces("{-1..1}") == strings{"-1", "0", "1"});
  CHECK(expand_braces("{a..c}") == strings{"a", "b", "c"});
}

TEST_CASE("brace expansion: lists, nesting, products, literals", "[url][braces]") {
  CHECK(expand_braces("{train,val}/x") == strings{"train/x", "val/x"});
  CHECK(expand_braces("a{,b}") == strings{"a", "ab"});
  CHECK(expand_braces("{a,b{1,2}}c") == strings{"ac", "b1c", "b2c"});
  CHECK(expand_braces("{a,b}-{0..1}") == strings{"a-0", "a-1", "b-0", "b-1"});  // left group slowest
  CHECK(expand_braces("x{y}z") == strings{"x{y}z"});
  CHECK(expand_braces("{}") == strings{"{}"});
  CHECK(expand_braces(R"(a\{0..1\})") == strings{"a{0..1}"});
  CHECK(expand_braces(R"({a\,b,c})") == strings{"a,b", "c"});
  CHECK(expand_braces("plain.tar") == strings{"plain.tar"});
}

TEST_CASE("brace expansion: bad patterns name the pattern", "[url][braces]") {
  CHECK_THROWS_WITH(expand_braces("shard-{0..3.tar"), Catch::Contains("'shard-{0..3.tar'") && Catch::Contains("never closed"));
  CHECK_THROWS_WITH(expand_braces("a}b"), Catch::Contains("closes no"));
  CHECK_THROWS_WITH(expand_braces("{0..99999}{0..999}"), Catch::Contains("more than"));
}

TEST_CASE("URL specs: '::'-separated patterns", "[url][braces]") {
  CHECK(expand_url_spec("s3://a/x-{0..1}.tar::https://[::1]:8/y.tar") ==
        strings{"s3://a/x-0.tar", "s3://a/x-1.tar", "https://[::1]:8/y.tar"});
  CHECK(expand_url_spec("s3://a/x.tar") == strings{"s3://a/x.tar"});
}

TEST_CASE("URL lists: a text file of URLs", "[url]") {
  ringfeed::test::temp_dir dir;
  const auto file = dir.path() / "urls.txt";
  {
    std::ofstream out(file);
    out << "# shards\n  s3://b/s-{0..1}.tar  \n\nhttps://h/x.tar\r\n";
  }
  CHECK(read_url_list(file) == strings{"s3://b/s-0.tar", "s3://b/s-1.tar", "https://h/x.tar"});
  {
    std::ofstream out(file);
    out << "s3://b/ok\ns3://b/{bad\n";
  }
  CHECK_THROWS_WITH(read_url_list(file), Catch::Contains("urls.txt:2"));
  try {
    (void)read_url_list(dir.path() / "missing.txt");
    FAIL("no error");
  } catch (const std::system_error& e) {
    CHECK(e.code().value() == ENOENT);
    CHECK_THAT(e.what(), Catch::Contains("missing.txt"));
  }
}
