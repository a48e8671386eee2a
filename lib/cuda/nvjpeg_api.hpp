// Private: the nvJPEG functions nvjpeg_decoder.cpp calls, typed as nvjpeg.h
// declares them, from a loaded library's table (nvjpeg_library.hpp), and
// the names of nvJPEG's statuses. Includes nvjpeg.h: CUDA builds with the
// header only.
#pragma once

#include <nvjpeg.h>

#include <string>

#include "nvjpeg_library.hpp"

namespace ringfeed::cuda {

struct nvjpeg_api {
  explicit nvjpeg_api(const nvjpeg_library& l) noexcept
      : create_ex_v2(fn<decltype(&nvjpegCreateExV2)>(l, nvjpeg_fn::create_ex_v2)),
        destroy(fn<decltype(&nvjpegDestroy)>(l, nvjpeg_fn::destroy)),
        get_hardware_decoder_info(fn<decltype(&nvjpegGetHardwareDecoderInfo)>(l, nvjpeg_fn::get_hardware_decoder_info)),
        jpeg_state_create(fn<decltype(&nvjpegJpegStateCreate)>(l, nvjpeg_fn::jpeg_state_create)),
        jpeg_state_destroy(fn<decltype(&nvjpegJpegStateDestroy)>(l, nvjpeg_fn::jpeg_state_destroy)),
        decode_batched_initialize(fn<decltype(&nvjpegDecodeBatchedInitialize)>(l, nvjpeg_fn::decode_batched_initialize)),
        decode_batched_ex(fn<decltype(&nvjpegDecodeBatchedEx)>(l, nvjpeg_fn::decode_batched_ex)),
        decode_batched_supported_ex(fn<decltype(&nvjpegDecodeBatchedSupportedEx)>(l, nvjpeg_fn::decode_batched_supported_ex)),
        buffer_pinned_create_v2(fn<decltype(&nvjpegBufferPinnedCreateV2)>(l, nvjpeg_fn::buffer_pinned_create_v2)),
        buffer_pinned_destroy(fn<decltype(&nvjpegBufferPinnedDestroy)>(l, nvjpeg_fn::buffer_pinned_destroy)),
        buffer_device_create_v2(fn<decltype(&nvjpegBufferDeviceCreateV2)>(l, nvjpeg_fn::buffer_device_create_v2)),
        buffer_device_destroy(fn<decltype(&nvjpegBufferDeviceDestroy)>(l, nvjpeg_fn::buffer_device_destroy)),
        state_attach_pinned_buffer(fn<decltype(&nvjpegStateAttachPinnedBuffer)>(l, nvjpeg_fn::state_attach_pinned_buffer)),
        state_attach_device_buffer(fn<decltype(&nvjpegStateAttachDeviceBuffer)>(l, nvjpeg_fn::state_attach_device_buffer)),
        jpeg_stream_create(fn<decltype(&nvjpegJpegStreamCreate)>(l, nvjpeg_fn::jpeg_stream_create)),
        jpeg_stream_destroy(fn<decltype(&nvjpegJpegStreamDestroy)>(l, nvjpeg_fn::jpeg_stream_destroy)),
        jpeg_stream_parse(fn<decltype(&nvjpegJpegStreamParse)>(l, nvjpeg_fn::jpeg_stream_parse)),
        jpeg_stream_parse_header(fn<decltype(&nvjpegJpegStreamParseHeader)>(l, nvjpeg_fn::jpeg_stream_parse_header)),
        decode_params_create(fn<decltype(&nvjpegDecodeParamsCreate)>(l, nvjpeg_fn::decode_params_create)),
        decode_params_destroy(fn<decltype(&nvjpegDecodeParamsDestroy)>(l, nvjpeg_fn::decode_params_destroy)),
        decode_params_set_output_format(
            fn<decltype(&nvjpegDecodeParamsSetOutputFormat)>(l, nvjpeg_fn::decode_params_set_output_format)),
        decode_params_set_roi(fn<decltype(&nvjpegDecodeParamsSetROI)>(l, nvjpeg_fn::decode_params_set_roi)),
        decoder_create(fn<decltype(&nvjpegDecoderCreate)>(l, nvjpeg_fn::decoder_create)),
        decoder_destroy(fn<decltype(&nvjpegDecoderDestroy)>(l, nvjpeg_fn::decoder_destroy)),
        decoder_state_create(fn<decltype(&nvjpegDecoderStateCreate)>(l, nvjpeg_fn::decoder_state_create)),
        decode_jpeg_host(fn<decltype(&nvjpegDecodeJpegHost)>(l, nvjpeg_fn::decode_jpeg_host)),
        decode_jpeg_transfer_to_device(
            fn<decltype(&nvjpegDecodeJpegTransferToDevice)>(l, nvjpeg_fn::decode_jpeg_transfer_to_device)),
        decode_jpeg_device(fn<decltype(&nvjpegDecodeJpegDevice)>(l, nvjpeg_fn::decode_jpeg_device)) {}

