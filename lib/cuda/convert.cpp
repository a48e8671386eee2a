// cuda::convert_batch_cpu — the no-device conversion and the kernel's
// reference; built with and without CUDA.
#include <cstring>
#include <stdexcept>

#include <ringfeed/cuda/uploader.hpp>

#include "device_api.hpp"

namespace ringfeed::cuda {
namespace {

template <class T>
void to_planes(const std::uint8_t* src, std::size_t n, std::size_t pixels, const image::normalize_table_t& table,
               T* out) {
  for (std::size_t img = 0; img < n; ++img) {
    const std::uint8_t* in = src + img * pixels * 3;
    T* r = out + img * pixels * 3;
    T* g = r + pixels;
    T* b = g + pixels;
    for (std::size_t p = 0; p < pixels; ++p) {
      if constexpr (sizeof(T) == 4) {
        std::memcpy(&r[p], &table[0][in[3 * p + 0]], 4);
        std::memcpy(&g[p], &table[1][in[3 * p + 1]], 4);
        std::memcpy(&b[p], &table[2][in[3 * p + 2]], 4);
      } else {
        r[p] = static_cast<T>(table[0][in[3 * p + 0]]);
        g[p] = static_cast<T>(table[1][in[3 * p + 1]]);
        b[p] = static_cast<T>(table[2][in[3 * p + 2]]);
      }
    }
  }
}

}  // namespace

void convert_with_table(const convert_launch& k, const image::normalize_table_t& table) {
  if (k.dtype == dtype::float32)
    to_planes(k.in, k.images, k.pixels, table, static_cast<float*>(k.out));
  else
    to_planes(k.in, k.images, k.pixels, table, static_cast<std::uint16_t*>(k.out));
}

void convert_batch_cpu(const std::uint8_t* src, std::size_t n, int h, int w, output_spec spec,
                       const image::normalize_params* norm, void* dst) {
  if (h <= 0 || w <= 0) throw std::invalid_argument("convert_batch_cpu: empty image size");
  spec.check();
  if (spec == output_spec::uint8_nchw())
    throw std::invalid_argument("convert_batch_cpu: uint8 NCHW is PILToTensor's output (a transform list's), "
                                "not a conversion of RGB bytes");
  const std::size_t pixels = static_cast<std::size_t>(h) * static_cast<std::size_t>(w);
  switch (spec.dtype) {
    case dtype::uint8:
      std::memcpy(dst, src, n * pixels * 3);
      return;
    case dtype::float32:
      to_planes(src, n, pixels, image::normalize_table(spec.dtype, norm), static_cast<float*>(dst));
      return;
    case dtype::float16:
      to_planes(src, n, pixels, image::normalize_table(spec.dtype, norm), static_cast<std::uint16_t*>(dst));
      return;
  }
}

}  // namespace ringfeed::cuda
