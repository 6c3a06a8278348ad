"""PyTorch peer for bench/unet3d/unet3d_gpu_bench.cc.

Times the 3D U-Net training step (the parity tests' torch.nn model, DiceCE
loss, SGD with Nesterov momentum) on the current CUDA device:
channels_last_3d, cudnn.benchmark, input already on the device. Two
precisions: AMP bf16 autocast (the MLPerf submissions' recipe) and fp32 with
TF32 off (the arithmetic of our fp32 path). CUDA events around each step
after a warm-up; prints "<name> <median ms per step>" per line. Exits quietly
when torch or CUDA is missing.

usage: unet3d_gpu_torch_bench.py FILTERS(comma-separated) ROI BATCH STEPS [PRECISIONS]
PRECISIONS (default bf16,fp32): fp32 times the fp32 step, bf16 or fp16 the AMP
one; a bf16-only run leaves out fp32, whose algorithm search alone can outlast
a GPU check's time limit.
"""
import os
import sys

try:
    import torch
except ImportError:
    sys.exit(0)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpu"))
from cuda_timing import median_step_ms  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "unet3d"))
from unet3d_parity import UNet3D, dice_ce  # noqa: E402


def time_steps(filters, roi, batch, steps, amp):
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    fmt = torch.channels_last_3d
    model = UNet3D(filters, 3).cuda().to(memory_format=fmt).train()
    opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9, nesterov=True)
    gen = torch.Generator(device="cuda").manual_seed(7)
    x = torch.rand(batch, 1, roi, roi, roi, device="cuda", generator=gen).contiguous(
        memory_format=fmt)
    y = torch.randint(0, 3, (batch, roi, roi, roi), device="cuda", generator=gen)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            logits = model(x)
        loss = dice_ce(logits.float(), y)
        loss.backward()
        opt.step()

    return median_step_ms(step, steps, warmup=3)


def main():
    if not torch.cuda.is_available():
        return
    filters = [int(f) for f in sys.argv[1].split(",")]
    roi, batch, steps = (int(a) for a in sys.argv[2:5])
    precisions = set((sys.argv[5] if len(sys.argv) > 5 else "bf16,fp32").split(","))
    if precisions & {"bf16", "fp16"}:
        print("amp_bf16_channels_last_3d", time_steps(filters, roi, batch, steps, True), flush=True)
    if "fp32" in precisions:
        print("fp32_channels_last_3d", time_steps(filters, roi, batch, steps, False), flush=True)


if __name__ == "__main__":
    main()
