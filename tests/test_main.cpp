// The Catch2 runner shared by every test executable. A test file that needs
// something the machine may lack registers a skip check (test_support.hpp);
// when it names a reason the executable prints it and exits 77, which ctest
// reports as "skipped", never as passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>

#include "test_support.hpp"

int main(int argc, char** argv) {
  if (auto check = ringfeed::test::skip_check_slot()) {
    const std::string reason = check();
    if (!reason.empty()) {
      std::printf("SKIPPED: %s\n", reason.c_str());
      std::fflush(stdout);
      return ringfeed::test::skip_exit_code;
    }
  }
  return Catch::Session().run(argc, argv);
}
