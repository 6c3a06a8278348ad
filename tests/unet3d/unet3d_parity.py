"""PyTorch oracle for tests/unet3d/unet3d_parity_test.cc.

The MLPerf 3D U-Net written with torch.nn under the reference's module names
(input_block, downsample.i, bottleneck, upsample.i, output; each unit an
nn.Sequential of conv, InstanceNorm3d(affine=True), ReLU), loaded strictly
from the C++ model's safetensors weights. On one batch it computes the
logits, the reference's DiceCELoss ((Dice over the foreground classes on
softmax + cross-entropy) / 2) and every parameter gradient, in fp32 and in
fp64 (prefix f64/), and writes them as safetensors.
Run with /usr/bin/python3 (Debian's python3-torch).

With "sliding" first, it runs the reference's sliding-window evaluation
instead (written here from runtime/inference.py's behaviour: edge crop, -2.2
padding, Gaussian importance of the logits, overlap 0.5) on one volume and
writes the cropped logits and the Dice of each foreground class.

usage: unet3d_parity.py WEIGHTS BATCH OUTPUT FILTERS(comma-separated) CLASSES
       unet3d_parity.py sliding WEIGHTS VOLUME OUTPUT FILTERS CLASSES ROI
"""
import copy
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from safetensors_io import read, write  # noqa: E402


def unit(cin, cout, stride):
    return nn.Sequential(nn.Conv3d(cin, cout, 3, stride=stride, padding=1, bias=False),
                         nn.InstanceNorm3d(cout, affine=True), nn.ReLU())


