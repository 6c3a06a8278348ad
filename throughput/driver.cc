#include "throughput/driver.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <set>
#include <string>

#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "base/exit_codes.h"
#include "base/files.h"
#include "base/output.h"
#include "base/version.h"
#include "fmt/format.h"
#include "reference/dist/mpi_communicator.h"
#include "reference/kernels/dispatch.h"
#include "runtime/collective_bench.h"
#include "runtime/interrupt.h"
#include "runtime/process_setup.h"
#include "runtime/system_info.h"
#include "throughput/config_run.h"
#include "throughput/outputs.h"

extern char** environ;

namespace mlperf::throughput {
namespace {

namespace fs = std::filesystem;

void Say(const std::string& line) { std::fprintf(stderr, "run_benchmark: %s\n", line.c_str()); }

std::string ConfigName(const Config& c) {
  return fmt::format("n={} b={} {}", c.devices, c.batch, c.dtype);
}

// What one process of an n-process configuration gets on this machine.
benchmarks::ProcessShare ShareOf(int processes, bool gpu) {
  benchmarks::ProcessShare share = runtime::ShareOfThisMachine();
  if (gpu) return share;  // one process per GPU; cores go to its loader
  share.cores = std::max(1, share.cores / processes);
  share.memory_bytes /= processes;
  return share;
}

// The job's frame: what it measures, on what, by what.
Job NewJob(const BenchOptions& options, const benchmarks::RunPlan& plan) {
  Job job;
  job.options = options;
  job.model = plan.member_name;
  const auto now = std::chrono::system_clock::now();
  job.start_unix = std::chrono::duration<double>(now.time_since_epoch()).count();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &utc);
  job.date = date;
  std::string tool = base::VersionLine("run_benchmark");
  while (!tool.empty() && tool.back() == '\n') tool.pop_back();
  job.tool = tool;
  job.system = json::Value(json::Object{});
  absl::StatusOr<json::Value> system = json::Parse(runtime::SystemDescriptionJson(plan));
  if (system.ok() && system->is_object()) {
    for (const auto& [key, value] : system->as_object()) {
      if (key.starts_with("host_") || key.starts_with("accelerator") || key == "framework" ||
          key == "operating_system" || key == "other_software_stack")
        job.system.Set(key, value);
    }
  }
  job.machine = runtime::SystemSummary();
  if (const json::Value* gpu = job.system.Find("accelerator_model_name");
      options.gpu && gpu != nullptr && gpu->is_string() && !gpu->as_string().empty())
    job.machine = gpu->as_string();
  return job;
}

// Every configuration in measuring order: device counts, then batch sizes,
// then precisions (so that fp32 and its mixed-precision twins sit together).
std::vector<Config> PlanConfigs(const BenchOptions& o, const std::vector<int>& devices) {
  std::vector<Config> configs;
  for (int n : devices)
    for (int64_t b : o.batch_sizes)
      for (const std::string& d : o.dtypes) configs.push_back({n, b, d});
  return configs;
}

// Fills in the default batch (the recipe's for one process) and checks every
// configuration the way its workers will, so that a usage error costs no
// measurement. Returns the plan of the first configuration.
// `launched`: these processes were started by a launcher, which already
// shared the machine among them.
absl::StatusOr<benchmarks::RunPlan> Preflight(const benchmarks::Benchmark& benchmark,
                                              BenchOptions& o, const std::vector<int>& devices,
                                              bool launched, base::OutputGuard& guard) {
  const auto share = [&](int n) {
    return launched ? runtime::ShareOfThisMachine() : ShareOf(n, o.gpu);
  };
  if (o.data == DataMode::kData) {
    std::error_code ec;
    if (!fs::is_directory(o.data_dir, ec)) {
      return absl::InvalidArgumentError(
          fmt::format("--data={}: {}", o.data_dir, ec ? ec.message() : "no such folder"));
    }
  }
  if (o.batch_sizes.empty()) {
    absl::StatusOr<std::unique_ptr<benchmarks::BenchmarkSetup>> setup =
        ConfigureFor(benchmark, o, {devices.front(), 0, o.dtypes.front()}, devices.front(),
                     share(devices.front()));
    if (!setup.ok()) return setup.status();
    o.batch_sizes = {(*setup)->plan().batch_per_rank};
  }
  std::optional<benchmarks::RunPlan> first;
  for (const Config& c : PlanConfigs(o, devices)) {
    absl::StatusOr<std::unique_ptr<benchmarks::BenchmarkSetup>> setup =
        ConfigureFor(benchmark, o, c, c.devices, share(c.devices));
    if (!setup.ok()) {
      return absl::Status(
          setup.status().code(),
          fmt::format("{}: {}", ConfigName(c), std::string(setup.status().message())));
    }
    if (!first) first = (*setup)->plan();
  }
  if (absl::Status s = CheckOutputs(o, guard); !s.ok()) return s;
  return *first;
}

// Once, before any configuration: writes the generated data set
// (--generated) or prepares a raw one (--data) into the cache. Unlike a
// closed run, a throughput run may read a subset, so the counts are not checked.
absl::Status PrepareData(const benchmarks::Benchmark& benchmark, const BenchOptions& o,
                         int world_size, const benchmarks::ProcessShare& share) {
  absl::StatusOr<std::unique_ptr<benchmarks::BenchmarkSetup>> setup = ConfigureFor(
      benchmark, o, {world_size, o.batch_sizes.front(), o.dtypes.front()}, world_size, share);
  return setup.ok() ? benchmarks::PrepareDataOnce(**setup, Say) : setup.status();
}

// One finished configuration: progress line, reports rewritten.
absl::Status Record(Job& job, ConfigResult result) {
  const size_t i = job.results.size() + 1;
  if (result.ok) {
    const Spread s = result.ThroughputSpread();
    std::string line =
        fmt::format("[{}/{}] {}: {} samples/s (median of {}; {} to {})", i, job.planned.size(),
                    ConfigName(result.config), FormatRate(s.median), result.window_seconds.size(),
                    FormatRate(s.min), FormatRate(s.max));
    if (job.options.mode == Mode::kInfer) {
      const Latency l = SummarizeLatency(result.AllSteps());
      line += fmt::format(", latency p50 {:.2f} ms, p99 {:.2f} ms", l.p50 * 1e3, l.p99 * 1e3);
    }
    Say(line);
  } else {
    Say(fmt::format("[{}/{}] {}: failed: {}", i, job.planned.size(), ConfigName(result.config),
                    result.error));
  }
  job.results.push_back(std::move(result));
  return WriteOutputs(job);
}

// A report lost (a full disk, a closed stdout) is exit 2, as in every tool.
int Finish(const Job& job, absl::Status written) {
  if (written.ok()) written = base::WriteStdout(MarkdownReport(job));
  if (!written.ok()) {
    Say(std::string(written.message()));
    return kExitUsage;
  }
  if (job.interrupted) {
    Say(fmt::format("interrupted: {} of {} configurations measured and kept in the reports",
                    job.results.size(), job.planned.size()));
    return kExitFailed;
  }
  for (const ConfigResult& r : job.results) {
    if (!r.ok) return kExitFailed;
  }
  return kExitOk;
}

// The command line of one configuration's processes.
std::vector<std::string> WorkerCommand(const BenchOptions& o, const Config& c,
                                       const std::string& out) {
  std::vector<std::string> cmd;
  if (c.devices > 1) {
    const std::string launcher =
        o.launcher.empty() ? std::string(MLPERF_MPIEXEC) + " -np {n}" : o.launcher;
    for (absl::string_view part : absl::StrSplit(launcher, ' ', absl::SkipEmpty()))
      cmd.push_back(absl::StrReplaceAll(part, {{"{n}", std::to_string(c.devices)}}));
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  cmd.push_back(ec ? std::string("run_benchmark") : self.string());
  const std::vector<std::string> flags = {"--worker_out",  out,
                                          "--bench",       o.benchmark,
                                          "--mode",        ModeName(o.mode),
                                          "--devices",     std::to_string(c.devices),
                                          "--batch_sizes", std::to_string(c.batch),
                                          "--dtype",       c.dtype,
                                          "--warmup",      std::to_string(o.warmup),
                                          "--iters",       std::to_string(o.iters),
                                          "--repeats",     std::to_string(o.repeats),
                                          "--size",        o.size,
                                          "--device",      o.gpu ? "gpu" : "cpu",
                                          "--threads",     std::to_string(o.threads),
                                          "--cache_dir",   o.cache_dir};
  cmd.insert(cmd.end(), flags.begin(), flags.end());
  cmd.push_back("--collective_timeout=" + std::to_string(o.collective_timeout_s));
  cmd.push_back("--tensor_parallel=" + std::to_string(o.tensor_parallel));
  if (o.data == DataMode::kData) {
    cmd.push_back("--data");
    cmd.push_back(o.data_dir);
  } else if (o.data == DataMode::kGenerated) {
    cmd.push_back("--generated");
  }
  if (o.cuda_graph) cmd.push_back("--cuda_graph");
  return cmd;
}

// Runs the worker processes of one configuration and reads their result.
// Ctrl-C reaches them through the terminal; a SIGTERM to the driver alone is
// passed on.
ConfigResult Measure(const BenchOptions& o, const Config& c, const fs::path& scratch) {
  ConfigResult failed;
  failed.config = c;
  const fs::path out = scratch / fmt::format("n{}-b{}-{}.json", c.devices, c.batch, c.dtype);
  const std::vector<std::string> cmd = WorkerCommand(o, c, out.string());
  std::vector<char*> argv;
  for (const std::string& a : cmd) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // Open MPI: CPU processes may outnumber the cores (their threads are
  // fitted to their share); containers often run as root.
  std::vector<std::string> env_text;
  for (char** e = environ; *e != nullptr; ++e) env_text.emplace_back(*e);
  if (!o.gpu) env_text.push_back("OMPI_MCA_rmaps_base_oversubscribe=1");
  if (geteuid() == 0) {
    env_text.push_back("OMPI_ALLOW_RUN_AS_ROOT=1");
    env_text.push_back("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1");
  }
  std::vector<char*> envp;
  for (std::string& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);
  // The workers end with the driver, even when it is killed outright: the
  // child asks for SIGTERM at its parent's death before it executes.
  const pid_t driver = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    failed.error = fmt::format("cannot start {}: {}", cmd.front(), std::strerror(errno));
    return failed;
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != driver) _exit(127);
    // A worker started directly holds SIGTERM back until its clean-up handler
    // is in place (CleanUpOnTermination), so an early death of the driver
    // still removes what it wrote; mpirun takes signals as they come.
    if (c.devices == 1) {
      sigset_t term;
      sigemptyset(&term);
      sigaddset(&term, SIGTERM);
      sigprocmask(SIG_BLOCK, &term, nullptr);
    }
    execvpe(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  int status = 0;
  bool forwarded = false;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) break;
    if (runtime::InterruptSignal() != 0 && !forwarded) {
      kill(pid, SIGTERM);
      forwarded = true;
    }
  }
  absl::StatusOr<std::string> text = base::ReadSmallFile(out, 16 << 20);
  absl::StatusOr<json::Value> parsed =
      text.ok() ? json::Parse(*text) : absl::StatusOr<json::Value>(text.status());
  if (parsed.ok()) {
    absl::StatusOr<ConfigResult> result = ResultFromJson(*parsed);
    if (result.ok()) return *result;
    failed.error = std::string(result.status().message());
    return failed;
  }
  failed.error = WIFSIGNALED(status)
                     ? fmt::format("the processes were killed by signal {}", WTERMSIG(status))
                     : fmt::format("the processes exited with status {} without a result",
                                   WEXITSTATUS(status));
  return failed;
}

