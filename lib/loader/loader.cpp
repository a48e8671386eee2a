// ringfeed::loader — a thin facade over detail::loader_core. See loader.hpp
// for the contract and loader_core.hpp for the structure.
#include <ringfeed/loader/loader.hpp>

#include <utility>

#include <ringfeed/sync_wait.hpp>

#include "loader_core.hpp"

namespace ringfeed {

// --- loader --------------------------------------------------------------------------

loader::loader(loader_options options) : m_core(std::make_shared<detail::loader_core>(std::move(options))) {
  m_core->start();
}

loader::~loader() { m_core->shut_down(); }

task<std::optional<batch>> loader::next() { return m_core->next(); }

void loader::start_next(std::unique_ptr<next_completion> completion) { m_core->start_next(std::move(completion)); }

loader::epoch_range loader::epoch(std::uint64_t e) {
  if (m_core->epoch() != e) set_epoch(e);
  return epoch_range{*this};
}

void loader::set_epoch(std::uint64_t e) { m_core->set_epoch(e); }
void loader::set_order(std::uint64_t e, std::vector<std::size_t> indices, std::size_t first_batch) {
  m_core->set_order(e, std::move(indices), first_batch);
}

void loader::epoch_range::advance() {
  m_current.reset();  // give the previous batch back first
  m_current = sync_wait(m_loader->next());
}

loader_state loader::state() const { return m_core->state(); }
const data::dataset& loader::dataset() const noexcept { return m_core->dataset(); }
std::size_t loader::batches_per_epoch() const noexcept { return m_core->batches_per_epoch(); }
bool loader::uses_device() const noexcept { return m_core->uses_device(); }
const std::string& loader::host_reason() const noexcept { return m_core->host_reason(); }
bool loader::converts_on_device() const noexcept { return m_core->converts_on_device(); }
tensor_view loader::batch_layout() const noexcept { return m_core->layout_of(m_core->batch_capacity()); }

}  // namespace ringfeed
