#!/usr/bin/env python3
"""compliance_check's reviewer notes and full results table, the way a user
reaches them: on a copy of the corpus's v3.0 resnet package, altered so that
one log names another organisation and the seeds step by a constant, the notes
appear in the text report, in --json and in the --html page; the verdict,
exit status and score equal those of the unaltered copy; --results-table and
--results-table-json hold the same rows.

Usage: review_notes_cli_test.py --bin build/bin/compliance_check --corpus DIR
"""
import argparse
import csv
import html
import json
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print('FAIL:', what)


def package(corpus, dest):
    src = pathlib.Path(corpus, 'v3.0/NVIDIA')
    system = 'dgxh100_ngc23.04_mxnet'
    (dest / 'systems').mkdir(parents=True)
    shutil.copy(src / 'systems' / f'{system}.json', dest / 'systems')
    shutil.copytree(src / 'results' / system / 'resnet', dest / 'results' / system / 'resnet')
    return dest / 'results' / system / 'resnet'


def edit(path, pattern, repl):
    text = path.read_text(encoding='latin-1')
    path.write_text(re.sub(pattern, repl, text), encoding='latin-1')


def run(binary, args):
    return subprocess.run([binary, '--ruleset', '3.0.0'] + args, capture_output=True, text=True, timeout=120)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--bin', required=True)
    ap.add_argument('--corpus', required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as work:
        w = pathlib.Path(work)
        package(args.corpus, w / 'plain' / 'ORG')
        resnet = package(args.corpus, w / 'altered' / 'ORG')
        edit(resnet / 'result_2.txt', r'"submission_org", "value": "NVIDIA"', '"submission_org", "value": "NVIDlA"')
        for i in range(5):
            edit(resnet / f'result_{i}.txt', r'("key": "seed", "value": )\d+', rf'\g<1>{1000 + 7 * i}')
        org_note = ('submission_org "NVIDlA" in 1 log(s) (resnet) disagrees with '
                    'systems/dgxh100_ngc23.04_mxnet.json: submitter "NVIDIA"')
        seed_note = "the 5 runs' seeds (1000, 1007, 1014, 1021, 1028) step by 7"

        plain = run(args.bin, ['--json', str(w / 'plain' / 'ORG')])
        altered_json = run(args.bin, ['--json', str(w / 'altered' / 'ORG')])
        check(plain.returncode == altered_json.returncode,
              f'exit status changed by the notes: {plain.returncode} -> {altered_json.returncode}')
        a, p = json.loads(altered_json.stdout), json.loads(plain.stdout)
        check(a['verdict'] == p['verdict'], 'verdict changed by the notes')
        pa, pp = a['packages'][0], p['packages'][0]
        check(pa['benchmarks'][0]['score_minutes'] == pp['benchmarks'][0]['score_minutes'], 'score changed')
        check(any(org_note in n for n in pa['notes']), f'--json package notes lack the org note: {pa["notes"]}')
        check(not any('submission_org' in n for n in pp['notes']), 'the unaltered package has an org note')
        review = pa['benchmarks'][0]['review_warnings']
        check(any(seed_note in n for n in review), f'--json review notes lack the seed note: {review}')
        check(any('mlcommons/logging #142' in n for n in review), 'the RCP hyperparameter note is missing')

        text = run(args.bin, [str(w / 'altered' / 'ORG')])
        check(f'note: dgxh100_ngc23.04_mxnet: {org_note}' in text.stdout, 'text report lacks the org note')
        check(f'review: {seed_note}' in text.stdout, 'text report lacks the seed note')

        page = w / 'report.html'
        h = run(args.bin, ['--html', str(page), str(w / 'altered' / 'ORG')])
        check(h.returncode == altered_json.returncode, f'--html exit {h.returncode}')
        body = html.unescape(page.read_text()) if page.exists() else ''
        check(org_note in body, 'HTML report lacks the org note')
        check(seed_note in body, 'HTML report lacks the seed note')

        t_csv, t_json = w / 'table.csv', w / 'table.json'
        t = run(args.bin, ['--results-table', str(t_csv), '--results-table-json', str(t_json),
                           str(w / 'plain' / 'ORG')])
        check(t.returncode == plain.returncode, f'--results-table exit {t.returncode}: {t.stderr}')
        rows = list(csv.DictReader(open(t_csv)))
        records = json.loads(t_json.read_text())
        check(len(rows) == 1 and len(records) == 1, f'one row expected: {rows} {records}')
        if rows and records:
            r, j = rows[0], records[0]
            check(list(r) == list(j), 'CSV and JSON columns differ')
            for k in r:
                same = r[k] == ('' if j[k] is None else str(j[k])) or \
                    (isinstance(j[k], float) and float(r[k]) == j[k])
                check(same, f'column {k}: CSV {r[k]!r}, JSON {j[k]!r}')
            check(r['benchmark'] == 'resnet' and r['RCP'] == 'Pass' and r['GBS'] == '3200.0',
                  f'unexpected row {r}')
            check(float(r['time_to_train']) == pp['benchmarks'][0]['score_minutes'],
                  'table time_to_train differs from the score')
        # The table is an output like any other: never over an input.
        bad = run(args.bin, ['--results-table', str(resnet / 'result_0.txt'), str(w / 'altered' / 'ORG')])
        check(bad.returncode == 2 and bad.stderr.count('\n') == 1, f'table over an input: {bad.returncode} {bad.stderr}')
    if failures:
        print(f'{len(failures)} failures')
        return 1
    print('reviewer notes and the results table: ok')
    return 0


if __name__ == '__main__':
    sys.exit(main())
