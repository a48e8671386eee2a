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
#include <ringfeed/loader/loader.hpp>
#include <ringfeed/ringfeed.h>
#include <ringfeed/sync_wait.hpp>

#include "cuda_device.hpp"
#include "cuda_fixtures.hpp"
#include "gpu_consumer.hpp"
#include "loader_fixtures.hpp"

namespace fs = std::filesystem;
namespace img = ringfeed::image;
using ringfeed::output_spec;
using ringfeed::test::copy_to_host;
using ringfeed::test::cuda_stream;
using ringfeed::test::photo_folder_fixture;

static ringfeed::test::skip_if_unavailable skip_without_device{ringfeed::test::why_no_cuda_device};

namespace {

#define CUDA_OK(call) REQUIRE((call) == cudaSuccess)

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

// Batches of 2 in 3 device buffers: a consumer holding two batches at once
// leaves the loader one to fill.
ringfeed::loader_options held_batches_options(const fs::path& root) {
  auto o = options(root, output_spec::float32_nchw(), 0);
  o.batch_size = 2;
  o.device_buffers = 3;
  return o;
}

}  // namespace

TEST_CASE("device batches equal host batches bit for bit, every format", "[cuda][loader]") {
  photo_folder_fixture photos;
  cuda_stream stream;
  for (auto format : {output_spec::float32_nchw(), output_spec::float16_nchw(), output_spec::uint8_nhwc()}) {
    ringfeed::loader host(options(photos.root, format, -1));
    ringfeed::loader device(options(photos.root, format, 0));
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
      d->wait(stream.rf());
      const auto copy = copy_to_host(d->images().data, d->images().bytes(), stream.get());
      REQUIRE(std::memcmp(copy.data(), h->images().data, copy.size()) == 0);
      REQUIRE(std::vector<std::int64_t>(d->labels().begin(), d->labels().end()) ==
              std::vector<std::int64_t>(h->labels().begin(), h->labels().end()));
      ++batches;
    }
    REQUIRE(batches == device.batches_per_epoch());
  }
}

TEST_CASE("device buffers rotate under a consumer that holds and releases batches", "[cuda][loader]") {
  photo_folder_fixture photos("device buffer rotation", std::chrono::seconds(120));
  const auto o = held_batches_options(photos.root);
  ringfeed::loader device(o);
  cuda_stream stream;
  // Over 5 epochs, keep the previous batch while taking the next (2 of 3
  // buffers lent), compare each with the host path.
  auto ho = options(photos.root, output_spec::float32_nchw(), -1);
  ho.batch_size = 2;
  ringfeed::loader reference(ho);
  for (int e = 0; e < 5; ++e) {
    std::optional<ringfeed::batch> previous;
    for (;;) {
      auto d = ringfeed::sync_wait(device.next());
      auto h = ringfeed::sync_wait(reference.next());
      REQUIRE(d.has_value() == h.has_value());
      if (!d) break;
      d->wait(stream.rf());
      const auto copy = copy_to_host(d->images().data, d->images().bytes(), stream.get());
      REQUIRE(std::memcmp(copy.data(), h->images().data, copy.size()) == 0);
      if (previous) previous->release(stream.rf());
      previous = std::move(d);
    }
  }
}

namespace {

// Every batch of `epochs` epochs, read by a consumer kernel that spins for
// 2 ms and then copies the batch on `stream` (null: the default stream),
// each batch dropped right after its kernel was queued (its destructor
// releases it on the stream it waited on): no host synchronization until
// all copies are queued. Returns the copies.
std::vector<std::vector<std::byte>> read_on_device(ringfeed::loader& device, cudaStream_t stream, int epochs) {
  std::vector<std::pair<std::byte*, std::size_t>> copies;
  for (int e = 0; e < epochs; ++e) {
    device.set_epoch(static_cast<std::uint64_t>(e));
    while (auto d = ringfeed::sync_wait(device.next())) {
      std::byte* dst = nullptr;
      CUDA_OK(cudaMallocAsync(reinterpret_cast<void**>(&dst), d->images().bytes(), stream));
      const auto s = reinterpret_cast<ringfeed::cuda::stream_t>(stream);
      d->wait(s);
      REQUIRE(ringfeed::test::spin_then_copy(s, d->images().data, dst, d->images().bytes(), 2000) == 0);
      copies.emplace_back(dst, d->images().bytes());
    }
  }
  CUDA_OK(cudaDeviceSynchronize());
  std::vector<std::vector<std::byte>> out;
  for (auto [p, n] : copies) {
    out.emplace_back(n);
    CUDA_OK(cudaMemcpy(out.back().data(), p, n, cudaMemcpyDeviceToHost));
    CUDA_OK(cudaFree(p));
  }
  return out;
}

std::vector<std::vector<std::byte>> read_on_host(ringfeed::loader& host, int epochs) {
  std::vector<std::vector<std::byte>> out;
  for (int e = 0; e < epochs; ++e) {
    host.set_epoch(static_cast<std::uint64_t>(e));
    while (auto h = ringfeed::sync_wait(host.next())) {
      const auto* p = static_cast<const std::byte*>(h->images().data);
      out.emplace_back(p, p + h->images().bytes());
    }
  }
  return out;
}

}  // namespace

TEST_CASE("slow consumers on the default stream and a side stream get the host's bytes, no host sync",
          "[cuda][loader]") {
  photo_folder_fixture photos("slow consumers", std::chrono::seconds(240));
  auto ho = options(photos.root, output_spec::float32_nchw(), -1);
  ringfeed::loader host(ho);
  const auto want = read_on_host(host, 3);
  cuda_stream side;
  for (cudaStream_t s : {static_cast<cudaStream_t>(nullptr), side.get()}) {
    auto o = options(photos.root, output_spec::float32_nchw(), 0);
    o.device_buffers = 2;
    ringfeed::loader device(o);
    REQUIRE(device.uses_device());
    const auto got = read_on_device(device, s, 3);
    REQUIRE(got.size() == want.size());
    for (std::size_t k = 0; k < got.size(); ++k) {
      INFO("batch " << k << (s == nullptr ? " on the default stream" : " on a side stream"));
      REQUIRE(got[k] == want[k]);
    }
  }
}

