// Private: the seam between the GPU decode stage (decode_stage.hpp) and a
// JPEG decoder on the device, with two implementations:
//   nvjpeg_decoder.cpp  nVIDIA's nvJPEG, loaded at run time (nvjpeg_library.hpp):
//                       the hardware engines (NVJPEG_BACKEND_HARDWARE, batched)
//                       and the hybrid / GPU-hybrid decoupled API;
//   tests/support/sim_jpeg_decoder.*  a simulated decoder for the simulated
//                       device: libjpeg-turbo on the stream's thread, with
//                       failures injectable.
// The stage asks the decoder where each image goes (route(), from the parsed
// header); the decode thread that read the image then runs its host side
// (prepare(): the hybrid backend's Huffman decode, and the hardware
// backend's support check, which may move it to hybrid) with the host work
// of its batch slot, and the upload thread queues one decode() per batch on
// its stream: the device side only. Images routed to jpeg_backend::cpu
// never reach the decoder (the loader's CPU pipeline decodes them into the
// batch as before).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <ringfeed/cuda/stream.hpp>
#include <ringfeed/image/decode.hpp>
#include <ringfeed/image/image.hpp>

namespace ringfeed::cuda {

class device_api;

/// Where one image is decoded.
enum class jpeg_backend : std::uint8_t {
  cpu,       ///< libjpeg-turbo on a decode thread, uploaded with the batch
  hardware,  ///< the GPU's hardware JPEG engines (baseline, batched)
  hybrid,    ///< nvJPEG's hybrid / GPU-hybrid decoupled decode (CUDA cores)
};

/// "cpu", "hardware", "hybrid".
[[nodiscard]] std::string_view backend_name(jpeg_backend b) noexcept;

/// A route and, for the CPU, why (stats() counts the reasons).
struct jpeg_route {
  jpeg_backend backend = jpeg_backend::cpu;
  /// Why not a GPU backend ("progressive", "4 components", "arithmetic
  /// coding", ...); empty for a GPU backend.
  std::string_view why_cpu;
};

/// The host side of one image's decode, the decoder's own (nvJPEG: a
/// decoder state, the pinned buffer the Huffman decode writes, the parsed
/// stream, the decode parameters). One per batch slot, made once and
/// reused: prepare() rewrites its pinned memory, so a slot's work is
/// prepared again only once the copy decode() queued out of it is done
/// (the loader's slab protocol: a slab comes back once its copy stream has
/// passed its batch). No synchronization is needed for that.
class jpeg_host_work {
 public:
  virtual ~jpeg_host_work() = default;
};

/// One image of a decode() call.
struct jpeg_job {
  const std::uint8_t* data = nullptr;  ///< the whole file, host memory, valid until the stream passes the decode
  std::size_t size = 0;
  image::image_info info;              ///< its parsed header (stored size, components, subsampling...)
  /// The region of the stored image to decode. The decoder writes exactly
  /// this rectangle: when its backend cannot decode a region
  /// (decodes_region() false) the stage asks for the whole image.
  image::crop_box region;
  std::uint8_t* out = nullptr;  ///< device memory: region.width × region.height × 3, RGB interleaved
  std::size_t pitch = 0;        ///< bytes between rows of `out` (≥ region.width × 3)
  jpeg_backend backend = jpeg_backend::hardware;  ///< never cpu
  std::string_view name;  ///< the file's name, for the decoder's messages
  /// The slot's host work (make_host_work), prepared or not (decode() then
  /// runs the host side itself, on the calling thread). Required.
  jpeg_host_work* work = nullptr;
};

/// decode() failed for the batch (a bitstream the decoder refused, an
/// out-of-memory in its buffers): no image of the call was written. Not a
/// lost device: that is a cuda_error with sticky() set. The stage decodes
/// the call's images on the CPU instead.
class jpeg_decode_error : public std::runtime_error {
 public:
  /// `what` names the file where one is known; `reason` is what stats()
  /// counts the refusal under ("nvjpegDecodeJpegHost:
  /// NVJPEG_STATUS_JPEG_NOT_SUPPORTED"; empty: `what`).
  explicit jpeg_decode_error(const std::string& what, std::string reason = {})
      : std::runtime_error(what), m_reason(reason.empty() ? what : std::move(reason)) {}
  [[nodiscard]] const std::string& reason() const noexcept { return m_reason; }

 private:
  std::string m_reason;
};

class jpeg_decoder {
 public:
  virtual ~jpeg_decoder() = default;

  /// What it is, for stats(): "nvJPEG 13.0 (/usr/local/cuda/lib64/libnvjpeg.so.13)".
  [[nodiscard]] virtual std::string describe() const = 0;
  /// Hardware JPEG engines the device reports (0: none, or the library
  /// cannot say).
  [[nodiscard]] virtual int hardware_engines() const noexcept = 0;
  /// Where an image with header `info` goes. Pure; any thread.
  [[nodiscard]] virtual jpeg_route route(const image::image_info& info) const noexcept = 0;
  /// Whether `b` decodes a region (else the stage asks for whole images).
  [[nodiscard]] virtual bool decodes_region(jpeg_backend b) const noexcept = 0;
  /// A slot's host work. Any thread (the device the decoder's).
  [[nodiscard]] virtual std::unique_ptr<jpeg_host_work> make_host_work() = 0;
  /// Decode threads, before the batch's decode(): the host side of `job`
  /// into job.work (job.out is not read): the hardware backend's support
  /// check and, for the hybrid backend, the Huffman decode. Returns the
  /// backend that will decode it (nvJPEG moves an image the engines refuse
  /// to hybrid); a backend with other decodes_region() than job.backend's
  /// means the caller must plan the region again and prepare once more
  /// with that backend. Concurrent calls with different works. Throws
  /// jpeg_decode_error (the CPU decodes it) or cuda_error (sticky).
  [[nodiscard]] virtual jpeg_backend prepare(const jpeg_job& job) = 0;
  /// Queues the device side of `jobs` on `s`. A job whose work was not
  /// prepared gets its host side here, on the calling thread (nvJPEG: on
  /// the hybrid backend, which needs no support check); a job
  /// queued by an earlier call since its work's prepare() (the stage's
  /// retry after a refused call) is not queued again. Returns without
  /// waiting for the device. One thread at a time. Throws jpeg_decode_error
  /// (the call was refused: its jobs not yet queued are not) or cuda_error
  /// (sticky: the device is lost).
  virtual void decode(std::span<const jpeg_job> jobs, stream_t s) = 0;
  /// The stream decode() was given is done and may be destroyed: what the
  /// decoder frees from now on (the slots' works, at the stage's end) it
  /// frees at once, queueing nothing there.
  virtual void stream_done() noexcept {}
};

/// What opening a decoder found.
struct jpeg_decoder_choice {
  std::unique_ptr<jpeg_decoder> decoder;  ///< null: none, see why_not
  std::string why_not;                    ///< e.g. "nvJPEG not found (looked in ...)"
};

/// The decoder for `device` through `api`: a test's factory when one is
/// installed, else nvJPEG's when its library is found and the device
/// supports it. Never throws: failures come back as why_not.
[[nodiscard]] jpeg_decoder_choice open_jpeg_decoder(device_api& api, int device, std::size_t memory_budget);

/// Tests: replaces open_jpeg_decoder's choice (empty function: back to nvJPEG).
using jpeg_decoder_factory = std::function<jpeg_decoder_choice(device_api& api, int device, std::size_t memory_budget)>;
void install_jpeg_decoder_factory(jpeg_decoder_factory factory);

}  // namespace ringfeed::cuda
