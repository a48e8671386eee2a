// timm's augmentation policies (timm.data.auto_augment) as list ops over
// TimmAugmentOp children: RandAugment (TimmRandAugment: num_layers ops
// drawn uniformly with replacement, or by `choice_weights` without
// replacement, as np.random.choice does), AutoAugment (TimmAutoAugment: one
// sub-policy drawn uniformly, its ops in order) and AugMixAugment
// (TimmAugMix: `width` chains of `depth` or 1..3 ops, mixed in float32 with
// Dirichlet weights, truncated to bytes and blended with the original by a
// Beta(α, α) draw — _apply_basic's numpy arithmetic).
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <ringfeed/image/color.hpp>

#include "timm_augment.hpp"

namespace ringfeed::image {

namespace {

using augment_ptr = std::shared_ptr<const timm_augment_op>;

// The TimmAugmentOp calls of a list argument.
std::vector<augment_ptr> augment_ops(const spec_args& a, const spec_value& list, std::string_view param) {
  if (list.type != spec_value::kind::list) a.fail(param, "expected a list of TimmAugmentOp(...)");
  std::vector<augment_ptr> out;
  for (const spec_value& item : list.items) {
    if (item.type != spec_value::kind::call || item.call->name != "TimmAugmentOp")
      throw transform_spec_error(item.column, a.op() + "(" + std::string(param) + "): expected TimmAugmentOp(...)");
    out.push_back(make_timm_augment_op(*item.call));
  }
  return out;
}

// The `ops` argument: a list of one TimmAugmentOp or more.
std::vector<augment_ptr> required_ops(const spec_args& a) {
  const spec_value* ops = a.get("ops");
  if (ops == nullptr) a.fail("ops", "missing");
  auto list = augment_ops(a, *ops, "ops");
  if (list.empty()) a.fail("ops", "an empty list");
  return list;
}

std::string ops_spec(const std::vector<augment_ptr>& ops) {
  std::string s = "[";
  for (std::size_t i = 0; i < ops.size(); ++i) s += (i ? ", " : "") + ops[i]->spec();
  return s + "]";
}

frame_shape infer_all(const std::vector<augment_ptr>& ops, const frame_shape& in) {
  for (const auto& op : ops) (void)op->infer(in);
  return in;
}

// Each op's draws and apply, in order; the test hook's record is
// {op index, applied, magnitude, arg, filter} per op.
void run_ops(const std::vector<augment_ptr>& ops, std::span<const std::size_t> chosen, frame* f, sample_rng& rng,
             size2 size, op_scratch* s, std::vector<double>* record) {
  for (std::size_t k : chosen) {
    const timm_augment_draw d = ops[k]->draw(rng, size);
    if (record != nullptr)
      record->insert(record->end(), {double(k), d.applied ? 1.0 : 0.0, d.magnitude, d.arg, double(d.filter)});
    if (f != nullptr) ops[k]->apply(*f, d, *s);
  }
}

// --- RandAugment -----------------------------------------------------------------------

class rand_augment_op final : public transform_op {
 public:
  rand_augment_op(std::vector<augment_ptr> ops, int layers, std::vector<double> weights)
      : m_ops(std::move(ops)), m_layers(layers), m_weights(std::move(weights)) {}
  std::string_view name() const noexcept override { return "TimmRandAugment"; }
  std::string spec() const override {
    return "TimmRandAugment(ops=" + ops_spec(m_ops) + ", num_layers=" + std::to_string(m_layers) +
           ", choice_weights=" + (m_weights.empty() ? std::string("None") : spec_tuple(m_weights)) + ")";
  }
  frame_shape infer(const frame_shape& in) const override {
    require_kind(name(), in, {frame_kind::image});
    return infer_all(m_ops, in);
  }
  bool deterministic() const noexcept override { return false; }
  // np.random.choice(ops, num_layers, replace=weights is None, p=weights).
  std::vector<std::size_t> choose(sample_rng& rng) const {
    std::vector<std::size_t> chosen;
    if (m_weights.empty()) {
      for (int i = 0; i < m_layers; ++i)
        chosen.push_back(static_cast<std::size_t>(rng.uniform_int(0, static_cast<std::int64_t>(m_ops.size()))));
      return chosen;
    }
    // Without replacement: each pick from the weights left, renormalised
    // (numpy's batched redraw of duplicates gives the same distribution).
    std::vector<double> w = m_weights;
    for (int i = 0; i < m_layers; ++i) {
      double total = 0;
      for (double x : w) total += x;
      double u = rng.uniform() * total;
      std::size_t k = 0;
      for (; k + 1 < w.size(); ++k) {
        if (w[k] > 0 && u < w[k]) break;
        u -= w[k];
      }
      while (w[k] <= 0 && k > 0) --k;  // rounding past the last positive weight
      chosen.push_back(k);
      w[k] = 0;
    }
    return chosen;
  }
  std::vector<double> draw_for_test(sample_rng& rng, size2 in, int) const override {
    std::vector<double> record;
    const auto chosen = choose(rng);
    run_ops(m_ops, chosen, nullptr, rng, in, nullptr, &record);
    return record;
  }
  void run(frame& f, sample_rng& rng, const sample_key&, std::uint32_t, op_scratch& s) const override {
    const auto chosen = choose(rng);
    run_ops(m_ops, chosen, &f, rng, f.size(), &s, nullptr);
  }

