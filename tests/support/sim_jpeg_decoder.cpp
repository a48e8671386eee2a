// The simulated GPU JPEG decoder: see sim_jpeg_decoder.hpp.
#include <cstring>
#include <stdexcept>
#include <utility>

#include <ringfeed/cuda/uploader.hpp>
#include <ringfeed/image/decode.hpp>

#include "sim_jpeg_decoder.hpp"

namespace ringfeed::test {
namespace {

// A slot's host work: where it is, and its decodes queued on the stream
// and not yet run (the pinned buffer nvJPEG's transfer would still read).
struct sim_work final : cuda::jpeg_host_work {
  enum class stage { fresh, hardware, host_done, queued };
  stage at = stage::fresh;
  std::atomic<int> in_flight{0};
};

thread_local bool inside_decode = false;  // this thread is in a decode() call

}  // namespace

sim_jpeg_decoder::sim_jpeg_decoder(sim_device& dev, settings s, std::shared_ptr<record> rec)
    : m_dev(dev), m_settings(s), m_rec(std::move(rec)) {}

cuda::jpeg_route sim_jpeg_decoder::route(const image::image_info& info) const noexcept {
  if (info.arithmetic) return {cuda::jpeg_backend::cpu, "arithmetic coding"};
  if (info.components != 1 && info.components != 3) return {cuda::jpeg_backend::cpu, "4 components"};
  return {info.progressive ? cuda::jpeg_backend::hybrid : cuda::jpeg_backend::hardware, {}};
}

bool sim_jpeg_decoder::decodes_region(cuda::jpeg_backend b) const noexcept {
  return b == cuda::jpeg_backend::hardware ? m_settings.hardware_regions : m_settings.hybrid_regions;
}

std::unique_ptr<cuda::jpeg_host_work> sim_jpeg_decoder::make_host_work() { return std::make_unique<sim_work>(); }

cuda::jpeg_backend sim_jpeg_decoder::prepare(const cuda::jpeg_job& j) {
  if (j.work == nullptr || j.data == nullptr || j.backend == cuda::jpeg_backend::cpu)
    throw std::logic_error("sim_jpeg_decoder: a malformed job to prepare");
  auto& w = static_cast<sim_work&>(*j.work);
  m_rec->prepared.fetch_add(1);
  if (w.in_flight.load() != 0) m_rec->reused_early.fetch_add(1);
  cuda::jpeg_backend b = j.backend;
  if (b == cuda::jpeg_backend::hardware && m_settings.hardware_max_width > 0 &&
      j.info.width > m_settings.hardware_max_width) {
    m_rec->moved.fetch_add(1);
    b = cuda::jpeg_backend::hybrid;
  }
  if (b == cuda::jpeg_backend::hybrid) {
    m_rec->host_stages.fetch_add(1);
    if (inside_decode) m_rec->host_in_decode.fetch_add(1);
    std::lock_guard lock(m_rec->mutex);
    m_rec->host_threads.insert(std::this_thread::get_id());
  }
  w.at = b == cuda::jpeg_backend::hybrid ? sim_work::stage::host_done : sim_work::stage::hardware;
  return b;
}

void sim_jpeg_decoder::decode(std::span<const cuda::jpeg_job> jobs, cuda::stream_t s) {
  m_rec->calls.fetch_add(1);
  inside_decode = true;
  struct leave {
    ~leave() { inside_decode = false; }
  } on_return;
  {
    std::lock_guard lock(m_rec->mutex);
    if (m_rec->lose_device) throw cuda::cuda_error(700, "simulated nvjpegDecodeBatched: the device is lost", true);
    for (const cuda::jpeg_job& j : jobs) {
      if (j.backend == cuda::jpeg_backend::cpu) throw std::logic_error("sim_jpeg_decoder: a CPU job");
      if (j.work == nullptr) throw std::logic_error("sim_jpeg_decoder: a job without its host work");
      if (m_rec->poisoned_sizes.count(j.size) != 0) {
        m_rec->refused.fetch_add(1);
        m_rec->refused_names.insert(std::string(j.name));
        // As nvjpeg_decoder's: the file named when the call had one, the
        // reason the call and the status.
        const std::string reason = "simulated nvjpegDecodeBatchedEx: NVJPEG_STATUS_BAD_JPEG";
        throw cuda::jpeg_decode_error(jobs.size() == 1 ? std::string(j.name) + ": " + reason : reason, reason);
      }
    }
  }
  // The decode runs on the stream, as the device's would: the bytes and
  // the output stay valid until the stream passes it. A job queued since
  // its prepare() (a retry) is not queued again.
  std::vector<cuda::jpeg_job> queued;
  for (const cuda::jpeg_job& j : jobs) {
    auto& w = static_cast<sim_work&>(*j.work);
    if (w.at == sim_work::stage::queued) continue;
    if (j.backend == cuda::jpeg_backend::hybrid && w.at != sim_work::stage::host_done) m_rec->host_in_decode.fetch_add(1);
    w.at = sim_work::stage::queued;
    w.in_flight.fetch_add(1);
    queued.push_back(j);
  }
  m_dev.enqueue(s, [queued = std::move(queued), rec = m_rec, slow = m_settings.decode_time] {
    image::decoder dec;
    image::image_buffer full;
    for (const cuda::jpeg_job& j : queued) {
      if (slow.count() > 0) std::this_thread::sleep_for(slow);
      const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(j.data), j.size);
      (void)dec.decode(bytes, "sim", full, image::decode_options{});
      const image::image_view v = full.view();
      const image::crop_box& r = j.region;
      if ((v.channels != 3 && v.channels != 1) || r.top < 0 || r.left < 0 || r.bottom() > v.height ||
          r.right() > v.width)
        throw std::logic_error("sim_jpeg_decoder: region outside the image");
      if (r.top == 0 && r.left == 0 && r.height == v.height && r.width == v.width) rec->whole.fetch_add(1);
      for (int y = 0; y < r.height; ++y) {
        std::uint8_t* out = j.out + static_cast<std::size_t>(y) * j.pitch;
        const std::uint8_t* in = v.row(r.top + y) + static_cast<std::size_t>(r.left) * v.channels;
        if (v.channels == 3) {
          std::memcpy(out, in, static_cast<std::size_t>(r.width) * 3);
        } else {  // gray: RGB replicate, as nvJPEG's RGBI output and the CPU path
          for (int x = 0; x < r.width; ++x) out[3 * x] = out[3 * x + 1] = out[3 * x + 2] = in[x];
        }
      }
      rec->decoded.fetch_add(1);
      static_cast<sim_work*>(j.work)->in_flight.fetch_sub(1);
    }
  });
}

sim_jpeg_decoder::installed::installed(sim_device& dev, settings s) {
  cuda::install_jpeg_decoder_factory([&dev, s, rec = rec](cuda::device_api&, int, std::size_t) {
    return cuda::jpeg_decoder_choice{std::make_unique<sim_jpeg_decoder>(dev, s, rec), {}};
  });
}

sim_jpeg_decoder::installed::~installed() { cuda::install_jpeg_decoder_factory({}); }

}  // namespace ringfeed::test