  decltype(&nvjpegCreateExV2) create_ex_v2;
  decltype(&nvjpegDestroy) destroy;
  decltype(&nvjpegGetHardwareDecoderInfo) get_hardware_decoder_info;
  decltype(&nvjpegJpegStateCreate) jpeg_state_create;
  decltype(&nvjpegJpegStateDestroy) jpeg_state_destroy;
  decltype(&nvjpegDecodeBatchedInitialize) decode_batched_initialize;
  decltype(&nvjpegDecodeBatchedEx) decode_batched_ex;
  decltype(&nvjpegDecodeBatchedSupportedEx) decode_batched_supported_ex;
  decltype(&nvjpegBufferPinnedCreateV2) buffer_pinned_create_v2;
  decltype(&nvjpegBufferPinnedDestroy) buffer_pinned_destroy;
  decltype(&nvjpegBufferDeviceCreateV2) buffer_device_create_v2;
  decltype(&nvjpegBufferDeviceDestroy) buffer_device_destroy;
  decltype(&nvjpegStateAttachPinnedBuffer) state_attach_pinned_buffer;
  decltype(&nvjpegStateAttachDeviceBuffer) state_attach_device_buffer;
  decltype(&nvjpegJpegStreamCreate) jpeg_stream_create;
  decltype(&nvjpegJpegStreamDestroy) jpeg_stream_destroy;
  decltype(&nvjpegJpegStreamParse) jpeg_stream_parse;
  decltype(&nvjpegJpegStreamParseHeader) jpeg_stream_parse_header;
  decltype(&nvjpegDecodeParamsCreate) decode_params_create;
  decltype(&nvjpegDecodeParamsDestroy) decode_params_destroy;
  decltype(&nvjpegDecodeParamsSetOutputFormat) decode_params_set_output_format;
  decltype(&nvjpegDecodeParamsSetROI) decode_params_set_roi;
  decltype(&nvjpegDecoderCreate) decoder_create;
  decltype(&nvjpegDecoderDestroy) decoder_destroy;
  decltype(&nvjpegDecoderStateCreate) decoder_state_create;
  decltype(&nvjpegDecodeJpegHost) decode_jpeg_host;
  decltype(&nvjpegDecodeJpegTransferToDevice) decode_jpeg_transfer_to_device;
  decltype(&nvjpegDecodeJpegDevice) decode_jpeg_device;

 private:
  // Each pointer was resolved by the name nvjpeg_symbol_names gives, whose
  // type is the one nvjpeg.h declares for that name.
  template <class F>
  static F fn(const nvjpeg_library& l, nvjpeg_fn f) noexcept {
    return reinterpret_cast<F>(l.get(f));
  }
};

/// "NVJPEG_STATUS_BAD_JPEG", or "nvJPEG status <n>" for a value nvjpeg.h
/// (13.0) does not name.
inline std::string nvjpeg_status_name(nvjpegStatus_t s) {
  switch (s) {
    case NVJPEG_STATUS_SUCCESS: return "NVJPEG_STATUS_SUCCESS";
    case NVJPEG_STATUS_NOT_INITIALIZED: return "NVJPEG_STATUS_NOT_INITIALIZED";
    case NVJPEG_STATUS_INVALID_PARAMETER: return "NVJPEG_STATUS_INVALID_PARAMETER";
    case NVJPEG_STATUS_BAD_JPEG: return "NVJPEG_STATUS_BAD_JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED: return "NVJPEG_STATUS_JPEG_NOT_SUPPORTED";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE: return "NVJPEG_STATUS_ALLOCATOR_FAILURE";
    case NVJPEG_STATUS_EXECUTION_FAILED: return "NVJPEG_STATUS_EXECUTION_FAILED";
    case NVJPEG_STATUS_ARCH_MISMATCH: return "NVJPEG_STATUS_ARCH_MISMATCH";
    case NVJPEG_STATUS_INTERNAL_ERROR: return "NVJPEG_STATUS_INTERNAL_ERROR";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED: return "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM: return "NVJPEG_STATUS_INCOMPLETE_BITSTREAM";
  }
  return "nvJPEG status " + std::to_string(static_cast<int>(s));
}

}  // namespace ringfeed::cuda
