// Resampling: Pillow's Image.resize bit for bit (sizes up and down, odd
// sizes, boxes, every filter, RGB and L), and the window / partial-source
// forms equal cropping Pillow's output.
#include <catch2/catch.hpp>

#include <ringfeed/image/pipeline.hpp>
#include <ringfeed/image/resample.hpp>
#include <ringfeed/image/resample_plan.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "image/kernels/cpu_features.hpp"
#include "image/kernels/resample_detail.hpp"
#include "image_test_data.hpp"

namespace img = ringfeed::image;
namespace data = ringfeed::test::image_data;

namespace {

img::resample_filter filter_named(const std::string& s) {
  if (s == "bilinear") return img::resample_filter::bilinear;
  if (s == "bicubic") return img::resample_filter::bicubic;
  if (s == "lanczos") return img::resample_filter::lanczos;
  if (s == "hamming") return img::resample_filter::hamming;
  if (s == "box") return img::resample_filter::box;
  throw std::runtime_error("unknown filter " + s);
}

struct golden_case {
  std::string golden;
  std::string kind;
  img::resample_request request;
};

std::vector<golden_case> read_cases() {
  std::ifstream in(data::dir() / "resample" / "cases.txt");
  std::vector<golden_case> cases;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    golden_case c;
    std::string filter;
    std::string box;
    ls >> c.golden >> c.kind >> filter >> c.request.output.width >> c.request.output.height >> box;
    c.request.filter = filter_named(filter);
    if (box != "-") {
      img::resample_box b;
      b.x0 = std::stof(box);
      ls >> b.y0 >> b.x1 >> b.y1;
      c.request.box = b;
    }
    cases.push_back(c);
  }
  return cases;
}

// A deterministic noisy test image (worst case for any shortcut).
std::vector<std::uint8_t> noise(int w, int h, int c, unsigned seed) {
  std::vector<std::uint8_t> v(static_cast<std::size_t>(w) * static_cast<std::size_t>(h) * static_cast<std::size_t>(c));
  std::uint32_t x = seed * 2654435761u + 1;
  for (auto& p : v) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    p = static_cast<std::uint8_t>(x >> 24);
  }
  return v;
}

}  // namespace

TEST_CASE("resize equals Pillow's Image.resize bit for bit", "[image][resample]") {
  const data::pnm rgb = data::read_pnm(data::dir() / "resample" / "src.ppm");
  const data::pnm gray = data::read_pnm(data::dir() / "resample" / "src_gray.pgm");
  const auto cases = read_cases();
  REQUIRE(cases.size() >= 20);
  img::resampler rs;
  for (const golden_case& c : cases) {
    INFO(c.golden);
    const data::pnm& src = c.kind == "rgb" ? rgb : gray;
    const data::pnm expected = data::read_pnm(data::dir() / "resample" / c.golden);
    img::image_buffer out(expected.width, expected.height, src.channels);
    img::resample_request rq = c.request;
    rq.input = {src.width, src.height};
    rs.resize(src.view(), rq, out.view());
    const auto stats = data::compare(data::packed(out.view()), expected.pixels);
    CHECK(stats.differing == 0);
  }
}

TEST_CASE("an output window equals the same crop of the whole output", "[image][resample]") {
  const data::pnm src = data::read_pnm(data::dir() / "resample" / "src.ppm");
  img::resampler rs;
  for (const img::size2 out_size : {img::size2{30, 23}, img::size2{122, 94}, img::size2{17, 80}, img::size2{61, 47}}) {
    img::image_buffer whole(out_size.width, out_size.height, 3);
    rs.resize(src.view(), whole.view());
    for (const img::crop_box w : {img::crop_box{0, 0, out_size.height, out_size.width},
                                  img::crop_box{1, 2, out_size.height - 3, out_size.width - 2},
                                  img::crop_box{out_size.height / 2, out_size.width / 3, 1, 1},
                                  img::crop_box{0, out_size.width - 1, out_size.height, 1}}) {
      INFO(out_size.width << "x" << out_size.height << " window " << w.top << "," << w.left);
      img::resample_request rq;
      rq.input = {src.width, src.height};
      rq.output = out_size;
      rq.window = w;
      img::image_buffer part(w.width, w.height, 3);
      rs.resize(src.view(), rq, part.view());
      CHECK(data::packed(part.view()) == data::packed(whole.view().crop(w)));
    }
  }
}

