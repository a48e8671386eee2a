// ringfeed::io::read_buffer — a growable byte buffer aligned for O_DIRECT.
//
// Readers fill it; it only ever grows, so after warm-up a worker reuses one
// buffer for every sample. The alignment (4096 bytes) satisfies O_DIRECT on
// every Linux block device and filesystem (logical blocks are 512 or 4096).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <span>
#include <utility>

namespace ringfeed::io {

/// A size nobody stated: a whole file of any length (cache::get's
/// expected_size, sample_ref::size, data::sample_location::size).
inline constexpr std::uint64_t unknown_size = ~std::uint64_t{0};

class read_buffer {
 public:
  static constexpr std::size_t alignment = 4096;

  read_buffer() = default;
  explicit read_buffer(std::size_t capacity) { reserve(capacity); }

  /// Grows the capacity to at least `n` bytes (rounded up to the alignment),
  /// keeping the first size() bytes. Never shrinks.
  void reserve(std::size_t n) {
    if (n <= m_capacity) return;
    const std::size_t cap = round_up(std::max(n, m_capacity * 2));
    void* p = std::aligned_alloc(alignment, cap);
    if (p == nullptr) throw std::bad_alloc();
    if (m_size != 0) std::memcpy(p, m_data.get(), m_size);
    m_data.reset(static_cast<std::byte*>(p));
    m_capacity = cap;
  }

  /// The valid bytes (what the last read left).
  [[nodiscard]] std::span<const std::byte> bytes() const noexcept { return {m_data.get(), m_size}; }
  [[nodiscard]] std::byte* data() noexcept { return m_data.get(); }
  [[nodiscard]] const std::byte* data() const noexcept { return m_data.get(); }
  [[nodiscard]] std::size_t size() const noexcept { return m_size; }
  [[nodiscard]] std::size_t capacity() const noexcept { return m_capacity; }
  /// Sets the count of valid bytes; `n` must not exceed capacity().
  void set_size(std::size_t n) noexcept { m_size = n; }

  [[nodiscard]] static constexpr std::size_t round_up(std::size_t n, std::size_t a = alignment) noexcept {
    return (n + a - 1) / a * a;
  }

 private:
  struct free_deleter {
    void operator()(std::byte* p) const noexcept { std::free(p); }
  };
  std::unique_ptr<std::byte, free_deleter> m_data;
  std::size_t m_capacity = 0;
  std::size_t m_size = 0;
};

}  // namespace ringfeed::io
