#include "runtime/host_devices.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "fmt/format.h"

namespace mlperf::runtime {

namespace fs = std::filesystem;

std::string SysfsAttribute(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return "";
  const size_t begin = line.find_first_not_of(" \t");
  const size_t end = line.find_last_not_of(" \t\r");
  return begin == std::string::npos ? "" : line.substr(begin, end - begin + 1);
}

namespace {

// Entries of a folder, sorted (the kernel lists them in no fixed order).
std::vector<fs::path> SortedEntries(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    out.push_back(it->path());
  std::sort(out.begin(), out.end());
  return out;
}

// Things described alike are counted once: "2x <what> (<label>: <names>)".
class Groups {
 public:
  void Add(const std::string& what, const std::string& label, const std::string& name) {
    auto it = std::find_if(groups_.begin(), groups_.end(),
                           [&](const Group& g) { return g.what == what && g.label == label; });
    if (it == groups_.end()) it = groups_.insert(groups_.end(), {what, label, {}});
    it->names.push_back(name);
  }
  bool empty() const { return groups_.empty(); }
  std::string Join(const std::string& separator) const {
    std::string out;
    for (const Group& g : groups_) {
      std::string names;
      for (const std::string& n : g.names) names += (names.empty() ? "" : ", ") + n;
      out += fmt::format("{}{}{} ({}{})", out.empty() ? "" : separator,
                         g.names.size() > 1 ? fmt::format("{}x ", g.names.size()) : "", g.what,
                         g.label.empty() ? "" : g.label + ": ", names);
    }
    return out;
  }

 private:
  struct Group {
    std::string what, label;
    std::vector<std::string> names;
  };
  std::vector<Group> groups_;
};

struct Mount {
  std::string fstype, source;
};

// The mount of device major:minor in /proc/self/mountinfo ("36 35 98:0 /
// /mnt rw - ext3 /dev/root rw": the fields after " - " are type and source).
std::optional<Mount> FindMount(unsigned major, unsigned minor, const fs::path& mountinfo) {
  std::ifstream in(mountinfo);
  const std::string device = fmt::format("{}:{}", major, minor);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, dev;
    fields >> id >> parent >> dev;
    const size_t dash = line.find(" - ");
    if (dev != device || dash == std::string::npos) continue;
    std::istringstream tail(line.substr(dash + 3));
    Mount m;
    tail >> m.fstype >> m.source;
    return m;
  }
  return std::nullopt;
}

// File systems with no local disk of their own: network ones and memory.
std::optional<std::string> FileSystemKind(const std::string& fstype) {
  static const std::set<std::string> network = {"nfs",       "nfs4",   "lustre", "gpfs",
                                                "beegfs",    "cifs",   "smb3",   "ceph",
                                                "glusterfs", "wekafs", "9p",     "virtiofs"};
  if (network.contains(fstype) || fstype.starts_with("fuse."))
    return fmt::format("network file system, {}", fstype);
  if (fstype == "tmpfs" || fstype == "ramfs") return fmt::format("memory, {}", fstype);
  return std::nullopt;
}

// A whole disk's kind from its name and queue/rotational. Hypervisors report
// their disks as rotational whatever backs them, so theirs (virtio, Xen, and
// the SCSI disks of QEMU, VMware, Hyper-V and Google) say "virtual disk".
std::optional<std::string> DiskKind(const fs::path& disk) {
  const std::string name = disk.filename().string();
  if (name.starts_with("nvme")) return "NVMe SSD";
  if (name.starts_with("vd") || disk.string().find("/virtio") != std::string::npos)
    return "virtual disk, virtio";
  if (name.starts_with("xvd")) return "virtual disk, Xen";
  if (name.starts_with("mmcblk")) return "flash card (MMC/SD)";
  if (name.starts_with("sd") || name.starts_with("hd")) {
    static const std::set<std::string> virtual_vendors = {"QEMU", "VMware", "VMware,", "Msft",
                                                          "Google"};
    if (virtual_vendors.contains(SysfsAttribute(disk / "device/vendor"))) return "virtual disk";
    const std::string rotational = SysfsAttribute(disk / "queue/rotational");
    if (rotational == "0") return "SATA/SAS SSD";
    if (rotational == "1") return "HDD";
  }
  return std::nullopt;  // loop, rbd, nbd, zram...: nothing a submitter would name
}

// The disks under a block device: a partition's disk, and through `slaves`
// those under device-mapper (LVM, dm-crypt) and md RAID. False when one of
// them is of no kind DiskKind knows.
bool CollectDisks(fs::path dev, int depth, Groups& disks) {
  std::error_code ec;
  if (fs::exists(dev / "partition", ec)) dev = dev.parent_path();
  const std::vector<fs::path> slaves = SortedEntries(dev / "slaves");
  if (!slaves.empty() && depth < 8) {
    for (const fs::path& s : slaves) {
      const fs::path resolved = fs::canonical(s, ec);
      if (ec || !CollectDisks(resolved, depth + 1, disks)) return false;
    }
    return true;
  }
  const std::optional<std::string> kind = DiskKind(dev);
  if (!kind.has_value()) return false;
  disks.Add(*kind, SysfsAttribute(dev / "device/model"), dev.filename().string());
  return true;
}

std::optional<std::string> BlockDeviceType(unsigned major, unsigned minor, const fs::path& sys) {
  std::error_code ec;
  const fs::path dev = fs::canonical(sys / "dev/block" / fmt::format("{}:{}", major, minor), ec);
  if (ec) return std::nullopt;
  Groups disks;
  if (!CollectDisks(dev, 0, disks) || disks.empty()) return std::nullopt;
  std::string out = disks.Join(" + ");
  // md RAID says how the disks are combined.
  if (const std::string level = SysfsAttribute(dev / "md/level"); !level.empty())
    out += fmt::format(" in {} {}", level, dev.filename().string());
  return out;
}

// Mb/s as the kernel reports it; "" when unknown (-1, or unreadable when down).
std::string LinkSpeed(const std::string& mbps_text) {
  long long mbps = 0;
  const char* end = mbps_text.data() + mbps_text.size();
  if (std::from_chars(mbps_text.data(), end, mbps).ptr != end || mbps <= 0) return "";
  if (mbps % 1000 == 0) return fmt::format(" {} Gb/s", mbps / 1000);
  if (mbps > 1000) return fmt::format(" {:g} Gb/s", mbps / 1000.0);
  return fmt::format(" {} Mb/s", mbps);
}

}  // namespace