TEST_CASE("a source holding only source_region() gives the same pixels", "[image][resample]") {
  const int w = 211;
  const int h = 157;
  const auto pixels = noise(w, h, 3, 7);
  const img::image_view full{pixels.data(), w, h, 3, w * 3};
  img::resampler rs;
  for (const img::size2 out_size : {img::size2{64, 48}, img::size2{300, 200}, img::size2{211, 100}, img::size2{90, 157}}) {
    for (int boxed = 0; boxed < 2; ++boxed) {
      img::resample_request rq;
      rq.input = {w, h};
      rq.output = out_size;
      if (boxed) rq.box = img::resample_box{10.5f, 3.25f, 180.0f, 150.5f};
      rq.window = {out_size.height / 4, out_size.width / 5, out_size.height / 2, out_size.width / 2};
      img::image_buffer expected(rq.window.width, rq.window.height, 3);
      rs.resize(full, rq, expected.view());
      const img::crop_box need = img::resampler::source_region(rq);
      INFO(out_size.width << "x" << out_size.height << " boxed " << boxed << " need " << need.left << "," << need.top
                          << " " << need.width << "x" << need.height);
      REQUIRE(need.left >= 0);
      REQUIRE(need.top >= 0);
      REQUIRE(need.right() <= w);
      REQUIRE(need.bottom() <= h);
      img::resample_request part = rq;
      part.src_left = need.left;
      part.src_top = need.top;
      img::image_buffer got(rq.window.width, rq.window.height, 3);
      rs.resize(full.crop(need), part, got.view());
      CHECK(data::packed(got.view()) == data::packed(expected.view()));
      // One pixel less on any side is refused, not read out of bounds.
      const img::crop_box smaller{need.top + 1, need.left, need.height - 1, need.width};
      part.src_top = smaller.top;
      CHECK_THROWS_AS(rs.resize(full.crop(smaller), part, got.view()), std::invalid_argument);
    }
  }
}

TEST_CASE("the plan: Pillow's passes, bounds and normalized fixed-point weights", "[image][resample]") {
  // What the device resize packs (cuda/device_resize.cpp) instead of
  // recomputing: the passes Pillow runs, and per output pixel weights that
  // sum to one in fixed point, over input pixels inside the planned reads.
  img::resample_plan p;
  img::resample_request rq;
  rq.input = {40, 30};
  rq.output = {40, 30};
  img::plan_resample(rq, p);
  CHECK_FALSE(p.need_horizontal);
  CHECK_FALSE(p.need_vertical);
  CHECK(img::planned_reads(p) == img::crop_box{0, 0, 30, 40});
  rq.box = img::resample_box{0, 0.5f, 40, 30};  // same size, a moved box: rows resampled
  img::plan_resample(rq, p);
  CHECK_FALSE(p.need_horizontal);
  CHECK(p.need_vertical);
  rq.box.reset();
  rq.output = {20, 30};
  rq.window = {3, 5, 10, 12};
  img::plan_resample(rq, p);
  REQUIRE(p.need_horizontal);
  CHECK_FALSE(p.need_vertical);
  CHECK(p.horizontal.first == 5);
  CHECK(p.horizontal.count == 12);
  CHECK(p.horizontal.ksize == 5);  // bilinear halving: support 2, ceil(2) * 2 + 1
  for (const auto filter : {img::resample_filter::box, img::resample_filter::bilinear, img::resample_filter::hamming,
                            img::resample_filter::bicubic, img::resample_filter::lanczos}) {
    rq.filter = filter;
    rq.output = {17, 71};
    rq.window = {};
    img::plan_resample(rq, p);
    const img::crop_box reads = img::planned_reads(p);
    const img::crop_box region = img::resampler::source_region(rq);
    CHECK(reads.left >= region.left);
    CHECK(reads.right() <= region.right());
    CHECK(reads.top >= region.top);
    CHECK(reads.bottom() <= region.bottom());
    for (const img::resample_axis* a : {&p.horizontal, &p.vertical}) {
      for (int i = 0; i < a->count; ++i) {
        const auto at = static_cast<std::size_t>(i);
        std::int64_t sum = 0;
        const std::int32_t* k = a->k.data() + at * static_cast<std::size_t>(a->ksize);
        for (int t = 0; t < a->ksize; ++t) sum += k[t];
        INFO("filter " << static_cast<int>(filter) << " output " << i << " sum " << sum);
        CHECK(std::abs(sum - (std::int64_t{1} << img::resample_precision_bits)) <= a->ksize);  // each weight rounded
        CHECK(a->len[at] >= 1);
        CHECK(a->len[at] <= a->ksize);
        CHECK(a->lo[at] >= a->read_lo);
        CHECK(a->lo[at] + a->len[at] <= a->read_hi);
      }
    }
  }
  rq.box = img::resample_box{0, 0, 41, 30};
  CHECK_THROWS_WITH(img::plan_resample(rq, p), Catch::Contains("exceed"));
}

