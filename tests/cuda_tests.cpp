#include <catch2/catch.hpp>

#include <ringfeed/config.hpp>
#include <ringfeed/cuda/device.hpp>

#include "cuda_device.hpp"
#include "test_support.hpp"

// Everything here needs a CUDA device; without one the executable reports
// "skipped" with the CUDA runtime's own reason (e.g. cudaErrorNoDevice).
static ringfeed::test::skip_if_unavailable skip_without_device{ringfeed::test::why_no_cuda_device};

TEST_CASE("the probe reports devices and no reason when they exist", "[cuda]") {
  REQUIRE(ringfeed::built_with_cuda);
  const auto p = ringfeed::cuda::probe_devices();
  REQUIRE(p.device_count > 0);
  REQUIRE(p.reason.empty());
}

