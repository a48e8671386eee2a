// The device crop / resize / flip (lib/cuda/device_resize.hpp) without a
// GPU: the packed table run by resize_with_table (the kernels' arithmetic on
// the host) and by the simulated device's launch_resize on a stream give,
// for random batches, the CPU resampler's bytes (mirrored when flipped),
// and write nothing else; bad requests are refused by name.
#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "resize_cases.hpp"
#include "sim_device.hpp"

namespace cu = ringfeed::cuda;
namespace img = ringfeed::image;
using ringfeed::test::aligned_bytes;
using ringfeed::test::resize_batch;

namespace {

// The batch through pack_resize_table and resize_with_table, all in host
// memory; returns the target.
std::vector<std::uint8_t> run_on_host(const resize_batch& b) {
  const cu::resize_sizes sizes = cu::measure_resize(b.images);
  aligned_bytes table(sizes.table_bytes);
  cu::pack_resize_table(b.images, {table.data(), table.size()});
  std::vector<std::uint8_t> scratch(sizes.scratch_bytes, 0xEE);
  std::vector<std::uint8_t> target(b.target_bytes, resize_batch::fill);
  cu::resize_launch k;
  k.table = table.data();
  k.images = b.images.size();
  k.source = b.source.data();
  k.target = target.data();
  k.scratch = scratch.data();
  cu::resize_with_table(k);
  return target;
}

img::resample_request simple_request() {
  img::resample_request rq;
  rq.input = {40, 30};
  rq.output = {20, 15};
  return rq;
}

cu::resize_image whole(const img::resample_request& rq) {
  cu::resize_image im;
  im.request = rq;
  im.src_width = rq.input.width;
  im.src_height = rq.input.height;
  return im;
}

}  // namespace

TEST_CASE("the table's resize equals the CPU resampler's, flipped when asked", "[device_sim][resize]") {
  std::mt19937 rng(20260429);
  for (int i = 0; i < 400; ++i) {
    const resize_batch b = ringfeed::test::random_batch(rng);
    INFO("batch " << i << ": " << b.description);
    REQUIRE(ringfeed::test::first_difference(b, run_on_host(b)) == "");
  }
}

TEST_CASE("every filter, each pass alone, both and neither", "[device_sim][resize]") {
  // The pass skipping decided by the box: identity on an axis (no pass),
  // and the same size with a shifted box (a pass that moves pixels).
  std::mt19937 rng(7);
  for (int f = 0; f < 5; ++f) {
    for (int shape = 0; shape < 6; ++shape) {
      img::resample_request rq;
      rq.input = {33, 21};
      rq.filter = static_cast<img::resample_filter>(f);
      rq.output = rq.input;                                              // shape 0: neither, a copy
      if (shape == 1) rq.output.width = 50;                              // horizontal only
      if (shape == 2) rq.output.height = 9;                              // vertical only
      if (shape == 3) rq.output = {12, 64};                              // both
      if (shape == 4) rq.box = img::resample_box{0.5f, 0.0f, 33.0f, 21.0f};  // same size, moved: horizontal
      if (shape == 5) rq.box = img::resample_box{0.0f, 0.0f, 33.0f, 20.25f};  // vertical
      for (int flip = 0; flip < 2; ++flip) {
        INFO("filter " << f << " shape " << shape << " flip " << flip);
        resize_batch b;
        cu::resize_image im = whole(rq);
        im.flip = flip == 1;
        b.source = ringfeed::test::resize_noise(33 * 21 * 3, rng);
        std::vector<std::uint8_t> out(static_cast<std::size_t>(rq.output.width) * rq.output.height * 3);
        img::resampler().resize({b.source.data(), 33, 21, 3, 33 * 3}, rq,
                                {out.data(), rq.output.width, rq.output.height, 3, rq.output.width * 3});
        if (im.flip) {
          b.expected.clear();
          for (int y = 0; y < rq.output.height; ++y)
            for (int x = rq.output.width - 1; x >= 0; --x)
              for (int c = 0; c < 3; ++c)
                b.expected.push_back(out[(static_cast<std::size_t>(y) * rq.output.width + x) * 3 + c]);
        } else {
          b.expected = out;
        }
        b.target_bytes = b.expected.size();
        b.images.push_back(im);
        // Only an image with both passes has an intermediate.
        CHECK((cu::measure_resize(b.images).scratch_bytes != 0) == (shape == 3));
        REQUIRE(ringfeed::test::first_difference(b, run_on_host(b)) == "");
      }
    }
  }
}

TEST_CASE("the simulated device's launch_resize gives the same bytes on a stream", "[device_sim][resize]") {
  ringfeed::test::sim_device dev;
  cu::device_api& api = dev;
  const cu::stream_t s = api.create_stream();
  std::mt19937 rng(42);
  for (int i = 0; i < 40; ++i) {
    const resize_batch b = ringfeed::test::random_batch(rng);
    INFO("batch " << i << ": " << b.description);
    const cu::resize_sizes sizes = cu::measure_resize(b.images);
    aligned_bytes host_table(sizes.table_bytes);
    cu::pack_resize_table(b.images, {host_table.data(), host_table.size()});
    // Device memory: the table is used from its copy, not from where it was packed.
    auto* table = static_cast<std::byte*>(api.allocate(sizes.table_bytes));
    auto* source = static_cast<std::uint8_t*>(api.allocate(b.source.size()));
    auto* target = static_cast<std::uint8_t*>(api.allocate(b.target_bytes));
    auto* scratch = static_cast<std::uint8_t*>(api.allocate(sizes.scratch_bytes));
    std::memset(target, resize_batch::fill, b.target_bytes);
    api.copy_to_device_async(table, host_table.data(), sizes.table_bytes, s);
    api.copy_to_device_async(source, b.source.data(), b.source.size(), s);
    api.launch_resize({table, b.images.size(), source, target, scratch}, s);
    api.synchronize(s);
    const std::vector<std::uint8_t> got(target, target + b.target_bytes);
    CHECK(ringfeed::test::first_difference(b, got) == "");
    for (void* p : {static_cast<void*>(table), static_cast<void*>(source), static_cast<void*>(target),
                    static_cast<void*>(scratch)})
      api.deallocate(p);
  }
  api.destroy_stream(s);
}