TEST_CASE("break and iterate again, set_epoch and resume mid-epoch keep every device buffer", "[cuda][loader]") {
  photo_folder_fixture photos("stop and restart", std::chrono::seconds(240));
  const auto o = held_batches_options(photos.root);
  ringfeed::loader device(o);
  for (std::uint64_t round = 0; round < 5; ++round) {
    device.set_epoch(round % 2);
    auto a = ringfeed::sync_wait(device.next());
    auto b = ringfeed::sync_wait(device.next());  // two held at once: a lost buffer hangs here
    REQUIRE(a.has_value());
    REQUIRE(b.has_value());
    a->wait(nullptr);
    b->wait(nullptr);
  }
  // Resume mid-epoch from a saved state: the same batches as the original.
  device.set_epoch(1);
  for (int k = 0; k < 2; ++k) (void)ringfeed::sync_wait(device.next());
  const ringfeed::loader_state at = device.state();
  auto ro = o;
  ro.resume = at;
  ringfeed::loader resumed(ro);
  for (;;) {
    auto x = ringfeed::sync_wait(device.next());
    auto y = ringfeed::sync_wait(resumed.next());
    REQUIRE(x.has_value() == y.has_value());
    if (!x) break;
    x->wait(nullptr);
    y->wait(nullptr);
    const auto cx = copy_to_host(x->images().data, x->images().bytes(), nullptr);
    const auto cy = copy_to_host(y->images().data, y->images().bytes(), nullptr);
    REQUIRE(cx == cy);
  }
}

TEST_CASE("the loader's device is the one asked for; the caller's current device is left alone", "[cuda][loader]") {
  photo_folder_fixture photos;
  int count = 0;
  CUDA_OK(cudaGetDeviceCount(&count));
  const int target = count - 1;  // a second GPU where there is one, else device 0
  CUDA_OK(cudaSetDevice(0));
  auto o = options(photos.root, output_spec::float32_nchw(), target);
  int current = -1;
  {
    ringfeed::loader device(o);
    CUDA_OK(cudaGetDevice(&current));
    REQUIRE(current == 0);
    auto b = ringfeed::sync_wait(device.next());
    REQUIRE(b.has_value());
    REQUIRE(b->images().device == target);
    cudaPointerAttributes attr{};
    CUDA_OK(cudaPointerGetAttributes(&attr, b->images().data));
    REQUIRE(attr.device == target);
    CUDA_OK(cudaSetDevice(target));
    b->wait(nullptr);
    CUDA_OK(cudaStreamSynchronize(nullptr));
    CUDA_OK(cudaSetDevice(0));
    b->release();  // from device 0: the loader records on its own device
    CUDA_OK(cudaGetDevice(&current));
    REQUIRE(current == 0);
  }
  CUDA_OK(cudaGetDevice(&current));
  REQUIRE(current == 0);
}

TEST_CASE("C API device batches read by a kernel after rf_batch_wait", "[cuda][loader][capi]") {
  photo_folder_fixture photos;
  const auto open = [&](const char* device) {
    rf_options* o = rf_options_new();
    REQUIRE(rf_options_set(o, "source", photos.root.c_str()) == 0);
    REQUIRE(rf_options_set(o, "batch_size", "4") == 0);
    REQUIRE(rf_options_set(o, "pipeline", "val") == 0);
    REQUIRE(rf_options_set(o, "size", "32") == 0);
    REQUIRE(rf_options_set(o, "device", device) == 0);
    rf_loader* l = rf_loader_open(o);
    rf_options_free(o);
    REQUIRE(l != nullptr);
    return l;
  };
  rf_loader* host = open("-1");
  rf_loader* device = open("0");
  cuda_stream stream;
  const cudaStream_t s = stream.get();
  std::vector<std::pair<std::byte*, std::vector<std::byte>>> copies;
  for (;;) {
    rf_batch* h = nullptr;
    rf_batch* d = nullptr;
    const int hr = rf_loader_next(host, &h), dr = rf_loader_next(device, &d);
    REQUIRE(hr == dr);
    if (hr == 0) break;
    REQUIRE(rf_batch_on_device(d) == 1);
    REQUIRE(rf_batch_wait(d, s) == 0);
    std::byte* dst = nullptr;
    CUDA_OK(cudaMalloc(reinterpret_cast<void**>(&dst), rf_batch_nbytes(d)));
    REQUIRE(ringfeed::test::spin_then_copy(reinterpret_cast<ringfeed::cuda::stream_t>(s), rf_batch_images(d), dst,
                                           rf_batch_nbytes(d), 2000) == 0);
    const auto* hp = static_cast<const std::byte*>(rf_batch_images(h));
    copies.emplace_back(dst, std::vector<std::byte>(hp, hp + rf_batch_nbytes(h)));
    rf_batch_release_on_stream(d, s);
    rf_batch_release(h);
  }
  CUDA_OK(cudaStreamSynchronize(s));
  REQUIRE_FALSE(copies.empty());
  for (auto& [dst, want] : copies) {
    std::vector<std::byte> got(want.size());
    CUDA_OK(cudaMemcpy(got.data(), dst, got.size(), cudaMemcpyDeviceToHost));
    REQUIRE(got == want);
    CUDA_OK(cudaFree(dst));
  }
  rf_loader_close(device);
  rf_loader_close(host);
}
