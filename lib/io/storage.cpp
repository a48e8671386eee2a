// ringfeed::io::probe_storage — see storage.hpp.
#include <ringfeed/io/storage.hpp>
#include <ringfeed/text.hpp>

#include <ringfeed/io/location.hpp>

#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace ringfeed::io {
namespace {

namespace fs = std::filesystem;

std::string read_line(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return line;
}

struct fs_magic {
  long magic;
  filesystem_kind kind;
  const char* name;
};

// statfs f_type values (linux/magic.h and the file systems' own headers).
constexpr fs_magic magics[] = {
    {0xEF53, filesystem_kind::ext4, "ext4"},          {0x58465342, filesystem_kind::xfs, "xfs"},
    {0x9123683E, filesystem_kind::btrfs, "btrfs"},    {0x01021994, filesystem_kind::tmpfs, "tmpfs"},
    {0x794C7630, filesystem_kind::overlay, "overlay"}, {0x65735546, filesystem_kind::fuse, "fuse"},
    {0x6969, filesystem_kind::nfs, "nfs"},            {0x2FC12FC1, filesystem_kind::zfs, "zfs"},
    {0xFF534D42, filesystem_kind::cifs, "cifs"},      {0xFE534D42, filesystem_kind::cifs, "smb2"},
};

// The whole disk under /sys/block for a device number: partitions map to
// their parent, dm/md devices to their first slave, loop devices to the
// disk under their backing file.
std::string whole_disk(dev_t dev, int depth = 0) {
  if (depth > 4 || major(dev) == 0) return {};
  std::error_code ec;
  const fs::path sys = fs::path("/sys/dev/block") / (std::to_string(major(dev)) + ":" + std::to_string(minor(dev)));
  fs::path real = fs::canonical(sys, ec);
  if (ec) return {};
  if (fs::exists(real / "partition")) real = real.parent_path();
  const std::string name = real.filename().string();
  // Stacked devices: follow the first slave.
  const fs::path slaves = real / "slaves";
  if (fs::is_directory(slaves, ec)) {
    for (const auto& s : fs::directory_iterator(slaves, ec)) {
      const std::string d = read_line(s.path() / "dev");
      unsigned maj = 0, min = 0;
      if (std::sscanf(d.c_str(), "%u:%u", &maj, &min) == 2) return whole_disk(makedev(maj, min), depth + 1);
    }
  }
  if (name.rfind("loop", 0) == 0) {
    const std::string backing = read_line(real / "loop" / "backing_file");
    struct stat st {};
    if (!backing.empty() && ::stat(backing.c_str(), &st) == 0) {
      const std::string under = whole_disk(st.st_dev, depth + 1);
      if (!under.empty()) return under;
    }
  }
  return name;
}

}  // namespace

const char* to_string(filesystem_kind k) noexcept {
  switch (k) {
    case filesystem_kind::ext4: return "ext4";
    case filesystem_kind::xfs: return "xfs";
    case filesystem_kind::btrfs: return "btrfs";
    case filesystem_kind::tmpfs: return "tmpfs";
    case filesystem_kind::overlay: return "overlay";
    case filesystem_kind::fuse: return "fuse";
    case filesystem_kind::nfs: return "nfs";
    case filesystem_kind::zfs: return "zfs";
    case filesystem_kind::cifs: return "cifs";
    case filesystem_kind::other: return "other";
  }
  return "other";
}

const char* to_string(device_class c) noexcept {
  switch (c) {
    case device_class::nvme: return "NVMe SSD";
    case device_class::ssd: return "SSD";
    case device_class::hdd: return "HDD";
    case device_class::virtual_disk: return "virtual disk";
    case device_class::memory: return "memory";
    case device_class::network: return "network";
    case device_class::unknown: return "unknown";
  }
  return "unknown";
}

