// `ringfeed probe PATH`: what PATH is stored on, and how ringfeed should
// read it (queue depth, O_DIRECT, small files or shards).
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include <ringfeed/detail/json_text.hpp>
#include <ringfeed/io/ring.hpp>
#include <ringfeed/io/storage.hpp>

#include "commands.hpp"

namespace ringfeed::cli {

void register_probe(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("probe", "say what a path is stored on and how to read it");
  cmd->add_option("PATH", *path, "dataset directory or file")->required();
  cmd->add_flag("--json", *json, "print one JSON object");
  cmd->callback([path, json] {
    const io::storage_info s = io::probe_storage(*path);
    const std::string uring = io::ring::unavailable_reason();
    if (*json) {
      const nlohmann::json out = {
          {"path", s.path},
          {"filesystem", s.filesystem_name},
          {"device_class", io::to_string(s.device)},
          {"device", s.device_name},
          {"transport", s.transport},
          {"rotational", s.rotational},
          {"logical_block_size", s.logical_block_size},
          {"io_depth", s.io_depth},
          {"direct_io", s.direct_io},
          {"small_files_ok", s.small_files_ok},
          {"io_uring", uring.empty() ? "available" : uring},
          {"advice", s.advice},
      };
      std::printf("%s\n", detail::json_text(out).c_str());  // a path is bytes, not UTF-8
      return;
    }
    std::printf("%s\n", s.path.c_str());
    std::printf("  file system   %s\n", s.filesystem_name.c_str());
    std::printf("  device        %s%s%s%s\n", io::to_string(s.device), s.device_name.empty() ? "" : " (",
                s.device_name.c_str(), s.device_name.empty() ? "" : ")");
    if (!s.transport.empty()) std::printf("  transport     %s\n", s.transport.c_str());
    if (s.rotational >= 0) std::printf("  rotational    %d\n", s.rotational);
    if (s.logical_block_size) std::printf("  block size    %u bytes\n", s.logical_block_size);
    std::printf("  io_uring      %s\n", uring.empty() ? "available" : uring.c_str());
    std::printf("  recommended   --io-depth %zu%s%s\n", s.io_depth, s.direct_io ? " --direct" : "",
                s.small_files_ok ? "" : "  (and tar shards)");
    std::printf("  %s\n", s.advice.c_str());
  });
}

}  // namespace ringfeed::cli
