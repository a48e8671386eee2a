// ringfeed::apply_preset: the train and val recipes every front end offers.
#include <stdexcept>
#include <string>

#include <ringfeed/loader.hpp>

#include "names_detail.hpp"

namespace ringfeed {
namespace {
enum class preset : unsigned char { train, val };
constexpr detail::named<preset> preset_names[] = {{"train", preset::train}, {"val", preset::val}};
}  // namespace

void apply_preset(loader_options& o, std::string_view name, int size, bool exact) {
  const preset p = detail::parse_name("pipeline", name, preset_names);
  if (size < 1) throw std::invalid_argument("size must be at least 1, not " + std::to_string(size));
  const auto mode = exact ? image::pipeline_mode::exact : image::pipeline_mode::fast;
  if (p == preset::train) {
    o.pipeline = image::pipeline::train(size, mode);
    o.sampler.shuffle = true;
  } else {
    o.pipeline = image::pipeline::val(size * 256 / 224, size, mode);
    o.sampler.shuffle = false;
  }
}

}  // namespace ringfeed
