#include "runtime/system_info.h"

#include <mpi.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/base/config.h"
#include "base/json.h"
#include "fmt/format.h"
#include "reference/kernels/switches.h"
#include "runtime/host_devices.h"

#if defined(MLPERF_HAVE_CUDA)
#include <cuda_runtime_api.h>
#endif

extern "C" char* openblas_get_config(void);

namespace mlperf::runtime {
namespace {

struct CpuInfo {
  std::string model = "unknown";
  int sockets = 1;
  int physical_cores = 0;  // over all sockets
  int vcpus = 0;
  std::string frequency = "unknown";
};

std::string ValueAfterColon(const std::string& line) {
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return "";
  const size_t start = line.find_first_not_of(" \t", colon + 1);
  return start == std::string::npos ? "" : line.substr(start);
}

CpuInfo ReadCpuInfo() {
  CpuInfo c;
  std::ifstream in("/proc/cpuinfo");
  std::set<std::string> sockets;
  std::set<std::pair<std::string, std::string>> cores;  // (physical id, core id)
  std::string line, physical_id = "0", mhz;
  while (std::getline(in, line)) {
    if (line.starts_with("model name") && c.model == "unknown") c.model = ValueAfterColon(line);
    if (line.starts_with("processor")) ++c.vcpus;
    if (line.starts_with("physical id")) sockets.insert(physical_id = ValueAfterColon(line));
    if (line.starts_with("core id")) cores.insert({physical_id, ValueAfterColon(line)});
    if (line.starts_with("cpu MHz") && mhz.empty()) mhz = ValueAfterColon(line);
  }
  if (!sockets.empty()) c.sockets = static_cast<int>(sockets.size());
  c.physical_cores = cores.empty() ? c.vcpus : static_cast<int>(cores.size());
  // The nominal maximum when cpufreq exposes it; else the (rounded) current
  // clock, so that the description stays the same between invocations.
  const std::string max_khz = SysfsAttribute("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  if (!max_khz.empty()) {
    c.frequency = fmt::format("{} MHz", std::stoll(max_khz) / 1000);
  } else if (!mhz.empty()) {
    c.frequency = fmt::format("{:.0f} MHz", std::round(std::stod(mhz) / 100.0) * 100.0);
  }
  return c;
}

std::string Caches() {
  std::vector<std::string> parts;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = fmt::format("/sys/devices/system/cpu/cpu0/cache/index{}/", i);
    const std::string size = SysfsAttribute(dir + "size");
    if (size.empty()) break;
    const std::string type = SysfsAttribute(dir + "type");
    const char* suffix = type == "Data" ? "d" : type == "Instruction" ? "i" : "";
    parts.push_back(fmt::format("L{}{} {}", SysfsAttribute(dir + "level"), suffix, size));
  }
  if (parts.empty()) return "unknown";
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out + " (per core or shared, as the kernel reports)";
}

double MemoryGiB() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("MemTotal:")) return std::stod(ValueAfterColon(line)) / (1024.0 * 1024.0);
  }
  return 0;
}

std::string OperatingSystem() {
  std::ifstream in("/etc/os-release");
  std::string line, name = "Linux";
  while (std::getline(in, line)) {
    if (line.starts_with("PRETTY_NAME=")) {
      name = line.substr(12);
      if (name.size() >= 2 && name.front() == '"') name = name.substr(1, name.size() - 2);
    }
  }
  utsname u{};
  if (uname(&u) == 0) name += fmt::format(", kernel {}", u.release);
  return name;
}

// Of the file system that will hold the package (its nearest existing folder).
std::string StorageCapacity(const std::string& dir) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(dir, ec);
  while (!std::filesystem::exists(p, ec) && p.has_parent_path() && p != p.parent_path())
    p = p.parent_path();
  struct statvfs s {};
  if (statvfs(p.c_str(), &s) != 0) return "unknown";
  return fmt::format("{:.0f} GB", static_cast<double>(s.f_blocks) * s.f_frsize / 1e9);
}

