// The device resize's kernels (device_resize.hpp): one launch of each pass
// for a whole batch. blockIdx.y is the image (its table entry); the blocks
// of one image stride over its output rows and a block's threads over a
// row's pixels, one thread a pixel (no division per pixel), so images of
// any sizes share a grid and consecutive threads write consecutive pixels.
// The arithmetic is resize_arith.hpp's, the same code resize_with_table
// runs on the host. Both kernels are queued on the caller's stream,
// horizontal then vertical; nothing waits on the host.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>

#include "cuda_check.hpp"
#include "device_resize.hpp"
#include "resize_arith.hpp"

namespace ringfeed::cuda {
namespace {

using namespace resize_detail;

// fn(x, y) for the width × rows pixels of the block row's image: blocks
// stride over rows, threads over columns.
template <class Fn>
__device__ __forceinline__ void for_each_pixel(int width, int rows, Fn&& fn) {
  for (int y = static_cast<int>(blockIdx.x); y < rows; y += static_cast<int>(gridDim.x))
    for (int x = static_cast<int>(threadIdx.x); x < width; x += static_cast<int>(blockDim.x)) fn(x, y);
}

__global__ void resize_horizontal(const std::byte* __restrict__ table, std::size_t first_image,
                                  const std::uint8_t* __restrict__ source, std::uint8_t* __restrict__ target,
                                  std::uint8_t* __restrict__ scratch) {
  const resize_entry e = entry_at(table, first_image + blockIdx.y);
  if ((e.flags & pass_horizontal) == 0) return;
  for_each_pixel(e.width, e.h_rows, [&](int x, int r) { horizontal_pixel(e, table, source, target, scratch, x, r); });
}

__global__ void resize_vertical(const std::byte* __restrict__ table, std::size_t first_image,
                                const std::uint8_t* __restrict__ source, std::uint8_t* __restrict__ target,
                                const std::uint8_t* __restrict__ scratch) {
  const resize_entry e = entry_at(table, first_image + blockIdx.y);
  if (!vertical_writes(e)) return;
  for_each_pixel(e.width, e.height, [&](int x, int y) { vertical_pixel(e, table, source, target, scratch, x, y); });
}

constexpr unsigned threads_per_block = 128;  // a row of a 224-pixel output: two passes of a block
constexpr std::size_t max_grid_y = 65535;  // CUDA's limit on gridDim.y: larger batches launch in parts

// Blocks (rows at a time) per image: up to 256, fewer as the batch grows
// (about 16k blocks a launch); each strides over the rest of the rows.
unsigned blocks_per_image(std::size_t images) {
  return static_cast<unsigned>(std::clamp<std::size_t>(16384 / images, 8, 256));
}

}  // namespace

void launch_resize_kernels(const resize_launch& k, stream_t s) {
  const auto stream = reinterpret_cast<cudaStream_t>(s);
  for (std::size_t first = 0; first < k.images; first += max_grid_y) {
    const std::size_t n = std::min(k.images - first, max_grid_y);
    const dim3 grid(blocks_per_image(n), static_cast<unsigned>(n));
    (void)cudaGetLastError();  // report this launch's error, not an earlier one
    resize_horizontal<<<grid, threads_per_block, 0, stream>>>(k.table, first, k.source, k.target, k.scratch);
    check(cudaGetLastError(), "cuda::launch_resize_kernels: resize_horizontal launch");
    resize_vertical<<<grid, threads_per_block, 0, stream>>>(k.table, first, k.source, k.target, k.scratch);
    check(cudaGetLastError(), "cuda::launch_resize_kernels: resize_vertical launch");
  }
}

}  // namespace ringfeed::cuda
