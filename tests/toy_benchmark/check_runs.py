"""The toy through run_closed on one process and on two MPI ranks.

usage: check_runs.py TOY_RUN_CLOSED MPIEXEC

Both invocations run the same seeded run; each must reach the toy's
lower-is-better target, and the two must log the same evaluation values up
to the rounding of sums over two ranks.
"""
import json
import os
import subprocess
import sys
import tempfile


def evaluations(log):
    values = []
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
    tool, mpiexec = sys.argv[1], sys.argv[2]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        runs = {}
        for name, prefix in (("one", []),
                             ("two", [mpiexec, "--allow-run-as-root", "--oversubscribe", "-np", "2"])):
            out = os.path.join(tmp, name)
            cmd = prefix + [tool, "--bench", "toy", "--runs", "1", "--seed", "21", "--out", out]
            print("+", " ".join(cmd), flush=True)
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
            if r.returncode != 0:
                failures.append(f"{name}: exit {r.returncode}: {r.stderr[-2000:]}")
                continue
            log = os.path.join(out, "mlperf-suite", "results", "toy-demo", "toy", "result_0.txt")
            runs[name] = evaluations(log)
            print(name, runs[name], flush=True)
        if len(runs) == 2:
            (one, one_status), (two, two_status) = runs["one"], runs["two"]
            if one_status != "success" or two_status != "success":
                failures.append(f"run_stop status {one_status} / {two_status}")
            if len(one) != len(two):
                failures.append(f"{len(one)} against {len(two)} evaluations")
            for a, b in zip(one, two):
                if abs(a - b) > 1e-4 * max(1.0, abs(a)):
                    failures.append(f"evaluation {a} on one process, {b} on two")
            if one and one[-1] > 0.3:
                failures.append(f"last evaluation {one[-1]} above the target 0.3")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
