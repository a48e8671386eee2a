// Private to the Python binding: ringfeed::loader as ringfeed._ringfeed._Loader.
//
// Thin: options arrive type-checked by ringfeed/loader.py and are settled
// by ringfeed::resolve (loader/resolve.hpp); this
// class waits for batches with the GIL released (in slices, so Ctrl-C is
// seen within 50 ms), hands their memory to Python as DLPack capsules, and
// keeps the process-level promises (fork, batches outliving the loader).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <ringfeed/loader/loader.hpp>
#include <ringfeed/loader/resolve.hpp>
#include <ringfeed/loader/next_handoff.hpp>

namespace ringfeed::python {

class py_loader {
 public:
  explicit py_loader(resolved settled);
  ~py_loader();
  py_loader(const py_loader&) = delete;
  py_loader& operator=(const py_loader&) = delete;

  /// The next batch as (images capsule, labels capsule, epoch, number,
  /// copy) or None at the end of the epoch. `stream`: the CUDA stream that
  /// will read device images (waits for the upload, no host sync). `copy`
  /// says the consumer holds every other buffer: Python clones the images
  /// and frees the view, so the loader never runs out of buffers.
  /// timeout > 0: TimeoutError when no batch came within `timeout`
  /// seconds (the request stays out: a later call takes its batch).
  pybind11::object next(std::uintptr_t stream, double timeout = 0);
  void set_epoch(std::uint64_t epoch);
  /// loader::set_order: epoch `epoch` in this order (dataset indices).
  void set_order(std::uint64_t epoch,
                 const pybind11::array_t<std::int64_t, pybind11::array::c_style | pybind11::array::forcecast>& indices,
                 std::size_t first_batch);
  /// seed, epoch, next_batch, rank, world_size of the next batch next()
  /// returns (a request interrupted by Ctrl-C is not counted until taken).
  [[nodiscard]] pybind11::dict state() const;
  [[nodiscard]] std::string stats_json() const;
  [[nodiscard]] std::size_t batches_per_epoch() const;
  [[nodiscard]] std::size_t dataset_size() const;
  [[nodiscard]] bool uses_device() const;
  [[nodiscard]] std::string host_reason() const;
  [[nodiscard]] bool converts_on_device() const;
  [[nodiscard]] bool started() const noexcept { return m_started; }
  [[nodiscard]] std::size_t held() const noexcept { return m_held->load(std::memory_order_relaxed); }
  [[nodiscard]] std::size_t buffers() const noexcept { return m_buffers; }
  /// What resolve() settled: "train", "val" or "transform"; the output's
  /// name; whether the sampler shuffles.
  [[nodiscard]] const std::string& recipe() const noexcept { return m_recipe; }
  [[nodiscard]] const std::string& output() const noexcept { return m_output; }
  [[nodiscard]] bool shuffle() const noexcept { return m_shuffle; }
  /// Stops the pipeline and frees its threads; batches still held stay valid.
  void close();

 private:
  loader& checked();
  void issue();
  void drop_pending();
  // A batch as next() hands it to Python: (images, labels) DLPack capsules
  // (the images' one holding the batch), epoch, number, copy.
  pybind11::object to_python(batch b, std::uintptr_t stream);  // a request Ctrl-C interrupted: waited for, its batch dropped
  // set_epoch / set_order: `restart(loader&)` without the GIL, then the
  // pending request dropped (its answer is the end of the stopped run,
  // however stalled its read was) and the position read back.
  template <typename Restart>
  void restart(Restart&& restart);

  std::unique_ptr<loader> m_loader;
  std::shared_ptr<next_handoff> m_pending;  // the next() request out, if any (the Python thread's)
  // Batches whose images Python still views (decremented by their deleters).
  std::shared_ptr<std::atomic<std::size_t>> m_held = std::make_shared<std::atomic<std::size_t>>(0);
  std::size_t m_buffers = 0;   // slabs (host) or device buffers the consumer may hold
  std::uint64_t m_generation;  // fork generation the threads (if any) live in
  bool m_started = false;      // threads exist (next() or set_epoch() ran)
  std::atomic<bool> m_busy{false};  // a call is inside next()/set_epoch()/close()
  loader_state m_position;
  // What a next() received as Ctrl-C came: KeyboardInterrupt is raised
  // first (Python would raise it as the call returned, and drop the batch),
  // and the next next() returns this. Held and dropped with the GIL.
  struct landed {
    std::exception_ptr error;
    pybind11::object result;  // next()'s answer: the batch's tuple, or None at the end
    loader_state position;    // the loader's state once it is taken
  };
  std::optional<landed> m_landed;
  std::string m_recipe;
  std::string m_output;
  bool m_shuffle = false;
};

/// The request of the dict ringfeed/loader.py builds (every key present;
/// None: unset, for resolve() to settle).
[[nodiscard]] loader_request loader_request_from(const pybind11::dict& options);

void bind_loader(pybind11::module_& m);

}  // namespace ringfeed::python
