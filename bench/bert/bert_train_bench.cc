// Seconds per BERT training step on the CPU in fp32 or bf16 (forward with
// the losses, then backward: Bert::ForwardTrain and Bert::Backward; the
// optimizer is not timed), ours against transformers' BertForPreTraining
// (bench/bert/bert_torch_bench.py under /usr/bin/python3) on the same batch,
// the same sizes and as many threads, in the same run. Dropout is on in both,
// as in training. Under --precision=bf16 ours trains in bf16 compute
// precision and the peer's forward runs under torch.autocast (bf16 on the
// CPU). The peer runs with OMP_WAIT_POLICY=passive: PyTorch runs
// its GEMMs on OpenBLAS's own threads, which its OpenMP team, spinning
// between ops, starves on few cores (BERT-Large on 2 cores: about 7.5 s per
// step passive, 13 s by default). Defaults: BERT-Large at
// sequence 128, batch 4, 20 masked-LM predictions per sample; smaller
// members for quick checks, e.g.
//
//   bert_train_bench --layers=2 --hidden=128 --heads=2 --intermediate=512 --vocab=1000
//
// Threads: OMP_NUM_THREADS, else all cores. Exit 0, 1 when the peer fails,
// 2 on a usage error.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "base/exit_codes.h"
#include "base/flags.h"
#include "base/version.h"
#include "fmt/format.h"
#include "reference/io/safetensors.h"
#include "reference/kernels/precision.h"
#include "reference/models/bert.h"

ABSL_FLAG(int64_t, layers, 24, "encoder layers");
ABSL_FLAG(int64_t, hidden, 1024, "hidden width");
ABSL_FLAG(int64_t, heads, 16, "attention heads (divide --hidden)");
ABSL_FLAG(int64_t, intermediate, 4096, "feed-forward width");
ABSL_FLAG(int64_t, vocab, 30522, "word-piece vocabulary");
ABSL_FLAG(int64_t, seq, 128, "tokens per sample");
ABSL_FLAG(int64_t, batch, 4, "samples per step");
ABSL_FLAG(int64_t, predictions, 20, "masked-LM predictions per sample");
ABSL_FLAG(double, dropout, 0.1, "hidden and attention-probability dropout, both sides");
ABSL_FLAG(int, warmup, 2, "untimed steps first, on each side");
ABSL_FLAG(int, steps, 5, "timed steps on each side (the median is reported)");
ABSL_FLAG(std::string, precision, "fp32",
          "fp32 or bf16: our compute precision; the peer's forward under torch.autocast in bf16");
ABSL_FLAG(bool, torch, true, "run the PyTorch peer (--notorch: ours alone, for profiling)");
ABSL_FLAG(std::string, torch_wait_policy, "passive",
          "OMP_WAIT_POLICY of the peer (empty: as ours); passive is its faster setting here");
ABSL_FLAG(std::string, torch_variants, "gathered,stock",
          "the peer's variants: gathered (masked-LM head on the masked rows: our work), stock "
          "(BertForPreTraining.forward: the head on every token)");

