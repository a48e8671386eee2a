// What a run says when there is no GPU: the probe's reason names what is
// missing (the NVIDIA driver, or a device), so a newcomer on a machine
// without a driver is not sent looking for a driver upgrade by CUDA's
// "driver version is insufficient" (cudaErrorInsufficientDriver).
#include <catch2/catch.hpp>

#include <ringfeed/config.hpp>
#include <ringfeed/cuda/device.hpp>

#include "cuda/device_api.hpp"

using ringfeed::cuda::no_device_reason;

TEST_CASE("no driver library: the reason says so, not CUDA's 'insufficient driver'", "[cuda][probe]") {
  const std::string r = no_device_reason(35, "cudaErrorInsufficientDriver",
                                         "CUDA driver version is insufficient for CUDA runtime version",
                                         "libcuda.so.1: cannot open shared object file: No such file or directory");
  REQUIRE(r.find("no NVIDIA driver found") != std::string::npos);
  REQUIRE(r.find("libcuda.so.1: cannot open shared object file") != std::string::npos);
  REQUIRE(r.find("insufficient") == std::string::npos);
}

TEST_CASE("a driver too old for the runtime keeps CUDA's own text", "[cuda][probe]") {
  const std::string r = no_device_reason(35, "cudaErrorInsufficientDriver",
                                         "CUDA driver version is insufficient for CUDA runtime version", "");
  REQUIRE(r == "cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version "
               "(CUDA error 35)");
}

TEST_CASE("a driver with no device says no device was found", "[cuda][probe]") {
  REQUIRE(no_device_reason(100, "cudaErrorNoDevice", "no CUDA-capable device is detected", "") ==
          "no CUDA device found (cudaErrorNoDevice: no CUDA-capable device is detected (CUDA error 100))");
  REQUIRE(no_device_reason(0, {}, {}, "") == "no CUDA device found: the NVIDIA driver reports 0 devices");
}

TEST_CASE("this machine's probe: without a driver library it names the driver", "[cuda][probe]") {
  if (!ringfeed::built_with_cuda) {
    REQUIRE(ringfeed::cuda::probe_devices().reason.find("built without CUDA") != std::string::npos);
    return;
  }
  const std::string driver = ringfeed::cuda::driver_load_error();
  const auto p = ringfeed::cuda::probe_devices();
  if (driver.empty()) {
    SUCCEED("libcuda.so.1 loads here: the no-driver case needs a machine without it");
    return;
  }
  REQUIRE_FALSE(p.available());
  INFO(p.reason);
  REQUIRE(p.reason.find("no NVIDIA driver found") != std::string::npos);
  REQUIRE(p.reason.find("insufficient") == std::string::npos);
}
