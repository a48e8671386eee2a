// ringfeed._ringfeed._Loader: see py_loader.hpp.
#include "py_loader.hpp"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <thread>
#include <utility>
#include <vector>

#include <pybind11/stl.h>

#include <ringfeed/io/aws_config.hpp>
#include <ringfeed/io/location.hpp>
#include <ringfeed/io/source.hpp>

#include "tensor.hpp"

namespace py = pybind11;

namespace ringfeed::python {

namespace {

// Loader(s3={...}): key names and value types checked by loader.py against
// io::s3_option_keys (exported as _s3_keys); set here through the same table.
void s3_options_from(const py::dict& d, io::s3_options& s) {
  for (const auto& [key, value] : d) {
    if (value.is_none()) continue;
    const auto name = key.cast<std::string>();
    io::set_s3_option(s, name, py::isinstance<py::bool_>(value) ? (value.cast<bool>() ? "1" : "0")
                                                                 : value.cast<std::string>());
  }
}

template <class T>
std::optional<T> optional_of(const py::dict& d, const char* key) {
  if (!d.contains(key) || d[key].is_none()) return std::nullopt;
  return d[key].cast<T>();
}

}  // namespace

loader_request loader_request_from(const py::dict& d) {
  // Types checked in ringfeed/loader.py; the options settled by resolve().
  loader_request r;
  loader_options& o = r.base;
  o.source = d["source"].cast<std::string>();
  r.pipeline = optional_of<std::string>(d, "pipeline");
  r.size = optional_of<int>(d, "size");
  r.transform = d["transform"].cast<std::string>();
  r.exact = d["exact"].cast<bool>();
  r.max_pixels = d["max_pixels"].cast<std::uint64_t>();
  r.output = optional_of<std::string>(d, "output");
  r.shuffle = optional_of<bool>(d, "shuffle");
  r.memory_budget = optional_of<std::size_t>(d, "memory_budget");
  r.workers = optional_of<std::size_t>(d, "workers");
  o.batch_size = d["batch_size"].cast<std::size_t>();
  o.drop_last = d["drop_last"].cast<bool>();
  o.sampler.seed = d["seed"].cast<std::uint64_t>();
  o.sampler.rank = optional_of<std::size_t>(d, "rank");  // unset: from the environment
  o.sampler.world_size = optional_of<std::size_t>(d, "world_size");
  o.threads = d["threads"].cast<std::size_t>();
  o.io_depth = d["io_depth"].cast<std::size_t>();
  o.io = io::parse_backend(d["io"].cast<std::string>());
  o.prefetch_batches = d["prefetch_batches"].cast<std::size_t>();
  o.on_error = parse_error_policy(d["on_error"].cast<std::string>());
  o.direct = d["direct"].cast<bool>();
  o.cache_dir = d["cache_dir"].cast<std::string>();
  if (!d["cache_bytes"].is_none()) o.cache_bytes = d["cache_bytes"].cast<std::uint64_t>();
  o.cache = parse_cache_kind(d["cache"].cast<std::string>());
  o.stream_shards = d["stream_shards"].cast<bool>();
  if (!d["s3"].is_none()) s3_options_from(d["s3"].cast<py::dict>(), o.s3);
  o.device = d["device"].cast<int>();
  o.device_buffers = d["device_buffers"].cast<std::size_t>();
  o.decode = parse_decode_where(d["decode"].cast<std::string>());  // "auto" settled by resolve()
  o.dataset.include_hidden = d["include_hidden"].cast<bool>();
  if (d.contains("epochs") && !d["epochs"].is_none())  // checked (>= 1) by loader.py
    o.end = loader_end{d["epochs"].cast<std::uint64_t>() - 1};
  if (d.contains("pixels") && !d["pixels"].is_none()) {  // (uint8 array [N, H, W(, 3)], labels): CIFAR, MNIST
    const auto given = d["pixels"].cast<py::tuple>();
    const auto array = given[0].cast<py::array_t<std::uint8_t, py::array::c_style>>();  // no copy: checked in Python
    pixel_array px;
    px.data = array.data();
    px.count = static_cast<std::size_t>(array.shape(0));
    px.height = static_cast<int>(array.shape(1));
    px.width = static_cast<int>(array.shape(2));
    px.channels = array.ndim() == 4 ? static_cast<int>(array.shape(3)) : 1;
    px.labels = given[1].cast<std::vector<std::int64_t>>();
    // The array stays alive while the loader does; dropped with the GIL
    // (on whichever thread destroys the loader), leaked at interpreter exit.
    px.owner = std::shared_ptr<const void>(new py::object(array), [](const void* held) {
      auto* object = static_cast<py::object*>(const_cast<void*>(held));
      if (Py_IsInitialized() == 0 || _Py_IsFinalizing() != 0) return;
      py::gil_scoped_acquire gil;
      delete object;
    });
    o.pixels = std::move(px);
  }
  if (d.contains("samples") && !d["samples"].is_none()) {  // (paths as bytes, labels), from a torchvision dataset
    const auto listed = d["samples"].cast<py::tuple>();
    o.samples = data::listed_samples(o.source, listed[0].cast<std::vector<std::string>>(),
                                     listed[1].cast<std::vector<std::int64_t>>());
  }
  if (!d["resume"].is_none()) {
    const auto saved = d["resume"].cast<py::dict>();
    o.resume = loader_state{saved["seed"].cast<std::uint64_t>(), saved["epoch"].cast<std::uint64_t>(),
                            saved["next_batch"].cast<std::size_t>(), saved["rank"].cast<std::size_t>(),
                            saved["world_size"].cast<std::size_t>()};
  }
  return r;
}

namespace {

// Python callable (device ordinal) -> int: torch's current CUDA stream on
// that device (0: its default stream, a real stream), asked when a device
// batch is freed. Leaked on purpose: it may be called while the interpreter
// shuts down.
PyObject* g_stream_query = nullptr;

// None when torch cannot say (no query, the interpreter finalizing, the
// query failed): then the stream the batch waited on is used.
std::optional<cuda::stream_t> current_stream(int device) noexcept {
  if (g_stream_query == nullptr || Py_IsInitialized() == 0 || _Py_IsFinalizing() != 0) return std::nullopt;
  const PyGILState_STATE gil = PyGILState_Ensure();
  std::optional<cuda::stream_t> stream;
  PyObject* r = PyObject_CallFunction(g_stream_query, "i", device);
  if (r != nullptr) {
    void* handle = PyLong_AsVoidPtr(r);
    if (PyErr_Occurred() == nullptr) stream = reinterpret_cast<cuda::stream_t>(handle);
    Py_DECREF(r);
  }
  PyErr_Clear();
  PyGILState_Release(gil);
  return stream;
}

// A batch whose images a tensor views. Freeing the tensor gives the slab
// (or device buffer) back; a device buffer only after the work queued so
// far on the stream current at that moment (torch's record_stream rule).
struct batch_owner final : tensor_owner {
  batch_owner(batch b, std::shared_ptr<std::atomic<std::size_t>> held)
      : m_batch(std::move(b)), m_held(std::move(held)) {
    // Relaxed: a count the consumer thread reads to decide about copies;
    // the slab itself is handed back through the loader's own locks.
    m_held->fetch_add(1, std::memory_order_relaxed);
  }
  ~batch_owner() override {
    if (m_batch.on_device()) {
      if (const auto s = current_stream(m_batch.images().device)) m_batch.release(*s);
    }
    m_batch.release();  // host batches, or on the stream the batch waited on
    m_held->fetch_sub(1, std::memory_order_relaxed);
  }
  batch m_batch;
  std::shared_ptr<std::atomic<std::size_t>> m_held;
};

DLDataType dl_type(dtype t) noexcept {
  switch (t) {
    case dtype::float32:
      return dl_float32();
    case dtype::float16:
      return dl_float16();
    case dtype::bfloat16:
      return dl_bfloat16();
    case dtype::uint8:
      break;
  }
  return dl_uint8();
}

// The images' shape and strides as torch sees them. A float NHWC batch is
// torch's channels_last memory format: shape [N, C, H, W] (what every
// model's forward() takes) over the NHWC bytes, so
// x.is_contiguous(memory_format=torch.channels_last) holds and a
// channels_last model reads it without a copy. uint8 batches stay [N, H,
// W, C] (bytes to convert, not a model input).
void set_geometry(tensor_owner& o, const tensor_view& v) {
  o.shape.assign(v.shape.begin(), v.shape.end());
  if (v.layout != layout::nhwc || v.dtype == dtype::uint8) return;
  const std::int64_t n = v.shape[0], h = v.shape[1], w = v.shape[2], c = v.shape[3];
  o.shape = {n, c, h, w};
  o.strides = {h * w * c, 1, w * c, c};
}

// Marks a call in progress: the loader has one consumer.
class busy_guard {
 public:
  explicit busy_guard(std::atomic<bool>& busy) : m_busy(busy) {
    if (m_busy.exchange(true, std::memory_order_acquire))
      throw std::runtime_error("ringfeed.Loader is used by two threads at once; it has one consumer");
  }
  ~busy_guard() { m_busy.store(false, std::memory_order_release); }
  busy_guard(const busy_guard&) = delete;
  busy_guard& operator=(const busy_guard&) = delete;

