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
#include "device_api.hpp"
#include "nvjpeg_api.hpp"
#include "nvjpeg_route.hpp"
#include "pinned_pool.hpp"

namespace ringfeed::cuda {

const int nvjpeg_header_major = NVJPEG_VER_MAJOR;

namespace {

std::string cuda_text(cudaError_t e) { return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e); }

// Pinned memory the decoder pins when it opens (within half the budget):
// the engines' state stages a batch's files (a few MiB at ImageNet sizes),
// each slot that took a hybrid image keeps its Huffman output (about 3
// bytes a pixel for 4:2:0).
constexpr std::size_t pinned_reserve = std::size_t{128} << 20;

// The decoder's memory: nvJPEG calls these (nvjpegDevAllocatorV2_t,
// nvjpegPinnedAllocatorV2_t: return 0 on success, as cudaMalloc does) from
// the thread that calls it (decode threads and the upload thread at once:
// nvJPEG leaves user allocators' thread safety to the user), with a stream
// of its choosing. Every device work of the decoder is queued on one
// stream, the uploader's copy stream (decode()): once decode() has seen it
// (`order`), allocations and frees are ordered on it, whatever stream
// nvJPEG passes (a call without a stream of its own, nvjpegDecodeJpegHost
// or nvjpegDecodeBatchedInitialize, cannot pass the one its memory was
// used on). Before, and after stream_done(), nothing of the decoder's is
// queued anywhere (and the stream nvJPEG passes may be the destroyed copy
// stream): the default stream then, and pinned memory freed at once.
struct memory {
  cudaMemPool_t pool = nullptr;  // device memory, stream-ordered
  std::size_t device_budget = 0;  // 0: no limit
  std::atomic<std::size_t> device_bytes{0};
  std::unique_ptr<pinned_pool> pinned;  // pinned when the decoder opens, within its limit
  // Set by the upload thread (decode(), stream_done(), close()), read by
  // the allocators on any thread: release / acquire, though the handle is
  // all it carries (the stream was made before the loader ran).
  std::atomic<cudaStream_t> order{nullptr};
  std::atomic<int> last_error{cudaSuccess};  // the CUDA error behind an allocator failure

  cudaStream_t stream() const noexcept { return order.load(std::memory_order_acquire); }
  bool take(std::size_t n) {
    // Relaxed: the count only guards a limit, no memory is published through it.
    const std::size_t now = device_bytes.fetch_add(n, std::memory_order_relaxed) + n;
    if (device_budget == 0 || now <= device_budget) return true;
    device_bytes.fetch_sub(n, std::memory_order_relaxed);
    return false;
  }
  int fail(cudaError_t e) {
    (void)cudaGetLastError();  // not to resurface at an unrelated launch
    last_error.store(e, std::memory_order_relaxed);
    return 1;
  }

