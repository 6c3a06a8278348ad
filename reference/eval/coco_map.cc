#include "reference/eval/coco_map.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "fmt/format.h"

namespace mlperf::eval {
namespace {

using datasets::coco::Annotation;
using datasets::coco::Dataset;
using datasets::coco::Detection;

constexpr int kT = 10;   // IoU thresholds
constexpr int kR = 101;  // recall points
constexpr int kA = 4;    // area ranges: all, small, medium, large
constexpr int kM = 3;    // detections per image: 1, 10, 100
constexpr int kMaxDets[kM] = {1, 10, 100};
constexpr double kAreaRange[kA][2] = {{0, 1e10}, {0, 32 * 32}, {32 * 32, 96 * 96}, {96 * 96, 1e10}};

// numpy.linspace(start, stop, n): i * step + start, the last exactly stop.
template <int N>
std::array<double, N> Linspace(double start, double stop) {
  std::array<double, N> y{};
  const double step = (stop - start) / (N - 1);
  for (int i = 0; i < N; ++i) {
    const double scaled = static_cast<double>(i) * step;
    y[i] = scaled + start;
  }
  y[N - 1] = stop;
  return y;
}

const std::array<double, kT> kIouThresholds = Linspace<kT>(0.5, 0.95);
const std::array<double, kR> kRecallThresholds = Linspace<kR>(0.0, 1.0);

// Descending score, NaN last (numpy's argsort of -score), for stable sorts.
bool HigherScore(double a, double b) { return (!std::isnan(a) && std::isnan(b)) || a > b; }

// maskUtils.iou on [x, y, w, h] boxes: a crowd box's union is the
// detection's own area.
double BoxIou(const double* d, const double* g, bool crowd) {
  const double w = std::fmin(d[2] + d[0], g[2] + g[0]) - std::fmax(d[0], g[0]);
  if (w <= 0) return 0;
  const double h = std::fmin(d[3] + d[1], g[3] + g[1]) - std::fmax(d[1], g[1]);
  if (h <= 0) return 0;
  const double inter = w * h;
  const double det_area = d[2] * d[3];
  return inter / (crowd ? det_area : det_area + g[2] * g[3] - inter);
}

// One image's detections of one class in one area range, as COCOeval's
// evaluateImg leaves them: sorted by score, at most 100.
struct ImageResult {
  std::vector<double> scores;
  // Per threshold and detection: matched to a ground truth with a non-zero
  // id (COCOeval tests the id), and ignored.
  std::vector<uint8_t> matched, ignored;  // [kT][scores.size()]
  int64_t counted_truth = 0;              // ground truths not ignored
};

ImageResult EvaluateImage(std::span<const Annotation* const> truth,
                          std::span<const Detection* const> dets_by_score,
                          const std::vector<double>& ious, const double range[2]) {
  const int64_t n_truth = static_cast<int64_t>(truth.size());
  const int64_t n_dets = static_cast<int64_t>(dets_by_score.size());
  // Ground truths outside the range or crowds are ignored and go last.
  std::vector<uint8_t> truth_ignored(truth.size());
  for (int64_t g = 0; g < n_truth; ++g)
    truth_ignored[g] = truth[g]->iscrowd || truth[g]->area < range[0] || truth[g]->area > range[1];
  std::vector<int64_t> order(truth.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return truth_ignored[a] < truth_ignored[b]; });

  ImageResult r;
  r.scores.resize(dets_by_score.size());
  for (int64_t d = 0; d < n_dets; ++d) r.scores[d] = dets_by_score[d]->score;
  r.matched.assign(kT * dets_by_score.size(), 0);
  r.ignored.assign(kT * dets_by_score.size(), 0);
  for (int64_t g = 0; g < n_truth; ++g) r.counted_truth += truth_ignored[g] == 0;

