// `without_io_uring PROGRAM ARGS...`: runs PROGRAM where io_uring_setup
// fails with EPERM (support/no_io_uring.hpp), so that cli_tests.sh can run
// the CLI as a user in a default Docker container does.
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "support/no_io_uring.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: without_io_uring PROGRAM [ARGS...]\n");
    return 2;
  }
  if (!ringfeed::test::block_io_uring_setup()) {
    std::fprintf(stderr, "without_io_uring: cannot install the seccomp filter: %s\n", std::strerror(errno));
    return 2;
  }
  ::execvp(argv[1], argv + 1);
  std::fprintf(stderr, "without_io_uring: cannot run %s: %s\n", argv[1], std::strerror(errno));
  return 127;
}
