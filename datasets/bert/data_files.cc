#include "datasets/bert/data_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/parallel_for.h"
#include "fmt/format.h"

namespace mlperf::datasets::bert {
namespace {

// stat, not open: opening a FIFO for reading would block until a writer came.
absl::Status CheckRegularFile(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(fmt::format("{}: not a regular file", path));
  }
  return absl::OkStatus();
}

bool StartsWith(const std::string& s, std::string_view prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}
bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Reads and parses record 0 of `path`.
absl::Status CheckFirstRecord(const std::string& path, const TfRecordLocation& first,
                              const PretrainingShape& shape) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  }
  std::string data;
  absl::Status s = ReadTfRecordAt(fd, path, first, &data);
  ::close(fd);
  if (!s.ok()) return s;
  return ParsePretrainingExample(data, shape, fmt::format("{}:{}", path, first.offset)).status();
}

}  // namespace

absl::StatusOr<std::vector<TfRecordLocation>> IndexBertFile(const std::string& path) {
  if (absl::Status s = CheckRegularFile(path); !s.ok()) return s;
  absl::StatusOr<std::vector<TfRecordLocation>> records = IndexTfRecordFile(path, false);
  if (!records.ok()) return records.status();
  if (records->empty())
    return absl::DataLossError(fmt::format("{}: no records (empty file)", path));
  return records;
}

absl::StatusOr<BertFiles> ListBertData(const std::string& dir) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return absl::NotFoundError(fmt::format("{}: cannot list: {}", dir, ec.message()));
  BertFiles files;
  std::vector<std::string> eval_any;
  std::string eval_10k;
  for (const std::filesystem::directory_entry& entry : it) {
    const std::string name = entry.path().filename().string();
    if (EndsWith(name, ".tmp")) continue;
    const bool train = StartsWith(name, "part-"), eval = StartsWith(name, "eval");
    if (!train && !eval) continue;
    if (absl::Status s = CheckRegularFile(entry.path().string()); !s.ok()) return s;
    if (train) files.train.push_back(entry.path().string());
    if (eval) eval_any.push_back(entry.path().string());
    if (name == "eval_10k") eval_10k = entry.path().string();
  }
  if (files.train.empty()) {
    return absl::NotFoundError(fmt::format("{}: no training shards (part-*)", dir));
  }
  if (eval_any.empty()) {
    return absl::NotFoundError(fmt::format("{}: no evaluation file (eval_10k or eval*)", dir));
  }
  std::sort(files.train.begin(), files.train.end());
  std::sort(eval_any.begin(), eval_any.end());
  files.eval = eval_10k.empty() ? eval_any : std::vector<std::string>{eval_10k};
  return files;
}

absl::Status CheckBertData(const BertFiles& files, PretrainingShape shape,
                           int64_t expected_eval_samples, int64_t* train_samples,
                           int64_t* eval_samples) {
  std::vector<std::string> all = files.train;
  all.insert(all.end(), files.eval.begin(), files.eval.end());
  std::vector<absl::Status> errors(all.size());
  std::vector<int64_t> counts(all.size());
  base::ParallelFor(all.size(), 0, [&](size_t i) {
    absl::StatusOr<std::vector<TfRecordLocation>> records = IndexBertFile(all[i]);
    if (!records.ok()) {
      errors[i] = records.status();
      return;
    }
    counts[i] = static_cast<int64_t>(records->size());
    errors[i] = CheckFirstRecord(all[i], records->front(), shape);
  });
  if (files.train.empty()) return absl::NotFoundError("BERT data: no training files");
  if (files.eval.empty()) return absl::NotFoundError("BERT data: no evaluation files");
  for (const absl::Status& e : errors) {
    if (!e.ok()) return e;  // the first bad file in listing order
  }
  int64_t train = 0, eval = 0;
  for (size_t i = 0; i < all.size(); ++i) (i < files.train.size() ? train : eval) += counts[i];
  if (expected_eval_samples > 0 && eval != expected_eval_samples) {
    return absl::DataLossError(fmt::format("{}: {} evaluation samples, expected {}",
                                           files.eval.front(), eval, expected_eval_samples));
  }
  if (train_samples != nullptr) *train_samples = train;
  if (eval_samples != nullptr) *eval_samples = eval;
  return absl::OkStatus();
}

}  // namespace mlperf::datasets::bert
