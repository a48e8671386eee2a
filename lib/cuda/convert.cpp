// cuda::convert_batch_cpu — the no-device conversion and the kernel's
// reference; built with and without CUDA.
#include <cstring>
#include <stdexcept>

#include <ringfeed/cuda/uploader.hpp>

#include "device_api.hpp"

namespace ringfeed::cuda {
namespace {

// Element c of pixel p of an image at out[c * pixels + p] (NCHW planes) or
// out[3 * p + c] (NHWC): T's bits from the table (the low half for 16-bit
// types), the kernel's arithmetic.
template <class T>
void convert(const std::uint8_t* src, std::size_t n, std::size_t pixels, const image::normalize_table_t& table,
             layout l, T* out) {
  for (std::size_t img = 0; img < n; ++img) {
    const std::uint8_t* in = src + img * pixels * 3;
    T* o = out + img * pixels * 3;
    for (std::size_t p = 0; p < pixels; ++p) {
      for (std::size_t c = 0; c < 3; ++c) {
        const std::uint32_t bits = table[c][in[3 * p + c]];
        T& dst = l == layout::nchw ? o[c * pixels + p] : o[3 * p + c];
        if constexpr (sizeof(T) == 4)
          std::memcpy(&dst, &bits, 4);
        else
          dst = static_cast<T>(bits);
      }
    }
  }
}

}  // namespace

void convert_with_table(const convert_launch& k, const image::normalize_table_t& table) {
  if (k.dtype == dtype::float32)
    convert(k.in, k.images, k.pixels, table, k.layout, static_cast<float*>(k.out));
  else
    convert(k.in, k.images, k.pixels, table, k.layout, static_cast<std::uint16_t*>(k.out));
}

void convert_batch_cpu(const std::uint8_t* src, std::size_t n, int h, int w, output_spec spec,
                       const image::normalize_params* norm, void* dst) {
  if (h <= 0 || w <= 0) throw std::invalid_argument("convert_batch_cpu: empty image size");
  spec.check();
  if (spec == output_spec::uint8_nchw())
    throw std::invalid_argument("convert_batch_cpu: uint8 NCHW is PILToTensor's output (a transform list's), "
                                "not a conversion of RGB bytes");
  const std::size_t pixels = static_cast<std::size_t>(h) * static_cast<std::size_t>(w);
  if (spec.dtype == dtype::uint8) {
    std::memcpy(dst, src, n * pixels * 3);
    return;
  }
  const image::normalize_table_t table = image::normalize_table(spec.dtype, norm);
  if (spec.dtype == dtype::float32)
    convert(src, n, pixels, table, spec.layout, static_cast<float*>(dst));
  else
    convert(src, n, pixels, table, spec.layout, static_cast<std::uint16_t*>(dst));
}

}  // namespace ringfeed::cuda
