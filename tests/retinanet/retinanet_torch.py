"""The oracle of retinanet_parity_test: torchvision's RetinaNet pieces on the
weights and inputs the test wrote (at the reference's stem width 64 the body
is torchvision's ResNet; at another, the same layers built from its
Bottleneck, as ResNet builds them) (safetensors IN: the model's state dict
under the reference's names, "input/images", "input/boxes", "input/labels",
"config/*"), in fp32 on the CPU. Writes OUT: the two losses, the gradient
of every trainable parameter (under the reference's names), and each
image's post-processed detections (eval mode)."""
import os
import re
import sys

import torch
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.backbone_utils import BackboneWithFPN
from torchvision.models.detection.image_list import ImageList
from torchvision.models.detection.retinanet import RetinaNet
from torch import nn
from torchvision.models.resnet import Bottleneck, ResNet
from torchvision.ops.feature_pyramid_network import LastLevelP6P7
from torchvision.ops.misc import FrozenBatchNorm2d

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from safetensors_io import read, write  # noqa: E402

SIZES = tuple((x, int(x * 2 ** (1.0 / 3)), int(x * 2 ** (2.0 / 3))) for x in [32, 64, 128, 256, 512])


def torch_name(name):
    """The reference's plain-conv names to torchvision 0.14's Conv2dNormActivation ones."""
    name = re.sub(r"^backbone\.fpn\.(inner|layer)_blocks\.(\d+)\.", r"backbone.fpn.\1_blocks.\2.0.", name)
    return re.sub(r"_head\.conv\.(\d+)\.",
                  lambda m: f"_head.conv.{int(m.group(1)) // 2}.0.", name)


class Body(nn.Module):
    """torchvision's ResNet at stem width `stem` (stage s: planes stem * 2^s)."""

    def __init__(self, stem, blocks, groups, width_per_group):
        super().__init__()
        self.conv1 = nn.Conv2d(3, stem, 7, 2, 3, bias=False)
        self.bn1 = FrozenBatchNorm2d(stem)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        inplanes = stem
        for i, n in enumerate(blocks):
            planes, stride = stem << i, 1 if i == 0 else 2
            down = nn.Sequential(nn.Conv2d(inplanes, planes * 4, 1, stride, bias=False),
                                 FrozenBatchNorm2d(planes * 4))
            layers = [Bottleneck(inplanes, planes, stride, down, groups, width_per_group,
                                 norm_layer=FrozenBatchNorm2d)]
            layers += [Bottleneck(planes * 4, planes, groups=groups, base_width=width_per_group,
                                  norm_layer=FrozenBatchNorm2d) for _ in range(1, n)]
            setattr(self, f"layer{i + 1}", nn.Sequential(*layers))
            inplanes = planes * 4


def main():
    t = read(sys.argv[1])
    cfg = {k.split("/", 1)[1]: int(v.item()) for k, v in t.items() if k.startswith("config/")}
    blocks = [cfg["blocks0"], cfg["blocks1"], cfg["blocks2"], cfg["blocks3"]]
    stem, fpn = cfg["stem"], cfg["fpn"]
    if stem == 64:
        body = ResNet(Bottleneck, blocks, groups=cfg["groups"],
                      width_per_group=cfg["width_per_group"], norm_layer=FrozenBatchNorm2d)
    else:
        body = Body(stem, blocks, cfg["groups"], cfg["width_per_group"])
    backbone = BackboneWithFPN(body, {"layer2": "0", "layer3": "1", "layer4": "2"},
                               [stem * 8, stem * 16, stem * 32], fpn,
                               extra_blocks=LastLevelP6P7(fpn, fpn))
    anchors = AnchorGenerator(SIZES, ((0.5, 1.0, 2.0),) * len(SIZES))
    model = RetinaNet(backbone, cfg["classes"], anchor_generator=anchors)
    weights = {torch_name(k): v for k, v in t.items() if not k.split("/")[0] in ("input", "config")}
    missing, unexpected = model.load_state_dict(weights, strict=False)
    missing = [m for m in missing if "num_batches_tracked" not in m]
    assert not missing and not unexpected, (missing, unexpected)
    trainable = ["layer4", "layer3", "layer2", "layer1", "conv1"][:cfg["trainable_layers"]]
    for name, p in model.backbone.body.named_parameters():
        p.requires_grad_(any(name.startswith(layer) for layer in trainable))

    images = t["input/images"]
    size = images.shape[-1]
    targets = []
    for boxes, labels in zip(t["input/boxes"], t["input/labels"].long()):
        keep = labels >= 0
        targets.append({"boxes": boxes[keep], "labels": labels[keep]})
    out = {}
    model.train()
    features = list(model.backbone(images).values())
    heads = model.head(features)
    image_list = ImageList(images, [(size, size)] * images.shape[0])
    anchors = model.anchor_generator(image_list, features)
    losses = model.compute_loss(targets, heads, anchors)
    (losses["classification"] + losses["bbox_regression"]).backward()
    out["loss/classification"] = losses["classification"].detach().reshape(1)
    out["loss/regression"] = losses["bbox_regression"].detach().reshape(1)
    ours = {torch_name(k): k for k in t if not k.split("/")[0] in ("input", "config")}
    for name, p in model.named_parameters():
        if p.requires_grad:
            out["grad/" + ours[name]] = p.grad

    model.eval()
    with torch.no_grad():
        features = list(model.backbone(images).values())
        heads = model.head(features)
        anchors = model.anchor_generator(image_list, features)
        per_level = [f.shape[2] * f.shape[3] * 9 for f in features]
        split = {k: list(v.split(per_level, dim=1)) for k, v in heads.items()}
        detections = model.postprocess_detections(split, [list(a.split(per_level)) for a in anchors],
                                                   image_list.image_sizes)
    for i, d in enumerate(detections):
        out[f"detections/{i}/boxes"] = d["boxes"].reshape(-1, 4)
        out[f"detections/{i}/scores"] = d["scores"]
        out[f"detections/{i}/labels"] = d["labels"]
    write(sys.argv[2], out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
