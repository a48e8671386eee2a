#include <ringfeed/sync_wait.hpp>
#include <ringfeed/task.hpp>
#include <ringfeed/thread_pool.hpp>
#include <ringfeed/when_all.hpp>

#include <cstdio>
#include <vector>

ringfeed::task<int> value_on(ringfeed::thread_pool& pool, int v) {
  co_await pool.schedule();
  co_return v;
}

ringfeed::task<int> sum(ringfeed::thread_pool& pool) {
  std::vector<ringfeed::task<int>> parts;
  for (int i = 1; i <= 100; ++i) parts.push_back(value_on(pool, i));
  int total = 0;
  for (int v : co_await ringfeed::when_all(std::move(parts))) total += v;
  co_return total;
}

int main() {
  ringfeed::thread_pool pool(2);
  std::printf("sum=%d\n", ringfeed::sync_wait(sum(pool)));
}
