// ringfeed::image transform spec — the one text form of a transform list,
// read by the CLI (`--transform`), the C API and the Python layer (which
// writes it from ringfeed.transforms or translated torchvision objects).
//
// Grammar (Python call syntax, torchvision's class and argument names):
//   spec   := call ( ';' call )* [';']  |  'Compose' '(' list ')'
//   call   := NAME '(' [ arg ( ',' arg )* [','] ] ')'
//   arg    := [ NAME '=' ] value
//   value  := NUMBER | STRING | NAME | call | list
//   list   := '[' [ value ( ',' value )* [','] ] ']'  |  '(' ... ')'
// NAME is [A-Za-z_][A-Za-z0-9_.]*: None, True and False are the Python
// constants, other names are enum members (`bilinear`,
// `InterpolationMode.BICUBIC`, `AutoAugmentPolicy.IMAGENET`, `float32`;
// matched without case and prefix). STRING is '…' or "…" without escapes.
// NUMBER is a decimal or exponent literal with an optional sign.
// Examples:
//   Resize(256); CenterCrop(224); ToTensor(); Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225))
//   RandomCrop(32, padding=4); RandomHorizontalFlip(); ToTensor(); Normalize((0.5,), (0.5,))
//   RandomApply([ColorJitter(0.4, 0.4, 0.4, 0.1)], p=0.8)
// Arguments bind to torchvision's constructor signatures (positional then
// keyword, defaults as torchvision's); an unknown op or argument, a missing
// one or a value of the wrong type is a transform_spec_error naming it and
// the column.
#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ringfeed::image {

/// A spec that does not parse or bind. what() is "transform spec, column N:
/// reason"; column() is 1-based (0 when the error is not at one place).
class transform_spec_error : public std::invalid_argument {
 public:
  transform_spec_error(std::size_t column, const std::string& reason);
  [[nodiscard]] std::size_t column() const noexcept { return m_column; }

 private:
  std::size_t m_column;
};

struct spec_call;

/// One parsed value.
struct spec_value {
  enum class kind : unsigned char { none, boolean, number, string, name, list, call };
  kind type = kind::none;
  bool boolean = false;
  double number = 0;
  bool integral = false;  ///< NUMBER written without '.' or exponent
  std::string text;       ///< string or name
  std::vector<spec_value> items;
  std::shared_ptr<const spec_call> call;
  std::size_t column = 0;
};

/// One parsed call: `name(positional..., keyword=value...)`.
struct spec_call {
  std::string name;
  std::vector<spec_value> positional;
  std::vector<std::pair<std::string, spec_value>> keywords;
  std::size_t column = 0;
};

/// Parses `spec` into its top-level calls (a Compose([...]) is unwrapped).
/// Throws transform_spec_error. Pure; nesting deeper than 32 is an error.
[[nodiscard]] std::vector<spec_call> parse_spec_calls(std::string_view spec);

/// One parameter of a torchvision transform's constructor, as the spec
/// binds it (positionally in this order, or by name).
struct op_param {
  std::string_view name;
  /// Its default in spec syntax ("None", "(0.08, 1.0)",
  /// "InterpolationMode.BILINEAR"); empty: required.
  std::string_view default_value{};
  /// For a required parameter, a value it accepts (for tests and docs).
  std::string_view example{};
};

struct op_signature {
  std::string_view name;  ///< torchvision's class name
  std::span<const op_param> params;
};

/// torchvision 0.14's constructor signature of every op the spec knows:
/// the one list of them (the Python classes are generated from it).
[[nodiscard]] std::span<const op_signature> op_signatures() noexcept;
/// The signature of `name`; nullptr when no op has that name.
[[nodiscard]] const op_signature* find_op_signature(std::string_view name) noexcept;

/// Formats a number as the spec writes it: the shortest text that reads
/// back to the same double.
[[nodiscard]] std::string spec_number(double v);

}  // namespace ringfeed::image
