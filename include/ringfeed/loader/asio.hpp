// ringfeed/asio.hpp — the loader for Boost.Asio code, kept out of loader.hpp
// so that only Asio users compile Asio:
//
//   #include <ringfeed/loader/asio.hpp>
//   while (auto batch = co_await ringfeed::async_next(loader, asio::use_awaitable)) { … }
//
// Needs Boost's headers (Boost::headers, which the ringfeed target carries).
#pragma once

#include <exception>
#include <memory>
#include <optional>
#include <utility>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>

#include <ringfeed/loader/loader.hpp>

namespace ringfeed {

namespace detail {

// A completion handler behind loader::start_next: it keeps the handler's
// executor busy (work guard) until the handler was dispatched there.
template <class Handler>
class asio_next_completion final : public next_completion {
 public:
  explicit asio_next_completion(Handler&& h)
      : m_handler(std::move(h)),
        m_work(boost::asio::make_work_guard(boost::asio::get_associated_executor(m_handler))) {}

  void complete(std::exception_ptr error, std::optional<batch> result) override {
    auto ex = m_work.get_executor();
    boost::asio::dispatch(ex, [h = std::move(m_handler), error, r = std::move(result)]() mutable {
      std::move(h)(error, std::move(r));
    });
    m_work.reset();
  }

 private:
  Handler m_handler;
  boost::asio::executor_work_guard<boost::asio::associated_executor_t<Handler>> m_work;
};

}  // namespace detail

/// loader.next() as an Asio asynchronous operation: completion signature
/// void(std::exception_ptr, std::optional<batch>) (std::nullopt at the end of
/// the epoch; the exception next() would throw, with on_error = fail). Works
/// with use_awaitable, use_future, bind_executor and plain callbacks; the
/// handler runs on its associated executor, whose work is kept alive until
/// then. The loader's one-consumer rule applies (see loader.hpp); its
/// destructor completes operations still pending with std::nullopt.
template <class CompletionToken>
auto async_next(loader& l, CompletionToken&& token) {
  return boost::asio::async_initiate<CompletionToken, void(std::exception_ptr, std::optional<batch>)>(
      [&l](auto handler) {
        using handler_t = decltype(handler);
        l.start_next(std::make_unique<detail::asio_next_completion<handler_t>>(std::move(handler)));
      },
      token);
}

}  // namespace ringfeed
