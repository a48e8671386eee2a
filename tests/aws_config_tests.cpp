// AWS configuration: endpoint, region and addressing resolution, and the
// credential chain (explicit, environment, profile files, web identity via
// STS, container credentials, IMDSv2), its precedence, anonymous requests,
// refresh before expiry with an injected clock, and errors that name every
// place looked without a secret. The HTTP sources talk to a tiny server on
// 127.0.0.1 started by each test; nothing leaves the machine.
#include <catch2/catch.hpp>

#include <ringfeed/io/aws_config.hpp>

#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>
#include <vector>

#include "test_support.hpp"
#include "tiny_http.hpp"

using namespace ringfeed::io;
using namespace std::chrono;
using ringfeed::test::temp_dir;
using ringfeed::test::tiny_http_server;

namespace {

/// An environment with HOME in a temp dir (never the real ~/.aws) and IMDS off.
struct fixture {
  temp_dir home;
  aws_environment env;
  fixture() {
    env.vars["HOME"] = home.path().string();
    env.vars["AWS_EC2_METADATA_DISABLED"] = "true";
  }
  std::string write(const std::string& name, const std::string& text) const {
    const auto p = home.path() / name;
    std::ofstream(p) << text;
    return p.string();
  }
};

const std::string secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
const std::string token = "FwoGZXIvYXdzEXAMPLETOKEN";

std::string what_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "<no error>";
}

std::string container_json(const std::string& key, system_clock::time_point expiration) {
  return R"({"AccessKeyId":")" + key + R"(","SecretAccessKey":")" + secret + R"(","Token":")" + token +
         R"(","Expiration":")" + amz_date(expiration).insert(13, ":").insert(11, ":").insert(6, "-").insert(4, "-") +
         R"("})";
}

}  // namespace

// --- endpoint and region -----------------------------------------------------------

TEST_CASE("endpoint: AWS by default, virtual-host style, region us-east-1", "[aws][endpoint]") {
  fixture f;
  const auto e = resolve_endpoint({}, f.env);
  CHECK(e.aws);
  CHECK(e.scheme == "https");
  CHECK(e.region == "us-east-1");
  CHECK(e.host == "s3.us-east-1.amazonaws.com");
  CHECK(e.host_for("my-bucket") == "my-bucket.s3.us-east-1.amazonaws.com");
  CHECK(e.path_for("my-bucket", "train/a b.jpg") == "/train/a b.jpg");
  CHECK(e.object_url("my-bucket", "train/a b+c.jpg") ==
        "https://my-bucket.s3.us-east-1.amazonaws.com/train/a%20b%2Bc.jpg");
  // A bucket that cannot be a TLS host label goes path-style.
  CHECK(e.host_for("my.bucket") == "s3.us-east-1.amazonaws.com");
  CHECK(e.path_for("my.bucket", "k") == "/my.bucket/k");
  CHECK(e.path_for("my-bucket", "") == "/");
}

TEST_CASE("region: option, AWS_REGION, AWS_DEFAULT_REGION, profile, default", "[aws][endpoint]") {
  fixture f;
  f.env.vars["AWS_CONFIG_FILE"] = f.write("config", "[default]\nregion = ap-south-1\n[profile eu]\nregion = eu-west-3\n");
  CHECK(resolve_endpoint({}, f.env).region == "ap-south-1");
  s3_options named;
  named.profile = "eu";
  CHECK(resolve_endpoint(named, f.env).region == "eu-west-3");
  f.env.vars["AWS_DEFAULT_REGION"] = "us-west-1";
  CHECK(resolve_endpoint({}, f.env).region == "us-west-1");
  f.env.vars["AWS_REGION"] = "eu-central-1";
  const auto e = resolve_endpoint({}, f.env);
  CHECK(e.region == "eu-central-1");
  CHECK(e.host == "s3.eu-central-1.amazonaws.com");
  s3_options o;
  o.region = "sa-east-1";
  CHECK(resolve_endpoint(o, f.env).region == "sa-east-1");
}

