// sign_v4 against AWS's published Signature Version 4 vectors:
//  - the aws-sig-v4-test-suite (as kept in awslabs/aws-c-auth,
//    tests/aws-signing-test-suite/v4/<case>/header-{canonical-request,
//    string-to-sign,signature}.txt): service "service", us-east-1,
//    2015-08-30T12:36:00Z, AKIDEXAMPLE; no x-amz-content-sha256 header
//    except where the case signs the body;
//  - the S3 API reference's header-based examples ("Signature Calculations
//    for the Authorization Header: Transferring Payload in a Single Chunk"):
//    GET Object with a Range, PUT Object, GET Bucket Lifecycle, GET Bucket
//    (List Objects); AKIAIOSFODNN7EXAMPLE, 2013-05-24T00:00:00Z.
//  - botocore 1.29 (Debian's python3-botocore): S3SigV4Auth signed the same
//    requests at 2026-11-25T12:00:00Z in eu-west-1 (payload hash of the
//    empty body, a session token); these are its signatures (the signature
//    covers the canonical request, so equal signatures mean equal
//    canonical requests).
// The vectors are one table (`vectors` below), checked by one body; each
// row is a test case of its own, by its name. Each checks the canonical
// request, the string to sign and the signature separately (where the
// source gives them), so a failure says which step went wrong.
#include <catch2/catch.hpp>

#include <ringfeed/io/sigv4.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "table_tests.hpp"

using namespace ringfeed::io;
using namespace std::chrono;

