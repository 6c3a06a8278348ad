#!/usr/bin/env python3
"""Differential test of `compliance_check <org folder>` (whole-package mode).

For each corpus package (the shared corpus, or tests/fixtures/corpus in a bare
clone), and for mutated copies of a one-directory
package, it runs on a copy in a temporary directory, with a temporary cwd:
  ours:     compliance_check --json --csv ours.csv --results-table table.csv <org>
            (must leave the tree unchanged)
  official: python3 -m mlperf_logging.package_checker <org> training R
            then python3 -m mlperf_logging.result_summarizer <org> training R --csv off.csv
and compares the package verdict, per directory the RCP pass/fail and
message, the scaling.json files package_checker leaves (against ours written
with --write-scaling on a second copy), the summarizer CSV (every column;
scores to 1e-9 relative), and the summarizer's detailed CSV against our full
results table (every column the two share, for every system and benchmark:
time to train, energy from power logs, batch size, samples to converge, RCP
status and scaling factor, and the description columns). It also reproduces official_time_to_train.csv through
--claims and feeds bad trees (empty, symlink loops, a FIFO, a sparse multi-GB
file, non-UTF-8 names) that must give a clear error without crash or hang.

Usage: run_package_cli_differential.py --bin build*/bin/compliance_check --corpus ../shared/corpus
Exit 0 agree, 1 differ, 77 when the corpus or mlperf_logging is missing.
"""
import argparse
import csv
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

REL = 1e-9
failures = []
counts = {'packages': 0, 'rcp_dirs': 0, 'scaling_files': 0, 'csv_cells': 0, 'table_cells': 0,
          'energy_cells': 0, 'claims': 0, 'bad_trees': 0}
# The description columns the summarizer's tables and our results table share.
SHARED_COLUMNS = ['division', 'availability', 'submitter', 'system', 'number_of_nodes',
                  'host_processor_model_name', 'host_processors_count', 'accelerator_model_name',
                  'accelerators_count', 'framework', 'notes', 'private_id', 'details_url', 'code_url']
METRICS = ['time_to_train', 'Energy', 'GBS', 'samples_to_converge', 'RCP', 'rcp_scaling_factor']


def fail(what):
    failures.append(what)
    print('DIFF:', what)


def tree_digest(root):
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(root)):
        dirnames.sort()
        for name in sorted(filenames):
            p = os.path.join(dirpath, name)
            h.update(p.encode('utf-8', 'surrogateescape'))
            if os.path.isfile(p) and not os.path.islink(p):
                with open(p, 'rb') as f:
                    h.update(f.read())
    return h.hexdigest()


def scaling_files(org):
    out = {}
    for p in sorted(pathlib.Path(org, 'results').glob('*/*/scaling.json')):
        out[str(p.relative_to(org))] = p.read_bytes()
    return out


def official(org, ruleset, work):
    cwd = pathlib.Path(work, 'cwd')
    cwd.mkdir(exist_ok=True)
    log = cwd / 'pc.log'
    subprocess.run([sys.executable, '-m', 'mlperf_logging.package_checker', str(org), 'training', ruleset,
                    '--log_output', str(log)], cwd=cwd, capture_output=True, text=True)
    text = log.read_text() if log.exists() else ''
    verdict = 'PASS' if 'PACKAGE CHECKER FOUND NO ERRORS, SUCCESS' in text else 'FAIL'
    rcp = {}
    current = None
    for line in text.splitlines():
        m = re.search(r'Running compliance checks in dir (\S+)', line)
        if m:
            current = os.path.relpath(m.group(1), org)
        m = re.search(r'RCP Test (Passed|Failed): (.*)$', line)
        if m and current:
            rcp[current] = ('PASS' if m.group(1) == 'Passed' else 'FAIL', m.group(2))
    crashed = 'Traceback' in text or 'PACKAGE CHECKER FOUND' not in text
    scaling = scaling_files(org)
    out_csv = cwd / 'off.csv'
    subprocess.run([sys.executable, '-m', 'mlperf_logging.result_summarizer', str(org), 'training', ruleset,
                    '--csv', str(out_csv)], cwd=cwd, capture_output=True, text=True)
    rows = list(csv.reader(open(out_csv))) if out_csv.exists() else None
    detailed = cwd / 'off_detailed.csv'
    detailed_rows = list(csv.DictReader(open(detailed))) if detailed.exists() else None
    return verdict, rcp, crashed, scaling, rows, detailed_rows


