// ringfeed::io::probe_storage — what a path is stored on, and how to read it.
//
// The filesystem comes from statfs(2)'s magic number; the block device from
// the file's st_dev, resolved through /sys/dev/block to its whole disk
// (partitions to their disk, device-mapper and md to their first slave,
// loop devices to the file system holding their backing file). The device
// class comes from the disk's name and transport (nvme*, virtio, loop…) and
// queue/rotational. Recommendations follow from both:
//   NVMe: depth 64, O_DIRECT; SSD: depth 32, O_DIRECT; HDD: depth 4 and
//   pack small files into tar shards (random small reads are ~100 IOPS);
//   NFS: depth 64, buffered (no O_DIRECT), deadlines; tmpfs and other
//   memory-backed file systems: buffered, depth 8 (nothing to wait for).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ringfeed::io {

enum class filesystem_kind : std::uint8_t { ext4, xfs, btrfs, tmpfs, overlay, fuse, nfs, zfs, cifs, other };
enum class device_class : std::uint8_t { nvme, ssd, hdd, virtual_disk, memory, network, unknown };

struct storage_info {
  std::string path;
  filesystem_kind filesystem = filesystem_kind::other;
  std::string filesystem_name;   ///< e.g. "ext4", or "0x1234abcd" when unknown
  device_class device = device_class::unknown;
  std::string device_name;       ///< whole disk, e.g. "nvme0n1", "sda", "vda"; "" when none
  std::string transport;         ///< "nvme", "sata/sas", "virtio", "usb", "loop", "" when unknown
  int rotational = -1;           ///< queue/rotational: 1, 0, or -1 when unknown
  std::uint32_t logical_block_size = 0;  ///< bytes, 0 when unknown

  // Recommendations.
  std::size_t io_depth = 32;
  bool direct_io = false;        ///< O_DIRECT worth using (and supported by the file system)
  bool small_files_ok = true;    ///< random small-file reads are sane here
  std::string advice;            ///< one or two sentences for people
};

/// Probes `path` (a file or directory). Throws std::system_error naming the
/// path when it cannot be stat'ed. Any thread.
[[nodiscard]] storage_info probe_storage(const std::string& path);

/// What the loader and `ringfeed bench` read a source with: probe_storage
/// of a local path; for an `nfs://` URL, a network file system's
/// recommendations; for a path that cannot be stat'ed, those of storage it
/// cannot identify (depth 32, buffered). Does not throw for either. Any thread.
[[nodiscard]] storage_info probe_source(const std::string& source);

[[nodiscard]] const char* to_string(filesystem_kind k) noexcept;
[[nodiscard]] const char* to_string(device_class c) noexcept;

}  // namespace ringfeed::io
