// ringfeed._ringfeed: the C++ side of `import ringfeed` (lib/python/ringfeed/
// holds the Python side). Types and errors are translated here; the work is
// the library's.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <ringfeed/data/dataset.hpp>
#include <ringfeed/image/image.hpp>

#include "py_blocks.hpp"
#include "py_loader.hpp"

PYBIND11_MODULE(_ringfeed, m) {
  m.doc() = "ringfeed's C++ core; use the ringfeed package";
  m.attr("__version__") = RINGFEED_VERSION;
  m.attr("DEFAULT_MAX_PIXELS") = ringfeed::image::default_max_pixels;
  ringfeed::python::bind_loader(m);
  ringfeed::python::bind_blocks(m);
}
