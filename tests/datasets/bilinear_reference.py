"""Independent reference for datasets/augment.cc: crops and resizes with PyTorch's
F.interpolate(mode='bilinear', align_corners=False, antialias=False).

Usage: bilinear_reference.py IN OUT
IN:  int32 H, W, C (cases), uint8 H*W*3 image (HWC), then per case 7 int32:
     kind 0: x, y, w, h, out_h, out_w, 0  -> crop then resize
     kind 1: new_h, new_w, size, 0, 0, 0  -> resize whole image, centre crop size
OUT: float32 results of every case, HWC, concatenated.
"""
import sys

import numpy as np
import torch
import torch.nn.functional as F


def resize(chw, h, w):
    return F.interpolate(chw[None], size=(h, w), mode="bilinear", align_corners=False,
                         antialias=False)[0]


def main():
    raw = open(sys.argv[1], "rb").read()
    h, w, cases = np.frombuffer(raw[:12], dtype=np.int32)
    pixels = np.frombuffer(raw[12:12 + h * w * 3], dtype=np.uint8).reshape(h, w, 3)
    image = torch.from_numpy(pixels.astype(np.float32)).permute(2, 0, 1)
    specs = np.frombuffer(raw[12 + h * w * 3:], dtype=np.int32).reshape(cases, 7)
    out = []
    for kind, a, b, c, d, e, f in specs:
        if kind == 0:
            res = resize(image[:, b:b + d, a:a + c], e, f)
        else:
            full = resize(image, a, b)
            top, left = (a - c) // 2, (b - c) // 2
            res = full[:, top:top + c, left:left + c]
        out.append(res.permute(1, 2, 0).contiguous().numpy().ravel())
    np.concatenate(out).astype(np.float32).tofile(sys.argv[2])


if __name__ == "__main__":
    main()
