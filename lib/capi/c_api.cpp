// The C API (ringfeed.h): opaque handles over loader_options, loader and
// batch. Every entry point catches every exception and turns it into a
// failure value plus a thread-local message; no pipeline logic lives here.
#include <ringfeed/ringfeed.h>
#include <ringfeed/text.hpp>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <ringfeed/config.hpp>
#include <ringfeed/io/aws_config.hpp>
#include <ringfeed/loader/loader.hpp>
#include <ringfeed/loader/resolve.hpp>
#include <ringfeed/sync_wait.hpp>

// The keys as given; ringfeed::resolve settles them when the loader opens.
struct rf_options {
  ringfeed::loader_request request;

  rf_options() { request.base.device = -1; }  // the C API's default: host batches
};

struct rf_loader {
  explicit rf_loader(ringfeed::loader_options o) : impl(std::move(o)) {}
  ringfeed::loader impl;
};

struct rf_batch {
  ringfeed::batch impl;
};

namespace {

// --- the last error, per thread ------------------------------------------------

thread_local std::string t_last_error;
thread_local bool t_error_lost = false;  // the message itself could not be stored

void set_error(const char* function, std::string_view what) noexcept {
  try {
    t_last_error.assign(function).append(": ").append(what);
    t_error_lost = false;
  } catch (...) {
    t_error_lost = true;
  }
}

// Runs `f`, returning its result; on any exception records it for
// rf_last_error() and returns `failure`.
template <class T, class F>
T guarded(const char* function, T failure, F&& f) noexcept {
  try {
    return std::forward<F>(f)();
  } catch (const std::bad_alloc&) {
    set_error(function, "out of memory");
  } catch (const std::exception& e) {
    set_error(function, e.what());
  } catch (...) {
    set_error(function, "unknown error");
  }
  return failure;
}

// A NULL handle is a caller's bug, reported like any other failure.
template <class P>
P& deref(P* p, const char* what) {
  if (p == nullptr) throw std::invalid_argument(std::string(what) + " is NULL");
  return *p;
}

// --- option values -------------------------------------------------------------------

struct bad_value : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

std::uint64_t parse_uint(std::string_view v, std::uint64_t min, std::uint64_t max) {
  std::uint64_t x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || ec != std::errc{} || end != v.data() + v.size() || x < min || x > max)
    throw bad_value("expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  return x;
}

std::size_t parse_size(std::string_view v, std::size_t min = 0) {
  return static_cast<std::size_t>(parse_uint(v, min, std::numeric_limits<std::size_t>::max()));
}

int parse_int(std::string_view v, int min, int max) {
  int x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || ec != std::errc{} || end != v.data() + v.size() || x < min || x > max)
    throw bad_value("expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  return x;
}

bool parse_bool(std::string_view v) {
  if (const std::optional<bool> flag = ringfeed::parse_flag(v)) return *flag;
  throw bad_value("expected " + std::string(ringfeed::flag_spellings));
}

// `v` when it is one of `choices`, else bad_value listing them.
std::string parse_among(std::string_view v, const std::vector<std::string_view>& choices) {
  std::string expected = "expected";
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (v == choices[i]) return std::string(v);
    expected.append(i == 0 ? " " : i + 1 == choices.size() ? " or " : ", ").append(choices[i]);
  }
  throw bad_value(expected);
}

// Sets `o` by `set` on a copy, so a bad value leaves it unchanged; the error
// names the key and the value.
template <class F>
void set_checked(rf_options& o, const std::string& name, const char* value, F&& set) {
  rf_options changed = o;
  try {
    set(changed);
  } catch (const bad_value& e) {
    throw std::invalid_argument("key '" + ringfeed::escape_bytes(name) + "': bad value '" +
                                ringfeed::escape_bytes(value) + "' (" + e.what() + ")");
  }
  o = std::move(changed);
}

// Each key sets its own field: adding a key adds one row.
struct option_key {
  const char* name;
  void (*set)(rf_options&, std::string_view);
};

