// Parity with torchvision computed on the fly: Debian's python3 (Pillow 9.4,
// torchvision 0.14) re-encodes the committed photos into ImageNet-like
// variants and writes Pillow's decode and torchvision's val / train outputs;
// we compare. Skipped (exit 77, with the reason) where that Python lacks
// torchvision; the committed goldens in image_transforms_tests cover the
// same paths everywhere.
#include <catch2/catch.hpp>

#include <ringfeed/image/pipeline.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "image_test_data.hpp"
#include "test_support.hpp"

namespace img = ringfeed::image;
namespace data = ringfeed::test::image_data;

namespace {

std::string python() {
  const char* p = std::getenv("RINGFEED_TEST_PYTHON");
  return p != nullptr && *p != '\0' ? p : "/usr/bin/python3";
}

std::string missing_torchvision() {
  const std::string cmd = python() + " -c 'import torchvision, PIL, numpy' >/dev/null 2>&1";
  if (std::system(cmd.c_str()) == 0) return "";
  return python() + " cannot import torchvision, PIL and numpy (apt-get install -y python3-torchvision "
                    "python3-pil python3-numpy, or set RINGFEED_TEST_PYTHON); torchvision parity is checked "
                    "against committed goldens in image_transforms_tests instead";
}

ringfeed::test::skip_if_unavailable skip{missing_torchvision};

}  // namespace

TEST_CASE("decode, val and train outputs equal Pillow/torchvision on ImageNet-like variants",
          "[image][parity][torchvision]") {
  ringfeed::test::temp_dir tmp;
  const std::string cmd = python() + " " + (data::dir() / "torchvision_reference.py").string() + " " +
                          tmp.path().string();
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::ifstream manifest(tmp.path() / "manifest.txt");
  REQUIRE(manifest);

  img::decoder dec;
  img::image_buffer decoded;
  img::pipeline_workspace ws;
  const img::pipeline val_exact = img::pipeline::val(256, 224, img::pipeline_mode::exact);
  const img::pipeline val_fast = img::pipeline::val(256, 224, img::pipeline_mode::fast);
  const img::pipeline train_exact = img::pipeline::train(224, img::pipeline_mode::exact);
  std::vector<std::uint8_t> out(val_exact.fixed_shape()->bytes());
  const auto out_bytes = std::as_writable_bytes(std::span(out));

  int images = 0;
  int decode_equal = 0;
  int val_equal = 0;
  int val_max3 = 0;
  int train_equal = 0;
  double val_sum_abs = 0;
  int val_worst = 0;
  double fast_worst = INFINITY;
  std::string line;
  while (std::getline(manifest, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string name;
    int top = 0, left = 0, h = 0, w = 0, flip = 0;
    ls >> name >> top >> left >> h >> w >> flip;
    INFO(line);
    const auto bytes = data::read_file(tmp.path() / (name + ".jpg"));
    ++images;

    (void)dec.decode(bytes, name, decoded);
    const data::pnm pillow = data::read_pnm(tmp.path() / (name + ".decode.ppm"));
    const auto ds = data::compare(data::packed(decoded.view()), pillow.pixels);
    CHECK(ds.max_abs == 0);
    decode_equal += ds.max_abs == 0 ? 1 : 0;

    const data::pnm val = data::read_pnm(tmp.path() / (name + ".val.ppm"));
    (void)val_exact.apply(ws, bytes, name, {}, out_bytes);
    const auto vs = data::compare(out, val.pixels);
    CHECK(vs.max_abs == 0);
    val_equal += vs.max_abs == 0 ? 1 : 0;
    val_max3 += vs.max_abs <= 3 ? 1 : 0;
    val_sum_abs += vs.mean_abs;
    val_worst = std::max(val_worst, vs.max_abs);
    const std::vector<std::uint8_t> exact_out = out;

    const img::sample_result r = val_fast.apply(ws, bytes, name, {}, out_bytes);
    if (r.scale_denom == 1) CHECK(out == exact_out);
    else fast_worst = std::min(fast_worst, data::psnr(out, exact_out));

    img::sample_plan plan;
    plan.source = {pillow.width, pillow.height};
    plan.crop = {top, left, h, w};
    plan.resized = {224, 224};
    plan.window = {0, 0, 224, 224};
    plan.flip = flip != 0;
    (void)train_exact.apply_plan(ws, bytes, name, plan, out_bytes);
    const data::pnm train = data::read_pnm(tmp.path() / (name + ".train.ppm"));
    const auto ts = data::compare(out, train.pixels);
    CHECK(ts.max_abs == 0);
    train_equal += ts.max_abs == 0 ? 1 : 0;
  }
  REQUIRE(images >= 60);
  const double mean_abs = val_sum_abs / images;
  std::printf("torchvision parity on %d ImageNet-like JPEGs: decode identical %d/%d; val(256,224) identical %d/%d, "
              "mean |diff| %.4f, max diff %d, max diff <= 3 in %.1f%%; train resized_crop identical %d/%d; "
              "fast val worst PSNR %s\n",
              images, decode_equal, images, val_equal, images, mean_abs, val_worst, 100.0 * val_max3 / images,
              train_equal, images, std::isinf(fast_worst) ? "inf (no DCT scaling: identical)" :
                                                            std::to_string(fast_worst).c_str());
  // The acceptance bar, which exact equality more than meets.
  CHECK(mean_abs <= 0.25);
  CHECK(val_max3 >= images * 98 / 100);
}
