#!/usr/bin/env python3
"""run_benchmark end to end on the CPU, read back the way the field's tools read it.

Cases (one ctest each):
  train      1 and 2 processes, two batch sizes: the JSON report has
             DeepLearningExamples benchmark.py's key layout and its metrics
             equal our statistics; median/mean/min/max recomputed with numpy
             from the per-repeat throughputs; weak scaling = ratio of medians;
             the DLLogger lines parsed the way DLE's scripts parse them carry
             every step and repeat, agreeing with the report; Markdown rows.
  infer      latency mean and percentiles equal numpy's on the per-batch times
             the DLLogger file records (one process: every batch is there).
  models     every registered model, small, trains and infers one step on
             synthetic and on generated data, in fp32 and bf16.
  usage      every usage error exits 2 with one line on stderr and measures nothing.
  interrupt  SIGINT after the first configuration: exit 1, and the report keeps
             what was measured, marked incomplete.
  comm       --comm under mpirun -np 2: every collective and size in the JSON
             report, algbw = size / time and busbw = algbw x nccl-tests' factor
             recomputed, every result checked right, the links probed; the
             Markdown file equals stdout; one process; its usage errors. Under
             mpirun -np 2 without --comm: -n 1,2 measures the first rank, then
             both, into one report; -n above the launched count refused.
  charts     the SVG charts rendered in headless Chromium are not blank
             (exit 77 without Chromium).
  tensor     --tensor_parallel 2 on Llama's small member over 2 and 4
             processes: both measured, a group's batch counted once, the layout
             in the JSON and Markdown reports.
"""

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
except ImportError:  # the oracle of the statistics; scripts/install_deps.sh --test installs it
    np = None

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))

SMALL = ["--size", "small"]


def run(tool, args, cwd, timeout=300):
    return subprocess.run([tool] + args, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def read_dllogger(path):
    """As DeepLearningExamples' benchmark.py reads a DLLogger file."""
    with open(path) as f:
        lines = [line for line in f.read().splitlines() if "step" in line]
    return [json.loads(line[5:]) for line in lines]


def close(a, b, rel=1e-9):
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-12)