  static int device_malloc(void* ctx, void** p, std::size_t n, cudaStream_t) {
    auto* m = static_cast<memory*>(ctx);
    if (!m->take(n)) return m->fail(cudaErrorMemoryAllocation);
    // Stream-ordered: no device synchronization; the pool keeps freed
    // memory (its release threshold is the budget), so a steady epoch
    // reuses it without asking the driver.
    if (const cudaError_t e = cudaMallocFromPoolAsync(p, n, m->pool, m->stream()); e != cudaSuccess) {
      m->device_bytes.fetch_sub(n, std::memory_order_relaxed);
      return m->fail(e);
    }
    return 0;
  }
  static int device_free(void* ctx, void* p, std::size_t n, cudaStream_t) {
    auto* m = static_cast<memory*>(ctx);
    m->device_bytes.fetch_sub(n, std::memory_order_relaxed);
    const cudaError_t e = cudaFreeAsync(p, m->stream());
    return e == cudaSuccess ? 0 : m->fail(e);
  }
  // Pinned buffers come from the pool pinned at open (pinned_pool.hpp): no
  // cudaHostAlloc and no cudaFreeHost (which waits for the whole device)
  // when nvJPEG grows a buffer for a larger image. A freed one is handed
  // out again only once the stream has passed the copies queued out of it.
  static int pinned_malloc(void* ctx, void** p, std::size_t n, cudaStream_t) {
    auto* m = static_cast<memory*>(ctx);
    try {
      *p = m->pinned->allocate(n);
    } catch (const cuda_error&) {
      return m->fail(cudaErrorMemoryAllocation);
    }
    return *p != nullptr ? 0 : m->fail(cudaErrorMemoryAllocation);
  }
  static int pinned_free(void* ctx, void* p, std::size_t, cudaStream_t) {
    auto* m = static_cast<memory*>(ctx);
    if (const cudaStream_t after = m->stream(); after != nullptr)
      m->pinned->release_after(p, reinterpret_cast<stream_t>(after));
    else
      m->pinned->release(p);  // nothing queued, or all of it done
    return 0;
  }
};

// A batch slot's host work (jpeg_decoder.hpp): the decoupled API's state,
// with its own pinned buffer (nvjpegDecodeJpegHost writes the Huffman
// decode's output there; nvjpegDecodeJpegTransferToDevice copies it out
// asynchronously) and the decoder's shared device buffer attached, the
// parsed stream and the decode parameters (its region). The pinned buffer
// is rewritten only by the next prepare(), once the slot's slab has come
// back, i.e. after the copy stream passed the transfer: no event to wait on.
struct nvjpeg_work final : jpeg_host_work {
  enum class stage : std::uint8_t { fresh, parsed, hardware, host_done, queued };
  nvjpeg_api api;
  nvjpegJpegState_t state = nullptr;
  nvjpegBufferPinned_t pinned = nullptr;
  nvjpegJpegStream_t stream = nullptr;
  nvjpegDecodeParams_t params = nullptr;
  stage at = stage::fresh;  // parsed: `stream` holds this job's file, parsed whole

  explicit nvjpeg_work(const nvjpeg_api& a) : api(a) {}
  ~nvjpeg_work() override {
    if (params != nullptr) (void)api.decode_params_destroy(params);
    if (stream != nullptr) (void)api.jpeg_stream_destroy(stream);
    if (state != nullptr) (void)api.jpeg_state_destroy(state);
    if (pinned != nullptr) (void)api.buffer_pinned_destroy(pinned);
  }
  nvjpeg_work(const nvjpeg_work&) = delete;
  nvjpeg_work& operator=(const nvjpeg_work&) = delete;
};

class nvjpeg_decoder final : public jpeg_decoder {
 public:
  nvjpeg_decoder(std::shared_ptr<const nvjpeg_library> library, device_api& api, int device, std::size_t budget)
      : m_lib(std::move(library)), m_api(*m_lib), m_device(device) {
    try {
      open(api, budget);
    } catch (...) {
      close();
      throw;
    }
  }
  ~nvjpeg_decoder() override { close(); }
  nvjpeg_decoder(const nvjpeg_decoder&) = delete;
  nvjpeg_decoder& operator=(const nvjpeg_decoder&) = delete;

  // With the pinned pool's use so far (stats()' decoder: whether its
  // reserve held, on a GPU run).
  std::string describe() const override {
    const pinned_pool::counters p = m_memory.pinned->stats();
    auto mib = [](std::size_t b) { return std::to_string((b + (1u << 19)) >> 20) + " MiB"; };
    return m_lib->describe() +
           (m_hardware ? ", " + std::to_string(m_engines) + " hardware JPEG engines"
                       : ", no hardware JPEG engine (hybrid backend only)") +
           "; pinned " + mib(p.pinned) + " (peak use " + mib(p.peak) + ", " + std::to_string(p.growths) +
           " growths, " + std::to_string(p.refused) + " refused); device " + mib(m_memory.device_bytes.load()) +
           " in use";
  }
  int hardware_engines() const noexcept override { return m_engines; }
  void stream_done() noexcept override { m_memory.order.store(nullptr, std::memory_order_release); }
  jpeg_route route(const image::image_info& info) const noexcept override { return nvjpeg_route(info, m_hardware); }
  // nvjpegDecodeParamsSetROI: nvjpegDecodeBatchedEx (hardware) and the
  // decoupled API (hybrid) both take a region per image. The engines are
  // asked with the region (nvjpegDecodeBatchedSupportedEx), so an image
  // whose region they refuse is decoded, region and all, by the hybrid one.
  bool decodes_region(jpeg_backend b) const noexcept override { return b != jpeg_backend::cpu; }

