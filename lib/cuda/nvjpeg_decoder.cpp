// nvJPEG's decoder (nvjpeg_decoder.hpp). Written against the nvJPEG
// documentation of CUDA 13.0 (docs.nvidia.com/cuda/nvjpeg) and nvjpeg.h
// 13.0.4 (the nvidia-nvjpeg wheel bootstrap.sh fetches); the calls and the
// documented behaviour each relies on are noted where they are made. It
// cannot run without a GPU: CI compiles it; perf/gpu_machine.sh runs it.
#include "nvjpeg_decoder.hpp"

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <ringfeed/cuda/uploader.hpp>

#include "cuda_check.hpp"
#include "nvjpeg_api.hpp"
#include "nvjpeg_route.hpp"

namespace ringfeed::cuda {

const int nvjpeg_header_major = NVJPEG_VER_MAJOR;

namespace {

std::string cuda_text(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

// The decoder's memory: nvJPEG calls these (nvjpegDevAllocatorV2_t,
// nvjpegPinnedAllocatorV2_t: return 0 on success, as cudaMalloc does) from
// the thread that calls it, with the stream of the call.
struct memory {
  cudaMemPool_t pool = nullptr;  // device memory, stream-ordered
  std::size_t budget = 0;        // 0: no limit
  std::atomic<std::size_t> bytes{0};
  std::atomic<int> last_error{cudaSuccess};  // the CUDA error behind an allocator failure

  bool take(std::size_t n) {
    // The decode thread allocates; a relaxed count is enough (it only
    // guards a limit, no memory is published through it).
    const std::size_t now = bytes.fetch_add(n, std::memory_order_relaxed) + n;
    if (budget == 0 || now <= budget) return true;
    bytes.fetch_sub(n, std::memory_order_relaxed);
    return false;
  }
  int fail(cudaError_t e) {
    (void)cudaGetLastError();  // not to resurface at an unrelated launch
    last_error.store(e, std::memory_order_relaxed);
    return 1;
  }

  static int device_malloc(void* ctx, void** p, std::size_t n, cudaStream_t s) {
    auto* m = static_cast<memory*>(ctx);
    if (!m->take(n)) return m->fail(cudaErrorMemoryAllocation);
    // Stream-ordered: no device synchronization; the pool keeps freed
    // memory (its release threshold is the budget), so a steady epoch
    // reuses it without asking the driver.
    if (const cudaError_t e = cudaMallocFromPoolAsync(p, n, m->pool, s); e != cudaSuccess) {
      m->bytes.fetch_sub(n, std::memory_order_relaxed);
      return m->fail(e);
    }
    return 0;
  }
  static int device_free(void* ctx, void* p, std::size_t n, cudaStream_t s) {
    auto* m = static_cast<memory*>(ctx);
    m->bytes.fetch_sub(n, std::memory_order_relaxed);
    const cudaError_t e = cudaFreeAsync(p, s);
    return e == cudaSuccess ? 0 : m->fail(e);
  }
  // Pinned buffers grow to the largest image's needs and stay (nvJPEG
  // "reallocates memory only if needed"); cudaFreeHost synchronizes, so it
  // runs only when a buffer grows and at the end.
  static int pinned_malloc(void* ctx, void** p, std::size_t n, cudaStream_t) {
    auto* m = static_cast<memory*>(ctx);
    if (!m->take(n)) return m->fail(cudaErrorMemoryAllocation);
    if (const cudaError_t e = cudaHostAlloc(p, n, cudaHostAllocDefault); e != cudaSuccess) {
      m->bytes.fetch_sub(n, std::memory_order_relaxed);
      return m->fail(e);
    }
    return 0;
  }
  static int pinned_free(void* ctx, void* p, std::size_t n, cudaStream_t) {
    auto* m = static_cast<memory*>(ctx);
    m->bytes.fetch_sub(n, std::memory_order_relaxed);
    const cudaError_t e = cudaFreeHost(p);
    return e == cudaSuccess ? 0 : m->fail(e);
  }
};

// A pinned buffer of the hybrid backend and the event after the last copy
// out of it (nvjpegDecodeJpegTransferToDevice reads it asynchronously).
struct pinned_slot {
  nvjpegBufferPinned_t buffer = nullptr;
  cudaEvent_t copied = nullptr;
  bool used = false;
};

class nvjpeg_decoder final : public jpeg_decoder {
 public:
  nvjpeg_decoder(std::shared_ptr<const nvjpeg_library> library, int device, std::size_t budget)
      : m_lib(std::move(library)), m_api(*m_lib), m_device(device) {
    try {
      open(budget);
    } catch (...) {
      close();
      throw;
    }
  }
  ~nvjpeg_decoder() override { close(); }
  nvjpeg_decoder(const nvjpeg_decoder&) = delete;
  nvjpeg_decoder& operator=(const nvjpeg_decoder&) = delete;

  std::string describe() const override {
    return m_lib->describe() + (m_hardware ? ", " + std::to_string(m_engines) + " hardware JPEG engines"
                                           : ", no hardware JPEG engine (hybrid backend only)");
  }
  int hardware_engines() const noexcept override { return m_engines; }
  jpeg_route route(const image::image_info& info) const noexcept override { return nvjpeg_route(info, m_hardware); }
  // nvjpegDecodeParamsSetROI: nvjpegDecodeBatchedEx (hardware) and the
  // decoupled API (hybrid) both take a region per image. The engines are
  // asked with the region (nvjpegDecodeBatchedSupportedEx), so an image
  // whose region they refuse is decoded, region and all, by the hybrid one.
  bool decodes_region(jpeg_backend b) const noexcept override { return b != jpeg_backend::cpu; }

  void decode(std::span<const jpeg_job> jobs, stream_t stream) override {
    const auto s = static_cast<cudaStream_t>(stream);
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess || current != m_device) cuda::check(cudaSetDevice(m_device), "cudaSetDevice");
    std::vector<const jpeg_job*> hardware, hybrid;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      validate(jobs[i], i);
      (jobs[i].backend == jpeg_backend::hardware && m_hardware ? hardware : hybrid).push_back(&jobs[i]);
    }
    if (!hardware.empty()) decode_hardware(hardware, hybrid, s);
    if (!hybrid.empty()) decode_hybrid(hybrid, s);
  }

