// The device resize's host side: each image's plan (image::plan_resample,
// the CPU resampler's own bounds and coefficients) packed into a piece,
// pieces joined into the launch table of resize_arith.hpp, and the
// kernels' arithmetic run on the host.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

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

// plan_resize_piece, its errors naming `call` and image i. The piece's
// entry: source from im.src_offset, target and scratch 0, the blocks'
// offsets from the piece's start.
void plan_piece(const char* call, std::size_t i, const resize_image& im, resize_piece& piece) {
  thread_local image::resample_plan plan;  // its vectors reused
  const image::crop_box reads = plan_image(call, i, im, plan);
  const auto& rq = im.request;
  resize_entry e{};
  e.source_pitch =
      im.src_pitch != 0 ? static_cast<std::int64_t>(im.src_pitch) : static_cast<std::int64_t>(im.src_width) * 3;
  e.source = im.src_offset +
             static_cast<std::uint64_t>(reads.top - rq.src_top) * static_cast<std::uint64_t>(e.source_pitch) +
             static_cast<std::uint64_t>(reads.left - rq.src_left) * 3;
  e.width = plan.window.width;
  e.height = plan.window.height;
  e.h_rows = reads.height;
  e.flags = (plan.need_horizontal ? resize_detail::pass_horizontal : 0u) |
            (plan.need_vertical ? resize_detail::pass_vertical : 0u) | (im.flip ? resize_detail::mirror : 0u);
  std::size_t bytes = sizeof e;
  if (plan.need_horizontal) bytes += block_bytes(plan.horizontal);
  if (plan.need_vertical) bytes += block_bytes(plan.vertical);
  piece.bytes.resize(bytes);
  std::size_t at = sizeof e;
  // The blocks' lo relative to the first read column / row.
  const auto place = [&](image::resample_axis& a, int first_read, std::uint64_t& offset, std::int32_t& ksize) {
    for (int j = 0; j < a.count; ++j) a.lo[static_cast<std::size_t>(j)] -= first_read;
    write_block(a, piece.bytes.data() + at);
    offset = at;
    ksize = a.ksize;
    at += block_bytes(a);
  };
  if (plan.need_horizontal) place(plan.horizontal, reads.left, e.h_block, e.h_ksize);
  if (plan.need_vertical) place(plan.vertical, reads.top, e.v_block, e.v_ksize);
  piece.scratch_bytes =
      both_passes(plan) ? align16(static_cast<std::size_t>(reads.height) * static_cast<std::size_t>(e.width) * 3) : 0;
  std::memcpy(piece.bytes.data(), &e, sizeof e);
}

// The pieces of `images`, each planned (errors naming `call`), placed at
// the images' offsets.
std::vector<placed_piece> pieces_of(const char* call, std::span<const resize_image> images,
                                    std::vector<resize_piece>& pieces) {
  pieces.resize(images.size());
  std::vector<placed_piece> placed(images.size());
  for (std::size_t i = 0; i < images.size(); ++i) {
    plan_piece(call, i, images[i], pieces[i]);
    placed[i] = {&pieces[i], 0, images[i].dst_offset};  // the piece holds src_offset
  }
  return placed;
}

}  // namespace

void plan_resize_piece(const resize_image& im, resize_piece& piece) {
  plan_piece("cuda::plan_resize_piece", 0, im, piece);
}

resize_sizes measure_pieces(std::span<const placed_piece> pieces) noexcept {
  resize_sizes s;
  s.table_bytes = align16(pieces.size() * sizeof(resize_entry));
  for (const placed_piece& p : pieces) {
    s.table_bytes += p.piece->bytes.size() - sizeof(resize_entry);
    s.scratch_bytes += p.piece->scratch_bytes;
  }
  return s;
}

void join_resize_table(std::span<const placed_piece> pieces, std::span<std::byte> table) {
  static_assert(sizeof(resize_entry) % 16 == 0);
  if (reinterpret_cast<std::uintptr_t>(table.data()) % 16 != 0)
    throw std::invalid_argument("cuda::join_resize_table: the table is not 16-byte aligned");
  if (table.size() < measure_pieces(pieces).table_bytes)
    throw std::invalid_argument("cuda::join_resize_table: the table is smaller than measured");
  std::size_t at = align16(pieces.size() * sizeof(resize_entry));
  std::size_t scratch = 0;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const resize_piece& piece = *pieces[i].piece;
    resize_entry e;
    std::memcpy(&e, piece.bytes.data(), sizeof e);
    // The blocks move from the piece's offsets to the table's.
    const std::size_t blocks = piece.bytes.size() - sizeof e;
    std::memcpy(table.data() + at, piece.bytes.data() + sizeof e, blocks);
    if ((e.flags & resize_detail::pass_horizontal) != 0) e.h_block += at - sizeof e;
    if ((e.flags & resize_detail::pass_vertical) != 0) e.v_block += at - sizeof e;
    at += blocks;
    e.source += pieces[i].src_offset;
    e.target = pieces[i].dst_offset;
    if (piece.scratch_bytes != 0) {
      e.scratch = scratch;
      scratch += piece.scratch_bytes;
    }
    std::memcpy(table.data() + i * sizeof e, &e, sizeof e);
  }
}

resize_sizes measure_resize(std::span<const resize_image> images) {
  std::vector<resize_piece> pieces;
  return measure_pieces(pieces_of("cuda::measure_resize", images, pieces));
}

void pack_resize_table(std::span<const resize_image> images, std::span<std::byte> table) {
  if (reinterpret_cast<std::uintptr_t>(table.data()) % 16 != 0)
    throw std::invalid_argument("cuda::pack_resize_table: the table is not 16-byte aligned");
  std::vector<resize_piece> pieces;
  const std::vector<placed_piece> placed = pieces_of("cuda::pack_resize_table", images, pieces);
  if (table.size() < measure_pieces(placed).table_bytes)
    throw std::invalid_argument("cuda::pack_resize_table: the table is smaller than measured");
  join_resize_table(placed, table);
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