  std::unique_ptr<jpeg_host_work> make_host_work() override {
    make_current();
    // The decoder state and pinned buffer come with the first hybrid image
    // (decode_host): a slot that only ever takes the engines' has none.
    auto w = std::make_unique<nvjpeg_work>(m_api);
    check(m_api.jpeg_stream_create(m_handle, &w->stream), "nvjpegJpegStreamCreate", nullptr);
    check(m_api.decode_params_create(m_handle, &w->params), "nvjpegDecodeParamsCreate", nullptr);
    check(m_api.decode_params_set_output_format(w->params, NVJPEG_OUTPUT_RGBI), "nvjpegDecodeParamsSetOutputFormat",
          nullptr);
    return w;
  }

  // The engines' support check (nvjpegJpegStreamParse of the whole file,
  // as DALI's nvJPEG decoder parses before nvjpegDecodeBatchedSupportedEx,
  // with the region: 0 means supported); what they refuse, and every hybrid
  // image, gets its Huffman decode here, from the same parsed stream.
  // nvJPEG's thread safety: the handle and the decoder are shared by the
  // threads; "nvjpegJpegStream_t, nvjpegJpegState_t, nvjpegBufferDevice_t,
  // nvjpegBufferPinned_t" must be one per thread: the stream, state and
  // pinned buffer here are the work's, which one thread at a time uses
  // (its decode thread, then the upload thread once the batch is handed
  // over), and the shared device buffer is attached and used only by the
  // upload thread (decode_hybrid).
  jpeg_backend prepare(const jpeg_job& j) override {
    validate(j, 0, false);
    make_current();
    auto& w = static_cast<nvjpeg_work&>(*j.work);
    w.at = nvjpeg_work::stage::fresh;
    set_region(w.params, j, nullptr);
    if (j.backend == jpeg_backend::hardware && m_hardware) {
      check(m_api.jpeg_stream_parse(m_handle, j.data, j.size, 0, 0, w.stream), "nvjpegJpegStreamParse", j, nullptr);
      w.at = nvjpeg_work::stage::parsed;
      int unsupported = 1;
      check(m_api.decode_batched_supported_ex(m_handle, w.stream, w.params, &unsupported),
            "nvjpegDecodeBatchedSupportedEx", j, nullptr);
      if (unsupported == 0) {
        w.at = nvjpeg_work::stage::hardware;
        return jpeg_backend::hardware;
      }
    }
    decode_host(j, w, nullptr);
    return jpeg_backend::hybrid;
  }

  void decode(std::span<const jpeg_job> jobs, stream_t stream) override {
    const auto s = static_cast<cudaStream_t>(stream);
    make_current();
    // From now on the allocators order memory on this stream (memory).
    m_memory.order.store(s, std::memory_order_release);
    std::vector<const jpeg_job*> hardware, hybrid;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      validate(jobs[i], i, true);
      const auto& w = static_cast<const nvjpeg_work&>(*jobs[i].work);
      if (w.at == nvjpeg_work::stage::queued) continue;  // a retry: queued by the refused call
      (w.at == nvjpeg_work::stage::hardware ? hardware : hybrid).push_back(&jobs[i]);
    }
    if (!hardware.empty()) {
      try {
        decode_hardware(hardware, s);
      } catch (const jpeg_decode_error&) {
        // The engines refused one image the support check let through (the
        // stage's retry, one image a call): the hybrid backend decodes it,
        // its Huffman stage on this thread. A batch refused whole is
        // retried image by image by the stage first.
        if (hardware.size() != 1 || jobs.size() != 1) throw;
        hybrid.push_back(hardware.front());
      }
    }
    if (!hybrid.empty()) decode_hybrid(hybrid, s);
  }