def case_train(tool, tmp):
    fails = []
    r = run(tool, SMALL + ["-n", "1,2", "-b", "8,16", "-w", "2", "-i", "6", "-r", "3",
                           "-o", "r.json", "--dllogger", "d.log", "--markdown", "t.md"], tmp)
    if r.returncode != 0:
        return [f"exit {r.returncode}: {r.stderr.strip()}"]
    rep = json.load(open(os.path.join(tmp, "r.json")))
    for key in ("model", "ngpus", "bs", "metric_keys", "metrics"):
        if key not in rep:
            fails.append(f"report lacks benchmark.py's key {key!r}")
    if rep["ngpus"] != [1, 2] or rep["bs"] != [8, 16] or rep["metric_keys"] != ["train.ips"]:
        fails.append(f"ngpus/bs/metric_keys: {rep['ngpus']} {rep['bs']} {rep['metric_keys']}")
    if sorted(rep["metrics"]) != ["1", "2"] or any(sorted(v) != ["16", "8"]
                                                   for v in rep["metrics"].values()):
        fails.append(f"metrics layout: {rep['metrics']}")
    configs = {(c["devices"], c["batch_per_device"]): c for c in rep["configurations"]}
    if len(configs) != 4 or not rep["complete"]:
        fails.append(f"expected 4 complete configurations, got {len(configs)}")
    for (n, b), c in configs.items():
        t = c["throughput"]
        per = np.array(t["per_repeat"])
        if len(per) != 3:
            fails.append(f"n={n} b={b}: {len(per)} repeats")
        for name, want in (("median", np.median(per)), ("mean", np.mean(per)),
                           ("min", per.min()), ("max", per.max())):
            if not close(t[name], want):
                fails.append(f"n={n} b={b}: {name} {t[name]} != numpy {want}")
        if not close(rep["metrics"][str(n)][str(b)]["train.ips"], t["median"]):
            fails.append(f"n={n} b={b}: metrics train.ips is not the median")
        if c["samples_per_repeat"] != 6 * b * n:
            fails.append(f"n={n} b={b}: samples per repeat {c['samples_per_repeat']}")
        one = configs[(1, b)]["throughput"]["median"]
        if not close(c["weak_scaling"], t["median"] / one):
            fails.append(f"n={n} b={b}: weak scaling {c['weak_scaling']} != ratio of medians")
        if not close(c["scaling_efficiency"], c["weak_scaling"] / n):
            fails.append(f"n={n} b={b}: efficiency is not scaling / n")
        if not c["peak_memory_bytes"] > 0:
            fails.append(f"n={n} b={b}: no peak memory")

    records = read_dllogger(os.path.join(tmp, "d.log"))
    params = [r for r in records if r["step"] == "PARAMETER"]
    if len(params) != 4:
        fails.append(f"{len(params)} PARAMETER records, expected 4")
    for (n, b), c in configs.items():
        mine = [r for r in records if isinstance(r["step"], list)
                and r["data"].get("ngpus") == n and r["data"].get("bs") == b]
        iters = [r for r in mine if len(r["step"]) == 2]
        epochs = [r for r in mine if len(r["step"]) == 1]
        summary = [r for r in mine if len(r["step"]) == 0]
        if len(iters) != 18 or len(epochs) != 3 or len(summary) != 1:
            fails.append(f"n={n} b={b}: {len(iters)} step, {len(epochs)} repeat, "
                         f"{len(summary)} summary records")
            continue
        got = [e["data"]["train.ips"] for e in epochs]
        if not all(close(a, w) for a, w in zip(got, c["throughput"]["per_repeat"])):
            fails.append(f"n={n} b={b}: DLLogger repeats {got} != report")
        # benchmark.py's aggregation of its epoch records: a harmonic mean.
        hmean = len(got) / sum(1 / x for x in got)
        if not min(got) <= hmean <= max(got):
            fails.append(f"n={n} b={b}: harmonic mean {hmean} outside the repeats")
        if not close(summary[0]["data"]["train.ips"], c["throughput"]["median"]):
            fails.append(f"n={n} b={b}: DLLogger summary is not the median")
    md = open(os.path.join(tmp, "t.md")).read()
    rows = [line for line in md.splitlines() if line.startswith("| ") and line[2].isdigit()]
    if len(rows) != 4:
        fails.append(f"Markdown has {len(rows)} result rows, expected 4")
    if md not in r.stdout:
        fails.append("stdout does not carry the Markdown summary")
    return fails


def case_infer(tool, tmp):
    fails = []
    r = run(tool, SMALL + ["--mode", "infer", "-b", "1,4", "-w", "3", "-i", "40", "-r", "2",
                           "-o", "i.json", "--dllogger", "i.log"], tmp)
    if r.returncode != 0:
        return [f"exit {r.returncode}: {r.stderr.strip()}"]
    rep = json.load(open(os.path.join(tmp, "i.json")))
    want_keys = ["val.ips", "val.latency_avg", "val.latency_50", "val.latency_90",
                 "val.latency_95", "val.latency_99", "val.latency_100"]
    if rep["metric_keys"] != want_keys:
        fails.append(f"metric_keys {rep['metric_keys']}")
    records = read_dllogger(os.path.join(tmp, "i.log"))
    for c in rep["configurations"]:
        b = c["batch_per_device"]
        times = np.array([r["data"]["val.latency"] for r in records
                          if isinstance(r["step"], list) and len(r["step"]) == 2
                          and r["data"]["bs"] == b])
        if len(times) != 80:
            fails.append(f"b={b}: {len(times)} batch records, expected 80")
            continue
        lat = c["latency_seconds"]
        for name, want in (("mean", times.mean()), ("p50", np.percentile(times, 50)),
                           ("p90", np.percentile(times, 90)), ("p95", np.percentile(times, 95)),
                           ("p99", np.percentile(times, 99)), ("max", times.max())):
            if not close(lat[name], want):
                fails.append(f"b={b}: latency {name} {lat[name]} != numpy {want}")
        m = rep["metrics"]["1"][str(b)]
        if not (close(m["val.latency_99"], lat["p99"]) and close(m["val.latency_100"], lat["max"])
                and close(m["val.ips"], c["throughput"]["median"])):
            fails.append(f"b={b}: benchmark.py metrics disagree with the configuration")
    return fails


