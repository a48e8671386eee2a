// Where nvJPEG's decoder sends each image (lib/cuda/nvjpeg_route.hpp),
// from the header alone: what the hardware engines take, what goes to the
// hybrid backend, and what stays on the CPU with its reason.
#include <catch2/catch.hpp>

#include "cuda/nvjpeg_route.hpp"

using namespace ringfeed::cuda;
using ringfeed::image::chroma_subsampling;
using ringfeed::image::image_format;
using ringfeed::image::image_info;

namespace {

image_info baseline(chroma_subsampling s = chroma_subsampling::s420) {
  image_info i;
  i.format = image_format::jpeg;
  i.width = 640;
  i.height = 480;
  i.components = 3;
  i.subsampling = s;
  return i;
}

}  // namespace

TEST_CASE("baseline YCbCr of the engines' subsamplings and grayscale go to the hardware", "[cuda][nvjpeg]") {
  for (auto s : {chroma_subsampling::s444, chroma_subsampling::s422, chroma_subsampling::s420, chroma_subsampling::s440}) {
    const jpeg_route r = nvjpeg_route(baseline(s), true);
    CHECK(r.backend == jpeg_backend::hardware);
    CHECK(r.why_cpu.empty());
  }
  image_info gray = baseline(chroma_subsampling::none);
  gray.components = 1;
  CHECK(nvjpeg_route(gray, true).backend == jpeg_backend::hardware);
}

TEST_CASE("progressive and 4:1:1 go to the hybrid backend; everything GPU-able without engines", "[cuda][nvjpeg]") {
  image_info progressive = baseline();
  progressive.progressive = true;
  CHECK(nvjpeg_route(progressive, true).backend == jpeg_backend::hybrid);
  CHECK(nvjpeg_route(baseline(chroma_subsampling::s411), true).backend == jpeg_backend::hybrid);
  CHECK(nvjpeg_route(baseline(), false).backend == jpeg_backend::hybrid);
  image_info gray = baseline(chroma_subsampling::none);
  gray.components = 1;
  CHECK(nvjpeg_route(gray, false).backend == jpeg_backend::hybrid);
}

TEST_CASE("what stays on the CPU, and why", "[cuda][nvjpeg]") {
  auto why = [](const image_info& i) {
    const jpeg_route r = nvjpeg_route(i, true);
    CHECK(r.backend == jpeg_backend::cpu);
    return std::string(r.why_cpu);
  };
  image_info png = baseline();
  png.format = image_format::png;
  CHECK(why(png) == "not a JPEG");
  image_info arithmetic = baseline();
  arithmetic.arithmetic = true;
  arithmetic.progressive = true;  // SOF10: arithmetic wins
  CHECK(why(arithmetic) == "arithmetic coding");
  image_info rotated = baseline();
  rotated.orientation = 6;
  CHECK(why(rotated) == "EXIF orientation");
  image_info cmyk = baseline(chroma_subsampling::none);
  cmyk.components = 4;
  CHECK(why(cmyk) == "4 components");
  image_info two = baseline();
  two.components = 2;
  CHECK(why(two) == "unusual component count");
  CHECK(why(baseline(chroma_subsampling::none)) == "not YCbCr");
  CHECK(why(baseline(chroma_subsampling::s441)) == "chroma subsampling");
  CHECK(why(baseline(chroma_subsampling::other)) == "chroma subsampling");
  image_info empty = baseline();
  empty.width = 0;
  CHECK(why(empty) == "no size in the header");
}