TEST_CASE("resample checks its arguments as Pillow does", "[image][resample]") {
  const auto pixels = noise(20, 10, 3, 1);
  const img::image_view src{pixels.data(), 20, 10, 3, 60};
  img::resampler rs;
  img::image_buffer out(5, 5, 3);
  img::resample_request rq;
  rq.input = {20, 10};
  rq.output = {5, 5};
  rq.box = img::resample_box{-1, 0, 10, 10};
  CHECK_THROWS_WITH(rs.resize(src, rq, out.view()), Catch::Contains("negative"));
  rq.box = img::resample_box{0, 0, 21, 10};
  CHECK_THROWS_WITH(rs.resize(src, rq, out.view()), Catch::Contains("exceed"));
  rq.box = img::resample_box{5, 0, 4, 10};
  CHECK_THROWS_WITH(rs.resize(src, rq, out.view()), Catch::Contains("empty"));
  rq.box.reset();
  rq.output = {0, 5};
  CHECK_THROWS_AS(rs.resize(src, rq, out.view()), std::invalid_argument);
  rq.output = {5, 5};
  rq.window = {0, 0, 6, 5};
  CHECK_THROWS_WITH(rs.resize(src, rq, out.view()), Catch::Contains("window"));
  rq.window = {};
  img::image_buffer wrong(4, 5, 3);
  CHECK_THROWS_AS(rs.resize(src, rq, wrong.view()), std::invalid_argument);
}

TEST_CASE("a resampler is reusable across sizes and channel counts", "[image][resample]") {
  img::resampler rs;
  for (int i = 0; i < 30; ++i) {
    const int w = 17 + (i * 37) % 300;
    const int h = 9 + (i * 53) % 200;
    const int c = 1 + i % 4;
    const auto px = noise(w, h, c, static_cast<unsigned>(i));
    const img::image_view src{px.data(), w, h, c, static_cast<std::ptrdiff_t>(w) * c};
    const int ow = 1 + (i * 29) % 257;
    const int oh = 1 + (i * 31) % 199;
    img::image_buffer a(ow, oh, c);
    img::image_buffer b(ow, oh, c);
    rs.resize(src, a.view());
    img::resampler once;
    once.resize(src, b.view());
    CHECK(data::packed(a.view()) == data::packed(b.view()));
  }
}

TEST_CASE("the SIMD and portable passes give the same pixels", "[image][resample]") {
  // The golden cases above run whichever pass this CPU gets; this compares
  // the two directly on noise, every filter, up and down, boxes, windows and
  // row counts that leave partial blocks.
  if (!ringfeed::image::detail::cpu_has_avx2()) {
    WARN("no AVX2 on this CPU: only the portable pass exists here");
    return;
  }
  struct restore {
    ~restore() {
      ringfeed::image::detail::set_resample_simd(true);
      ringfeed::image::detail::set_resample_avx512(true);
    }
  } restore_simd;
  // Both SIMD horizontal passes where the CPU has AVX-512 (it runs the
  // AVX-512 one unless told not to), the AVX2 one elsewhere.
  for (const bool avx512 : {true, false}) {
    if (!avx512 && !ringfeed::image::detail::cpu_has_avx512()) break;
    ringfeed::image::detail::set_resample_avx512(avx512);
    const img::resample_filter filters[] = {img::resample_filter::bilinear, img::resample_filter::bicubic,
                                            img::resample_filter::lanczos, img::resample_filter::hamming,
                                            img::resample_filter::box};
    img::resampler simd;
    img::resampler portable;
    for (int i = 0; i < 90; ++i) {
      const int w = 1 + (i * 37) % 301;
      const int h = 1 + (i * 53) % 203;
      // RGB (both passes' AVX2 kernels), and 1 and 4 channels (the vertical
      // one's); every fifth image only 0s and 255s, so the filters with
      // negative lobes overshoot and both clips are taken.
      const int ch = i % 6 == 5 ? 1 : i % 6 == 4 ? 4 : 3;
      auto px = noise(w, h, ch, static_cast<unsigned>(i + 100));
      if (i % 5 == 3)
        for (auto& v : px) v = v < 128 ? 0 : 255;
      const img::image_view src{px.data(), w, h, ch, static_cast<std::ptrdiff_t>(w) * ch};
      img::resample_request rq;
      rq.input = {w, h};
      rq.output = {1 + (i * 29) % 257, 1 + (i * 31) % 199};
      rq.filter = filters[i % 5];
      if (i % 3 == 1)
        rq.box = img::resample_box{static_cast<float>(w) * 0.1f, static_cast<float>(h) * 0.2f, static_cast<float>(w) * 0.9f,
                                   static_cast<float>(h)};
      if (i % 4 == 2 && rq.output.width > 2 && rq.output.height > 2)
        rq.window = {rq.output.height / 3, rq.output.width / 4, rq.output.height / 2, rq.output.width / 2};
      const img::size2 out_size = rq.window.empty() ? rq.output : img::size2{rq.window.width, rq.window.height};
      img::image_buffer a(out_size.width, out_size.height, ch);
      img::image_buffer b(out_size.width, out_size.height, ch);
      ringfeed::image::detail::set_resample_simd(true);
      simd.resize(src, rq, a.view());
      ringfeed::image::detail::set_resample_simd(false);
      portable.resize(src, rq, b.view());
      INFO("case " << i << ": " << w << "x" << h << "x" << ch << " -> " << rq.output.width << "x" << rq.output.height
                    << (avx512 ? ", AVX-512" : ", AVX2"));
      CHECK(data::packed(a.view()) == data::packed(b.view()));
    }
  }
}