  std::vector<uint8_t> truth_taken(truth.size());
  for (int t = 0; t < kT; ++t) {
    std::fill(truth_taken.begin(), truth_taken.end(), 0);
    for (int64_t d = 0; d < n_dets && n_truth > 0; ++d) {
      double best = std::min(kIouThresholds[t], 1 - 1e-10);
      int64_t m = -1;  // position in `order`
      for (int64_t j = 0; j < n_truth; ++j) {
        const int64_t g = order[j];
        if (truth_taken[g] && !truth[g]->iscrowd) continue;
        // Matched to a counted truth already: ignored ones cannot do better.
        if (m > -1 && !truth_ignored[order[m]] && truth_ignored[g]) break;
        const double iou = ious[d * n_truth + g];
        if (iou < best) continue;
        best = iou;
        m = j;
      }
      if (m == -1) continue;
      const int64_t g = order[m];
      r.ignored[t * n_dets + d] = truth_ignored[g];
      r.matched[t * n_dets + d] = truth[g]->id != 0;
      truth_taken[g] = 1;
    }
    // Unmatched detections outside the range are ignored too.
    for (int64_t d = 0; d < n_dets; ++d) {
      const double* b = dets_by_score[d]->bbox;
      const double area = b[2] * b[3];
      const bool outside = area < range[0] || area > range[1];
      if (!r.matched[t * n_dets + d] && outside) r.ignored[t * n_dets + d] = 1;
    }
  }
  return r;
}

// COCOeval.accumulate for one class, area range and detection limit: the
// precision at the recall points and the final recall per threshold. Left
// at -1 without counted ground truth.
void Accumulate(const std::vector<ImageResult>& images, int max_dets, double* precision,
                double* recall) {
  struct Entry {
    double score;
    const ImageResult* image;
    int64_t index;
  };
  std::vector<Entry> entries;
  int64_t counted = 0;
  for (const ImageResult& r : images) {
    counted += r.counted_truth;
    const int64_t n = std::min<int64_t>(max_dets, static_cast<int64_t>(r.scores.size()));
    for (int64_t d = 0; d < n; ++d) entries.push_back({r.scores[d], &r, d});
  }
  if (counted == 0) return;
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return HigherScore(a.score, b.score); });
  const int64_t nd = static_cast<int64_t>(entries.size());
  std::vector<double> rc(static_cast<size_t>(nd)), pr(static_cast<size_t>(nd));
  const double eps = std::numeric_limits<double>::epsilon();  // numpy.spacing(1)
  for (int t = 0; t < kT; ++t) {
    double tp = 0, fp = 0;
    for (int64_t i = 0; i < nd; ++i) {
      const ImageResult& r = *entries[i].image;
      const int64_t at = t * static_cast<int64_t>(r.scores.size()) + entries[i].index;
      if (!r.ignored[at]) (r.matched[at] ? tp : fp) += 1;
      rc[i] = tp / static_cast<double>(counted);
      pr[i] = tp / (fp + tp + eps);
    }
    recall[t] = nd > 0 ? rc[nd - 1] : 0;
    for (int64_t i = nd - 1; i > 0; --i) pr[i - 1] = std::max(pr[i - 1], pr[i]);
    std::fill(precision + t * kR, precision + (t + 1) * kR, 0.0);  // past the last recall: 0
    for (int r = 0; r < kR; ++r) {
      const auto it = std::lower_bound(rc.begin(), rc.end(), kRecallThresholds[r]);
      if (it == rc.end()) break;
      precision[t * kR + r] = pr[it - rc.begin()];
    }
  }
}

// The mean of the entries above -1, or -1 when there are none.
double MeanOfDefined(const std::vector<double>& values) {
  double sum = 0;
  int64_t n = 0;
  for (double v : values)
    if (v > -1) {
      sum += v;
      ++n;
    }
  return n == 0 ? -1 : sum / static_cast<double>(n);
}

}  // namespace

const std::array<const char*, 12>& CocoStats::Names() {
  static const std::array<const char*, 12> names = {
      "AP",  "AP50", "AP75",  "AP_small", "AP_medium", "AP_large",
      "AR1", "AR10", "AR100", "AR_small", "AR_medium", "AR_large"};
  return names;
}