class Pair(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = unit(cin, cout, stride)
        self.conv2 = unit(cout, cout, 1)

    def forward(self, x):
        return self.conv2(self.conv1(x))


class Up(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.upsample_conv = nn.Sequential(nn.ConvTranspose3d(cin, cout, 2, stride=2, bias=True))
        self.conv1 = unit(2 * cout, cout, 1)
        self.conv2 = unit(cout, cout, 1)

    def forward(self, x, skip):
        return self.conv2(self.conv1(torch.cat((self.upsample_conv(x), skip), dim=1)))


class UNet3D(nn.Module):
    def __init__(self, filters, classes):
        super().__init__()
        self.input_block = Pair(1, filters[0], 1)
        self.downsample = nn.ModuleList(Pair(i, o, 2) for i, o in zip(filters[:-1], filters[1:]))
        self.bottleneck = Pair(filters[-1], filters[-1], 2)
        ups = [Up(filters[-1], filters[-1])]
        ups += [Up(i, o) for i, o in zip(reversed(filters[1:]), reversed(filters[:-1]))]
        self.upsample = nn.ModuleList(ups)
        self.output = nn.Module()
        self.output.conv = nn.Sequential(nn.Conv3d(filters[0], classes, 1, bias=True))

    def forward(self, x):
        x = self.input_block(x)
        skips = [x]
        for d in self.downsample:
            x = d(x)
            skips.append(x)
        x = self.bottleneck(x)
        for u, skip in zip(self.upsample, reversed(skips)):
            x = u(x, skip)
        return self.output.conv(x)


def dice_ce(logits, labels):
    classes = logits.shape[1]
    ce = F.cross_entropy(logits, labels)
    prob = torch.softmax(logits, dim=1)[:, 1:]
    target = F.one_hot(labels, classes).permute(0, 4, 1, 2, 3).to(logits.dtype)[:, 1:]
    dims = (2, 3, 4)
    dice = (2 * (prob * target).sum(dims) + 1e-6) / (target.sum(dims) + prob.sum(dims) + 1e-6)
    return (torch.mean(1 - dice) + ce) / 2


def importance(roi):
    g = np.exp(-0.5 * ((np.arange(roi) - (roi - 1) / 2) / (0.125 * roi)) ** 2)
    w = np.cbrt(np.einsum("i,j,k->ijk", g, g, g))
    return torch.from_numpy(w / w.max()).float()


def sliding_window(model, image, roi, overlap=0.5, pad_value=-2.2):
    shape = list(image.shape[2:])
    stride = int(roi * (1 - overlap))
    cut = [n % stride if n % stride < stride // 2 else 0 for n in shape]
    image = image[:, :, cut[0] // 2:shape[0] - (cut[0] - cut[0] // 2),
                  cut[1] // 2:shape[1] - (cut[1] - cut[1] // 2),
                  cut[2] // 2:shape[2] - (cut[2] - cut[2] // 2)]
    cropped = list(image.shape[2:])
    pad = [(stride - n % stride) % stride for n in cropped]
    pad = [p if n + p >= roi else p + stride for n, p in zip(cropped, pad)]
    image = F.pad(image, [pad[2] // 2, pad[2] - pad[2] // 2, pad[1] // 2, pad[1] - pad[1] // 2,
                          pad[0] // 2, pad[0] - pad[0] // 2], value=pad_value)
    padded = list(image.shape[2:])
    result = torch.zeros(1, 3, *padded)
    norm = torch.zeros_like(result)
    g = importance(roi)
    with torch.no_grad():
        for i in range(0, padded[0] - roi + 1, stride):
            for j in range(0, padded[1] - roi + 1, stride):
                for k in range(0, padded[2] - roi + 1, stride):
                    window = image[:, :, i:i + roi, j:j + roi, k:k + roi]
                    result[..., i:i + roi, j:j + roi, k:k + roi] += model(window) * g
                    norm[..., i:i + roi, j:j + roi, k:k + roi] += g
    result /= norm
    b = [p // 2 for p in pad]
    return (result[..., b[0]:b[0] + cropped[0], b[1]:b[1] + cropped[1], b[2]:b[2] + cropped[2]],
            cut)


def sliding_main():
    weights_path, volume_path, out_path = sys.argv[2:5]
    filters, classes, roi = [int(f) for f in sys.argv[5].split(",")], int(sys.argv[6]), int(sys.argv[7])
    model = UNet3D(filters, classes)
    model.load_state_dict(read(weights_path), strict=True)
    volume = read(volume_path)
    logits, cut = sliding_window(model, volume["image"], roi)
    labels = volume["labels"].long()
    labels = labels[:, cut[0] // 2:labels.shape[1] - (cut[0] - cut[0] // 2),
                    cut[1] // 2:labels.shape[2] - (cut[1] - cut[1] // 2),
                    cut[2] // 2:labels.shape[3] - (cut[2] - cut[2] // 2)]
    pred = F.one_hot(torch.argmax(logits, dim=1), classes).permute(0, 4, 1, 2, 3)[:, 1:].double()
    target = F.one_hot(labels, classes).permute(0, 4, 1, 2, 3)[:, 1:].double()
    dims = (2, 3, 4)
    dice = (2 * (pred * target).sum(dims) + 1e-6) / (target.sum(dims) + pred.sum(dims) + 1e-6)
    write(out_path, {"logits": logits, "dice": dice.reshape(-1)})


def main():
    if sys.argv[1] == "sliding":
        return sliding_main()
    weights_path, batch_path, out_path = sys.argv[1:4]
    filters, classes = [int(f) for f in sys.argv[4].split(",")], int(sys.argv[5])
    model = UNet3D(filters, classes)
    model.load_state_dict(read(weights_path), strict=True)
    batch = read(batch_path)
    x, labels = batch["images"], batch["labels"].long()
    out = {}
    for prefix, net, inputs in (("", model, x), ("f64/", copy.deepcopy(model).double(), x.double())):
        logits = net(inputs)
        loss = dice_ce(logits, labels)
        loss.backward()
        out[prefix + "logits"] = logits
        out[prefix + "loss"] = loss.reshape(1)
        for name, p in net.named_parameters():
            out[prefix + "grad/" + name] = p.grad
    write(out_path, out, {"parameters": str(sum(p.numel() for p in model.parameters()))})


if __name__ == "__main__":
    main()
