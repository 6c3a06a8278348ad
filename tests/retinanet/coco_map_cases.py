"""The oracle of coco_map_test: writes detection cases as COCO JSON
(<case>.gt.json, <case>.dt.json) into a folder and pycocotools' COCOeval
stats of each into expected.txt, one "case s0 ... s11" line per case."""
import contextlib
import io
import json
import os
import sys

import numpy as np
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval


def random_box(rng, size_scale):
    w = float(rng.uniform(2, size_scale))
    h = float(rng.uniform(2, size_scale))
    x = float(rng.uniform(0, 640 - w))
    y = float(rng.uniform(0, 480 - h))
    return [x, y, w, h]


def jitter(rng, box, amount):
    x, y, w, h = box
    return [x + float(rng.normal(0, amount * w)), y + float(rng.normal(0, amount * h)),
            max(0.0, w * float(rng.uniform(1 - amount, 1 + amount))),
            max(0.0, h * float(rng.uniform(1 - amount, 1 + amount)))]


def make_case(seed, images=30, classes=(1, 2, 5, 9), per_image=(0, 6), fp=(0, 8),
              crowd=0.0, ties=None, extra_dets=0, first_id=1, float32=False,
              empty_tail=0, unknown_class_dets=0, size_scale=300, scored=False):
    rng = np.random.RandomState(seed)
    gt = {"images": [], "categories": [{"id": c, "name": f"c{c}"} for c in classes],
          "annotations": []}
    dets = []
    next_id = first_id
    ids = rng.permutation(np.arange(1000, 1000 + images + empty_tail)).tolist()
    for n, image_id in enumerate(ids):
        gt["images"].append({"id": int(image_id), "file_name": f"{image_id}.jpg",
                             "width": 640, "height": 480})
        if n >= images:
            continue  # images with nothing at all
        for _ in range(rng.randint(per_image[0], per_image[1] + 1)):
            box = random_box(rng, size_scale)
            cls = int(rng.choice(classes))
            is_crowd = int(rng.uniform() < crowd)
            gt["annotations"].append({"id": next_id, "image_id": int(image_id),
                                      "category_id": cls, "bbox": box,
                                      "area": box[2] * box[3], "iscrowd": is_crowd})
            next_id += 1
            for _ in range(rng.randint(0, 3)):
                amount = rng.uniform(0.02, 0.4)
                dets.append((int(image_id), cls, jitter(rng, box, amount),
                             1.0 - amount if scored else None))
        for _ in range(rng.randint(fp[0], fp[1] + 1) + extra_dets):
            dets.append((int(image_id), int(rng.choice(classes)), random_box(rng, size_scale),
                         0.5 * rng.uniform() if scored else None))
        for _ in range(unknown_class_dets):
            dets.append((int(image_id), 777, random_box(rng, size_scale), None))
    results = []
    for image_id, cls, box, planned in dets:
        score = float(rng.uniform()) if planned is None else float(planned)
        if ties is not None:
            score = float(rng.choice(ties))
        if float32:
            score = float(np.float32(score))
            box = [float(np.float32(v)) for v in box]
        results.append({"image_id": image_id, "category_id": cls, "bbox": box, "score": score})
    return gt, results


def boundary_case():
    # Areas exactly on the small/medium/large limits, a zero-width detection,
    # and a detection identical to its truth.
    gt = {"images": [{"id": 1}, {"id": 2}], "categories": [{"id": 3}], "annotations": []}
    boxes = [[0, 0, 32, 32], [50, 50, 96, 96], [200, 200, 31.9, 32.1], [10, 300, 96, 96.01]]
    for i, b in enumerate(boxes):
        gt["annotations"].append({"id": i + 1, "image_id": 1, "category_id": 3, "bbox": b,
                                  "area": b[2] * b[3], "iscrowd": 0})
    results = [{"image_id": 1, "category_id": 3, "bbox": b, "score": 0.5 + 0.1 * i}
               for i, b in enumerate(boxes)]
    results.append({"image_id": 1, "category_id": 3, "bbox": [5, 5, 0, 20], "score": 0.99})
    results.append({"image_id": 2, "category_id": 3, "bbox": [5, 5, 20, 20], "score": 0.7})
    return gt, results


def cases():
    yield "random", make_case(1)
    yield "float32", make_case(2, float32=True)
    yield "good_detector", make_case(12, scored=True, fp=(0, 3))
    yield "ties", make_case(3, ties=[0.1, 0.5, 0.9])
    yield "over_100_per_image", make_case(4, images=8, extra_dets=250)
    yield "crowds", make_case(5, crowd=0.3)
    yield "empty_images", make_case(6, empty_tail=10, per_image=(0, 1), fp=(0, 2))
    yield "classes_without_truth", make_case(7, classes=(1, 2, 3, 4, 5, 6, 7, 8), per_image=(0, 2),
                                             unknown_class_dets=2)
    yield "truth_id_zero", make_case(8, first_id=0)
    yield "small_boxes", make_case(9, size_scale=60)
    yield "no_detections", (make_case(10)[0], [])
    yield "boundaries", boundary_case()
    yield "large", make_case(11, images=400, classes=tuple(range(1, 21)), per_image=(1, 10),
                             fp=(5, 40))


def evaluate(gt_path, results):
    with contextlib.redirect_stdout(io.StringIO()):
        truth = COCO(gt_path)
        detections = truth.loadRes(results) if results else COCO()
        e = COCOeval(truth, detections, iouType="bbox")
        e.evaluate()
        e.accumulate()
        e.summarize()
    return e.stats


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "expected.txt"), "w") as expected:
        for name, (gt, results) in cases():
            gt_path = os.path.join(out, name + ".gt.json")
            with open(gt_path, "w") as f:
                json.dump(gt, f)
            with open(os.path.join(out, name + ".dt.json"), "w") as f:
                json.dump(results, f)
            stats = evaluate(gt_path, results)
            expected.write(name + " " + " ".join(repr(float(s)) for s in stats) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
