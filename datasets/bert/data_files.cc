#include "datasets/bert/data_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/parallel_for.h"
#include "datasets/index_cache.h"
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
  for (std::filesystem::directory_iterator end; it != end; it.increment(ec)) {
    const std::filesystem::directory_entry& entry = *it;
    const std::string name = entry.path().filename().string();
    if (EndsWith(name, ".tmp")) continue;
    const bool train = StartsWith(name, "part-"), eval = StartsWith(name, "eval");
    if (!train && !eval) continue;
    if (absl::Status s = CheckRegularFile(entry.path().string()); !s.ok()) return s;
    if (train) files.train.push_back(entry.path().string());
    if (eval) eval_any.push_back(entry.path().string());
    if (name == "eval_10k") eval_10k = entry.path().string();
  }
  if (ec) return absl::InternalError(fmt::format("{}: listing failed: {}", dir, ec.message()));
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

std::string BertIndexFile(const std::string& index_dir, bool train) {
  return (std::filesystem::path(index_dir) / (train ? "train.idx" : "eval.idx")).string();
}

absl::Status CheckBertData(const BertFiles& files, PretrainingShape shape,
                           int64_t expected_eval_samples, int64_t* train_samples,
                           int64_t* eval_samples, const std::string& index_dir) {
  if (files.train.empty()) return absl::NotFoundError("BERT data: no training files");
  if (files.eval.empty()) return absl::NotFoundError("BERT data: no evaluation files");
  int64_t counts[2] = {0, 0};  // train, eval
  for (const bool train : {true, false}) {
    const std::vector<std::string>& list = train ? files.train : files.eval;
    const std::string root = std::filesystem::path(list.front()).parent_path().string();
    absl::StatusOr<RecordIndex> index =
        index_dir.empty() ? IndexRecordFiles(list, IndexBertFile, 0)
                          : CachedRecordIndex(root, train ? Split::kTrain : Split::kVal, list,
                                              IndexBertFile, 0, BertIndexFile(index_dir, train));
    if (!index.ok()) return index.status();
    // The first record of each file.
    std::vector<TfRecordLocation> first(list.size());
    for (size_t i = 0; i < list.size(); ++i)
      if (!index->records[i].empty()) first[i] = index->records[i].front();
    std::vector<absl::Status> errors(list.size());
    base::ParallelFor(list.size(), 0,
                      [&](size_t i) { errors[i] = CheckFirstRecord(list[i], first[i], shape); });
    for (const absl::Status& e : errors) {
      if (!e.ok()) return e;  // the first bad file in listing order
    }
    counts[train ? 0 : 1] = index->size();
  }
  if (expected_eval_samples > 0 && counts[1] != expected_eval_samples) {
    return absl::DataLossError(fmt::format("{}: {} evaluation samples, expected {}",
                                           files.eval.front(), counts[1], expected_eval_samples));
  }
  if (train_samples != nullptr) *train_samples = counts[0];
  if (eval_samples != nullptr) *eval_samples = counts[1];
  return absl::OkStatus();
}

}  // namespace mlperf::datasets::bert
