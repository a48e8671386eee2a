// ringfeed::next_handoff — see next_handoff.hpp.
#include <ringfeed/loader/next_handoff.hpp>

#include <utility>

namespace ringfeed {

struct next_handoff::completion final : next_completion {
  explicit completion(std::shared_ptr<next_handoff> h) : to(std::move(h)) {}
  void complete(std::exception_ptr error, std::optional<batch> result) override {
    std::lock_guard lock(to->m_mutex);
    to->m_error = std::move(error);
    to->m_result = std::move(result);
    to->m_done = true;
    to->m_done_cv.notify_all();
  }
  std::shared_ptr<next_handoff> to;
};

std::shared_ptr<next_handoff> next_handoff::start(loader& l) {
  std::shared_ptr<next_handoff> h(new next_handoff);
  l.start_next(std::make_unique<completion>(h));
  return h;
}

bool next_handoff::wait_for(std::chrono::milliseconds slice) {
  std::unique_lock lock(m_mutex);
  return m_done_cv.wait_for(lock, slice, [&] { return m_done; });
}

std::exception_ptr next_handoff::take(std::optional<batch>& result) {
  std::lock_guard lock(m_mutex);
  result = std::exchange(m_result, std::nullopt);
  return std::exchange(m_error, nullptr);
}

std::optional<batch> next_handoff::take() {
  std::optional<batch> result;
  if (const std::exception_ptr error = take(result)) std::rethrow_exception(error);
  return result;
}

}  // namespace ringfeed