constexpr std::uint64_t max_u64 = std::numeric_limits<std::uint64_t>::max();

const option_key option_keys[] = {
    {"source", [](rf_options& o, std::string_view v) { o.request.base.source = v; }},
    {"pipeline",
     [](rf_options& o, std::string_view v) {
       o.request.pipeline = parse_among(v, ringfeed::accepted_names("pipeline"));
     }},
    {"transform", [](rf_options& o, std::string_view v) { o.request.transform = v; }},
    // 32768 keeps val's size * 256 / 224 far from int overflow.
    {"size", [](rf_options& o, std::string_view v) { o.request.size = parse_int(v, 1, 32768); }},
    {"exact", [](rf_options& o, std::string_view v) { o.request.exact = parse_bool(v); }},
    {"max_pixels", [](rf_options& o, std::string_view v) { o.request.max_pixels = parse_uint(v, 1, max_u64); }},
    {"output",
     [](rf_options& o, std::string_view v) {
       (void)ringfeed::parse_output(v);  // refused now, naming the key
       o.request.output = std::string(v);
     }},
    {"batch_size", [](rf_options& o, std::string_view v) { o.request.base.batch_size = parse_size(v, 1); }},
    {"shuffle", [](rf_options& o, std::string_view v) { o.request.shuffle = parse_bool(v); }},
    {"seed", [](rf_options& o, std::string_view v) { o.request.base.sampler.seed = parse_uint(v, 0, max_u64); }},
    {"drop_last", [](rf_options& o, std::string_view v) { o.request.base.drop_last = parse_bool(v); }},
    {"rank", [](rf_options& o, std::string_view v) { o.request.base.sampler.rank = parse_size(v); }},
    {"world_size", [](rf_options& o, std::string_view v) { o.request.base.sampler.world_size = parse_size(v, 1); }},
    {"threads", [](rf_options& o, std::string_view v) { o.request.base.threads = parse_size(v); }},
    {"io_depth", [](rf_options& o, std::string_view v) { o.request.base.io_depth = parse_size(v); }},
    {"io", [](rf_options& o, std::string_view v) { o.request.base.io = ringfeed::io::parse_backend(v); }},
    {"memory_budget", [](rf_options& o, std::string_view v) { o.request.memory_budget = parse_size(v, 1); }},
    {"prefetch_batches", [](rf_options& o, std::string_view v) { o.request.base.prefetch_batches = parse_size(v); }},
    {"on_error",
     [](rf_options& o, std::string_view v) { o.request.base.on_error = ringfeed::parse_error_policy(v); }},
    {"direct", [](rf_options& o, std::string_view v) { o.request.base.direct = parse_bool(v); }},
    {"cache_dir", [](rf_options& o, std::string_view v) { o.request.base.cache_dir = v; }},
    {"cache_bytes", [](rf_options& o, std::string_view v) { o.request.base.cache_bytes = parse_uint(v, 0, max_u64); }},
    {"cache", [](rf_options& o, std::string_view v) { o.request.base.cache = ringfeed::parse_cache_kind(v); }},
    {"stream_shards", [](rf_options& o, std::string_view v) { o.request.base.stream_shards = parse_bool(v); }},
    {"device",
     [](rf_options& o, std::string_view v) {
       o.request.base.device = parse_int(v, -1, std::numeric_limits<int>::max());
     }},
    // auto, cpu or gpu, settled (and gpu refused where it cannot be) by resolve()
    {"decode", [](rf_options& o, std::string_view v) { o.request.base.decode = ringfeed::parse_decode_where(v); }},
};

// "s3_<key>" (io/aws_config.hpp's table): first in each chain, before the
// environment. True when `name` is one.
bool set_s3_key(rf_options& o, std::string_view name, std::string_view value) {
  if (!name.starts_with("s3_")) return false;
  name.remove_prefix(3);
  for (const auto& k : ringfeed::io::s3_option_keys()) {
    if (k.name != name) continue;
    try {
      ringfeed::io::set_s3_option(o.request.base.s3, name, value);
    } catch (const std::invalid_argument& e) {
      throw bad_value(e.what());
    }
    return true;
  }
  return false;
}