// A worker ended by a signal (its driver died, or passed on an interrupt)
// removes its unfinished result and, when it is the last, the driver's
// scratch folder: a killed driver leaves nothing behind. Only
// async-signal-safe calls in the handler, on paths prepared before.
char g_result[4096], g_result_tmp[4096], g_scratch[4096];

void RemoveResultAndExit(int signal) {
  unlink(g_result_tmp);
  unlink(g_result);
  rmdir(g_scratch);
  _exit(128 + signal);
}

void CleanUpOnTermination(const fs::path& result) {
  const std::string tmp = fmt::format("{}.tmp.{}", result.string(), getpid());
  const std::string scratch = result.parent_path().string();
  if (tmp.size() >= sizeof g_result_tmp || scratch.size() >= sizeof g_scratch) return;
  std::memcpy(g_result, result.c_str(), result.string().size() + 1);
  std::memcpy(g_result_tmp, tmp.c_str(), tmp.size() + 1);
  std::memcpy(g_scratch, scratch.c_str(), scratch.size() + 1);
  struct sigaction action {};
  action.sa_handler = RemoveResultAndExit;
  sigemptyset(&action.sa_mask);
  for (int s : {SIGTERM, SIGHUP, SIGINT}) sigaction(s, &action, nullptr);
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigprocmask(SIG_UNBLOCK, &term, nullptr);  // held back by the driver until now
}

}  // namespace

