"""PyTorch peer for run_benchmark: the same ResNet member, batch and method.

Builds the network of tests/resnet/resnet_parity.py (torchvision's resnet50
for the full width), then measures like run_benchmark does: WARMUP untimed
steps, then REPEATS windows of ITERS steps; samples/s per window = samples /
wall time; prints the median per memory format: "<format> <samples/s>".
train = forward, cross-entropy with label smoothing 0.1, backward, SGD with
momentum (the step run_benchmark times uses LARS); infer = eval-mode forward
and the top-1 count read back to the host, under torch.inference_mode.
PRECISION bf16 runs the forward and the loss under torch.autocast (bf16 on
the CPU). Run with /usr/bin/python3.

usage: torch_peer.py MODE WIDTH IMAGE CLASSES BATCH WARMUP ITERS REPEATS THREADS [PRECISION]
"""
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "resnet"))
from resnet_parity import build  # noqa: E402


def main():
    mode = sys.argv[1]
    width, image, classes, batch, warmup, iters, repeats, threads = (
        int(a) for a in sys.argv[2:10])
    bf16 = len(sys.argv) > 10 and sys.argv[10] == "bf16"
    torch.set_num_threads(threads)
    for name, fmt in (("channels_last", torch.channels_last),
                      ("contiguous", torch.contiguous_format)):
        model, _ = build(width, [3, 4, 6, 3], classes)
        model = model.to(memory_format=fmt)
        x = (torch.rand(batch, 3, image, image) * 2 - 1).contiguous(memory_format=fmt)
        y = torch.randint(0, classes, (batch,))
        if mode == "train":
            model.train()
            opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

            def step():
                opt.zero_grad(set_to_none=True)
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                    loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
                loss.backward()
                opt.step()
        else:
            model.eval()

            def step():
                with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16,
                                                            enabled=bf16):
                    (model(x).argmax(1) == y).sum().item()
        for _ in range(warmup):
            step()
        rates = []
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(iters):
                step()
            rates.append(batch * iters / (time.perf_counter() - start))
        print(name, statistics.median(rates), flush=True)


if __name__ == "__main__":
    main()
