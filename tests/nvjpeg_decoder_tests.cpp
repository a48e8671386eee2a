// nvJPEG's decoder (lib/cuda/nvjpeg_decoder.hpp) on a real GPU: each image
// it takes decodes close to libjpeg-turbo's pixels (issue 43's accuracy
// goal: mean |Δ| ≤ 1 on nearly every image), a region equals the same crop
// of the whole image, one call mixes the hardware and hybrid backends, and
// a refused bitstream is a jpeg_decode_error naming the call. Built where
// nvjpeg.h was found; skipped, with the reason, without a CUDA device or
// without the nvJPEG library.
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <ringfeed/image/decode.hpp>
#include <ringfeed/image/image.hpp>

#include "cuda/device_api.hpp"
#include "cuda/jpeg_decoder.hpp"
#include "cuda_device.hpp"
#include "files.hpp"
#include "image_test_data.hpp"
#include "test_support.hpp"

namespace fs = std::filesystem;
using namespace ringfeed::cuda;
using ringfeed::image::crop_box;
using ringfeed::image::image_buffer;
using ringfeed::image::image_info;

namespace {

std::string why_no_nvjpeg() {
  if (std::string why = ringfeed::test::why_no_cuda_device(); !why.empty()) return why;
  const jpeg_decoder_choice c = open_jpeg_decoder(*builtin_device_api(), 0, 0);
  return c.decoder ? std::string() : "no nvJPEG decoder: " + c.why_not;
}
ringfeed::test::skip_if_unavailable skip_without_nvjpeg{why_no_nvjpeg};

void cuda_ok(cudaError_t e) {
  if (e != cudaSuccess) FAIL(cudaGetErrorName(e) << ": " << cudaGetErrorString(e));
}

struct device_free {
  void operator()(std::uint8_t* p) const noexcept { (void)cudaFree(p); }
};

// One image to decode: its bytes, header, CPU pixels and device output.
struct sample {
  std::string name;
  std::vector<std::byte> bytes;
  image_info info;
  image_buffer cpu;
  crop_box region;
  std::unique_ptr<std::uint8_t, device_free> out;
  std::size_t pitch = 0;
  std::unique_ptr<jpeg_host_work> work;  // as a batch slot's
};

struct samples {
  std::vector<sample> all;
};

// Mean and max |Δ| between the device output and the CPU decode's region.
struct difference {
  double mean = 0;
  int max = 0;
};
difference compare(const sample& s) {
  const int w = s.region.width, h = s.region.height;
  std::vector<std::uint8_t> gpu(static_cast<std::size_t>(w) * 3 * h);
  cuda_ok(cudaMemcpy2D(gpu.data(), static_cast<std::size_t>(w) * 3, s.out.get(), s.pitch, static_cast<std::size_t>(w) * 3, h,
                       cudaMemcpyDeviceToHost));
  const ringfeed::image::image_view cpu = s.cpu.view().crop(s.region);
  difference d;
  double sum = 0;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w * 3; ++x) {
      const int delta = std::abs(int{gpu[static_cast<std::size_t>(y) * w * 3 + x]} - int{cpu.row(y)[x]});
      sum += delta;
      d.max = std::max(d.max, delta);
    }
  }
  d.mean = sum / (static_cast<double>(w) * h * 3);
  return d;
}

// The committed JPEGs nvJPEG takes, decoded on the CPU, each with a device
// buffer for `region_of` its size.
template <class Region>
samples load(jpeg_decoder& decoder, Region region_of) {
  samples out;
  ringfeed::image::decoder cpu;
  std::vector<fs::path> files;
  for (const char* f : {"s420.jpg", "s422.jpg", "s444.jpg", "gray.jpg", "progressive.jpg", "restart.jpg"}) {
    files.push_back(ringfeed::test::image_data::dir() / "decode" / f);
  }
  for (const auto& e : fs::directory_iterator(ringfeed::test::image_data::dir_of_photos())) files.push_back(e.path());
  for (const fs::path& f : files) {
    sample s;
    s.name = f.filename().string();
    s.bytes = ringfeed::test::read_file(f);
    s.info = cpu.read_info(s.bytes, s.name);
    if (decoder.route(s.info).backend == jpeg_backend::cpu) continue;
    (void)cpu.decode(s.bytes, s.name, s.cpu);
    s.region = region_of(s.info);
    void* p = nullptr;
    cuda_ok(cudaMallocPitch(&p, &s.pitch, static_cast<std::size_t>(s.region.width) * 3, s.region.height));
    s.out.reset(static_cast<std::uint8_t*>(p));
    s.work = decoder.make_host_work();
    out.all.push_back(std::move(s));
  }
  return out;
}

