#!/usr/bin/env python3
# Run: python3 bench/checker/bench_compliance.py --tool build/bin/compliance_check [--corpus ../shared/corpus]
"""Speed of compliance_check against the official Python checker, same run, same logs.

Every result log of the shared corpus is checked under its own ruleset (v3.0 ->
3.0.0, v5.0 -> 5.0.0):
  ours            one invocation per ruleset with all its files (median of --repeats),
                  at the default --jobs and at --jobs 1;
  official CLI    `python3 -m mlperf_logging.compliance_checker` once per log, one
                  after the other, as users run it;
  official lib    the official module imported once, its check called per log in
                  this process (no interpreter start-up: the fairest comparison).
Prints wall times, the ratios and ours in MB/s of log text. The issue's goal is
ours at least 100x faster than the official checker. The verdicts of the three
are compared too; a benchmark of tools that disagree would mean nothing.
"""
import argparse
import importlib.metadata
import json
import logging
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROUND_RULESET = {'v3.0': '3.0.0', 'v5.0': '5.0.0'}


def corpus_logs(corpus):
    """[(path, ruleset)] for every result_N.txt of the corpus."""
    logs = []
    for rnd, ruleset in sorted(ROUND_RULESET.items()):
        for root, _, files in sorted(os.walk(os.path.join(corpus, rnd))):
            logs += [(os.path.join(root, f), ruleset) for f in sorted(files) if re.fullmatch(r'result_\d+\.txt', f)]
    return logs


def by_ruleset(logs):
    groups = {}
    for path, ruleset in logs:
        groups.setdefault(ruleset, []).append(path)
    return groups


def run_ours(tool, logs, jobs):
    """Wall seconds for all logs (one call per ruleset) and {path: verdict}."""
    verdicts = {}
    start = time.perf_counter()
    outputs = []
    for ruleset, paths in sorted(by_ruleset(logs).items()):
        cmd = [tool, '--ruleset', ruleset, '--json', *paths] + ([f'--jobs={jobs}'] if jobs else [])
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode not in (0, 1):
            sys.exit(f'bench_compliance: {tool} exited {p.returncode}: {p.stderr.strip()[:300]}')
        outputs.append(p.stdout)
    wall = time.perf_counter() - start
    for out in outputs:
        for entry in json.loads(out)['logs']:
            verdicts[os.path.realpath(entry['path'])] = entry['verdict']
    return wall, verdicts


def run_official_cli(python, logs):
    verdicts = {}
    with tempfile.TemporaryDirectory(prefix='bench_cc_') as tmp:
        start = time.perf_counter()
        for path, ruleset in logs:
            p = subprocess.run([python, '-m', 'mlperf_logging.compliance_checker', '--usage', 'training',
                                '--ruleset', ruleset, '--log_output', os.path.join(tmp, 'cc.log'), path],
                               cwd=tmp, capture_output=True)
            verdicts[os.path.realpath(path)] = 'PASS' if p.returncode == 0 else 'FAIL'
        wall = time.perf_counter() - start
    return wall, verdicts


def run_official_lib(logs):
    """The official check called in this process, logging to a file as the CLI does."""
    from mlperf_logging.compliance_checker import mlp_compliance
    verdicts = {}
    with tempfile.TemporaryDirectory(prefix='bench_cc_') as tmp:
        root = logging.getLogger()
        handler = logging.FileHandler(os.path.join(tmp, 'cc.log'))
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        start = time.perf_counter()
        for path, ruleset in logs:
            checker = mlp_compliance.make_checker('training', ruleset, False, False)
            try:
                valid = mlp_compliance.main(path, f'training_{ruleset}/common.yaml', checker)[0]
            except Exception:  # the CLI would crash with exit 1
                valid = False
                mlp_compliance.enqueued_configs.clear()  # module-global queue a crash leaves behind
            verdicts[os.path.realpath(path)] = 'PASS' if valid else 'FAIL'
        wall = time.perf_counter() - start
        root.removeHandler(handler)
        handler.close()
    return wall, verdicts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--tool', required=True, help='our compliance_check binary')
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument('--corpus', default=os.path.join(here, '..', '..', '..', 'shared', 'corpus'))
    ap.add_argument('--repeats', type=int, default=9, help='repeats of ours (median reported)')
    ap.add_argument('--official-repeats', type=int, default=1, help='repeats of each official variant')
    ap.add_argument('--python', default=sys.executable, help='interpreter with mlperf-logging')
    args = ap.parse_args()

    logs = corpus_logs(args.corpus)
    if not logs:
        sys.exit(f'bench_compliance: no result logs under {args.corpus}')
    mb = sum(os.path.getsize(p) for p, _ in logs) / 1e6
    version = importlib.metadata.version('mlperf-logging')
    print(f'{len(logs)} logs, {mb:.2f} MB, rulesets {sorted(by_ruleset(logs))}; '
          f'official mlperf-logging {version}; {os.cpu_count()} CPUs')

    run_ours(args.tool, logs, 0)  # warm the page cache and the binary
    ours = {}
    for jobs in (0, 1):
        times = []
        for _ in range(args.repeats):
            wall, verdicts_ours = run_ours(args.tool, logs, jobs)
            times.append(wall)
        ours[jobs] = statistics.median(times)
        label = 'default --jobs' if jobs == 0 else '--jobs 1'
        print(f'ours ({label}):   median {ours[jobs]:.4f} s of {args.repeats} '
              f'(min {min(times):.4f}, max {max(times):.4f}), {mb / ours[jobs]:.1f} MB/s')

    cli_runs = [run_official_cli(args.python, logs) for _ in range(args.official_repeats)]
    lib_runs = [run_official_lib(logs) for _ in range(args.official_repeats)]
    cli, verdicts_cli = min(w for w, _ in cli_runs), cli_runs[0][1]
    lib, verdicts_lib = min(w for w, _ in lib_runs), lib_runs[0][1]
    print(f'official CLI (one process per log): {cli:.2f} s')
    print(f'official lib (in-process, per log): {lib:.2f} s')
    for jobs, label in ((0, 'default --jobs'), (1, '--jobs 1')):
        print(f'ratio official/ours ({label}): CLI {cli / ours[jobs]:.0f}x, lib {lib / ours[jobs]:.0f}x')

    for name, verdicts in (('ours', verdicts_ours), ('official lib', verdicts_lib)):
        differ = [p for p in verdicts_cli if verdicts_cli[p] != verdicts.get(p)]
        if differ:
            print(f'WARNING: {name} differs from the official CLI on {len(differ)} logs, e.g. {differ[0]}')
    fails = sum(v == 'FAIL' for v in verdicts_cli.values())
    print(f'verdicts: {len(logs) - fails} PASS, {fails} FAIL (official CLI)')
    for peer, seconds in (('official CLI, as users run it', cli), ('official in-process', lib)):
        ratio = seconds / ours[0]
        print(f'goal >= 100x vs {peer}: {"met" if ratio >= 100 else "NOT met"} ({ratio:.0f}x at default --jobs)')


if __name__ == '__main__':
    main()
