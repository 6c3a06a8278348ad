"""Timing shared by the PyTorch peers of the GPU training-step benchmarks."""
import statistics

import torch


def median_step_ms(step, steps, warmup=3):
    """Median milliseconds of step() over `steps` calls after `warmup` ones,
    from CUDA events around each call on the current stream."""
    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(steps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)
