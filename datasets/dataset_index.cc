#include "datasets/dataset_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <system_error>

#include "datasets/tfrecord.h"

namespace mlperf::datasets {
namespace fs = std::filesystem;
namespace {

bool IsJpegName(const std::string& name) {
  std::string lower = name;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.ends_with(".jpeg") || lower.ends_with(".jpg");
}

bool IsDirectory(const fs::path& p) {
  std::error_code ec;
  return fs::is_directory(p, ec);
}

// Sorted names of the entries of `dir` (directories or regular files).
absl::StatusOr<std::vector<std::string>> ListDir(const fs::path& dir, bool directories) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec)
    return absl::NotFoundError(fmt::format("{}: cannot list: {}", dir.string(), ec.message()));
  std::vector<std::string> names;
  for (fs::directory_iterator end; it != end; it.increment(ec)) {
    std::error_code entry_ec;
    const bool is_dir = it->is_directory(entry_ec);
    if (directories ? is_dir : (!is_dir && it->is_regular_file(entry_ec))) {
      names.push_back(it->path().filename().string());
    }
  }
  if (ec)
    return absl::InternalError(fmt::format("{}: listing failed: {}", dir.string(), ec.message()));
  std::sort(names.begin(), names.end());
  return names;
}

absl::StatusOr<std::vector<std::string>> ListImages(const fs::path& dir) {
  absl::StatusOr<std::vector<std::string>> names = ListDir(dir, /*directories=*/false);
  if (!names.ok()) return names.status();
  std::erase_if(*names, [](const std::string& n) { return !IsJpegName(n); });
  return names;
}

std::string Stem(const std::string& name) {
  const size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(0, dot);
}

// Parses "<file> <class>" / "<file>,<class> ..." lines into file -> class name.
absl::StatusOr<std::map<std::string, std::string>> ReadValLabels(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(fmt::format("{}: cannot open", path.string()));
  std::map<std::string, std::string> labels;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    if (line_no == 1 && line.starts_with("ImageId,")) continue;  // the Kaggle CSV header
    for (char& c : line) {
      if (c == ',' || c == '\t') c = ' ';
    }
    const size_t a = line.find_first_not_of(' ');
    const size_t a_end = line.find(' ', a);
    const size_t b = a_end == std::string::npos ? a_end : line.find_first_not_of(' ', a_end);
    if (b == std::string::npos) {
      return absl::InvalidArgumentError(
          fmt::format("{}:{}: expected \"<image file> <class name>\", got \"{}\"", path.string(),
                      line_no, line));
    }
    const size_t b_end = line.find(' ', b);
    const std::string file = line.substr(a, a_end - a);
    const std::string cls = line.substr(b, b_end == std::string::npos ? b_end : b_end - b);
    if (!labels.emplace(Stem(file), cls).second) {
      return absl::InvalidArgumentError(
          fmt::format("{}:{}: second label for {}", path.string(), line_no, file));
    }
  }
  return labels;
}

}  // namespace

absl::StatusOr<DatasetFormat> DetectFormat(const std::string& root) {
  if (!IsDirectory(root)) {
    return absl::NotFoundError(fmt::format("{}: dataset root is not a directory", root));
  }
  if (IsDirectory(fs::path(root) / "train") || IsDirectory(fs::path(root) / "val")) {
    return DatasetFormat::kImageFolder;
  }
  absl::StatusOr<std::vector<std::string>> files = ListDir(root, /*directories=*/false);
  if (!files.ok()) return files.status();
  for (const std::string& f : *files) {
    if (f.starts_with("train-") || f.starts_with("validation-") || f.starts_with("val-")) {
      return DatasetFormat::kTfRecord;
    }
  }
  return absl::NotFoundError(
      fmt::format("{}: neither an image folder tree (train/, val/) nor TFRecord shards (train-*, "
                  "validation-*)",
                  root));
}

