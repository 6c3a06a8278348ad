"""PyTorch peer for bench/resnet/resnet_gpu_bench.cc.

Times torchvision's resnet50 training step (forward, backward, SGD with
momentum) on the current CUDA device: channels_last, cudnn.benchmark, input
already on the device. Two precisions: AMP bf16 autocast (the usual fast
recipe) and fp32 with TF32 off (the arithmetic of our fp32 path). CUDA events
around each step after a warm-up; prints "<name> <median ms per step>" per
line. Exits quietly when torch, torchvision or CUDA is missing.

usage: resnet_gpu_torch_bench.py BATCH STEPS
"""
import os
import sys

try:
    import torch
    import torch.nn.functional as F
    import torchvision
except ImportError:
    sys.exit(0)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from cuda_timing import median_step_ms  # noqa: E402


def time_steps(batch, steps, amp):
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = torchvision.models.resnet50().cuda().to(memory_format=torch.channels_last).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    gen = torch.Generator(device="cuda").manual_seed(7)
    x = (torch.rand(batch, 3, 224, 224, device="cuda", generator=gen) * 2 - 1)
    x = x.contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch,), device="cuda", generator=gen)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
        loss.backward()
        opt.step()

    return median_step_ms(step, steps, warmup=5)


def main():
    if not torch.cuda.is_available():
        return
    batch, steps = int(sys.argv[1]), int(sys.argv[2])
    print("amp_bf16_channels_last", time_steps(batch, steps, True), flush=True)
    print("fp32_channels_last", time_steps(batch, steps, False), flush=True)


if __name__ == "__main__":
    main()
