// Seconds per training step of a small Llama on the CPU in fp32 (forward
// with the mean next-token cross-entropy, then backward: Decoder::
// ForwardTrain and Decoder::Backward; the optimizer is not timed), or with
// --lora_rank its LoRA fine-tuning step (adapters trained, base frozen), ours
// against transformers' LlamaForCausalLM (with peft's LoRA; bench/llm/llama_torch_bench.py
// under /usr/bin/python3, OMP_WAIT_POLICY=passive as for BERT's peer) on the
// same tokens, sizes and threads, in the same run. Threads: OMP_NUM_THREADS,
// else all cores. Exit 0, 1 when the peer fails, 2 on a usage error.
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "base/exit_codes.h"
#include "base/flags.h"
#include "base/version.h"
#include "fmt/format.h"
#include "reference/io/safetensors.h"
#include "reference/models/decoder.h"

ABSL_FLAG(int64_t, layers, 4, "decoder layers");
ABSL_FLAG(int64_t, hidden, 256, "hidden width");
ABSL_FLAG(int64_t, heads, 8, "query heads (divide --hidden)");
ABSL_FLAG(int64_t, kv_heads, 2, "key/value heads (divide --heads)");
ABSL_FLAG(int64_t, intermediate, 704, "SwiGLU width");
ABSL_FLAG(int64_t, vocab, 8000, "vocabulary");
ABSL_FLAG(int64_t, seq, 256, "tokens per sample");
ABSL_FLAG(int64_t, batch, 4, "samples per step");
ABSL_FLAG(int64_t, lora_rank, 0,
          "> 0: LoRA of this rank (alpha twice it) on q, k, v and o (one adapter each, as the "
          "peer's peft), the base frozen in fp32 on both sides");
ABSL_FLAG(int64_t, attention_block, 0,
          "ours: attention in blocks of this many queries, no [seq, seq] probabilities kept "
          "(0: kept, as the eager peer does)");
ABSL_FLAG(int, warmup, 2, "untimed steps first, on each side");
ABSL_FLAG(int, steps, 5, "timed steps on each side (the median is reported)");
ABSL_FLAG(bool, torch, true, "run the PyTorch peer (--notorch: ours alone)");

