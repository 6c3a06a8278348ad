#!/usr/bin/env python3
"""Regenerates quality_targets/rcp/<ruleset>/rcps_<benchmark>.json from the
official mlperf_logging package (the published reference convergence points).

Kept: record name, the benchmark named in the record (3.1.0 stable_diffusion
records say "sd"), global batch size and the convergence list (what the RCP
checker uses), and the hyperparameters of the reference runs (what run_closed
builds its closed recipes from), in the official file's record order (ties in
batch size keep that order). Usage: scripts/normalize_rcp_data.py [OUT_DIR]
"""
import json
import pathlib
import sys

import mlperf_logging.rcp_checker as rcp

SRC = pathlib.Path(rcp.__file__).parent
OUT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else
                   pathlib.Path(__file__).resolve().parents[1] / 'quality_targets' / 'rcp')
# The official checker reads "samples to converge" for these, "Epochs to converge" otherwise.
SAMPLES_KEY_BENCHMARKS = {name for name, b in json.loads(
    (pathlib.Path(__file__).resolve().parents[1] / 'quality_targets' / 'benchmarks.json').read_text())
    ['benchmarks'].items() if b.get('rcp_table_key') == 'samples to converge'}


def main():
    for src in sorted(SRC.glob('training_*/rcps_*.json')):
        ruleset = src.parent.name[len('training_'):]
        benchmark = src.stem[len('rcps_'):]
        raw = json.loads(src.read_text())
        records = []
        for name, rec in raw.items():
            key = ('samples to converge'
                   if rec['Benchmark'] in SAMPLES_KEY_BENCHMARKS else 'Epochs to converge')
            records.append({'name': name, 'benchmark': rec['Benchmark'],
                            'global_batch_size': rec['BS'], 'converge': rec[key],
                            'hyperparameters': rec.get('Hyperparams', {})})
        out = OUT / ruleset / src.name
        out.parent.mkdir(parents=True, exist_ok=True)
        doc = {'ruleset': ruleset, 'benchmark': benchmark, 'records': records}
        text = '{\n  "ruleset": %s,\n  "benchmark": %s,\n  "records": [\n%s\n  ]\n}\n' % (
            json.dumps(ruleset), json.dumps(benchmark),
            ',\n'.join('    ' + json.dumps(r) for r in records))
        out.write_text(text)


if __name__ == '__main__':
    main()