 private:
  std::vector<augment_ptr> m_ops;
  int m_layers;
  std::vector<double> m_weights;  // empty: uniform with replacement
};

op_ptr make_rand_augment(const spec_call& c) {
  const spec_args a(c);
  auto list = required_ops(a);
  const int layers = a.integer("num_layers", 2);
  if (layers < 0 || layers > 64) a.fail("num_layers", "must be in [0, 64]");
  std::vector<double> weights = a.numbers("choice_weights", {});
  if (!weights.empty()) {
    if (weights.size() != list.size()) a.fail("choice_weights", "needs one weight per op");
    int positive = 0;
    for (double w : weights) {
      if (!(w >= 0) || std::isinf(w)) a.fail("choice_weights", "weights must be finite and >= 0");
      positive += w > 0;
    }
    if (positive < layers)
      a.fail("choice_weights", "Fewer non-zero entries in p than size (numpy's choice without replacement)");
  }
  return std::make_shared<rand_augment_op>(std::move(list), layers, std::move(weights));
}

// --- AutoAugment -----------------------------------------------------------------------

class auto_augment_op final : public transform_op {
 public:
  explicit auto_augment_op(std::vector<std::vector<augment_ptr>> policy) : m_policy(std::move(policy)) {}
  std::string_view name() const noexcept override { return "TimmAutoAugment"; }
  std::string spec() const override {
    std::string s = "TimmAutoAugment(policy=[";
    for (std::size_t i = 0; i < m_policy.size(); ++i) s += (i ? ", " : "") + ops_spec(m_policy[i]);
    return s + "])";
  }
  frame_shape infer(const frame_shape& in) const override {
    require_kind(name(), in, {frame_kind::image});
    for (const auto& sub : m_policy) (void)infer_all(sub, in);
    return in;
  }
  bool deterministic() const noexcept override { return false; }
  // random.choice(policy), then its ops in order; the record starts with
  // the sub-policy's index.
  std::vector<double> draw_for_test(sample_rng& rng, size2 in, int) const override {
    const auto id = static_cast<std::size_t>(rng.uniform_int(0, static_cast<std::int64_t>(m_policy.size())));
    std::vector<double> record{double(id)};
    run_ops(m_policy[id], all(m_policy[id]), nullptr, rng, in, nullptr, &record);
    return record;
  }
  void run(frame& f, sample_rng& rng, const sample_key&, std::uint32_t, op_scratch& s) const override {
    const auto id = static_cast<std::size_t>(rng.uniform_int(0, static_cast<std::int64_t>(m_policy.size())));
    run_ops(m_policy[id], all(m_policy[id]), &f, rng, f.size(), &s, nullptr);
  }

