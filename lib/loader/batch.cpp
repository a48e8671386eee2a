// ringfeed::batch and its lease on loader memory (batch.hpp).
#include <exception>
#include <string>
#include <utility>

#include <ringfeed/loader/batch.hpp>

#include "loader_core.hpp"

namespace ringfeed {
namespace detail {

// --- lease -------------------------------------------------------------------------

batch_lease::~batch_lease() { release(nullptr, false); }

void batch_lease::release(cuda::stream_t consumer_stream, bool synchronized) noexcept {
  if (!core) return;
  if (s != nullptr) core->memory().give_back(std::exchange(s, nullptr));
  if (device_buffer >= 0) {
    const int b = std::exchange(device_buffer, -1);
    try {
      if (synchronized)
        core->uploader().release_synchronized(static_cast<std::size_t>(b));
      else
        core->uploader().release(static_cast<std::size_t>(b), consumer_stream);
    } catch (const std::exception& e) {
      // Could not record the release (a lost context): nothing will run on
      // the device any more, so the buffer cannot be overwritten under a
      // reader either.
      core->log(std::string("releasing a device buffer: ") + e.what());
    }
    core->memory().give_back_buffer(b);
  }
  core.reset();
}

}  // namespace detail

// --- batch ---------------------------------------------------------------------------

batch::batch(batch&& o) noexcept
    : m_lease(std::move(o.m_lease)),
      m_images(o.m_images),
      m_labels(o.m_labels),
      m_indices(o.m_indices),
      m_epoch(o.m_epoch),
      m_number(o.m_number),
      m_wait_stream(std::exchange(o.m_wait_stream, nullptr)) {}

batch& batch::operator=(batch&& o) noexcept {
  if (this != &o) {
    release();
    m_lease = std::move(o.m_lease);
    m_images = o.m_images;
    m_labels = o.m_labels;
    m_indices = o.m_indices;
    m_epoch = o.m_epoch;
    m_number = o.m_number;
    m_wait_stream = std::exchange(o.m_wait_stream, nullptr);
  }
  return *this;
}

batch::~batch() { release(); }

cuda::event_t batch::ready_event() const noexcept {
  if (!m_lease || m_lease->device_buffer < 0) return nullptr;
  return m_lease->core->uploader().ready_event(static_cast<std::size_t>(m_lease->device_buffer));
}

void batch::wait(cuda::stream_t stream) {
  if (!m_lease || m_lease->device_buffer < 0) return;
  m_lease->core->uploader().wait(static_cast<std::size_t>(m_lease->device_buffer), stream);
  m_wait_stream = stream;
}

void batch::release() noexcept { release_lease(m_wait_stream, false); }

void batch::release(cuda::stream_t consumer_stream) noexcept { release_lease(consumer_stream, false); }

void batch::release_synchronized() noexcept { release_lease(nullptr, true); }

void batch::release_lease(cuda::stream_t consumer_stream, bool synchronized) noexcept {
  if (!m_lease) return;
  m_lease->release(consumer_stream, synchronized);
  m_lease.reset();
  m_labels = {};
  m_indices = {};
  m_images.data = nullptr;
}

}  // namespace ringfeed
