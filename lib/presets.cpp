// ringfeed::apply_preset: the train and val recipes every front end offers.
#include <stdexcept>
#include <string>

#include <ringfeed/loader.hpp>

namespace ringfeed {

void apply_preset(loader_options& o, std::string_view name, int size, bool exact) {
  if (size < 1) throw std::invalid_argument("size must be at least 1, not " + std::to_string(size));
  const auto mode = exact ? image::pipeline_mode::exact : image::pipeline_mode::fast;
  if (name == "train") {
    o.pipeline = image::pipeline::train(size, mode);
    o.sampler.shuffle = true;
  } else if (name == "val") {
    o.pipeline = image::pipeline::val(size * 256 / 224, size, mode);
    o.sampler.shuffle = false;
  } else {
    throw std::invalid_argument("pipeline must be \"train\" or \"val\", not \"" + std::string(name) + "\"");
  }
}

}  // namespace ringfeed
