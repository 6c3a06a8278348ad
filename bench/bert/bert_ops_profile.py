"""Where our BERT training step spends its time, op by op: runs
bert_train_bench --notorch under `perf record` with a uprobe at the entry and
the return of every mlperf::ops:: function, and prints the wall time per step
of each op on the main thread (self: less the ops it calls, e.g. the GEMMs
inside AttentionForward), the linear layers split by weight shape. The warm-up
steps are left out (a step starts at the first EmbeddingForward, the word
embeddings' lookup, after the previous step's MaskedLmLoss). A probe costs a few microseconds and a step
makes about 2,000 op calls, so the step times stay as without probes.

Needs perf with uprobes (root, tracefs mounted). The weight shape is read from
the Tensor argument's bytes (data pointer, then the dims), so it follows
reference/core/tensor.h's layout.

usage: bert_ops_profile.py BINARY [bert_train_bench flags...]
  e.g. bert_ops_profile.py build/bin/bert_train_bench --warmup=1 --steps=2
"""
import collections
import re
import subprocess
import sys
import tempfile

GROUP = "bert_ops"
# Ops whose label gets the weight shape (second Tensor argument, in %rsi).
SHAPED = ("LinearForward", "LinearBackward")


def ops_symbols(binary):
    """{op name: address} of the mlperf::ops:: functions defined in the binary."""
    out = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True,
                         check=True).stdout
    ops = {}
    for line in out.splitlines():
        parts = line.split()
        m = re.match(r"_ZN6mlperf3ops(\d+)", parts[-1]) if len(parts) == 3 else None
        if m and parts[1] == "T":
            length, start = int(m[1]), m.end()
            ops.setdefault(parts[-1][start:start + length], parts[0])
    return ops


def add_probes(binary, ops):
    for op, address in ops.items():
        fetch = " w0=+8(%si):s64 w1=+16(%si):s64" if op in SHAPED else ""
        for name, suffix in ((f"{op}_in", fetch), (f"{op}_out", "%return")):
            target = f"0x{address}%return" if suffix == "%return" else f"0x{address}{suffix}"
            subprocess.run(["perf", "probe", "-q", "-x", binary, "-a", f"{GROUP}:{name}={target}"],
                           check=True)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    binary, flags = sys.argv[1], sys.argv[2:]
    warmup = next((int(f.split("=")[1]) for f in flags if f.startswith("--warmup=")), 2)
    ops = ops_symbols(binary)
    subprocess.run(["perf", "probe", "-q", "-d", f"{GROUP}:*"], capture_output=True)
    add_probes(binary, ops)
    try:
        with tempfile.NamedTemporaryFile(suffix=".perf") as data:
            subprocess.run(["perf", "record", "-q", "-o", data.name, "-e", f"{GROUP}:*", "--",
                            binary, "--notorch"] + flags, check=True)
            trace = subprocess.run(["perf", "script", "-i", data.name, "-F", "tid,time,event,trace"],
                                   capture_output=True, text=True, check=True).stdout
    finally:
        subprocess.run(["perf", "probe", "-q", "-d", f"{GROUP}:*"], capture_output=True)

    main_tid, stack, step, step_done = None, [], 0, True
    self_time, total_time = collections.defaultdict(float), collections.defaultdict(float)
    calls, top_level = collections.Counter(), 0.0
    pattern = re.compile(r"\s*(\d+)\s+([\d.]+):\s+" + GROUP + r":(\w+?)_(in|out)(__return)?:\s*(.*)")
    for line in trace.splitlines():
        m = pattern.match(line)
        if not m:
            continue
        tid, time, op, kind, rest = int(m[1]), float(m[2]), m[3], m[4], m[6]
        main_tid = main_tid or tid
        if tid != main_tid:
            continue
        if kind == "in":
            if op == "EmbeddingForward" and step_done:
                step, step_done = step + 1, False
            step_done = step_done or op == "MaskedLmLoss"
            dims = re.findall(r"w\d=(-?\d+)", rest)
            stack.append([f"{op} [{dims[0]}x{dims[1]}]" if dims else op, time, 0.0])
            continue
        label, start, children = stack.pop()
        seconds = time - start
        if stack:
            stack[-1][2] += seconds
        if step <= warmup:
            continue
        self_time[label] += seconds - children
        total_time[label] += seconds
        calls[label] += 1
        if not stack:
            top_level += seconds
    steps = step - warmup
    if steps <= 0:
        sys.exit("bert_ops_profile: no timed step was recorded")
    print(f"per step, mean of {steps} timed steps (main thread; s = seconds)")
    print(f"  {'op':44s} {'calls':>6s} {'self s':>8s} {'incl. s':>8s} {'self %':>7s}")
    for label in sorted(self_time, key=lambda k: -self_time[k]):
        print(f"  {label:44s} {calls[label] / steps:6.0f} {self_time[label] / steps:8.4f} "
              f"{total_time[label] / steps:8.4f} {100 * self_time[label] / top_level:6.1f}%")
    print(f"  {'all ops (the step less its glue)':44s} {'':6s} {top_level / steps:8.4f}")


if __name__ == "__main__":
    main()