absl::StatusOr<DatasetIndex> IndexImageFolder(const std::string& root, Split split) {
  const fs::path train_dir = fs::path(root) / "train";
  const fs::path val_dir = fs::path(root) / "val";
  const fs::path split_dir = split == Split::kTrain ? train_dir : val_dir;
  if (!IsDirectory(split_dir)) {
    return absl::NotFoundError(fmt::format("{}: missing directory", split_dir.string()));
  }
  DatasetIndex index;
  index.format = DatasetFormat::kImageFolder;
  // Class names come from train/ whenever it exists, so train and val agree.
  absl::StatusOr<std::vector<std::string>> classes =
      ListDir(IsDirectory(train_dir) ? train_dir : val_dir, /*directories=*/true);
  if (!classes.ok()) return classes.status();
  index.class_names = *std::move(classes);
  std::map<std::string, int32_t> class_ids;
  for (size_t i = 0; i < index.class_names.size(); ++i) {
    class_ids[index.class_names[i]] = static_cast<int32_t>(i);
  }

  absl::StatusOr<std::vector<std::string>> subdirs = ListDir(split_dir, /*directories=*/true);
  if (!subdirs.ok()) return subdirs.status();
  if (!subdirs->empty()) {
    for (const std::string& cls : *subdirs) {
      auto id = class_ids.find(cls);
      if (id == class_ids.end()) {
        return absl::InvalidArgumentError(fmt::format("{}: class directory {} is not a class of {}",
                                                      split_dir.string(), cls, train_dir.string()));
      }
      absl::StatusOr<std::vector<std::string>> images = ListImages(split_dir / cls);
      if (!images.ok()) return images.status();
      for (const std::string& name : *images) {
        index.entries.push_back({static_cast<int32_t>(index.files.size()), id->second, 0, 0});
        index.files.push_back((split_dir / cls / name).string());
      }
    }
  } else {
    if (split == Split::kTrain) {
      return absl::InvalidArgumentError(
          fmt::format("{}: no class directories", split_dir.string()));
    }
    std::error_code ec;
    fs::path labels_path = fs::path(root) / "val_labels.txt";
    if (!fs::exists(labels_path, ec)) labels_path = fs::path(root) / "LOC_val_solution.csv";
    if (!fs::exists(labels_path, ec)) {
      return absl::NotFoundError(fmt::format(
          "{}: flat validation directory needs {}/val_labels.txt or {}/LOC_val_solution.csv",
          split_dir.string(), root, root));
    }
    absl::StatusOr<std::map<std::string, std::string>> labels = ReadValLabels(labels_path);
    if (!labels.ok()) return labels.status();
    absl::StatusOr<std::vector<std::string>> images = ListImages(split_dir);
    if (!images.ok()) return images.status();
    size_t used = 0;
    for (const std::string& name : *images) {
      auto label = labels->find(Stem(name));
      if (label == labels->end()) {
        return absl::InvalidArgumentError(
            fmt::format("{}: {} has no label", labels_path.string(), name));
      }
      auto id = class_ids.find(label->second);
      if (id == class_ids.end()) {
        return absl::InvalidArgumentError(fmt::format("{}: label {} of {} is not a class directory",
                                                      labels_path.string(), label->second, name));
      }
      ++used;
      index.entries.push_back({static_cast<int32_t>(index.files.size()), id->second, 0, 0});
      index.files.push_back((split_dir / name).string());
    }
    if (used != labels->size()) {
      std::set<std::string> stems;
      for (const std::string& name : *images) stems.insert(Stem(name));
      for (const auto& [stem, cls] : *labels) {
        if (!stems.contains(stem)) {
          return absl::NotFoundError(fmt::format("{}: labelled image {} is missing from {}",
                                                 labels_path.string(), stem, split_dir.string()));
        }
      }
    }
  }
  if (index.entries.empty()) {
    return absl::NotFoundError(fmt::format("{}: no JPEG images", split_dir.string()));
  }
  index.num_classes = static_cast<int>(index.class_names.size());
  return index;
}

absl::StatusOr<DatasetIndex> IndexTfRecords(const std::string& root, Split split, int num_classes) {
  absl::StatusOr<std::vector<std::string>> files = ListDir(root, /*directories=*/false);
  if (!files.ok()) return files.status();
  DatasetIndex index;
  index.format = DatasetFormat::kTfRecord;
  for (const std::string& f : *files) {
    const bool wanted = split == Split::kTrain
                            ? f.starts_with("train-")
                            : (f.starts_with("validation-") || f.starts_with("val-"));
    if (wanted && !f.ends_with(".tmp")) index.files.push_back((fs::path(root) / f).string());
  }
  if (index.files.empty()) {
    return absl::NotFoundError(fmt::format("{}: no {} TFRecord shards", root,
                                           split == Split::kTrain ? "train-*" : "validation-*"));
  }
  const bool scan = num_classes <= 0;
  int64_t max_label = 0;
  for (size_t f = 0; f < index.files.size(); ++f) {
    const std::string& path = index.files[f];
    absl::StatusOr<std::vector<TfRecordLocation>> records = IndexTfRecordFile(path, false);
    if (!records.ok()) return records.status();
    if (scan) {
      // Reads the labels (and checks the data CRCs) of every record once.
      absl::StatusOr<TfRecordReader> reader = TfRecordReader::Open(path);
      if (!reader.ok()) return reader.status();
      std::string data;
      for (const TfRecordLocation& loc : *records) {
        absl::StatusOr<bool> got = reader->Next(&data);
        if (!got.ok()) return got.status();
        absl::StatusOr<ImageRecord> rec =
            ParseImageExample(data, fmt::format("{}: record at byte {}", path, loc.offset));
        if (!rec.ok()) return rec.status();
        if (rec->label < 1) {
          return absl::InvalidArgumentError(
              fmt::format("{}: record at byte {}: label {} (ImageNet TFRecord labels start at 1)",
                          path, loc.offset, rec->label));
        }
        max_label = std::max(max_label, rec->label);
      }
    }
    for (const TfRecordLocation& loc : *records) {
      index.entries.push_back({static_cast<int32_t>(f), -1, loc.offset, loc.length});
    }
  }
  if (index.entries.empty()) {
    return absl::NotFoundError(fmt::format("{}: TFRecord shards hold no records", root));
  }
  index.num_classes = scan ? static_cast<int>(max_label) : num_classes;
  return index;
}

}  // namespace mlperf::datasets