namespace {

system_clock::time_point utc(int y, unsigned m, unsigned d, int hh, int mm, int ss) {
  return sys_days{year{y} / month{m} / day{d}} + hours{hh} + minutes{mm} + seconds{ss};
}

const aws_credentials suite_credentials{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "", std::nullopt};
const aws_credentials s3_doc_credentials{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "",
                                         std::nullopt};
const std::string empty_hash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// A suite GET with no body and no x-amz-content-sha256.
sigv4_request suite_get(std::string path, std::vector<std::pair<std::string, std::string>> query = {}) {
  sigv4_request r;
  r.method = "GET";
  r.host = "example.amazonaws.com";
  r.path = std::move(path);
  r.query = std::move(query);
  r.payload_hash = empty_hash;
  r.sign_content_sha256 = false;
  return r;
}

sigv4_result sign_suite(const sigv4_request& r, const aws_credentials& c = suite_credentials) {
  return sign_v4(r, c, "us-east-1", "service", utc(2015, 8, 30, 12, 36, 0));
}

std::string header(const sigv4_result& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "<absent>";
}

using pairs = std::vector<std::pair<std::string, std::string>>;

/// Who signs, where and when.
struct signing {
  aws_credentials credentials;
  std::string region, service;
  system_clock::time_point at;
};

const signing suite{suite_credentials, "us-east-1", "service", utc(2015, 8, 30, 12, 36, 0)};
const signing s3_doc{s3_doc_credentials, "us-east-1", "s3", utc(2013, 5, 24, 0, 0, 0)};
const signing botocore{{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "SESSIONTOKEN/+=", std::nullopt},
                       "eu-west-1",
                       "s3",
                       utc(2026, 11, 25, 12, 0, 0)};
const std::string suite_token = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267";
const signing suite_with_token{{suite_credentials.access_key_id, suite_credentials.secret_access_key, suite_token,
                                std::nullopt},
                               "us-east-1",
                               "service",
                               utc(2015, 8, 30, 12, 36, 0)};

/// What precedes the canonical request's hash in a string to sign.
const std::string suite_scope = "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n";
const std::string s3_doc_scope = "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n";
const std::string unreserved = "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// A published vector: the request, who signs it, and what the source says
/// comes out (what it does not say is not checked).
struct signing_vector {
  const char* name = nullptr;
  const char* tags = nullptr;
  int line = 0;
  sigv4_request request = {};
  signing sign = {};
  std::optional<std::string> body = {};       ///< hashed into request.payload_hash
  std::optional<std::string> body_hash = {};  ///< what that hash must be
  std::optional<std::string> canonical_request = {}, string_to_sign = {}, signature = {};
  pairs headers = {};  ///< result headers ("<absent>": not sent)
  std::optional<std::string> authorization_has = {};
  std::optional<std::string> encoded_path = {}, encoded_query = {};
};

const signing_vector vectors[] = {
    {.name = "sigv4 suite: get-vanilla",
     .tags = "[sigv4]",
     .line = __LINE__,
     .request = suite_get("/"),
     .sign = suite,
     .canonical_request =
         "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" + empty_hash,
     .string_to_sign = suite_scope + "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63",
     .signature = "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
     .headers = {{"authorization",
                  "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request,"
                  "SignedHeaders=host;x-amz-date,"
                  "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
                 {"x-amz-date", "20150830T123600Z"},
                 {"x-amz-security-token", "<absent>"},  // only when a token exists
                 {"x-amz-content-sha256", "<absent>"}},
     .encoded_path = "/",
     .encoded_query = ""},
    {.name = "sigv4 suite: get-vanilla-query-order-key-case sorts the query",
     .tags = "[sigv4]",
     .line = __LINE__,
     .request = suite_get("/", {{"Param2", "value2"}, {"Param1", "value1"}}),
     .sign = suite,
     .canonical_request = "GET\n/\nParam1=value1&Param2=value2\nhost:example.amazonaws.com\n"
                          "x-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" + empty_hash,
     .string_to_sign = suite_scope + "816cd5b414d056048ba4f7c5386d6e0533120fb1fcfa93762cf0fc39e2cf19e0",
     .signature = "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
     .encoded_query = "Param1=value1&Param2=value2"},
    {.name = "sigv4 suite: get-vanilla-query-unreserved leaves unreserved bytes alone",
     .tags = "[sigv4]",
     .line = __LINE__,
     .request = suite_get("/", {{unreserved, unreserved}}),
     .sign = suite,
     .canonical_request = "GET\n/\n" + unreserved + "=" + unreserved +
                          "\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" +
                          empty_hash,
     .string_to_sign = suite_scope + "c30d4703d9f799439be92736156d47ccfb2d879ddf56f5befa6d1d6aab979177",
     .signature = "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197"},
    {.name = "sigv4 suite: get-unreserved in the path",
     .tags = "[sigv4]",
     .line = __LINE__,
     .request = suite_get("/" + unreserved),
     .sign = suite,
     .string_to_sign = suite_scope + "6a968768eefaa713e2a6b16b589a8ea192661f098f37349f4e2c0082757446f9",
     .signature = "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"},
    {.name = "sigv4 suite: get-utf8 percent-encodes UTF-8 bytes of the path",
     .tags = "[sigv4]",
     .line = __LINE__,
     .request = suite_get("/\xE1\x88\xB4"),
     .sign = suite,
     .canonical_request =
         "GET\n/%E1%88%B4\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" +
         empty_hash,
     .string_to_sign = suite_scope + "2a0a97d02205e45ce2e994789806b19270cfbbb0921b278ccf58f5249ac42102",
     .signature = "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85",
     .encoded_path = "/%E1%88%B4"},
    {.name = "sigv4 suite: get-vanilla-utf8-query",
     .tags = "[sigv4]",
     .line = __LINE__,
     .request = suite_get("/", {{"\xE1\x88\xB4", "bar"}}),
     .sign = suite,
     .canonical_request =
         "GET\n/\n%E1%88%B4=bar\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" +
         empty_hash,
     .signature = "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"},
    {.name = "sigv4 suite: get-space encodes a space as %20",
     .tags = "[sigv4]",
     .line = __LINE__,
     .request = suite_get("/example space/"),
     .sign = suite,
     .canonical_request =
         "GET\n/example%20space/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\n" +
         empty_hash,
     .string_to_sign = suite_scope + "63ee75631ed7234ae61b5f736dfc7754cdccfedbff4b5128a915706ee9390d86",
     .signature = "652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741",
     .encoded_path = "/example%20space/"},
    {.name = "sigv4 suite: get-header-value-trim",
     .tags = "[sigv4]",
     .line = __LINE__,
     .request = [] {
       auto r = suite_get("/");
       r.headers = {{"My-Header1", " value1"}, {"My-Header2", " \"a   b   c\""}};
       return r;
     }(),
     .sign = suite,
     .canonical_request = "GET\n/\n\nhost:example.amazonaws.com\nmy-header1:value1\nmy-header2:\"a b c\"\n"
                          "x-amz-date:20150830T123600Z\n\nhost;my-header1;my-header2;x-amz-date\n" + empty_hash,
     .signature = "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"},
    {.name = "sigv4 suite: get-vanilla-with-session-token signs and sends the token",
     .tags = "[sigv4]",
     .line = __LINE__,
     .request = suite_get("/"),
     .sign = suite_with_token,
     .canonical_request = "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n"
                          "x-amz-security-token:" + suite_token + "\n\n"
                          "host;x-amz-date;x-amz-security-token\n" + empty_hash,
     .string_to_sign = suite_scope + "067b36aa60031588cea4a4cde1f21215227a047690c72247f1d70b32fbbfad2b",
     .signature = "07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8",
     .headers = {{"x-amz-security-token", suite_token}}},
    {.name = "sigv4 suite: post-x-www-form-urlencoded signs the body's hash",
     .tags = "[sigv4]",
     .line = __LINE__,
     .request = {.method = "POST",
                 .host = "example.amazonaws.com",
                 .path = "/",
                 .query = {},
                 .headers = {{"Content-Type", "application/x-www-form-urlencoded"}, {"Content-Length", "13"}}},
     .sign = suite,
     .body = "Param1=value1",
     .body_hash = "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e",
     .canonical_request = "POST\n/\n\ncontent-length:13\ncontent-type:application/x-www-form-urlencoded\n"
                          "host:example.amazonaws.com\n"
                          "x-amz-content-sha256:9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e\n"
                          "x-amz-date:20150830T123600Z\n\n"
                          "content-length;content-type;host;x-amz-content-sha256;x-amz-date\n"
                          "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e",
     .string_to_sign = suite_scope + "b1edd1d03544c25390e32085d55b57acc9a3961bb59415ff86c45c3d89d16cfb",
     .signature = "d3875051da38690788ef43de4db0d8f280229d82040bfac253562e56c3f20e0b"},
    {.name = "sigv4 S3 reference: GET Object with a Range",
     .tags = "[sigv4][s3]",
     .line = __LINE__,
     .request = {.method = "GET",
                 .host = "examplebucket.s3.amazonaws.com",
                 .path = "/test.txt",
                 .query = {},
                 .headers = {{"Range", "bytes=0-9"}},
                 .payload_hash = empty_hash},
     .sign = s3_doc,
     .canonical_request = "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
                          "x-amz-content-sha256:" + empty_hash + "\nx-amz-date:20130524T000000Z\n\n"
                          "host;range;x-amz-content-sha256;x-amz-date\n" + empty_hash,
     .string_to_sign = s3_doc_scope + "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972",
     .signature = "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
     .headers = {{"authorization",
                  "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
                  "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
                  "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"},
                 {"x-amz-content-sha256", empty_hash}}},
    {.name = "sigv4 S3 reference: PUT Object encodes '$' in the key",
     .tags = "[sigv4][s3]",
     .line = __LINE__,
     .request = {.method = "PUT",
                 .host = "examplebucket.s3.amazonaws.com",
                 .path = "/test$file.text",
                 .query = {},
                 .headers = {{"Date", "Fri, 24 May 2013 00:00:00 GMT"},
                             {"x-amz-storage-class", "REDUCED_REDUNDANCY"}}},
     .sign = s3_doc,
     .body = "Welcome to Amazon S3.",
     .canonical_request =
         "PUT\n/test%24file.text\n\ndate:Fri, 24 May 2013 00:00:00 GMT\nhost:examplebucket.s3.amazonaws.com\n"
         "x-amz-content-sha256:44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072\n"
         "x-amz-date:20130524T000000Z\nx-amz-storage-class:REDUCED_REDUNDANCY\n\n"
         "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class\n"
         "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072",
     .string_to_sign = s3_doc_scope + "9e0e90d9c76de8fa5b200d8c849cd5b8dc7a3be3951ddb7f6a76b4158342019d",
     .signature = "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
     .encoded_path = "/test%24file.text"},
    {.name = "sigv4 S3 reference: GET Bucket Lifecycle (a query key without a value)",
     .tags = "[sigv4][s3]",
     .line = __LINE__,
     .request = {.method = "GET",
                 .host = "examplebucket.s3.amazonaws.com",
                 .path = "/",
                 .query = {{"lifecycle", ""}},
                 .headers = {},
                 .payload_hash = empty_hash},
     .sign = s3_doc,
     .canonical_request = "GET\n/\nlifecycle=\nhost:examplebucket.s3.amazonaws.com\nx-amz-content-sha256:" +
                          empty_hash + "\nx-amz-date:20130524T000000Z\n\nhost;x-amz-content-sha256;x-amz-date\n" +
                          empty_hash,
     .string_to_sign = s3_doc_scope + "9766c798316ff2757b517bc739a67f6213b4ab36dd5da2f94eaebf79c77395ca",
     .signature = "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543"},
    {.name = "sigv4 S3 reference: GET Bucket (List Objects), query given out of order",
     .tags = "[sigv4][s3]",
     .line = __LINE__,
     .request = {.method = "GET",
                 .host = "examplebucket.s3.amazonaws.com",
                 .path = "/",
                 .query = {{"prefix", "J"}, {"max-keys", "2"}},
                 .headers = {},
                 .payload_hash = empty_hash},
     .sign = s3_doc,
     .canonical_request = "GET\n/\nmax-keys=2&prefix=J\nhost:examplebucket.s3.amazonaws.com\nx-amz-content-sha256:" +
                          empty_hash + "\nx-amz-date:20130524T000000Z\n\nhost;x-amz-content-sha256;x-amz-date\n" +
                          empty_hash,
     .string_to_sign = s3_doc_scope + "df57d21db20da04d7fa30298dd4488ba3a2b47ca3a489c74750e0f1e7df1b9b7",
     .signature = "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
     .encoded_query = "max-keys=2&prefix=J"},
    {.name = "sigv4 agrees with botocore: a key with space, '+', '(' and UTF-8; Range; If-Match; token",
     .tags = "[sigv4][s3]",
     .line = __LINE__,
     .request = {.method = "GET",
                 .host = "data.s3.eu-west-1.amazonaws.com",
                 .path = "/train/n01/img 1+x(\xC3\xA9).JPEG",
                 .query = {},
                 .headers = {{"Range", "bytes=100-199"}, {"If-Match", "\"abc\""}},
                 .payload_hash = empty_hash},
     .sign = botocore,
     .signature = "d3a7c803fc56457ca6723c82a991d1b3b153ecbc78fce9464e9720317c2237e5",
     .authorization_has = "SignedHeaders=host;if-match;range;x-amz-content-sha256;x-amz-date;x-amz-security-token",
     .encoded_path = "/train/n01/img%201%2Bx%28%C3%A9%29.JPEG"},
    {.name = "sigv4 agrees with botocore: ListObjectsV2 with a continuation token, path-style on a port",
     .tags = "[sigv4][s3]",
     .line = __LINE__,
     .request = {.method = "GET",
                 .host = "127.0.0.1:4568",
                 .path = "/data",
                 .query = {{"list-type", "2"},
                           {"prefix", "train/a b"},
                           {"continuation-token", "1/+=="},
                           {"encoding-type", "url"}},
                 .headers = {},
                 .payload_hash = empty_hash},
     .sign = botocore,
     .signature = "757af8b8117c3d48e4e0f49fb2c904369eead08a36ea8a263ee3c1d6c6510419",
     .encoded_query = "continuation-token=1%2F%2B%3D%3D&encoding-type=url&list-type=2&prefix=train%2Fa%20b"},
};

/// The one test body: signs the row's request and checks what the row says.
void check_vector(const signing_vector& v) {
  sigv4_request req = v.request;
  if (v.body) {
    req.payload_hash = sha256_hex(*v.body);
    if (v.body_hash) CHECK(req.payload_hash == *v.body_hash);
  }
  const auto r = sign_v4(req, v.sign.credentials, v.sign.region, v.sign.service, v.sign.at);
  if (v.canonical_request) CHECK(r.canonical_request == *v.canonical_request);
  if (v.string_to_sign) CHECK(r.string_to_sign == *v.string_to_sign);
  if (v.signature) CHECK(r.signature == *v.signature);
  for (const auto& [name, value] : v.headers) {
    INFO("header " << name);
    CHECK(header(r, name) == value);
  }
  if (v.authorization_has) CHECK_THAT(header(r, "authorization"), Catch::Contains(*v.authorization_has));
  if (v.encoded_path) CHECK(r.encoded_path == *v.encoded_path);
  if (v.encoded_query) CHECK(r.encoded_query == *v.encoded_query);
}

// One test case per vector, registered here, in the table's order.
const ringfeed::test::table_tests<signing_vector> registered_vectors{vectors, check_vector, __FILE__};

}  // namespace

TEST_CASE("sigv4: S3 keys are encoded per segment, never normalized; query values encode '/'", "[sigv4][s3]") {
  sigv4_request req;
  req.method = "GET";
  req.host = "127.0.0.1:4568";
  req.path = "/bucket/train/a b/../x+y=z%.jpg";
  req.query = {{"list-type", "2"}, {"prefix", "train/a b"}, {"continuation-token", "1/+=="}};
  const auto r = sign_v4(req, s3_doc_credentials, "us-east-1", "s3", utc(2013, 5, 24, 0, 0, 0));
  CHECK(r.encoded_path == "/bucket/train/a%20b/../x%2By%3Dz%25.jpg");
  CHECK(r.encoded_query == "continuation-token=1%2F%2B%3D%3D&list-type=2&prefix=train%2Fa%20b");
  CHECK(header(r, "x-amz-content-sha256") == "UNSIGNED-PAYLOAD");
  CHECK(r.canonical_request.ends_with("\nUNSIGNED-PAYLOAD"));
  CHECK(r.canonical_request.find("host:127.0.0.1:4568\n") != std::string::npos);
}

TEST_CASE("sigv4: each attempt is signed for its own time", "[sigv4]") {
  const auto a = sign_suite(suite_get("/"));
  const auto b = sign_v4(suite_get("/"), suite_credentials, "us-east-1", "service", utc(2015, 8, 30, 12, 36, 1));
  CHECK(a.signature != b.signature);
  CHECK(header(b, "x-amz-date") == "20150830T123601Z");
}

TEST_CASE("sigv4: bad input is refused without the secret in the message", "[sigv4]") {
  auto creds = suite_credentials;
  creds.access_key_id.clear();
  try {
    (void)sign_suite(suite_get("/"), creds);
    FAIL("no error");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CHECK(what.find("example.amazonaws.com") != std::string::npos);
    CHECK(what.find(creds.secret_access_key) == std::string::npos);
  }
  CHECK_THROWS_WITH(sign_suite(suite_get("no-slash")), Catch::Contains("does not start with '/'"));
}

TEST_CASE("uri_encode", "[sigv4]") {
  CHECK(uri_encode("a/b c~", false) == "a/b%20c~");
  CHECK(uri_encode("a/b c~", true) == "a%2Fb%20c~");
  CHECK(uri_encode("\xff", true) == "%FF");
}
