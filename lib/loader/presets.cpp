// ringfeed::apply_preset and apply_transform: the train and val recipes
// (two transform lists) and any other list, for every front end.
#include <stdexcept>
#include <string>

#include <ringfeed/image/transform_list.hpp>
#include <ringfeed/loader/loader.hpp>

#include "names_detail.hpp"

namespace ringfeed {
void apply_preset(loader_options& o, std::string_view name, int size, bool exact, std::uint64_t max_pixels) {
  const detail::preset p = detail::parse_name("pipeline", name, detail::preset_names);
  if (size < 1) throw std::invalid_argument("size must be at least 1, not " + std::to_string(size));
  if (max_pixels == 0) throw std::invalid_argument("max_pixels must be at least 1");
  const auto mode = exact ? image::pipeline_mode::exact : image::pipeline_mode::fast;
  if (p == detail::preset::train) {
    o.pipeline = image::transform_list::train(size).compile(mode);
    o.sampler.shuffle = true;
  } else {
    o.pipeline = image::transform_list::val(size * 256 / 224, size).compile(mode);
    o.sampler.shuffle = false;
  }
  image::decode_options decoding = o.pipeline.decoding();
  decoding.max_pixels = max_pixels;
  o.pipeline.set_decode_options(decoding);
}

void apply_transform(loader_options& o, std::string_view spec, bool exact, std::uint64_t max_pixels) {
  if (max_pixels == 0) throw std::invalid_argument("max_pixels must be at least 1");
  const auto list = image::transform_list::parse(spec);
  if (list.empty()) throw std::invalid_argument("transform: the list is empty");
  o.pipeline = list.compile(exact ? image::pipeline_mode::exact : image::pipeline_mode::fast);
  o.output = o.pipeline.output();
  // A recipe with a random op is a training recipe: shuffled, as "train" is.
  o.sampler.shuffle = false;
  for (const auto& op : list.ops()) o.sampler.shuffle = o.sampler.shuffle || !op->deterministic();
  image::decode_options decoding = o.pipeline.decoding();
  decoding.max_pixels = max_pixels;
  o.pipeline.set_decode_options(decoding);
}

}  // namespace ringfeed
