// ringfeed._ringfeed building blocks for other loaders: read_files, decode,
// and the ImageFolder scan. Each releases the GIL while C++ works.
#include "py_blocks.hpp"

#include <pybind11/stl.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include <ringfeed/data/dataset.hpp>
#include <ringfeed/image/decode.hpp>
#include <ringfeed/image/transform_list.hpp>
#include <ringfeed/image/pipeline.hpp>
#include <ringfeed/image/transform_spec.hpp>
#include <ringfeed/image/torch_reference.hpp>
#include <ringfeed/io/reader.hpp>
#include <ringfeed/io/storage.hpp>
#include <ringfeed/loader/loader.hpp>
#include <ringfeed/loader/resolve.hpp>
#include <ringfeed/sync_wait.hpp>
#include <ringfeed/thread_pool.hpp>
#include <ringfeed/when_all.hpp>

#include "tensor.hpp"

namespace py = pybind11;

namespace ringfeed::python {
namespace {

// The bytes of one file, exposed read-only through the buffer protocol.
struct file_bytes {
  io::read_buffer buffer;
  const std::byte* data = nullptr;
  std::size_t size = 0;
};

// A reader and the threads its reads resume on, shared by read_files calls
// with the same settings, made on first use (no thread before that) and
// made again in a forked child (the parent's is leaked there).
struct io_context {
  std::unique_ptr<thread_pool> pool;
  std::unique_ptr<io::reader> reader;
  std::uint64_t generation = 0;
};

std::shared_ptr<io_context> context_for(std::size_t depth, bool direct) {
  static std::mutex mutex;
  static auto* contexts = new std::map<std::pair<std::size_t, bool>, std::shared_ptr<io_context>>();  // leaked: outlives exit
  std::lock_guard lock(mutex);
  auto& c = (*contexts)[{depth, direct}];
  if (c && c->generation == fork_generation()) return c;
  if (c) new std::shared_ptr<io_context>(std::move(c));  // a parent's threads: never joined, never freed
  c = std::make_shared<io_context>();
  c->generation = fork_generation();
  c->pool = std::make_unique<thread_pool>(2);
  io::reader_options ro;
  ro.depth = depth;
  ro.direct = direct;
  c->reader = io::reader::create(*c->pool, std::move(ro));
  return c;
}

task<> read_some(io::reader& r, const std::vector<std::string>& paths, std::vector<file_bytes>& out,
                 std::vector<std::exception_ptr>& errors, std::atomic<std::size_t>& next) {
  for (;;) {
    // Relaxed: each index is taken once; results are read after when_all.
    const std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
    if (i >= paths.size()) co_return;
    try {
      const std::span<const std::byte> got = co_await r.read_file(paths[i], out[i].buffer);
      out[i].data = got.data();
      out[i].size = got.size();
    } catch (...) {
      errors[i] = std::current_exception();
    }
  }
}

// A file name (bytes) as the str Python's os functions make of it
// (os.fsdecode: surrogateescape for bytes that are not UTF-8).
py::object fs_str(const std::string& name) {
  py::object p = py::reinterpret_steal<py::object>(
      PyUnicode_DecodeFSDefaultAndSize(name.data(), static_cast<Py_ssize_t>(name.size())));
  if (!p) throw py::error_already_set();
  return p;
}

[[noreturn]] void raise_os_error(const std::system_error& e, const std::string& path) {
  // OSError(errno, message, filename) picks the subclass (FileNotFoundError, ...).
  py::object error = py::module_::import("builtins").attr("OSError")(e.code().value(), e.what(), fs_str(path));
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
  throw py::error_already_set();
}

py::list read_files(const std::vector<std::string>& paths, std::size_t io_depth, bool direct) {
  std::vector<file_bytes> out(paths.size());
  std::vector<std::exception_ptr> errors(paths.size());
  if (!paths.empty()) {
    py::gil_scoped_release nogil;
    const std::size_t depth = io_depth != 0 ? io_depth : io::probe_source(paths.front()).io_depth;
    const auto ctx = context_for(depth, direct);
    std::atomic<std::size_t> next{0};
    std::vector<task<>> workers;
    for (std::size_t i = 0; i < std::min(depth, paths.size()); ++i)
      workers.push_back(read_some(*ctx->reader, paths, out, errors, next));
    sync_wait(when_all(std::move(workers)));
  }
  for (std::size_t i = 0; i < paths.size(); ++i) {
    if (!errors[i]) continue;
    try {
      std::rethrow_exception(errors[i]);
    } catch (const std::system_error& e) {
      raise_os_error(e, paths[i]);
    }
  }
  py::list result;
  for (auto& f : out) {
    py::object holder = py::cast(std::move(f));
    result.append(py::memoryview(holder));
  }
  return result;
}

// decode(transform=...): what the loader puts in the sample's slot, any size.
py::capsule decode_transform(std::span<const std::byte> bytes, const std::string& spec, bool exact,
                             std::uint64_t seed, std::uint64_t epoch, std::uint64_t index, const std::string& name,
                             std::uint64_t max_pixels) {
  loader_options o;
  apply_transform(o, spec, exact, max_pixels);
  std::vector<std::byte> out;
  image::output_shape shape;
  {
    py::gil_scoped_release nogil;
    thread_local image::pipeline_workspace ws;
    (void)o.pipeline.apply_to(ws, bytes, name, image::sample_key{seed, epoch, index}, out, shape);
  }
  const output_spec out_spec = o.pipeline.output();
  std::vector<std::int64_t> dims = out_spec.layout == layout::nhwc
                                       ? std::vector<std::int64_t>{shape.height, shape.width, shape.channels}
                                       : std::vector<std::int64_t>{shape.channels, shape.height, shape.width};
  if (out_spec.dtype == dtype::uint8) {
    std::vector<std::uint8_t> v(out.size());
    std::memcpy(v.data(), out.data(), out.size());
    return host_capsule(std::move(v), std::move(dims), dl_uint8());
  }
  std::vector<float> v(out.size() / sizeof(float));
  std::memcpy(v.data(), out.data(), out.size());
  return host_capsule(std::move(v), std::move(dims), dl_float32());
}

py::capsule decode(const py::buffer& data, const std::string& preset, int size, bool exact, std::uint64_t seed,
                   std::uint64_t epoch, std::uint64_t index, const std::string& name, std::uint64_t max_pixels,
                   const std::string& transform) {
  const py::buffer_info in = data.request();
  if (in.ndim > 1 && !PyBuffer_IsContiguous(in.view(), 'C'))
    throw std::invalid_argument("decode: data must be contiguous bytes");
  const std::span<const std::byte> bytes(static_cast<const std::byte*>(in.ptr),
                                         static_cast<std::size_t>(in.size * in.itemsize));
  check_one_recipe(transform, !preset.empty());
  if (!transform.empty()) return decode_transform(bytes, transform, exact, seed, epoch, index, name, max_pixels);
  std::vector<std::uint8_t> pixels;
  std::int64_t height = 0, width = 0;
  {
    py::gil_scoped_release nogil;
    if (preset.empty()) {  // the whole image, as PIL's Image.open(f).convert("RGB")
      thread_local image::decoder dec;
      image::image_buffer rgb;
      image::decode_options options;
      options.max_pixels = max_pixels;
      dec.decode(bytes, name, rgb, options);
      height = rgb.height();
      width = rgb.width();
      pixels.resize(static_cast<std::size_t>(height * width * 3));
      for (std::int64_t y = 0; y < height; ++y)
        std::memcpy(pixels.data() + y * width * 3, rgb.view().row(static_cast<int>(y)),
                    static_cast<std::size_t>(width * 3));
    } else {
      loader_options o;
      apply_preset(o, preset, size, exact, max_pixels);
      o.pipeline.set_output(output_spec::uint8_nhwc());  // the slot of a uint8 loader
      const image::output_shape shape = *o.pipeline.fixed_shape();  // presets end with a crop
      height = shape.height;
      width = shape.width;
      pixels.resize(shape.bytes());
      thread_local image::pipeline_workspace ws;
      o.pipeline.apply(ws, bytes, name, image::sample_key{seed, epoch, index},
                       std::as_writable_bytes(std::span(pixels)));
    }
  }
  return host_capsule(std::move(pixels), {height, width, 3}, dl_uint8());
}

py::tuple scan_image_folder(const std::string& root, bool include_hidden) {
  data::dataset ds;
  {
    py::gil_scoped_release nogil;
    data::dataset_options o;
    o.kind = data::source_kind::image_folder;
    o.include_hidden = include_hidden;
    ds = data::open_dataset(root, o);
  }
  py::list classes;
  for (const auto& c : ds.classes()) classes.append(fs_str(c));  // folder names: bytes
  py::list samples;
  for (std::size_t i = 0; i < ds.size(); ++i) {
    // Names are bytes on disk; Python's os functions decode them this way.
    samples.append(py::make_tuple(fs_str(ds.path(i)), ds.label(i)));
  }
  return py::make_tuple(classes, samples);
}

}  // namespace

void bind_blocks(py::module_& m) {
  py::class_<file_bytes>(m, "_FileBytes", py::buffer_protocol())
      .def_buffer([](file_bytes& f) -> py::buffer_info {
        return py::buffer_info(const_cast<std::byte*>(f.data), 1, py::format_descriptor<std::uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(f.size)}, {1}, /*readonly=*/true);
      });
  m.def("read_files", &read_files, py::arg("paths"), py::arg("io_depth") = 0, py::arg("direct") = false);
  m.def("_decode", &decode, py::arg("data"), py::arg("pipeline"), py::arg("size"), py::arg("exact"),
        py::arg("seed"), py::arg("epoch"), py::arg("index"), py::arg("name"),
        py::arg("max_pixels"), py::arg("transform") = std::string());
  m.def("_transform_ops", &image::transform_list::supported_ops);
  // [(op, [(param, default in spec syntax or None when required)])]: the
  // C++ table ringfeed.transforms generates its classes from.
  m.def("_transform_signatures", [] {
    std::vector<std::pair<std::string, std::vector<std::pair<std::string, py::object>>>> out;
    for (const auto& s : image::op_signatures()) {
      std::vector<std::pair<std::string, py::object>> params;
      for (const auto& p : s.params)
        params.emplace_back(std::string(p.name), p.default_value.empty() ? py::object(py::none())
                                                                          : py::object(py::str(std::string(p.default_value))));
      out.emplace_back(std::string(s.name), std::move(params));
    }
    return out;
  });
  m.def(
      "_set_torch_reference",
      [](const std::string& text) {
        const auto r = image::torch_reference::parse(text);
        image::set_torch_reference(r);
        return r.name;
      },
      py::arg("text"), "Ops built from now on follow this torch's arithmetic (torch_reference.hpp).");
  m.def("_torch_reference", [] { return image::current_torch_reference().name; });
  m.def(
      "_augment_magnitudes",
      [](const std::string& op, int bins, int width, int height, bool wide) {
        return image::transform_list::augment_magnitudes(op, bins, {width, height}, wide);
      },
      py::arg("op"), py::arg("bins"), py::arg("width"), py::arg("height"), py::arg("wide"));
  m.def(
      "_transform_spec", [](const std::string& spec) { return image::transform_list::parse(spec).spec(); },
      py::arg("spec"));
  m.def(
      "_transform_output",
      [](const std::string& spec, int source_height, int source_width) {
        // (kind, channels, height or None, width or None, random) after the
        // list, for RGB images of any size or (source_height > 0) of that one.
        const auto list = image::transform_list::parse(spec);
        image::frame_shape in;
        if (source_height > 0 && source_width > 0) in.size = image::size2{source_width, source_height};
        const auto f = list.infer(in);
        bool random = false;
        for (const auto& op : list.ops()) random = random || !op->deterministic();
        const std::string kind = f.kind == image::frame_kind::image       ? "image"
                                 : f.kind == image::frame_kind::tensor_u8 ? "uint8"
                                                                          : "float32";
        py::object h = py::none(), w = py::none();
        if (f.size) {
          h = py::int_(f.size->height);
          w = py::int_(f.size->width);
        }
        return py::make_tuple(kind, f.channels, h, w, random);
      },
      py::arg("spec"), py::arg("source_height") = 0, py::arg("source_width") = 0);
  m.def(
      "_transform_draws",
      [](const std::string& spec, std::size_t position, int width, int height, int channels, std::uint64_t seed,
         std::uint64_t epoch, std::uint64_t index) {
        // Test hook: what op `position` of the list draws for one sample.
        const auto list = image::transform_list::parse(spec);
        if (position >= list.ops().size()) throw std::invalid_argument("_transform_draws: no op at that position");
        sample_rng rng(sample_key{seed, epoch, index}, static_cast<std::uint32_t>(position + 1));
        return list.ops()[position]->draw_for_test(rng, {width, height}, channels);
      },
      py::arg("spec"), py::arg("position"), py::arg("width"), py::arg("height"), py::arg("channels"),
      py::arg("seed"), py::arg("epoch"), py::arg("index"));
  m.def("_scan_image_folder", &scan_image_folder, py::arg("root"), py::arg("include_hidden"));
}

}  // namespace ringfeed::python