TEST_CASE("endpoint: option, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, profile; custom means path-style", "[aws][endpoint]") {
  fixture f;
  f.env.vars["AWS_CONFIG_FILE"] =
      f.write("config", "[default]\nendpoint_url = http://general:1\ns3 =\n  endpoint_url = http://from-profile:9000\n");
  CHECK(resolve_endpoint({}, f.env).host == "from-profile");
  f.env.vars["AWS_ENDPOINT_URL"] = "http://general-env:2";
  CHECK(resolve_endpoint({}, f.env).host == "general-env");
  f.env.vars["AWS_ENDPOINT_URL_S3"] = "http://127.0.0.1:4568/";
  auto e = resolve_endpoint({}, f.env);
  CHECK_FALSE(e.aws);
  CHECK(e.scheme == "http");
  CHECK(e.host == "127.0.0.1");
  CHECK(e.port == 4568);
  CHECK(e.path_style);
  CHECK(e.host_for("data") == "127.0.0.1:4568");
  CHECK(e.path_for("data", "train/x.jpg") == "/data/train/x.jpg");
  CHECK(e.object_url("data", "a b") == "http://127.0.0.1:4568/data/a%20b");

  s3_options o;
  o.endpoint = "https://minio.lan/s3/";
  e = resolve_endpoint(o, f.env);
  CHECK(e.host == "minio.lan");
  CHECK(e.base_path == "/s3");
  CHECK(e.object_url("data", "k") == "https://minio.lan/s3/data/k");
  o.path_style = false;  // forced virtual-host on a custom endpoint
  CHECK(resolve_endpoint(o, f.env).object_url("data", "k") == "https://data.minio.lan/s3/k");
  s3_options forced;
  forced.path_style = true;
  f.env.vars.erase("AWS_ENDPOINT_URL_S3");
  f.env.vars.erase("AWS_ENDPOINT_URL");
  f.env.vars["AWS_CONFIG_FILE"] = f.home.path().string() + "/none";
  CHECK(resolve_endpoint(forced, f.env).object_url("data", "k") == "https://s3.us-east-1.amazonaws.com/data/k");
}

TEST_CASE("endpoint: a malformed endpoint names where it came from", "[aws][endpoint]") {
  fixture f;
  f.env.vars["AWS_ENDPOINT_URL_S3"] = "minio:9000";
  CHECK_THAT(what_of([&] { (void)resolve_endpoint({}, f.env); }),
             Catch::Contains("AWS_ENDPOINT_URL_S3") && Catch::Contains("minio:9000"));
  f.env.vars["AWS_ENDPOINT_URL_S3"] = "s3://bucket";
  CHECK_THAT(what_of([&] { (void)resolve_endpoint({}, f.env); }), Catch::Contains("http:// or https://"));
}

// --- credentials: static sources ------------------------------------------------------

TEST_CASE("credentials: anonymous by option or AWS_NO_SIGN_REQUEST, nothing looked up", "[aws][credentials]") {
  fixture f;
  f.env.vars["AWS_NO_SIGN_REQUEST"] = "TRUE";
  credential_provider p({}, f.env);
  CHECK(p.anonymous());
  CHECK(p.current().access_key_id.empty());
  CHECK(p.resolutions() == 0);
  CHECK(resolve_endpoint({}, f.env).anonymous);
  fixture g;
  s3_options o;
  o.anonymous = true;
  CHECK(credential_provider(o, g.env).anonymous());
  CHECK_FALSE(credential_provider({}, g.env).anonymous());
}

TEST_CASE("credentials: explicit beats environment beats profile", "[aws][credentials]") {
  fixture f;
  f.env.vars["AWS_SHARED_CREDENTIALS_FILE"] =
      f.write("credentials", "[default]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = " + secret + "\n");
  CHECK(credential_provider({}, f.env).current().access_key_id == "AKIDPROFILE");
  f.env.vars["AWS_ACCESS_KEY_ID"] = "AKIDENV";
  f.env.vars["AWS_SECRET_ACCESS_KEY"] = secret;
  f.env.vars["AWS_SESSION_TOKEN"] = token;
  credential_provider env_provider({}, f.env);
  const auto c = env_provider.current();
  CHECK(c.access_key_id == "AKIDENV");
  CHECK(c.session_token == token);
  CHECK(env_provider.source() == "environment");
  s3_options o;
  o.credentials = aws_credentials{"AKIDEXPLICIT", secret, "", std::nullopt};
  credential_provider explicit_provider(o, f.env);
  CHECK(explicit_provider.current().access_key_id == "AKIDEXPLICIT");
  CHECK(explicit_provider.source() == "explicit");
}

