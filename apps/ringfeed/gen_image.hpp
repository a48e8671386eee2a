// Synthetic photograph-like JPEGs for `ringfeed gen`.
//
// The point is a realistic *decoder workload*, not pretty pictures: sizes,
// qualities, chroma subsampling, progressive and grayscale files in roughly
// the mix an ImageNet tree has, and content whose spectrum falls off like a
// photograph's (smooth fields, objects with edges and texture, sensor noise)
// so the entropy-coded size per pixel is in ImageNet's range. Flat colours or
// white noise would compress far too well or far too badly.
//
// Everything is a pure function of a 64-bit seed. No libm transcendental and
// no std::*_distribution is used (both are implementation-defined), only
// IEEE +, -, *, / and sqrt, so the same seed gives the same bytes.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include <ringfeed/random.hpp>

namespace ringfeed::cli {

/// Draws for procedural content over ringfeed::splitmix64_rng (random.hpp):
/// good enough for pictures, and its output is fixed by definition.
class content_rng {
 public:
  explicit constexpr content_rng(std::uint64_t seed) noexcept : m_bits(seed) {}

  constexpr std::uint64_t next() noexcept { return m_bits.next(); }
  /// Uniform in [0, 1) with 24 bits of precision (exact in float).
  constexpr float uniform() noexcept { return static_cast<float>(next() >> 40) * 0x1.0p-24f; }
  constexpr float uniform(float lo, float hi) noexcept { return lo + (hi - lo) * uniform(); }
  /// Uniform integer in [lo, hi] (inclusive); the tiny modulo bias is irrelevant here.
  constexpr int between(int lo, int hi) noexcept {
    return lo + static_cast<int>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  constexpr bool chance(float p) noexcept { return uniform() < p; }

 private:
  splitmix64_rng m_bits;
};

/// Which photographs `ringfeed gen --photos` makes: ImageNet's mix (about
/// 0.2 megapixels, the default) or large 1-4 megapixel photos, the size of
/// phone, DSLR and OpenImages-class datasets.
enum class photo_mix { imagenet, large };
inline constexpr std::array<photo_mix, 2> photo_mixes = {photo_mix::imagenet, photo_mix::large};

/// "imagenet" or "large": the --photos value and the marker's "photos".
[[nodiscard]] std::string_view photo_mix_name(photo_mix mix) noexcept;

/// Derives an independent seed for item `index` of stream `stream` from the
/// user's seed, so each image depends only on (seed, stream, index) and not on
/// which thread made it or in what order.
std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) noexcept;

/// What one file will be. `subsamp` is a TJSAMP_* value; TJSAMP_GRAY means a
/// single-channel image.
struct image_spec {
  int width = 0;
  int height = 0;
  int quality = 90;
  int subsamp = 0;
  bool progressive = false;
  std::uint64_t content_seed = 0;
  /// The image's class (-1: none). Colour images of one class share a
  /// colour cast, so that a model can actually learn the classes (a weak,
  /// global cue, like a scene's lighting; the content is otherwise random).
  int class_index = -1;
  /// Pixels per unit of the finest texture (>= 1). 1 is ImageNet's look:
  /// grain down to single pixels. A large photo shows the same scene over
  /// more pixels, softened by the lens and demosaicing, so its finest
  /// detail spans a few pixels and it compresses to fewer bytes per pixel.
  float detail_pitch = 1.0f;

  [[nodiscard]] bool gray() const noexcept;
};

/// Draws a spec of the given mix.
///
/// imagenet: ~1% tiny (<100 px), ~2% large (1024+ px on the long side), the
/// rest 300-800 x 250-600 clustered at 500x375 / 375x500; quality 75-95;
/// 4:2:0 mostly, some 4:4:4 and 4:2:2; ~3% grayscale; ~5% progressive.
///
/// large: megapixels uniform in [1, 4] (mean 2.5), aspect 4:3 (50%), 3:2
/// (30%) or 16:9 (20%), landscape 70% / portrait 30%, even sides, the long
/// one 1160-2592 px (most 1600+); quality 85-95 (mostly 90 and 95); 4:2:0
/// 85%, 4:2:2 10%, 4:4:4 5%; ~8% progressive; no grayscale; finest texture
/// 1.5-2.5 px (see image_spec::detail_pitch): ~0.3 bytes per pixel at q90.
[[nodiscard]] image_spec draw_image_spec(std::uint64_t seed, photo_mix mix = photo_mix::imagenet) noexcept;

/// Renders the pixels of `spec` into `out` (RGB, or one channel when gray),
/// tightly packed, resizing `out` as needed.
void render_image(const image_spec& spec, std::vector<unsigned char>& out);

/// Renders and compresses specs with TurboJPEG, reusing its pixel and output
/// buffers between calls. Move-only; one per thread. The bytes depend only on
/// the spec, never on what was encoded before (see encode() in the .cpp).
class jpeg_encoder {
 public:
  jpeg_encoder();
  ~jpeg_encoder();
  jpeg_encoder(jpeg_encoder&&) noexcept;
  jpeg_encoder& operator=(jpeg_encoder&&) noexcept;

  /// Renders and compresses `spec`. The span stays valid until the next call.
  /// Throws std::runtime_error with TurboJPEG's message on failure.
  [[nodiscard]] std::span<const unsigned char> encode(const image_spec& spec);

 private:
  struct state;
  std::unique_ptr<state> m_state;
};

}  // namespace ringfeed::cli