def compare_table(name, off_detailed, our_table):
    """Each (system, benchmark) of the summarizer's detailed table against our row."""
    ours_by_key = {(r['details_url'], r['benchmark']): r for r in our_table}
    seen = set()
    for off in off_detailed:
        benchmarks = [c.split(':')[0] for c in off if c.endswith(':rcp_scaling_factor') and off[c] != '']
        for b in benchmarks:
            key = (off['details_url'], b)
            seen.add(key)
            our = ours_by_key.get(key)
            if our is None:
                fail(f'{name}: results table has no row for {key}')
                continue
            for col in SHARED_COLUMNS:
                counts['table_cells'] += 1
                if not same_cell(off[col], our[col]):
                    fail(f'{name}: results table {b} {col}: official {off[col]!r}, ours {our[col]!r}')
            for m in METRICS:
                counts['table_cells'] += 1
                counts['energy_cells'] += m == 'Energy' and off[f'{b}:{m}'] != ''
                if not same_cell(off[f'{b}:{m}'], our[m]):
                    fail(f'{name}: results table {b} {m}: official {off[f"{b}:{m}"]!r}, ours {our[m]!r}')
    for key in set(ours_by_key) - seen:
        fail(f'{name}: results table row {key} that the summarizer does not have')


def ours(binary, args, cwd):
    p = subprocess.run([binary] + args, cwd=cwd, capture_output=True, text=True, timeout=120)
    return p


def same_cell(a, b):
    if a == b:
        return True
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    return abs(x - y) <= REL * max(abs(x), abs(y))


def compare_package(binary, name, src_org, ruleset, mutate=None):
    with tempfile.TemporaryDirectory() as work:
        org = pathlib.Path(work, 'pkg', 'ORG')
        shutil.copytree(src_org, org, symlinks=True)
        for p in org.rglob('*'):
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
        if mutate:
            mutate(org)
        copy2 = pathlib.Path(work, 'pkg2', 'ORG')
        shutil.copytree(org, copy2, symlinks=True)
        before = tree_digest(org)
        table = pathlib.Path(work, 'table.csv')
        p = ours(binary, ['--ruleset', ruleset, '--json', '--csv', str(pathlib.Path(work, 'ours.csv')),
                          '--results-table', str(table), str(org)], work)
        if tree_digest(org) != before:
            fail(f'{name}: compliance_check changed the tree without --write-scaling')
        if p.returncode not in (0, 1):
            fail(f'{name}: exit {p.returncode}: {p.stderr.strip()[:300]}')
            return
        doc = json.loads(p.stdout)
        ours_pkg = doc['packages'][0]
        ours_rcp = {}
        for d in ours_pkg['benchmarks']:
            rel = os.path.relpath(d['path'], org)
            if d['rcp'] is not None and d['rcp']['verdict'] != 'ERROR':
                ours_rcp[rel] = (d['rcp']['verdict'], d['rcp']['message'])
        pw = ours(binary, ['--ruleset', ruleset, '--write-scaling', str(copy2)], work)
        ours_scaling = scaling_files(copy2)

        verdict, rcp, crashed, off_scaling, off_rows, off_detailed = official(org, ruleset, work)
        counts['packages'] += 1
        if verdict != ours_pkg['verdict']:
            fail(f'{name}: package verdict official {verdict}, ours {ours_pkg["verdict"]}')
        for rel, v in rcp.items():
            counts['rcp_dirs'] += 1
            if ours_rcp.get(rel) != v:
                fail(f'{name}: {rel}: RCP official {v}, ours {ours_rcp.get(rel)}')
        if not crashed:
            for rel in set(rcp) - set(ours_rcp):
                fail(f'{name}: {rel}: official RCP verdict, none from us')
            counts['scaling_files'] += len(off_scaling)
            if ours_scaling != off_scaling:
                fail(f'{name}: scaling.json after package_checker {off_scaling}, ours --write-scaling {ours_scaling}')
        if pw.returncode not in (0, 1):
            fail(f'{name}: --write-scaling exit {pw.returncode}: {pw.stderr.strip()[:200]}')
        if off_rows is not None:
            our_rows = list(csv.reader(open(pathlib.Path(work, 'ours.csv'))))
            if len(our_rows) != len(off_rows):
                fail(f'{name}: summarizer CSV has {len(off_rows)} rows, ours {len(our_rows)}')
            for r_off, r_our in zip(off_rows, our_rows):
                for i, (a, b) in enumerate(zip(r_off, r_our)):
                    counts['csv_cells'] += 1
                    if not same_cell(a, b):
                        fail(f'{name}: CSV column {off_rows[0][i]}: official {a!r}, ours {b!r}')
                if len(r_off) != len(r_our):
                    fail(f'{name}: CSV row width {len(r_off)} vs {len(r_our)}')
        if off_detailed is not None:
            compare_table(name, off_detailed, list(csv.DictReader(open(table))))


# --- mutations of a one-directory package (v3.0 resnet, 5 runs) ----------------------------------

def res(org):
    return next(org.glob('results/*/resnet'))


def sub_file(path, old, new, count=0):
    text = path.read_text(encoding='latin-1')
    path.write_text(re.sub(old, new, text, count=count), encoding='latin-1')


