// A plain C++20 coroutine training loop over ringfeed:
//   coroutine_train DATASET_DIR [epochs]
// Each step "trains" on the batch by reading every value (a stand-in for a
// model's forward pass); the loop prints throughput, the share of its time
// spent waiting for data, and what limits the loader.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include <ringfeed/loader/loader.hpp>
#include <ringfeed/sync_wait.hpp>

namespace {

// Reads the whole batch: the mean of its (normalized) pixels.
double fake_step(const ringfeed::batch& b) {
  const auto& v = b.images();
  const auto* p = static_cast<const float*>(v.data);
  double sum = 0;
  for (std::size_t i = 0; i < v.elements(); ++i) sum += p[i];
  return sum / static_cast<double>(v.elements());
}

ringfeed::task<std::size_t> train(ringfeed::loader& loader, int epochs) {
  std::size_t images = 0;
  for (int e = 0; e < epochs; ++e) {
    double mean = 0;
    std::size_t steps = 0;
    // next() yields this epoch's batches in order, then std::nullopt; the
    // following call starts the next epoch. The coroutine resumes on one of
    // the loader's threads.
    while (auto batch = co_await loader.next()) {
      mean += fake_step(*batch);
      images += batch->size();
      ++steps;
    }
    std::printf("epoch %d: %zu steps, mean pixel %.4f\n", e, steps, steps ? mean / static_cast<double>(steps) : 0.0);
  }
  co_return images;
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
    opt.device = -1;  // host batches: fake_step reads them on the CPU
    opt.sampler.seed = 42;
    ringfeed::loader loader(opt);
    const int epochs = argc > 2 ? std::atoi(argv[2]) : 1;

    const auto t0 = std::chrono::steady_clock::now();
    const std::size_t images = ringfeed::sync_wait(train(loader, epochs));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto st = loader.stats();
    std::printf("%zu images in %.2f s: %.0f images/s; waited for data %.1f%% of the time; limited by %s\n", images,
                seconds, static_cast<double>(images) / seconds, 100.0 * st.consumer_wait_s / seconds,
                st.bottleneck().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "coroutine_train: %s\n", e.what());
    return 1;
  }
  return 0;
}