namespace mlperf::models {
namespace {

constexpr std::string_view kFlags[] = {
    "layers", "hidden", "heads", "kv_heads", "intermediate",    "vocab",    "seq",
    "batch",  "warmup", "steps", "torch",    "attention_block", "lora_rank"};

constexpr char kUsage[] =
    "Times one training step of a small Llama (forward with the loss, backward) on the CPU in\n"
    "fp32, ours against transformers' LlamaForCausalLM on the same tokens, sizes and threads.\n"
    "Usage: llama_train_bench [flags]   (threads: OMP_NUM_THREADS, else all cores)\n\nFlags:\n";

struct Stats {
  double median = 0, min = 0, max = 0;
};

Stats Summarise(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return {n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v.front(), v.back()};
}

// Times our steps and writes the batch for the peer; the model is gone when
// this returns.
Stats TimeOurs(const DecoderConfig& config, int64_t batch_size, int warmup, int steps,
               const std::string& batch_path) {
  Decoder model(config, batch_size, /*seed=*/1);
  const OwnedBatch owned = model.SyntheticBatch();
  const std::vector<io::NamedTensor> tensors = {{"tokens", owned.batch.inputs[0]},
                                                {"labels", owned.batch.inputs[1]}};
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

bool TimeTorch(const DecoderConfig& c, int warmup, int steps, int threads,
               const std::string& batch_path, Stats* out) {
  const std::string command = fmt::format(
      "OMP_WAIT_POLICY=passive /usr/bin/python3 {}/bench/llm/llama_torch_bench.py {} {} {} {} {} "
      "{} {} {} {} {} {} {}",
      MLPERF_SOURCE_DIR, batch_path, threads, warmup, steps, c.vocab_size, c.hidden, c.layers,
      c.heads, c.kv_heads, c.intermediate, c.seq_len, c.lora.rank);
  std::fflush(stdout);
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return false;
  const bool read = std::fscanf(pipe, "%lf %lf %lf", &out->median, &out->min, &out->max) == 3;
  return pclose(pipe) == 0 && read;
}

int Run() {
  DecoderConfig config{.vocab_size = absl::GetFlag(FLAGS_vocab),
                       .hidden = absl::GetFlag(FLAGS_hidden),
                       .layers = absl::GetFlag(FLAGS_layers),
                       .heads = absl::GetFlag(FLAGS_heads),
                       .kv_heads = absl::GetFlag(FLAGS_kv_heads),
                       .intermediate = absl::GetFlag(FLAGS_intermediate),
                       .seq_len = absl::GetFlag(FLAGS_seq),
                       .attention_block = absl::GetFlag(FLAGS_attention_block)};
  const int64_t lora_rank = absl::GetFlag(FLAGS_lora_rank);
  if (lora_rank > 0) {
    config.lora = {.rank = lora_rank, .alpha = 2.0 * static_cast<double>(lora_rank)};
    config.lora_fused_qkv = false;
    config.frozen_dtype = core::DType::kF32;
  }
  const int64_t batch = absl::GetFlag(FLAGS_batch);
  const int warmup = absl::GetFlag(FLAGS_warmup), steps = absl::GetFlag(FLAGS_steps);
  if (config.vocab_size <= 1 || config.hidden <= 0 || config.layers < 0 || config.heads <= 0 ||
      config.kv_heads <= 0 || config.hidden % config.heads != 0 ||
      config.heads % config.kv_heads != 0 || (config.hidden / config.heads) % 2 != 0 ||
      config.intermediate <= 0 || config.seq_len <= 0 || batch <= 0 || warmup < 0 || steps <= 0 ||
      config.attention_block < 0 || lora_rank < 0) {
    std::fprintf(stderr, "llama_train_bench: a flag is out of range (see --help)\n");
    return kExitUsage;
  }
  const int threads = omp_get_max_threads();
  std::printf(
      "Llama training step (forward with the loss, backward), fp32, CPU, %d threads\n"
      "  layers %ld, hidden %ld, heads %ld, kv heads %ld, intermediate %ld, vocab %ld, seq %ld, "
      "batch %ld; %d warm-up steps, median of %d\n"
      "  ours: attention %s, activations arena %.1f MiB%s\n",
      threads, config.layers, config.hidden, config.heads, config.kv_heads, config.intermediate,
      config.vocab_size, config.seq_len, batch, warmup, steps,
      config.attention_block > 0
          ? fmt::format("in blocks of {} queries", config.attention_block).c_str()
          : "with the probabilities kept",
      static_cast<double>(Decoder::Measure(config, batch, 1).activations) / (1 << 20),
      lora_rank > 0
          ? fmt::format("; LoRA rank {} on q, k, v and o, the base frozen in fp32", lora_rank)
                .c_str()
          : "");
  const std::string batch_path = (std::filesystem::temp_directory_path() /
                                  fmt::format("llama_train_bench_{}.safetensors", ::getpid()))
                                     .string();
  const Stats ours = TimeOurs(config, batch, warmup, steps, batch_path);
  Stats torch;
  const bool peer = absl::GetFlag(FLAGS_torch);
  const bool peer_ok = peer && TimeTorch(config, warmup, steps, threads, batch_path, &torch);
  std::remove(batch_path.c_str());
  const double tokens = static_cast<double>(batch * config.seq_len);
  std::printf("  %-10s %8s %8s %8s %10s\n", "", "median", "min", "max", "tokens/s");
  std::printf("  %-10s %8.3f %8.3f %8.3f %10.0f\n", "ours", ours.median, ours.min, ours.max,
              tokens / ours.median);
  if (!peer) return kExitOk;
  if (!peer_ok) {
    std::fprintf(stderr, "llama_train_bench: the PyTorch peer failed\n");
    return kExitFailed;
  }
  std::printf("  %-10s %8.3f %8.3f %8.3f %10.0f\n", "PyTorch", torch.median, torch.min, torch.max,
              tokens / torch.median);
  std::printf("ratio: PyTorch time / ours = %.2fx\n", torch.median / ours.median);
  return kExitOk;
}

}  // namespace
}  // namespace mlperf::models

int main(int argc, char** argv) {
  using namespace mlperf;
  absl::StatusOr<base::ParsedArgs> args =
      base::ParseFlags(argc, argv, models::kFlags, /*allow_positional=*/false);
  if (!args.ok()) {
    std::fprintf(stderr, "llama_train_bench: %s\n", std::string(args.status().message()).c_str());
    return kExitUsage;
  }
  if (args->help) {
    std::printf("%s%s", models::kUsage, base::FlagsHelp(models::kFlags).c_str());
    return kExitOk;
  }
  if (args->version) {
    std::fputs(base::VersionLine("llama_train_bench").c_str(), stdout);
    return kExitOk;
  }
  return models::Run();
}
