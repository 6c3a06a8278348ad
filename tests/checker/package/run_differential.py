#!/usr/bin/env python3
"""Differential test of checker/package against the official mlperf_logging tools.

For every results/<system>/<benchmark> directory of the corpus packages (the shared
corpus, or tests/fixtures/corpus in a bare clone) it
compares package_score_report (ours) with
  python3 -m mlperf_logging.rcp_checker --rcp_version R --verbose <dir>
      (pass/fail, message, the RCP record's statistics, the normalisation factor),
  python3 -m mlperf_logging.package_checker <org> training R
      (the scaling.json it leaves in each directory), then
  python3 -m mlperf_logging.result_summarizer <org> training R --csv out.csv
      (the score of each directory, 1e-9 relative),
always on a copy of the package in a temporary directory, in that order. It also
compares the statistics and pruned sets of every embedded RCP table with the
official RCP_Checker class.

Usage: run_differential.py --report build*/bin/package_score_report [--corpus ../shared/corpus]
Exit 0 when everything agrees, 1 on a difference, 77 when the corpus or the
official tools are missing (ctest SKIP_RETURN_CODE).
"""
import argparse
import ast
import csv
import json
import math
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

CORPORA = [('v3.0/NVIDIA', '3.0.0'), ('v5.0/NVIDIA', '5.0.0')]
REL = 1e-9
failures = []
checks = {'rcp_dirs': 0, 'record_stats': 0, 'scaling_json': 0, 'scores': 0, 'tables': 0}


def close(a, b, rel=REL):
    if a is None or b is None:
        return a is None and b is None
    return a == b or abs(a - b) <= rel * max(abs(a), abs(b))


def fail(what):
    failures.append(what)
    print('DIFF:', what)


def ours(report, org, ruleset):
    out = subprocess.run([report, f'--ruleset={ruleset}', str(org)], check=True,
                         capture_output=True, text=True).stdout
    lines = [json.loads(l) for l in out.splitlines() if l.strip()]
    return {(l['system'], l['benchmark']): l for l in lines if 'system' in l}


def literal(text):
    # numpy 2 prints np.float64(x) inside the record repr.
    return ast.literal_eval(re.sub(r'np\.float64\(([^)]*)\)', r'\1', text))


def official_rcp(bench_dir, ruleset, cwd):
    log = pathlib.Path(cwd) / 'rcp.log'
    if log.exists():
        log.unlink()
    p = subprocess.run([sys.executable, '-m', 'mlperf_logging.rcp_checker', '--rcp_version', ruleset,
                        '--verbose', '--log_output', str(log), str(bench_dir)],
                       cwd=cwd, capture_output=True, text=True)
    text = log.read_text() if log.exists() else p.stderr
    result = {'exit': p.returncode, 'record': None, 'factor': None, 'message': None}
    for line in text.splitlines():
        m = re.search(r' RCP Record: (\{.*\})$', line)
        if m:
            result['record'] = literal(m.group(1))
        m = re.search(r'normalized by factor of .* = (\S+)$', line)
        if m:
            result['factor'] = float(m.group(1))
        m = re.search(r'^(?:INFO|ERROR) - (.*), RCP test (PASSED|FAILED)', line)
        if m:
            result['message'] = m.group(1)
    return result


def compare_rcp(key, mine, theirs):
    checks['rcp_dirs'] += 1
    rcp = mine['rcp']
    if 'error' in rcp:
        if theirs['message'] is not None:
            fail(f'{key}: we raise ({rcp["error"]}), official says {theirs["message"]}')
        return
    if rcp['passed'] != (theirs['exit'] == 0) or rcp['message'] != theirs['message']:
        fail(f'{key}: rcp ours {rcp["passed"]} {rcp["message"]!r}, official exit {theirs["exit"]} '
             f'{theirs["message"]!r}')
    if theirs['record'] is not None:
        checks['record_stats'] += 1
        rec, off = rcp['record'], theirs['record']
        for ours_key, off_key in [('mean', 'RCP Mean'), ('stdev', 'RCP Stdev'),
                                  ('min_epochs', 'Min Epochs'), ('max_speedup', 'Max Speedup')]:
            if not close(rec[ours_key], float(off[off_key])):
                fail(f'{key}: record {ours_key} ours {rec[ours_key]!r} official {off[off_key]!r}')
        if rec['global_batch_size'] != off['BS']:
            fail(f'{key}: record BS ours {rec["global_batch_size"]} official {off["BS"]}')
    if theirs['factor'] is not None and not close(rcp['normalization_factor'], theirs['factor']):
        fail(f'{key}: factor ours {rcp["normalization_factor"]!r} official {theirs["factor"]!r}')