 private:
  void open(device_api& api, std::size_t budget) {
    cuda::check(cudaSetDevice(m_device), "cudaSetDevice");
    // memory_budget: half for device memory, half for pinned memory.
    const std::size_t pinned_limit = budget / 2;
    m_memory.device_budget = budget - pinned_limit;
    cudaMemPoolProps props{};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = m_device;
    cuda::check(cudaMemPoolCreate(&m_memory.pool, &props), "cudaMemPoolCreate");
    std::uint64_t keep = budget != 0 ? m_memory.device_budget : std::numeric_limits<std::uint64_t>::max();
    cuda::check(cudaMemPoolSetAttribute(m_memory.pool, cudaMemPoolAttrReleaseThreshold, &keep), "cudaMemPoolSetAttribute");
    // Pinned now, for the engines' batched state and the slots' Huffman
    // outputs (a few MiB per batch of ImageNet-sized files): growing it in
    // a run pins more (cudaHostAlloc), a chunk at a time.
    m_memory.pinned = std::make_unique<pinned_pool>(api, pinned_reserve, pinned_limit);
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
    // The decoupled API's decoder on the same handle, whatever its backend
    // (as DALI's nvJPEG decoder does: one handle, hardware where possible,
    // with hybrid decoders created from it).
    check(m_api.decoder_create(m_handle, NVJPEG_BACKEND_HYBRID, &m_hybrid), "nvjpegDecoderCreate(NVJPEG_BACKEND_HYBRID)",
          nullptr);
    // One device buffer for every work's state: only the upload thread's
    // device stages use it, one image after the other on its stream.
    check(m_api.buffer_device_create_v2(m_handle, &m_device_allocator, &m_device_buffer), "nvjpegBufferDeviceCreateV2",
          nullptr);
  }

  // Frees everything, whatever open() got to; the work queued is done, and
  // the copy stream may be gone: nvJPEG's frees from here on are immediate.
  void close() noexcept {
    m_memory.order.store(nullptr, std::memory_order_release);
    if (m_device_buffer != nullptr) (void)m_api.buffer_device_destroy(m_device_buffer);
    if (m_hybrid != nullptr) (void)m_api.decoder_destroy(m_hybrid);
    if (m_hw_state != nullptr) (void)m_api.jpeg_state_destroy(m_hw_state);
    if (m_handle != nullptr) (void)m_api.destroy(m_handle);
    // Outstanding stream-ordered frees complete first: the pool is released
    // once they have (cudaMemPoolDestroy's documented behaviour).
    if (m_memory.pool != nullptr) (void)cudaMemPoolDestroy(m_memory.pool);
    m_memory.pinned.reset();  // after every nvJPEG object gave its pinned buffers back
    m_device_buffer = nullptr;
    m_hybrid = nullptr;
    m_hw_state = nullptr;
    m_handle = nullptr;
    m_memory.pool = nullptr;
  }

