"""PyTorch peer for bench/core/resnet_convs_bench.cc.

Times one convolution pass with PyTorch (CPU, fp32) the way the C++ side
times ours: one warm-up, then the median of REPEATS runs. Reads one case per
stdin line, "n c h w k r stride pad pass layout" with pass in fwd|bwd_data|
bwd_weight and layout in nchw|nhwc (torch.channels_last), and prints one
line per case with the median seconds. Run with /usr/bin/python3.

usage: resnet_convs_torch.py THREADS REPEATS < cases
"""
import sys
import time

import torch


def runner(n, c, h, w, k, r, stride, pad, which, layout):
    fmt = torch.channels_last if layout == "nhwc" else torch.contiguous_format
    x = (torch.rand(n, c, h, w) - 0.5).contiguous(memory_format=fmt)
    wt = (torch.rand(k, c, r, r) - 0.5).contiguous(memory_format=fmt)
    y = torch.nn.functional.conv2d(x, wt, stride=stride, padding=pad)
    dy = (torch.rand(y.shape) - 0.5).contiguous(memory_format=fmt)
    if which == "fwd":
        return lambda: torch.nn.functional.conv2d(x, wt, stride=stride, padding=pad)
    mask = [which == "bwd_data", which == "bwd_weight", False]
    return lambda: torch.ops.aten.convolution_backward(
        dy, x, wt, None, [stride, stride], [pad, pad], [1, 1], False, [0, 0], 1, mask)


def main():
    torch.set_num_threads(int(sys.argv[1]))
    repeats = int(sys.argv[2])
    torch.set_grad_enabled(False)
    for line in sys.stdin:
        f = line.split()
        if not f:
            continue
        run = runner(*[int(v) for v in f[:8]], f[8], f[9])
        run()
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
        times.sort()
        print(times[len(times) // 2], flush=True)


if __name__ == "__main__":
    main()
