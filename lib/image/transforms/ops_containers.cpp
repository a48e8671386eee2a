// The container ops: Compose (nested in a list), RandomApply, RandomChoice
// and RandomOrder. Their own
// draw follows torchvision (RandomApply: torch.rand(1); RandomChoice and
// RandomOrder: Python's random.choices / random.shuffle formulas), from the
// container's stream; each child draws from a stream of its own
// (child_stream), so whether and where a child runs never shifts what
// another child draws.
#include "ops_detail.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace ringfeed::image {

namespace {

std::string list_spec(const std::vector<op_ptr>& ops) {
  std::string s = "[";
  for (std::size_t i = 0; i < ops.size(); ++i) s += (i ? ", " : "") + ops[i]->spec();
  return s + "]";
}

// The shape after `ops` run in order from `in`.
frame_shape chain(const std::vector<op_ptr>& ops, frame_shape in) {
  for (const op_ptr& op : ops) in = op->infer(in);
  return in;
}

// Merges the possible outcomes of a container: kind and channels must agree
// (a batch holds one kind), sizes that differ become "depends".
frame_shape merge(std::string_view who, const frame_shape& a, const frame_shape& b) {
  if (a.kind != b.kind || a.channels != b.channels)
    throw std::invalid_argument(std::string(who) + ": its outcomes differ (" + std::string(to_string(a.kind)) + ", " +
                                std::to_string(a.channels) + " channels vs " + std::string(to_string(b.kind)) + ", " +
                                std::to_string(b.channels) + " channels); a batch holds one kind");
  frame_shape out = a;
  if (a.size != b.size) out.size = std::nullopt;
  return out;
}

void run_children(const std::vector<op_ptr>& ops, std::span<const std::size_t> order, frame& f, const sample_key& key,
                  std::uint32_t stream, op_scratch& s) {
  for (std::size_t k : order) run_op(*ops[k], f, key, child_stream(stream, static_cast<std::uint32_t>(k)), s);
}

std::vector<std::size_t> iota(std::size_t n) {
  std::vector<std::size_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

// A Compose inside a list (a top-level one is the list itself,
// transform_spec.cpp): its transforms in order, no draw of its own.
class compose_op final : public transform_op {
 public:
  explicit compose_op(std::vector<op_ptr> ops) : m_ops(std::move(ops)), m_order(iota(m_ops.size())) {
    if (m_ops.empty()) throw std::invalid_argument("Compose: needs at least one transform");
  }
  std::string_view name() const noexcept override { return "Compose"; }
  std::string spec() const override { return "Compose(" + list_spec(m_ops) + ")"; }
  frame_shape infer(const frame_shape& in) const override { return chain(m_ops, in); }
  bool deterministic() const noexcept override {
    return std::all_of(m_ops.begin(), m_ops.end(), [](const op_ptr& op) { return op->deterministic(); });
  }
  std::vector<double> draw_for_test(sample_rng&, size2, int) const override { return {}; }
  void run(frame& f, sample_rng&, const sample_key& key, std::uint32_t stream, op_scratch& s) const override {
    run_children(m_ops, m_order, f, key, stream, s);
  }

 private:
  std::vector<op_ptr> m_ops;
  std::vector<std::size_t> m_order;
};

class random_apply_op final : public transform_op {
 public:
  random_apply_op(std::vector<op_ptr> ops, double p) : m_ops(std::move(ops)), m_p(p), m_order(iota(m_ops.size())) {
    if (!(p >= 0 && p <= 1)) throw std::invalid_argument("RandomApply: p must be in [0, 1]");
  }
  std::string_view name() const noexcept override { return "RandomApply"; }
  std::string spec() const override { return "RandomApply(" + list_spec(m_ops) + ", p=" + spec_number(m_p) + ")"; }
  frame_shape infer(const frame_shape& in) const override { return merge("RandomApply", in, chain(m_ops, in)); }
  bool deterministic() const noexcept override { return false; }
  std::vector<double> draw_for_test(sample_rng& rng, size2, int) const override {
    return {rng.uniform() <= m_p ? 1.0 : 0.0};
  }
  void run(frame& f, sample_rng& rng, const sample_key& key, std::uint32_t stream, op_scratch& s) const override {
    if (m_p < rng.uniform()) return;  // `if self.p < torch.rand(1): return img`
    run_children(m_ops, m_order, f, key, stream, s);
  }

 private:
  std::vector<op_ptr> m_ops;
  double m_p;
  std::vector<std::size_t> m_order;
};

class random_choice_op final : public transform_op {
 public:
  random_choice_op(std::vector<op_ptr> ops, std::vector<double> weights)
      : m_ops(std::move(ops)), m_weights(std::move(weights)) {
    if (m_ops.empty()) throw std::invalid_argument("RandomChoice: needs at least one transform");
    if (!m_weights.empty() && m_weights.size() != m_ops.size())
      throw std::invalid_argument("RandomChoice: Length of p doesn't match the number of transforms: " +
                                  std::to_string(m_weights.size()) + " != " + std::to_string(m_ops.size()));
    double total = 0;
    for (double w : m_weights) {
      if (!(w >= 0)) throw std::invalid_argument("RandomChoice: weights must be non-negative");
      total += w;
      m_cumulative.push_back(total);
    }
    if (!m_weights.empty() && !(total > 0)) throw std::invalid_argument("RandomChoice: Total of weights must be greater than zero");
  }
  std::string_view name() const noexcept override { return "RandomChoice"; }
  std::string spec() const override {
    return "RandomChoice(" + list_spec(m_ops) + (m_weights.empty() ? "" : ", p=" + spec_tuple(m_weights)) + ")";
  }
  frame_shape infer(const frame_shape& in) const override {
    frame_shape out = m_ops[0]->infer(in);
    for (std::size_t k = 1; k < m_ops.size(); ++k) out = merge("RandomChoice", out, m_ops[k]->infer(in));
    return out;
  }
  bool deterministic() const noexcept override { return false; }
  // random.choices(population, weights)[0]: floor(random() * n), or
  // bisect_right(cum_weights, random() * total).
  std::size_t draw(sample_rng& rng) const {
    const double u = rng.uniform();
    const std::size_t n = m_ops.size();
    if (m_weights.empty()) return std::min(n - 1, static_cast<std::size_t>(u * static_cast<double>(n)));
    const double x = u * m_cumulative.back();
    const auto it = std::upper_bound(m_cumulative.begin(), m_cumulative.end(), x);
    return std::min(n - 1, static_cast<std::size_t>(it - m_cumulative.begin()));
  }
  std::vector<double> draw_for_test(sample_rng& rng, size2, int) const override { return {double(draw(rng))}; }
  void run(frame& f, sample_rng& rng, const sample_key& key, std::uint32_t stream, op_scratch& s) const override {
    const std::size_t k = draw(rng);
    run_op(*m_ops[k], f, key, child_stream(stream, static_cast<std::uint32_t>(k)), s);
  }

 private:
  std::vector<op_ptr> m_ops;
  std::vector<double> m_weights;
  std::vector<double> m_cumulative;
};

class random_order_op final : public transform_op {
 public:
  explicit random_order_op(std::vector<op_ptr> ops) : m_ops(std::move(ops)) {}
  std::string_view name() const noexcept override { return "RandomOrder"; }
  std::string spec() const override { return "RandomOrder(" + list_spec(m_ops) + ")"; }
  frame_shape infer(const frame_shape& in) const override {
    frame_shape out = in;
    for (const op_ptr& op : m_ops) {
      const frame_shape after = op->infer(in);
      if (after.kind != in.kind || after.channels != in.channels)
        throw std::invalid_argument("RandomOrder: its transforms must keep the kind and channels of their input, " +
                                    std::string(op->name()) + " turns " + std::string(to_string(in.kind)) + ", " +
                                    std::to_string(in.channels) + " channels into " +
                                    std::string(to_string(after.kind)) + ", " + std::to_string(after.channels));
      out = merge("RandomOrder", out, after);
    }
    return out;
  }
  bool deterministic() const noexcept override { return false; }
  // random.shuffle: for i from n−1 down to 1, swap i with randbelow(i + 1).
  void draw(sample_rng& rng, std::vector<std::size_t>& order) const {
    order = iota(m_ops.size());
    for (std::size_t i = order.size(); i-- > 1;)
      std::swap(order[i], order[static_cast<std::size_t>(rng.uniform_int(0, static_cast<std::int64_t>(i) + 1))]);
  }
  std::vector<double> draw_for_test(sample_rng& rng, size2, int) const override {
    std::vector<std::size_t> order;
    draw(rng, order);
    return {order.begin(), order.end()};
  }
  void run(frame& f, sample_rng& rng, const sample_key& key, std::uint32_t stream, op_scratch& s) const override {
    std::vector<std::size_t> order;
    draw(rng, order);
    run_children(m_ops, order, f, key, stream, s);
  }

 private:
  std::vector<op_ptr> m_ops;
};

op_ptr make_compose(const spec_call& c) {
  const spec_args a(c);
  return std::make_shared<compose_op>(a.transforms("transforms"));
}
op_ptr make_random_apply(const spec_call& c) {
  const spec_args a(c);
  return std::make_shared<random_apply_op>(a.transforms("transforms"), a.number("p", 0.5));
}
op_ptr make_random_choice(const spec_call& c) {
  const spec_args a(c);
  return std::make_shared<random_choice_op>(a.transforms("transforms"), a.numbers("p", {}));
}
op_ptr make_random_order(const spec_call& c) {
  const spec_args a(c);
  return std::make_shared<random_order_op>(a.transforms("transforms"));
}

}  // namespace

std::span<const op_entry> container_op_entries() {
  static const op_entry entries[] = {
      {"Compose", make_compose},
      {"RandomApply", make_random_apply},
      {"RandomChoice", make_random_choice},
      {"RandomOrder", make_random_order},
  };
  return entries;
}

}  // namespace ringfeed::image
