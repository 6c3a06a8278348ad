#!/usr/bin/env python3
"""PyTorch peer of gpu_ops_bench on the same GPU, same ops and shapes.

Prints the same CSV (op,shape,dtype,ms,rate,unit). With --ours PATH it first
runs the C++ benchmark (PATH = build-gpu/bin/gpu_ops_bench) and prints one
joined table with the ratio ours/torch of the rates (>1: the twins are faster),
so both sides are measured in one run on one device.

  python3 bench/gpu/torch_peer.py --ours build-gpu/bin/gpu_ops_bench [--repeats 20]

Conventions matched to the C++ side: cudnn.benchmark=True (the C++ side times
every cuDNN algorithm on first use), TF32 off for fp32, channels-last
activations and weights, median of CUDA-event timings after 3 warm-ups. The
LAMB/LARS peers are multi-tensor torch._foreach implementations of the same
update rules (PyTorch ships no LAMB/LARS).
"""
import argparse
import csv
import io
import subprocess
import sys

import torch

REPEATS = 20


def time_ms(fn):
    for _ in range(3):
        fn()
    times = []
    for _ in range(REPEATS):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    times.sort()
    return times[len(times) // 2]


def report(rows, op, shape, dtype, ms, amount, unit):
    rate = amount / (ms * 1e-3) / (1e12 if unit == "TFLOP/s" else 1e9)
    rows.append((op, shape, dtype, ms, rate, unit))
    print(f"{op},{shape},{dtype},{ms:.4f},{rate:.2f},{unit}", flush=True)


def rand(shape, dtype, lo=-1.0, hi=1.0):
    return torch.empty(shape, device="cuda", dtype=torch.float32).uniform_(lo, hi).to(dtype)


DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def bench_conv(rows, c, hw, k, r, stride, name):
    dt = DTYPES[name]
    n = 256
    pad = r // 2
    shape = f"n256_c{c}_h{hw}_k{k}_r{r}_s{stride}"
    cl = torch.channels_last
    x = rand((n, c, hw, hw), dt).contiguous(memory_format=cl)
    w = rand((k, c, r, r), dt, -0.1, 0.1).contiguous(memory_format=cl)
    y = torch.nn.functional.conv2d(x, w, None, stride, pad)
    p = y.shape[2]
    dy = rand(y.shape, dt).contiguous(memory_format=cl)
    flops = 2.0 * n * k * c * r * r * p * p

    def conv_bwd(mask):
        return torch.ops.aten.convolution_backward(
            dy, x, w, None, [stride, stride], [pad, pad], [1, 1], False, [0, 0], 1, mask)

    report(rows, "conv_fwd", shape, name,
           time_ms(lambda: torch.nn.functional.conv2d(x, w, None, stride, pad)), flops, "TFLOP/s")
    report(rows, "conv_dgrad", shape, name, time_ms(lambda: conv_bwd([True, False, False])),
           flops, "TFLOP/s")
    report(rows, "conv_wgrad", shape, name, time_ms(lambda: conv_bwd([False, True, False])),
           flops, "TFLOP/s")


def bench_gemm(rows, m, n, k, name):
    dt = DTYPES[name]
    a, b = rand((m, k), dt), rand((k, n), dt)
    c = torch.empty((m, n), device="cuda", dtype=dt)
    report(rows, "gemm", f"{m}x{n}x{k}", name, time_ms(lambda: torch.matmul(a, b, out=c)),
           2.0 * m * n * k, "TFLOP/s")


def bench_linear(rows, name):
    # BERT-Large's FFN up-projection with its bias, fp32 (no TF32) or bf16.
    dt = DTYPES[name]
    t, n_in, n_out = 8 * 512, 1024, 4096
    x = rand((t, n_in), dt).requires_grad_(True)
    layer = torch.nn.Linear(n_in, n_out, device="cuda", dtype=dt)
    with torch.no_grad():
        ms_fwd = time_ms(lambda: layer(x))
    y = layer(x)
    dy = rand(y.shape, dt)

    def backward():
        torch.autograd.grad(y, (x, layer.weight, layer.bias), dy, retain_graph=True)

    flops = 2.0 * t * n_in * n_out
    report(rows, "linear_fwd", "t4096_1024x4096_bias", name, ms_fwd, flops, "TFLOP/s")
    report(rows, "linear_bwd", "t4096_1024x4096_bias", name, time_ms(backward), 2 * flops,
           "TFLOP/s")


def bench_attention(rows):
    b, h, t, d = 8, 16, 512, 64
    q, k, v = (rand((b, h, t, d), torch.float32) for _ in range(3))
    mask = torch.ones((b, 1, 1, t), device="cuda")
    scale = 1.0 / d ** 0.5
    q.requires_grad_(True)
    k.requires_grad_(True)
    v.requires_grad_(True)

    def forward():
        scores = torch.matmul(q, k.transpose(-1, -2)) * scale + (1.0 - mask) * -10000.0
        probs = torch.softmax(scores, dim=-1)
        return torch.matmul(torch.nn.functional.dropout(probs, 0.1, True), v)

    with torch.no_grad():
        ms_fwd = time_ms(forward)
    out = forward()
    dout = rand(out.shape, torch.float32)

    def backward():
        torch.autograd.grad(out, (q, k, v), dout, retain_graph=True)

    flops = 4.0 * b * h * t * t * d
    report(rows, "attention_fwd", "b8_h16_t512_d64", "fp32", ms_fwd, flops, "TFLOP/s")
    report(rows, "attention_bwd", "b8_h16_t512_d64", "fp32", time_ms(backward), 2 * flops,
           "TFLOP/s")


def bench_optimizers(rows):
    tensors, weight, bias = 320, 1024 * 1024, 1024
    ws, gs, ms, vs = [], [], [], []
    for _ in range(tensors):
        for size in (weight, bias):
            ws.append(rand((size,), torch.float32))
            gs.append(rand((size,), torch.float32, -1e-3, 1e-3))
            ms.append(rand((size,), torch.float32, -1e-3, 1e-3))
            vs.append(rand((size,), torch.float32, 0.0, 1e-6))
    total = sum(w.numel() for w in ws)
    shape = f"bert_large_{total // 1000000}M"
    excluded = [i % 2 == 1 for i in range(len(ws))]
    state = {"step": 0}
    b1, b2, eps, wd, lr = 0.9, 0.999, 1e-6, 0.01, 1e-4

    def lamb():
        state["step"] += 1
        t = state["step"]
        gnorm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(gs)))
        clip = torch.clamp(1.0 / gnorm, max=1.0)
        g = torch._foreach_mul(gs, clip)
        torch._foreach_mul_(ms, b1)
        torch._foreach_add_(ms, g, alpha=1 - b1)
        torch._foreach_mul_(vs, b2)
        torch._foreach_addcmul_(vs, g, g, value=1 - b2)
        denom = torch._foreach_sqrt(torch._foreach_div(vs, 1 - b2 ** t))
        torch._foreach_add_(denom, eps)
        u = torch._foreach_div(torch._foreach_div(ms, 1 - b1 ** t), denom)
        torch._foreach_add_([u[i] for i in range(len(u)) if not excluded[i]],
                            [ws[i] for i in range(len(ws)) if not excluded[i]], alpha=wd)
        wn = torch._foreach_norm(ws)
        un = torch._foreach_norm(u)
        ratios = [torch.where((a > 0) & (b > 0) & (not ex), a / b, torch.ones_like(a))
                  for a, b, ex in zip(wn, un, excluded)]
        torch._foreach_mul_(u, ratios)
        torch._foreach_add_(ws, u, alpha=-lr)

    def lars():
        wn = torch._foreach_norm(ws)
        gn = torch._foreach_norm(gs)
        d = torch._foreach_add([g for g in gs], ws, alpha=5e-5)
        trust = [torch.where((a > 0) & (b > 0), 0.001 * a / (b + 5e-5 * a + 1e-7),
                             torch.ones_like(a)) if not ex else torch.ones_like(a)
                 for a, b, ex in zip(wn, gn, excluded)]
        torch._foreach_mul_(d, trust)
        torch._foreach_mul_(ms, 0.9)
        torch._foreach_add_(ms, d, alpha=-1.0)
        torch._foreach_add_(ws, ms)

    report(rows, "lamb_step", shape, "fp32", time_ms(lamb), 28.0 * total, "GB/s")
    report(rows, "lars_step", shape, "fp32", time_ms(lars), 20.0 * total, "GB/s")