rf_dtype to_c(ringfeed::dtype t) noexcept {
  switch (t) {
    case ringfeed::dtype::float32:
      return RF_FLOAT32;
    case ringfeed::dtype::float16:
      return RF_FLOAT16;
    case ringfeed::dtype::bfloat16:
      return RF_BFLOAT16;
    case ringfeed::dtype::uint8:
      break;
  }
  return RF_UINT8;
}

}  // namespace

// --- errors and version -----------------------------------------------------------------

extern "C" const char* rf_last_error(void) noexcept {
  return t_error_lost ? "out of memory (while recording an error)" : t_last_error.c_str();
}

extern "C" void rf_clear_error(void) noexcept {
  t_last_error.clear();
  t_error_lost = false;
}

extern "C" const char* rf_version(void) noexcept { return RINGFEED_VERSION_STRING; }

extern "C" void rf_free(void* p) noexcept { std::free(p); }

// --- options --------------------------------------------------------------------------------

extern "C" rf_options* rf_options_new(void) noexcept {
  return guarded("rf_options_new", static_cast<rf_options*>(nullptr), [] { return new rf_options(); });
}

extern "C" void rf_options_free(rf_options* options) noexcept { delete options; }

extern "C" int rf_options_set(rf_options* options, const char* key, const char* value) noexcept {
  return guarded("rf_options_set", -1, [&] {
    rf_options& o = deref(options, "options");
    const std::string name = key != nullptr ? key : "";
    for (const option_key& k : option_keys) {
      if (name != k.name) continue;
      if (value == nullptr) throw std::invalid_argument("key '" + ringfeed::escape_bytes(name) + "': value is NULL");
      set_checked(o, name, value, [&](rf_options& changed) { k.set(changed, value); });
      return 0;
    }
    bool found = false;
    if (value != nullptr) set_checked(o, name, value, [&](rf_options& changed) { found = set_s3_key(changed, name, value); });
    if (found) return 0;
    throw std::invalid_argument(key == nullptr ? std::string("key is NULL")
                                               : "unknown key '" + ringfeed::escape_bytes(name) + "'");
  });
}

extern "C" int rf_options_set_resume(rf_options* options, const rf_state* state) noexcept {
  return guarded("rf_options_set_resume", -1, [&] {
    rf_options& o = deref(options, "options");
    if (state == nullptr) {
      o.request.base.resume.reset();
    } else {
      o.request.base.resume = ringfeed::loader_state{state->seed, state->epoch, static_cast<std::size_t>(state->next_batch),
                                             static_cast<std::size_t>(state->rank),
                                             static_cast<std::size_t>(state->world_size)};
    }
    return 0;
  });
}

// --- loader -----------------------------------------------------------------------------------

extern "C" rf_loader* rf_loader_open(const rf_options* options) noexcept {
  return guarded("rf_loader_open", static_cast<rf_loader*>(nullptr),
                 [&] { return new rf_loader(ringfeed::resolve(deref(options, "options").request).options); });
}

extern "C" void rf_loader_close(rf_loader* loader) noexcept { delete loader; }

extern "C" int rf_loader_next(rf_loader* loader, rf_batch** out) noexcept {
  if (out != nullptr) *out = nullptr;
  return guarded("rf_loader_next", -1, [&] {
    rf_loader& l = deref(loader, "loader");
    rf_batch*& result = deref(out, "out");
    std::optional<ringfeed::batch> b = ringfeed::sync_wait(l.impl.next());
    if (!b) return 0;
    result = new rf_batch{std::move(*b)};
    return 1;
  });
}

extern "C" size_t rf_loader_batches_per_epoch(const rf_loader* loader) noexcept {
  return loader != nullptr ? loader->impl.batches_per_epoch() : 0;
}

