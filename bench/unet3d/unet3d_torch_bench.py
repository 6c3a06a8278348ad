"""The PyTorch peer of unet3d_train_bench: the same 3D U-Net (the torch.nn
model of tests/unet3d/unet3d_parity.py), DiceCE loss and SGD with Nesterov
momentum, one training step timed per iteration; prints the median seconds
per step. Run with /usr/bin/python3 (Debian's python3-torch). LAYOUT ndhwc
runs model and input in torch.channels_last_3d, ncdhw in the default format;
PRECISION bf16 runs the forward under torch.autocast (bf16 on the CPU).

usage: unet3d_torch_bench.py FILTERS(comma-separated) ROI BATCH STEPS THREADS [LAYOUT [PRECISION]]
"""
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "unet3d"))
from unet3d_parity import UNet3D, dice_ce  # noqa: E402


def main():
    filters = [int(f) for f in sys.argv[1].split(",")]
    roi, batch, steps, threads = (int(a) for a in sys.argv[2:6])
    fmt = torch.channels_last_3d if sys.argv[6:7] == ["ndhwc"] else torch.contiguous_format
    bf16 = sys.argv[7:] == ["bf16"]
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model = UNet3D(filters, 3).to(memory_format=fmt)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9, nesterov=True)
    x = torch.rand(batch, 1, roi, roi, roi).contiguous(memory_format=fmt)
    y = torch.randint(0, 3, (batch, roi, roi, roi))
    times = []
    for step in range(steps + 1):
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = model(x)
        loss = dice_ce(logits.float(), y)
        loss.backward()
        optimizer.step()
        if step > 0:  # step 0 warms caches and the allocator, as ours
            times.append(time.perf_counter() - start)
    times.sort()
    print(f"{times[len(times) // 2]:.6f}")


if __name__ == "__main__":
    main()
