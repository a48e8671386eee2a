// The loader's device path: batches uploaded and converted on a CUDA stream
// equal the host path's CPU conversion bit for bit, for every output
// format; consumers order their work with wait(stream) and give buffers back
// with release(stream). Needs a CUDA device: without one the executable
// reports "skipped" with the CUDA runtime's reason.
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include <ringfeed/cuda/device.hpp>
#include <ringfeed/loader.hpp>
#include <ringfeed/sync_wait.hpp>

#include "image_test_data.hpp"
#include "cuda_device.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
namespace img = ringfeed::image;
using ringfeed::output_spec;

static ringfeed::test::skip_if_unavailable skip_without_device{ringfeed::test::why_no_cuda_device};

namespace {

#define CUDA_OK(call) REQUIRE((call) == cudaSuccess)

fs::path make_folder(const fs::path& root) {
  const fs::path src = ringfeed::test::image_data::dir() / "photos";
  for (int c = 0; c < 2; ++c) {
    const fs::path dir = root / ("class" + std::to_string(c));
    fs::create_directories(dir);
    for (const auto& e : fs::directory_iterator(src)) fs::copy_file(e.path(), dir / e.path().filename());
  }
  return root;
}

ringfeed::loader_options options(const fs::path& root, output_spec format, int device) {
  ringfeed::loader_options o;
  o.source = root.string();
  o.dataset.use_cache = false;
  o.pipeline = img::pipeline::train(64, img::pipeline_mode::fast);
  o.output = format;
  o.batch_size = 6;
  o.threads = 2;
  o.device = device;
  o.sampler.seed = 11;
  o.log = [](std::string_view) {};
  return o;
}

}  // namespace

TEST_CASE("device batches equal host batches bit for bit, every format", "[cuda][loader]") {
  ringfeed::test::temp_dir tmp;
  const auto root = make_folder(tmp.path());
  cudaStream_t stream = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (auto format : {output_spec::float32_nchw(), output_spec::float16_nchw(), output_spec::uint8_nhwc()}) {
    ringfeed::loader host(options(root, format, -1));
    ringfeed::loader device(options(root, format, 0));
    REQUIRE(device.uses_device());
    REQUIRE_FALSE(host.uses_device());
    std::size_t batches = 0;
    for (;;) {
      auto h = ringfeed::sync_wait(host.next());
      auto d = ringfeed::sync_wait(device.next());
      REQUIRE(h.has_value() == d.has_value());
      if (!h) break;
      REQUIRE(d->on_device());
      REQUIRE(d->images().shape == h->images().shape);
      REQUIRE(d->images().dtype == h->images().dtype);
      REQUIRE(d->ready_event() != nullptr);
      std::vector<std::byte> copy(d->images().bytes());
      d->wait(reinterpret_cast<ringfeed::cuda::stream_t>(stream));
      CUDA_OK(cudaMemcpyAsync(copy.data(), d->images().data, copy.size(), cudaMemcpyDeviceToHost, stream));
      CUDA_OK(cudaStreamSynchronize(stream));
      REQUIRE(std::memcmp(copy.data(), h->images().data, copy.size()) == 0);
      REQUIRE(std::vector<std::int64_t>(d->labels().begin(), d->labels().end()) ==
              std::vector<std::int64_t>(h->labels().begin(), h->labels().end()));
      ++batches;
    }
    REQUIRE(batches == device.batches_per_epoch());
  }
  CUDA_OK(cudaStreamDestroy(stream));
}

TEST_CASE("device buffers rotate under a consumer that holds and releases batches", "[cuda][loader]") {
  ringfeed::test::watchdog dog("device buffer rotation", std::chrono::seconds(120));
  ringfeed::test::temp_dir tmp;
  const auto root = make_folder(tmp.path());
  auto o = options(root, output_spec::float32_nchw(), 0);
  o.batch_size = 2;
  o.device_buffers = 3;
  ringfeed::loader device(o);
  cudaStream_t stream = nullptr;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // Over 5 epochs, keep the previous batch while taking the next (2 of 3
  // buffers lent), compare each with the host path.
  auto ho = options(root, output_spec::float32_nchw(), -1);
  ho.batch_size = 2;
  ringfeed::loader reference(ho);
  for (int e = 0; e < 5; ++e) {
    std::optional<ringfeed::batch> previous;
    for (;;) {
      auto d = ringfeed::sync_wait(device.next());
      auto h = ringfeed::sync_wait(reference.next());
      REQUIRE(d.has_value() == h.has_value());
      if (!d) break;
      d->wait(reinterpret_cast<ringfeed::cuda::stream_t>(stream));
      std::vector<std::byte> copy(d->images().bytes());
      CUDA_OK(cudaMemcpyAsync(copy.data(), d->images().data, copy.size(), cudaMemcpyDeviceToHost, stream));
      CUDA_OK(cudaStreamSynchronize(stream));
      REQUIRE(std::memcmp(copy.data(), h->images().data, copy.size()) == 0);
      if (previous) previous->release(reinterpret_cast<ringfeed::cuda::stream_t>(stream));
      previous = std::move(d);
    }
  }
  CUDA_OK(cudaStreamDestroy(stream));
}
