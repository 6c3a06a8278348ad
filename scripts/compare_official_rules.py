#!/usr/bin/env python3
"""Lists every difference between a release of the official MLPerf tools and
the rule knowledge in quality_targets/, so that following a new release is a
reviewed data change.

  scripts/compare_official_rules.py [--official DIR] [--update-fingerprints]

DIR is an installed or unpacked `mlperf_logging` package folder (default: the
installed one). Compared:
  * rule files: official training_X.Y.Z/*.yaml against training/X.Y.Z/*.rules,
    file by file and key by key (presence and REQ); the content of every
    official record against its fingerprint in official_fingerprints.json,
    taken when the record was last translated into our rule language;
  * RCP tables: every record of rcp_checker/training_X.Y.Z/rcps_*.json against
    rcp/X.Y.Z/ (benchmark, batch size, convergence list, hyperparameters);
  * benchmark metadata: the numbers and lists the official code types in
    (benchmark_meta.py, rcp_checker.py, package_checker.py,
    result_summarizer.py, system_desc_checker.py) against benchmarks.json.

Prints one line per difference. Exit 0: none; 1: some; 2: usage or input error.
--update-fingerprints rewrites official_fingerprints.json from DIR (after the
changed records have been translated and reviewed) and prints what it did.
"""
import argparse
import ast
import hashlib
import json
import pathlib
import re
import sys

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1] / 'quality_targets'
FINGERPRINTS = ROOT / 'official_fingerprints.json'
FIRST_RULESET = (0, 7, 0)  # older official rulesets are not followed


def version(name):
    return tuple(int(x) for x in name.split('.'))


class InputError(Exception):
    pass


# ---------------------------------------------------------------- rule files

def official_records(path):
    """[(id, record)] of one official YAML file; a repeated KEY gets '#2', '#3'."""
    records = yaml.safe_load(path.read_text()) or []
    out, seen = [], {}
    for rec in records:
        if 'KEY' in rec:
            name = rec['KEY']['NAME']
            seen[name] = seen.get(name, 0) + 1
            rid = name if seen[name] == 1 else f'{name}#{seen[name]}'
        else:
            rid = next(iter(rec))  # BEGIN, END
        out.append((rid, rec))
    return out


def fingerprint(record):
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()[:12]


def official_req(rec):
    req = str(rec['KEY'].get('REQ', '')).replace(' ', '')
    if req.startswith('AT_LEAST_ONE_OR('):
        return 'one_of(' + req[len('AT_LEAST_ONE_OR('):]
    return req.lower()


KEY_LINE = re.compile(r'^key\s+(\S+)(?:\s+(.*?))?\s*$')


def our_keys(path):
    """{name: requirement} of our .rules file (a later record replaces an earlier one)."""
    keys = {}
    for line in path.read_text().splitlines():
        m = KEY_LINE.match(line)
        if m:
            keys[m.group(1)] = (m.group(2) or '').replace(' ', '')
    return keys


def official_rule_files(official):
    out = {}
    for d in sorted((official / 'compliance_checker').glob('training_*')):
        name = d.name[len('training_'):]
        if not re.fullmatch(r'\d+\.\d+\.\d+', name) or version(name) < FIRST_RULESET:
            continue
        for f in sorted(d.glob('*.yaml')):
            out[f'{name}/{f.stem}'] = f
    return out