 private:
  std::atomic<bool>& m_busy;
};

// Waits for the pending request's result in 50 ms slices with the GIL
// released, raising what a signal handler raised (KeyboardInterrupt) in
// between; then takes it and clears `pending`. Interrupted, the request
// stays out: a later call takes its result.
void wait_done(std::shared_ptr<next_handoff>& pending, std::exception_ptr& error, std::optional<batch>& result,
               double timeout = 0) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
  for (;;) {
    if (timeout > 0 && std::chrono::steady_clock::now() >= deadline) {  // DataLoader words it as torch does
      PyErr_SetString(PyExc_TimeoutError, "no batch within the timeout");
      throw py::error_already_set();
    }
    {
      py::gil_scoped_release nogil;
      if (pending->wait_for(std::chrono::milliseconds(50))) {
        error = pending->take(result);
        pending.reset();
        return;
      }
    }
    if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  }
}

// The loader, opened with the GIL released. An object store may stall on
// its server while it is listed or indexed: it is opened on a helper thread
// while this one looks for Ctrl-C every 50 ms; KeyboardInterrupt stops the
// open (its reads cancelled, loader_options::stop) before it is raised.
std::unique_ptr<loader> open_interruptibly(loader_options options) {
  if (!io::is_object_location(options.source)) {
    py::gil_scoped_release nogil;  // indexing a large source takes a while
    return std::make_unique<loader>(std::move(options));
  }
  struct outcome {
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;              // guarded by mutex
    std::unique_ptr<loader> made;   // guarded by mutex
    std::exception_ptr error;       // guarded by mutex
  };
  auto out = std::make_shared<outcome>();
  std::stop_source stop;
  options.stop = stop.get_token();
  std::thread opener([out, o = std::move(options)]() mutable {
    std::unique_ptr<loader> made;
    std::exception_ptr error;
    try {
      made = std::make_unique<loader>(std::move(o));
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard lock(out->mutex);
    out->made = std::move(made);
    out->error = error;
    out->done = true;
    out->done_cv.notify_all();
  });
  for (;;) {
    {
      py::gil_scoped_release nogil;
      std::unique_lock lock(out->mutex);
      if (out->done_cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return out->done; })) break;
    }
    if (PyErr_CheckSignals() != 0) {  // KeyboardInterrupt is set (it stays set across the wait)
      stop.request_stop();
      {
        py::gil_scoped_release nogil;
        opener.join();
        std::lock_guard lock(out->mutex);
        out->made.reset();  // opened just before the stop: closed here, without the GIL
      }
      throw py::error_already_set();
    }
  }
  py::gil_scoped_release nogil;
  opener.join();
  if (out->error) std::rethrow_exception(out->error);
  return std::move(out->made);
}

}  // namespace

