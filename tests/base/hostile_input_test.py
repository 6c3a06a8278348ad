#!/usr/bin/env python3
"""Hostile input against every tool, as a user reaches it from a shell.

Each case names the class of failure it guards (outputs that replace what
they name, failed writes, uncaught file system errors, hangs, silent passes,
memory, processes and leftovers, messages). Device nodes are made in the
test's own folder, never taken from /dev. Exit 77 (skip) when not root,
since mknod needs it; CI runs as root.

usage: hostile_input_test.py --bin DIR --package DIR --case NAME
"""
import argparse
import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

BIN = ""


def tool(name, *args, stdout=subprocess.PIPE, timeout=120, cwd=None, limit_gb=None):
    def limit():
        if limit_gb:
            resource.setrlimit(resource.RLIMIT_AS, (limit_gb << 30, limit_gb << 30))
    return subprocess.run([os.path.join(BIN, name), *args], stdout=stdout,
                          stderr=subprocess.PIPE, timeout=timeout, cwd=cwd, text=True,
                          preexec_fn=limit, errors="replace")


def says_why(r):
    """The last line on stderr is the tool's own (progress lines may come before)."""
    lines = r.stderr.strip().splitlines()
    return bool(lines) and lines[-1].split(":")[0] in (
        "compliance_check", "package_score_report", "run_closed", "run_benchmark", "describe_system",
        "results_db")


def char_device(path, minor):  # 1,3 = null; 1,7 = full
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, minor))


def is_char_device(path):
    return stat.S_ISCHR(os.lstat(path).st_mode)


class Case:
    def __init__(self, tmp, package):
        self.tmp, self.fails = tmp, []
        self.pkg = os.path.join(tmp, "v3.0", "NVIDIA")
        shutil.copytree(package, self.pkg)
        self.null = os.path.join(tmp, "null")
        self.full = os.path.join(tmp, "full")
        char_device(self.null, 3)
        char_device(self.full, 7)

    def expect(self, ok, what):
        if not ok:
            self.fails.append(what)

    def check(self, *args, **kw):
        return tool("compliance_check", "--ruleset", "3.0.0", *args, **kw)

    def score(self, *args, **kw):
        return tool("package_score_report", "--ruleset=3.0.0", *args, **kw)

    def result_dir(self):
        results = os.path.join(self.pkg, "results")
        system = sorted(os.listdir(results))[0]
        bench = sorted(os.listdir(os.path.join(results, system)))[0]
        return os.path.join(results, system, bench)