TEST_CASE("a flipped uint8 output is the unflipped one mirrored, at every width", "[image][transforms]") {
  // The uint8 path mirrors rows in place (five pixels per byte shuffle on
  // x86 with SSSE3, pixel by pixel on the rest of a row): widths below,
  // at and past the block edges.
  std::vector<std::uint8_t> src(40 * 7 * 3);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>(i * 37 + 11);
  const img::image_view pixels{src.data(), 40, 7, 3, 40 * 3};
  img::pipeline_workspace ws;
  for (int w = 1; w <= 40; ++w) {
    INFO("width " << w);
    const auto plain = img::pipeline().resize(img::size2{w, 7});
    auto flipped = img::pipeline().resize(img::size2{w, 7});
    flipped.horizontal_flip(1.0);
    std::vector<std::byte> a(static_cast<std::size_t>(w) * 7 * 3), b(a.size());
    plain.apply_pixels(ws, pixels, "test", {1, 0, 0}, a);
    flipped.apply_pixels(ws, pixels, "test", {1, 0, 0}, b);
    for (int y = 0; y < 7; ++y)
      for (int x = 0; x < w; ++x)
        for (int c = 0; c < 3; ++c)
          REQUIRE(b[(static_cast<std::size_t>(y) * w + x) * 3 + c] ==
                  a[(static_cast<std::size_t>(y) * w + (w - 1 - x)) * 3 + c]);
  }
}

TEST_CASE("apply_pixel_rows on the rows rows_read names equals apply_pixels on the whole image", "[image][transforms]") {
  // What a pixel cache hit relies on: it reads only the stripes holding
  // rows_read()'s rows. Any row missing from them would be read out of
  // bounds (the resampler refuses it); any difference in arithmetic shows.
  const int w = 97, h = 131;
  for (const int channels : {3, 1}) {
    std::vector<std::uint8_t> src(static_cast<std::size_t>(w) * h * channels);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>(i * 131 + i / 7);
    const img::image_view pixels{src.data(), w, h, channels, w * channels};
    for (const auto filter : {img::resample_filter::bilinear, img::resample_filter::bicubic,
                              img::resample_filter::lanczos, img::resample_filter::box}) {
      auto train = img::pipeline::train(24, img::pipeline_mode::exact);
      train.set_filter(filter).set_output(ringfeed::output_spec::float32_nchw());
      img::pipeline_workspace ws;
      int partial = 0;
      for (std::uint64_t n = 0; n < 60; ++n) {
        const img::sample_key key{7, n % 3, n};
        const auto [top, bottom] = train.rows_read({w, h}, key);
        INFO("channels " << channels << ", filter " << static_cast<int>(filter) << ", sample " << n << ": rows "
                         << top << ".." << bottom);
        REQUIRE((0 <= top && top < bottom && bottom <= h));
        partial += bottom - top < h;
        std::vector<std::byte> whole(3 * 24 * 24 * sizeof(float)), rows(whole.size());
        train.apply_pixels(ws, pixels, "test", key, whole);
        const img::image_rows held{pixels.crop({top, 0, bottom - top, w}), top, {w, h}};
        train.apply_pixel_rows(ws, held, "test", key, rows);
        REQUIRE(rows == whole);
        if (top > 0) {  // one row fewer than named is refused, never read past
          const img::image_rows short_by_one{pixels.crop({top + 1, 0, bottom - top - 1, w}), top + 1, {w, h}};
          CHECK_THROWS(train.apply_pixel_rows(ws, short_by_one, "test", key, rows));
        }
      }
      CHECK(partial > 30);  // most crops read part of the image
    }
  }
}