std::string Compiler() {
#if defined(__clang__)
  return fmt::format("Clang {}.{}.{}", __clang_major__, __clang_minor__, __clang_patchlevel__);
#elif defined(__GNUC__)
  return fmt::format("GCC {}.{}.{}", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
#else
  return "unknown compiler";
#endif
}

std::string SoftwareStack() {
  std::string mpi;
#if defined(OMPI_MAJOR_VERSION)
  mpi = fmt::format("Open MPI {}.{}.{}", OMPI_MAJOR_VERSION, OMPI_MINOR_VERSION,
                    OMPI_RELEASE_VERSION);
#else
  mpi = fmt::format("MPI {}.{}", MPI_VERSION, MPI_SUBVERSION);
#endif
  std::string stack =
      fmt::format("{}, C++20; {}; OpenBLAS ({}); Abseil {}; fmt {}", Compiler(), mpi,
                  openblas_get_config(), ABSL_LTS_RELEASE_VERSION, FMT_VERSION);
#if defined(MLPERF_HAVE_CUDA)
  stack +=
      fmt::format("; built with CUDA {}.{}", CUDART_VERSION / 1000, (CUDART_VERSION % 1000) / 10);
#endif
  return stack;
}

struct Accelerators {
  std::string model = "N/A (CPU training)";
  std::string memory = "N/A";
  std::string frequency = "N/A";
  std::string host_interconnect = "N/A";
};

// With `probe`, what CUDA cannot tell about the GPUs asked for is unknown;
// without, it keeps the values run_closed has always written.
Accelerators QueryAccelerators(int gpus, bool probe = false) {
  Accelerators a;
  if (gpus <= 0) return a;
  a.model = probe ? kUnknown : "unknown GPU";
  if (probe) a.memory = a.frequency = a.host_interconnect = kUnknown;
#if defined(MLPERF_HAVE_CUDA)
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
    a.model = prop.name;
    a.memory = fmt::format("{:.0f} GB", static_cast<double>(prop.totalGlobalMem) / 1e9);
    int khz = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0) == cudaSuccess && khz > 0)
      a.frequency = fmt::format("{} MHz", khz / 1000);
    a.host_interconnect = "PCIe";
  }
#endif
  return a;
}

}  // namespace

std::string SystemSummary(int gpus) {
  const CpuInfo c = ReadCpuInfo();
  std::string summary =
      fmt::format("{}x {} ({} vCPUs), {:.1f} GiB", c.sockets, c.model, c.vcpus, MemoryGiB());
  if (gpus > 0) {
    const Accelerators a = QueryAccelerators(gpus);
    summary += fmt::format(", {}x {}{}", gpus, a.model, a.memory.empty() ? "" : " " + a.memory);
  }
  return summary;
}