int RunDriver(const benchmarks::Benchmark& benchmark, const BenchOptions& options) {
  BenchOptions o = options;
  if (o.gpu && !ops::CudaAvailable()) {
    Say("--device gpu: no CUDA device is visible (or this build has no CUDA path)");
    return kExitUsage;
  }
  base::OutputGuard guard;
  absl::StatusOr<benchmarks::RunPlan> plan =
      Preflight(benchmark, o, o.devices, /*launched=*/false, guard);
  if (!plan.ok()) {
    Say(std::string(plan.status().message()));
    return kExitUsage;
  }
  if (o.data != DataMode::kSynthetic) {
    if (absl::Status s = PrepareData(benchmark, o, 1, ShareOf(1, o.gpu)); !s.ok()) {
      Say(std::string(s.message()));
      return kExitUsage;
    }
  }
  Job job = NewJob(o, *plan);
  job.planned = PlanConfigs(o, o.devices);
  if (absl::Status s = WriteOutputs(job); !s.ok()) {
    Say(std::string(s.message()));
    return kExitUsage;
  }
  std::error_code ec;
  const fs::path scratch = fs::temp_directory_path(ec) / fmt::format("run_benchmark-{}", getpid());
  fs::create_directories(scratch, ec);
  if (ec) {
    Say(fmt::format("{}: {}", scratch.string(), ec.message()));
    return kExitFailed;
  }
  runtime::InstallInterruptHandlers();
  Say(fmt::format("{} configuration(s) of {} {} ({}) on {}", job.planned.size(), o.benchmark,
                  ModeName(o.mode), job.model, job.machine));
  absl::Status written;
  for (const Config& c : job.planned) {
    if (runtime::InterruptSignal() != 0) {  // arrived while the last reports were written
      job.interrupted = true;
      break;
    }
    Say(fmt::format("[{}/{}] {}: {} warm-up + {} x {} steps ...", job.results.size() + 1,
                    job.planned.size(), ConfigName(c), o.warmup, o.repeats, o.iters));
    ConfigResult result = Measure(o, c, scratch);
    if (runtime::InterruptSignal() != 0) {
      job.interrupted = true;
      break;
    }
    written = Record(job, std::move(result));
    if (!written.ok()) break;
  }
  if (job.interrupted) written = WriteOutputs(job);
  fs::remove_all(scratch, ec);
  return Finish(job, written);
}