extern "C" int rf_loader_set_epoch(rf_loader* loader, uint64_t epoch) noexcept {
  return guarded("rf_loader_set_epoch", -1, [&] {
    deref(loader, "loader").impl.set_epoch(epoch);
    return 0;
  });
}

extern "C" int rf_loader_state(const rf_loader* loader, rf_state* out) noexcept {
  return guarded("rf_loader_state", -1, [&] {
    const ringfeed::loader_state s = deref(loader, "loader").impl.state();
    deref(out, "out") = rf_state{s.seed, s.epoch, s.next_batch, s.rank, s.world_size};
    return 0;
  });
}

extern "C" char* rf_loader_stats_json(const rf_loader* loader) noexcept {
  return guarded("rf_loader_stats_json", static_cast<char*>(nullptr), [&] {
    const std::string json = deref(loader, "loader").impl.stats().json();
    auto* text = static_cast<char*>(std::malloc(json.size() + 1));
    if (text == nullptr) throw std::bad_alloc();
    std::memcpy(text, json.c_str(), json.size() + 1);
    return text;
  });
}

// --- batches ------------------------------------------------------------------------------------
// Accessors are total: a NULL batch reads as an empty one.

extern "C" const void* rf_batch_images(const rf_batch* batch) noexcept {
  return batch != nullptr ? batch->impl.images().data : nullptr;
}

extern "C" rf_dtype rf_batch_dtype(const rf_batch* batch) noexcept {
  return batch != nullptr ? to_c(batch->impl.images().dtype) : RF_UINT8;
}

extern "C" rf_layout rf_batch_layout(const rf_batch* batch) noexcept {
  return batch != nullptr && batch->impl.images().layout == ringfeed::layout::nchw ? RF_NCHW : RF_NHWC;
}

extern "C" void rf_batch_shape(const rf_batch* batch, int64_t shape[4]) noexcept {
  if (shape == nullptr) return;
  for (int i = 0; i < 4; ++i) shape[i] = batch != nullptr ? batch->impl.images().shape[static_cast<std::size_t>(i)] : 0;
}

extern "C" size_t rf_batch_nbytes(const rf_batch* batch) noexcept {
  return batch != nullptr ? batch->impl.images().bytes() : 0;
}

extern "C" const int64_t* rf_batch_labels(const rf_batch* batch) noexcept {
  return batch != nullptr ? batch->impl.labels().data() : nullptr;
}

extern "C" const size_t* rf_batch_indices(const rf_batch* batch) noexcept {
  return batch != nullptr ? batch->impl.indices().data() : nullptr;
}

extern "C" size_t rf_batch_size(const rf_batch* batch) noexcept { return batch != nullptr ? batch->impl.size() : 0; }

extern "C" uint64_t rf_batch_epoch(const rf_batch* batch) noexcept {
  return batch != nullptr ? batch->impl.epoch() : 0;
}

extern "C" size_t rf_batch_number(const rf_batch* batch) noexcept {
  return batch != nullptr ? batch->impl.number() : 0;
}

extern "C" int rf_batch_on_device(const rf_batch* batch) noexcept {
  return batch != nullptr && batch->impl.on_device() ? 1 : 0;
}

extern "C" int rf_batch_wait(rf_batch* batch, void* stream) noexcept {
  return guarded("rf_batch_wait", -1, [&] {
    if (batch == nullptr) throw std::invalid_argument("batch is NULL");
    batch->impl.wait(static_cast<ringfeed::cuda::stream_t>(stream));
    return 0;
  });
}

extern "C" void rf_batch_release(rf_batch* batch) noexcept { delete batch; }  // ~batch: release()

extern "C" void rf_batch_release_on_stream(rf_batch* batch, void* stream) noexcept {
  if (batch == nullptr) return;
  batch->impl.release(static_cast<ringfeed::cuda::stream_t>(stream));
  delete batch;
}

extern "C" void rf_batch_release_synchronized(rf_batch* batch) noexcept {
  if (batch == nullptr) return;
  batch->impl.release_synchronized();
  delete batch;
}
