// A tiny HTTP/1.1 server on 127.0.0.1 for tests of blocking HTTP clients
// (credential look-ups): one thread, one request per connection
// (Connection: close), answers from a handler, records every request.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "loopback.hpp"

namespace ringfeed::test {

class tiny_http_server {
 public:
  struct request {
    std::string method, target, body;
    std::map<std::string, std::string> headers;  ///< names lower-cased
  };
  struct response {
    int status = 200;
    std::string body;
  };
  using handler = std::function<response(const request&)>;

  explicit tiny_http_server(handler h) : m_handler(std::move(h)) {
    m_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a = loopback(0);
    socklen_t len = sizeof a;
    if (m_fd < 0 || ::bind(m_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(m_fd, 16) != 0 ||
        ::getsockname(m_fd, reinterpret_cast<sockaddr*>(&a), &len) != 0 || ::pipe(m_stop) != 0) {
      throw std::runtime_error("tiny_http_server: cannot listen on 127.0.0.1");
    }
    m_port = ntohs(a.sin_port);
    m_thread = std::thread([this] { run(); });
  }
  tiny_http_server(const tiny_http_server&) = delete;
  tiny_http_server& operator=(const tiny_http_server&) = delete;
  ~tiny_http_server() {
    char c = 0;
    (void)::write(m_stop[1], &c, 1);
    m_thread.join();
    ::close(m_fd);
    ::close(m_stop[0]);
    ::close(m_stop[1]);
  }

  [[nodiscard]] std::uint16_t port() const noexcept { return m_port; }
  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(m_port); }
  [[nodiscard]] std::vector<request> requests() const {
    std::lock_guard lock(m_mutex);
    return m_requests;
  }

 private:
  void run() {
    for (;;) {
      pollfd fds[2] = {{m_fd, POLLIN, 0}, {m_stop[0], POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) continue;
      if (fds[1].revents != 0) return;
      const int c = ::accept4(m_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      serve(c);
      ::close(c);
    }
  }

  void serve(int c) {
    std::string data;
    char buf[4096];
    std::size_t end = std::string::npos;
    while ((end = data.find("\r\n\r\n")) == std::string::npos) {
      const ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) return;
      data.append(buf, static_cast<std::size_t>(n));
    }
    request r;
    std::size_t line_end = data.find("\r\n");
    const std::string first = data.substr(0, line_end);
    const std::size_t sp1 = first.find(' '), sp2 = first.rfind(' ');
    r.method = first.substr(0, sp1);
    r.target = first.substr(sp1 + 1, sp2 - sp1 - 1);
    std::size_t pos = line_end + 2;
    while (pos < end) {
      const std::size_t e = data.find("\r\n", pos);
      const std::string line = data.substr(pos, e - pos);
      const std::size_t colon = line.find(':');
      std::string name = line.substr(0, colon);
      for (auto& ch : name) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      std::string value = colon == std::string::npos ? std::string{} : line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.erase(0, 1);
      r.headers[name] = value;
      pos = e + 2;
    }
    r.body = data.substr(end + 4);
    const std::size_t length = r.headers.count("content-length") != 0 ? std::stoul(r.headers["content-length"]) : 0;
    while (r.body.size() < length) {
      const ssize_t n = ::recv(c, buf, sizeof buf, 0);
      if (n <= 0) break;
      r.body.append(buf, static_cast<std::size_t>(n));
    }
    const response resp = m_handler(r);
    {
      std::lock_guard lock(m_mutex);
      m_requests.push_back(r);
    }
    const std::string out = "HTTP/1.1 " + std::to_string(resp.status) + " X\r\nContent-Length: " +
                            std::to_string(resp.body.size()) + "\r\nConnection: close\r\n\r\n" + resp.body;
    std::size_t sent = 0;
    while (sent < out.size()) {
      const ssize_t n = ::send(c, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) return;
      sent += static_cast<std::size_t>(n);
    }
  }

  handler m_handler;
  int m_fd = -1;
  int m_stop[2] = {-1, -1};
  std::uint16_t m_port = 0;
  mutable std::mutex m_mutex;
  std::vector<request> m_requests;
  std::thread m_thread;
};

}  // namespace ringfeed::test