 private:
  void open(std::size_t budget) {
    cuda::check(cudaSetDevice(m_device), "cudaSetDevice");
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = m_device;
    cuda::check(cudaMemPoolCreate(&m_memory.pool, &props), "cudaMemPoolCreate");
    std::uint64_t keep = budget != 0 ? budget : std::numeric_limits<std::uint64_t>::max();
    cuda::check(cudaMemPoolSetAttribute(m_memory.pool, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
    m_memory.budget = budget;
    m_device_allocator = {&memory::device_malloc, &memory::device_free, &m_memory};
    m_pinned_allocator = {&memory::pinned_malloc, &memory::pinned_free, &m_memory};

    // The hardware backend where the device has engines (nvjpegCreateExV2
    // fails with NVJPEG_STATUS_ARCH_MISMATCH / IMPLEMENTATION_NOT_SUPPORTED
    // elsewhere), else the default one; interpolated chroma upsampling
    // (NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION, nvJPEG 12.x and later)
    // where the library takes the flag: closer to libjpeg-turbo's "fancy"
    // upsampling than replication.
    nvjpegStatus_t st = NVJPEG_STATUS_NOT_INITIALIZED;
    for (nvjpegBackend_t backend : {NVJPEG_BACKEND_HARDWARE, NVJPEG_BACKEND_DEFAULT}) {
      for (unsigned flags : {unsigned{NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION}, unsigned{NVJPEG_FLAGS_DEFAULT}}) {
        st = m_api.create_ex_v2(backend, &m_device_allocator, &m_pinned_allocator, flags, &m_handle);
        if (st == NVJPEG_STATUS_SUCCESS) {
          m_hardware = backend == NVJPEG_BACKEND_HARDWARE;
          break;
        }
      }
      if (st == NVJPEG_STATUS_SUCCESS) break;
    }
    check(st, "nvjpegCreateExV2", nullptr);
    if (m_hardware) {
      unsigned engines = 0, cores = 0;
      if (m_api.get_hardware_decoder_info(m_handle, &engines, &cores) == NVJPEG_STATUS_SUCCESS) {
        m_engines = static_cast<int>(engines);
      }
      check(m_api.jpeg_state_create(m_handle, &m_hw_state), "nvjpegJpegStateCreate", nullptr);
    }
    check(m_api.jpeg_stream_create(m_handle, &m_probe), "nvjpegJpegStreamCreate", nullptr);
    check(m_api.jpeg_stream_create(m_handle, &m_hybrid_stream), "nvjpegJpegStreamCreate", nullptr);
    // The decoupled API's decoder on the same handle, whatever its backend
    // (as DALI's nvJPEG decoder does: one handle, hardware where possible,
    // with hybrid decoders created from it).
    check(m_api.decoder_create(m_handle, NVJPEG_BACKEND_HYBRID, &m_hybrid), "nvjpegDecoderCreate(NVJPEG_BACKEND_HYBRID)",
          nullptr);
    check(m_api.decoder_state_create(m_handle, m_hybrid, &m_hybrid_state), "nvjpegDecoderStateCreate", nullptr);
    check(m_api.buffer_device_create_v2(m_handle, &m_device_allocator, &m_device_buffer), "nvjpegBufferDeviceCreateV2",
          nullptr);
    check(m_api.state_attach_device_buffer(m_hybrid_state, m_device_buffer), "nvjpegStateAttachDeviceBuffer", nullptr);
    check(m_api.decode_params_create(m_handle, &m_hybrid_params), "nvjpegDecodeParamsCreate", nullptr);
    check(m_api.decode_params_set_output_format(m_hybrid_params, NVJPEG_OUTPUT_RGBI), "nvjpegDecodeParamsSetOutputFormat",
          nullptr);
  }

  // Frees everything, whatever open() got to; the work queued is done.
  void close() noexcept {
    for (pinned_slot& p : m_slots) {
      if (p.copied != nullptr) {
        (void)cudaEventSynchronize(p.copied);
        (void)cudaEventDestroy(p.copied);
      }
      if (p.buffer != nullptr) (void)m_api.buffer_pinned_destroy(p.buffer);
    }
    m_slots.clear();
    for (nvjpegDecodeParams_t p : m_hw_params) (void)m_api.decode_params_destroy(p);
    m_hw_params.clear();
    if (m_hybrid_params != nullptr) (void)m_api.decode_params_destroy(m_hybrid_params);
    if (m_hybrid_state != nullptr) (void)m_api.jpeg_state_destroy(m_hybrid_state);
    if (m_device_buffer != nullptr) (void)m_api.buffer_device_destroy(m_device_buffer);
    if (m_hybrid != nullptr) (void)m_api.decoder_destroy(m_hybrid);
    if (m_hybrid_stream != nullptr) (void)m_api.jpeg_stream_destroy(m_hybrid_stream);
    if (m_probe != nullptr) (void)m_api.jpeg_stream_destroy(m_probe);
    if (m_hw_state != nullptr) (void)m_api.jpeg_state_destroy(m_hw_state);
    if (m_handle != nullptr) (void)m_api.destroy(m_handle);
    // Outstanding stream-ordered frees complete first: the pool is released
    // once they have (cudaMemPoolDestroy's documented behaviour).
    if (m_memory.pool != nullptr) (void)cudaMemPoolDestroy(m_memory.pool);
    m_hybrid_params = nullptr;
    m_hybrid_state = nullptr;
    m_device_buffer = nullptr;
    m_hybrid = nullptr;
    m_hybrid_stream = m_probe = nullptr;
    m_hw_state = nullptr;
    m_handle = nullptr;
    m_memory.pool = nullptr;
  }

  static void validate(const jpeg_job& j, std::size_t i) {
    const auto& r = j.region;
    const bool ok = j.data != nullptr && j.size > 0 && j.out != nullptr && j.backend != jpeg_backend::cpu && !r.empty() &&
                    r.top >= 0 && r.left >= 0 && r.bottom() <= j.info.height && r.right() <= j.info.width &&
                    j.pitch >= static_cast<std::size_t>(r.width) * 3;
    if (!ok) throw jpeg_decode_error("nvJPEG decode: job " + std::to_string(i) + " is malformed (no data or output, a cpu "
                                     "route, or a region outside the image or wider than the pitch)");
  }

  // The job's output and region: interleaved RGB (NVJPEG_OUTPUT_RGBI writes
  // channel[0] with pitch[0]); a region covering the image decodes it whole
  // (nvjpegDecodeParamsSetROI's documented (0, 0, -1, -1)).
  void set_region(nvjpegDecodeParams_t p, const jpeg_job& j, cudaStream_t s) const {
    const auto& r = j.region;
    const bool whole = r.top == 0 && r.left == 0 && r.width == j.info.width && r.height == j.info.height;
    check(whole ? m_api.decode_params_set_roi(p, 0, 0, -1, -1)
                : m_api.decode_params_set_roi(p, r.left, r.top, r.width, r.height),
          "nvjpegDecodeParamsSetROI", s);
  }
  static nvjpegImage_t destination(const jpeg_job& j) {
    nvjpegImage_t d{};
    d.channel[0] = j.out;
    d.pitch[0] = j.pitch;
    return d;
  }

  // One nvjpegDecodeBatchedEx for every job the engines support: each
  // header parsed (nvjpegJpegStreamParseHeader, host only) and asked
  // (nvjpegDecodeBatchedSupportedEx: 0 means supported) with its region;
  // the others join the hybrid list.
  void decode_hardware(const std::vector<const jpeg_job*>& jobs, std::vector<const jpeg_job*>& hybrid, cudaStream_t s) {
    m_data.clear();
    m_sizes.clear();
    m_out.clear();
    while (m_hw_params.size() < jobs.size()) {
      nvjpegDecodeParams_t p = nullptr;
      check(m_api.decode_params_create(m_handle, &p), "nvjpegDecodeParamsCreate", s);
      m_hw_params.push_back(p);
      check(m_api.decode_params_set_output_format(p, NVJPEG_OUTPUT_RGBI), "nvjpegDecodeParamsSetOutputFormat", s);
    }
    for (const jpeg_job* j : jobs) {
      nvjpegDecodeParams_t p = m_hw_params[m_data.size()];
      set_region(p, *j, s);
      check(m_api.jpeg_stream_parse_header(m_handle, j->data, j->size, m_probe), "nvjpegJpegStreamParseHeader", s);
      int unsupported = 1;
      check(m_api.decode_batched_supported_ex(m_handle, m_probe, p, &unsupported), "nvjpegDecodeBatchedSupportedEx", s);
      if (unsupported != 0) {
        hybrid.push_back(j);
        continue;
      }
      m_data.push_back(j->data);
      m_sizes.push_back(j->size);
      m_out.push_back(destination(*j));
    }
    if (m_data.empty()) return;
    // "Should be called once for decoding batches of this specific size,
    // also use to reset failed batches" (nvjpeg.h): every call, as the
    // size varies; one CPU thread (the caller's).
    check(m_api.decode_batched_initialize(m_handle, m_hw_state, static_cast<int>(m_data.size()), 1, NVJPEG_OUTPUT_RGBI),
          "nvjpegDecodeBatchedInitialize", s);
    check(m_api.decode_batched_ex(m_handle, m_hw_state, m_data.data(), m_sizes.data(), m_out.data(), m_hw_params.data(), s),
          "nvjpegDecodeBatchedEx", s);
  }

  // The decoupled API, image by image: nvjpegJpegStreamParse,
  // nvjpegDecodeJpegHost (Huffman on this thread, into the pinned buffer
  // attached to the state), nvjpegDecodeJpegTransferToDevice (an async copy
  // out of that buffer on `s`) and nvjpegDecodeJpegDevice (on `s`). The
  // state and device buffer are reused in stream order; each image gets a
  // pinned buffer of a ring at least twice the call's size, reused once the
  // event after its copy has passed, so the host waits only when the device
  // is a whole call behind (as DALI's nvJPEG decoder does per image).
  void decode_hybrid(const std::vector<const jpeg_job*>& jobs, cudaStream_t s) {
    while (m_slots.size() < 2 * jobs.size()) {
      pinned_slot slot;
      check(m_api.buffer_pinned_create_v2(m_handle, &m_pinned_allocator, &slot.buffer), "nvjpegBufferPinnedCreateV2", s);
      if (const cudaError_t e = cudaEventCreateWithFlags(&slot.copied, cudaEventDisableTiming); e != cudaSuccess) {
        (void)m_api.buffer_pinned_destroy(slot.buffer);
        cuda::check(e, "cudaEventCreateWithFlags");
      }
      m_slots.push_back(slot);
    }
    for (const jpeg_job* j : jobs) {
      pinned_slot& slot = m_slots[m_next_slot];
      m_next_slot = (m_next_slot + 1) % m_slots.size();
      if (slot.used && cudaEventQuery(slot.copied) == cudaErrorNotReady) {
        cuda::check(cudaEventSynchronize(slot.copied), "cudaEventSynchronize");
      }
      check(m_api.state_attach_pinned_buffer(m_hybrid_state, slot.buffer), "nvjpegStateAttachPinnedBuffer", s);
      set_region(m_hybrid_params, *j, s);
      check(m_api.jpeg_stream_parse(m_handle, j->data, j->size, 0, 0, m_hybrid_stream), "nvjpegJpegStreamParse", s);
      check(m_api.decode_jpeg_host(m_handle, m_hybrid, m_hybrid_state, m_hybrid_params, m_hybrid_stream),
            "nvjpegDecodeJpegHost", s);
      check(m_api.decode_jpeg_transfer_to_device(m_handle, m_hybrid, m_hybrid_state, m_hybrid_stream, s),
            "nvjpegDecodeJpegTransferToDevice", s);
      cuda::check(cudaEventRecord(slot.copied, s), "cudaEventRecord");
      slot.used = true;
      nvjpegImage_t out = destination(*j);
      check(m_api.decode_jpeg_device(m_handle, m_hybrid, m_hybrid_state, &out, s), "nvjpegDecodeJpegDevice", s);
    }
  }

  // An nvJPEG status: a lost context behind it (the runtime's last error,
  // the allocator's, or the stream's state: cudaStreamQuery does not wait)
  // is a sticky cuda_error; anything else refuses the batch.
  void check(nvjpegStatus_t st, const char* call, cudaStream_t s) const {
    if (st == NVJPEG_STATUS_SUCCESS) return;
    auto lost = [](cudaError_t e) { return is_sticky(e) ? e : cudaSuccess; };
    cudaError_t e = lost(cudaGetLastError());
    if (e == cudaSuccess) e = lost(static_cast<cudaError_t>(m_memory.last_error.exchange(cudaSuccess)));
    if (e == cudaSuccess && s != nullptr) e = lost(cudaStreamQuery(s));
    const std::string what = std::string(call) + ": " + nvjpeg_status_name(st) + " (" + m_lib->describe() + ")";
    if (e != cudaSuccess) throw cuda_error(static_cast<int>(e), what + " after " + cuda_text(e), true);
    throw jpeg_decode_error(what);
  }

  std::shared_ptr<const nvjpeg_library> m_lib;
  nvjpeg_api m_api;
  int m_device;
  mutable memory m_memory;  // outlives every nvJPEG object (close() frees them first)
  nvjpegDevAllocatorV2_t m_device_allocator{};
  nvjpegPinnedAllocatorV2_t m_pinned_allocator{};
  nvjpegHandle_t m_handle = nullptr;
  bool m_hardware = false;
  int m_engines = 0;

  // hardware: the batched state, a parsed header for the support check,
  // decode parameters per image (grow-only) and the call's arrays.
  nvjpegJpegState_t m_hw_state = nullptr;
  nvjpegJpegStream_t m_probe = nullptr;
  std::vector<nvjpegDecodeParams_t> m_hw_params;
  std::vector<const unsigned char*> m_data;
  std::vector<std::size_t> m_sizes;
  std::vector<nvjpegImage_t> m_out;

  // hybrid: the decoder, its state and device buffer, the parsed stream,
  // the parameters, and the ring of pinned buffers.
  nvjpegJpegDecoder_t m_hybrid = nullptr;
  nvjpegJpegState_t m_hybrid_state = nullptr;
  nvjpegBufferDevice_t m_device_buffer = nullptr;
  nvjpegJpegStream_t m_hybrid_stream = nullptr;
  nvjpegDecodeParams_t m_hybrid_params = nullptr;
  std::vector<pinned_slot> m_slots;
  std::size_t m_next_slot = 0;
};

}  // namespace

std::unique_ptr<jpeg_decoder> make_nvjpeg_decoder(std::shared_ptr<const nvjpeg_library> library, int device,
                                                  std::size_t memory_budget) {
  return std::make_unique<nvjpeg_decoder>(std::move(library), device, memory_budget);
}

}  // namespace ringfeed::cuda