SystemDescription DescribeSystem(const SystemRequest& r) {
  const CpuInfo cpu = ReadCpuInfo();
  const Accelerators acc = QueryAccelerators(r.gpus_per_node, r.probe_hardware);
  const int gpus = r.gpus_per_node;
  std::string storage_type = kUnknown;
  std::string networking = r.nodes > 1 ? "as provided by the MPI launcher" : "N/A (single node)";
  if (r.probe_hardware) {
    storage_type = StorageType(r.storage_folder).value_or(kUnknown);
    networking = HostNetworking().value_or(kUnknown);
  }
  // Every value is a string: the official checker joins some of them as
  // strings and crashes on numbers.
  SystemDescription d;
  d.fields = {
      {"submitter", r.submitter},
      {"division", r.division},
      {"status", r.status},
      {"system_name", r.system_name},
      {"number_of_nodes", std::to_string(r.nodes)},
      {"host_processors_per_node", std::to_string(cpu.sockets)},
      {"host_processor_model_name", cpu.model},
      {"host_processor_core_count", std::to_string(cpu.physical_cores / cpu.sockets)},
      {"host_processor_vcpu_count", std::to_string(cpu.vcpus)},
      {"host_processor_frequency", cpu.frequency},
      {"host_processor_caches", Caches()},
      {"host_processor_interconnect", "N/A"},
      {"host_memory_capacity", fmt::format("{:.0f} GB", MemoryGiB() * 1.073741824)},
      {"host_storage_type", storage_type},
      {"host_storage_capacity", StorageCapacity(r.storage_folder)},
      {"host_networking", networking},
      {"host_networking_topology", r.nodes > 1 ? kUnknown : "N/A"},
      {"host_memory_configuration", kUnknown},
      {"accelerators_per_node", std::to_string(gpus)},
      {"accelerator_model_name", acc.model},
      {"accelerator_host_interconnect", acc.host_interconnect},
      {"accelerator_frequency", acc.frequency},
      {"accelerator_on-chip_memories", gpus > 0 ? kUnknown : "N/A"},
      {"accelerator_memory_configuration", gpus > 0 ? kUnknown : "N/A"},
      {"accelerator_memory_capacity", acc.memory},
      {"accelerator_interconnect", gpus > 1 ? "NCCL over the available links" : "N/A"},
      {"accelerator_interconnect_topology", gpus > 1 ? kUnknown : "N/A"},
      {"cooling", kUnknown},
      {"hw_notes", r.hw_notes},
      {"framework", "mlperf-suite run_closed 0.1.0 (C++ reference implementation)"},
      {"other_software_stack", SoftwareStack()},
      {"operating_system", OperatingSystem()},
      {"sw_notes", r.sw_notes},
  };
  for (const auto& [field, value] : d.fields)
    if (value == kUnknown) d.undetected.push_back(field);
  return d;
}

std::string SystemDescriptionText(const SystemDescription& description) {
  const auto& fields = description.fields;
  std::string out = "{\n";
  for (size_t i = 0; i < fields.size(); ++i) {
    out += "  ";
    json::DumpStringTo(fields[i].first, out);
    out += ": ";
    json::DumpStringTo(fields[i].second, out);
    out += i + 1 < fields.size() ? ",\n" : "\n";
  }
  return out + "}\n";
}

std::string SystemDescriptionJson(const benchmarks::RunPlan& plan) {
  const benchmarks::RunnerOptions& o = plan.options;
  // One system serves every benchmark of a demonstration package, so its
  // notes name none; the package README says what each one trained on.
  const std::string demo_note =
      "DEMONSTRATION on generated data: small members of the benchmarks' model families on "
      "generated data sets (see the package README), not a real MLPerf result";
  const std::string processes = o.gpus > 0
                                    ? fmt::format("{} process(es) per node, one per GPU", o.gpus)
                                    : fmt::format("{} CPU process(es) in all", plan.world_size);
  // How the kernels were chosen (reference/kernels/switches.h).
  const std::string switches = ops::SwitchNotes();
  const std::string precision =
      plan.fp8
          ? std::string(
                "convolutions and linear layers in bf16, the transformer blocks' "
                "linear layers in FP8 (E4M3/E5M2, delayed scaling), fp32 master "
                "weights")
          : fmt::format("convolutions and linear layers in {}{}, fp32 master weights", o.precision,
                        plan.precision == core::DType::kF16 ? " with dynamic loss scaling" : "");
  return SystemDescriptionText(DescribeSystem({
      .submitter = o.submitter,
      .system_name = plan.demo
                         ? fmt::format("{} (demonstration on generated data)", plan.system_name)
                         : plan.system_name,
      .nodes = o.nodes,
      .gpus_per_node = o.gpus,
      .storage_folder = o.out_dir,
      .hw_notes = plan.demo ? demo_note : processes,
      .sw_notes = (plan.demo ? demo_note + "; " + processes : processes) + "; " + precision +
                  "; kernel switches: " + (switches.empty() ? "defaults" : switches),
  }));
}

}  // namespace mlperf::runtime
