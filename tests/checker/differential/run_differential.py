#!/usr/bin/env python3
"""Differential test: our compliance_check against the official MLPerf checker.

  run_differential.py --corpus /work/shared/corpus --work DIR --cache DIR \\
                      [--tool build/bin/compliance_check] [--record FILE] [--filter REGEX]

Cases: every corpus result log under its own ruleset and the neighbouring ones,
plus every log mutate.py derives from the corpus (written under --work). The
official checker (PyPI mlperf-logging, pinned) runs once per case, as users run
it, with its verdicts cached under --cache by log content, ruleset and version;
ours runs once per ruleset on all that ruleset's files with --json. Prints one
line per disagreement and a closing line "N passed, M failed".
Exit: 0 all agree, 1 any disagreement, 2 harness error (no oracle, bad tool).
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mutate  # noqa: E402

OFFICIAL_PACKAGE = 'mlperf-logging'
# The release scripts/install_deps.sh installs and quality_targets/ follows.
PINNED_VERSION = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', '..',
                                   'quality_targets', 'official_release.txt')).read().strip()
ROUND_RULESET = {'v3.0': '3.0.0', 'v5.0': '5.0.0'}
SKIP = 77  # CTest SKIP_RETURN_CODE: the shared corpus is not there


class HarnessError(Exception):
    pass


# ---------------------------------------------------------------- cases

def neighbours(ruleset):
    i = mutate.RULESETS.index(ruleset)
    return mutate.RULESETS[max(i - 1, 0):i + 2]


def corpus_cases(corpus):
    cases = []
    for rnd, own in sorted(ROUND_RULESET.items()):
        top = os.path.join(corpus, rnd)
        for root, _, files in sorted(os.walk(top)):
            for name in sorted(files):
                if not re.fullmatch(r'result_\d+\.txt', name):
                    continue
                path = os.path.join(root, name)
                rel = os.path.relpath(path, corpus)
                for rs in neighbours(own):
                    cases.append(dict(name=f'corpus/{rel}', ruleset=rs, path=path,
                                      what='unmodified corpus log'))
    return cases


def mutation_cases(corpus, work, seed):
    out = os.path.join(work, 'mutations')
    manifest = mutate.write(mutate.generate(corpus, seed), out)
    return [dict(name=m['name'], ruleset=m['ruleset'], path=os.path.join(out, m['path']), what=m['what'])
            for m in manifest]


# ---------------------------------------------------------------- official checker

def official_version(python):
    """The installed official package's version, or a HarnessError saying how to get it."""
    probe = ('import importlib.metadata as m, mlperf_logging.compliance_checker.mlp_compliance; '
             f'print(m.version({OFFICIAL_PACKAGE!r}))')
    p = subprocess.run([python, '-c', probe], capture_output=True, text=True)
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ['?'])[-1]
        raise HarnessError(f'the official checker is not importable with {python} ({last}); '
                           f'install it with scripts/install_deps.sh '
                           f'(pip install {OFFICIAL_PACKAGE}=={PINNED_VERSION})')
    return p.stdout.strip()


def summarize_official(stderr):
    """The crash's last traceback line, or the first message of the checker's report."""
    lines = stderr.splitlines()
    if 'Traceback (most recent call last):' in stderr:
        return next((l for l in reversed(lines) if l.strip()), '')
    for i, line in enumerate(lines):
        if line.startswith('WARNING -  '):
            first = line[len('WARNING -  '):]
            return first if first.strip() else ' '.join(lines[i + 1:i + 2])
    return ''


def run_official(python, path, ruleset, timeout):
    # Its own temp cwd and --log_output: the tool appends to that file.
    with tempfile.TemporaryDirectory(prefix='official_cc_') as tmp:
        cmd = [python, '-m', 'mlperf_logging.compliance_checker', '--usage', 'training',
               '--ruleset', ruleset, '--log_output', os.path.join(tmp, 'cc.log'), path]
        try:
            p = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, errors='replace',
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            return dict(error=f'official checker timed out after {timeout} s')
    if p.returncode not in (0, 1):
        return dict(error=f'official checker exited {p.returncode}: {summarize_official(p.stderr)}')
    return dict(verdict='PASS' if p.returncode == 0 else 'FAIL',
                crashed='Traceback (most recent call last):' in p.stderr,
                detail=summarize_official(p.stderr)[:400])


def content_hash(path):
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


class OfficialCache:
    """One small JSON file per (log content, ruleset, official version)."""

    def __init__(self, folder, version):
        self.folder, self.version = folder, version

    def _file(self, digest, ruleset):
        return os.path.join(self.folder, digest[:2], f'{digest}_{ruleset}_{self.version}.json')

    def get(self, digest, ruleset):
        try:
            with open(self._file(digest, ruleset)) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def put(self, digest, ruleset, result):
        path = self._file(digest, ruleset)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f'{path}.{os.getpid()}.tmp'
        with open(tmp, 'w') as f:
            json.dump(result, f)
        os.replace(tmp, path)