TEST_CASE("measure_resize refuses a bad image, naming it and the problem", "[device_sim][resize]") {
  std::vector<cu::resize_image> images{whole(simple_request()), whole(simple_request())};
  CHECK_NOTHROW(cu::measure_resize(images));
  const auto refused = [&](const char* words) {
    CHECK_THROWS_WITH(cu::measure_resize(images),
                      Catch::Contains("cuda::measure_resize: image 1") && Catch::Contains(words));
    CHECK_THROWS_AS(cu::measure_resize(images), std::invalid_argument);
    images[1] = whole(simple_request());
  };
  images[1].request.box = img::resample_box{0, 0, 41, 30};
  refused("box can't exceed original image size");
  images[1].request.box = img::resample_box{-0.5f, 0, 10, 10};
  refused("box offset can't be negative");
  images[1].request.window = {10, 0, 6, 20};  // rows 10..16 of 15
  refused("window outside the output");
  images[1].request.output = {0, 15};
  refused("height and width must be > 0");
  // A decoded region one row short of what the resize reads.
  const img::crop_box need = img::resampler::source_region(images[1].request);
  images[1].request.src_top = need.top + 1;
  images[1].src_height = need.height - 1;
  refused("lacks pixels the resize reads");
  images[1].src_width = 0;
  refused("lacks pixels the resize reads");
  // pack_resize_table checks as much, and its table.
  images[1].request.output = {0, 15};
  aligned_bytes table(4096);
  CHECK_THROWS_WITH(cu::pack_resize_table(images, {table.data(), table.size()}),
                    Catch::Contains("cuda::pack_resize_table: image 1"));
  images[1] = whole(simple_request());
  const cu::resize_sizes sizes = cu::measure_resize(images);
  CHECK_THROWS_WITH(cu::pack_resize_table(images, {table.data(), sizes.table_bytes - 1}),
                    Catch::Contains("smaller than measured"));
  CHECK_THROWS_WITH(cu::pack_resize_table(images, {table.data() + 8, sizes.table_bytes}),
                    Catch::Contains("16-byte aligned"));
}

TEST_CASE("sizes: one scratch intermediate per image with both passes", "[device_sim][resize]") {
  img::resample_request rq = simple_request();  // 40x30 -> 20x15, bilinear: rows 0..30 read
  std::vector<cu::resize_image> images{whole(rq)};
  const cu::resize_sizes both = cu::measure_resize(images);
  CHECK(both.scratch_bytes == 30 * 20 * 3 + 8);  // 30 rows of 20 pixels, 16-byte aligned
  rq.output.height = 30;  // horizontal only: straight into the target
  images[0] = whole(rq);
  CHECK(cu::measure_resize(images).scratch_bytes == 0);
  CHECK(cu::measure_resize({}).table_bytes == 0);
}

TEST_CASE("pieces planned apart and joined are pack_resize_table's table", "[device_sim][resize]") {
  // The GPU decode plans each image's piece on its decode thread with the
  // source offset relative to its region, and the upload thread joins
  // them at the regions' offsets: the same table, byte for byte.
  std::mt19937 rng(43);
  for (int i = 0; i < 100; ++i) {
    const resize_batch b = ringfeed::test::random_batch(rng);
    INFO("batch " << i << ": " << b.description);
    const cu::resize_sizes sizes = cu::measure_resize(b.images);
    aligned_bytes packed(sizes.table_bytes);
    cu::pack_resize_table(b.images, {packed.data(), packed.size()});

    std::vector<cu::resize_piece> pieces(b.images.size());
    std::vector<cu::placed_piece> placed;
    for (std::size_t k = 0; k < b.images.size(); ++k) {
      cu::resize_image relative = b.images[k];
      const std::size_t base = relative.src_offset / 2;  // the region's start, say
      relative.src_offset -= base;
      relative.dst_offset = 12345;  // not read: the join places the target
      cu::plan_resize_piece(relative, pieces[k]);
      placed.push_back({&pieces[k], base, b.images[k].dst_offset});
    }
    const cu::resize_sizes joined_sizes = cu::measure_pieces(placed);
    CHECK(joined_sizes.table_bytes == sizes.table_bytes);
    CHECK(joined_sizes.scratch_bytes == sizes.scratch_bytes);
    aligned_bytes joined(joined_sizes.table_bytes);
    cu::join_resize_table(placed, {joined.data(), joined.size()});
    REQUIRE(std::memcmp(joined.data(), packed.data(), sizes.table_bytes) == 0);
  }
  aligned_bytes small(16);
  const std::vector<cu::resize_image> one{whole(simple_request())};
  cu::resize_piece piece;
  cu::plan_resize_piece(one[0], piece);
  const cu::placed_piece placed[] = {{&piece, 0, 0}};
  CHECK_THROWS_WITH(cu::join_resize_table(placed, {small.data(), small.size()}),
                    Catch::Contains("smaller than measured"));
}
