// The device resize's host side: each image's plan (image::plan_resample,
// the CPU resampler's own bounds and coefficients) packed into the launch
// table of resize_arith.hpp, and the kernels' arithmetic run on the host.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include <ringfeed/image/resample_plan.hpp>

#include "device_resize.hpp"
#include "resize_arith.hpp"

namespace ringfeed::cuda {
namespace {

using resize_detail::resize_entry;

constexpr std::size_t align16(std::size_t n) { return (n + 15) & ~std::size_t{15}; }

// Bytes of one axis's block: k, lo and len.
std::size_t block_bytes(const image::resample_axis& a) {
  const auto count = static_cast<std::size_t>(a.count);
  return align16(sizeof(std::int32_t) * (count * static_cast<std::size_t>(a.ksize) + 2 * count));
}

[[noreturn]] void bad_image(const char* call, std::size_t i, const std::string& what) {
  throw std::invalid_argument(std::string(call) + ": image " + std::to_string(i) + ": " + what);
}

// Plans image i and checks that its decoded region holds what the plan
// reads. Returns the planned reads.
image::crop_box plan_image(const char* call, std::size_t i, const resize_image& im, image::resample_plan& plan) {
  try {
    image::plan_resample(im.request, plan);
  } catch (const std::invalid_argument& e) {
    bad_image(call, i, e.what());
  }
  const image::crop_box reads = image::planned_reads(plan);
  const auto& rq = im.request;
  if (im.src_pitch != 0 && im.src_pitch < static_cast<std::size_t>(im.src_width) * 3)
    bad_image(call, i, "src_pitch " + std::to_string(im.src_pitch) + " is less than 3 × the width " +
                           std::to_string(im.src_width));
  if (reads.left < rq.src_left || reads.right() > rq.src_left + im.src_width || reads.top < rq.src_top ||
      reads.bottom() > rq.src_top + im.src_height)
    bad_image(call, i,
              "the decoded region (columns " + std::to_string(rq.src_left) + ".." +
                  std::to_string(rq.src_left + im.src_width) + ", rows " + std::to_string(rq.src_top) + ".." +
                  std::to_string(rq.src_top + im.src_height) + ") lacks pixels the resize reads (columns " +
                  std::to_string(reads.left) + ".." + std::to_string(reads.right()) + ", rows " +
                  std::to_string(reads.top) + ".." + std::to_string(reads.bottom()) + ")");
  return reads;
}

bool both_passes(const image::resample_plan& p) { return p.need_horizontal && p.need_vertical; }

// Writes one axis's block at `at`.
void write_block(const image::resample_axis& a, std::byte* at) {
  const auto count = static_cast<std::size_t>(a.count);
  const std::size_t kn = count * static_cast<std::size_t>(a.ksize);
  std::memcpy(at, a.k.data(), kn * sizeof(std::int32_t));
  at += kn * sizeof(std::int32_t);
  std::memcpy(at, a.lo.data(), count * sizeof(std::int32_t));
  at += count * sizeof(std::int32_t);
  std::memcpy(at, a.len.data(), count * sizeof(std::int32_t));
}

}  // namespace

resize_sizes measure_resize(std::span<const resize_image> images) {
  resize_sizes s;
  s.table_bytes = align16(images.size() * sizeof(resize_entry));
  image::resample_plan plan;
  for (std::size_t i = 0; i < images.size(); ++i) {
    const image::crop_box reads = plan_image("cuda::measure_resize", i, images[i], plan);
    if (plan.need_horizontal) s.table_bytes += block_bytes(plan.horizontal);
    if (plan.need_vertical) s.table_bytes += block_bytes(plan.vertical);
    if (both_passes(plan))
      s.scratch_bytes +=
          align16(static_cast<std::size_t>(reads.height) * static_cast<std::size_t>(plan.window.width) * 3);
  }
  return s;
}

void pack_resize_table(std::span<const resize_image> images, std::span<std::byte> table) {
  static_assert(sizeof(resize_entry) % 16 == 0);
  if (reinterpret_cast<std::uintptr_t>(table.data()) % 16 != 0)
    throw std::invalid_argument("cuda::pack_resize_table: the table is not 16-byte aligned");
  std::size_t at = align16(images.size() * sizeof(resize_entry));
  std::size_t scratch = 0;
  if (table.size() < at) throw std::invalid_argument("cuda::pack_resize_table: the table is smaller than measured");
  image::resample_plan plan;
  for (std::size_t i = 0; i < images.size(); ++i) {
    const resize_image& im = images[i];
    const image::crop_box reads = plan_image("cuda::pack_resize_table", i, im, plan);
    const auto& rq = im.request;
    resize_entry e{};
    e.source_pitch = im.src_pitch != 0 ? static_cast<std::int64_t>(im.src_pitch)
                                       : static_cast<std::int64_t>(im.src_width) * 3;
    e.source = im.src_offset +
               static_cast<std::uint64_t>(reads.top - rq.src_top) * static_cast<std::uint64_t>(e.source_pitch) +
               static_cast<std::uint64_t>(reads.left - rq.src_left) * 3;
    e.target = im.dst_offset;
    e.width = plan.window.width;
    e.height = plan.window.height;
    e.h_rows = reads.height;
    e.flags = (plan.need_horizontal ? resize_detail::pass_horizontal : 0u) |
              (plan.need_vertical ? resize_detail::pass_vertical : 0u) | (im.flip ? resize_detail::mirror : 0u);
    // The blocks' lo relative to the first read column / row.
    const auto place = [&](image::resample_axis& a, int first_read, std::uint64_t& offset, std::int32_t& ksize) {
      const std::size_t bytes = block_bytes(a);
      if (table.size() - at < bytes)
        throw std::invalid_argument("cuda::pack_resize_table: the table is smaller than measured");
      for (int j = 0; j < a.count; ++j) a.lo[static_cast<std::size_t>(j)] -= first_read;
      write_block(a, table.data() + at);
      offset = at;
      ksize = a.ksize;
      at += bytes;
    };
    if (plan.need_horizontal) place(plan.horizontal, reads.left, e.h_block, e.h_ksize);
    if (plan.need_vertical) place(plan.vertical, reads.top, e.v_block, e.v_ksize);
    if (both_passes(plan)) {
      e.scratch = scratch;
      scratch += align16(static_cast<std::size_t>(reads.height) * static_cast<std::size_t>(e.width) * 3);
    }
    std::memcpy(table.data() + i * sizeof(resize_entry), &e, sizeof e);
  }
}

void resize_with_table(const resize_launch& k) {
  using namespace resize_detail;
  for (std::size_t i = 0; i < k.images; ++i) {
    const resize_entry& e = entry_at(k.table, i);
    if ((e.flags & pass_horizontal) != 0)
      for (int r = 0; r < e.h_rows; ++r)
        for (int x = 0; x < e.width; ++x) horizontal_pixel(e, k.table, k.source, k.target, k.scratch, x, r);
    if (vertical_writes(e))
      for (int y = 0; y < e.height; ++y)
        for (int x = 0; x < e.width; ++x) vertical_pixel(e, k.table, k.source, k.target, k.scratch, x, y);
  }
}

}  // namespace ringfeed::cuda
