"""One seeded run of a benchmark through run_closed on one process and under
mpirun with more: every invocation must reach the target (run_stop status
success) and log the same evaluation values as one process, up to the
rounding of sums taken over several ranks, and the tensor parallelism it
ran with. Under mpirun the pre-flight runs first (--preflight, its
comparison of the ranks off) and reports the links and bus bandwidths.

usage: check_ranks.py RUN_CLOSED MPIEXEC BENCH RANKS TOLERANCE [FIRST] [--precision P]
  RANKS: comma-separated process counts, e.g. 1,2,4 (1 runs without mpirun);
         NtT runs N processes as groups of T tensor-parallel ranks (4t2); a
         trailing r adds the benchmark flag --recompute (2t2r)
  TOLERANCE: the largest relative difference allowed from one process
  FIRST: compare only the first FIRST evaluations (default all): over many
         steps Adam amplifies summation-order differences (a gradient near
         zero steps by its sign), so a long run's later evaluations part
  --precision: run_closed's --precision for every invocation (default fp32)
"""
import glob
import json
import os
import subprocess
import sys
import tempfile


def evaluations(log):
    values, status, tensor = [], None, None
    with open(log) as f:
        for line in f:
            if not line.startswith(":::MLLOG "):
                continue
            event = json.loads(line[len(":::MLLOG "):])
            if event["key"] == "eval_accuracy":
                values.append(event["value"])
            if event["key"] == "run_stop":
                status = event["metadata"]["status"]
            if event["key"] == "tensor_parallelism":
                tensor = event["value"]
    return values, status, tensor


def main():
    args = sys.argv[1:]
    precision = "fp32"
    if "--precision" in args:
        at = args.index("--precision")
        precision = args[at + 1]
        del args[at:at + 2]
    tool, mpiexec, bench, ranks, tolerance = args[:5]
    tolerance = float(tolerance)
    first = int(args[5]) if len(args) > 5 else None
    failures, runs = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for spec in ranks.split(","):
            recompute = spec.endswith("r")
            n, _, t = spec.rstrip("r").partition("t")
            n, t = int(n), int(t or 1)
            out = os.path.join(tmp, f"np{spec}")
            prefix = [] if n == 1 else [mpiexec, "--allow-run-as-root", "--oversubscribe",
                                        "--mca", "rtc_hwloc_vmhole", "none", "-np", str(n)]
            # The pre-flight runs and reports; its slow-rank comparison is off
            # (--preflight_min 0): on one busy machine a rank's link measure is
            # noise (multinode_test judges it across namespace nodes).
            preflight = [] if n == 1 else ["--preflight", "--preflight_min", "0"]
            tensor = [] if t == 1 else ["--tensor_parallel", str(t)]
            # One cache: the generated data (and a starting checkpoint) made once.
            cmd = prefix + [tool, "--bench", bench, "--runs", "1", "--seed", "21", "--out", out,
                            "--precision", precision,
                            "--cache_dir", os.path.join(tmp, "cache"),
                            *preflight, *tensor, *(["--recompute"] if recompute else [])]
            print("+", " ".join(cmd), flush=True)
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
            if r.returncode != 0:
                failures.append(f"{spec} processes: exit {r.returncode}: {r.stderr[-2000:]}")
                continue
            said = [l for l in r.stderr.split("\n") if l.startswith("run_closed: pre-flight:")]
            if preflight and (len(said) != 2 or f"link bandwidth of {n} ranks" not in said[0]
                              or "all_to_all" not in said[1]):
                failures.append(f"{spec} processes: the pre-flight said {said}")
            logs = glob.glob(os.path.join(out, "mlperf-suite", "results", "*", bench,
                                          "result_0.txt"))
            if len(logs) != 1:
                failures.append(f"{spec} processes: {len(logs)} result_0.txt files")
                continue
            runs[spec] = evaluations(logs[0]) + (t,)
            print(spec, runs[spec], flush=True)
    for spec, (values, status, logged_tensor, t) in runs.items():
        if status != "success":
            failures.append(f"{spec} processes: run_stop status {status}")
        if logged_tensor != t:
            failures.append(f"{spec} processes: tensor_parallelism {logged_tensor}, ran with {t}")
        if spec == "1" or "1" not in runs:
            continue
        one = runs["1"][0]
        if first is None and len(values) != len(one):
            failures.append(f"{spec} processes: {len(values)} evaluations, one process {len(one)}")
        if first is not None and min(len(values), len(one)) < first:
            failures.append(f"{spec} processes: fewer than {first} evaluations")
        for a, b in list(zip(one, values))[:first]:
            if abs(a - b) > tolerance * max(1.0, abs(a)):
                failures.append(f"{spec} processes: evaluation {b}, one process {a}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