def m_missing_system_json(org):
    for p in org.glob('systems/*.json'):
        p.unlink()


def m_run_too_few(org):
    (res(org) / 'result_4.txt').unlink()


def m_two_unconverged(org):
    f = res(org) / 'result_1.txt'
    sub_file(f, r'("key": "eval_accuracy", "value": )0\.7[6-9]\d*', r'\g<1>0.70')
    sub_file(f, r'"status": "success"', '"status": "aborted"')


def m_small_batch(org):
    for f in res(org).glob('result_*.txt'):
        sub_file(f, r'("key": "global_batch_size", "value": )\d+', r'\g<1>256')


def m_mismatched_batch(org):
    sub_file(res(org) / 'result_2.txt', r'("key": "global_batch_size", "value": )\d+', r'\g<1>3264')


def m_duplicated_seed(org):
    seed = re.search(r'"key": "seed", "value": (\d+)', (res(org) / 'result_0.txt').read_text(encoding='latin-1'))
    sub_file(res(org) / 'result_1.txt', r'("key": "seed", "value": )\d+', r'\g<1>' + seed.group(1))


def m_private_id(org):
    (res(org).parent / 'privateid.json').write_text('{"private_id": "amber-river-eight-moon"}')


def m_broken_private_id(org):
    (res(org).parent / 'privateid.json').write_text('{"private_id": ')


def m_description_without_division(org):
    desc = next(org.glob('systems/*.json'))
    sub_file(desc, '"division"', '"divison"')


def power_line(key, value, time_ms):
    return (':::MLLOG {"namespace": "", "time_ms": %d, "event_type": "POINT_IN_TIME", "key": "%s", '
            '"value": %s, "metadata": {"file": "power.py", "lineno": 1}}\n' % (time_ms, key, value))


def m_power_logs(org):
    """Power logs for every run: two nodes with readings at uneven times (one
    without a stop line), a conversion efficiency, and an interconnect estimate."""
    for k, f in enumerate(sorted(res(org).glob('result_*.txt'))):
        d = res(org) / 'power' / f.stem
        d.mkdir(parents=True)
        for node in range(2):
            t0 = 1_000_000 + 7_000 * k + 13 * node
            lines = [power_line('power_measurement_start', 0, t0)]
            for i in range(1, 40):
                lines.append(power_line('power_reading', 3000 + 37 * ((i * (k + 3) + node) % 11), t0 + 997 * i + i * i))
            if node == 0:
                lines.append(power_line('conversion_eff', 0.93, t0 + 5))
                lines.append(power_line('power_measurement_stop', 0, t0 + 997 * 39 + 39 * 39))
            (d / f'node_{node}.txt').write_text(''.join(lines))
        (d / 'sw_0.txt').write_text(power_line('conversion_eff', 0.9, 1) + power_line('interconnect_power_est', 412.5, 2))


MUTATIONS = [m_missing_system_json, m_run_too_few, m_two_unconverged, m_small_batch, m_mismatched_batch,
             m_duplicated_seed, m_power_logs, m_private_id, m_broken_private_id]


def resnet_only(corpus, dest):
    src = pathlib.Path(corpus, 'v3.0/NVIDIA')
    system = 'dgxh100_ngc23.04_mxnet'
    (dest / 'systems').mkdir(parents=True)
    shutil.copy(src / 'systems' / f'{system}.json', dest / 'systems')
    shutil.copytree(src / 'results' / system / 'resnet', dest / 'results' / system / 'resnet')


# --- claims ---------------------------------------------------------------------------------------

def check_claims(binary, corpus):
    claims = pathlib.Path(corpus, 'official_time_to_train.csv')
    rows = list(csv.DictReader(open(claims)))
    with tempfile.TemporaryDirectory() as work:
        p = ours(binary, ['--json', '--claims', str(claims), str(corpus)], work)
        doc = json.loads(p.stdout)
        got = doc['claims']
        if len(got) != len(rows):
            fail(f'claims: {len(rows)} rows, {len(got)} audited')
        for row, c in zip(rows, got):
            counts['claims'] += 1
            if c['verdict'] not in ('raw', 'normalized') or abs(c['difference']) > 0.001:
                fail(f'claims: {row["system"]}/{row["benchmark"]} {row["minutes"]}: {c}')
            if c['other_columns'].get('source') != row['source']:
                fail(f'claims: other columns not carried through: {c["other_columns"]}')


# --- bad trees ------------------------------------------------------------------------------------

