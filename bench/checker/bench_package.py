#!/usr/bin/env python3
# Run: python3 bench/checker/bench_package.py --tool build/bin/compliance_check [--corpus ../shared/corpus]
#      python3 bench/checker/bench_package.py --tool build/bin/compliance_check --round DIR --ruleset 3.0.0
"""Speed of whole-package checking: compliance_check against the official tools.

Every package of the shared corpus (v3.0 -> 3.0.0, v5.0 -> 5.0.0), or with
--round every organisation folder of one published round (a checkout of
mlcommons/training_results_vX.Y: its <org>/results and <org>/systems), on
copies in a temporary directory, in the same run:
  ours      one `compliance_check --csv out.csv <tree>` for all packages (both
            cores, the default --jobs), median of --repeats; the same with
            --html added (the report's overhead), median of --repeats;
  official  per package `python3 -m mlperf_logging.package_checker <org> training R`
            then `python3 -m mlperf_logging.result_summarizer <org> training R --csv`,
            one after the other, as the official order has it (skip with --no-official).
Prints the wall times, MB/s of result-log text and the ratios.
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


def packages_of(args, dest_root):
    """[(copied org folder, ruleset)] in dest_root/copy."""
    sources = []
    if args.round:
        for org in sorted(pathlib.Path(args.round).iterdir()):
            sources.append((org, 'round', args.ruleset))
    else:
        for rnd, ruleset in ROUND_RULESET.items():
            for org in sorted(pathlib.Path(args.corpus, rnd).iterdir()):
                sources.append((org, rnd, ruleset))
    out = []
    for org, rnd, ruleset in sources:
        if (org / 'systems').is_dir() and (org / 'results').is_dir():
            dest = dest_root / 'copy' / rnd / org.name
            shutil.copytree(org, dest, ignore=shutil.ignore_patterns('benchmarks', 'code'))
            out.append((dest, ruleset))
    return out


def time_ours(cmd, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True)
        times.append(time.perf_counter() - t)
        if p.returncode not in (0, 1):
            sys.exit(f'compliance_check failed: {p.stderr.decode()[:500]}')
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--tool', required=True)
    ap.add_argument('--corpus', default=str(pathlib.Path(__file__).resolve().parents[3] / 'shared' / 'corpus'))
    ap.add_argument('--round', help='a published round: a folder of organisation folders')
    ap.add_argument('--ruleset', help='the ruleset of --round, e.g. 3.0.0')
    ap.add_argument('--repeats', type=int, default=5)
    ap.add_argument('--no-official', action='store_true')
    args = ap.parse_args()
    if args.round and not args.ruleset:
        sys.exit('--round needs --ruleset')
    tool = str(pathlib.Path(args.tool).resolve())
    with tempfile.TemporaryDirectory() as work:
        w = pathlib.Path(work)
        packages = packages_of(args, w)
        logs = [f for p, _ in packages for f in p.glob('results/*/*/result_*.txt')]
        mb = sum(f.stat().st_size for f in logs) / 1e6
        ruleset = ['--ruleset', args.ruleset] if args.round else []
        tree = w / 'copy' / 'round' if args.round else w / 'copy'
        base = [tool] + ruleset + ['--csv', str(w / 'ours.csv'), str(tree)]
        ours = time_ours(base, args.repeats)
        html = time_ours(base[:1] + ['--html', str(w / 'report.html')] + base[1:], args.repeats)
        official = None
        official_rc = {}
        if not args.no_official:
            cwd = w / 'cwd'
            cwd.mkdir()
            t = time.perf_counter()
            for org, rs in packages:
                # The checker exits 0 on a failed package; non-zero means it stopped on an exception.
                pc = subprocess.run([sys.executable, '-m', 'mlperf_logging.package_checker', str(org), 'training',
                                     rs, '--log_output', str(cwd / 'pc.log')], cwd=cwd, capture_output=True)
                subprocess.run([sys.executable, '-m', 'mlperf_logging.result_summarizer', str(org), 'training', rs,
                                '--csv', str(cwd / f'{org.name}.csv')], cwd=cwd, capture_output=True)
                official_rc[org.name] = pc.returncode
            official = time.perf_counter() - t
    print(f'packages: {len(packages)}, result logs: {len(logs)}, {mb:.1f} MB of log text')
    print(f'ours (compliance_check, all packages, median of {args.repeats}): {ours:.3f} s ({mb / ours:.0f} MB/s)')
    print(f'ours with --html (median of {args.repeats}):                     {html:.3f} s '
          f'(+{100 * (html / ours - 1):.0f}%)')
    if official is not None:
        print(f'official (package_checker + result_summarizer per package):      {official:.3f} s '
              f'({mb / official:.1f} MB/s)')
        print(f'ratio: {official / ours:.1f}x')
        failed = sorted(org for org, rc in official_rc.items() if rc != 0)
        print(f'official package_checker stopped with an exception on {len(failed)} of {len(official_rc)} '
              f'packages: {", ".join(failed) or "none"}')


if __name__ == '__main__':
    main()
