/* A stand-in for libnvjpeg for nvjpeg_library_tests: exports every function
 * nvjpeg_library.hpp resolves (the ones not called do nothing), and
 * nvjpegGetProperty answers FAKE_NVJPEG_MAJOR.1.2. FAKE_NVJPEG_PARTIAL leaves
 * nvjpegDecodeBatchedEx out: an nvJPEG too old for the decoder. Never a real
 * decoder: no GPU call is made through it. */
#ifndef FAKE_NVJPEG_MAJOR
#error "FAKE_NVJPEG_MAJOR must be defined"
#endif

#define FAKE(name) \
  int name(void); \
  int name(void) { return 0; }

int nvjpegGetProperty(int type, int* value);
int nvjpegGetProperty(int type, int* value) {
  static const int version[3] = {FAKE_NVJPEG_MAJOR, 1, 2};
  if (type < 0 || type > 2 || value == 0) return 2; /* NVJPEG_STATUS_INVALID_PARAMETER */
  *value = version[type];
  return 0;
}

FAKE(nvjpegCreateExV2)
FAKE(nvjpegDestroy)
FAKE(nvjpegGetHardwareDecoderInfo)
FAKE(nvjpegJpegStateCreate)
FAKE(nvjpegJpegStateDestroy)
FAKE(nvjpegDecodeBatchedInitialize)
#ifndef FAKE_NVJPEG_PARTIAL
FAKE(nvjpegDecodeBatchedEx)
#endif
FAKE(nvjpegDecodeBatchedSupportedEx)
FAKE(nvjpegBufferPinnedCreateV2)
FAKE(nvjpegBufferPinnedDestroy)
FAKE(nvjpegBufferDeviceCreateV2)
FAKE(nvjpegBufferDeviceDestroy)
FAKE(nvjpegStateAttachPinnedBuffer)
FAKE(nvjpegStateAttachDeviceBuffer)
FAKE(nvjpegJpegStreamCreate)
FAKE(nvjpegJpegStreamDestroy)
FAKE(nvjpegJpegStreamParse)
FAKE(nvjpegJpegStreamParseHeader)
FAKE(nvjpegDecodeParamsCreate)
FAKE(nvjpegDecodeParamsDestroy)
FAKE(nvjpegDecodeParamsSetOutputFormat)
FAKE(nvjpegDecodeParamsSetROI)
FAKE(nvjpegDecoderCreate)
FAKE(nvjpegDecoderDestroy)
FAKE(nvjpegDecoderStateCreate)
FAKE(nvjpegDecodeJpegHost)
FAKE(nvjpegDecodeJpegTransferToDevice)
FAKE(nvjpegDecodeJpegDevice)
