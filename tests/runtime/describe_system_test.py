#!/usr/bin/env python3
"""describe_system as a user runs it.

Cases:
  output      the JSON (every required field, all text), valid under 3.0.0 and
              6.1.0, the "fill in by hand" line naming exactly the unknown
              fields, -o through a link (the link stays) and onto a folder (refused)
  usage       bad flags and a status the ruleset does not allow: exit 2, one line
              on stderr, nothing written
  official    the official system description checker passes the output
              (exit 77 without mlperf_logging)

usage: describe_system_test.py --bin PATH --fields quality_targets/benchmarks.json --case NAME
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

BIN = ""
STATUSES = []


def run(*args, cwd=None):
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=60, cwd=cwd)


def check(fails, ok, what):
    if not ok:
        fails.append(what)


def case_output(tmp, fields, fails):
    for ruleset in ("3.0.0", "6.1.0"):
        for extra in ([], ["--gpus", "8", "--nodes", "2"]):
            r = run("--ruleset", ruleset, *extra)
            check(fails, r.returncode == 0, f"{ruleset} {extra}: exit {r.returncode}: {r.stderr}")
            doc = json.loads(r.stdout)
            check(fails, list(doc) == fields, f"{ruleset} {extra}: fields {list(doc)}")
            check(fails, all(isinstance(v, str) for v in doc.values()), f"{extra}: not all text")
            unknown = [k for k, v in doc.items() if v == "unknown"]
            expected = [f"fill in by hand: {', '.join(unknown)}"] if unknown else []
            check(fails, r.stderr.splitlines() == expected,
                  f"{extra}: stderr {r.stderr!r}, unknown fields {unknown}")
            check(fails, r.stdout.count("\n") == len(fields) + 2, "not one field per line")

    # -o through a link writes the link's file and keeps the link.
    target = os.path.join(tmp, "target.json")
    link = os.path.join(tmp, "link.json")
    with open(target, "w") as f:
        f.write("old\n")
    os.symlink("target.json", link)
    r = run("-o", link, "--system", "linked")
    check(fails, r.returncode == 0, f"-o link: exit {r.returncode}: {r.stderr}")
    check(fails, os.path.islink(link) and os.readlink(link) == "target.json", "-o replaced the link")
    with open(target) as f:
        check(fails, json.load(f)["system_name"] == "linked", "-o did not write the link's file")
    check(fails, r.stdout == "", "-o also wrote stdout")

    # A folder is refused, and left as it was.
    folder = os.path.join(tmp, "folder")
    os.mkdir(folder)
    r = run("-o", folder)
    check(fails, r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "folder" in r.stderr,
          f"-o folder: exit {r.returncode}: {r.stderr!r}")
    check(fails, os.listdir(folder) == [], "-o folder wrote into it")


def case_usage(tmp, fields, fails):
    out = os.path.join(tmp, "desc.json")
    bad = [
        (["--status", "onprem", "--ruleset", "6.1.0"], "--status"),
        (["--status", "onprem"], "--status"),  # the newest ruleset checks it too
        (["--nodes", "0"], "--nodes"),
        (["--nodes", "two"], "--nodes"),
        (["--gpus", "-1"], "--gpus"),
        (["--division", "closed-ish"], "--division"),
        (["--ruleset", "9.9.9"], "--ruleset"),
        (["--system", ""], "--system"),
        (["--storage", os.path.join(tmp, "missing")], "--storage"),
        (["--frobnicate"], "--frobnicate"),
        (["extra"], "extra"),
    ]
    for args, named in bad:
        r = run(*args, "-o", out)
        lines = r.stderr.splitlines()
        check(fails, r.returncode == 2, f"{args}: exit {r.returncode}")
        check(fails, len(lines) == 1 and lines[0].startswith("describe_system: ") and named in lines[0],
              f"{args}: stderr {r.stderr!r}")
        check(fails, r.stdout == "" and not os.path.exists(out), f"{args}: wrote something")
    # Before 4.0.0 the status was free-form.
    r = run("--status", "onprem", "--ruleset", "3.0.0")
    check(fails, r.returncode == 0 and json.loads(r.stdout)["status"] == "onprem",
          f"3.0.0 free-form status: exit {r.returncode}: {r.stderr}")


def case_official(tmp, fields, fails):
    try:
        import mlperf_logging  # noqa: F401
    except ImportError:
        print("mlperf_logging not installed; skipping")
        sys.exit(77)

    def official(path, ruleset):
        p = subprocess.run([sys.executable, "-m", "mlperf_logging.system_desc_checker", path,
                            "training", ruleset, "--log_output", os.path.join(tmp, "official.log")],
                           capture_output=True, text=True, timeout=60, cwd=tmp)
        return p.stdout + p.stderr

    runs = [("3.0.0", []), ("6.1.0", ["--gpus", "8", "--nodes", "2", "--division", "open"])]
    runs += [("6.1.0", ["--status", s]) for s in STATUSES]
    for i, (ruleset, extra) in enumerate(runs):
        path = os.path.join(tmp, f"desc{i}.json")
        r = run("--ruleset", ruleset, "-o", path, *extra)
        check(fails, r.returncode == 0, f"{ruleset} {extra}: exit {r.returncode}: {r.stderr}")
        said = official(path, ruleset)
        check(fails, "System description checker passed for" in said,
              f"{ruleset} {extra}: official checker says {said!r}")
    # The oracle fails what it should: a status 6.1.0 does not allow.
    with open(os.path.join(tmp, "desc0.json")) as f:
        doc = json.load(f)
    doc["status"] = "onprem"
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        json.dump(doc, f)
    check(fails, "System description checker failed" in official(bad, "6.1.0"),
          "the official checker passed a bad status")


def main():
    global BIN, STATUSES
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--fields", required=True, help="quality_targets/benchmarks.json")
    p.add_argument("--case", required=True, choices=["output", "usage", "official"])
    a = p.parse_args()
    BIN = os.path.abspath(a.bin)
    with open(a.fields) as f:
        rules = json.load(f)["system_description"]
    STATUSES = rules["status_values"]
    fails = []
    with tempfile.TemporaryDirectory(prefix="describe_system_") as tmp:
        globals()["case_" + a.case](tmp, rules["required_fields"], fails)
    for f in fails:
        print("FAIL:", f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