def official_verdicts(cases, python, cache, jobs, timeout):
    """Fills case['official'] for every case; returns how many official runs it took."""
    todo = []
    for case in cases:
        case['sha256'] = content_hash(case['path'])
        hit = cache.get(case['sha256'], case['ruleset'])
        if hit is not None:
            case['official'] = hit
        else:
            todo.append(case)
    if not todo:
        return 0
    unique = {}  # mutations may coincide byte for byte: run each (content, ruleset) once
    for c in todo:
        unique.setdefault((c['sha256'], c['ruleset']), []).append(c)
    # Threads only wait on the checker subprocesses: `jobs` official checkers run at once.
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(run_official, python, same[0]['path'], rs, timeout): (digest, rs, same)
                   for (digest, rs), same in unique.items()}
        for fut in concurrent.futures.as_completed(futures):
            (digest, rs, same), result = futures[fut], fut.result()
            for c in same:
                c['official'] = result
            if 'error' not in result:  # a timeout may be the machine's fault: retry next time
                cache.put(digest, rs, result)
    return len(unique)


# ---------------------------------------------------------------- our checker

def parse_ours(stdout, paths):
    """{realpath: log entry} from our --json document, or a HarnessError saying what is wrong."""
    try:
        doc = json.loads(stdout)
    except ValueError as e:
        raise HarnessError(f'--json output is not JSON ({e})')
    if not isinstance(doc, dict) or doc.get('tool') != 'compliance_check' or not isinstance(doc.get('logs'), list):
        raise HarnessError('--json output lacks "tool": "compliance_check" or a "logs" list')
    logs = {}
    for entry in doc['logs']:
        if not isinstance(entry, dict) or entry.get('verdict') not in ('PASS', 'FAIL') or 'path' not in entry:
            raise HarnessError(f'malformed log entry {str(entry)[:200]}')
        logs[os.path.realpath(entry['path'])] = entry
    missing = [p for p in paths if os.path.realpath(p) not in logs]
    if missing:
        raise HarnessError(f'{len(missing)} logs missing from --json output, e.g. {missing[0]}')
    overall = 'FAIL' if any(e['verdict'] == 'FAIL' for e in logs.values()) else 'PASS'
    if doc.get('verdict') != overall:
        raise HarnessError(f'top-level verdict {doc.get("verdict")} but the logs say {overall}')
    return logs


def call_ours(tool, ruleset, paths, timeout):
    cmd = [tool, '--ruleset', ruleset, '--json', *paths]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors='replace', timeout=timeout)
    except subprocess.TimeoutExpired:
        raise HarnessError(f'timed out after {timeout} s')
    if p.returncode not in (0, 1):
        raise HarnessError(f'exit {p.returncode}: {p.stderr.strip()[:300]}')
    logs = parse_ours(p.stdout, paths)
    want = 1 if any(e['verdict'] == 'FAIL' for e in logs.values()) else 0
    if p.returncode != want:
        raise HarnessError(f'exit {p.returncode} but the verdicts call for {want}')
    return logs


def first_error(entry):
    errors = entry.get('errors') or []
    if not errors:
        return ''
    e = errors[0]
    return f"{e.get('key') or '-'}@{e.get('line')}: {e.get('message', '')}" if isinstance(e, dict) else str(e)


def our_verdicts(cases, tool, timeout):
    """Fills case['ours'] = {verdict|error, first_error}; one call per ruleset, per file on trouble."""
    by_ruleset = {}
    for case in cases:
        by_ruleset.setdefault(case['ruleset'], []).append(case)
    for ruleset, group in sorted(by_ruleset.items()):
        paths = sorted({c['path'] for c in group})
        try:
            logs = call_ours(tool, ruleset, paths, timeout)
        except HarnessError as e:
            # Isolate the log(s) that break a batch call instead of failing all of them.
            print(f'note: batch call for ruleset {ruleset} failed ({e}); checking file by file',
                  file=sys.stderr)
            logs = {}
            for path in paths:
                try:
                    logs.update(call_ours(tool, ruleset, [path], timeout))
                except HarnessError as e1:
                    logs[os.path.realpath(path)] = dict(error=str(e1))
        for case in group:
            entry = logs[os.path.realpath(case['path'])]
            if 'error' in entry:
                case['ours'] = dict(error=entry['error'])
            else:
                if entry.get('ruleset') not in (None, ruleset):
                    case['ours'] = dict(error=f'checked under ruleset {entry.get("ruleset")}')
                    continue
                case['ours'] = dict(verdict=entry['verdict'], first_error=first_error(entry))


