// A real training loop: a small CNN learns on ringfeed batches with libtorch.
//   torch_train DATASET_DIR [--steps N] [--size S] [--batch B] [--threads T]
// Batches are co_awaited from the loader; host batches are wrapped as
// tensors without a copy (torch::from_blob) and used before the batch is
// released. Prints the loss every 25 steps and, at the end, the share of
// the time the loop waited for data.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include <torch/torch.h>
#if __has_include(<c10/cuda/CUDAStream.h>) && __has_include(<cuda_runtime_api.h>)
#include <c10/cuda/CUDAStream.h>
#define RINGFEED_EXAMPLE_TORCH_CUDA 1
#endif

#include <ringfeed/loader/loader.hpp>
#include <ringfeed/sync_wait.hpp>

namespace {

struct netImpl : torch::nn::Module {
  explicit netImpl(int classes)
      : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 16, 3).padding(1)))),
        conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(16, 32, 3).padding(1)))),
        conv3(register_module("conv3", torch::nn::Conv2d(torch::nn::Conv2dOptions(32, 64, 3).padding(1)))),
        fc(register_module("fc", torch::nn::Linear(64, classes))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::max_pool2d(torch::relu(conv1(x)), 2);
    x = torch::max_pool2d(torch::relu(conv2(x)), 2);
    x = torch::relu(conv3(x));
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return fc(x);
  }
  torch::nn::Conv2d conv1, conv2, conv3;
  torch::nn::Linear fc;
};
TORCH_MODULE(net);  // torch names the implementation <name>Impl

struct settings {
  std::string source;
  int steps = 300;
  int size = 64;
  int batch = 32;
  int threads = 0;
};

// The batch as tensors. Host batches: no copy (the batch must outlive them).
// Device batches: torch's current stream waits for the upload first.
std::pair<torch::Tensor, torch::Tensor> as_tensors(ringfeed::batch& b) {
  const auto& v = b.images();
  const auto n = static_cast<std::int64_t>(b.size());
  auto labels = torch::from_blob(const_cast<std::int64_t*>(b.labels().data()), {n}, torch::kInt64);
  if (!b.on_device()) {
    auto images = torch::from_blob(v.data, {n, v.shape[1], v.shape[2], v.shape[3]}, torch::kFloat32);
    return {images, labels};
  }
#ifdef RINGFEED_EXAMPLE_TORCH_CUDA
  const auto stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(v.device));
  b.wait(reinterpret_cast<ringfeed::cuda::stream_t>(stream.stream()));  // no host synchronization
  auto images = torch::from_blob(v.data, {n, v.shape[1], v.shape[2], v.shape[3]},
                                 torch::TensorOptions().dtype(torch::kFloat32).device(torch::kCUDA, v.device));
  return {images, labels.to(images.device())};
#else
  throw std::runtime_error("device batches, but this libtorch was built without CUDA: run with device = -1");
#endif
}

ringfeed::task<> train(ringfeed::loader& loader, net& model, torch::optim::SGD& opt, int steps,
                       torch::Device device) {
  int step = 0;
  double running = 0;
  while (step < steps) {
    auto batch = co_await loader.next();
    if (!batch) continue;  // end of an epoch: the next call starts the next one
    auto [x, y] = as_tensors(*batch);
    x = x.to(device);
    y = y.to(device);
    opt.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model->forward(x), y);
    loss.backward();
    opt.step();
    running += loss.item<double>();
    ++step;
    if (step % 25 == 0) {
      std::printf("step %4d  loss %.4f\n", step, running / 25);
      std::fflush(stdout);
      running = 0;
    }
    // Before the batch is released, device work reading it must be ordered
    // after: release(stream) records that; here loss.item() synchronized
    // with the step already, which release_synchronized() says.
    batch->release_synchronized();
  }
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&] { return i + 1 < argc ? std::atoi(argv[++i]) : 0; };
    if (a == "--steps") s.steps = value();
    else if (a == "--size") s.size = value();
    else if (a == "--batch") s.batch = value();
    else if (a == "--threads") s.threads = value();
    else if (s.source.empty()) s.source = a;
  }
  if (s.source.empty() || s.steps <= 0 || s.size <= 0 || s.batch <= 0) {
    std::fprintf(stderr, "usage: %s DATASET_DIR [--steps N] [--size S] [--batch B] [--threads T]\n", argv[0]);
    return 2;
  }
  try {
    torch::manual_seed(0);
    const bool gpu = torch::cuda::is_available();
    const torch::Device device = gpu ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);

    ringfeed::loader_options opt;
    opt.source = s.source;
    opt.pipeline = ringfeed::pipeline::train(s.size);
    opt.batch_size = static_cast<std::size_t>(s.batch);
    opt.threads = static_cast<std::size_t>(s.threads);
    opt.device = gpu ? 0 : -1;
    opt.sampler.seed = 1;
    ringfeed::loader loader(opt);

    net model(static_cast<int>(loader.dataset().num_classes()));
    model->to(device);
    torch::optim::SGD sgd(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
    std::printf("training on %zu images, %zu classes, %dx%d crops, batch %d, %s, %s batches\n",
                loader.dataset().size(), loader.dataset().num_classes(), s.size, s.size, s.batch,
                gpu ? "GPU" : "CPU", loader.uses_device() ? "device" : "host");

    const auto t0 = std::chrono::steady_clock::now();
    ringfeed::sync_wait(train(loader, model, sgd, s.steps, device));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto st = loader.stats();
    std::printf("%d steps in %.1f s (%.0f images/s); waited for data %.1f%% of the time\n", s.steps, seconds,
                static_cast<double>(s.steps) * s.batch / seconds, 100.0 * st.consumer_wait_s / seconds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "torch_train: %s\n", e.what());
    return 1;
  }
  return 0;
}
