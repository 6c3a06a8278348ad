#!/usr/bin/env python3
"""run_benchmark --comm beside torch.distributed (gloo) in one run.

Runs `mpirun -np N run_benchmark --comm` over the sizes given, then the same
collectives with torch.distributed's gloo backend on N processes of this
machine, timed the same way (warm-up calls, a barrier, timed calls, the time
per call averaged over the ranks), and prints one Markdown table of bus
bandwidth (nccl-tests' factors). gloo has no reduce-scatter.

usage: compare_comm.py --bin build/bin/run_benchmark [-n 2] [--maxbytes 16M] [--stepfactor 4]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

FACTOR = {"all_reduce": lambda n: 2 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
          "reduce_scatter": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n}


def torch_rank(rank, world, port, sizes, warmup, iters, out):
    import torch
    import torch.distributed as dist
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    rows = []
    for name in ("all_reduce", "all_gather", "all_to_all"):
        for size in sizes:
            blocks = 1 if name == "all_reduce" else world
            per_rank = size // 4 // blocks
            if per_rank == 0:
                continue
            if name == "all_reduce":
                buf = torch.zeros(per_rank)
                op = lambda: dist.all_reduce(buf)
            elif name == "all_gather":
                send, recv = torch.zeros(per_rank), [torch.zeros(per_rank) for _ in range(world)]
                op = lambda: dist.all_gather(recv, send)
            else:
                send, recv = torch.zeros(per_rank * world), torch.zeros(per_rank * world)
                op = lambda: dist.all_to_all_single(recv, send)
            for _ in range(warmup):
                op()
            dist.barrier()
            start = time.perf_counter()
            for _ in range(iters):
                op()
            t = torch.tensor([(time.perf_counter() - start) / iters])
            dist.all_reduce(t)
            rows.append((name, per_rank * blocks * 4, t.item() / world))
    if rank == 0:
        with open(out, "w") as f:
            json.dump(rows, f)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("-n", type=int, default=2)
    ap.add_argument("--maxbytes", default="16M")
    ap.add_argument("--stepfactor", type=int, default=4)
    ap.add_argument("-w", type=int, default=5)
    ap.add_argument("-i", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ours = os.path.join(tmp, "ours.json")
        subprocess.run([shutil.which("mpirun"), "--allow-run-as-root", "--oversubscribe", "-np",
                        str(args.n), "-x", "OMP_NUM_THREADS=1", args.bin, "--comm", "--maxbytes",
                        args.maxbytes, "--stepfactor", str(args.stepfactor), "-w", str(args.w),
                        "-i", str(args.i), "-o", ours], check=True, stdout=subprocess.DEVNULL)
        report = json.load(open(ours))
        sizes = sorted({r["bytes"] for r in report["results"] if r["collective"] == "all_reduce"})
        import torch.multiprocessing as mp
        peer = os.path.join(tmp, "peer.json")
        mp.spawn(torch_rank, args=(args.n, 29611, sizes, args.w, args.i, peer), nprocs=args.n)
        gloo = {(name, size): t for name, size, t in json.load(open(peer))}
    n = args.n
    print(f"| collective | size (B) | ours: time (us) | busbw (GB/s) | gloo: time (us) | "
          f"busbw (GB/s) | ours / gloo |\n|---|---:|---:|---:|---:|---:|---:|")
    for r in report["results"]:
        key = (r["collective"], r["bytes"])
        peer_cell = "| - | - | - |"
        if key in gloo:
            t = gloo[key]
            busbw = r["bytes"] / t / 1e9 * FACTOR[r["collective"]](n)
            peer_cell = f"| {t * 1e6:.1f} | {busbw:.3f} | {t / (r['time_us'] * 1e-6):.2f}x |"
        print(f"| {r['collective']} | {r['bytes']} | {r['time_us']:.1f} | {r['busbw_gbps']:.3f} "
              f"{peer_cell}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