TEST_CASE("credentials: half an environment pair is an error naming the missing variable", "[aws][credentials]") {
  fixture f;
  f.env.vars["AWS_ACCESS_KEY_ID"] = "AKIDENV";
  const auto what = what_of([&] { (void)credential_provider({}, f.env).current(); });
  CHECK_THAT(what, Catch::Contains("AWS_SECRET_ACCESS_KEY is not"));
}

TEST_CASE("credentials: profiles from AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE", "[aws][credentials]") {
  fixture f;
  f.env.vars["AWS_SHARED_CREDENTIALS_FILE"] = f.write(
      "creds", "# comment\n[default]\naws_access_key_id=AKIDDEFAULT\naws_secret_access_key=" + secret +
                   "\n\n[work]\naws_access_key_id = AKIDWORK\naws_secret_access_key = " + secret +
                   "\naws_session_token = " + token + "\n");
  f.env.vars["AWS_CONFIG_FILE"] = f.write(
      "config", "[profile cfg]\naws_access_key_id = AKIDCONFIG\naws_secret_access_key = " + secret + "\n");
  credential_provider by_default({}, f.env);
  CHECK(by_default.current().access_key_id == "AKIDDEFAULT");
  CHECK_THAT(by_default.source(), Catch::Contains("profile default") && Catch::Contains("creds"));

  f.env.vars["AWS_PROFILE"] = "work";
  const auto work = credential_provider({}, f.env).current();
  CHECK(work.access_key_id == "AKIDWORK");
  CHECK(work.session_token == token);

  s3_options o;
  o.profile = "cfg";  // the option beats AWS_PROFILE; [profile cfg] in the config file
  CHECK(credential_provider(o, f.env).current().access_key_id == "AKIDCONFIG");

  o.profile = "missing";
  const auto what = what_of([&] { (void)credential_provider(o, f.env).current(); });
  CHECK_THAT(what, Catch::Contains("'missing'") && Catch::Contains("creds") && Catch::Contains("config"));
}

TEST_CASE("credentials: a broken profile file names the file and line, never a value", "[aws][credentials]") {
  fixture f;
  f.env.vars["AWS_SHARED_CREDENTIALS_FILE"] =
      f.write("creds", "[default]\naws_access_key_id = AKID\n" + secret + "\n");
  const auto what = what_of([&] { (void)credential_provider({}, f.env).current(); });
  CHECK_THAT(what, Catch::Contains("creds:3"));
  CHECK(what.find(secret) == std::string::npos);
}

TEST_CASE("credentials: nothing found names every place looked, without secrets", "[aws][credentials]") {
  fixture f;
  const auto what = what_of([&] { (void)credential_provider({}, f.env).current(); });
  CHECK_THAT(what, Catch::Contains("no AWS credentials found"));
  CHECK_THAT(what, Catch::Contains("AWS_ACCESS_KEY_ID"));
  CHECK_THAT(what, Catch::Contains(f.home.path().string() + "/.aws/credentials (no such file)"));
  CHECK_THAT(what, Catch::Contains(f.home.path().string() + "/.aws/config"));
  CHECK_THAT(what, Catch::Contains("AWS_WEB_IDENTITY_TOKEN_FILE"));
  CHECK_THAT(what, Catch::Contains("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"));
  CHECK_THAT(what, Catch::Contains("IMDS: AWS_EC2_METADATA_DISABLED"));
  CHECK_THAT(what, Catch::Contains("AWS_NO_SIGN_REQUEST"));
}

