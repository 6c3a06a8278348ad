"""A few seeded runs of a benchmark through run_closed, each log checked alone
by our compliance_check and by the official compliance checker (mlperf_logging),
each run reaching its target; cheaper than a whole package (check_package.py)
for variants whose package layout is the default's.

usage: check_logs.py RUN_CLOSED COMPLIANCE_CHECK RULESET RUNS [run_closed args...]
  e.g. check_logs.py run_closed compliance_check 5.0.0 2 --bench bert --packed --precision fp8
"""
import glob
import os
import subprocess
import sys
import tempfile


def main():
    run_closed, compliance_check, ruleset, runs = sys.argv[1:5]
    extra = sys.argv[5:]
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out")
        cmd = [run_closed, "--out", out, "--runs", runs, "--seed", "5", "--ruleset", ruleset] + extra
        print("+", " ".join(cmd), flush=True)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        print(r.stderr[-2000:])
        if r.returncode != 0:
            print(f"FAIL: run_closed exited {r.returncode}")
            return 1
        logs = sorted(glob.glob(os.path.join(out, "mlperf-suite", "results", "*", "*",
                                             "result_*.txt")))
        if len(logs) != int(runs):
            failures.append(f"{len(logs)} logs, wanted {runs}")
        for log in logs:
            with open(log) as f:
                if '"status": "success"' not in f.read():
                    failures.append(f"{log}: the run did not reach its target")
            ours = subprocess.run([compliance_check, "--ruleset", ruleset, log],
                                  capture_output=True, text=True)
            if ours.returncode != 0 or not ours.stdout.startswith("PASS"):
                failures.append(f"{log}: compliance_check: {ours.stdout.strip()[-500:]}")
            official = subprocess.run([sys.executable, "-m", "mlperf_logging.compliance_checker",
                                       "--usage", "training", "--ruleset", ruleset, log],
                                      capture_output=True, text=True, cwd=tmp)
            if "SUCCESS" not in official.stdout + official.stderr:
                failures.append(f"{log}: the official compliance checker: "
                                f"{(official.stdout + official.stderr).strip()[-500:]}")
    for f in failures:
        print("FAIL:", f)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
