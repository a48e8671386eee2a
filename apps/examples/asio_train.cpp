// The training loop as a Boost.Asio coroutine: batches arrive through
// `co_await ringfeed::async_next(loader, boost::asio::use_awaitable)` (from
// <ringfeed/loader/asio.hpp>), completing on the io_context's thread like any other
// Asio operation (timers, sockets), so a loop that also serves a metrics
// endpoint or checkpoints on a timer needs no extra threads.
//   asio_train DATASET_DIR [epochs]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <ringfeed/loader/asio.hpp>

namespace asio = boost::asio;

namespace {

asio::awaitable<void> train(ringfeed::loader& loader, int epochs, std::size_t& images) {
  for (int e = 0; e < epochs; ++e) {
    std::size_t steps = 0;
    while (auto batch = co_await ringfeed::async_next(loader, asio::use_awaitable)) {
      // A real step would launch work on a GPU stream here; the batch's
      // memory goes back to the loader when `batch` goes out of scope.
      images += batch->size();
      ++steps;
    }
    std::printf("epoch %d: %zu steps\n", e, steps);
  }
}

// Runs beside the training loop on the same thread: progress every second.
asio::awaitable<void> report(ringfeed::loader& loader, const bool& done) {
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (!done) {
    timer.expires_after(std::chrono::seconds(1));
    co_await timer.async_wait(asio::use_awaitable);
    const auto st = loader.stats();
    std::printf("  ... %llu images delivered, limited by %s\n", static_cast<unsigned long long>(st.images),
                st.bottleneck().c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s DATASET_DIR [epochs]\n", argv[0]);
    return 2;
  }
  try {
    ringfeed::loader_options opt;
    opt.source = argv[1];
    opt.pipeline = ringfeed::pipeline::train(224);
    opt.batch_size = 64;
    opt.sampler.seed = 42;
    ringfeed::loader loader(opt);  // device batches when a GPU is usable
    const int epochs = argc > 2 ? std::atoi(argv[2]) : 1;

    asio::io_context io;
    std::size_t images = 0;
    bool done = false;
    const auto t0 = std::chrono::steady_clock::now();
    asio::co_spawn(io, train(loader, epochs, images), [&](std::exception_ptr e) {
      done = true;
      if (e) std::rethrow_exception(e);
    });
    asio::co_spawn(io, report(loader, done), asio::detached);
    io.run();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%zu images in %.2f s: %.0f images/s (%s batches)\n", images, seconds,
                static_cast<double>(images) / seconds, loader.uses_device() ? "device" : "host");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "asio_train: %s\n", e.what());
    return 1;
  }
  return 0;
}
