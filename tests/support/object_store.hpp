// The object-store harness (object_store.py) from C++ tests: starts
// `python3 $RINGFEED_OBJECT_STORE serve …` (s3rver, the HTTPS server, the
// fault proxy), reads where they listen, sets the proxy's faults over HTTP,
// and stops them (SIGTERM, then SIGKILL) when destroyed.
//
//   static ringfeed::test::skip_if_unavailable skip{ringfeed::test::object_store::unavailable};
//   ringfeed::test::object_store::options o;
//   o.buckets = {"data"};
//   o.proxy = "s3";
//   ringfeed::test::object_store store(o);
//   store.put_fault(R"({"kind": "slowdown", "count": 3})");
//
// ctest sets RINGFEED_OBJECT_STORE and RINGFEED_PYTHON
// (tests/CMakeLists.txt: RINGFEED_OBJECT_STORE_ENV).
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "child_process.hpp"
#include "loopback.hpp"
#include "test_support.hpp"

namespace ringfeed::test {

class object_store {
 public:
  struct options {
    std::vector<std::string> buckets;  ///< s3rver with these buckets (none: no s3rver)
    std::string https_root;            ///< serve this directory over HTTPS ("" : no HTTPS server)
    std::string proxy;                 ///< "s3" or "https": a fault proxy in front of it
    bool proxy_tls = false;
    std::vector<std::pair<std::string, std::string>> populate;  ///< (bucket, directory) uploaded at start
    int lifetime_s = 300;
  };

  /// "" when the harness can run; else why not (for skip_if_unavailable).
  static std::string unavailable() {
    const char* script = std::getenv("RINGFEED_OBJECT_STORE");
    if (script == nullptr || *script == '\0') return "RINGFEED_OBJECT_STORE is not set (ctest sets it)";
    if (::access(script, R_OK) != 0) return std::string("RINGFEED_OBJECT_STORE=") + script + " cannot be read";
    if (::access(python().c_str(), X_OK) != 0) return "no Python at " + python();
    return {};
  }

  explicit object_store(const options& o) {
    const std::string ready = (m_dir.path() / "ready.json").string();
    std::vector<std::string> argv{python(), std::getenv("RINGFEED_OBJECT_STORE"), "serve", "--ready-file", ready,
                                  "--work-dir", (m_dir.path() / "work").string(), "--ignore-stdin", "--lifetime",
                                  std::to_string(o.lifetime_s)};
    for (const auto& b : o.buckets) argv.insert(argv.end(), {"--s3", b});
    for (const auto& [b, d] : o.populate) argv.insert(argv.end(), {"--populate", b + "=" + d});
    if (!o.https_root.empty()) argv.insert(argv.end(), {"--https", o.https_root});
    if (!o.proxy.empty()) argv.insert(argv.end(), {"--proxy", o.proxy});
    if (o.proxy_tls) argv.push_back("--proxy-tls");
    m_log = (m_dir.path() / "object_store.log").string();
    m_child = std::make_unique<child_process>(argv, m_log);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!std::filesystem::exists(ready)) {
      if (m_child->exited()) {
        throw std::runtime_error("object_store.py exited (status " + std::to_string(m_child->status()) +
                                 ") before it was ready: " + log_text());
      }
      if (std::chrono::steady_clock::now() > deadline) {
        throw std::runtime_error("object_store.py not ready within 60 s: " + log_text());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling a file, not synchronizing threads
    }
    const auto info = nlohmann::json::parse(std::ifstream(ready));
    if (info.contains("s3")) {
      s3_endpoint = info["s3"]["endpoint"];
      access_key_id = info["s3"]["access_key_id"];
      secret_access_key = info["s3"]["secret_access_key"];
    }
    if (info.contains("https")) {
      https_url = info["https"]["url"];
      ca_file = info["https"]["ca_file"];
    }
    if (info.contains("proxy")) {
      proxy_url = info["proxy"]["url"];
      proxy_control = info["proxy"]["control"];
      if (info["proxy"].contains("ca_file")) ca_file = info["proxy"]["ca_file"];
      m_proxy_port = static_cast<std::uint16_t>(std::stoi(proxy_url.substr(proxy_url.rfind(':') + 1)));
    }
  }
  object_store(const object_store&) = delete;
  object_store& operator=(const object_store&) = delete;
  ~object_store() {
    if (m_child && m_child->signal(SIGTERM)) {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!m_child->exited() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }

  std::string s3_endpoint, access_key_id, secret_access_key;  ///< s3rver ("S3RVER" / "S3RVER")
  std::string https_url, ca_file;                             ///< the HTTPS server and the certificate to trust
  std::string proxy_url, proxy_control;                       ///< the fault proxy

  /// Adds a fault (object_store.py's JSON spec, e.g. {"kind":"reset","after_bytes":1000}).
  void put_fault(const std::string& json) { expect_ok(control("POST", "/__proxy/faults", json)); }
  /// Clears the faults and the request log.
  void clear_faults() { expect_ok(control("DELETE", "/__proxy/faults", "")); }
  /// The proxy's request log as JSON: [{"method","path","range","fault","status"}, …].
  [[nodiscard]] nlohmann::json proxy_log() {
    const auto [status, body] = control("GET", "/__proxy/log", "");
    if (status != 200) throw std::runtime_error("proxy log: HTTP " + std::to_string(status));
    return nlohmann::json::parse(body);
  }

 private:
  static std::string python() {
    const char* p = std::getenv("RINGFEED_PYTHON");
    return p != nullptr && *p != '\0' ? p : "/usr/bin/python3";
  }

  std::string log_text() const {
    std::ifstream in(m_log);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  static void expect_ok(const std::pair<int, std::string>& r) {
    if (r.first != 200) throw std::runtime_error("fault proxy control: HTTP " + std::to_string(r.first) + " " + r.second);
  }

  /// One request to the proxy's control port (plain HTTP: not with proxy_tls).
  std::pair<int, std::string> control(const std::string& method, const std::string& path, const std::string& body) {
    if (m_proxy_port == 0) throw std::logic_error("object_store: no proxy was started");
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const sockaddr_in a = loopback(m_proxy_port);
    if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
      if (fd >= 0) ::close(fd);
      throw std::runtime_error("cannot connect to the fault proxy at " + proxy_url);
    }
    const std::string req = method + " " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n" +
                            "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                            "\r\n\r\n" + body;
    (void)::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
    std::string reply;
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) reply.append(buf, static_cast<std::size_t>(n));
    ::close(fd);
    const std::size_t sp = reply.find(' ');
    const std::size_t end = reply.find("\r\n\r\n");
    if (sp == std::string::npos || end == std::string::npos) throw std::runtime_error("fault proxy: bad reply");
    return {std::atoi(reply.c_str() + sp + 1), reply.substr(end + 4)};
  }

  temp_dir m_dir;
  std::string m_log;
  std::unique_ptr<child_process> m_child;
  std::uint16_t m_proxy_port = 0;
};

}  // namespace ringfeed::test