def case_precision(tool, tmp):
    """Every precision is measured (bf16 and fp16 are emulated: fp32 storage);
    fp8 where the model has FP8 layers (BERT, the decoders)."""
    r = run(tool, SMALL + ["--dtype", "fp32,bf16,fp16", "-b", "8", "-w", "2", "-i", "6", "-r", "2",
                           "-o", "p.json"], tmp)
    if r.returncode != 0:
        return [f"exit {r.returncode}: {r.stderr.strip()}"]
    rep = json.load(open(os.path.join(tmp, "p.json")))
    got = sorted((c["dtype"], c["status"]) for c in rep["configurations"])
    want = [("bf16", "ok"), ("fp16", "ok"), ("fp32", "ok")]
    fails = [] if got == want else [f"configurations {got}, wanted {want}"]
    for c in rep["configurations"]:
        if c["status"] == "ok" and not c["throughput"]["median"] > 0:
            fails.append(f"{c['dtype']}: throughput {c['throughput']['median']}")
    for bench in ("bert", "llama31_8b"):
        r = run(tool, SMALL + ["--bench", bench, "--dtype", "bf16,fp8", "-b", "2", "-w", "1",
                               "-i", "3", "-r", "1", "-o", "f.json"], tmp)
        if r.returncode != 0:
            fails.append(f"{bench} fp8: exit {r.returncode}: {r.stderr.strip()[-300:]}")
            continue
        rep = json.load(open(os.path.join(tmp, "f.json")))
        got = sorted((c["dtype"], c["status"], c["throughput"]["median"] > 0)
                     for c in rep["configurations"])
        if got != [("bf16", "ok", True), ("fp8", "ok", True)]:
            fails.append(f"{bench}: configurations {got}")
    return fails


