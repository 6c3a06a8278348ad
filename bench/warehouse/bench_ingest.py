#!/usr/bin/env python3
# Run: python3 bench/warehouse/bench_ingest.py --results-db build/bin/results_db \
#        --compliance-check build/bin/compliance_check --round DIR [--repeats 5]
"""Speed of results_db against compliance_check on one published round.

DIR is a round folder of a results repository (e.g. training_results_v3.0 or
its vN.M copy: organisation folders holding results/ and systems/). In the
same run, alternating, median of --repeats:
  check      `compliance_check DIR` (both cores, the default --jobs)
  ingest     `results_db --db fresh.db ingest DIR` into a new SQLite file: hashing
             every file, the same checking, and storing every row
  re-ingest  the same again into the filled database (every package unchanged)
  dashboard  `results_db dashboard --out D` for every benchmark of the round
Prints the times and the ingest/check ratio (the goal: at most 2).
"""
import argparse
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def timed(cmd, ok=(0, 1, 2)):
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True)
    elapsed = time.perf_counter() - t
    if p.returncode not in ok:
        sys.exit(f'{cmd[0]} failed ({p.returncode}): {p.stderr.decode()[:500]}')
    return elapsed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--results-db', required=True)
    ap.add_argument('--compliance-check', required=True)
    ap.add_argument('--round', required=True)
    ap.add_argument('--repeats', type=int, default=5)
    args = ap.parse_args()
    logs = list(pathlib.Path(args.round).glob('*/results/*/*/result_*.txt'))
    mb = sum(p.stat().st_size for p in logs) / 1e6
    times = {'check': [], 'ingest': [], 're-ingest': [], 'dashboard': []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            times['check'].append(timed([args.compliance_check, args.round]))
            db = os.path.join(tmp, f'w{i}.db')
            times['ingest'].append(timed([args.results_db, '--db', db, 'ingest', args.round]))
            times['re-ingest'].append(timed([args.results_db, '--db', db, 'ingest', args.round]))
            out = os.path.join(tmp, f'dash{i}')
            times['dashboard'].append(timed([args.results_db, '--db', db, 'dashboard', '--out', out],
                                            ok=(0,)))
            pages = len(os.listdir(out))
        size = os.path.getsize(db) / 1e6
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f'round {args.round}: {len(logs)} logs, {mb:.0f} MB; median of {args.repeats}')
    for k, v in med.items():
        print(f'  {k:<10} {v:7.2f} s   (runs: {", ".join(f"{t:.2f}" for t in times[k])})')
    print(f'  ingest / check = {med["ingest"] / med["check"]:.2f} (goal <= 2); '
          f'database {size:.1f} MB; dashboard {pages} pages')


if __name__ == '__main__':
    main()
