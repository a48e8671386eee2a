// Private: nVIDIA's nvJPEG behind jpeg_decoder (jpeg_decoder.hpp), through
// a library loaded at run time (nvjpeg_library.hpp). Built only in CUDA
// builds that found nvjpeg.h (CMake's RINGFEED_HAS_NVJPEG); its .cpp is the
// one file that includes nvjpeg.h. Routing: nvjpeg_route.hpp.
//
// Two backends on one nvJPEG handle:
//   hardware  the GPU's JPEG engines (NVJPEG_BACKEND_HARDWARE): prepare()
//             asks them (nvjpegDecodeBatchedSupportedEx) on the decode
//             thread; one nvjpegDecodeBatchedEx per decode(), a region per
//             image;
//   hybrid    the decoupled API with NVJPEG_BACKEND_HYBRID, a region per
//             image: the Huffman decode (nvjpegDecodeJpegHost) in
//             prepare(), on the decode thread, into the slot's own state
//             and pinned buffer; decode() queues the transfer and the
//             device stage on the stream.
// Memory: nvJPEG's device buffers come from a CUDA memory pool of the
// decoder's own (stream-ordered cudaMallocFromPoolAsync / cudaFreeAsync,
// ordered on the copy stream) that keeps what it once held; its pinned
// buffers (the engines' batched state's, one per batch slot that took a
// hybrid image) from a pinned_pool pinned when the decoder opens, a freed
// one handed out again once the copy stream passed it. nvJPEG reallocates
// only when an image needs more than a buffer holds, and even then nothing
// waits for the device: no cudaHostAlloc, cudaFreeHost or cudaFree in a
// run while the reserve lasts. Half of the memory budget each.
#pragma once

#include <cstddef>
#include <memory>

#include "jpeg_decoder.hpp"
#include "nvjpeg_library.hpp"

namespace ringfeed::cuda {

class device_api;

/// NVJPEG_VER_MAJOR of the nvjpeg.h this build compiled against: the
/// library's major version must be the same (load_nvjpeg's `major`).
extern const int nvjpeg_header_major;

/// nvJPEG's decoder for `device` (made current on the calling thread for
/// the call), its device and pinned buffers within `memory_budget` bytes
/// (0: no limit; half of it each), the pinned ones from `api` (which
/// outlives the decoder). Throws std::runtime_error with the reason when the
/// library cannot decode on this device. The decoder must be destroyed
/// after the work it queued is done (the stage synchronizes its stream).
[[nodiscard]] std::unique_ptr<jpeg_decoder> make_nvjpeg_decoder(std::shared_ptr<const nvjpeg_library> library,
                                                                device_api& api, int device, std::size_t memory_budget);

}  // namespace ringfeed::cuda
