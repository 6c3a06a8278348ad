"""The peer of coco_map_bench: writes a generated detection set as COCO JSON
(gt.json, dt.json in OUTDIR; the generator of tests/retinanet/coco_map_cases.py)
and times pycocotools on it, from the results list in memory to the stats:
prints "pycocotools SECONDS AP"."""
import contextlib
import io
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "retinanet"))
from coco_map_cases import make_case  # noqa: E402
from pycocotools.coco import COCO  # noqa: E402
from pycocotools.cocoeval import COCOeval  # noqa: E402


def main():
    images, classes, extra, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    os.makedirs(out, exist_ok=True)
    gt, results = make_case(21, images=images, classes=tuple(range(1, classes + 1)),
                            per_image=(1, 12), fp=(0, 4), extra_dets=extra, float32=True)
    gt_path = os.path.join(out, "gt.json")
    with open(gt_path, "w") as f:
        json.dump(gt, f)
    with open(os.path.join(out, "dt.json"), "w") as f:
        json.dump(results, f)
    with contextlib.redirect_stdout(io.StringIO()):
        truth = COCO(gt_path)
        start = time.perf_counter()
        e = COCOeval(truth, truth.loadRes(results), iouType="bbox")
        e.evaluate()
        e.accumulate()
        e.summarize()
        seconds = time.perf_counter() - start
    print(f"pycocotools {seconds:.6f} {e.stats[0]!r} {len(results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
