// Private: nVIDIA's nvJPEG library, found and loaded at run time (dlopen),
// so that every build links without it and a machine without it runs the
// CPU decode. This file needs neither nvjpeg.h nor the CUDA runtime: it
// finds a file, loads it, checks its version and resolves every function
// nvjpeg_decoder.cpp calls into a table of untyped pointers (that file casts
// them to the types nvjpeg.h declares). Tests point it at files of their
// own (nvjpeg_library_tests.cpp).
//
// Where it looks, in order (nvjpeg_search):
//   1. RINGFEED_NVJPEG=/path/libnvjpeg.so.13: that file and nothing else; one
//      that does not load is an error naming the path and dlerror().
//   2. The CUDA toolkit's library folders: $CUDA_HOME and $CUDA_PATH, then
//      /usr/local/cuda, each's lib64 and targets/*/lib.
//   3. The site-packages folders of the running process's Python, found
//      without asking Python: every loaded object (dl_iterate_phdr: the
//      ringfeed module, torch, libpython's own stdlib extension modules...)
//      whose path has a site-packages or dist-packages folder, then
//      $VIRTUAL_ENV/lib/python3.*/site-packages, then $PYTHONPATH's entries.
//      In each: nvidia/cu13/lib (the nvidia-nvjpeg wheel, CUDA 13),
//      nvidia/nvjpeg/lib (nvidia-nvjpeg-cu12) and torchvision.libs
//      (torchvision's CUDA wheels, whose copy has a hashed name:
//      libnvjpeg-<hash>.so.<major>).
//   4. dlopen's own search (LD_LIBRARY_PATH, the ld.so cache, a copy some
//      other library of the process already loaded).
// A candidate file must be nvJPEG of the major version the decoder was
// compiled for (its soname libnvjpeg.so.<major>, then the toolkit's
// unversioned libnvjpeg.so; nvjpegGetProperty confirms the major).
#pragma once

#include <array>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ringfeed::cuda {

/// The nvJPEG functions the decoder calls, each resolved by name.
enum class nvjpeg_fn : std::size_t {
  get_property,
  create_ex_v2,
  destroy,
  get_hardware_decoder_info,
  jpeg_state_create,
  jpeg_state_destroy,
  decode_batched_initialize,
  decode_batched_ex,
  decode_batched_supported_ex,
  buffer_pinned_create_v2,
  buffer_pinned_destroy,
  buffer_device_create_v2,
  buffer_device_destroy,
  state_attach_pinned_buffer,
  state_attach_device_buffer,
  jpeg_stream_create,
  jpeg_stream_destroy,
  jpeg_stream_parse,
  jpeg_stream_parse_header,
  decode_params_create,
  decode_params_destroy,
  decode_params_set_output_format,
  decode_params_set_roi,
  decoder_create,
  decoder_destroy,
  decoder_state_create,
  decode_jpeg_host,
  decode_jpeg_transfer_to_device,
  decode_jpeg_device,
  count,
};

/// nvJPEG's exported name of each nvjpeg_fn, in the enum's order.
inline constexpr std::array<const char*, static_cast<std::size_t>(nvjpeg_fn::count)> nvjpeg_symbol_names{
    "nvjpegGetProperty",
    "nvjpegCreateExV2",
    "nvjpegDestroy",
    "nvjpegGetHardwareDecoderInfo",
    "nvjpegJpegStateCreate",
    "nvjpegJpegStateDestroy",
    "nvjpegDecodeBatchedInitialize",
    "nvjpegDecodeBatchedEx",
    "nvjpegDecodeBatchedSupportedEx",
    "nvjpegBufferPinnedCreateV2",
    "nvjpegBufferPinnedDestroy",
    "nvjpegBufferDeviceCreateV2",
    "nvjpegBufferDeviceDestroy",
    "nvjpegStateAttachPinnedBuffer",
    "nvjpegStateAttachDeviceBuffer",
    "nvjpegJpegStreamCreate",
    "nvjpegJpegStreamDestroy",
    "nvjpegJpegStreamParse",
    "nvjpegJpegStreamParseHeader",
    "nvjpegDecodeParamsCreate",
    "nvjpegDecodeParamsDestroy",
    "nvjpegDecodeParamsSetOutputFormat",
    "nvjpegDecodeParamsSetROI",
    "nvjpegDecoderCreate",
    "nvjpegDecoderDestroy",
    "nvjpegDecoderStateCreate",
    "nvjpegDecodeJpegHost",
    "nvjpegDecodeJpegTransferToDevice",
    "nvjpegDecodeJpegDevice",
};

