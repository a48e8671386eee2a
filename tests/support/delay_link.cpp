#include "delay_link.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

#include "loopback.hpp"

namespace ringfeed::test {

delay_link::delay_link(std::uint16_t target, std::chrono::microseconds one_way)
    : m_target(target), m_delay(one_way), m_listen(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
  if (!m_listen) throw std::system_error(errno, std::generic_category(), "delay_link: socket");
  sockaddr_in a = loopback(0);
  socklen_t len = sizeof a;
  if (::bind(m_listen.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(m_listen.get(), 8) != 0 ||
      ::getsockname(m_listen.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::system_error(errno, std::generic_category(), "delay_link: bind/listen");
  m_port = ntohs(a.sin_port);
  m_acceptor = std::thread([this] { accept_loop(); });
}

delay_link::~delay_link() {
  {
    std::lock_guard lock(m_mutex);
    m_stopping = true;
    for (auto& d : m_directions) d.wake.notify_all();
    for (const auto& fd : m_fds) ::shutdown(fd.get(), SHUT_RDWR);  // wakes the readers
  }
  ::shutdown(m_listen.get(), SHUT_RDWR);  // wakes accept()
  m_acceptor.join();
  for (auto& t : m_threads) t.join();
}  // then the descriptors close

void delay_link::accept_loop() {
  for (;;) {
    detail::unique_fd client(::accept4(m_listen.get(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!client) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // shut down
    }
    detail::unique_fd server(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    const sockaddr_in a = loopback(m_target);
    if (!server || ::connect(server.get(), reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) continue;
    const int one = 1;
    for (const int fd : {client.get(), server.get()}) ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const int c = client.get(), s = server.get();
    std::lock_guard lock(m_mutex);
    m_fds.push_back(std::move(client));
    m_fds.push_back(std::move(server));
    if (m_stopping) {
      for (const int fd : {c, s}) ::shutdown(fd, SHUT_RDWR);
      return;
    }
    for (auto [from, to] : {std::pair{c, s}, std::pair{s, c}}) {
      direction& d = m_directions.emplace_back();
      d.from = from;
      d.to = to;
      m_threads.emplace_back([this, &d] { read_side(d); });
      m_threads.emplace_back([this, &d] { write_side(d); });
    }
  }
}

void delay_link::read_side(direction& d) {
  std::vector<char> buffer(256 * 1024);
  for (;;) {
    const ssize_t n = ::recv(d.from, buffer.data(), buffer.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(m_mutex);
    if (n <= 0) {
      d.closed = true;
      d.wake.notify_all();
      return;
    }
    d.queue.push_back({now + m_delay, std::vector<char>(buffer.data(), buffer.data() + n)});
    d.wake.notify_all();
  }
}

void delay_link::write_side(direction& d) {
  for (;;) {
    chunk c;
    {
      std::unique_lock lock(m_mutex);
      d.wake.wait(lock, [&] { return m_stopping || d.closed || !d.queue.empty(); });
      if (m_stopping) return;
      if (d.queue.empty()) {  // the sender closed and everything it sent was delivered
        ::shutdown(d.to, SHUT_WR);
        return;
      }
      c = std::move(d.queue.front());
      d.queue.pop_front();
    }
    std::this_thread::sleep_until(c.due);  // the link's latency, not a synchronization
    for (std::size_t off = 0; off < c.bytes.size();) {
      const ssize_t n = ::send(d.to, c.bytes.data() + off, c.bytes.size() - off, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::shutdown(d.from, SHUT_RDWR);  // the receiver is gone: end the other side too
        return;
      }
      off += static_cast<std::size_t>(n);
    }
  }
}

}  // namespace ringfeed::test
