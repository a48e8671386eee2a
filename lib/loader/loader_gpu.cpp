// decode="gpu" in the loader (issue 43): the decode stage (cuda/decode_stage.hpp)
// opened beside the uploader, the decode threads' routing, the upload
// thread's queueing and CPU fallbacks, and its stats.
#include <chrono>
#include <string>
#include <utility>


#include "../cuda/device_api.hpp"
#include "gpu_obstacle.hpp"
#include "loader_core.hpp"

namespace ringfeed::detail {
namespace {

std::int64_t ns_since(clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now() - t0).count();
}

}  // namespace

void stage_fill::fill(std::uint8_t* target, cuda::stream_t stream) {
  stage->place(std::span<const cuda::gpu_sample>(s->gpu.data(), s->count), s->side, target, stream);
}

void loader_core::open_gpu_decode(const std::shared_ptr<cuda::device_api>& api) {
  const decode_where want = m_opt.decode;
  // resolve()'s reason for the option: "asked", or how it settled "auto"
  // (none: a C++ caller's own choice, no resolve()).
  const option_reason* settled = nullptr;
  for (const option_reason& r : m_opt.reasons)
    if (r.option == "decode") settled = &r;
  if (want == decode_where::cpu) {
    m_gpu_reason = settled != nullptr ? settled->reason : "decode=\"cpu\"";
    return;
  }
  // resolve() settles "auto" for the front ends by the same rules; a C++
  // caller's "auto" takes the GPU only where it would. What only the open
  // loader knows comes first: whether there is a device to decode into.
  // A fallback is logged only when the user asked for the GPU: an "auto"
  // that resolve() made "gpu" says why not in stats()' gpu_decode (the
  // missing device has its own line already).
  const bool asked = settled == nullptr || settled->reason == "asked";
  const auto fell_back = [&] {
    if (want == decode_where::gpu && asked) log("decode=\"gpu\": the CPU decodes instead: " + m_gpu_reason);
  };
  if (!m_uploader)
    m_gpu_reason = "no device output: " + m_plan.host_reason;
  else if (m_plan.host_converted)
    m_gpu_reason = "the transforms end on the host";
  else if (const auto obstacle = gpu_decode_obstacle(m_opt, m_opt.pipeline.mode() == image::pipeline_mode::exact))
    m_gpu_reason = obstacle->reason;
  if (!m_gpu_reason.empty()) {
    fell_back();
    return;
  }
  cuda::jpeg_decoder_choice choice;
  {
    const cuda::device_guard on(*api, m_opt.device);
    choice = cuda::open_jpeg_decoder(*api, m_opt.device, m_opt.memory_budget);
  }
  if (!choice.decoder) {
    m_gpu_reason = choice.why_not;
    fell_back();
    return;
  }
  // The files kept for the decoder count in memory_budget: the slabs make
  // room for them before the pool is made.
  share_budget_with_files(m_opt, m_plan);
  try {
    // (It pins its resize tables' memory now.)
    m_stage = std::make_unique<cuda::decode_stage>(api, m_opt.device, std::move(choice.decoder), m_plan.sample_bytes,
                                                   m_plan.file_bytes, m_opt.batch_size, m_plan.slabs);
  } catch (const cuda::cuda_error& e) {
    m_gpu_reason = std::string("the GPU decode stage could not be set up: ") + e.what();
    fell_back();
    return;
  }
  m_gpu_reason = want == decode_where::gpu && asked ? "decode=\"gpu\"" : "decode=\"auto\": device output in fast mode";
}

bool loader_core::gpu_route(cuda::gpu_sample& g, std::span<const std::byte> bytes, std::string_view name,
                            const image::sample_key& key) {
  thread_local image::decoder header;
  g.backend = cuda::jpeg_backend::cpu;
  g.info = header.read_info(bytes, name);  // a bad header fails the sample, as a CPU decode would
  g.plan = m_plan.pipe.plan(g.info.oriented_size(), key);
  const cuda::jpeg_route r = m_stage->route(g.info, g.plan);
  if (r.backend == cuda::jpeg_backend::cpu) return false;
  g.backend = r.backend;
  g.name.assign(name);  // for the decoder's messages
  if (!m_stage->keep_file(g, bytes)) return false;  // the files' share of memory_budget is full
  try {
    // Here, so the upload thread only copies the coefficients.
    if (!m_stage->plan_resize(g)) return false;  // the plans' share of memory_budget is full
    // The decoder's host side here too (the hybrid backend's Huffman
    // decode): the upload thread only queues the device side.
    if (!m_stage->prepare(g)) return false;  // refused: the CPU decodes it
  } catch (...) {
    g.backend = cuda::jpeg_backend::cpu;  // the sample fails; nothing of it goes to the GPU
    throw;
  }
  return true;
}

bool loader_core::gpu_decode(slab& s) {
  const std::vector<std::size_t> refused =
      m_stage->decode(std::span<cuda::gpu_sample>(s.gpu.data(), s.count), m_uploader->copy_stream());
  if (refused.empty()) return true;
  // The GPU decoder would not take these: the CPU decodes them into their
  // host slots, which the batch's copy brings to the device.
  m_stage->count_fallbacks(refused.size());
  thread_local image::pipeline_workspace ws;
  bool failed = false;
  for (std::size_t k : refused) {
    cuda::gpu_sample& g = s.gpu[k];
    const auto t0 = clock::now();
    try {
      const std::span<std::byte> out(s.images + k * m_plan.sample_bytes, m_plan.sample_bytes);
      // g.info: gpu_route's read of this header.
      (void)m_plan.pipe.apply_plan(ws, std::as_bytes(std::span(g.encoded)), g.info, g.name, g.plan, out);
    } catch (...) {
      s.ok[k] = 0;
      failed = true;
      fail_sample(s, s.indices[k], std::current_exception());
    }
    m_stage->count_cpu(ns_since(t0));
  }
  if (!failed) return true;
  if (s.error) return false;
  return close_gaps(s) > 0;
}

gpu_decode_stats loader_core::gpu_stats() const {
  gpu_decode_stats g;
  g.reason = m_gpu_reason;
  if (!m_stage) return g;
  const cuda::decode_counters c = m_stage->counters();
  g.where = "gpu";
  g.decoder = c.decoder;
  g.hardware_engines = c.hardware_engines;
  g.hardware = c.hardware;
  g.hybrid = c.hybrid;
  g.cpu = c.cpu;
  g.gpu_ns = c.gpu_ns;
  g.cpu_ns = c.cpu_ns;
  g.fallbacks = c.fallbacks;
  g.cpu_reasons = c.cpu_reasons;
  g.split_batches = c.split_batches;
  g.slot_bytes = c.slot_bytes;
  return g;
}

}  // namespace ringfeed::detail