// --- credentials: HTTP sources --------------------------------------------------------

TEST_CASE("credentials: IMDS unreachable is a clear note within about a second", "[aws][credentials][imds]") {
  fixture f;
  f.env.vars.erase("AWS_EC2_METADATA_DISABLED");
  // A port nothing listens on: refused at once.
  std::uint16_t closed_port = 0;
  { tiny_http_server s([](const auto&) { return tiny_http_server::response{}; }); closed_port = s.port(); }
  f.env.vars["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = "http://127.0.0.1:" + std::to_string(closed_port);
  auto t = steady_clock::now();
  auto what = what_of([&] { (void)credential_provider({}, f.env).current(); });
  CHECK_THAT(what, Catch::Contains("IMDS: http://127.0.0.1:" + std::to_string(closed_port) + " is unreachable"));
  CHECK(steady_clock::now() - t < 2s);
  // A host that never answers the SYN (off EC2, 169.254.169.254 is often a
  // black hole): the 1 s connect timeout bounds the look-up. Simulated on
  // loopback by a listener whose accept queue is full, so nothing leaves
  // the machine.
  const int blackhole = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = ringfeed::test::loopback(0);
  socklen_t len = sizeof a;
  REQUIRE(::bind(blackhole, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  REQUIRE(::listen(blackhole, 0) == 0);
  REQUIRE(::getsockname(blackhole, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  std::vector<int> fillers;
  for (int i = 0; i < 4; ++i) {
    const int c = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    (void)::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a);
    fillers.push_back(c);
  }
  f.env.vars["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  t = steady_clock::now();
  what = what_of([&] { (void)credential_provider({}, f.env).current(); });
  const auto took = steady_clock::now() - t;
  for (int c : fillers) ::close(c);
  ::close(blackhole);
  CHECK_THAT(what, Catch::Contains("is unreachable") && Catch::Contains("imeout"));
  CHECK(took >= 900ms);
  CHECK(took < 2500ms);
}

TEST_CASE("credentials: IMDSv2 token, role, credentials", "[aws][credentials][imds]") {
  fixture f;
  const auto exp = system_clock::now() + 6h;
  tiny_http_server imds([&](const tiny_http_server::request& r) -> tiny_http_server::response {
    if (r.method == "PUT" && r.target == "/latest/api/token") return {200, "imds-token"};
    if (r.headers.count("x-aws-ec2-metadata-token") == 0) return {401, ""};
    if (r.target == "/latest/meta-data/iam/security-credentials/") return {200, "role-a\n"};
    if (r.target == "/latest/meta-data/iam/security-credentials/role-a") {
      return {200, container_json("AKIDIMDS", exp).insert(1, R"("Code":"Success",)")};
    }
    return {404, ""};
  });
  f.env.vars.erase("AWS_EC2_METADATA_DISABLED");
  f.env.vars["AWS_EC2_METADATA_SERVICE_ENDPOINT"] = imds.url();
  credential_provider p({}, f.env);
  const auto c = p.current();
  CHECK(c.access_key_id == "AKIDIMDS");
  CHECK(c.session_token == token);
  REQUIRE(c.expiration);
  CHECK(duration_cast<seconds>(*c.expiration - exp).count() == 0);
  CHECK(p.source() == "IMDS role role-a");
  const auto reqs = imds.requests();
  REQUIRE(reqs.size() == 3);
  CHECK(reqs[0].headers.at("x-aws-ec2-metadata-token-ttl-seconds") == "21600");
  CHECK(reqs[2].headers.at("x-aws-ec2-metadata-token") == "imds-token");
}

TEST_CASE("credentials: container endpoint with an authorization token file", "[aws][credentials][container]") {
  fixture f;
  tiny_http_server server([&](const tiny_http_server::request&) -> tiny_http_server::response {
    return {200, container_json("AKIDCONTAINER", system_clock::now() + 1h)};
  });
  f.env.vars["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = server.url() + "/v2/credentials/abc";
  f.env.vars["AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"] = f.write("auth", "Bearer pod-token\n");
  credential_provider p({}, f.env);
  CHECK(p.current().access_key_id == "AKIDCONTAINER");
  CHECK(p.source() == "container");
  const auto reqs = server.requests();
  REQUIRE(reqs.size() == 1);
  CHECK(reqs[0].target == "/v2/credentials/abc");
  CHECK(reqs[0].headers.at("authorization") == "Bearer pod-token");
}

TEST_CASE("credentials: refreshed before they expire, by the injected clock", "[aws][credentials][refresh]") {
  fixture f;
  const auto start = sys_days{2030y / 1 / 1} + 0h;
  std::atomic<system_clock::time_point> now{start};
  std::atomic<int> served{0};
  tiny_http_server server([&](const tiny_http_server::request&) -> tiny_http_server::response {
    const int n = ++served;
    return {200, container_json("AKIDGEN" + std::to_string(n), now.load() + 1h)};
  });
  f.env.vars["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = server.url() + "/creds";
  credential_provider p({}, f.env, [&] { return now.load(); });
  CHECK(p.current().access_key_id == "AKIDGEN1");
  now = start + 50min;  // 10 min left: still held
  CHECK(p.current().access_key_id == "AKIDGEN1");
  CHECK(p.resolutions() == 1);
  now = start + 56min;  // within the 5 min margin: fetched again
  CHECK(p.current().access_key_id == "AKIDGEN2");
  CHECK(p.resolutions() == 2);
  CHECK(served == 2);
}

TEST_CASE("credentials: a failed refresh keeps credentials that still work, then fails", "[aws][credentials][refresh]") {
  fixture f;
  const auto start = sys_days{2030y / 1 / 1} + 0h;
  std::atomic<system_clock::time_point> now{start};
  std::atomic<int> served{0};
  tiny_http_server server([&](const tiny_http_server::request&) -> tiny_http_server::response {
    if (++served == 1) return {200, container_json("AKIDONLY", start + 1h)};
    return {500, "down"};
  });
  f.env.vars["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = server.url() + "/creds";
  credential_provider p({}, f.env, [&] { return now.load(); });
  CHECK(p.current().access_key_id == "AKIDONLY");
  now = start + 58min;
  CHECK(p.current().access_key_id == "AKIDONLY");  // refresh failed, still valid for 2 min
  now = start + 61min;
  const auto what = what_of([&] { (void)p.current(); });
  CHECK_THAT(what, Catch::Contains("HTTP 500") && Catch::Contains(server.url() + "/creds"));
  CHECK(what.find(secret) == std::string::npos);
}

TEST_CASE("credentials: already expired credentials are an error naming their source", "[aws][credentials][refresh]") {
  fixture f;
  tiny_http_server server([&](const tiny_http_server::request&) -> tiny_http_server::response {
    return {200, container_json("AKIDOLD", sys_days{2020y / 1 / 1} + 0h)};
  });
  f.env.vars["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = server.url() + "/creds";
  const auto what = what_of([&] { (void)credential_provider({}, f.env).current(); });
  CHECK_THAT(what, Catch::Contains("container") && Catch::Contains("AKIDOLD") && Catch::Contains("expired"));
  CHECK(what.find(secret) == std::string::npos);
}

namespace {

std::string sts_xml(const std::string& key) {
  return "<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
         "<AssumeRoleWithWebIdentityResult><Credentials><SessionToken>" + token + "</SessionToken>"
         "<SecretAccessKey>" + secret + "</SecretAccessKey><Expiration>2031-01-01T00:00:00Z</Expiration>"
         "<AccessKeyId>" + key + "</AccessKeyId></Credentials></AssumeRoleWithWebIdentityResult>"
         "<ResponseMetadata><RequestId>rid-ok</RequestId></ResponseMetadata></AssumeRoleWithWebIdentityResponse>";
}

}  // namespace

TEST_CASE("credentials: web identity token file through STS", "[aws][credentials][sts]") {
  fixture f;
  tiny_http_server sts([&](const tiny_http_server::request&) -> tiny_http_server::response {
    return {200, sts_xml("ASIAWEBID")};
  });
  f.env.vars["AWS_WEB_IDENTITY_TOKEN_FILE"] = f.write("token", "eyJhbGciOi.jwt+/=\n");
  f.env.vars["AWS_ROLE_ARN"] = "arn:aws:iam::123456789012:role/reader";
  f.env.vars["AWS_ROLE_SESSION_NAME"] = "trainer";
  f.env.vars["AWS_ENDPOINT_URL_STS"] = sts.url();
  credential_provider p({}, f.env);
  const auto c = p.current();
  CHECK(c.access_key_id == "ASIAWEBID");
  CHECK(c.session_token == token);
  CHECK(c.expiration == sys_days{2031y / 1 / 1} + 0h);
  CHECK(p.source() == "web identity (STS)");
  const auto reqs = sts.requests();
  REQUIRE(reqs.size() == 1);
  CHECK_THAT(reqs[0].target, Catch::StartsWith("/?Action=AssumeRoleWithWebIdentity&Version=2011-06-15"));
  CHECK_THAT(reqs[0].target, Catch::Contains("RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Freader"));
  CHECK_THAT(reqs[0].target, Catch::Contains("RoleSessionName=trainer"));
  CHECK_THAT(reqs[0].target, Catch::Contains("WebIdentityToken=eyJhbGciOi.jwt%2B%2F%3D"));
}

TEST_CASE("credentials: STS refusing names the code and request id, never the token", "[aws][credentials][sts]") {
  fixture f;
  tiny_http_server sts([&](const tiny_http_server::request&) -> tiny_http_server::response {
    return {400, "<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>"
                 "<Message>Token expired</Message></Error><RequestId>rid-42</RequestId></ErrorResponse>"};
  });
  f.env.vars["AWS_WEB_IDENTITY_TOKEN_FILE"] = f.write("token", "SECRET-JWT-VALUE");
  f.env.vars["AWS_ROLE_ARN"] = "arn:aws:iam::1:role/r";
  f.env.vars["AWS_ENDPOINT_URL_STS"] = sts.url();
  const auto what = what_of([&] { (void)credential_provider({}, f.env).current(); });
  CHECK_THAT(what, Catch::Contains("InvalidIdentityToken") && Catch::Contains("rid-42") &&
                       Catch::Contains("arn:aws:iam::1:role/r") && Catch::Contains(sts.url()));
  CHECK(what.find("SECRET-JWT-VALUE") == std::string::npos);
}

TEST_CASE("credentials: a config profile with role_arn and web_identity_token_file", "[aws][credentials][sts]") {
  fixture f;
  tiny_http_server sts([&](const tiny_http_server::request&) -> tiny_http_server::response {
    return {200, sts_xml("ASIAPROFILE")};
  });
  const std::string token_file = f.write("token", "jwt");
  f.env.vars["AWS_CONFIG_FILE"] = f.write(
      "config", "[profile eks]\nrole_arn = arn:aws:iam::1:role/r\nweb_identity_token_file = " + token_file + "\n");
  f.env.vars["AWS_PROFILE"] = "eks";
  f.env.vars["AWS_ENDPOINT_URL_STS"] = sts.url();
  credential_provider p({}, f.env);
  CHECK(p.current().access_key_id == "ASIAPROFILE");
  CHECK(p.source() == "web identity (STS) for profile eks");
}

TEST_CASE("credentials: current() from many threads resolves once", "[aws][credentials][concurrency]") {
  fixture f;
  std::atomic<int> served{0};
  tiny_http_server server([&](const tiny_http_server::request&) -> tiny_http_server::response {
    ++served;
    return {200, container_json("AKIDSHARED", system_clock::now() + 1h)};
  });
  f.env.vars["AWS_CONTAINER_CREDENTIALS_FULL_URI"] = server.url() + "/creds";
  credential_provider p({}, f.env);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      for (int j = 0; j < 50; ++j) ok += p.current().access_key_id == "AKIDSHARED" ? 1 : 0;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(ok == 400);
  CHECK(served == 1);
}