def run_torch():
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rows = []
    print("op,shape,dtype,ms,rate,unit")
    for name in ("bf16", "fp16"):
        for c, hw, k, r, s in ((64, 56, 64, 3, 1), (128, 56, 128, 3, 2), (128, 28, 128, 3, 1),
                               (256, 14, 256, 3, 1), (512, 7, 512, 3, 1), (256, 56, 64, 1, 1),
                               (64, 56, 256, 1, 1), (1024, 14, 256, 1, 1), (512, 7, 2048, 1, 1)):
            bench_conv(rows, c, hw, k, r, s, name)
    bench_gemm(rows, 8192, 8192, 8192, "bf16")
    bench_gemm(rows, 4096, 4096, 4096, "fp32")
    bench_gemm(rows, 4096, 4096, 1024, "bf16")
    bench_linear(rows, "fp32")
    bench_linear(rows, "bf16")
    bench_attention(rows)
    bench_optimizers(rows)
    return rows


def main():
    global REPEATS
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ours", help="path of gpu_ops_bench to run first and compare with")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    REPEATS = max(1, args.repeats)
    if not torch.cuda.is_available():
        print("torch_peer.py: no CUDA device", file=sys.stderr)
        return 2
    ours = {}
    if args.ours:
        out = subprocess.run([args.ours, "--repeats", str(REPEATS)], check=True,
                             stdout=subprocess.PIPE, text=True).stdout
        for row in csv.DictReader(io.StringIO(out)):
            ours[(row["op"], row["shape"], row["dtype"])] = row
    print(f"# device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"cuDNN {torch.backends.cudnn.version()}")
    rows = run_torch()
    if ours:
        print("\nop,shape,dtype,ours_ms,torch_ms,unit,ours_rate,torch_rate,ratio")
        for op, shape, dtype, ms, rate, unit in rows:
            mine = ours.get((op, shape, dtype))
            if mine is None:
                continue
            print(f"{op},{shape},{dtype},{float(mine['ms']):.4f},{ms:.4f},{unit},"
                  f"{float(mine['rate']):.2f},{rate:.2f},{float(mine['rate']) / rate:.2f}")
        # Ours alone (variants PyTorch has no counterpart for).
        peers = {(op, shape, dtype) for op, shape, dtype, *_ in rows}
        for key, mine in ours.items():
            if key not in peers:
                print(f"{key[0]},{key[1]},{key[2]},{float(mine['ms']):.4f},,{mine['unit']},"
                      f"{float(mine['rate']):.2f},,")
    return 0


if __name__ == "__main__":
    sys.exit(main())
