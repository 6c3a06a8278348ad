// The storage and network probes on made-up /sys trees laid out as Linux lays
// them out: partitions inside their disk, device-mapper and md slaves,
// interfaces that are links to their device, RDMA ports.
#include "runtime/host_devices.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "fmt/format.h"

namespace mlperf::runtime {
namespace {

namespace fs = std::filesystem;

class HostDevices : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            fmt::format("host_devices_test_{}_{}", getpid(),
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
    paths_ = {.sys = root_ / "sys", .mountinfo = root_ / "mountinfo"};
    Write("mountinfo", "");
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const std::string& path, const std::string& text) {
    fs::create_directories((root_ / path).parent_path());
    std::ofstream(root_ / path) << text << "\n";
  }
  // A relative link, as sysfs has them.
  void Link(const std::string& path, const std::string& target) {
    fs::create_directories((root_ / path).parent_path());
    fs::create_directories(root_ / target);
    fs::create_directory_symlink(fs::relative(root_ / target, (root_ / path).parent_path()),
                                 root_ / path);
  }
  // A disk under /sys/devices with its rotational flag and model, and its
  // major:minor link; `partition` > 0 links a partition instead.
  std::string Disk(const std::string& parent, const std::string& name, const char* rotational,
                   const std::string& model, const std::string& dev, int partition = 0) {
    const std::string disk = fmt::format("sys/devices/{}/block/{}", parent, name);
    Write(disk + "/queue/rotational", rotational);
    if (!model.empty()) Write(disk + "/device/model", model);
    std::string block = disk;
    if (partition > 0) {
      const std::string part_name =
          fmt::format("{}{}{}", name, name.starts_with("nvme") ? "p" : "", partition);
      block = disk + "/" + part_name;
      Write(block + "/partition", std::to_string(partition));
    }
    if (!dev.empty()) Link("sys/dev/block/" + dev, block);
    return block;
  }

