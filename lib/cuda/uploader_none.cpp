// The upload stage when ringfeed is built without CUDA: nothing to upload
// to. The loader never gets here (its device probe already says "built
// without CUDA"); direct users get a clear error.
#include <ringfeed/cuda/uploader.hpp>

namespace ringfeed::cuda {
namespace {
[[noreturn]] void no_cuda(const char* what) {
  throw cuda_error(0, std::string(what) + ": ringfeed was built without CUDA (RINGFEED_CUDA=OFF or no nvcc found)");
}
}  // namespace

struct uploader::impl {};

void* host_alloc_pinned(std::size_t) { no_cuda("host_alloc_pinned"); }
void host_free_pinned(void*) noexcept {}

uploader::uploader(const options&) { no_cuda("cuda::uploader"); }
uploader::~uploader() = default;
std::size_t uploader::buffers() const noexcept { return 0; }
stream_t uploader::stream() const noexcept { return nullptr; }
std::size_t uploader::output_bytes() const noexcept { return 0; }
void uploader::enqueue(std::size_t, const std::uint8_t*, std::size_t, void (*)(void*), void*) {
  no_cuda("cuda::uploader::enqueue");
}
void* uploader::output(std::size_t) const noexcept { return nullptr; }
event_t uploader::ready_event(std::size_t) const noexcept { return nullptr; }
void uploader::wait(std::size_t, stream_t) const { no_cuda("cuda::uploader::wait"); }
void uploader::release(std::size_t, stream_t) { no_cuda("cuda::uploader::release"); }

}  // namespace ringfeed::cuda
