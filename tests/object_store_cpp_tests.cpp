// The object-store harness from C++ (support/object_store.hpp), end to end
// with the pieces s3core provides: a SigV4-signed ListObjectsV2 through the
// fault proxy to s3rver, a SlowDown fault parsed as S3's error, then the
// page parsed; and the C API's s3_* keys reading a tree of objects as the
// same tree on disk. Skips (77) when the harness or s3rver is unavailable.
#include <catch2/catch.hpp>

#include <ringfeed/io/aws_config.hpp>
#include <ringfeed/io/s3_xml.hpp>
#include <ringfeed/io/sigv4.hpp>
#include <ringfeed/ringfeed.h>

#include <cstdlib>
#include <fstream>

#include "image_test_data.hpp"
#include "object_store.hpp"

using namespace ringfeed::io;
namespace rt = ringfeed::test;

static rt::skip_if_unavailable skip{[]() -> std::string {
  if (auto why = rt::object_store::unavailable(); !why.empty()) return why;
  const char* prefix = std::getenv("RINGFEED_NODE_PREFIX");
  const char* home = std::getenv("HOME");
  const std::string dir = prefix != nullptr ? prefix : std::string(home != nullptr ? home : "") + "/.cache/ringfeed/node";
  if (std::getenv("RINGFEED_S3RVER") == nullptr && ::access((dir + "/node_modules/.bin/s3rver").c_str(), X_OK) != 0) {
    return "s3rver is not installed in " + dir + " (./bootstrap.sh deps)";
  }
  return {};
}};

namespace {

struct reply {
  int status = 0;
  std::string headers, body;
};

/// One plain-HTTP request to 127.0.0.1:port (Connection: close).
reply http_get(std::uint16_t port, const std::string& target, const std::vector<std::pair<std::string, std::string>>& headers) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const sockaddr_in a = rt::loopback(port);
  REQUIRE(::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0);
  std::string req = "GET " + target + " HTTP/1.1\r\nConnection: close\r\n";
  for (const auto& [k, v] : headers) req += k + ": " + v + "\r\n";
  req += "\r\n";
  (void)::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string raw;
  char buf[8192];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) raw.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  reply r;
  const std::size_t end = raw.find("\r\n\r\n");
  REQUIRE(end != std::string::npos);
  r.status = std::atoi(raw.c_str() + raw.find(' ') + 1);
  r.headers = raw.substr(0, end);
  r.body = raw.substr(end + 4);
  return r;
}

}  // namespace

TEST_CASE("a signed ListObjectsV2 through the fault proxy: SlowDown, then the page", "[s3][harness]") {
  rt::temp_dir data;
  for (const char* name : {"cat/1.jpg", "cat/2.jpg", "dog/3.jpg"}) {
    std::filesystem::create_directories((data.path() / name).parent_path());
    std::ofstream(data.path() / name) << name;
  }
  rt::object_store::options so;
  so.buckets = {"data"};
  so.proxy = "s3";
  so.populate = {{"data", data.path().string()}};
  rt::object_store store(so);
  REQUIRE_FALSE(store.proxy_url.empty());

  s3_options o;
  o.endpoint = store.proxy_url;
  o.credentials = aws_credentials{store.access_key_id, store.secret_access_key, "", std::nullopt};
  aws_environment env;  // nothing from this process
  const s3_endpoint ep = resolve_endpoint(o, env);
  credential_provider creds(o, env);

  auto list = [&](std::optional<std::string> token) {
    sigv4_request req;
    req.method = "GET";
    req.host = ep.host_for("data");
    req.path = ep.path_for("data", "");
    req.query = {{"list-type", "2"}, {"max-keys", "2"}};
    if (token) req.query.emplace_back("continuation-token", *token);
    const auto signed_req = sign_v4(req, creds.current(), ep.region, "s3", std::chrono::system_clock::now());
    std::vector<std::pair<std::string, std::string>> headers = signed_req.headers;
    headers.emplace_back("Host", req.host);
    return http_get(ep.port, uri_encode(req.path, false) + "?" + signed_req.encoded_query, headers);
  };

  store.put_fault(R"({"kind": "slowdown", "count": 1})");
  const reply slow = list(std::nullopt);
  CHECK(slow.status == 503);
  const auto err = parse_s3_error(slow.body);
  REQUIRE(err);
  CHECK(err->code == "SlowDown");
  CHECK(err->request_id == "ringfeed-fault-1");

  std::vector<std::string> keys;
  std::optional<std::string> token;
  int pages = 0;
  do {
    const reply r = list(token);
    REQUIRE(r.status == 200);  // s3rver accepted the signed request (access key, x-amz-content-sha256)
    const auto page = parse_list_objects_v2(r.body);
    for (const auto& obj : page.objects) keys.push_back(obj.key);
    token = page.next_continuation_token;
    ++pages;
  } while (token && pages < 10);
  CHECK(pages == 2);
  CHECK(keys == std::vector<std::string>{"cat/1.jpg", "cat/2.jpg", "dog/3.jpg"});

  const auto log = store.proxy_log();
  REQUIRE(log.size() == 3);
  CHECK(log[0]["fault"] == "slowdown");
  CHECK(log[1]["status"] == 200);
  store.clear_faults();
  CHECK(store.proxy_log().empty());
}

