"""The oracle of detection_test: inputs and torchvision's answers for the
box machinery, in one safetensors file (all F32): box_iou, BoxCoder's
encode and decode (weights 1, clamp log(1000/16)), AnchorGenerator with the
reference's integer sizes, Matcher(0.5, 0.4, allow_low_quality_matches),
ops.nms, ops.batched_nms on both of its paths, and
RetinaNet.postprocess_detections."""
import math
import os
import sys
from types import SimpleNamespace

import torch
from torchvision.models.detection import _utils as det_utils
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.image_list import ImageList
from torchvision.models.detection.retinanet import RetinaNet
from torchvision.ops import batched_nms, box_iou, nms

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from safetensors_io import write  # noqa: E402


def random_boxes(g, n, extent=200.0, size=60.0):
    xy = torch.rand(n, 2, generator=g) * extent
    wh = torch.rand(n, 2, generator=g) * size + 1.0
    return torch.cat([xy, xy + wh], dim=1)


SIZES = tuple((x, int(x * 2 ** (1.0 / 3)), int(x * 2 ** (2.0 / 3))) for x in [32, 64, 128, 256, 512])


def anchors_for(image_h, image_w, grids):
    generator = AnchorGenerator(SIZES, ((0.5, 1.0, 2.0),) * len(SIZES))
    images = ImageList(torch.zeros(1, 3, image_h, image_w), [(image_h, image_w)])
    features = [torch.zeros(1, 1, h, w) for h, w in grids]
    return generator(images, features)[0]


def main():
    g = torch.Generator().manual_seed(5)
    out = {}
    a, b = random_boxes(g, 30), random_boxes(g, 50)
    b[7] = a[3]  # identical boxes
    out.update({"iou/a": a, "iou/b": b, "iou/out": box_iou(a, b)})

    coder = det_utils.BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
    truth, anchors = random_boxes(g, 200), random_boxes(g, 200)
    codes = torch.randn(200, 4, generator=g) * 2.0
    codes[:10, 2:] = 6.0  # past the clamp
    out.update({"coder/truth": truth, "coder/anchors": anchors, "coder/codes": codes,
                "coder/encoded": coder.encode_single(truth, anchors),
                "coder/decoded": coder.decode_single(codes, anchors)})

    out["anchors/800"] = anchors_for(800, 800, [(100, 100), (50, 50), (25, 25), (13, 13), (7, 7)])
    small_grids = [(12, 16), (6, 8), (3, 4), (2, 2), (1, 1)]
    small = anchors_for(96, 128, small_grids)
    out["anchors/small"] = small

    truths = random_boxes(g, 9, extent=100.0, size=50.0)
    truths = torch.cat([truths, torch.tensor([[5000.0, 5000.0, 5010.0, 5010.0]])])  # overlaps nothing
    quality = box_iou(truths, small)
    matcher = det_utils.Matcher(0.5, 0.4, allow_low_quality_matches=True)
    out.update({"match/truths": truths, "match/out": matcher(quality),
                "match/out_inside": matcher(quality[:-1])})

    boxes = random_boxes(g, 500, extent=150.0)
    scores = torch.rand(500, generator=g)
    out.update({"nms/boxes": boxes, "nms/scores": scores, "nms/keep": nms(boxes, scores, 0.5)})
    for name, n in (("trick", 600), ("vanilla", 2000)):
        boxes = random_boxes(g, n, extent=150.0)
        scores = torch.rand(n, generator=g)
        classes = torch.randint(0, 5, (n,), generator=g)
        out.update({f"batched_{name}/boxes": boxes, f"batched_{name}/scores": scores,
                    f"batched_{name}/classes": classes,
                    f"batched_{name}/keep": batched_nms(boxes, scores, classes, 0.5)})

    classes = 7
    per_level = [h * w * 9 for h, w in small_grids]
    logits = [torch.randn(1, n, classes, generator=g) * 2.0 - 3.0 for n in per_level]
    regression = [torch.randn(1, n, 4, generator=g) * 0.3 for n in per_level]
    self = SimpleNamespace(box_coder=coder, score_thresh=0.05, topk_candidates=1000,
                           nms_thresh=0.5, detections_per_img=300)
    detections = RetinaNet.postprocess_detections(
        self, {"cls_logits": logits, "bbox_regression": regression},
        [list(small.split(per_level))], [(96, 128)])[0]
    out.update({"post/logits": torch.cat(logits, 1)[0], "post/regression": torch.cat(regression, 1)[0],
                "post/boxes": detections["boxes"], "post/scores": detections["scores"],
                "post/labels": detections["labels"]})
    write(sys.argv[1], out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
