#!/usr/bin/env python3
"""scripts/compare_official_rules.py against the pinned official release (no
difference allowed) and against a copy of it with known changes (each must be
listed). Exit 77 (skipped) where the pinned release is not installed."""
import pathlib
import shutil
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[3]
SCRIPT = REPO / 'scripts' / 'compare_official_rules.py'
PINNED = (REPO / 'quality_targets' / 'official_release.txt').read_text().strip()


def run(*args):
    p = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def edit(path, old, new):
    text = path.read_text()
    assert old in text, f'{path}: {old!r} not found; the fixture edit needs updating'
    path.write_text(text.replace(old, new, 1))


def main():
    try:
        import importlib.metadata
        import mlperf_logging
        installed = importlib.metadata.version('mlperf-logging')
    except ImportError:
        print('skipped: mlperf-logging is not installed (scripts/install_deps.sh --test)')
        return 77
    if installed != PINNED:
        print(f'skipped: mlperf-logging {installed} is installed, quality_targets/ follows {PINNED}')
        return 77
    failures = []
    rc, out, err = run()
    if rc != 0 or out:
        failures.append(f'against the pinned release: exit {rc}, expected 0 and no output:\n{out}{err}')

    with tempfile.TemporaryDirectory() as tmp:
        pkg = pathlib.Path(tmp) / 'mlperf_logging'
        shutil.copytree(pathlib.Path(mlperf_logging.__file__).parent, pkg)
        cc = pkg / 'compliance_checker' / 'training_6.1.0'
        edit(cc / 'closed_flux1.yaml', "opt_adamw_weight_decay\n    REQ:   EXACTLY_ONE\n    CHECK: \" v['value'] == 0.1",
             "opt_adamw_weight_decay\n    REQ:   EXACTLY_ONE\n    CHECK: \" v['value'] == 0.2")
        with open(cc / 'common.yaml', 'a') as f:
            f.write("\n- KEY:\n    NAME:  new_disclosure\n    REQ:   EXACTLY_ONE\n")
        edit(cc / 'common.yaml', 'NAME:  config_filename\n    REQ:   EXACTLY_ONE',
             'NAME:  config_filename\n    REQ:   AT_LEAST_ONE')
        (cc / 'open_dlrmv4.yaml').unlink()
        edit(pkg / 'benchmark_meta.py', "'dlrmv4': 10,\n    },", "'dlrmv4': 10,\n        'newbench': 5,\n    },")
        edit(pkg / 'rcp_checker' / 'rcp_checker.py', "'unet3d' : 40,", "'unet3d' : 41,")
        edit(pkg / 'rcp_checker' / 'training_6.1.0' / 'rcps_dlrmv4.json', '"BS": 8192,', '"BS": 8193,')
        rc, out, err = run('--official', str(pkg))
        expected = [
            'rule changed: 6.1.0/closed_flux1 opt_adamw_weight_decay: the official record differs',
            'rule added: 6.1.0/common key new_disclosure (exactly_one)',
            'rule changed: 6.1.0/common key config_filename: requirement exactly_one -> at_least_one',
            'rule changed: 6.1.0/common config_filename: the official record differs',
            'rule file removed: 6.1.0/open_dlrmv4',
            'benchmark added: newbench (5 result files)',
            "metadata changed: unet3d rcp_runs: ours 40, official 41",
            'RCP entry changed: 6.1.0/rcps_dlrmv4.json dlrmv4_ref_8192: global_batch_size',
        ]
        if rc != 1:
            failures.append(f'against the edited copy: exit {rc}, expected 1\n{err}')
        for line in expected:
            if not any(o.startswith(line) for o in out.splitlines()):
                failures.append(f'against the edited copy: no line starting {line!r} in:\n{out}')
        if len(out.splitlines()) != len(expected):
            failures.append(f'against the edited copy: {len(out.splitlines())} lines, expected '
                            f'{len(expected)}:\n{out}')

        rc, out, err = run('--official', str(pathlib.Path(tmp) / 'nowhere'))
        if rc != 2 or out or len(err.splitlines()) != 1:
            failures.append(f'a missing folder: exit {rc}, expected 2 with one line on stderr:\n{out}{err}')

    for f in failures:
        print('FAIL:', f)
    print('PASS' if not failures else f'{len(failures)} failure(s)')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