def check_bad_trees(binary, corpus):
    with tempfile.TemporaryDirectory() as work:
        w = pathlib.Path(work)
        cases = {}
        (w / 'empty').mkdir()
        cases['empty folder'] = ([str(w / 'empty')], 2)
        org = w / 'v3.0' / 'ORG'
        resnet_only(corpus, org)
        (org / 'results' / 'emptysys').mkdir()
        cases['empty system folder without description'] = ([str(org)], 1)
        loop = w / 'v3.0' / 'LOOP'
        resnet_only(corpus, loop)
        system = next((loop / 'results').iterdir())
        os.symlink('selfloop', system / 'selfloop')
        os.symlink('..', system / 'resnet' / 'up')
        os.symlink('../..', system / 'bert')
        cases['symlink loops'] = ([str(loop)], 2)
        fifo = w / 'v3.0' / 'FIFO'
        resnet_only(corpus, fifo)
        os.mkfifo(next(fifo.glob('results/*/resnet')) / 'result_5.txt')
        cases['fifo result file'] = ([str(fifo)], 2)
        big = w / 'v3.0' / 'BIG'
        resnet_only(corpus, big)
        f = next(big.glob('results/*/resnet')) / 'result_0.txt'
        with open(f, 'r+b') as fh:
            fh.truncate(5 << 30)  # sparse
        cases['sparse 5 GB result file'] = ([str(big)], 2)
        dangling = w / 'v3.0' / 'DANGLING'
        resnet_only(corpus, dangling)
        d = next(dangling.glob('results/*/resnet'))
        (d / 'result_4.txt').unlink()
        os.symlink('nowhere', d / 'result_4.txt')
        cases['dangling result file'] = ([str(dangling)], 2)
        bad_name = w / 'v3.0' / 'NAMES'
        resnet_only(corpus, bad_name)
        sysdir = next((bad_name / 'results').iterdir())
        os.rename(sysdir, bytes(sysdir.parent) + b'/sys\xff\xfe')
        shutil.copy(next(bad_name.glob('systems/*.json')), bytes(bad_name / 'systems') + b'/sys\xff\xfe.json')
        cases['non-UTF-8 names'] = ([str(bad_name)], 0)
        cases['no ruleset'] = ([str(w / 'empty' )], 2)
        noround = w / 'plain' / 'ORG'
        resnet_only(corpus, noround)
        cases['ruleset not given'] = ([str(noround)], 2)
        for name, (args, want) in cases.items():
            counts['bad_trees'] += 1
            try:
                p = subprocess.run([binary, '--json'] + args, capture_output=True, timeout=60)
            except subprocess.TimeoutExpired:
                fail(f'bad tree {name}: hangs')
                continue
            if p.returncode != want:
                fail(f'bad tree {name}: exit {p.returncode}, expected {want}: {p.stderr[:300]!r}')
            if p.returncode == 2 and not p.stderr.strip() and b'error' not in p.stdout:
                fail(f'bad tree {name}: exit 2 without a message')
            if p.returncode == 0 or p.returncode == 1:
                json.loads(p.stdout)  # valid JSON even with odd names
        p = subprocess.run([binary, str(noround)], capture_output=True, text=True)
        if '--ruleset' not in p.stderr:
            fail(f'no ruleset: the error does not say how to give it: {p.stderr}')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--bin', required=True)
    ap.add_argument('--corpus', required=True)
    args = ap.parse_args()
    corpus = pathlib.Path(args.corpus)
    try:
        import mlperf_logging  # noqa: F401
    except ImportError:
        print('mlperf_logging not installed; skipping')
        return 77
    if not (corpus / 'v3.0/NVIDIA/systems').is_dir():
        print('no corpus; skipping')
        return 77
    binary = os.path.abspath(args.bin)
    # Whole packages only: the fixture corpus's v5.0 logs are loose, without systems/.
    for rel, ruleset in [('v3.0/NVIDIA', '3.0.0'), ('v5.0/NVIDIA', '5.0.0')]:
        if (corpus / rel / 'systems').is_dir():
            compare_package(binary, rel, corpus / rel, ruleset)
    with tempfile.TemporaryDirectory() as work:
        base = pathlib.Path(work, 'RESNET')
        resnet_only(corpus, base)
        compare_package(binary, 'resnet only', base, '3.0.0')
        for m in MUTATIONS:
            compare_package(binary, m.__name__, base, '3.0.0', m)
        # Under 0.7.0 the package checker runs no seed, RCP or description
        # check, yet reads each description's division (and stops without one).
        for m in [None, m_duplicated_seed, m_description_without_division]:
            compare_package(binary, f'0.7.0 {m.__name__ if m else "unchanged"}', base, '0.7.0', m)
    check_claims(binary, corpus)
    check_bad_trees(binary, corpus)
    if counts['energy_cells'] == 0:
        fail('no energy value was compared (the power-log mutation gave none)')
    print('checked:', counts)
    if failures:
        print(f'{len(failures)} differences')
        return 1
    print('package CLI agrees with the official tools')
    return 0


if __name__ == '__main__':
    sys.exit(main())