namespace {

/// One epoch through the C API: (labels, first pixel bytes of each sample).
struct c_epoch {
  std::vector<std::int64_t> labels;
  std::vector<std::vector<std::uint8_t>> images;
};

c_epoch read_epoch(rf_options* o) {
  rf_loader* l = rf_loader_open(o);
  INFO(rf_last_error());
  REQUIRE(l != nullptr);
  c_epoch e;
  for (;;) {
    rf_batch* b = nullptr;
    const int rc = rf_loader_next(l, &b);
    INFO(rf_last_error());
    REQUIRE(rc >= 0);
    if (b == nullptr) break;
    const std::int64_t* labels = rf_batch_labels(b);
    e.labels.insert(e.labels.end(), labels, labels + rf_batch_size(b));
    const auto* p = static_cast<const std::uint8_t*>(rf_batch_images(b));
    e.images.emplace_back(p, p + rf_batch_nbytes(b));
    rf_batch_release(b);
  }
  rf_loader_close(l);
  return e;
}

void set(rf_options* o, const char* key, const std::string& value) {
  INFO(key << " = " << value << ": " << rf_last_error());
  REQUIRE(rf_options_set(o, key, value.c_str()) == 0);
}

}  // namespace

TEST_CASE("the C API reads s3:// with its s3_* keys, as the same tree on disk", "[s3][capi]") {
  rt::temp_dir data;
  const auto root = ringfeed::test::image_data::photo_folder(data.path() / "train");
  rt::object_store::options so;
  so.buckets = {"data"};
  so.populate = {{"data", data.path().string()}};
  rt::object_store store(so);

  auto options = [](const std::string& source) {
    rf_options* o = rf_options_new();
    set(o, "source", source);
    set(o, "pipeline", "val");
    set(o, "size", "32");
    set(o, "output", "uint8");
    set(o, "batch_size", "5");
    set(o, "threads", "2");
    return o;
  };
  rf_options* local = options(root.string());
  const c_epoch want = read_epoch(local);
  rf_options_free(local);
  REQUIRE(want.labels.size() == 16);

  // Nothing from the environment: the endpoint and the keys come from the options alone.
  ::unsetenv("AWS_ENDPOINT_URL");
  ::unsetenv("AWS_ENDPOINT_URL_S3");
  rf_options* o = options("s3://data/train/");
  set(o, "s3_endpoint", store.s3_endpoint);
  set(o, "s3_region", "us-east-1");
  set(o, "s3_path_style", "true");
  set(o, "s3_access_key_id", store.access_key_id);
  set(o, "s3_secret_access_key", store.secret_access_key);
  const c_epoch got = read_epoch(o);
  CHECK(got.labels == want.labels);
  CHECK(got.images == want.images);

  // Half a key pair is refused at open, naming the keys, never the secret.
  rf_options* half = options("s3://data/train/");
  set(half, "s3_endpoint", store.s3_endpoint);
  set(half, "s3_secret_access_key", "not-to-be-shown");
  CHECK(rf_loader_open(half) == nullptr);
  const std::string why = rf_last_error();
  CHECK(why.find("access_key_id and secret_access_key together") != std::string::npos);
  CHECK(why.find("not-to-be-shown") == std::string::npos);
  CHECK(rf_options_set(half, "s3_path_style", "sometimes") != 0);
  rf_options_free(half);
  rf_options_free(o);
}