/// A loaded nvJPEG: the file, its version and its functions. Unloads
/// (dlclose) when the last owner lets go. Immutable; any thread.
class nvjpeg_library {
 public:
  nvjpeg_library(void* handle, std::string path, std::array<void*, nvjpeg_symbol_names.size()> fns, int major,
                 int minor, int patch) noexcept;
  ~nvjpeg_library();
  nvjpeg_library(const nvjpeg_library&) = delete;
  nvjpeg_library& operator=(const nvjpeg_library&) = delete;

  /// The function's address, never null (load_nvjpeg refuses a library
  /// without it).
  [[nodiscard]] void* get(nvjpeg_fn f) const noexcept { return m_fns[static_cast<std::size_t>(f)]; }
  /// The file as loaded (dlinfo's name: the path it was found at).
  [[nodiscard]] const std::string& path() const noexcept { return m_path; }
  [[nodiscard]] int major() const noexcept { return m_major; }
  [[nodiscard]] int minor() const noexcept { return m_minor; }
  [[nodiscard]] int patch() const noexcept { return m_patch; }
  /// "nvJPEG 13.0.2 (/usr/local/cuda/lib64/libnvjpeg.so.13)".
  [[nodiscard]] std::string describe() const;

 private:
  void* m_handle;
  std::string m_path;
  std::array<void*, nvjpeg_symbol_names.size()> m_fns;
  int m_major, m_minor, m_patch;
};

/// Where to look, in order (see the top of this file).
struct nvjpeg_search {
  int major = 13;              ///< the nvJPEG major version wanted (nvjpeg.h's NVJPEG_VER_MAJOR)
  std::string explicit_path;   ///< RINGFEED_NVJPEG: when set, the only place looked
  std::vector<std::filesystem::path> toolkit_folders;  ///< CUDA library folders, searched for libnvjpeg.so.<major>, libnvjpeg.so
  std::vector<std::filesystem::path> python_folders;   ///< site-packages folders (nvidia/..., torchvision.libs inside)
  bool system_search = true;  ///< last, dlopen("libnvjpeg.so.<major>") by name
};

/// The search this process would make: RINGFEED_NVJPEG, CUDA_HOME,
/// CUDA_PATH, /usr/local/cuda, the loaded objects' site-packages,
/// VIRTUAL_ENV, PYTHONPATH. Never throws.
[[nodiscard]] nvjpeg_search default_nvjpeg_search(int major);

/// The site-packages (or dist-packages) folder a path lies in, or empty:
/// "/v/lib/python3.11/site-packages/torch/lib/libtorch.so" gives
/// "/v/lib/python3.11/site-packages".
[[nodiscard]] std::filesystem::path site_packages_of(const std::filesystem::path& p);

/// The files one search tries, in order (after dlopen's own search, when
/// system_search, comes the bare soname). Only existing files are listed.
[[nodiscard]] std::vector<std::filesystem::path> nvjpeg_candidates(const nvjpeg_search& where);

/// What load_nvjpeg found: the library, or why none (every place looked and
/// what each said).
struct nvjpeg_load_result {
  std::shared_ptr<const nvjpeg_library> library;
  std::string why_not;
};

/// Loads the first candidate that is nvJPEG <major> with every function
/// of nvjpeg_symbol_names. Never throws.
[[nodiscard]] nvjpeg_load_result load_nvjpeg(const nvjpeg_search& where);

/// Loads exactly `path` (RINGFEED_NVJPEG's check, and the tests'): the
/// library, or why not, naming the path.
[[nodiscard]] nvjpeg_load_result load_nvjpeg_file(const std::string& path, int major);

}  // namespace ringfeed::cuda