// Each job's host side prepared (as the loader's decode threads do), or
// not (decode() then runs it: the hybrid backend for all).
std::vector<jpeg_job> jobs_of(jpeg_decoder& decoder, const samples& in, bool prepare = true) {
  std::vector<jpeg_job> jobs;
  for (const sample& s : in.all) {
    jpeg_job j;
    j.data = reinterpret_cast<const std::uint8_t*>(s.bytes.data());
    j.size = s.bytes.size();
    j.info = s.info;
    j.region = s.region;
    j.out = s.out.get();
    j.pitch = s.pitch;
    j.backend = decoder.route(s.info).backend;
    j.work = s.work.get();
    if (prepare) j.backend = decoder.prepare(j);
    jobs.push_back(j);
  }
  return jobs;
}

struct stream {
  cudaStream_t s = nullptr;
  stream() { cuda_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
  ~stream() { (void)cudaStreamDestroy(s); }
  stream(const stream&) = delete;
  stream& operator=(const stream&) = delete;
};

void decode_and_check(jpeg_decoder& decoder, const samples& in) {
  REQUIRE(!in.all.empty());
  const std::vector<jpeg_job> jobs = jobs_of(decoder, in);
  const stream st;
  decoder.decode(jobs, reinterpret_cast<stream_t>(st.s));
  cuda_ok(cudaStreamSynchronize(st.s));
  decoder.stream_done();  // st goes: what the decoder frees later is not queued there
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const difference d = compare(in.all[i]);
    INFO(in.all[i].name << " (" << backend_name(jobs[i].backend) << "): mean |delta| " << d.mean << ", max " << d.max);
    CHECK(d.mean <= 1.5);  // the goal is 1.0 on 99% of images; wrong channels or rows give tens
    WARN(in.all[i].name << " " << backend_name(jobs[i].backend) << " mean " << d.mean << " max " << d.max);
  }
}

}  // namespace

TEST_CASE("nvJPEG decodes whole images close to libjpeg-turbo, hardware and hybrid in one call", "[cuda][nvjpeg]") {
  const jpeg_decoder_choice c = open_jpeg_decoder(*builtin_device_api(), 0, 0);
  REQUIRE(c.decoder);
  WARN(c.decoder->describe() << "; hardware engines: " << c.decoder->hardware_engines());
  const samples in = load(*c.decoder, [](const image_info& i) { return crop_box{0, 0, i.height, i.width}; });
  decode_and_check(*c.decoder, in);
  decode_and_check(*c.decoder, in);  // again: states and buffers reused
}

TEST_CASE("nvJPEG decodes a region to the same crop of the image", "[cuda][nvjpeg]") {
  const jpeg_decoder_choice c = open_jpeg_decoder(*builtin_device_api(), 0, 0);
  REQUIRE(c.decoder);
  REQUIRE(c.decoder->decodes_region(jpeg_backend::hybrid));
  // An off-centre region, not on any MCU boundary.
  const samples in = load(*c.decoder, [](const image_info& i) {
    return crop_box{i.height / 5 + 1, i.width / 3 + 3, i.height / 2, i.width / 2};
  });
  decode_and_check(*c.decoder, in);
}

TEST_CASE("a bitstream nvJPEG refuses is a jpeg_decode_error naming the call", "[cuda][nvjpeg]") {
  const jpeg_decoder_choice c = open_jpeg_decoder(*builtin_device_api(), 0, 0);
  REQUIRE(c.decoder);
  samples in = load(*c.decoder, [](const image_info& i) { return crop_box{0, 0, i.height, i.width}; });
  REQUIRE(!in.all.empty());
  std::vector<jpeg_job> jobs = jobs_of(*c.decoder, in, false);  // the host side in decode(): the bytes it parses
  const std::vector<std::uint8_t> garbage(4096, 0x5a);  // no SOI: not a JPEG at all
  jobs[0].data = garbage.data();
  jobs[0].size = garbage.size();
  const stream st;
  try {
    c.decoder->decode(jobs, reinterpret_cast<stream_t>(st.s));
    FAIL("decode accepted bytes that are not a JPEG");
  } catch (const jpeg_decode_error& e) {
    const std::string what = e.what();
    CHECK(what.find("nvjpeg") != std::string::npos);
    CHECK(what.find("NVJPEG_STATUS_") != std::string::npos);
  }
  cuda_ok(cudaStreamSynchronize(st.s));
  c.decoder->stream_done();
  decode_and_check(*c.decoder, in);  // and the decoder still works
}