def compare_rules(official, prints):
    diffs = []
    theirs = official_rule_files(official)
    ours = {f'{p.parent.name}/{p.stem}': p for p in sorted((ROOT / 'training').glob('*/*.rules'))}
    for fid in sorted(theirs.keys() - ours.keys()):
        diffs.append(f'rule file added: {fid} (official {theirs[fid].parent.name}/{theirs[fid].name})')
    for fid in sorted(ours.keys() - theirs.keys()):
        diffs.append(f'rule file removed: {fid} (no official counterpart)')
    for fid in sorted(theirs.keys() & ours.keys()):
        records = official_records(theirs[fid])
        keys = our_keys(ours[fid])
        official_keys = {}
        for rid, rec in records:
            if 'KEY' in rec:
                official_keys[rec['KEY']['NAME']] = official_req(rec)
        for k in official_keys.keys() - keys.keys():
            diffs.append(f'rule added: {fid} key {k} ({official_keys[k] or "no REQ"})')
        for k in keys.keys() - official_keys.keys():
            diffs.append(f'rule removed: {fid} key {k}')
        for k in sorted(official_keys.keys() & keys.keys()):
            if official_keys[k] != keys[k]:
                diffs.append(f'rule changed: {fid} key {k}: requirement {keys[k] or "none"} -> '
                             f'{official_keys[k] or "none"}')
        known = prints.get(fid, {})
        for rid, rec in records:
            if rid in known and known[rid] != fingerprint(rec):
                diffs.append(f'rule changed: {fid} {rid}: the official record differs from the one '
                             f'translated (checks, actions or state)')
            elif rid not in known and ('KEY' not in rec or rec['KEY']['NAME'] in keys):
                diffs.append(f'rule changed: {fid} {rid}: no fingerprint of the official record')
        for rid in known.keys() - {rid for rid, _ in records}:
            if '#' in rid or rid in ('BEGIN', 'END'):
                diffs.append(f'rule changed: {fid} {rid} is gone from the official file')
    return sorted(set(diffs))


def fingerprints_of(official):
    return {fid: {rid: fingerprint(rec) for rid, rec in official_records(path)}
            for fid, path in official_rule_files(official).items()}


# ---------------------------------------------------------------- RCP tables

def compare_rcps(official, meta):
    diffs = []
    theirs = {}
    for f in sorted((official / 'rcp_checker').glob('training_*/rcps_*.json')):
        name = f.parent.name[len('training_'):]
        if re.fullmatch(r'\d+\.\d+\.\d+', name) and version(name) >= FIRST_RULESET:
            theirs[f'{name}/{f.name}'] = json.loads(f.read_text())
    ours = {f'{p.parent.name}/{p.name}': json.loads(p.read_text())
            for p in sorted((ROOT / 'rcp').glob('*/rcps_*.json'))}
    for t in sorted(theirs.keys() - ours.keys()):
        diffs.append(f'RCP table added: {t}')
    for t in sorted(ours.keys() - theirs.keys()):
        diffs.append(f'RCP table removed: {t}')
    for t in sorted(theirs.keys() & ours.keys()):
        mine = {r['name']: r for r in ours[t]['records']}
        for name, rec in theirs[t].items():
            if name not in mine:
                diffs.append(f'RCP entry added: {t} {name} (batch {rec.get("BS")})')
                continue
            key = meta['benchmarks'].get(rec['Benchmark'], {}).get('rcp_table_key', 'Epochs to converge')
            want = {'benchmark': rec['Benchmark'], 'global_batch_size': rec['BS'],
                    'converge': rec.get(key), 'hyperparameters': rec.get('Hyperparams', {})}
            changed = [f for f, v in want.items() if mine[name].get(f) != v]
            if changed:
                diffs.append(f'RCP entry changed: {t} {name}: {", ".join(changed)}')
        for name in mine.keys() - theirs[t].keys():
            diffs.append(f'RCP entry removed: {t} {name}')
    return diffs


# ---------------------------------------------------------------- metadata

def parse(path):
    try:
        return ast.parse(path.read_text())
    except (OSError, SyntaxError) as e:
        raise InputError(f'{path}: {e}')


def assigned(tree, name):
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise InputError(f'no literal assignment to {name} (the official code changed shape; compare by hand)')