  fs::path root_;
  SysPaths paths_;
};

TEST_F(HostDevices, NamesTheDiskUnderAPartition) {
  Disk("pci0000:00/0000:00:01.0/nvme/nvme0", "nvme0n1", "0", "SAMSUNG MZQL23T8HCLS", "259:1", 1);
  EXPECT_EQ(StorageTypeOfDevice(259, 1, paths_), "NVMe SSD (SAMSUNG MZQL23T8HCLS: nvme0n1)");
  Disk("pci0000:00/ata1/host0", "sda", "0", "Micron_5300", "8:1", 1);
  EXPECT_EQ(StorageTypeOfDevice(8, 1, paths_), "SATA/SAS SSD (Micron_5300: sda)");
  Disk("pci0000:00/ata2/host1", "sdb", "1", "", "8:16");
  EXPECT_EQ(StorageTypeOfDevice(8, 16, paths_), "HDD (sdb)");
}

TEST_F(HostDevices, SaysVirtualDisksAreVirtual) {
  // Hypervisors call their disks rotational whatever backs them.
  Disk("pci0000:00/0000:00:02.0/virtio1", "vda", "1", "", "254:0");
  EXPECT_EQ(StorageTypeOfDevice(254, 0, paths_), "virtual disk, virtio (vda)");
  Disk("pci0000:00/host2", "sdc", "1", "QEMU HARDDISK", "8:32");
  Write("sys/devices/pci0000:00/host2/block/sdc/device/vendor", "QEMU    ");
  EXPECT_EQ(StorageTypeOfDevice(8, 32, paths_), "virtual disk (QEMU HARDDISK: sdc)");
}

TEST_F(HostDevices, FollowsDeviceMapperAndRaidToTheirDisks) {
  const std::string p0 =
      Disk("pci0000:00/0000:00:01.0/nvme/nvme0", "nvme0n1", "0", "MODEL", "259:2", 2);
  const std::string p1 =
      Disk("pci0000:00/0000:00:02.0/nvme/nvme1", "nvme1n1", "0", "MODEL", "259:5", 2);
  Write("sys/devices/virtual/block/dm-0/queue/rotational", "0");
  Link("sys/devices/virtual/block/dm-0/slaves/nvme0n1p2", p0);
  Link("sys/devices/virtual/block/dm-0/slaves/nvme1n1p2", p1);
  Link("sys/dev/block/253:0", "sys/devices/virtual/block/dm-0");
  EXPECT_EQ(StorageTypeOfDevice(253, 0, paths_), "2x NVMe SSD (MODEL: nvme0n1, nvme1n1)");

  const std::string a = Disk("pci0000:00/ata1/host0", "sda", "1", "", "");
  const std::string b = Disk("pci0000:00/ata1/host1", "sdb", "1", "", "");
  Write("sys/devices/virtual/block/md0/md/level", "raid0");
  Link("sys/devices/virtual/block/md0/slaves/sda", a);
  Link("sys/devices/virtual/block/md0/slaves/sdb", b);
  Link("sys/dev/block/9:0", "sys/devices/virtual/block/md0");
  EXPECT_EQ(StorageTypeOfDevice(9, 0, paths_), "2x HDD (sda, sdb) in raid0 md0");
}

TEST_F(HostDevices, NamesNetworkAndMemoryFileSystems) {
  Write("mountinfo",
        "30 1 0:50 / /lustre rw - lustre 10.0.0.1@o2ib:/fs rw\n"
        "31 1 0:51 / /dev/shm rw - tmpfs tmpfs rw\n"
        "32 1 0:52 / / rw - overlay overlay rw,lowerdir=/a,upperdir=/b\n"
        "33 1 0:53 / /nfs rw,relatime shared:5 - nfs4 server:/export rw");
  EXPECT_EQ(StorageTypeOfDevice(0, 50, paths_), "network file system, lustre");
  EXPECT_EQ(StorageTypeOfDevice(0, 51, paths_), "memory, tmpfs");
  EXPECT_EQ(StorageTypeOfDevice(0, 53, paths_), "network file system, nfs4");
  // Container layers say nothing of the disk underneath.
  EXPECT_EQ(StorageTypeOfDevice(0, 52, paths_), std::nullopt);
}

TEST_F(HostDevices, UnknownWhereLinuxDoesNotTell) {
  EXPECT_EQ(StorageTypeOfDevice(7, 0, paths_), std::nullopt);  // no such device
  Disk("virtual", "loop0", "1", "", "7:0");
  EXPECT_EQ(StorageTypeOfDevice(7, 0, paths_), std::nullopt);
  EXPECT_EQ(HostNetworking(paths_), std::nullopt);
}

TEST_F(HostDevices, ListsHardwareInterfacesAndRdmaPortsWithTheirSpeeds) {
  const auto nic = [&](const std::string& name, const std::string& pci, const std::string& driver,
                       const char* type, const char* speed) {
    const std::string dir = "sys/devices/pci0000:00/" + pci + "/net/" + name;
    Write(dir + "/type", type);
    Write(dir + "/speed", speed);
    Link(dir + "/device", "sys/devices/pci0000:00/" + pci);
    Link("sys/devices/pci0000:00/" + pci + "/driver", "sys/bus/pci/drivers/" + driver);
    Link("sys/class/net/" + name, dir);
  };
  nic("eth0", "0000:01:00.0", "mlx5_core", "1", "100000");
  nic("eth1", "0000:01:00.1", "mlx5_core", "1", "100000");
  nic("enp2s0", "0000:02:00.0", "igb", "1", "-1");  // no link
  nic("ib0", "0000:03:00.0", "mlx5_core", "32", "200000");
  // Software interfaces have no device.
  for (const char* name : {"lo", "docker0", "veth1"}) {
    Write(fmt::format("sys/devices/virtual/net/{}/type", name), "1");
    Link(fmt::format("sys/class/net/{}", name), fmt::format("sys/devices/virtual/net/{}", name));
  }
  for (const char* hca : {"mlx5_2", "mlx5_3"}) {
    Write(fmt::format("sys/class/infiniband/{}/ports/1/link_layer", hca), "InfiniBand");
    Write(fmt::format("sys/class/infiniband/{}/ports/1/rate", hca), "400 Gb/sec (4X NDR)");
  }
  Write("sys/class/infiniband/mlx5_4/ports/1/link_layer", "Ethernet");
  EXPECT_EQ(HostNetworking(paths_),
            "Ethernet (igb: enp2s0); 2x Ethernet 100 Gb/s (mlx5_core: eth0, eth1); "
            "InfiniBand 200 Gb/s (mlx5_core: ib0); "
            "2x InfiniBand 400 Gb/sec (4X NDR) (mlx5_2 port 1, mlx5_3 port 1); "
            "RoCE (mlx5_4 port 1)");
}

}  // namespace
}  // namespace mlperf::runtime