def packages(corpus):
    """The CORPORA entries that are whole packages here (the fixtures have one)."""
    return [(rel, rs) for rel, rs in CORPORA if (corpus / rel / 'systems').is_dir()]


def check_corpus(report, corpus, rel_org, ruleset):
    src = corpus / rel_org
    mine = ours(report, src, ruleset)
    with tempfile.TemporaryDirectory() as tmp:
        org = pathlib.Path(tmp) / src.name
        shutil.copytree(src, org)
        for (system, benchmark), line in sorted(mine.items()):
            theirs = official_rcp(org / 'results' / system / benchmark, ruleset, tmp)
            compare_rcp(f'{rel_org}/{system}/{benchmark}', line, theirs)
        subprocess.run([sys.executable, '-m', 'mlperf_logging.package_checker', str(org), 'training', ruleset,
                        '--log_output', str(pathlib.Path(tmp) / 'pc.log')],
                       cwd=tmp, check=True, capture_output=True)
        for (system, benchmark), line in sorted(mine.items()):
            checks['scaling_json'] += 1
            path = org / 'results' / system / benchmark / 'scaling.json'
            official = json.loads(path.read_text())['scaling_factor'] if path.exists() else 1.0
            if not close(line['scaling_factor'], official):
                fail(f'{rel_org}/{system}/{benchmark}: scaling after package_checker ours '
                     f'{line["scaling_factor"]!r} official {official!r}')
        out_csv = pathlib.Path(tmp) / 'out.csv'
        subprocess.run([sys.executable, '-m', 'mlperf_logging.result_summarizer', str(org), 'training', ruleset,
                        '--csv', str(out_csv)], cwd=tmp, check=True, capture_output=True)
        with open(out_csv) as f:
            rows = list(csv.DictReader(f))
    for row in rows:
        system = row['details_url'].rsplit('/', 1)[1][:-len('.json')]
        for (s, benchmark), line in mine.items():
            if s != system:
                continue
            checks['scores'] += 1
            cell = row.get(benchmark, '')
            official = float(cell) if cell not in ('', None) else None
            if not close(line['score'], official):
                fail(f'{rel_org}/{system}/{benchmark}: score ours {line["score"]!r} official {official!r}')


def check_tables(report):
    from mlperf_logging.rcp_checker import rcp_checker
    out = subprocess.run([report, '--rcp_tables'], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        t = json.loads(line)
        checks['tables'] += 1
        name = f'{t["ruleset"]}/{t["benchmark"]}'
        try:
            off = rcp_checker.RCP_Checker('training', t['ruleset'], t['benchmark'], False)
        except KeyError:
            if 'error' not in t:
                fail(f'{name}: official raises KeyError, we load it')
            continue
        if 'error' in t:
            fail(f'{name}: we fail ({t["error"]}), official loads it')
            continue
        off_records = list(off.rcp_data.items())
        if [r['name'] for r in t['records']] != [n for n, _ in off_records]:
            fail(f'{name}: record order differs')
            continue
        for mine, (_, rec) in zip(t['records'], off_records):
            for k, ok in [('mean', 'RCP Mean'), ('stdev', 'RCP Stdev'), ('min_epochs', 'Min Epochs'),
                          ('max_speedup', 'Max Speedup')]:
                if not (mine[k] == float(rec[ok]) or close(mine[k], float(rec[ok]), 1e-12)):
                    fail(f'{name} {mine["name"]}: {k} ours {mine[k]!r} official {float(rec[ok])!r}')
        if t['pruned'] != list(off.pruned_rcp_data.keys()):
            fail(f'{name}: pruned ours {t["pruned"]} official {list(off.pruned_rcp_data.keys())}')


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--report', required=True)
    ap.add_argument('--corpus', default=str(pathlib.Path(__file__).resolve().parents[4] / 'shared' / 'corpus'))
    args = ap.parse_args()
    corpus = pathlib.Path(args.corpus)
    try:
        import mlperf_logging  # noqa: F401
    except ImportError:
        print('SKIP: mlperf_logging is not installed')
        return 77
    if not packages(corpus):
        print(f'SKIP: no corpus package under {corpus}')
        return 77
    check_tables(args.report)
    for rel_org, ruleset in packages(corpus):
        check_corpus(args.report, corpus, rel_org, ruleset)
    print('checked:', json.dumps(checks))
    print('FAILED' if failures else 'ALL AGREE', f'({len(failures)} differences)')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