namespace {

// What each device class recommends: depth, whether O_DIRECT pays off
// (where the file system supports it), whether random small-file reads
// are sane, and the advice people read.
struct recommendation {
  std::size_t io_depth;
  bool direct_if_capable;
  bool small_files_ok;
  const char* advice;
};

recommendation recommendation_for(device_class c) noexcept {
  switch (c) {
    case device_class::nvme:
      return {64, true, true, "NVMe: deep queues pay off; O_DIRECT avoids the page-cache copy."};
    case device_class::ssd:
      return {32, true, true, "SSD: depth 32 saturates SATA; O_DIRECT avoids the page-cache copy."};
    case device_class::hdd:
      return {4, false, false,
              "HDD: random small-file reads are seek-bound (~100-200 files/s). Pack the dataset into tar shards "
              "(`ringfeed pack SOURCE OUT`) and read them sequentially."};
    case device_class::virtual_disk:
      return {32, false, true,
              "virtual disk: the host's storage is unknown from inside; measure with "
              "`ringfeed bench --pipeline none` (buffered reads by default)."};
    case device_class::memory:
      return {8, false, true, "memory-backed: nothing to wait for; buffered reads, shallow queue."};
    case device_class::network:
      return {64, false, true,
              "network file system: latency-bound, so keep many reads in flight; buffered reads, "
              "and a local cache for repeated epochs."};
    case device_class::unknown:
      break;
  }
  return {32, false, true, "device not identified (overlay or FUSE?); buffered reads at depth 32."};
}

// The depth, direct I/O and advice that follow from the file system and
// device class found.
void recommend(storage_info& info) {
  const bool direct_capable = info.filesystem == filesystem_kind::ext4 || info.filesystem == filesystem_kind::xfs ||
                              info.filesystem == filesystem_kind::btrfs;
  const recommendation r = recommendation_for(info.device);
  info.io_depth = r.io_depth;
  info.direct_io = r.direct_if_capable && direct_capable;
  info.small_files_ok = r.small_files_ok;
  info.advice = r.advice;
}

}  // namespace

storage_info probe_storage(const std::string& path) {
  storage_info info;
  info.path = path;
  struct statfs sf {};
  if (::statfs(path.c_str(), &sf) != 0)
    throw std::system_error(errno, std::generic_category(), "statfs '" + escape_bytes(path) + "'");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw std::system_error(errno, std::generic_category(), "stat '" + escape_bytes(path) + "'");

  char hex[24];
  std::snprintf(hex, sizeof hex, "0x%lx", static_cast<unsigned long>(sf.f_type));
  info.filesystem_name = hex;
  for (const auto& m : magics) {
    if (static_cast<unsigned long>(sf.f_type) == static_cast<unsigned long>(m.magic)) {
      info.filesystem = m.kind;
      info.filesystem_name = m.name;
    }
  }

  if (info.filesystem == filesystem_kind::nfs || info.filesystem == filesystem_kind::cifs) {
    info.device = device_class::network;
    info.transport = "network";
  } else if (info.filesystem == filesystem_kind::tmpfs) {
    info.device = device_class::memory;
  } else {
    info.device_name = whole_disk(st.st_dev);
    if (!info.device_name.empty()) {
      const fs::path q = fs::path("/sys/block") / info.device_name / "queue";
      const std::string rot = read_line(q / "rotational");
      info.rotational = rot == "1" ? 1 : rot == "0" ? 0 : -1;
      info.logical_block_size = static_cast<std::uint32_t>(std::strtoul(read_line(q / "logical_block_size").c_str(), nullptr, 10));
      const std::string& n = info.device_name;
      std::error_code ec;
      const std::string devpath = fs::canonical(fs::path("/sys/block") / n, ec).string();
      if (n.rfind("nvme", 0) == 0) {
        info.transport = "nvme";
        info.device = device_class::nvme;
      } else if (n.rfind("vd", 0) == 0 || devpath.find("/virtio") != std::string::npos) {
        // virtio-blk reports rotational=1 by default whatever backs it.
        info.transport = "virtio";
        info.device = device_class::virtual_disk;
      } else if (n.rfind("zram", 0) == 0 || n.rfind("ram", 0) == 0 || n.rfind("pmem", 0) == 0) {
        info.device = device_class::memory;
      } else {
        info.transport = devpath.find("/usb") != std::string::npos ? "usb" : "sata/sas";
        info.device = info.rotational == 1 ? device_class::hdd : info.rotational == 0 ? device_class::ssd
                                                                                       : device_class::unknown;
      }
    }
  }

  recommend(info);
  return info;
}

storage_info probe_source(const std::string& source) {
  storage_info info;
  info.path = source;
  if (classify_location(source) == location_kind::nfs) {
    info.filesystem = filesystem_kind::nfs;
    info.filesystem_name = "nfs (libnfs)";
    info.device = device_class::network;
    info.transport = "network";
  } else {
    try {
      return probe_storage(source);
    } catch (const std::system_error&) {
      // Not stat-able (odd sources): storage it cannot identify.
    }
  }
  recommend(info);
  return info;
}

}  // namespace ringfeed::io