namespace mlperf::models {
namespace {

constexpr std::string_view kFlags[] = {
    "layers", "hidden",    "heads",       "intermediate",      "vocab",
    "seq",    "batch",     "predictions", "dropout",           "warmup",
    "steps",  "precision", "torch",       "torch_wait_policy", "torch_variants"};

constexpr char kUsage[] =
    "Times one BERT training step (forward with the losses, backward) on the CPU in fp32 or\n"
    "bf16, ours against transformers' BertForPreTraining on the same batch, sizes and threads.\n"
    "Usage: bert_train_bench [flags]   (threads: OMP_NUM_THREADS, else all cores)\n\nFlags:\n";

// Median, minimum and maximum seconds of the timed steps (the median of an
// even count is the mean of the middle two, as Python's statistics.median).
struct Stats {
  double median = 0, min = 0, max = 0;
};

Stats Summarise(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return {n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v.front(), v.back()};
}

// Times our steps on `batch` and writes that batch to `batch_path` for the
// peer. The model is gone when this returns, so both sides never hold their
// few GB at once.
Stats TimeOurs(const BertConfig& config, int64_t batch_size, int warmup, int steps,
               const std::string& batch_path, core::DType precision) {
  const ops::PrecisionScope scope(precision);
  Bert model(config, batch_size, /*seed=*/1);
  const OwnedBatch owned = model.SyntheticBatch();
  const char* names[kBertInputs] = {"input_ids",           "segment_ids",   "input_mask",
                                    "masked_lm_positions", "masked_lm_ids", "masked_lm_weights",
                                    "next_sentence_labels"};
  std::vector<io::NamedTensor> tensors;
  for (int i = 0; i < kBertInputs; ++i) tensors.push_back({names[i], owned.batch.inputs[i]});
  MLPERF_CHECK(io::SaveSafetensors(batch_path, tensors).ok());
  std::vector<double> seconds;
  for (int s = 0; s < warmup + steps; ++s) {
    const auto start = std::chrono::steady_clock::now();
    const float loss = model.ForwardTrain(owned.batch);
    model.Backward();
    const double sec =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("  ours %s %d: %.3f s  loss %.5f\n", s < warmup ? "warm-up" : "step", s, sec, loss);
    std::fflush(stdout);
    if (s >= warmup) seconds.push_back(sec);
  }
  return Summarise(seconds);
}

// The peer's statistics per variant; empty when it failed.
std::map<std::string, Stats> TimeTorch(const BertConfig& c, int warmup, int steps, int threads,
                                       const std::string& batch_path, const std::string& variants,
                                       const std::string& precision) {
  const std::string policy = absl::GetFlag(FLAGS_torch_wait_policy);
  const std::string command = fmt::format(
      "{}/usr/bin/python3 {}/bench/bert/bert_torch_bench.py {} {} {} {} {} {} {} {} {} {} {} {} {}",
      policy.empty() ? "" : fmt::format("OMP_WAIT_POLICY={} ", policy), MLPERF_SOURCE_DIR,
      batch_path, threads, warmup, steps, c.vocab_size, c.hidden, c.layers, c.heads, c.intermediate,
      c.max_positions, c.hidden_dropout, variants, precision);
  std::map<std::string, Stats> out;
  std::fflush(stdout);  // our lines before the peer's (its per-step lines go to stderr)
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return out;
  char name[64];
  Stats s;
  while (std::fscanf(pipe, "%63s %lf %lf %lf", name, &s.median, &s.min, &s.max) == 4) out[name] = s;
  if (pclose(pipe) != 0) out.clear();
  return out;
}

// Letters, digits and commas only: these flags go into the peer's command line.
bool ShellWord(const std::string& s) {
  return std::all_of(s.begin(), s.end(),
                     [](unsigned char c) { return std::isalnum(c) != 0 || c == ','; });
}

int Run() {
  const BertConfig config{.vocab_size = absl::GetFlag(FLAGS_vocab),
                          .hidden = absl::GetFlag(FLAGS_hidden),
                          .layers = absl::GetFlag(FLAGS_layers),
                          .heads = absl::GetFlag(FLAGS_heads),
                          .intermediate = absl::GetFlag(FLAGS_intermediate),
                          .max_positions = std::max<int64_t>(512, absl::GetFlag(FLAGS_seq)),
                          .seq_len = absl::GetFlag(FLAGS_seq),
                          .max_predictions = absl::GetFlag(FLAGS_predictions),
                          .hidden_dropout = static_cast<float>(absl::GetFlag(FLAGS_dropout)),
                          .attention_dropout = static_cast<float>(absl::GetFlag(FLAGS_dropout))};
  const int64_t batch = absl::GetFlag(FLAGS_batch);
  const int warmup = absl::GetFlag(FLAGS_warmup), steps = absl::GetFlag(FLAGS_steps);
  const std::string variants = absl::GetFlag(FLAGS_torch_variants);
  const std::string precision_name = absl::GetFlag(FLAGS_precision);
  const core::DType precision = precision_name == "bf16" ? core::DType::kBF16 : core::DType::kF32;
  if (config.vocab_size <= 0 || config.hidden <= 0 || config.layers < 0 || config.heads <= 0 ||
      config.hidden % config.heads != 0 || config.intermediate <= 0 || config.seq_len <= 0 ||
      config.max_predictions <= 0 || config.max_predictions > config.seq_len || batch <= 0 ||
      config.hidden_dropout < 0 || config.hidden_dropout >= 1 || warmup < 0 || steps <= 0 ||
      variants.empty() || !ShellWord(variants) ||
      (precision_name != "fp32" && precision_name != "bf16") ||
      !ShellWord(absl::GetFlag(FLAGS_torch_wait_policy))) {
    std::fprintf(stderr, "bert_train_bench: a flag is out of range (see --help)\n");
    return kExitUsage;
  }
  const int threads = omp_get_max_threads();
  std::printf(
      "BERT training step (forward with losses, backward), %s, CPU, %d threads\n"
      "  layers %ld, hidden %ld, heads %ld, intermediate %ld, vocab %ld, seq %ld, batch %ld, "
      "%ld predictions/sample, dropout %g; %d warm-up steps, median of %d\n",
      precision_name.c_str(), threads, config.layers, config.hidden, config.heads,
      config.intermediate, config.vocab_size, config.seq_len, batch, config.max_predictions,
      config.hidden_dropout, warmup, steps);
  if (absl::GetFlag(FLAGS_torch)) {
    const std::string policy = absl::GetFlag(FLAGS_torch_wait_policy);
    std::printf("  peer: transformers' BertForPreTraining, torch.set_num_threads(%d), %s\n",
                threads,
                policy.empty() ? "OMP_WAIT_POLICY as ours" : ("OMP_WAIT_POLICY=" + policy).c_str());
  }
  const std::string batch_path = (std::filesystem::temp_directory_path() /
                                  fmt::format("bert_train_bench_{}.safetensors", ::getpid()))
                                     .string();
  const Stats ours = TimeOurs(config, batch, warmup, steps, batch_path, precision);
  std::map<std::string, Stats> torch;
  if (absl::GetFlag(FLAGS_torch)) {
    torch = TimeTorch(config, warmup, steps, threads, batch_path, variants, precision_name);
  }
  std::remove(batch_path.c_str());
  auto row = [&](const char* name, const Stats& s) {
    std::printf("  %-44s %8.3f %8.3f %8.3f %8.2f", name, s.median, s.min, s.max, batch / s.median);
    if (&s != &ours) std::printf("  %6.2fx", s.median / ours.median);
    std::printf("\n");
  };
  std::printf("  %-44s %8s %8s %8s %8s  %7s\n", "", "median", "min", "max", "seq/s",
              "PyTorch/ours");
  row("ours", ours);
  if (!absl::GetFlag(FLAGS_torch)) return kExitOk;
  if (torch.empty()) {
    std::fprintf(stderr, "bert_train_bench: the PyTorch peer failed\n");
    return kExitFailed;
  }
  const std::map<std::string, std::string> labels = {
      {"gathered", "PyTorch, MLM head on masked rows (our work)"},
      {"stock", "PyTorch, stock forward (MLM head, all rows)"}};
  for (const auto& [name, s] : torch)
    row(labels.contains(name) ? labels.at(name).c_str() : name.c_str(), s);
  for (const auto& [name, s] : torch)
    std::printf("ratio (%s): PyTorch time / ours = %.2fx\n", name.c_str(), s.median / ours.median);
  return kExitOk;
}

}  // namespace
}  // namespace mlperf::models

int main(int argc, char** argv) {
  using namespace mlperf;
  absl::StatusOr<base::ParsedArgs> args =
      base::ParseFlags(argc, argv, models::kFlags, /*allow_positional=*/false);
  if (!args.ok()) {
    std::fprintf(stderr, "bert_train_bench: %s\n", std::string(args.status().message()).c_str());
    return kExitUsage;
  }
  if (args->help) {
    std::printf("%s%s", models::kUsage, base::FlagsHelp(models::kFlags).c_str());
    return kExitOk;
  }
  if (args->version) {
    std::fputs(base::VersionLine("bert_train_bench").c_str(), stdout);
    return kExitOk;
  }
  return models::Run();
}
