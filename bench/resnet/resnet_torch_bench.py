"""PyTorch peer for bench/resnet/resnet_train_bench.cc.

Times a training step (forward, backward, SGD with momentum) of resnet50 (or
the same network at another width) on the CPU in fp32, channels_last and
contiguous: one warm-up step, then the median of STEPS steps. Uses
torchvision when installed, else the torch.nn definition of
tests/resnet/resnet_parity.py (same layers and names). Prints one line per
memory format: "<format> <seconds per step>". Run with /usr/bin/python3.

usage: resnet_torch_bench.py THREADS WIDTH IMAGE BATCH STEPS
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
    threads, width, image, batch, steps = (int(a) for a in sys.argv[1:6])
    torch.set_num_threads(threads)
    for name, fmt in (("channels_last", torch.channels_last),
                      ("contiguous", torch.contiguous_format)):
        model, _ = build(width, [3, 4, 6, 3], 1000)
        model = model.to(memory_format=fmt).train()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        x = (torch.rand(batch, 3, image, image) * 2 - 1).contiguous(memory_format=fmt)
        y = torch.randint(0, 1000, (batch,))
        times = []
        for i in range(steps + 1):
            start = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(x), y, label_smoothing=0.1).backward()
            opt.step()
            if i > 0:
                times.append(time.perf_counter() - start)
        print(name, statistics.median(times), flush=True)


if __name__ == "__main__":
    main()
