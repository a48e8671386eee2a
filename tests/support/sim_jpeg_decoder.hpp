// A simulated GPU JPEG decoder (cuda::jpeg_decoder) for the simulated
// device: routes as nvJPEG's hardware and hybrid backends would (baseline
// 1 or 3 components: hardware; progressive: hybrid; the rest: the CPU),
// and decodes with libjpeg-turbo on the stream's thread, writing the
// asked region into "device" memory (host memory on the sim device). So
// its pixels are the CPU path's full-size decode, and a GPU-decoding loader
// must give exact mode's bytes. Refusals and device loss are injectable.
// prepare() plays nvJPEG's host side: the engines refusing wide images
// (moved to hybrid, as nvjpegDecodeBatchedSupported's "no"), the hybrid
// Huffman decode's thread, and a check that no slot's host work is
// prepared again while the decode queued out of it is still pending.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cuda/jpeg_decoder.hpp"
#include "sim_device.hpp"

namespace ringfeed::test {

struct sim_decoder_settings {
  bool hardware_regions = true;  ///< the hardware backend decodes regions (else whole images)
  bool hybrid_regions = true;
  int engines = 7;
  /// prepare() moves hardware images wider than this to hybrid (0: none).
  int hardware_max_width = 0;
  /// Each image's decode on the stream takes at least this long.
  std::chrono::microseconds decode_time{0};
};

class sim_jpeg_decoder final : public cuda::jpeg_decoder {
 public:
  using settings = sim_decoder_settings;
  /// What the decoder saw, shared with the test after the loader owns it.
  struct record {
    std::atomic<std::size_t> calls{0};       ///< decode() calls
    std::atomic<std::size_t> refused{0};     ///< calls that threw jpeg_decode_error
    std::atomic<std::size_t> decoded{0};     ///< images written
    std::atomic<std::size_t> whole{0};       ///< of them, whole images
    std::atomic<std::size_t> prepared{0};    ///< prepare() calls
    std::atomic<std::size_t> moved{0};       ///< hardware images prepare() moved to hybrid
    std::atomic<std::size_t> host_stages{0};     ///< hybrid host stages run by prepare()
    std::atomic<std::size_t> host_in_decode{0};  ///< hybrid host stages run inside a decode() call
    std::atomic<std::size_t> reused_early{0};    ///< works prepared again before their queued decode ran
    std::mutex mutex;
    std::set<std::thread::id> host_threads;  ///< where prepare() ran host stages (guarded)
    std::set<std::size_t> poisoned_sizes;  ///< a call holding a file of such a size is refused (guarded)
    std::set<std::string> refused_names;   ///< the jobs' names (jpeg_job::name) it refused (guarded)
    bool lose_device = false;              ///< the next call throws a sticky cuda_error (guarded)
  };

  sim_jpeg_decoder(sim_device& dev, settings s, std::shared_ptr<record> rec);

  [[nodiscard]] std::string describe() const override { return "simulated decoder"; }
  [[nodiscard]] int hardware_engines() const noexcept override { return m_settings.engines; }
  [[nodiscard]] cuda::jpeg_route route(const image::image_info& info) const noexcept override;
  [[nodiscard]] bool decodes_region(cuda::jpeg_backend b) const noexcept override;
  [[nodiscard]] std::unique_ptr<cuda::jpeg_host_work> make_host_work() override;
  [[nodiscard]] cuda::jpeg_backend prepare(const cuda::jpeg_job& job) override;
  void decode(std::span<const cuda::jpeg_job> jobs, cuda::stream_t s) override;

  /// Installs a factory making this decoder for `dev` (scope: until the
  /// guard goes), returning the record the decoders share.
  struct installed {
    std::shared_ptr<record> rec = std::make_shared<record>();
    installed(sim_device& dev, settings s = {});
    ~installed();
    installed(const installed&) = delete;
    installed& operator=(const installed&) = delete;
  };

 private:
  sim_device& m_dev;
  settings m_settings;
  std::shared_ptr<record> m_rec;
};

}  // namespace ringfeed::test