int RunLaunched(const benchmarks::Benchmark& benchmark, const BenchOptions& options,
                const dist::LaunchEnv& launch) {
  if (!options.worker_out.empty()) CleanUpOnTermination(options.worker_out);
  absl::StatusOr<std::unique_ptr<runtime::ProcessComms>> comms =
      runtime::MakeProcessComms(launch, options.gpu);
  if (!comms.ok()) {
    Say(std::string(comms.status().message()));
    return kExitUsage;
  }
  // A lost peer ends the configuration instead of hanging it.
  if (absl::Status s = runtime::WatchCollectives(
          **comms, std::chrono::seconds(options.collective_timeout_s), "run_benchmark");
      !s.ok()) {
    Say(std::string(s.message()));
    return kExitFailed;
  }
  const runtime::RunComms view = (*comms)->view();
  const int world = view.control->world_size();
  const bool rank0 = view.control->rank() == 0;
  const benchmarks::ProcessShare share = runtime::ShareOfThisMachine();
  const std::vector<std::string> hosts = runtime::NodesOfRanks(*view.control);
  const auto nodes_of = [&](int n) {
    return static_cast<int>(std::set<std::string>(hosts.begin(), hosts.begin() + n).size());
  };
  BenchOptions o = options;
  if (!o.worker_out.empty()) {
    // One configuration for the driver.
    const Config c{world, o.batch_sizes.front(), o.dtypes.front(), nodes_of(world)};
    ConfigResult result = RunConfig(benchmark, o, c, view, share);
    if (!result.ok && rank0) Say(fmt::format("{}: {}", ConfigName(c), result.error));
    if (rank0) {
      absl::Status s = base::WriteFileAtomically(o.worker_out, json::Dump(ToJson(result)) + "\n");
      if (!s.ok()) {
        Say(std::string(s.message()));
        return kExitFailed;
      }
    }
    return result.ok ? kExitOk : kExitFailed;
  }
  // Launched by the user: these processes are the devices. On the CPU a
  // count below theirs measures the first n of them (the launcher's order:
  // node by node under Slurm's block distribution or --map-by ppr:N:node),
  // so one job across nodes gives the weak scaling per node count.
  if (o.devices == std::vector<int>{1}) o.devices = {world};
  for (const int n : o.devices) {
    if (n == world || (n < world && !o.gpu)) continue;
    if (rank0) {
      Say(o.gpu ? fmt::format("-n {}: the launcher started {} processes; on GPUs under a "
                              "launcher the processes are the devices (give -n {} or start "
                              "run_benchmark alone)",
                              absl::StrJoin(o.devices, ","), world, world)
                : fmt::format("-n {}: the launcher started {} processes; give counts up to {} "
                              "(each measures the first n processes)",
                              absl::StrJoin(o.devices, ","), world, world));
    }
    return kExitUsage;
  }
  // Only rank 0 writes the reports: the others neither claim nor check
  // them (a second claim of the same file would be refused), and all agree.
  if (!rank0) {
    o.json_path.clear();
    o.dllogger_path.clear();
    o.markdown_path.clear();
    o.plot_dir.clear();
  }
  base::OutputGuard guard;
  absl::StatusOr<benchmarks::RunPlan> plan =
      Preflight(benchmark, o, o.devices, /*launched=*/true, guard);
  float refused = plan.ok() ? 0.0f : 1.0f;
  view.control->AllReduceSum(&refused, 1);
  if (refused != 0.0f) {
    if (!plan.ok()) Say(std::string(plan.status().message()));
    return kExitUsage;
  }
  if (o.data != DataMode::kSynthetic) {
    absl::Status s;
    if (rank0) {
      s = PrepareData(benchmark, o, world, share);
      if (!s.ok()) Say(std::string(s.message()));
    }
    float failed = s.ok() ? 0.0f : 1.0f;
    view.control->Broadcast(&failed, 1, 0);
    if (failed != 0.0f) return kExitUsage;
  }
  Job job = NewJob(o, *plan);
  job.planned = PlanConfigs(o, o.devices);
  absl::Status written;
  for (Config c : job.planned) {
    c.nodes = nodes_of(c.devices);
    ConfigResult result;
    if (c.devices == world) {
      result = RunConfig(benchmark, o, c, view, share);
    } else {
      // The first n ranks measure on a communicator of their own; the others
      // wait for them.
      const std::unique_ptr<dist::Communicator> part =
          dist::MakeMpiSubCommunicator(view.control->rank() < c.devices);
      if (part != nullptr) {
        runtime::RunComms members = view;
        members.control = part.get();
        result = RunConfig(benchmark, o, c, members, share);
      }
      view.control->Barrier();
    }
    if (rank0 && written.ok()) written = Record(job, std::move(result));
  }
  return rank0 ? Finish(job, written) : kExitOk;
}

}  // namespace mlperf::throughput
