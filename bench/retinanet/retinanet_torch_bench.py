"""The peer of retinanet_step_bench: torchvision's RetinaNet at the
reference's widths (ResNeXt50-32x4d body with frozen batch norms,
trainable_backbone_layers 3, FPN 256, 264 classes): forward, loss and
backward of one batch of random images with a few boxes each, contiguous and
channels_last; one warm-up step, then the median of STEPS. On the CPU in
fp32; with `cuda` on the GPU under AMP (bf16 autocast, cudnn.benchmark).
Prints "<format> <seconds per step>". Run with /usr/bin/python3.

usage: retinanet_torch_bench.py THREADS IMAGE BATCH STEPS [cuda]
"""
import statistics
import sys
import time

import torch
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.backbone_utils import BackboneWithFPN
from torchvision.models.detection.image_list import ImageList
from torchvision.models.detection.retinanet import RetinaNet
from torchvision.models.resnet import Bottleneck, ResNet
from torchvision.ops.feature_pyramid_network import LastLevelP6P7
from torchvision.ops.misc import FrozenBatchNorm2d

SIZES = tuple((x, int(x * 2 ** (1.0 / 3)), int(x * 2 ** (2.0 / 3))) for x in [32, 64, 128, 256, 512])


def main():
    threads, image, batch, steps = (int(a) for a in sys.argv[1:5])
    device = sys.argv[5] if len(sys.argv) > 5 else "cpu"
    torch.set_num_threads(threads)
    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    body = ResNet(Bottleneck, [3, 4, 6, 3], groups=32, width_per_group=4, norm_layer=FrozenBatchNorm2d)
    backbone = BackboneWithFPN(body, {"layer2": "0", "layer3": "1", "layer4": "2"},
                               [512, 1024, 2048], 256, extra_blocks=LastLevelP6P7(256, 256))
    model = RetinaNet(backbone, 264, anchor_generator=AnchorGenerator(SIZES, ((0.5, 1.0, 2.0),) * 5))
    for name, p in model.backbone.body.named_parameters():
        p.requires_grad_(any(name.startswith(l) for l in ("layer2", "layer3", "layer4")))
    model.train().to(device)
    images = torch.randn(batch, 3, image, image, device=device)
    targets = [{"boxes": torch.tensor([[10.0, 20.0, 200.0, 180.0], [100.0, 120.0, 300.0, 330.0]],
                                      device=device),
                "labels": torch.tensor([3, 7], device=device)} for _ in range(batch)]
    for fmt_name, fmt in (("contiguous", torch.contiguous_format), ("channels_last", torch.channels_last)):
        model = model.to(memory_format=fmt)
        x = images.contiguous(memory_format=fmt)
        times = []
        for step in range(steps + 1):
            start = time.perf_counter()
            model.zero_grad(set_to_none=True)
            with torch.autocast(device, dtype=torch.bfloat16, enabled=device == "cuda"):
                features = list(model.backbone(x).values())
                heads = model.head(features)
            heads = {k: v.float() for k, v in heads.items()}
            anchors = model.anchor_generator(ImageList(x, [(image, image)] * batch), features)
            losses = model.compute_loss(targets, heads, anchors)
            (losses["classification"] + losses["bbox_regression"]).backward()
            if device == "cuda":
                torch.cuda.synchronize()
            if step > 0:
                times.append(time.perf_counter() - start)
        print(f"{fmt_name} {statistics.median(times):.6f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
