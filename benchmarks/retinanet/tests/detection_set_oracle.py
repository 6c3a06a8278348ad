"""The oracle of detection_set_test: the reference's input pipeline in
PyTorch on the images and annotations the test generated (DIR/train:
data/*.jpg, labels/openimages-mlperf.json). For each image in id order,
with and without a horizontal flip: PIL decode, F.hflip with the boxes'
x mirrored, to_tensor, normalisation by the ImageNet mean and deviation,
bilinear resize to SIZE x SIZE (align_corners=False) and resize_boxes, after
ConvertCocoPolysToMask's corners, clamping and degenerate-box filter. Also
F.interpolate of random planes for the resize alone. Writes safetensors OUT."""
import json
import os
import sys

import torch
import torch.nn.functional as F
from PIL import Image
from torchvision.transforms import functional as TF

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "tools"))
from safetensors_io import write  # noqa: E402

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def main():
    root, size, out_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    labels = json.load(open(os.path.join(root, "labels", "openimages-mlperf.json")))
    out = {}
    for i, image in enumerate(sorted(labels["images"], key=lambda im: im["id"])):
        anns = [a for a in labels["annotations"] if a["image_id"] == image["id"]]
        for flip in (0, 1):
            img = Image.open(os.path.join(root, "data", image["file_name"])).convert("RGB")
            w, h = img.size
            boxes = torch.as_tensor([a["bbox"] for a in anns], dtype=torch.float32).reshape(-1, 4)
            boxes[:, 2:] += boxes[:, :2]
            boxes[:, 0::2].clamp_(min=0, max=w)
            boxes[:, 1::2].clamp_(min=0, max=h)
            keep = (boxes[:, 3] > boxes[:, 1]) & (boxes[:, 2] > boxes[:, 0])
            boxes = boxes[keep]
            if flip:
                img = TF.hflip(img)
                boxes[:, [0, 2]] = w - boxes[:, [2, 0]]
            x = TF.to_tensor(img)
            x = (x - torch.tensor(MEAN)[:, None, None]) / torch.tensor(STD)[:, None, None]
            x = F.interpolate(x[None], size=[size, size], mode="bilinear", align_corners=False)[0]
            ratio_h = torch.tensor(size, dtype=torch.float32) / torch.tensor(h, dtype=torch.float32)
            ratio_w = torch.tensor(size, dtype=torch.float32) / torch.tensor(w, dtype=torch.float32)
            boxes = boxes * torch.stack([ratio_w, ratio_h, ratio_w, ratio_h])
            out[f"image/{i}/{flip}"] = x
            out[f"boxes/{i}/{flip}"] = boxes.reshape(-1, 4)
    g = torch.Generator().manual_seed(4)
    for name, (h, w) in {"down": (100, 80), "up": (30, 50), "same": (64, 64)}.items():
        planes = torch.randn(3, h, w, generator=g)
        out[f"resize/{name}/in"] = planes
        out[f"resize/{name}/out"] = F.interpolate(planes[None], size=[size, size], mode="bilinear",
                                                  align_corners=False)[0]
    write(out_path, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
