#!/usr/bin/env python3
"""Writes mutated copies of corpus result logs for the compliance-checker differential test.

  mutate.py --corpus /work/shared/corpus --out DIR [--seed 1]

Writes DIR/<group>/<mutation>.txt and DIR/manifest.json, a list of
{name, path (relative to DIR), ruleset, source, what}. The corpus is only read.
The output is a pure function of the corpus and the seed, so case names and
file contents (and with them the oracle cache) are stable across runs.

Each mutation is named after what it does; nothing here predicts the verdict,
the official checker does that. A mutation that would leave its log unchanged
is an error, so a typo in a key name cannot silently turn into a no-op case.
"""
import argparse
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_mutations  # noqa: E402
import rule_mutations  # noqa: E402
from cases import Cases, Rep  # noqa: E402
from format_mutations import format_mutations  # noqa: E402
from quirk_mutations import parser_quirks, semantic_quirks  # noqa: E402
from logedit import Log  # noqa: E402

RULESETS = ['0.7.0', '1.0.0', '1.1.0', '2.0.0', '2.1.0', '3.0.0', '3.1.0', '4.0.0', '4.1.0',
            '5.0.0', '5.1.0', '6.0.0', '6.1.0']

# submission_benchmark values each ruleset's closed_common.yaml accepts (spec 5.2).
_OLD = ['resnet', 'ssd', 'maskrcnn', 'minigo', 'dlrm', 'bert', 'rnnt', 'unet3d']
_V30 = ['resnet', 'ssd', 'maskrcnn', 'gpt3', 'dlrm_dcnv2', 'bert', 'rnnt', 'unet3d']
_V40 = _V30 + ['stable_diffusion', 'gnn', 'llama2_70b_lora']
BENCHMARKS = {
    '0.7.0': ['resnet', 'ssd', 'maskrcnn', 'transformer', 'gnmt', 'minigo', 'dlrm', 'bert'],
    '1.0.0': _OLD, '1.1.0': _OLD, '2.0.0': _OLD, '2.1.0': _OLD,
    '3.0.0': _V30, '3.1.0': _V30 + ['stable_diffusion'], '4.0.0': _V40, '4.1.0': _V40,
    '5.0.0': ['retinanet', 'stable_diffusion', 'dlrm_dcnv2', 'bert', 'rgat', 'llama2_70b_lora', 'llama31_405b'],
    '5.1.0': ['retinanet', 'flux1', 'dlrm_dcnv2', 'llama31_8b', 'rgat', 'llama2_70b_lora', 'llama31_405b'],
    '6.0.0': ['flux1', 'dlrm_dcnv2', 'llama31_8b', 'llama2_70b_lora', 'llama31_405b', 'gpt_oss_20b',
              'deepseekv3_671b'],
    '6.1.0': ['flux1', 'llama31_8b', 'llama2_70b_lora', 'gpt_oss_20b', 'deepseekv3_671b', 'qwen35_397b_grpo',
              'dlrmv4'],
}

V30 = 'v3.0/NVIDIA/results/'
V50 = 'v5.0/NVIDIA/results/'

# One representative log per benchmark and corpus round. `target` is the closed
# quality target of its own ruleset (spec 5.6): (direction, bound, bound_op,
# other_limit, other_op); None for stable_diffusion (FID and CLIP, own rules).
REPS = {
    'resnet': (V30 + 'dgxh100_ngc23.04_mxnet/resnet/result_0.txt', '3.0.0',
               ('higher', 0.759, '>=', 1.0, '<')),
    'unet3d': (V30 + 'dgxh100_ngc23.04_mxnet/unet3d/result_05.txt', '3.0.0',
               ('higher', 0.908, '>=', None, None)),
    'bert30': (V30 + 'dgxh100_ngc23.04_pytorch/bert/result_0.txt', '3.0.0',
               ('higher', 0.72, '>=', 1.0, '<')),
    'bert50': (V50 + 'nyx_n1_ngc25.04_pytorch/bert/result_0.txt', '5.0.0',
               ('higher', 0.72, '>=', 1.0, '<')),
    'retinanet': (V50 + 'nyx_n1_ngc25.04_pytorch/retinanet/result_0.txt', '5.0.0',
                  ('higher', 0.34, '>=', 1.0, '<')),
    'rgat': (V50 + 'nyx_n1_ngc25.03_dgl/rgat/result_0.txt', '5.0.0',
             ('higher', 0.72, '>=', 1.0, '<')),
    'dlrm_dcnv2': (V50 + 'nyx_n1_ngc25.03_hugectr/dlrm_dcnv2/result_0.txt', '5.0.0',
                   ('higher', 0.80275, '>=', 1.0, '<=')),
    'llama2_70b_lora': (V50 + 'nyx_n1_ngc25.04_nemo/llama2_70b_lora/result_0.txt', '5.0.0',
                        ('lower', 0.925, '<=', 0.0, '>')),
    'stable_diffusion': (V50 + 'nyx_n1_ngc25.04_nemo/stable_diffusion/result_0.txt', '5.0.0', None),
}

