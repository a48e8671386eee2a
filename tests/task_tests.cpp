#include <catch2/catch.hpp>
#include <ringfeed/sync_wait.hpp>
#include <ringfeed/task.hpp>
ringfeed::task<int> answer() { co_return 42; }
TEST_CASE("smoke") { REQUIRE(ringfeed::sync_wait(answer()) == 42); }
