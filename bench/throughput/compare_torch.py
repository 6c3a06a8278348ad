#!/usr/bin/env python3
"""run_benchmark beside PyTorch on the same model, batch and method, in one run.

Runs run_benchmark (synthetic data, fp32 or bf16) for the batch sizes and
device counts given, then torch_peer.py for every one-device configuration
on the same cores (bf16: under torch.autocast), and prints a Markdown table
with PyTorch's throughput as a column (its faster memory format).

usage: compare_torch.py --bin build/bin/run_benchmark --size small|full --mode train|infer
                        -b 8,64 [-n 1,2] [-w W] [-i I] [-r R] [--dtype fp32|bf16]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# The members run_benchmark builds: (base width, image size, classes).
MEMBERS = {"small": (8, 32, 10), "full": (64, 224, 1000)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--size", choices=MEMBERS, default="small")
    ap.add_argument("--mode", choices=["train", "infer"], default="train")
    ap.add_argument("-b", default="32")
    ap.add_argument("-n", default="1")
    ap.add_argument("-w", type=int, default=5)
    ap.add_argument("-i", type=int, default=50)
    ap.add_argument("-r", type=int, default=5)
    ap.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    args = ap.parse_args()
    threads = os.cpu_count()
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "r.json")
        subprocess.run([args.bin, "--size", args.size, "--mode", args.mode, "-b", args.b,
                        "-n", args.n, "-w", str(args.w), "-i", str(args.i), "-r", str(args.r),
                        "--dtype", args.dtype, "-o", report], check=True,
                       stdout=subprocess.DEVNULL)
        rep = json.load(open(report))
    width, image, classes = MEMBERS[args.size]
    print(f"{rep['model']}, {args.mode}, {args.dtype}, synthetic data, {rep['machine']}, "
          f"{args.w} warm-up + {args.r} x {args.i} steps, median\n")
    print("| processes | batch | run_benchmark samples/s | PyTorch samples/s | ours / PyTorch |")
    print("|---:|---:|---:|---:|---:|")
    for c in rep["configurations"]:
        ours = c["throughput"]["median"]
        torch_text, ratio = "-", "-"
        if c["devices"] == 1:
            out = subprocess.run(
                ["/usr/bin/python3", os.path.join(HERE, "torch_peer.py"), args.mode, str(width),
                 str(image), str(classes), str(c["batch_per_device"]), str(args.w), str(args.i),
                 str(args.r), str(threads), args.dtype], capture_output=True, text=True)
            peers = {}
            for line in out.stdout.splitlines():
                name, value = line.split()
                peers[name] = float(value)
            if peers:
                best = max(peers, key=peers.get)
                torch_text = f"{peers[best]:.1f} ({best})"
                ratio = f"{ours / peers[best]:.2f}x"
            else:
                torch_text = "unavailable"
        print(f"| {c['devices']} | {c['batch_per_device']} | {ours:.1f} | {torch_text} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