py_loader::py_loader(resolved settled) : m_generation(fork_generation()) {
  loader_options options = std::move(settled.options);
  m_recipe = std::move(settled.recipe);
  m_output = std::move(settled.output);
  m_shuffle = options.sampler.shuffle;
  options.start_eagerly = false;  // threads start with the first batch asked for
  const std::size_t device_buffers = options.device_buffers;
  m_loader = open_interruptibly(std::move(options));
  m_buffers = m_loader->uses_device() ? device_buffers : m_loader->stats().prefetch_batches + 1;
  m_position = m_loader->state();
}

py_loader::~py_loader() {
  try {
    close();
  } catch (...) {  // never from a destructor; close() reports only misuse
  }
}

loader& py_loader::checked() {
  if (!m_loader) throw std::runtime_error("ringfeed.Loader is closed");
  if (m_generation != fork_generation()) {
    if (m_started)
      throw std::runtime_error(
          "this ringfeed.Loader started its threads in a parent process before fork(); "
          "make a new ringfeed.Loader in the child");
    m_generation = fork_generation();  // nothing ran yet: the child adopts it
  }
  return *m_loader;
}

void py_loader::issue() {
  if (m_pending) return;  // an interrupted request is still out: its result comes first
  m_started = true;
  m_pending = next_handoff::start(*m_loader);
}

