// Private to the Python binding: read_files, decode and the ImageFolder
// scan, for loaders other than ringfeed.Loader (see py_blocks.cpp).
#pragma once

#include <pybind11/pybind11.h>

namespace ringfeed::python {

void bind_blocks(pybind11::module_& m);

}  // namespace ringfeed::python
