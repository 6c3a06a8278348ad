"""PyTorch oracle for tests/resnet/resnet_parity_test.cc.

Loads the C++ model's weights (torchvision state_dict names, strict) and one
batch, then computes with PyTorch autograd:
  eval/logits            inference mode (running statistics), before training
  train/logits, loss     training mode, cross-entropy with label smoothing
  grad/<parameter>       gradients of that loss
  after/<buffer>         running statistics after the training forward
and writes them as safetensors. The network is torchvision's resnet50 when
torchvision is installed and the width is 64; otherwise the same layers and
names built here from torch.nn (torchvision's Bottleneck: stride in the 3x3).
Run with /usr/bin/python3 (Debian's python3-torch).

usage: resnet_parity.py WEIGHTS BATCH OUTPUT WIDTH B1,B2,B3,B4 CLASSES SMOOTHING
"""
import copy
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from safetensors_io import read, write  # noqa: E402


class Bottleneck(nn.Module):
    def __init__(self, inplanes, width, stride):
        super().__init__()
        out = 4 * width
        self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.relu = nn.ReLU()
        self.downsample = None
        if stride != 1 or inplanes != out:
            self.downsample = nn.Sequential(
                nn.Conv2d(inplanes, out, 1, stride=stride, bias=False), nn.BatchNorm2d(out))

    def forward(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        shortcut = x if self.downsample is None else self.downsample(x)
        return self.relu(y + shortcut)


class ResNet(nn.Module):
    def __init__(self, base, blocks, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(3, base, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(base)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        inplanes = base
        for s, count in enumerate(blocks):
            width = base << s
            layers = []
            for b in range(count):
                layers.append(Bottleneck(inplanes, width, 2 if (s > 0 and b == 0) else 1))
                inplanes = 4 * width
            setattr(self, "layer%d" % (s + 1), nn.Sequential(*layers))
        self.fc = nn.Linear(inplanes, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        for s in range(4):
            x = getattr(self, "layer%d" % (s + 1))(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def build(base, blocks, classes):
    if base == 64 and blocks == [3, 4, 6, 3]:
        try:
            import torchvision
            return torchvision.models.resnet50(num_classes=classes), "torchvision"
        except ImportError:
            pass
    return ResNet(base, blocks, classes), "torch.nn"


def main():
    weights_path, batch_path, out_path = sys.argv[1:4]
    base, blocks = int(sys.argv[4]), [int(b) for b in sys.argv[5].split(",")]
    classes, smoothing = int(sys.argv[6]), float(sys.argv[7])
    torch.manual_seed(0)
    model, oracle = build(base, blocks, classes)
    model.load_state_dict(read(weights_path), strict=True)
    batch = read(batch_path)
    x, labels = batch["images"], batch["labels"].long()
    out = {}

    model64 = copy.deepcopy(model).double()
    for prefix, net, inputs in (("", model, x), ("f64/", model64, x.double())):
        net.eval()
        with torch.no_grad():
            out[prefix + "eval/logits"] = net(inputs)
        net.train()
        logits = net(inputs)
        loss = F.cross_entropy(logits, labels, label_smoothing=smoothing)
        loss.backward()
        out[prefix + "train/logits"] = logits
        out[prefix + "train/loss"] = loss.reshape(1)
        for name, p in net.named_parameters():
            out[prefix + "grad/" + name] = p.grad
        for name, b in net.named_buffers():
            if b.dtype in (torch.float32, torch.float64):
                out[prefix + "after/" + name] = b
    write(out_path, out, {"oracle": oracle})


if __name__ == "__main__":
    main()
