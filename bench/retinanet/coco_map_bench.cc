// COCO box mAP, ours against pycocotools' COCOeval in the same run
// (bench/retinanet/coco_map_peer.py under /usr/bin/python3):
//
//   coco_map_bench [images] [classes] [extra detections per image]
//       a generated set (1 to 12 boxes per image, about 2 detections each plus
//       false ones; defaults 5000 264 50) written as COCO JSON; both compute the
//       twelve stats from the parsed detections (pycocotools from loadRes on);
//       ours also from the JSON files. The two APs must agree.
//
// Threads: OMP_NUM_THREADS (pycocotools runs on one).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "datasets/coco/annotations.h"
#include "fmt/format.h"
#include "reference/eval/coco_map.h"

#ifndef MLPERF_SOURCE_DIR
#error "MLPERF_SOURCE_DIR must point at the repository root"
#endif

namespace coco = mlperf::datasets::coco;

namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int images = argc > 1 ? std::atoi(argv[1]) : 5000;
  const int classes = argc > 2 ? std::atoi(argv[2]) : 264;
  const int extra = argc > 3 ? std::atoi(argv[3]) : 50;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / fmt::format("coco_map_bench_{}", ::getpid());
  const std::string cmd =
      fmt::format("/usr/bin/python3 {}/bench/retinanet/coco_map_peer.py {} {} {} {}",
                  MLPERF_SOURCE_DIR, images, classes, extra, dir.string());
  FILE* peer = popen(cmd.c_str(), "r");
  double peer_seconds = 0, peer_ap = 0;
  long detections = 0;
  if (peer == nullptr ||
      std::fscanf(peer, "pycocotools %lf %lf %ld", &peer_seconds, &peer_ap, &detections) != 3 ||
      pclose(peer) != 0) {
    std::fprintf(stderr, "coco_map_bench: the peer failed: %s\n", cmd.c_str());
    return 1;
  }
  auto start = std::chrono::steady_clock::now();
  const auto truth = coco::ReadDataset(dir / "gt.json");
  const auto dets = coco::ReadDetections(dir / "dt.json");
  const double read_seconds = Seconds(start);
  if (!truth.ok() || !dets.ok()) {
    std::fprintf(stderr, "coco_map_bench: reading the set failed\n");
    return 1;
  }
  start = std::chrono::steady_clock::now();
  const auto stats = mlperf::eval::CocoBoxStats(*truth, *dets);
  const double seconds = Seconds(start);
  std::filesystem::remove_all(dir);
  if (!stats.ok()) {
    std::fprintf(stderr, "coco_map_bench: %s\n", std::string(stats.status().message()).c_str());
    return 1;
  }
  fmt::print("{} images, {} classes, {} detections\n", images, classes, detections);
  fmt::print("pycocotools  {:9.3f} s  AP {:.12f}\n", peer_seconds, peer_ap);
  fmt::print("ours         {:9.3f} s  AP {:.12f}  ({:.1f}x; reading the JSON {:.3f} s more)\n",
             seconds, stats->map(), peer_seconds / seconds, read_seconds);
  if (std::fabs(stats->map() - peer_ap) > 1e-9) {
    std::fprintf(stderr, "coco_map_bench: the APs differ\n");
    return 1;
  }
  return 0;
}