absl::StatusOr<CocoStats> CocoBoxStats(const Dataset& truth,
                                       std::span<const Detection> detections) {
  std::vector<int64_t> image_ids, category_ids = truth.category_ids;
  for (const auto& image : truth.images) image_ids.push_back(image.id);
  std::sort(image_ids.begin(), image_ids.end());
  image_ids.erase(std::unique(image_ids.begin(), image_ids.end()), image_ids.end());
  std::sort(category_ids.begin(), category_ids.end());
  category_ids.erase(std::unique(category_ids.begin(), category_ids.end()), category_ids.end());
  std::unordered_map<int64_t, int64_t> image_index, category_index;
  for (size_t i = 0; i < image_ids.size(); ++i) image_index[image_ids[i]] = static_cast<int64_t>(i);
  for (size_t k = 0; k < category_ids.size(); ++k)
    category_index[category_ids[k]] = static_cast<int64_t>(k);
  const int64_t n_images = static_cast<int64_t>(image_ids.size());
  const int64_t n_classes = static_cast<int64_t>(category_ids.size());

  // Per (class, image) cell, in file order.
  std::unordered_map<int64_t, int64_t> seen_ids;
  std::vector<std::vector<const Annotation*>> truth_cells(n_classes * n_images);
  std::vector<std::vector<const Detection*>> det_cells(n_classes * n_images);
  for (size_t i = 0; i < truth.annotations.size(); ++i) {
    const Annotation& a = truth.annotations[i];
    if (auto [it, fresh] = seen_ids.emplace(a.id, static_cast<int64_t>(i)); !fresh)
      return absl::InvalidArgumentError(fmt::format(
          "annotations[{}]: id {} is used by annotations[{}] too", i, a.id, it->second));
    const auto img = image_index.find(a.image_id);
    const auto cls = category_index.find(a.category_id);
    if (img == image_index.end() || cls == category_index.end()) continue;
    truth_cells[cls->second * n_images + img->second].push_back(&a);
  }
  for (size_t i = 0; i < detections.size(); ++i) {
    const Detection& d = detections[i];
    const auto img = image_index.find(d.image_id);
    if (img == image_index.end())
      return absl::InvalidArgumentError(fmt::format(
          "results[{}]: image_id {} is not an image of the ground truth", i, d.image_id));
    const auto cls = category_index.find(d.category_id);
    if (cls == category_index.end()) continue;
    det_cells[cls->second * n_images + img->second].push_back(&d);
  }

  // precision[t][r][k][a][m] and recall[t][k][a][m], as COCOeval lays them out.
  std::vector<double> precision(static_cast<size_t>(kT * kR * n_classes * kA * kM), -1.0);
  std::vector<double> recall(static_cast<size_t>(kT * n_classes * kA * kM), -1.0);
#pragma omp parallel for schedule(dynamic)
  for (int64_t k = 0; k < n_classes; ++k) {
    std::vector<ImageResult> by_range[kA];
    std::vector<double> ious;
    for (int64_t i = 0; i < n_images; ++i) {
      const auto& gts = truth_cells[k * n_images + i];
      std::vector<const Detection*> dets = det_cells[k * n_images + i];
      if (gts.empty() && dets.empty()) continue;
      std::stable_sort(dets.begin(), dets.end(), [](const Detection* a, const Detection* b) {
        return HigherScore(a->score, b->score);
      });
      if (dets.size() > static_cast<size_t>(kMaxDets[kM - 1])) dets.resize(kMaxDets[kM - 1]);
      ious.assign(dets.size() * gts.size(), 0.0);
      for (size_t d = 0; d < dets.size(); ++d)
        for (size_t g = 0; g < gts.size(); ++g)
          ious[d * gts.size() + g] = BoxIou(dets[d]->bbox, gts[g]->bbox, gts[g]->iscrowd);
      for (int a = 0; a < kA; ++a)
        by_range[a].push_back(EvaluateImage(gts, dets, ious, kAreaRange[a]));
    }
    for (int a = 0; a < kA; ++a)
      for (int m = 0; m < kM; ++m) {
        double p[kT * kR], rc[kT];
        std::fill(std::begin(p), std::end(p), -1.0);
        std::fill(std::begin(rc), std::end(rc), -1.0);
        Accumulate(by_range[a], kMaxDets[m], p, rc);
        for (int t = 0; t < kT; ++t) {
          recall[((t * n_classes + k) * kA + a) * kM + m] = rc[t];
          for (int r = 0; r < kR; ++r)
            precision[(((t * kR + r) * n_classes + k) * kA + a) * kM + m] = p[t * kR + r];
        }
      }
  }

  // COCOeval.summarize: means over the selected entries above -1.
  auto ap = [&](int t_only, int a, int m) {
    std::vector<double> v;
    for (int t = 0; t < kT; ++t) {
      if (t_only >= 0 && t != t_only) continue;
      for (int r = 0; r < kR; ++r)
        for (int64_t k = 0; k < n_classes; ++k)
          v.push_back(precision[(((t * kR + r) * n_classes + k) * kA + a) * kM + m]);
    }
    return MeanOfDefined(v);
  };
  auto ar = [&](int a, int m) {
    std::vector<double> v;
    for (int t = 0; t < kT; ++t)
      for (int64_t k = 0; k < n_classes; ++k)
        v.push_back(recall[((t * n_classes + k) * kA + a) * kM + m]);
    return MeanOfDefined(v);
  };
  // Thresholds 0.5 and 0.75 are entries 0 and 5 of the linspace.
  CocoStats s;
  s.values = {ap(-1, 0, 2), ap(0, 0, 2), ap(5, 0, 2), ap(-1, 1, 2), ap(-1, 2, 2), ap(-1, 3, 2),
              ar(0, 0),     ar(0, 1),    ar(0, 2),    ar(1, 2),     ar(2, 2),     ar(3, 2)};
  return s;
}

}  // namespace mlperf::eval