def case_models(tool, tmp):
    """Each model's synthetic batch and its loader's batches go through both modes."""
    fails = []
    for bench in ("resnet", "unet3d", "bert", "dlrm_dcnv2"):
        for mode in ("train", "infer"):
            for data in ([], ["--generated", "--cache_dir", os.path.join(tmp, "cache")]):
                args = SMALL + ["--bench", bench, "--mode", mode, "--dtype", "fp32,bf16", "-b", "2",
                                "-w", "1", "-i", "2", "-r", "1", "-o", "m.json"] + data
                what = " ".join(args[2:8] + data[:1])
                r = run(tool, args, tmp)
                if r.returncode != 0:
                    fails.append(f"{what}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
                    continue
                rep = json.load(open(os.path.join(tmp, "m.json")))
                got = [(c["dtype"], c["status"], c["throughput"]["median"] > 0)
                       for c in rep["configurations"]]
                if sorted(got) != [("bf16", "ok", True), ("fp32", "ok", True)]:
                    fails.append(f"{what}: configurations {got}")
    return fails


def case_usage(tool, tmp):
    fails = []
    # A raw KiTS19 tree is prepared before any worker starts: a broken volume
    # is one line naming it.
    broken = os.path.join(tmp, "kits19", "case_00000", "imaging.nii.gz")
    os.makedirs(os.path.dirname(broken))
    with open(broken, "wb") as f:
        f.write(b"\x1f\x8b not a whole gzip stream")
    bad = [
        (["-w", "10", "-i", "10"], "warm-up not below iterations"),
        (["-w", "20", "-i", "5"], "warm-up above iterations"),
        (["-i", "0"], "no measured steps"),
        (["--dtype", "fp6"], "unknown precision"),
        (["--dtype", "fp8"], "FP8 for a model without FP8 layers"),
        (["-n", "0"], "zero devices"),
        (["-b", "8,x"], "bad batch list"),
        (["--mode", "serve"], "unknown mode"),
        (["--cuda_graph"], "CUDA graphs on the CPU"),
        (["--data", os.path.join(tmp, "missing")], "missing data folder"),
        (["--data", tmp, "--synthetic"], "two data modes"),
        (["--generated"], "generated data with the full model"),
        (SMALL + ["--generated", "--mode", "infer", "-b", "64", "-w", "1", "-i", "50",
                  "--cache_dir", os.path.join(tmp, "cache")], "more batches than the data has"),
        (["--bench", "unet3d", "--data", os.path.join(tmp, "kits19"), "-b", "1", "-w", "1",
          "-i", "2", "--cache_dir", os.path.join(tmp, "cache")], "broken raw KiTS19 volume"),
        (["--bench", "nosuch"], "unknown model"),
        (SMALL + ["--bench", "llama31_8b", "--tensor_parallel", "2"],
         "one process split over two"),
        (SMALL + ["--bench", "llama31_8b", "-n", "3", "--tensor_parallel", "2"],
         "three processes in groups of two"),
        (["--bench", "resnet", "-n", "2", "--tensor_parallel", "2"],
         "tensor parallelism of a model without it"),
        (["--tensor_parallel", "0"], "no tensor-parallel ranks"),
        (["--frobnicate"], "unknown flag"),
        (SMALL + ["-b", "8", "-o", os.path.join(tmp, "no", "such", "dir", "r.json")],
         "report in a missing folder"),
    ]
    for args, why in bad:
        r = run(tool, args + ["-r", "1"], tmp)
        lines = r.stderr.strip().splitlines()
        if why.startswith("broken"):  # after the line saying where it prepares the data
            lines = lines[-1:]
        if r.returncode != 2 or len(lines) != 1 or not lines[0].startswith("run_benchmark: "):
            fails.append(f"{why} ({' '.join(args)}): exit {r.returncode}, stderr {lines}")
        elif "samples/s" in r.stdout:
            fails.append(f"{why}: measured something")
        elif why.startswith("broken") and broken not in lines[0]:
            fails.append(f"{why}: the error does not name {broken}: {lines}")
    # Inference on generated data at the recipe's own batch (no -b): measured.
    r = run(tool, SMALL + ["--generated", "--mode", "infer", "-w", "1", "-i", "2", "-r", "1",
                           "--cache_dir", os.path.join(tmp, "cache")], tmp)
    if r.returncode != 0 or "samples/s" not in r.stdout:
        fails.append(f"generated inference at the recipe's batch: exit {r.returncode}, "
                     f"stderr {r.stderr.strip().splitlines()[-1:]}")
    return fails


def case_comm(tool, tmp):
    fails = []
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        return ["mpirun not found"]
    r = subprocess.run([mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2", "-x",
                        "OMP_NUM_THREADS=1", tool, "--comm", "--maxbytes", "64K", "--stepfactor",
                        "4", "-w", "1", "-i", "3", "-o", "c.json", "--markdown", "c.md"],
                       cwd=tmp, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return [f"--comm on 2 processes: exit {r.returncode}: {r.stderr[-1500:]}"]
    report = json.load(open(os.path.join(tmp, "c.json")))
    if open(os.path.join(tmp, "c.md")).read() != r.stdout:
        fails.append("the Markdown file differs from stdout")
    if (report["ranks"], report["nodes"], report["backend"]) != (2, 1, "MPI"):
        fails.append(f"ranks, nodes, backend: {report['ranks']}, {report['nodes']}, "
                     f"{report['backend']}")
    factor = {"all_reduce": 1.0, "all_gather": 0.5, "reduce_scatter": 0.5, "all_to_all": 0.5}
    sizes = [8, 32, 128, 512, 2048, 8192, 32768]
    for name in factor:
        rows = [x for x in report["results"] if x["collective"] == name]
        if [x["bytes"] for x in rows] != sizes:
            fails.append(f"{name}: sizes {[x['bytes'] for x in rows]}")
        for x in rows:
            algbw = x["bytes"] / (x["time_us"] * 1e-6) / 1e9
            if x["wrong"] != 0 or x["count"] * 4 != x["bytes"] or not close(
                    x["algbw_gbps"], algbw, 1e-6) or not close(
                    x["busbw_gbps"], algbw * factor[name], 1e-6):
                fails.append(f"{name} row {x}")
        if f"| {name} | 32768 | 8192 | float |" not in r.stdout:
            fails.append(f"{name}: no Markdown row for 32768 bytes")
    links = report["links"]
    if [(l["rank"], l["partners"]) for l in links] != [(0, 1), (1, 1)] or any(
            l["bytes_per_second"] <= 0 for l in links):
        fails.append(f"links {links}")
    # Under a launcher the processes are the devices; -n 1,2 measures the
    # first one, then both, and only rank 0 claims and writes the report.
    r = subprocess.run([mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2", "-x",
                        "OMP_NUM_THREADS=1", tool, "--size", "small", "-n", "1,2", "-b", "8", "-w",
                        "1", "-i", "2", "-r", "1", "-o", "launched.json"], cwd=tmp,
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        fails.append(f"-n 1,2 under mpirun -np 2: exit {r.returncode}: {r.stderr[-800:]}")
    else:
        configs = json.load(open(os.path.join(tmp, "launched.json")))["configurations"]
        if [(c["devices"], c["nodes"], c["status"]) for c in configs] != [(1, 1, "ok"),
                                                                          (2, 1, "ok")]:
            fails.append(f"-n 1,2 under mpirun -np 2: configurations {configs}")
    # Under a launcher -n lists at most the launched count.
    r = subprocess.run([mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2", tool,
                        "--size", "small", "-n", "1,3", "-b", "8"], cwd=tmp, capture_output=True,
                       text=True, timeout=120)
    if r.returncode != 2 or "give counts up to 2" not in r.stderr:
        fails.append(f"-n 1,3 under mpirun -np 2: exit {r.returncode}: {r.stderr[-500:]}")
    one = run(tool, ["--comm", "--maxbytes", "1K", "-o", "one.json"], tmp)
    if one.returncode != 0 or json.load(open(os.path.join(tmp, "one.json")))["ranks"] != 1:
        fails.append(f"--comm alone: exit {one.returncode}: {one.stderr.strip()}")
    bad = [
        (["--comm", "--bench", "resnet"], "a model's flag"),
        (["--comm", "-n", "4"], "devices without a launcher"),
        (["--comm", "--minbytes", "1M", "--maxbytes", "1K"], "min above max"),
        (["--comm", "--maxbytes", "3T"], "unknown unit"),
        (["--comm", "--stepfactor", "1"], "factor 1"),
        (["--comm", "--collectives", "all_sum"], "unknown collective"),
        (["--maxbytes", "1K"], "sweep flag without --comm"),
        (["--comm", "--maxbytes", "1K", "-o", os.path.join(tmp, "no", "r.json")],
         "report in a missing folder"),
    ]
    for args, why in bad:
        r = run(tool, args, tmp)
        lines = r.stderr.strip().splitlines()
        if r.returncode != 2 or len(lines) != 1 or not lines[0].startswith("run_benchmark: "):
            fails.append(f"{why} ({' '.join(args)}): exit {r.returncode}, stderr {lines}")
        elif r.stdout:
            fails.append(f"{why}: measured something")
    return fails


def case_interrupt(tool, tmp):
    report = os.path.join(tmp, "r.json")
    # The first configuration is a thirtieth of the work, so the signal lands
    # in a later one; the wait is generous because CI runs tests side by side.
    proc = subprocess.Popen([tool] + SMALL + ["-b", "4,8,16,32,64", "-w", "2", "-i", "50",
                                              "-r", "3", "-o", report],
                            cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 240
    measured = 0
    while time.time() < deadline and proc.poll() is None:
        try:
            measured = len(json.load(open(report))["configurations"])
        except (OSError, ValueError, KeyError):
            measured = 0
        if measured >= 1:
            break
        time.sleep(0.05)
    if proc.poll() is not None:
        return [f"the job ended (exit {proc.returncode}) before it could be interrupted"]
    if measured < 1:
        proc.kill()
        proc.communicate()
        return ["no configuration was measured within 240 s"]
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=50)
    fails = []
    if proc.returncode != 1:
        fails.append(f"exit {proc.returncode} after SIGINT, expected 1")
    rep = json.load(open(report))
    if rep["complete"] or not 1 <= len(rep["configurations"]) < 5:
        fails.append(f"report after SIGINT: complete={rep['complete']}, "
                     f"{len(rep['configurations'])} configurations")
    if "interrupted" not in err:
        fails.append(f"stderr does not say it was interrupted: {err.strip()[-200:]}")
    return fails


def case_charts(tool, tmp):
    from headless_chromium import find_chromium, looks_blank, render
    chromium = find_chromium()
    if not chromium:
        print("SKIP: Chromium is not installed (scripts/install_deps.sh --test installs it)")
        sys.exit(77)
    fails = []
    for mode, charts in (("train", ["throughput.svg", "scaling.svg"]),
                         ("infer", ["throughput.svg", "scaling.svg", "latency.svg"])):
        plots = os.path.join(tmp, mode)
        r = run(tool, SMALL + ["--mode", mode, "-n", "1,2", "-b", "1,4,16", "-w", "1", "-i", "4",
                               "-r", "2", "--plot", plots], tmp)
        if r.returncode != 0:
            fails.append(f"{mode}: exit {r.returncode}: {r.stderr.strip()}")
            continue
        for name in charts:
            path = os.path.join(plots, name)
            svg = open(path).read()
            if "<script" in svg or "http://" in svg.replace("http://www.w3.org/2000/svg", ""):
                fails.append(f"{mode}/{name}: not self-contained")
            _, png, _ = render(chromium, path, width=760, height=380)
            blank, colours, inked, sampled = looks_blank(png, min_colours=4, min_inked=0.01)
            if blank:
                fails.append(f"{mode}/{name}: blank in Chromium ({colours} colours, "
                             f"{inked}/{sampled} inked)")
            if "<path d=\"M" not in svg:
                fails.append(f"{mode}/{name}: no data line drawn")
    return fails


def case_tensor(tool, tmp):
    fails = []
    args = SMALL + ["--bench", "llama31_8b", "-n", "2,4", "--tensor_parallel", "2", "-b", "1",
                    "-w", "1", "-i", "2", "-r", "1", "-o", "t.json", "--markdown", "t.md"]
    r = run(tool, args, tmp)
    if r.returncode != 0:
        return [f"exit {r.returncode}: {r.stderr.strip()[-500:]}"]
    rep = json.load(open(os.path.join(tmp, "t.json")))
    if rep.get("tensor_parallel") != 2:
        fails.append(f"tensor_parallel {rep.get('tensor_parallel')} in the report")
    got = [(c["devices"], c["status"], c.get("samples_per_repeat")) for c in rep["configurations"]]
    # 2 steps of batch 1 on each data-parallel rank: 1 of them on 2 processes, 2 on 4.
    if got != [(2, "ok", 2), (4, "ok", 4)]:
        fails.append(f"configurations {got}")
    if "Tensor parallel 2" not in open(os.path.join(tmp, "t.md")).read():
        fails.append("the Markdown report does not state the tensor parallelism")
    return fails


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="run_benchmark")
    ap.add_argument("--case", required=True,
                    choices=["train", "infer", "precision", "models", "usage", "comm",
                             "interrupt", "charts", "tensor"])
    args = ap.parse_args()
    if np is None and args.case in ("train", "infer"):
        print("SKIP: numpy is not installed (scripts/install_deps.sh --test installs python3-numpy)")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        fails = globals()["case_" + args.case](os.path.abspath(args.bin), tmp)
    for f in fails:
        print("FAIL:", f)
    if not fails:
        print(f"PASS: {args.case}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
