#!/usr/bin/env python3
# Run: python3 bench/checker/bench_package.py --tool build/bin/compliance_check [--corpus ../shared/corpus]
"""Speed of whole-package checking: compliance_check against the official tools.

Every package of the shared corpus (v3.0 -> 3.0.0, v5.0 -> 5.0.0), on copies in a
temporary directory, in the same run:
  ours      one `compliance_check --csv out.csv <corpus>` for all packages (both
            cores, the default --jobs), median of --repeats;
  official  per package `python3 -m mlperf_logging.package_checker <org> training R`
            then `python3 -m mlperf_logging.result_summarizer <org> training R --csv`,
            one after the other, as the official order has it.
Prints both wall times and the ratio (goal: at least 50x).
"""
import argparse
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROUND_RULESET = {'v3.0': '3.0.0', 'v5.0': '5.0.0'}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--tool', required=True)
    ap.add_argument('--corpus', default=str(pathlib.Path(__file__).resolve().parents[3] / 'shared' / 'corpus'))
    ap.add_argument('--repeats', type=int, default=5)
    args = ap.parse_args()
    tool = str(pathlib.Path(args.tool).resolve())
    with tempfile.TemporaryDirectory() as work:
        w = pathlib.Path(work)
        packages = []
        for rnd, ruleset in ROUND_RULESET.items():
            for org in sorted(pathlib.Path(args.corpus, rnd).iterdir()):
                if (org / 'systems').is_dir() and (org / 'results').is_dir():
                    dest = w / 'copy' / rnd / org.name
                    shutil.copytree(org, dest)
                    packages.append((dest, ruleset))
        n_logs = sum(len(list(p.glob('results/*/*/result_*.txt'))) for p, _ in packages)
        ours = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            p = subprocess.run([tool, '--csv', str(w / 'ours.csv'), str(w / 'copy')], capture_output=True)
            ours.append(time.perf_counter() - t)
            if p.returncode not in (0, 1):
                sys.exit(f'compliance_check failed: {p.stderr.decode()[:500]}')
        cwd = w / 'cwd'
        cwd.mkdir()
        t = time.perf_counter()
        for org, ruleset in packages:
            subprocess.run([sys.executable, '-m', 'mlperf_logging.package_checker', str(org), 'training', ruleset,
                            '--log_output', str(cwd / 'pc.log')], cwd=cwd, capture_output=True, check=True)
            subprocess.run([sys.executable, '-m', 'mlperf_logging.result_summarizer', str(org), 'training', ruleset,
                            '--csv', str(cwd / f'{org.name}.csv')], cwd=cwd, capture_output=True, check=True)
        official = time.perf_counter() - t
    med = statistics.median(ours)
    print(f'packages: {len(packages)}, result logs: {n_logs}')
    print(f'ours (compliance_check, all packages, median of {args.repeats}): {med:.3f} s')
    print(f'official (package_checker + result_summarizer per package):      {official:.3f} s')
    print(f'ratio: {official / med:.1f}x')


if __name__ == '__main__':
    main()