  void make_current() const {
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess || current != m_device) cuda::check(cudaSetDevice(m_device), "cudaSetDevice");
  }

  // `out`: decode() writes job.out (prepare() does not).
  static void validate(const jpeg_job& j, std::size_t i, bool out) {
    const auto& r = j.region;
    const bool ok = j.data != nullptr && j.size > 0 && (j.out != nullptr || !out) && j.work != nullptr &&
                    j.backend != jpeg_backend::cpu && !r.empty() &&
                    r.top >= 0 && r.left >= 0 && r.bottom() <= j.info.height && r.right() <= j.info.width &&
                    (j.pitch >= static_cast<std::size_t>(r.width) * 3 || !out);
    if (!ok) throw jpeg_decode_error("nvJPEG decode: job " + std::to_string(i) + " is malformed (no data, output or work, a "
                                     "cpu route, or a region outside the image or wider than the pitch)");
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

  // One nvjpegDecodeBatchedEx for the jobs prepare() found the engines
  // support, each with its work's parameters (its region).
  void decode_hardware(const std::vector<const jpeg_job*>& jobs, cudaStream_t s) {
    m_data.clear();
    m_sizes.clear();
    m_out.clear();
    m_params.clear();
    for (const jpeg_job* j : jobs) {
      m_data.push_back(j->data);
      m_sizes.push_back(j->size);
      m_out.push_back(destination(*j));
      m_params.push_back(static_cast<nvjpeg_work&>(*j->work).params);
    }
    // "Should be called once for decoding batches of this specific size,
    // also use to reset failed batches" (nvjpeg.h): every call, as the size
    // varies (DALI's nvJPEG decoder does the same, batch after batch, while
    // the previous batch may still run on the stream); max_cpu_threads 1:
    // one CPU thread (the caller's) runs the call, as in DALI.
    const jpeg_job* first = jobs.size() == 1 ? jobs.front() : nullptr;  // a batch names no one file
    check(m_api.decode_batched_initialize(m_handle, m_hw_state, static_cast<int>(m_data.size()), 1, NVJPEG_OUTPUT_RGBI),
          "nvjpegDecodeBatchedInitialize", first, s);
    check(m_api.decode_batched_ex(m_handle, m_hw_state, m_data.data(), m_sizes.data(), m_out.data(), m_params.data(), s),
          "nvjpegDecodeBatchedEx", first, s);
    for (const jpeg_job* j : jobs) static_cast<nvjpeg_work&>(*j->work).at = nvjpeg_work::stage::queued;
  }

  // The decoupled API's host stage into the work: nvjpegJpegStreamParse
  // (unless prepare() parsed it already) and nvjpegDecodeJpegHost (Huffman
  // on this thread, into the work's pinned buffer), the work's state and
  // pinned buffer made on its first use.
  void decode_host(const jpeg_job& j, nvjpeg_work& w, cudaStream_t s) {
    if (w.state == nullptr) {
      if (w.pinned == nullptr)
        check(m_api.buffer_pinned_create_v2(m_handle, &m_pinned_allocator, &w.pinned), "nvjpegBufferPinnedCreateV2", &j,
              s);
      nvjpegJpegState_t state = nullptr;
      check(m_api.decoder_state_create(m_handle, m_hybrid, &state), "nvjpegDecoderStateCreate", &j, s);
      try {
        check(m_api.state_attach_pinned_buffer(state, w.pinned), "nvjpegStateAttachPinnedBuffer", &j, s);
      } catch (...) {
        (void)m_api.jpeg_state_destroy(state);
        throw;
      }
      w.state = state;
    }
    if (w.at != nvjpeg_work::stage::parsed)
      check(m_api.jpeg_stream_parse(m_handle, j.data, j.size, 0, 0, w.stream), "nvjpegJpegStreamParse", &j, s);
    check(m_api.decode_jpeg_host(m_handle, m_hybrid, w.state, w.params, w.stream), "nvjpegDecodeJpegHost", &j, s);
    w.at = nvjpeg_work::stage::host_done;
  }

  // Its device stages, image by image, on `s`: the shared device buffer
  // attached to the work's state (here, on the one thread that uses it:
  // nvjpegBufferDevice_t is one per thread; DALI attaches its thread's
  // buffer the same way, right before the transfer), then
  // nvjpegDecodeJpegTransferToDevice (an async copy out of the work's
  // pinned buffer into the device buffer) and nvjpegDecodeJpegDevice. The
  // states share the buffer in stream order: image k+1's transfer is queued
  // behind image k's device stage, and a buffer nvJPEG grows for it is
  // freed in stream order too (memory). A work not prepared (or prepared
  // for the engines, which then refused it) gets its host stage here.
  // Nothing waits: the pinned buffer is the slot's (nvjpeg_work).
  void decode_hybrid(const std::vector<const jpeg_job*>& jobs, cudaStream_t s) {
    for (const jpeg_job* j : jobs) {
      auto& w = static_cast<nvjpeg_work&>(*j->work);
      if (w.at != nvjpeg_work::stage::host_done) {
        set_region(w.params, *j, s);
        if (w.at != nvjpeg_work::stage::hardware) w.at = nvjpeg_work::stage::fresh;
        else w.at = nvjpeg_work::stage::parsed;  // prepare() parsed the whole file
        decode_host(*j, w, s);
      }
      check(m_api.state_attach_device_buffer(w.state, m_device_buffer), "nvjpegStateAttachDeviceBuffer", j, s);
      check(m_api.decode_jpeg_transfer_to_device(m_handle, m_hybrid, w.state, w.stream, s),
            "nvjpegDecodeJpegTransferToDevice", j, s);
      nvjpegImage_t out = destination(*j);
      check(m_api.decode_jpeg_device(m_handle, m_hybrid, w.state, &out, s), "nvjpegDecodeJpegDevice", j, s);
      w.at = nvjpeg_work::stage::queued;  // (a retry transfers again: the pinned buffer is unchanged)
    }
  }

  // An nvJPEG status: a lost context behind it (the runtime's last error,
  // the allocator's, or the stream's state: cudaStreamQuery does not wait)
  // is a sticky cuda_error; anything else refuses the call's images. The
  // message names the call, the status, the file (`j`; null: a batch or
  // none) and the library; the reason (stats()' CPU reasons) the call and
  // the status.
  void check(nvjpegStatus_t st, const char* call, const jpeg_job* j, cudaStream_t s) const {
    if (st == NVJPEG_STATUS_SUCCESS) return;
    auto lost = [](cudaError_t e) { return is_sticky(e) ? e : cudaSuccess; };
    cudaError_t e = lost(cudaGetLastError());
    const auto allocator = static_cast<cudaError_t>(m_memory.last_error.exchange(cudaSuccess));
    if (e == cudaSuccess) e = lost(allocator);
    if (e == cudaSuccess && s != nullptr) e = lost(cudaStreamQuery(s));
    std::string reason = std::string(call) + ": " + nvjpeg_status_name(st);
    if (st == NVJPEG_STATUS_ALLOCATOR_FAILURE && allocator != cudaSuccess)
      reason += allocator == cudaErrorMemoryAllocation ? " (over memory_budget or out of memory)" : " (" + cuda_text(allocator) + ")";
    const std::string what = (j != nullptr && !j->name.empty() ? std::string(j->name) + ": " : std::string()) + reason +
                             " (" + m_lib->describe() + ")";
    if (e != cudaSuccess) throw cuda_error(static_cast<int>(e), what + " after " + cuda_text(e), true);
    throw jpeg_decode_error(what, reason);
  }
  void check(nvjpegStatus_t st, const char* call, cudaStream_t s) const { check(st, call, nullptr, s); }
  void check(nvjpegStatus_t st, const char* call, const jpeg_job& j, cudaStream_t s) const { check(st, call, &j, s); }

  std::shared_ptr<const nvjpeg_library> m_lib;
  nvjpeg_api m_api;
  int m_device;
  mutable memory m_memory;  // outlives every nvJPEG object (close() frees them first)
  nvjpegDevAllocatorV2_t m_device_allocator{};
  nvjpegPinnedAllocatorV2_t m_pinned_allocator{};
  nvjpegHandle_t m_handle = nullptr;
  bool m_hardware = false;
  int m_engines = 0;

  // hardware: the batched state and the call's arrays.
  nvjpegJpegState_t m_hw_state = nullptr;
  std::vector<const unsigned char*> m_data;
  std::vector<std::size_t> m_sizes;
  std::vector<nvjpegImage_t> m_out;
  std::vector<nvjpegDecodeParams_t> m_params;

  // hybrid: the decoder and the device buffer its works share.
  nvjpegJpegDecoder_t m_hybrid = nullptr;
  nvjpegBufferDevice_t m_device_buffer = nullptr;
};

}  // namespace

std::unique_ptr<jpeg_decoder> make_nvjpeg_decoder(std::shared_ptr<const nvjpeg_library> library, device_api& api,
                                                  int device, std::size_t memory_budget) {
  return std::make_unique<nvjpeg_decoder>(std::move(library), api, device, memory_budget);
}

}  // namespace ringfeed::cuda