# ---------------------------------------------------------------- report

def official_label(res):
    if 'error' in res:
        return f'ERROR({res["error"]})'
    return 'FAIL(crash)' if res['crashed'] else res['verdict']


def compare(cases, verbose):
    passed = failed = 0
    for case in sorted(cases, key=lambda c: (c['name'], c['ruleset'])):
        off, ours = case['official'], case['ours']
        if 'error' not in off and 'error' not in ours and off['verdict'] == ours['verdict']:
            passed += 1
            continue
        failed += 1
        got = f'ERROR({ours["error"]})' if 'error' in ours else ours['verdict']
        print(f'DISAGREE {case["name"]} ruleset={case["ruleset"]} official={official_label(off)} '
              f'ours={got} first_error={json.dumps(ours.get("first_error", ""))[:300]}')
        if verbose:
            print(f'    what: {case["what"]}\n    official: {off.get("detail", "")}\n    file: {case["path"]}')
    return passed, failed


def record(cases, version, path):
    rows = [dict(name=c['name'], ruleset=c['ruleset'], sha256=c['sha256'], what=c['what'],
                 verdict=c['official'].get('verdict'), crashed=c['official'].get('crashed'),
                 detail=c['official'].get('detail', c['official'].get('error')))
            for c in sorted(cases, key=lambda c: (c['name'], c['ruleset']))]
    with open(path, 'w') as f:
        json.dump(dict(oracle=f'{OFFICIAL_PACKAGE} {version}', cases=rows), f, indent=1)
        f.write('\n')


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--corpus', required=True, help='shared corpus folder (read only)')
    ap.add_argument('--work', required=True, help='folder for the mutated logs')
    ap.add_argument('--cache', required=True, help='folder for cached official verdicts')
    ap.add_argument('--tool', help='our compliance_check binary; without it only the oracle runs')
    ap.add_argument('--record', metavar='FILE', help='write the official verdicts as a JSON fixture')
    ap.add_argument('--filter', metavar='REGEX', help='only cases whose name matches')
    ap.add_argument('--shard', metavar='K/N', default='0/1',
                    help='only every N-th case from the K-th (0-based), so that ctest runs shards '
                         'side by side; each shard needs its own --work')
    ap.add_argument('--python', default=sys.executable, help='interpreter with the official package')
    ap.add_argument('--jobs', type=int, default=2, help='official checkers run at once')
    ap.add_argument('--timeout', type=float, default=120, help='seconds per official call')
    ap.add_argument('--tool-timeout', type=float, default=300, help='seconds per call of ours')
    ap.add_argument('--seed', type=int, default=1, help='mutation seed')
    ap.add_argument('--allow-other-version', action='store_true',
                    help=f'accept an official version other than {PINNED_VERSION}')
    ap.add_argument('-v', '--verbose', action='store_true', help='explain each disagreement')
    args = ap.parse_args()

    if not os.path.isdir(os.path.join(args.corpus, 'v3.0')):
        print(f'SKIP: no corpus at {args.corpus}', file=sys.stderr)
        return SKIP
    try:
        version = official_version(args.python)
        if version != PINNED_VERSION and not args.allow_other_version:
            raise HarnessError(f'official checker is {OFFICIAL_PACKAGE} {version}, the pinned version is '
                               f'{PINNED_VERSION} (or pass --allow-other-version)')
        if args.tool and not os.access(args.tool, os.X_OK):
            raise HarnessError(f'no executable at --tool {args.tool}')
        t0 = time.monotonic()
        cases = corpus_cases(args.corpus) + mutation_cases(args.corpus, args.work, args.seed)
        if args.filter:
            cases = [c for c in cases if re.search(args.filter, c['name'])]
        k, n = (int(x) for x in args.shard.split('/'))
        cases = cases[k::n]
        ran = official_verdicts(cases, args.python, OfficialCache(args.cache, version), args.jobs, args.timeout)
        t1 = time.monotonic()
        print(f'{len(cases)} cases; official {OFFICIAL_PACKAGE} {version}: {ran} runs, '
              f'the rest cached or byte-identical; {t1 - t0:.1f} s', file=sys.stderr)
        if args.record:
            record(cases, version, args.record)
        if not args.tool:
            bad = [c for c in cases if 'error' in c['official']]
            for c in bad:
                print(f'ERROR {c["name"]} ruleset={c["ruleset"]}: {c["official"]["error"]}')
            return 2 if bad else 0
        our_verdicts(cases, args.tool, args.tool_timeout)
        print(f'ours: {time.monotonic() - t1:.1f} s', file=sys.stderr)
    except HarnessError as e:
        print(f'error: {e}', file=sys.stderr)
        return 2
    passed, failed = compare(cases, args.verbose)
    print(f'{passed} passed, {failed} failed')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
