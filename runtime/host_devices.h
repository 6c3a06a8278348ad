// The storage and network hardware Linux describes without extra tools or
// root: the block device under a folder (/sys/dev/block, queue/rotational,
// /proc/self/mountinfo for file systems without one) and the network
// interfaces and RDMA ports under /sys/class. describe_system's
// host_storage_type and host_networking.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace mlperf::runtime {

// The first line of a /sys or /proc attribute, trimmed; "" when it cannot be
// read (an interface that is down answers `speed` with EINVAL).
std::string SysfsAttribute(const std::filesystem::path& path);

// Where the probes read; tests pass a made-up tree.
struct SysPaths {
  std::filesystem::path sys = "/sys";
  std::filesystem::path mountinfo = "/proc/self/mountinfo";
};

// The storage holding `folder` (its nearest existing parent), e.g.
// "NVMe SSD (nvme0n1: SAMSUNG MZQL23T8HCLS)", "SATA/SAS SSD (sda)", "HDD (sdb)",
// "virtual disk, virtio (vda)", "network file system, lustre", "memory, tmpfs";
// nullopt where Linux does not tell (container overlays, unknown devices).
std::optional<std::string> StorageType(const std::filesystem::path& folder,
                                       const SysPaths& paths = {});

// The same for the file system on device major:minor (what stat's st_dev says).
std::optional<std::string> StorageTypeOfDevice(unsigned major, unsigned minor,
                                               const SysPaths& paths = {});

// Interfaces with hardware behind them (not lo, bridges, veth or tunnels) and
// RDMA ports, alike ones counted: "2x Ethernet 100 Gb/s (mlx5_core: eth0, eth1);
// 8x InfiniBand 400 Gb/sec (4X NDR) (mlx5_0 port 1, ...)"; nullopt when none.
std::optional<std::string> HostNetworking(const SysPaths& paths = {});

}  // namespace mlperf::runtime