# One "full" rep per corpus round (3.0.0, 5.0.0) also gets the mutations that only
# exercise common.yaml and the engine; the other reps get what depends on their
# benchmark rules; the parser and file-format cases run on resnet alone (the
# parser is the same for every ruleset). This keeps a cold run of the official
# checker (about 0.15-0.3 s per log on 2 cores) within the CTest budget.
FULL_REPS = ['resnet', 'llama2_70b_lora']
# An EXACTLY_ONE key with no CHECK, for the duplicate-equality cases (== is the same everywhere).
PRESENCE_ONLY_KEY = {'resnet': 'lars_opt_momentum'}


def generate(corpus, seed=1):
    """All mutation cases: dicts with name, ruleset, text, source, what."""
    rng = random.Random(seed)
    cases = Cases()
    # The fixture corpus of a bare clone holds only some of the reps.
    reps = {g: Rep(cases, g, Log.read(os.path.join(corpus, src)), rs, src, g in FULL_REPS, rng)
            for g, (src, rs, _) in REPS.items() if os.path.exists(os.path.join(corpus, src))}
    for g, rep in reps.items():
        target = REPS[g][2]
        rule_mutations.key_mutations(rep)
        rule_mutations.submission_mutations(rep)
        rule_mutations.order_mutations(rep)
        rule_mutations.metadata_mutations(rep)
        rule_mutations.open_division_mutations(rep)
        if target is None:
            rule_mutations.sd_quality_mutations(rep)
        else:
            rule_mutations.quality_mutations(rep, target)
        bench_mutations.SPECIFIC[g](rep)
        if rep.full:
            semantic_quirks(rep, PRESENCE_ONLY_KEY.get(g))
        if g == 'resnet':  # the parser is the same for every ruleset
            format_mutations(rep)
            parser_quirks(rep)
    bench_mutations.retarget(reps, RULESETS, BENCHMARKS)
    return cases.items


def write(items, out):
    manifest = []
    for it in items:
        rel = it['name'] + '.txt'
        path = os.path.join(out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        data = it['text'].encode('latin-1')
        # Rewrite only what changed so that reruns leave mtimes alone.
        try:
            with open(path, 'rb') as f:
                same = f.read() == data
        except OSError:
            same = False
        if not same:
            with open(path, 'wb') as f:
                f.write(data)
        manifest.append({k: it[k] for k in ('name', 'ruleset', 'source', 'what')} | {'path': rel})
    # Logs of mutations that no longer exist would only confuse a reader.
    wanted = {os.path.normpath(os.path.join(out, m['path'])) for m in manifest}
    for root, _, files in os.walk(out):
        for name in files:
            path = os.path.normpath(os.path.join(root, name))
            if name.endswith('.txt') and path not in wanted:
                os.remove(path)
    with open(os.path.join(out, 'manifest.json'), 'w') as f:
        json.dump(manifest, f, indent=1)
    return manifest


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--corpus', required=True, help='the shared corpus folder (read only)')
    ap.add_argument('--out', required=True, help='folder for the mutated logs and manifest.json')
    ap.add_argument('--seed', type=int, default=1)
    args = ap.parse_args()
    manifest = write(generate(args.corpus, args.seed), args.out)
    print(f'{len(manifest)} mutated logs in {args.out}')


if __name__ == '__main__':
    main()