def string_constants(node):
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def official_meta(official):
    """What the official code hard-codes, in benchmarks.json's terms."""
    bm = parse(official / 'benchmark_meta.py')
    rcp = parse(official / 'rcp_checker' / 'rcp_checker.py')
    pkg = parse(official / 'package_checker' / 'package_checker.py')
    summ = parse(official / 'result_summarizer' / 'result_summarizer.py')
    sysd = parse(official / 'system_desc_checker' / 'system_desc_checker.py')
    out = {'result_files': assigned(bm, '_ALL_RESULT_FILE_COUNTS')['training'],
           'allowed': {k: v for k, v in assigned(bm, '_ALL_ALLOWED_BENCHMARKS')['training'].items()
                       if version(k) >= FIRST_RULESET[:2]},
           'rcp_runs': assigned(rcp, 'submission_runs')['training'],
           'required_fields': assigned(sysd, 'required_fields'),
           'status_values': assigned(sysd, 'availability_options')}
    # `benchmark in {...}` (eval samples_count) and `... in ['llama2_70b_lora', ...]` (table key).
    out['eval_samples_count'] = None
    for n in ast.walk(rcp):
        if (isinstance(n, ast.Compare) and isinstance(n.left, ast.Name) and n.left.id == 'benchmark' and
                isinstance(n.ops[0], ast.In) and isinstance(n.comparators[0], ast.Set)):
            out['eval_samples_count'] = sorted(string_constants(n.comparators[0]))
    out['samples_key'] = None
    for n in ast.walk(rcp):
        if isinstance(n, ast.IfExp) and 'samples to converge' in string_constants(n.body):
            out['samples_key'] = sorted(string_constants(n.test)[1:])
    # `4 if benchmark == 'unet3d' else 1`, wherever olympic scoring is decided.
    out['drop'] = {}
    for tree in (rcp, pkg, summ):
        for n in ast.walk(tree):
            if (isinstance(n, ast.IfExp) and isinstance(n.body, ast.Constant) and
                    isinstance(n.body.value, int) and isinstance(n.test, ast.Compare)):
                for b in string_constants(n.test):
                    out['drop'].setdefault(b, set()).add(n.body.value)
    # package_checker's condition for the RCP check: `ruleset in {...} and ... and benchmark != '...'`.
    out['rcp_rulesets'], out['rcp_unchecked'] = None, []
    for n in ast.walk(pkg):
        if not isinstance(n, ast.BoolOp):
            continue
        for c in n.values:
            names = string_constants(c.comparators[0]) if isinstance(c, ast.Compare) else []
            if isinstance(c.comparators[0] if isinstance(c, ast.Compare) else None, ast.Set) and \
                    all(re.fullmatch(r'\d+\.\d+\.\d+', s) for s in names):
                out['rcp_rulesets'] = sorted(names, key=version)
                out['rcp_unchecked'] = [v.comparators[0].value for v in n.values
                                        if isinstance(v, ast.Compare) and isinstance(v.ops[0], ast.NotEq)
                                        and ast.unparse(v.left) == 'benchmark']
    # stable_diffusion: FID/CLIP targets and the 3.1.0 step key; llama31_405b allowance.
    out['fid_clip'] = {}
    out['allowance'] = None
    for n in ast.walk(rcp):
        if (isinstance(n, ast.Compare) and isinstance(n.left, ast.Subscript) and
                isinstance(n.comparators[0], ast.Constant)):
            field = string_constants(n.left.slice)
            if field and field[0] in ('FID', 'CLIP'):
                out['fid_clip'][field[0]] = n.comparators[0].value
        if isinstance(n, ast.IfExp) and string_constants(n.body) == ['step_num']:
            out['step_num_rulesets'] = string_constants(n.test)
        if isinstance(n, ast.If) and 'is_version_at_least' in ast.unparse(n.test):
            consts = string_constants(n.test)
            sub = [m.right.value for m in ast.walk(n) if isinstance(m, ast.BinOp) and
                   isinstance(m.op, ast.Sub) and isinstance(m.right, ast.Constant)]
            if len(consts) == 2 and sub:
                out['allowance'] = {consts[1]: {'from_ruleset': consts[0], 'samples': sub[0]}}
    for n in ast.walk(sysd):
        if isinstance(n, ast.Compare) and 'ruleset_major_version' in ast.unparse(n.left):
            if isinstance(n.ops[0], ast.GtE) and isinstance(n.comparators[0], ast.Constant):
                out['status_from'] = f'{n.comparators[0].value}.0.0'
    return out