 private:
  static std::vector<std::size_t> all(const std::vector<augment_ptr>& ops) {
    std::vector<std::size_t> k(ops.size());
    for (std::size_t i = 0; i < k.size(); ++i) k[i] = i;
    return k;
  }
  std::vector<std::vector<augment_ptr>> m_policy;
};

op_ptr make_auto_augment(const spec_call& c) {
  const spec_args a(c);
  const spec_value* policy = a.get("policy");
  if (policy == nullptr || policy->type != spec_value::kind::list || policy->items.empty())
    a.fail("policy", "expected a list of sub-policies (lists of TimmAugmentOp(...))");
  std::vector<std::vector<augment_ptr>> subs;
  for (const spec_value& sub : policy->items) subs.push_back(augment_ops(a, sub, "policy"));
  return std::make_shared<auto_augment_op>(std::move(subs));
}

// --- AugMixAugment ---------------------------------------------------------------------

struct augmix_draw {
  std::vector<float> weights;  // np.float32(np.random.dirichlet([alpha] * width))
  float m = 0;                 // np.float32(np.random.beta(alpha, alpha))
};

class augmix_op final : public transform_op {
 public:
  augmix_op(std::vector<augment_ptr> ops, double alpha, int width, int depth)
      : m_ops(std::move(ops)), m_alpha(alpha), m_width(width), m_depth(depth) {}
  std::string_view name() const noexcept override { return "TimmAugMix"; }
  std::string spec() const override {
    return "TimmAugMix(ops=" + ops_spec(m_ops) + ", alpha=" + spec_number(m_alpha) +
           ", width=" + std::to_string(m_width) + ", depth=" + std::to_string(m_depth) + ", blended=False)";
  }
  frame_shape infer(const frame_shape& in) const override {
    require_kind(name(), in, {frame_kind::image});
    if (in.channels != 3)
      throw std::invalid_argument("TimmAugMix: _apply_basic mixes arrays of shape (width, height, bands), which "
                                  "numpy cannot add to a 1-band image's (height, width) array");
    if (in.size && in.size->width != in.size->height) throw not_square();
    return infer_all(m_ops, in);
  }
  bool deterministic() const noexcept override { return false; }
  augmix_draw draw_mix(sample_rng& rng) const {
    augmix_draw d;
    std::vector<double> g(static_cast<std::size_t>(m_width));
    double sum = 0;
    for (double& v : g) sum += v = gamma_draw(rng, m_alpha);
    for (double v : g) d.weights.push_back(static_cast<float>(v / sum));
    const double x = gamma_draw(rng, m_alpha);
    const double y = gamma_draw(rng, m_alpha);
    d.m = static_cast<float>(x / (x + y));
    return d;
  }
  std::vector<std::size_t> chain(sample_rng& rng) const {
    const int depth = m_depth > 0 ? m_depth : static_cast<int>(rng.uniform_int(1, 4));  // np.random.randint(1, 4)
    std::vector<std::size_t> k;
    for (int i = 0; i < depth; ++i)
      k.push_back(static_cast<std::size_t>(rng.uniform_int(0, static_cast<std::int64_t>(m_ops.size()))));
    return k;
  }
  // {m, weights..., then per chain: its depth, then each op's record}.
  std::vector<double> draw_for_test(sample_rng& rng, size2 in, int) const override {
    const augmix_draw d = draw_mix(rng);
    std::vector<double> record{d.m};
    record.insert(record.end(), d.weights.begin(), d.weights.end());
    for (int i = 0; i < m_width; ++i) {
      const auto k = chain(rng);
      record.push_back(double(k.size()));
      run_ops(m_ops, k, nullptr, rng, in, nullptr, &record);
    }
    return record;
  }
  void run(frame& f, sample_rng& rng, const sample_key&, std::uint32_t, op_scratch& s) const override {
    if (f.width != f.height) throw not_square();
    const augmix_draw d = draw_mix(rng);
    const std::size_t n = static_cast<std::size_t>(f.width) * static_cast<std::size_t>(f.height) * 3;
    std::vector<float> mixed(n, 0.0f);
    frame aug;
    for (int i = 0; i < m_width; ++i) {
      aug.kind = frame_kind::image;
      aug.pixels.assign(f.pixels.view());
      aug.set_image(frame_kind::image);
      run_ops(m_ops, chain(rng), &aug, rng, aug.size(), &s, nullptr);
      const float w = d.weights[static_cast<std::size_t>(i)];
      const image_view v = aug.pixels.view();
      std::size_t at = 0;
      for (int y = 0; y < v.height; ++y) {
        const std::uint8_t* row = v.row(y);
        for (int x = 0; x < v.width * 3; ++x, ++at) {
          const float product = w * static_cast<float>(row[x]);  // mw * asarray(float32), then +=
          mixed[at] = mixed[at] + product;
        }
      }
    }
    image_buffer mixed_image(f.width, f.height, 3);
    std::uint8_t* out = mixed_image.data();
    for (std::size_t i = 0; i < n; ++i)  // np.clip(0, 255), astype(uint8)
      out[i] = static_cast<std::uint8_t>(std::clamp(mixed[i], 0.0f, 255.0f));
    blend(f.pixels.view(), mixed_image.view(), static_cast<double>(d.m), s.spare);  // Image.blend(img, mixed, m)
    std::swap(f.pixels, s.spare);
    f.set_image(f.kind);
  }

 private:
  static std::invalid_argument not_square() {
    return std::invalid_argument("TimmAugMix: _apply_basic mixes arrays of shape (width, height, 3) with the "
                                 "image's (height, width, 3), which numpy only adds for a square image");
  }
  std::vector<augment_ptr> m_ops;
  double m_alpha;
  int m_width, m_depth;
};

op_ptr make_augmix(const spec_call& c) {
  const spec_args a(c);
  auto list = required_ops(a);
  const double alpha = a.number("alpha", 1.0);
  const int width = a.integer("width", 3);
  const int depth = a.integer("depth", -1);
  if (!(alpha > 0) || std::isinf(alpha)) a.fail("alpha", "must be positive and finite");
  if (width < 1 || width > 64) a.fail("width", "must be in [1, 64]");
  if (depth > 64) a.fail("depth", "must be at most 64");
  if (a.boolean("blended", false))
    a.fail("blended", "timm's blended mode (_apply_blended) is not run: timm itself notes it differs from the "
                      "basic mix by more than rounding; use blended=False");
  return std::make_shared<augmix_op>(std::move(list), alpha, width, depth);
}

}  // namespace

std::span<const op_entry> timm_policy_op_entries() {
  static const op_entry entries[] = {
      {"TimmRandAugment", make_rand_augment},
      {"TimmAutoAugment", make_auto_augment},
      {"TimmAugMix", make_augmix},
  };
  return entries;
}

}  // namespace ringfeed::image
