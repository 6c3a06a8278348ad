// The list of images of one split, in a deterministic order, for the two
// on-disk forms of ImageNet:
//
// ImageFolder (format kImageFolder):
//   root/train/<class>/*.JPEG        class index = position of <class> among the
//                                    sorted train class directory names
//   root/val/<class>/*.JPEG          the same class names (a val class that is
//                                    not a train class is an error), or
//   root/val/*.JPEG + a labels file, the first of
//     root/val_labels.txt            lines "<file> <class>", whitespace- or
//                                    comma-separated ("ILSVRC2012_val_00000001.JPEG n01751748")
//     root/LOC_val_solution.csv      Kaggle's "ImageId,PredictionString" whose first
//                                    token is the class ("ILSVRC2012_val_00000001,n01751748 ...")
//   <file> may omit the extension. Every image must have exactly one label and
//   every label an image. Files ending .jpeg/.jpg (any case) are images; other
//   files are ignored. Listing is sorted by byte order of the names.
//
// TFRecord (format kTfRecord): root/train-* and root/validation-* (or val-*)
// shards as written by imagenet_to_gcs.py, each record a tf.Example with
// image/encoded and a 1-based image/class/label. Shards sorted by name, records
// in file order. Names ending .tmp are unfinished writes and are ignored.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace mlperf::datasets {

enum class Split { kTrain, kVal };
enum class DatasetFormat { kAuto, kImageFolder, kTfRecord };

struct IndexEntry {
  int32_t file = 0;     // into DatasetIndex::files
  int32_t label = -1;   // 0-based; -1 = read from the record (TFRecord)
  uint64_t offset = 0;  // TFRecord: record header offset and data length
  uint64_t length = 0;
};

struct DatasetIndex {
  DatasetFormat format = DatasetFormat::kImageFolder;
  std::vector<std::string> files;  // image files (ImageFolder) or shards (TFRecord)
  std::vector<IndexEntry> entries;
  std::vector<std::string> class_names;  // ImageFolder only
  int num_classes = 0;
};

// Resolves kAuto: ImageFolder if root/train or root/val is a directory, else
// TFRecord if root holds train-* or validation-* files.
absl::StatusOr<DatasetFormat> DetectFormat(const std::string& root);

absl::StatusOr<DatasetIndex> IndexImageFolder(const std::string& root, Split split);

// num_classes > 0 is trusted (labels are then checked as images load);
// num_classes == 0 reads every record once to find it (and checks every CRC).
absl::StatusOr<DatasetIndex> IndexTfRecords(const std::string& root, Split split, int num_classes);

}  // namespace mlperf::datasets
