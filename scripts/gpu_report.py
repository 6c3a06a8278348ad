#!/usr/bin/env python3
"""The report of scripts/gpu_check.sh: gpu_report.json and gpu_report.md in OUT
from what the check left in WORK (versions, gtest JSON per test binary, one
text file per benchmark).

usage: gpu_report.py WORK OUT
"""
import glob
import json
import os
import sys


def read_versions(work):
    versions = {}
    with open(os.path.join(work, "versions")) as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition("=")
            versions[key] = value
    return versions


def read_tests(work):
    """Per binary: counts and the failed tests with their first failure line."""
    binaries = {}
    for path in sorted(glob.glob(os.path.join(work, "test_*.json"))):
        name = os.path.basename(path)[len("test_"):-len(".json")]
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            binaries[name] = {"error": f"no readable gtest report ({e})"}
            continue
        passed, skipped, failed = [], [], []
        for suite in data.get("testsuites", []):
            for test in suite.get("testsuite", []):
                full = f"{suite['name']}.{test['name']}"
                if test.get("failures"):
                    first = test["failures"][0].get("failure", "").splitlines()
                    failed.append({"test": full, "failure": first[0] if first else ""})
                elif test.get("result") == "SKIPPED":
                    skipped.append(full)
                else:
                    passed.append(full)
        binaries[name] = {"passed": passed, "skipped": skipped, "failed": failed}
    # "<exit code> <seconds>" per binary run; one that died wrote no JSON.
    for path in sorted(glob.glob(os.path.join(work, "test_*.exit"))):
        name = os.path.basename(path)[len("test_"):-len(".exit")]
        with open(path) as f:
            code, seconds = (int(v) for v in f.read().split())
        why = {124: "stopped at its time limit", 134: "aborted"}.get(code, f"exit {code}")
        entry = binaries.setdefault(
            name, {"error": f"{why} before its gtest report; the log has its output"})
        entry.update(exit=code, seconds=seconds)
    return dict(sorted(binaries.items()))


def read_benchmarks(work):
    benches = {}
    for path in sorted(glob.glob(os.path.join(work, "bench_*.txt"))):
        name = os.path.basename(path)[len("bench_"):-len(".txt")]
        with open(path, errors="replace") as f:
            lines = f.read().splitlines()
        code = lines.pop() if lines and lines[-1].startswith("exit=") else "exit=?"
        benches[name] = {"exit": code[len("exit="):], "output": lines}
    return benches


def markdown(report):
    out = ["# GPU check", ""]
    out += [f"* {k}: {v}" for k, v in report["versions"].items()]
    out += ["", "## Tests", "", "| binary | passed | skipped | failed | seconds |",
            "|---|---|---|---|---|"]
    for name, t in report["tests"].items():
        seconds = t.get("seconds", "")
        if "error" in t:
            out.append(f"| {name} | | | {t['error']} | {seconds} |")
        else:
            out.append(f"| {name} | {len(t['passed'])} | {len(t['skipped'])} | {len(t['failed'])}"
                       f" | {seconds} |")
    failures = [(n, f) for n, t in report["tests"].items() for f in t.get("failed", [])]
    if failures:
        out += ["", "Failed:", ""]
        out += [f"* `{f['test']}` ({n}): {f['failure']}" for n, f in failures]
    out += ["", "## Benchmarks"]
    for name, b in report["benchmarks"].items():
        out += ["", f"### {name} (exit {b['exit']})", "", "```"] + shortened(b["output"]) + ["```"]
    return "\n".join(out) + "\n"


def shortened(lines, head=40, tail=80):
    """The first and last lines of a long output: the peers and the headline
    figures come first, where a run stopped comes last."""
    if len(lines) <= head + tail:
        return lines
    return lines[:head] + [f"... ({len(lines) - head - tail} lines left out)"] + lines[-tail:]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    work, out = sys.argv[1:]
    report = {"versions": read_versions(work), "tests": read_tests(work),
              "benchmarks": read_benchmarks(work)}
    for name, text in (("gpu_report.json", json.dumps(report, indent=1) + "\n"),
                       ("gpu_report.md", markdown(report))):
        tmp = os.path.join(out, name + ".tmp")
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, os.path.join(out, name))


if __name__ == "__main__":
    main()