std::optional<std::string> StorageTypeOfDevice(unsigned major, unsigned minor,
                                               const SysPaths& paths) {
  const std::optional<Mount> mount = FindMount(major, minor, paths.mountinfo);
  if (mount.has_value()) {
    if (std::optional<std::string> kind = FileSystemKind(mount->fstype)) return kind;
  }
  if (std::optional<std::string> type = BlockDeviceType(major, minor, paths.sys)) return type;
  // Btrfs and some others report an anonymous device; their mount names the
  // real one.
  struct stat st {};
  if (mount.has_value() && mount->source.starts_with("/dev/") &&
      stat(mount->source.c_str(), &st) == 0 && S_ISBLK(st.st_mode) &&
      (::major(st.st_rdev) != major || ::minor(st.st_rdev) != minor))
    return BlockDeviceType(::major(st.st_rdev), ::minor(st.st_rdev), paths.sys);
  return std::nullopt;
}

std::optional<std::string> StorageType(const fs::path& folder, const SysPaths& paths) {
  std::error_code ec;
  fs::path p = fs::absolute(folder, ec);
  while (!fs::exists(p, ec) && p.has_parent_path() && p != p.parent_path()) p = p.parent_path();
  struct stat st {};
  if (stat(p.c_str(), &st) != 0) return std::nullopt;
  return StorageTypeOfDevice(::major(st.st_dev), ::minor(st.st_dev), paths);
}

std::optional<std::string> HostNetworking(const SysPaths& paths) {
  Groups links;
  for (const fs::path& iface : SortedEntries(paths.sys / "class/net")) {
    const std::string name = iface.filename().string();
    // Software interfaces (lo, bridges, veth, tunnels) have no device.
    std::error_code ec;
    if (name == "lo" || !fs::exists(iface / "device", ec)) continue;
    const std::string type = SysfsAttribute(iface / "type");  // ARPHRD_*: 1 Ethernet, 32 InfiniBand
    const std::string kind = type == "1"    ? "Ethernet"
                             : type == "32" ? "InfiniBand"
                                            : fmt::format("network (type {})", type);
    const std::string driver = fs::read_symlink(iface / "device/driver", ec).filename().string();
    links.Add(kind + LinkSpeed(SysfsAttribute(iface / "speed")), driver, name);
  }
  // RDMA ports: InfiniBand without IPoIB has no network interface at all.
  for (const fs::path& hca : SortedEntries(paths.sys / "class/infiniband")) {
    for (const fs::path& port : SortedEntries(hca / "ports")) {
      const std::string layer = SysfsAttribute(port / "link_layer");
      const std::string rate = SysfsAttribute(port / "rate");
      const std::string kind = layer == "Ethernet" ? "RoCE" : layer.empty() ? "RDMA" : layer;
      links.Add(rate.empty() ? kind : kind + " " + rate, "",
                fmt::format("{} port {}", hca.filename().string(), port.filename().string()));
    }
  }
  if (links.empty()) return std::nullopt;
  return links.Join("; ");
}

}  // namespace mlperf::runtime