py::object py_loader::next(std::uintptr_t stream, double timeout) {
  loader& l = checked();
  busy_guard busy(m_busy);
  if (m_landed) {  // received with a Ctrl-C, which was raised instead
    landed kept = std::move(*m_landed);
    m_landed.reset();
    m_position = kept.position;
    if (kept.error) std::rethrow_exception(kept.error);
    return kept.result;
  }
  {
    py::gil_scoped_release nogil;  // the first call starts the threads
    issue();
  }
  std::exception_ptr error;
  std::optional<batch> got;
  wait_done(m_pending, error, got, timeout);
  const loader_state position = l.state();
  py::object result = py::none();  // the end of the epoch
  if (!error && got) result = to_python(std::move(*got), stream);
  // A signal that came while this waited or made its answer: Python would
  // raise its KeyboardInterrupt as this returns, the answer lost with it.
  // Checked last, so that nothing runs between this check and the return.
  if (PyErr_CheckSignals() != 0) {
    m_landed = landed{error, std::move(result), position};
    throw py::error_already_set();
  }
  m_position = position;
  if (error) std::rethrow_exception(error);
  return result;
}

py::object py_loader::to_python(batch b, std::uintptr_t stream) {
  // torch's current stream; 0 is its default stream, which needs the wait
  // as much as any other.
  if (b.on_device()) b.wait(reinterpret_cast<cuda::stream_t>(stream));
  const tensor_view v = b.images();
  const auto epoch = b.epoch();
  const auto number = b.number();
  const bool copy = m_held->load(std::memory_order_relaxed) + 1 >= m_buffers;
  py::capsule labels = host_capsule(std::vector<std::int64_t>(b.labels().begin(), b.labels().end()),
                                    {static_cast<std::int64_t>(b.size())}, dl_int64());
  auto owner = std::make_unique<batch_owner>(std::move(b), m_held);
  set_geometry(*owner, v);
  owner->managed.dl_tensor.data = v.data;
  owner->managed.dl_tensor.dtype = dl_type(v.dtype);
  owner->managed.dl_tensor.device =
      v.memory == memory_kind::device ? DLDevice{kDLCUDA, v.device} : DLDevice{kDLCPU, 0};
  py::capsule images = to_capsule(std::move(owner));
  return py::make_tuple(images, labels, epoch, number, copy);
}

void py_loader::drop_pending() {
  m_landed.reset();  // (its batch goes back to the stopped run's memory)
  if (m_pending) {  // a request interrupted by Ctrl-C: let it land, then drop it
    std::exception_ptr error;
    std::optional<batch> dropped;
    wait_done(m_pending, error, dropped);
  }
}

template <typename Restart>
void py_loader::restart(Restart&& restart) {
  loader& l = checked();
  busy_guard busy(m_busy);
  m_started = true;
  m_landed.reset();  // of the run restart() stops, even if it then throws
  {
    py::gil_scoped_release nogil;
    restart(l);
  }
  drop_pending();
  m_position = l.state();
}

void py_loader::set_epoch(std::uint64_t epoch) {
  restart([epoch](loader& l) { l.set_epoch(epoch); });
}

void py_loader::set_order(std::uint64_t epoch, const py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>& indices,
                          std::size_t first_batch) {
  if (indices.ndim() != 1) throw py::value_error("indices must be one-dimensional");
  std::vector<std::size_t> order(static_cast<std::size_t>(indices.shape(0)));
  const std::int64_t* at = indices.data();
  for (std::size_t i = 0; i < order.size(); ++i) {
    if (at[i] < 0)
      throw py::index_error("index " + std::to_string(at[i]) + " (at position " + std::to_string(i) + ") is negative");
    order[i] = static_cast<std::size_t>(at[i]);
  }
  restart([&](loader& l) { l.set_order(epoch, std::move(order), first_batch); });
}