def case_outputs(c):
    """Class 1: a report never replaces a device, a link or an input."""
    r = c.check(c.pkg, "--csv", c.null, "--html", c.null)
    c.expect(r.returncode in (0, 1) and is_char_device(c.null),
             f"--csv/--html to a null node: exit {r.returncode}, node kept {is_char_device(c.null)}")
    r = c.check(c.pkg, "--html", c.full)
    c.expect(r.returncode == 2 and is_char_device(c.full) and says_why(r),
             f"--html to a full node: exit {r.returncode}: {r.stderr}")
    for flag in ("--results-table", "--results-table-json"):
        r = c.check(c.pkg, flag, c.null)
        c.expect(r.returncode in (0, 1) and is_char_device(c.null), f"{flag} to a null node: {r.returncode}")
        r = c.check(c.pkg, flag, c.full)
        c.expect(r.returncode == 2 and is_char_device(c.full) and says_why(r),
                 f"{flag} to a full node: exit {r.returncode}: {r.stderr}")
    r = tool("describe_system", "-o", c.null, cwd=c.tmp)
    c.expect(r.returncode == 0 and is_char_device(c.null), f"describe_system -o null: {r.returncode}")
    r = tool("describe_system", "-o", c.full, cwd=c.tmp)
    c.expect(r.returncode == 2 and is_char_device(c.full) and says_why(r),
             f"describe_system -o full: exit {r.returncode}: {r.stderr}")
    # The warehouse: a device or a result log as --db is refused, untouched; a
    # database reached through a link is written in place; a page that is a
    # device is written into it or refused, never replaced.
    for target in (c.null, c.full):
        r = tool("results_db", "--db", target, "ingest", c.pkg)
        c.expect(r.returncode == 2 and is_char_device(target) and says_why(r),
                 f"results_db --db a device: exit {r.returncode}: {r.stderr}")
    db = os.path.join(c.tmp, "w.db")
    db_link = os.path.join(c.tmp, "w_link.db")
    os.symlink(db, db_link)
    r = tool("results_db", "--db", db_link, "ingest", c.pkg)
    c.expect(r.returncode == 0 and os.path.islink(db_link) and os.path.getsize(db) > 0,
             f"results_db --db through a link: exit {r.returncode}: {r.stderr}")
    pages = os.path.join(c.tmp, "pages")
    os.makedirs(pages)
    os.symlink(c.full, os.path.join(pages, "index.html"))
    r = tool("results_db", "--db", db, "dashboard", "--out", pages)
    c.expect(r.returncode == 2 and is_char_device(c.full) and says_why(r),
             f"results_db dashboard, index.html a full device: exit {r.returncode}: {r.stderr}")
    os.remove(os.path.join(pages, "index.html"))
    os.symlink(db, os.path.join(pages, "index.html"))
    size = os.path.getsize(db)
    r = tool("results_db", "--db", db, "dashboard", "--out", pages)
    c.expect(r.returncode == 2 and os.path.getsize(db) == size and says_why(r),
             f"results_db dashboard over its own database: exit {r.returncode}: {r.stderr}")
    r = c.check(c.pkg, "--results-table", os.path.join(c.tmp, "t"), "--results-table-json",
                os.path.join(c.tmp, "t"))
    c.expect(r.returncode == 2 and "also the output" in r.stderr, f"two tables one file: {r.stderr}")
    target = os.path.join(c.tmp, "target.csv")
    open(target, "w").write("old")
    link = os.path.join(c.tmp, "link.csv")
    os.symlink(target, link)
    r = c.check(c.pkg, "--csv", link)
    c.expect(os.path.islink(link) and open(target).read() != "old",
             f"--csv through a link: the link kept {os.path.islink(link)}: {r.stderr}")
    open(target, "w").write("old")
    r = c.check(c.pkg, "--results-table", link)
    c.expect(os.path.islink(link) and open(target).read().startswith("round,"),
             f"--results-table through a link: the link kept {os.path.islink(link)}: {r.stderr}")
    log = os.path.join(c.result_dir(), sorted(os.listdir(c.result_dir()))[0])
    before = open(log).read()
    outside = os.path.join(c.tmp, "log_link.csv")
    os.symlink(log, outside)
    r = c.check(c.pkg, "--csv", outside)
    c.expect(r.returncode == 2 and open(log).read() == before and says_why(r),
             f"--csv naming a result log through a link: exit {r.returncode}")
    claims = os.path.join(c.tmp, "claims.csv")
    open(claims, "w").write("version,submitter,system,benchmark,minutes\n")
    r = c.check(c.pkg, "--claims", claims, "--html", claims)
    c.expect(r.returncode == 2 and open(claims).read().startswith("version,"),
             f"--html over --claims: exit {r.returncode}")
    r = c.check(c.pkg, "--csv", os.path.join(c.tmp, "same"), "--html", os.path.join(c.tmp, "same"))
    c.expect(r.returncode == 2 and "also the output" in r.stderr, f"two outputs one file: {r.stderr}")
    # Through a descriptor: the report arrives where stdout goes.
    r = c.check(c.pkg, "--html", "/proc/self/fd/1")
    c.expect("<!DOCTYPE html>" in r.stdout or "<html" in r.stdout, "--html to fd 1 lost the page")
    r = tool("run_benchmark", "--size", "small", "-b", "8", "-w", "1", "-i", "2", "-r", "1",
             "-o", c.full, cwd=c.tmp)
    c.expect(r.returncode == 2 and is_char_device(c.full), f"run_benchmark -o full: {r.returncode}")
    r = tool("run_benchmark", "--size", "small", "-b", "8", "-w", "1", "-i", "2", "-r", "1",
             "-o", "r.json", "--markdown", "r.json", cwd=c.tmp)
    c.expect(r.returncode == 2 and "also the output" in r.stderr, f"run_benchmark -o = --markdown")
    # Two processes writing one report: the second is refused.
    first = subprocess.Popen([os.path.join(BIN, "run_benchmark"), "--size", "small", "-b", "8",
                              "-w", "1", "-i", "100000", "-r", "1", "-o", "busy.json"],
                             cwd=c.tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # The report is first written (and its lock held) before anything is measured.
    for _ in range(600):
        if os.path.exists(os.path.join(c.tmp, "busy.json")):
            break
        time.sleep(0.1)
    r = tool("run_benchmark", "--size", "small", "-b", "8", "-w", "1", "-i", "2", "-r", "1",
             "-o", "busy.json", cwd=c.tmp)
    first.send_signal(signal.SIGINT)
    first.wait(timeout=60)
    c.expect(r.returncode == 2 and "another process" in r.stderr,
             f"a second writer of one report: exit {r.returncode}: {r.stderr}")
    data = os.path.join(c.tmp, "data")
    os.makedirs(data)
    r = tool("run_closed", "--bench", "resnet", "--data", data, "--out", os.path.join(data, "pkg"))
    c.expect(r.returncode == 2 and not os.path.exists(os.path.join(data, "pkg")),
             f"run_closed --out inside --data: {r.returncode}: {r.stderr}")


def case_write_failures(c):
    """Class 2: a lost report is exit 2 on every path."""
    runs = {
        "compliance_check single log": lambda **kw: c.check(
            os.path.join(c.result_dir(), sorted(os.listdir(c.result_dir()))[0]), **kw),
        "compliance_check package": lambda **kw: c.check(c.pkg, **kw),
        "package_score_report": lambda **kw: c.score(c.pkg, **kw),
        "run_benchmark": lambda **kw: tool("run_benchmark", "--size", "small", "-b", "8", "-w", "1",
                                           "-i", "2", "-r", "1", cwd=c.tmp, **kw),
        "describe_system": lambda **kw: tool("describe_system", cwd=c.tmp, **kw),
        "results_db": lambda **kw: tool("results_db", "--db", os.path.join(c.tmp, "w.db"),
                                        "ingest", c.pkg, **kw),
    }
    for name, run in runs.items():
        with open(c.full, "w") as full:
            r = run(stdout=full)
        c.expect(r.returncode == 2 and says_why(r), f"{name} > full: exit {r.returncode}")
        r = run(stdout=subprocess.DEVNULL)
        c.expect(r.returncode in (0, 1), f"{name} > null: exit {r.returncode}: {r.stderr[-300:]}")
    # A closed stdout: refused, never written into a file that took descriptor 1.
    for name, args in [("compliance_check", [c.pkg, "--csv", os.path.join(c.tmp, "c.csv")]),
                       ("package_score_report", ["--ruleset=3.0.0", c.pkg]),
                       ("run_closed", ["--list"]),
                       ("describe_system", []),
                       ("results_db", ["--db", os.path.join(c.tmp, "w.db"), "ingest", c.pkg]),
                       ("run_benchmark", ["--size", "small", "-b", "8", "-w", "1", "-i", "2",
                                          "-r", "1"])]:
        r = subprocess.run(f"'{os.path.join(BIN, name)}' " + " ".join(f"'{a}'" for a in args) +
                           " >&-", shell=True, capture_output=True, text=True, timeout=120)
        c.expect(r.returncode == 2 and "standard output is closed" in r.stderr,
                 f"{name} >&-: exit {r.returncode}: {r.stderr}")


def case_loops(c):
    """Classes 3 and 4: links that loop, FIFOs and rule chains end with one line."""
    loop = os.path.join(c.tmp, "loop")
    os.symlink("loop", loop)
    kits = os.path.join(c.tmp, "kits")
    os.makedirs(kits)
    os.symlink("case_00000", os.path.join(kits, "case_00000"))
    for name, args in [("run_closed", ["--bench", "unet3d", "--data", loop, "--out", "o1"]),
                       ("run_closed", ["--bench", "unet3d", "--data", kits, "--out", "o2"]),
                       ("run_closed", ["--bench", "unet3d", "--cache_dir", loop, "--out", "o3"])]:
        r = tool(name, *args, cwd=c.tmp)
        c.expect(r.returncode == 2 and says_why(r), f"{name} {' '.join(args)}: exit "
                 f"{r.returncode}: {r.stderr[-300:]}")
    # run_benchmark reads --data in its workers: a failed configuration (exit
    # 1) that names the folder, never an abort.
    r = tool("run_benchmark", "--bench", "unet3d", "--data", kits, "-b", "1", "-w", "1", "-i", "2",
             "-r", "1", cwd=c.tmp)
    c.expect(r.returncode in (1, 2) and kits in r.stderr.splitlines()[-1],
             f"run_benchmark, a case folder that loops: exit {r.returncode}: {r.stderr[-300:]}")
    c.expect(not any(os.path.exists(os.path.join(c.tmp, o)) for o in ("o1", "o2", "o3")),
             "a refused run_closed left its --out behind")
    # A system folder under results/ that is a link to itself.
    selfish = os.path.join(c.pkg, "results", "loopy")
    os.symlink("loopy", selfish)
    for name, run in [("package_score_report", lambda: c.score(c.pkg)),
                      ("compliance_check", lambda: c.check(c.pkg)),
                      ("results_db", lambda: tool("results_db", "--db", os.path.join(c.tmp, "l.db"),
                                                  "ingest", c.pkg))]:
        r = run()
        c.expect(r.returncode == 2 and says_why(r) and "loopy" in r.stderr,
                 f"{name} with results/loopy -> loopy: exit {r.returncode}: {r.stderr[-300:]}")
    os.remove(selfish)
    d = c.result_dir()
    log = os.path.join(d, sorted(os.listdir(d))[0])
    os.rename(log, log + ".bak")
    os.mkfifo(log)
    for name, run in [("package_score_report", lambda: c.score(c.pkg, timeout=60)),
                      ("compliance_check", lambda: c.check(c.pkg, timeout=60)),
                      ("results_db", lambda: tool("results_db", "--db", os.path.join(c.tmp, "f.db"),
                                                  "ingest", c.pkg, timeout=60))]:
        r = run()
        c.expect(r.returncode == 2 and "not a regular file" in r.stderr,
                 f"{name} with a FIFO log: exit {r.returncode}: {r.stderr[-300:]}")
    os.remove(log)
    os.rename(log + ".bak", log)
    rules = os.path.join(c.tmp, "rules")
    shutil.copytree(os.path.join(os.path.dirname(__file__), "../../quality_targets"), rules)
    with open(os.path.join(rules, "training/3.0.0/closed_resnet.rules"), "a") as f:
        f.write("\nkey submission_benchmark exactly_one\n  chain closed_{v}\n")
    r = c.check("--rules-dir", rules, log, timeout=60)
    c.expect(r.returncode == 1 and "chains back to itself" in r.stdout,
             f"a rule chain loop: exit {r.returncode}")


def case_silent(c):
    """Class 5: what cannot be checked or scored fails, never passes."""
    desc_path = os.path.join(c.pkg, "systems", os.listdir(os.path.join(c.pkg, "systems"))[0])
    good = open(desc_path).read()
    desc = json.loads(good)
    desc["number_of_nodes"] = "many"
    desc["division"] = "closedish"
    open(desc_path, "w").write(json.dumps(desc))
    r = c.check(c.pkg)
    c.expect(r.returncode == 1 and "neither closed nor open" in r.stdout,
             f"wrong-typed system description: exit {r.returncode}")
    open(desc_path, "w").write("{broken")
    r = c.score(c.pkg)
    c.expect(r.returncode == 2 and "system description" in r.stderr,
             f"package_score_report, broken description: exit {r.returncode}: {r.stderr}")
    open(desc_path, "w").write(good)
    d = c.result_dir()
    for name in os.listdir(d):
        path = os.path.join(d, name)
        text = open(path).read().replace('"key": "run_stop"', '"key": "run_stop_x"')
        text = text.replace('"key": "run_start"', '"key": "run_stop"', 1)
        text = text.replace('"key": "run_stop_x"', '"key": "run_start"', 1)
        open(path, "w").write(text)
    r = c.check(c.pkg)
    c.expect(r.returncode == 1 and "cannot be negative" in r.stdout, "negative time passed")
    r = c.score(c.pkg)
    c.expect(all(json.loads(l)["score"] is None for l in r.stdout.splitlines()),
             f"package_score_report scored a negative time: {r.stdout[:300]}")
    root = os.path.join(c.tmp, "v3.0")
    os.makedirs(os.path.join(root, "ACME", "results"))
    r = c.check(c.tmp)
    c.expect(r.returncode == 2 and "ACME" in r.stderr, f"results/ without systems/: {r.stderr}")


def case_memory(c):
    """Class 6: memory follows the work, not the input."""
    desc_path = os.path.join(c.pkg, "systems", os.listdir(os.path.join(c.pkg, "systems"))[0])
    open(desc_path, "w").write("[" + ",".join(["0"] * 2_000_000) + "]")
    for name, run in [("compliance_check", lambda: c.check(c.pkg, limit_gb=2)),
                      ("package_score_report", lambda: c.score(c.pkg, limit_gb=2)),
                      ("results_db", lambda: tool("results_db", "--db", os.path.join(c.tmp, "m.db"),
                                                  "ingest", c.pkg, limit_gb=2))]:
        r = run()
        c.expect(r.returncode == 2 and "more than the" in (r.stderr + r.stdout),
                 f"{name}, a 4 MB description: exit {r.returncode}")
    d = c.result_dir()
    log = os.path.join(d, sorted(os.listdir(d))[0])
    text = open(log).read().replace('"value": "resnet"', '"value": "' + "x" * (20 << 20) + '"', 1)
    open(log, "w").write(text)
    r = c.check(log)
    c.expect(len(r.stdout) < 100_000, f"a 20 MB value echoed: {len(r.stdout)} bytes of report")


def case_processes(c):
    """Class 7: workers end with their driver and leave nothing behind."""
    driver = subprocess.Popen([os.path.join(BIN, "run_benchmark"), "--size", "small", "-b", "8",
                               "-w", "1", "-i", "1000000", "-r", "1"], cwd=c.tmp,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers = []
    for _ in range(100):
        time.sleep(0.1)
        out = subprocess.run(["pgrep", "-P", str(driver.pid)], capture_output=True, text=True)
        workers = [int(p) for p in out.stdout.split()]
        if workers:
            break
    time.sleep(0.5)
    driver.kill()
    driver.wait()
    time.sleep(2)
    alive = [w for w in workers if os.path.exists(f"/proc/{w}") and
             open(f"/proc/{w}/stat").read().split()[2] != "Z"]
    c.expect(workers and not alive, f"workers {workers} outlived their killed driver: {alive}")
    # The driver's own scratch folder (other tests may run drivers beside this one).
    scratch = os.path.join(tempfile.gettempdir(), f"run_benchmark-{driver.pid}")
    c.expect(not os.path.exists(scratch), f"left behind: {scratch}")
    empty = os.path.join(c.tmp, "empty")
    os.makedirs(empty)
    r = tool("run_closed", "--bench", "resnet", "--data", empty, "--out", "refused", cwd=c.tmp)
    c.expect(r.returncode == 2 and not os.path.exists(os.path.join(c.tmp, "refused")),
             f"a refused run_closed left a package skeleton: {r.returncode}")
    open(os.path.join(c.tmp, "afile"), "w").close()
    r = tool("run_closed", "--bench", "unet3d", "--cache_dir", "afile", "--out", "refused2",
             cwd=c.tmp)
    c.expect(r.returncode == 2 and not os.path.exists(os.path.join(c.tmp, "refused2")),
             f"a file as --cache_dir: {r.returncode}: {r.stderr}")


def case_messages(c):
    """Class 8: every exit 2 says why, in one line naming the cause."""
    d = c.result_dir()
    log = os.path.join(d, sorted(os.listdir(d))[0])
    os.rename(log, log + ".bak")
    os.makedirs(log)
    r = c.check(c.pkg)
    c.expect(r.returncode == 2 and "not a regular file" in r.stderr,
             f"a folder named like a log: exit {r.returncode}: stderr {r.stderr!r}")
    r = tool("run_closed", "--system", ".")
    c.expect(r.returncode == 2 and "cannot be empty, '.' or '..'" in r.stderr, r.stderr)


def main():
    global BIN
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--package", required=True)
    p.add_argument("--case", required=True)
    a = p.parse_args()
    BIN = os.path.abspath(a.bin)
    if os.geteuid() != 0:
        print("needs root (device nodes); CI runs as root")
        return 77
    with tempfile.TemporaryDirectory(prefix="hostile_") as tmp:
        c = Case(tmp, a.package)
        globals()["case_" + a.case](c)
    for f in c.fails:
        print("FAIL:", f)
    return 1 if c.fails else 0


if __name__ == "__main__":
    sys.exit(main())
