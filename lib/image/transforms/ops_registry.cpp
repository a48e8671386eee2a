// The argument binder and the name → op table of the spec grammar.
#include "ops_detail.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <stdexcept>

namespace ringfeed::image {

std::string_view to_string(frame_kind k) noexcept {
  switch (k) {
    case frame_kind::image: return "a PIL image";
    case frame_kind::tensor_u8: return "a uint8 tensor";
    case frame_kind::tensor_f32: return "a float tensor";
  }
  return "?";
}

void frame::reset_tensor(int c, int h, int w) {
  kind = frame_kind::tensor_f32;
  channels = c;
  height = h;
  width = w;
  values.resize(static_cast<std::size_t>(c) * static_cast<std::size_t>(h) * static_cast<std::size_t>(w));
}

void frame::set_image(frame_kind k) {
  kind = k;
  channels = pixels.channels();
  height = pixels.height();
  width = pixels.width();
}

namespace {

const char* kind_name(spec_value::kind k) {
  switch (k) {
    case spec_value::kind::none: return "None";
    case spec_value::kind::boolean: return "a bool";
    case spec_value::kind::number: return "a number";
    case spec_value::kind::string: return "a string";
    case spec_value::kind::name: return "a name";
    case spec_value::kind::list: return "a list";
    case spec_value::kind::call: return "a transform";
  }
  return "?";
}

std::string lower_tail(std::string_view s) {
  const auto dot = s.rfind('.');
  if (dot != std::string_view::npos) s.remove_prefix(dot + 1);
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

spec_args::spec_args(const spec_call& call) : m_call(&call) {
  const op_signature* signature = find_op_signature(call.name);
  if (signature == nullptr) throw std::logic_error("transform op " + call.name + " has no signature (op_signatures.cpp)");
  const auto params = signature->params;
  if (call.positional.size() > params.size())
    throw transform_spec_error(call.column, call.name + " takes at most " + std::to_string(params.size()) +
                                                " arguments, " + std::to_string(call.positional.size()) +
                                                " given");
  auto it = params.begin();
  for (const spec_value& v : call.positional) m_bound.emplace_back((it++)->name, &v);
  for (const auto& keyword : call.keywords) {
    // not a structured binding: clang 14 cannot capture one in a lambda
    const std::string& name = keyword.first;
    const spec_value& v = keyword.second;
    const auto found = std::find_if(params.begin(), params.end(), [&](const op_param& p) { return p.name == name; });
    if (found == params.end()) {
      std::string known;
      for (const auto& p : params) known += (known.empty() ? "" : ", ") + std::string(p.name);
      throw transform_spec_error(v.column, call.name + " has no argument '" + name + "' (it takes: " +
                                               (known.empty() ? "none" : known) + ")");
    }
    for (const auto& b : m_bound)
      if (b.first == name)
        throw transform_spec_error(v.column, call.name + ": argument '" + name + "' given twice");
    m_bound.emplace_back(found->name, &v);
  }
}

const spec_value* spec_args::get(std::string_view param) const {
  for (const auto& b : m_bound)
    if (b.first == param) return b.second;
  return nullptr;
}

void spec_args::fail(std::string_view param, const std::string& reason) const {
  const spec_value* v = get(param);
  throw transform_spec_error(v ? v->column : m_call->column, m_call->name + "(" + std::string(param) + "): " + reason);
}

double spec_args::number(std::string_view param, double fallback) const {
  const spec_value* v = get(param);
  if (v == nullptr || v->type == spec_value::kind::none) return fallback;
  if (v->type == spec_value::kind::boolean) return v->boolean ? 1 : 0;
  if (v->type != spec_value::kind::number) fail(param, std::string("expected a number, got ") + kind_name(v->type));
  return v->number;
}

int spec_args::integer(std::string_view param, int fallback) const {
  const spec_value* v = get(param);
  if (v == nullptr || v->type == spec_value::kind::none) return fallback;
  const double d = number(param, fallback);
  if (!(std::floor(d) == d) || std::fabs(d) > 1e9) fail(param, "expected an integer, got " + spec_number(d));
  return static_cast<int>(d);
}

bool spec_args::boolean(std::string_view param, bool fallback) const {
  const spec_value* v = get(param);
  if (v == nullptr || v->type == spec_value::kind::none) return fallback;
  if (v->type == spec_value::kind::boolean) return v->boolean;
  if (v->type == spec_value::kind::number && (v->number == 0 || v->number == 1)) return v->number == 1;
  fail(param, std::string("expected True or False, got ") + kind_name(v->type));
}

std::vector<double> spec_args::numbers(std::string_view param, std::vector<double> fallback) const {
  const spec_value* v = get(param);
  if (v == nullptr || v->type == spec_value::kind::none) return fallback;
  if (v->type == spec_value::kind::number || v->type == spec_value::kind::boolean) return {number(param, 0)};
  if (v->type != spec_value::kind::list)
    fail(param, std::string("expected a number or a list of numbers, got ") + kind_name(v->type));
  std::vector<double> out;
  for (const spec_value& item : v->items) {
    if (item.type != spec_value::kind::number)
      throw transform_spec_error(item.column, m_call->name + "(" + std::string(param) +
                                                  "): expected numbers in the list, got " + kind_name(item.type));
    out.push_back(item.number);
  }
  return out;
}

int spec_args::choice(std::string_view param, std::span<const std::string_view> choices, int fallback) const {
  const spec_value* v = get(param);
  if (v == nullptr || v->type == spec_value::kind::none) return fallback;
  if (v->type != spec_value::kind::name && v->type != spec_value::kind::string)
    fail(param, std::string("expected a name, got ") + kind_name(v->type));
  const std::string want = lower_tail(v->text);
  int i = 0;
  std::string known;
  for (auto c : choices) {
    if (want == c) return i;
    known += (known.empty() ? "" : ", ") + std::string(c);
    ++i;
  }
  fail(param, "unknown value '" + v->text + "' (supported: " + known + ")");
}

std::vector<op_ptr> spec_args::transforms(std::string_view param) const {
  const spec_value* v = get(param);
  if (v == nullptr) fail(param, "missing (a list of transforms)");
  std::vector<op_ptr> out;
  if (v->type == spec_value::kind::call) {
    out.push_back(make_op(*v->call));
    return out;
  }
  if (v->type != spec_value::kind::list) fail(param, std::string("expected a list of transforms, got ") + kind_name(v->type));
  for (const spec_value& item : v->items) {
    if (item.type != spec_value::kind::call)
      throw transform_spec_error(item.column, m_call->name + "(" + std::string(param) +
                                                  "): expected transforms in the list, got " + kind_name(item.type));
    out.push_back(make_op(*item.call));
  }
  if (out.size() > 63) fail(param, "at most 63 transforms per list");
  return out;
}

namespace {
std::array<std::span<const op_entry>, 12> op_tables() {
  return {shape_op_entries(),      tensor_op_entries(),      geometry_op_entries(),   color_op_entries(),
          augment_op_entries(),    augmix_op_entries(),      container_op_entries(),  v2_op_entries(),
          timm_augment_op_entries(), timm_policy_op_entries(), timm_erasing_op_entries(),
          timm_geometry_op_entries()};
}
}  // namespace

op_ptr make_op(const spec_call& call) {
  for (auto table : op_tables())
    for (const op_entry& e : table)
      if (e.name == call.name) return e.make(call);
  throw transform_spec_error(call.column, "unsupported transform '" + call.name +
                                              "' (supported: " + supported_op_names() + ")");
}

std::string supported_op_names() {
  std::vector<std::string_view> names;
  for (auto table : op_tables())
    for (const op_entry& e : table) names.push_back(e.name);
  std::sort(names.begin(), names.end());
  std::string out;
  for (auto n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

void run_op(const transform_op& op, frame& f, const sample_key& key, std::uint32_t stream, op_scratch& s) {
  sample_rng rng(key, stream);
  op.run(f, rng, key, stream, s);
}

std::string spec_tuple(std::span<const double> v) {
  std::string out = "(";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + spec_number(v[i]);
  if (v.size() == 1) out += ",";
  return out + ")";
}

void require_image(std::string_view op, const frame& f) {
  if (f.kind != frame_kind::image)
    throw std::invalid_argument(std::string(op) + " expects a PIL image, got " + std::string(to_string(f.kind)));
}

void require_kind(std::string_view op, const frame_shape& in, std::initializer_list<frame_kind> kinds) {
  for (frame_kind k : kinds)
    if (k == in.kind) return;
  std::string want;
  for (frame_kind k : kinds) want += (want.empty() ? "" : " or ") + std::string(to_string(k));
  std::string hint;
  if (in.kind != frame_kind::image && std::find(kinds.begin(), kinds.end(), frame_kind::image) != kinds.end())
    hint = " (on a tensor torchvision computes " + std::string(op) +
           " with torch's arithmetic, which ringfeed does not run; on a PIL image it uses Pillow's, which ringfeed "
           "does: put ToImage() / PILToTensor() after it)";
  throw std::invalid_argument(std::string(op) + " expects " + want + ", but the transform before it gives " +
                              std::string(to_string(in.kind)) + hint);
}

}  // namespace ringfeed::image