py::dict py_loader::state() const {
  py::dict d;
  d["seed"] = m_position.seed;
  d["epoch"] = m_position.epoch;
  d["next_batch"] = m_position.next_batch;
  d["rank"] = m_position.rank;
  d["world_size"] = m_position.world_size;
  return d;
}

std::string py_loader::stats_json() const {
  if (!m_loader) throw std::runtime_error("ringfeed.Loader is closed");
  return m_loader->stats().json();
}

std::size_t py_loader::batches_per_epoch() const {
  if (!m_loader) throw std::runtime_error("ringfeed.Loader is closed");
  return m_loader->batches_per_epoch();
}

std::size_t py_loader::dataset_size() const {
  if (!m_loader) throw std::runtime_error("ringfeed.Loader is closed");
  return m_loader->dataset().size();
}

bool py_loader::uses_device() const { return m_loader && m_loader->uses_device(); }
std::string py_loader::host_reason() const { return m_loader ? m_loader->host_reason() : std::string(); }
bool py_loader::converts_on_device() const { return m_loader && m_loader->converts_on_device(); }

void py_loader::close() {
  if (!m_loader) return;
  if (m_generation != fork_generation() && m_started) {
    // A parent's running loader, copied by fork: its threads are not here
    // and its locks may be held. Leaked, never touched, with a batch kept
    // from it (whose release would take its locks).
    if (m_landed) static_cast<void>(new landed(std::move(*m_landed)));
    m_landed.reset();
    (void)m_loader.release();
    return;
  }
  busy_guard busy(m_busy);
  m_landed.reset();  // before the loader its batch belongs to
  std::unique_ptr<loader> l = std::move(m_loader);
  py::gil_scoped_release nogil;  // joins the threads
  l.reset();
}

void bind_loader(py::module_& m) {
  install_fork_handler();
  py::class_<py_loader>(m, "_Loader")
      .def(py::init([](const py::dict& options) { return std::make_unique<py_loader>(resolve(loader_request_from(options))); }))
      .def("next", &py_loader::next, py::arg("stream") = 0, py::arg("timeout") = 0.0)
      .def("set_epoch", &py_loader::set_epoch)
      .def("set_order", &py_loader::set_order, py::arg("epoch"), py::arg("indices"), py::arg("first_batch") = 0)
      .def("state", &py_loader::state)
      .def("stats_json", &py_loader::stats_json)
      .def("close", &py_loader::close)
      .def_property_readonly("batches_per_epoch", &py_loader::batches_per_epoch)
      .def_property_readonly("dataset_size", &py_loader::dataset_size)
      .def_property_readonly("uses_device", &py_loader::uses_device)
      .def_property_readonly("host_reason", &py_loader::host_reason)
      .def_property_readonly("converts_on_device", &py_loader::converts_on_device)
      .def_property_readonly("recipe", [](const py_loader& l) { return l.recipe(); })
      .def_property_readonly("output", [](const py_loader& l) { return l.output(); })
      .def_property_readonly("shuffle", [](const py_loader& l) { return l.shuffle(); })
      .def_property_readonly("started", &py_loader::started)
      .def_property_readonly("held", &py_loader::held)
      .def_property_readonly("buffers", &py_loader::buffers);
  // The accepted names and the s3 keys, from the C++ tables (one list of
  // each: loader.py generates its checks from them).
  m.def("_accepted_names", [](const std::string& option) {
    std::vector<std::string> out;
    for (auto n : accepted_names(option)) out.emplace_back(n);
    return out;
  });
  m.def("_s3_keys", [] {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& k : io::s3_option_keys())
      out.emplace_back(k.name, k.type == io::s3_option_key::kind::text ? "text"
                               : k.type == io::s3_option_key::kind::flag ? "flag"
                                                                         : "tristate");
    return out;
  });
  // "local" for a path, else the location's kind (io::classify_location):
  // the one answer to "is this a URL?".
  m.def("_is_local_path", [](const std::string& location) {
    return io::classify_location(location) == io::location_kind::local;
  });
  m.def("_set_stream_query", [](py::object fn) {
    PyObject* old = g_stream_query;
    g_stream_query = fn.release().ptr();
    (void)old;  // never freed: a deleter may be reading it on another thread
  });
}

}  // namespace ringfeed::python
