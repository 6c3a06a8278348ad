"""One seeded run of a benchmark through run_closed on one process and under
mpirun with more: every invocation must reach the target (run_stop status
success) and log the same evaluation values as one process, up to the
rounding of sums taken over several ranks. Under mpirun the pre-flight runs
first (--preflight) and reports the links and bus bandwidths.

usage: check_ranks.py RUN_CLOSED MPIEXEC BENCH RANKS TOLERANCE
  RANKS: comma-separated process counts, e.g. 1,2,4 (1 runs without mpirun)
  TOLERANCE: the largest relative difference allowed from one process
"""
import glob
import json
import os
import subprocess
import sys
import tempfile


def evaluations(log):
    values, status = [], None
    with open(log) as f:
        for line in f:
            if not line.startswith(":::MLLOG "):
                continue
            event = json.loads(line[len(":::MLLOG "):])
            if event["key"] == "eval_accuracy":
                values.append(event["value"])
            if event["key"] == "run_stop":
                status = event["metadata"]["status"]
    return values, status


def main():
    tool, mpiexec, bench, ranks, tolerance = sys.argv[1:6]
    tolerance = float(tolerance)
    failures, runs = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in [int(r) for r in ranks.split(",")]:
            out = os.path.join(tmp, f"np{n}")
            prefix = [] if n == 1 else [mpiexec, "--allow-run-as-root", "--oversubscribe",
                                        "--mca", "rtc_hwloc_vmhole", "none", "-np", str(n)]
            preflight = [] if n == 1 else ["--preflight"]
            cmd = prefix + [tool, "--bench", bench, "--runs", "1", "--seed", "21", "--out", out,
                            *preflight]
            print("+", " ".join(cmd), flush=True)
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
            if r.returncode != 0:
                failures.append(f"{n} processes: exit {r.returncode}: {r.stderr[-2000:]}")
                continue
            said = [l for l in r.stderr.split("\n") if l.startswith("run_closed: pre-flight:")]
            if preflight and (len(said) != 2 or f"link bandwidth of {n} ranks" not in said[0]
                              or "all_to_all" not in said[1]):
                failures.append(f"{n} processes: the pre-flight said {said}")
            logs = glob.glob(os.path.join(out, "mlperf-suite", "results", "*", bench,
                                          "result_0.txt"))
            if len(logs) != 1:
                failures.append(f"{n} processes: {len(logs)} result_0.txt files")
                continue
            runs[n] = evaluations(logs[0])
            print(n, runs[n], flush=True)
    for n, (values, status) in runs.items():
        if status != "success":
            failures.append(f"{n} processes: run_stop status {status}")
        if n == 1 or 1 not in runs:
            continue
        one = runs[1][0]
        if len(values) != len(one):
            failures.append(f"{n} processes: {len(values)} evaluations, one process {len(one)}")
        for a, b in zip(one, values):
            if abs(a - b) > tolerance * max(1.0, abs(a)):
                failures.append(f"{n} processes: evaluation {b}, one process {a}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
