// ringfeed::cuda::stream_t and event_t — the CUDA runtime's stream and event
// handles by name, without CUDA's headers, for the headers that only pass
// them along (batch.hpp) as well as the uploader.
#pragma once

// The CUDA runtime's handle structs, declared where cuda_runtime.h declares
// them (the global namespace), so these are the very same types.
struct CUstream_st;
struct CUevent_st;

namespace ringfeed::cuda {

using stream_t = ::CUstream_st*;  ///< == cudaStream_t
using event_t = ::CUevent_st*;    ///< == cudaEvent_t

}  // namespace ringfeed::cuda