def compare_meta(official, meta):
    o = official_meta(official)
    bench = meta['benchmarks']
    diffs = []

    def same(what, theirs, mine):
        if theirs != mine:
            diffs.append(f'metadata changed: {what}: ours {mine!r}, official {theirs!r}')

    for b in sorted(o['result_files'].keys() - bench.keys()):
        diffs.append(f'benchmark added: {b} ({o["result_files"][b]} result files)')
    for b in sorted(bench.keys() - o['result_files'].keys()):
        diffs.append(f'benchmark removed: {b}')
    for b in sorted(bench.keys() & o['result_files'].keys()):
        same(f'{b} result_files', o['result_files'][b], bench[b]['result_files'])
        same(f'{b} rcp_runs', o['rcp_runs'].get(b), bench[b].get('rcp_runs'))
        drops = o['drop'].get(b, {1})
        same(f'{b} olympic_drop_per_side', sorted(drops), [bench[b].get('olympic_drop_per_side', 1)])
    for r in sorted(o['allowed'].keys() | meta['allowed_benchmarks'].keys(), key=version):
        same(f'allowed_benchmarks {r}', o['allowed'].get(r), meta['allowed_benchmarks'].get(r))
    same('benchmarks converging at eval samples_count', o['eval_samples_count'],
         sorted(b for b, e in bench.items() if e.get('rcp_converged_at') == 'eval_samples_count'))
    same('RCP tables keyed "samples to converge"', o['samples_key'],
         sorted(b for b, e in bench.items() if e.get('rcp_table_key') == 'samples to converge'))
    same('rcp_rulesets', o['rcp_rulesets'], meta['rcp_rulesets'])
    same('benchmarks never RCP-checked', sorted(o['rcp_unchecked']),
         sorted(b for b, e in bench.items() if e.get('rcp_checked') is False))
    sd = bench.get('stable_diffusion', {})
    same('stable_diffusion FID/CLIP targets', o['fid_clip'],
         {'FID': sd.get('fid_at_most'), 'CLIP': sd.get('clip_at_least')})
    same('stable_diffusion step_num rulesets', o.get('step_num_rulesets'),
         [r for r, k in sd.get('eval_step_key', {}).items() if k == 'step_num'])
    same('RCP minimum-mean allowances', o['allowance'],
         {b: e['rcp_min_mean_allowance'] for b, e in bench.items() if 'rcp_min_mean_allowance' in e})
    sysd = meta['system_description']
    same('system description required fields', o['required_fields'], sysd['required_fields'])
    same('system description status values', o['status_values'], sysd['status_values'])
    same('system description status checked from', o.get('status_from'), sysd['status_checked_from'])
    return diffs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--official', help='mlperf_logging package folder (default: the installed one)')
    ap.add_argument('--update-fingerprints', action='store_true')
    args = ap.parse_args()
    try:
        if args.official:
            official = pathlib.Path(args.official)
        else:
            import mlperf_logging
            official = pathlib.Path(mlperf_logging.__file__).parent
        if not (official / 'benchmark_meta.py').is_file():
            raise InputError(f'{official}: not an mlperf_logging package folder (no benchmark_meta.py)')
        if args.update_fingerprints:
            prints = fingerprints_of(official)
            lines = ',\n'.join(f'  {json.dumps(fid)}: {json.dumps(p)}' for fid, p in sorted(prints.items()))
            FINGERPRINTS.write_text('{\n' + lines + '\n}\n')
            print(f'wrote {FINGERPRINTS} ({sum(map(len, prints.values()))} records)')
            return 0
        meta = json.loads((ROOT / 'benchmarks.json').read_text())
        prints = json.loads(FINGERPRINTS.read_text())
        diffs = compare_meta(official, meta) + compare_rcps(official, meta) + compare_rules(official, prints)
    except ImportError:
        print('compare_official_rules: mlperf_logging is not installed; give --official DIR', file=sys.stderr)
        return 2
    except (InputError, OSError, yaml.YAMLError, json.JSONDecodeError) as e:
        print(f'compare_official_rules: {e}', file=sys.stderr)
        return 2
    for d in diffs:
        print(d)
    return 1 if diffs else 0


if __name__ == '__main__':
    sys.exit(main())
