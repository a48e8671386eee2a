// A TCP relay on 127.0.0.1 that hands every byte on `one_way` after it
// arrived, in each direction: the round trip of a network link, which
// loopback lacks (a LAN's is 0.1-0.5 ms, a filer's reply adds to it).
// Bandwidth is not limited. Each direction of a connection is a reader
// thread, which stamps what it receives, and a writer thread, which sends
// it when its time comes; a closed end is passed on as a shutdown.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

#include <ringfeed/detail/unique_fd.hpp>

namespace ringfeed::test {

class delay_link {
 public:
  /// Listens on an ephemeral port of 127.0.0.1 and relays each connection
  /// to 127.0.0.1:`target`. Throws std::system_error if it cannot listen.
  delay_link(std::uint16_t target, std::chrono::microseconds one_way);
  delay_link(const delay_link&) = delete;
  delay_link& operator=(const delay_link&) = delete;
  /// Cuts every relayed connection and joins the threads.
  ~delay_link();

  /// Where to connect instead of the target.
  [[nodiscard]] std::uint16_t port() const noexcept { return m_port; }

 private:
  struct chunk {
    std::chrono::steady_clock::time_point due;
    std::vector<char> bytes;
  };
  struct direction {
    int from = -1, to = -1;
    std::deque<chunk> queue;
    bool closed = false;
    std::condition_variable wake;
  };

  void accept_loop();
  void read_side(direction& d);
  void write_side(direction& d);

  std::uint16_t m_target;
  std::chrono::microseconds m_delay;
  detail::unique_fd m_listen;
  std::uint16_t m_port = 0;
  std::mutex m_mutex;
  bool m_stopping = false;
  std::vector<detail::unique_fd> m_fds;  // both ends of every relayed connection
  std::list<direction> m_directions;     // stable addresses for the threads
  std::vector<std::thread> m_threads;
  std::thread m_acceptor;
};

}  // namespace ringfeed::test
