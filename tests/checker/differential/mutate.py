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
import math
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from logedit import TOKEN, Log, record_line  # noqa: E402

RULESETS = ['1.0.0', '1.1.0', '2.0.0', '2.1.0', '3.0.0', '3.1.0', '4.0.0', '4.1.0',
            '5.0.0', '5.1.0', '6.0.0', '6.1.0']

V30 = 'v3.0/NVIDIA/results/'
V50 = 'v5.0/NVIDIA/results/'

# One representative log per benchmark and corpus round. `target` is the closed
# quality target of its own ruleset (spec section 5.6): (direction, bound,
# bound_op, other_limit, other_op); None for stable_diffusion (FID and CLIP).
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
    'stable_diffusion': (V50 + 'nyx_n1_ngc25.04_nemo/stable_diffusion/result_0.txt', '5.0.0',
                         None),
}

# Parser and file-format mutations do not depend on the benchmark: run them on
# one log per corpus round only.
FORMAT_REPS = ['resnet', 'llama2_70b_lora']

# Keys every ruleset's common.yaml / closed_common.yaml constrains; duplicates
# with a different value and type swaps of these are tried on every benchmark.
COMMON_KEYS = ['submission_benchmark', 'submission_division', 'submission_org',
               'submission_platform', 'submission_status', 'cache_clear', 'init_stop',
               'run_start', 'run_stop', 'train_samples', 'eval_samples',
               'gradient_accumulation_steps', 'global_batch_size', 'opt_name']

INIT_LIMIT_MS = {'closed': 30 * 60 * 1000, 'open': 240 * 60 * 1000}

_OPS = {'>=': lambda a, b: a >= b, '>': lambda a, b: a > b,
        '<=': lambda a, b: a <= b, '<': lambda a, b: a < b}


class Cases:
    """Collects (name, ruleset, text) cases and refuses no-op mutations."""

    def __init__(self):
        self.items = []
        self.names = set()

    def add(self, name, ruleset, log_or_text, source, what, base=None):
        text = log_or_text if isinstance(log_or_text, str) else log_or_text.text()
        if base is not None and text == base.text():
            raise RuntimeError(f'mutation {name} left the log unchanged')
        if name in self.names:
            raise RuntimeError(f'duplicate case name {name}')
        self.names.add(name)
        self.items.append(dict(name=name, ruleset=ruleset, text=text, source=source, what=what))


def other_value(v):
    """A value of the same JSON type that differs from v."""
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + 1
    if isinstance(v, float):
        return v * 2 if v else 1.0
    if isinstance(v, str):
        return v + '_x'
    if v is None:
        return 1
    return []


def reaches(target, v):
    _, bound, bound_op, limit, limit_op = target
    ok = _OPS[bound_op](v, bound)
    return ok and (limit is None or _OPS[limit_op](v, limit))


def miss(target, ulp=False):
    """A value just on the wrong side of the target bound."""
    direction, bound = target[0], target[1]
    away = -math.inf if direction == 'higher' else math.inf
    if ulp:
        return math.nextafter(bound, away)
    return bound - 1e-4 if direction == 'higher' else bound + 1e-4


def bench_name(log):
    return log.record(log.first('submission_benchmark'))['value']


def numeric_evals(log):
    out = []
    for i in log.find('eval_accuracy'):
        v = log.record(i)['value']
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append(i)
    return out


# --------------------------------------------------------------------------
# Mutations that apply to every benchmark representative.

def key_mutations(c, g, log, rs, src):
    """Removed keys, duplicated keys, type swaps."""
    counts = log.keys()
    for key in counts:
        m = log.copy()
        m.delete(m.find(key))
        c.add(f'{g}/drop_{key}', rs, m, src, f'every {key} record removed', log)
    for a, b in [('block_start', 'epoch_start'), ('block_stop', 'epoch_stop'),
                 ('eval_start', 'block_start'), ('eval_stop', 'block_stop')]:
        if a in counts and b in counts:
            m = log.copy()
            m.delete(m.find(a) + m.find(b))
            c.add(f'{g}/drop_{a}_and_{b}', rs, m, src, f'both alternatives {a} and {b} removed', log)
    for key, n in counts.items():
        # Only keys some rule file names; a repeated free-form key says nothing.
        if n != 1 or not (key in COMMON_KEYS or key.startswith(('opt_', 'lars_', 'sgd_', 'lora_'))):
            continue
        i = log.first(key)
        m = log.copy()
        m.insert(i + 1, m.lines[i])
        c.add(f'{g}/dup_same_{key}', rs, m, src, f'{key} repeated with the same value', log)
        m = log.copy()
        rec = m.record(i)
        rec['value'] = other_value(rec['value'])
        m.insert(i + 1, record_line(rec))
        c.add(f'{g}/dup_diff_{key}', rs, m, src, f'{key} repeated with value {rec["value"]!r}', log)
    # int/float/bool/string/null swaps on numeric keys constrained by a CHECK.
    # The common.yaml keys behave alike for all benchmarks of a ruleset unless a
    # benchmark file redefines them (unet3d, dlrm_dcnv2: eval/train_samples).
    swapped = ['global_batch_size']
    if g in FORMAT_REPS + ['unet3d', 'dlrm_dcnv2']:
        swapped += ['gradient_accumulation_steps', 'train_samples', 'eval_samples']
    for key in swapped:
        if key not in counts:
            continue
        i = log.first(key)
        v = log.record(i)['value']
        for tag, nv in [('float', float(v)), ('true', True), ('false', False), ('zero', 0),
                        ('negative', -abs(v)), ('string', str(v)), ('null', None), ('empty', ''),
                        ('huge_int', 10 ** 30)]:
            if nv == v and type(nv) is type(v):
                continue
            m = log.copy()
            m.set_value(i, nv)
            c.add(f'{g}/{key}_{tag}', rs, m, src, f'{key} value {nv!r} instead of {v!r}', log)


def submission_mutations(c, g, log, rs, src):
    for key, values in [
        ('submission_division', ['open', 'foo', '', 'Closed', 'closed ', None]),
        ('submission_benchmark', ['foo', '', bench_name(log).upper(), 'gpt3', 'llama31_8b']),
        ('submission_org', ['', None, 'NVIDIA\xe9']),
        ('submission_platform', ['', 0]),
        ('submission_status', ['foo', 'cloud', 'research', '']),
    ]:
        i = log.first(key)
        for nv in values:
            if nv == log.record(i)['value']:
                continue
            m = log.copy()
            m.set_value(i, nv)
            c.add(f'{g}/{key}_{tag(nv)}', rs, m, src, f'{key} = {nv!r}', log)


def tag(v):
    """A short file-name-safe tag for a value."""
    if v is None:
        return 'null'
    if v == '':
        return 'empty'
    s = ''.join(ch if ch.isalnum() else '_' for ch in str(v).encode('ascii', 'replace').decode())
    return f'{type(v).__name__}_{s}' if not isinstance(v, str) else s


def order_mutations(c, g, log, rs, src):
    """Init/run ordering, the init time limit and the division's position."""
    init_starts = log.find('init_start')
    init_stop = log.first('init_stop')
    first_ts = min(log.record(i)['time_ms'] for i in init_starts)
    for name, delta in [('init_just_under_30min', INIT_LIMIT_MS['closed'] - 1),
                        ('init_exactly_30min', INIT_LIMIT_MS['closed']),
                        ('init_over_30min', INIT_LIMIT_MS['closed'] + 1),
                        ('init_over_240min', INIT_LIMIT_MS['open'] + 1)]:
        for division in ['closed', 'open']:
            if division == 'closed' and name == 'init_over_240min':
                continue
            m = log.copy()
            m.edit(init_stop, time_ms=first_ts + delta)
            if division == 'open':
                m.set_value(m.first('submission_division'), 'open')
            c.add(f'{g}/{name}_{division}', rs, m, src,
                  f'{division} division, init_stop {delta} ms after the first init_start', log)
    m = log.copy()
    early = m.record(init_starts[0])
    early['time_ms'] = m.record(init_stop)['time_ms'] - INIT_LIMIT_MS['closed'] - 5000
    m.insert(0, record_line(early))
    c.add(f'{g}/earlier_init_start_31min', rs, m, src,
          'an extra init_start 30 min + 5 s before init_stop at the top', log)
    m = log.copy()
    i = m.first('run_start')
    m.insert(i, m.lines[init_starts[-1]])
    c.add(f'{g}/init_start_after_init_stop', rs, m, src, 'an init_start between init_stop and run_start', log)
    m = log.copy()
    m.move(m.first('submission_division'), m.first('init_stop') + 1)
    c.add(f'{g}/division_after_init_stop', rs, m, src, 'submission_division moved right after init_stop', log)
    m = log.copy()
    m.move(m.first('run_start'), m.first('init_stop'))
    c.add(f'{g}/run_start_before_init_stop', rs, m, src, 'run_start moved before init_stop', log)
    m = log.copy()
    m.move(m.first('run_stop'), m.first('run_start'))
    c.add(f'{g}/run_stop_before_run_start', rs, m, src, 'run_stop moved before run_start', log)
    m = log.copy()
    m.move(m.first('init_stop'), init_starts[0])
    c.add(f'{g}/init_stop_before_init_start', rs, m, src, 'init_stop moved before the first init_start', log)
    i = log.first('run_stop')
    m = log.copy()
    m.del_meta(i, 'status')
    c.add(f'{g}/run_stop_no_status', rs, m, src, "run_stop metadata without 'status'", log)
    m = log.copy()
    m.set_meta(i, 'status', 'aborted')
    c.add(f'{g}/run_stop_aborted', rs, m, src, "run_stop status 'aborted'", log)


def metadata_mutations(c, g, log, rs, src):
    """The epoch/block/eval metadata requirements of common.yaml."""
    for key, field in [('eval_accuracy', 'epoch_num'), ('eval_accuracy', 'samples_count'),
                       ('eval_start', 'epoch_num'), ('eval_stop', 'epoch_num'),
                       ('eval_start', 'samples_count'),
                       ('epoch_start', 'epoch_num'), ('epoch_stop', 'epoch_num'),
                       ('block_start', 'epoch_count'), ('block_start', 'first_epoch_num'),
                       ('block_start', 'samples_count'), ('block_stop', 'first_epoch_num'),
                       ('block_stop', 'samples_count')]:
        idx = [i for i in log.find(key) if field in log.record(i)['metadata']]
        if not idx:
            continue
        m = log.copy()
        m.del_meta(idx[-1], field)
        c.add(f'{g}/{key}_last_without_{field}', rs, m, src, f'last {key} lacks metadata {field}', log)
        m = log.copy()
        for i in idx:
            m.del_meta(i, field)
        c.add(f'{g}/{key}_all_without_{field}', rs, m, src, f'no {key} has metadata {field}', log)
    blocks = [i for i in log.find('block_start') if 'epoch_count' in log.record(i)['metadata']]
    for nv in [0, -1, 0.5, '2']:
        if blocks:
            m = log.copy()
            m.set_meta(blocks[0], 'epoch_count', nv)
            c.add(f'{g}/block_start_epoch_count_{tag(nv)}', rs, m, src, f'first block_start epoch_count {nv!r}', log)
    blocks = [i for i in log.find('block_start') if 'samples_count' in log.record(i)['metadata']]
    for nv in [-1, '0']:
        if blocks:
            m = log.copy()
            m.set_meta(blocks[0], 'samples_count', nv)
            c.add(f'{g}/block_start_samples_count_{tag(nv)}', rs, m, src,
                  f'first block_start samples_count {nv!r}', log)
    evals = log.find('eval_accuracy')
    m = log.copy()
    m.set_meta(evals[-1], 'step_num', 1)
    m.del_meta(evals[-1], 'samples_count' if 'samples_count' in m.record(evals[-1])['metadata'] else 'epoch_num')
    c.add(f'{g}/eval_accuracy_last_step_num_only', rs, m, src, 'last eval_accuracy carries only step_num', log)
    m = log.copy()
    for i in log.find('block_start') + log.find('epoch_start'):
        m.set_meta(i, 'samples_count', 0)
    if log.find('block_start') + log.find('epoch_start'):
        c.add(f'{g}/starts_with_samples_count', rs, m, src, 'block/epoch starts also carry samples_count 0', log)


def quality_mutations(c, g, log, rs, src, target):
    """Quality target: missing, just missed, exactly met, met only after run_stop, odd values."""
    evals = numeric_evals(log)
    passing = [i for i in evals if reaches(target, log.record(i)['value'])]
    failing = [i for i in evals if i not in passing]
    assert passing, f'{g}: representative log does not reach its target'
    bound = target[1]

    def with_values(name, what, changes):
        m = log.copy()
        for i, v in changes:
            m.set_value(i, v)
        c.add(f'{g}/{name}', rs, m, src, what, log)

    with_values('target_missed', f'every passing eval set to {miss(target)!r}',
                [(i, miss(target)) for i in passing])
    with_values('target_missed_by_ulp', f'every passing eval set to {miss(target, True)!r}',
                [(i, miss(target, True)) for i in passing])
    with_values('target_exactly_met', f'only the last passing eval, set exactly to {bound!r}, meets the target',
                [(i, miss(target)) for i in passing[:-1]] + [(passing[-1], bound)])
    limit = target[3]
    if limit is not None:
        with_values('target_at_other_limit', f'passing evals set to the other limit {limit!r}',
                    [(i, limit) for i in passing])
        with_values('target_at_other_limit_int', f'passing evals set to the int {int(limit)}',
                    [(i, int(limit)) for i in passing])
    with_values('eval_nan_passing', 'every passing eval is NaN', [(i, math.nan) for i in passing])
    if failing:
        with_values('eval_nan_failing', 'one non-passing eval is NaN', [(failing[0], math.nan)])
    with_values('eval_inf_passing', 'every passing eval is Infinity', [(i, math.inf) for i in passing])
    with_values('eval_neg_inf_passing', 'every passing eval is -Infinity', [(i, -math.inf) for i in passing])
    with_values('eval_true_passing', 'every passing eval is true', [(i, True) for i in passing])
    with_values('eval_string_last', 'last passing eval written as a string',
                [(passing[-1], str(log.record(passing[-1])['value']))])
    with_values('eval_string_first', 'first eval written as a string',
                [(evals[0], str(log.record(evals[0])['value']))])
    with_values('eval_null_last', 'last passing eval is null', [(passing[-1], None)])
    with_values('eval_list_last', 'last passing eval is a list', [(passing[-1], [log.record(passing[-1])['value']])])

    # Met only after run_stop: run_stop moved before the first passing eval.
    m = log.copy()
    stop = m.first('run_stop')
    if stop > passing[0]:
        m.move(stop, passing[0])
        c.add(f'{g}/target_only_after_run_stop', rs, m, src, 'run_stop moved before the first passing eval', log)
    # ... and a passing eval appended after the end of the log while all others miss.
    m = log.copy()
    for i in passing:
        m.set_value(i, miss(target))
    rec = log.record(passing[-1])
    m.lines.append(record_line(rec))
    c.add(f'{g}/target_appended_after_run_stop', rs, m, src,
          'passing evals missed; one passing eval appended at the end', log)


def sd_quality_mutations(c, g, log, rs, src):
    """stable_diffusion: FID and CLIP at the same eval point, at least two eval points."""
    evals = log.find('eval_accuracy')
    by_metric = {}
    for i in evals:
        md = log.record(i)['metadata']
        by_metric.setdefault(md['metric'], []).append(i)
    fid, clip = by_metric['FID'], by_metric['CLIP']

    def with_values(name, what, changes):
        m = log.copy()
        for i, v in changes:
            m.set_value(i, v)
        c.add(f'{g}/{name}', rs, m, src, what, log)

    with_values('fid_exactly_90', 'last FID exactly 90.0', [(fid[-1], 90.0)])
    with_values('fid_just_above_90', 'last FID one ulp above 90', [(fid[-1], math.nextafter(90.0, 100.0))])
    with_values('fid_int_90', 'last FID int 90', [(fid[-1], 90)])
    with_values('fid_negative', 'last FID -1', [(fid[-1], -1.0)])
    with_values('clip_exactly_0_15', 'last CLIP exactly 0.15', [(clip[-1], 0.15)])
    with_values('clip_just_below_0_15', 'last CLIP one ulp below 0.15', [(clip[-1], math.nextafter(0.15, 0))])
    with_values('clip_above_1', 'last CLIP 1.0000001', [(clip[-1], 1.0000001)])
    with_values('fid_string', 'last FID written as a string', [(fid[-1], str(log.record(fid[-1])['value']))])
    with_values('clip_nan', 'last CLIP NaN', [(clip[-1], math.nan)])
    with_values('earlier_point_passes', 'an earlier eval point meets both, the last does not',
                [(fid[0], 50.0), (clip[0], 0.5), (fid[-1], 95.0)])
    m = log.copy()
    m.delete([clip[-1]])
    c.add(f'{g}/last_point_without_clip', rs, m, src, 'the CLIP line of the last eval point removed', log)
    m = log.copy()
    m.delete(fid[:-1] + clip[:-1])
    c.add(f'{g}/single_eval_point', rs, m, src, 'only the last eval point left', log)
    m = log.copy()
    m.set_meta(fid[-1], 'metric', 'fid')
    c.add(f'{g}/metric_lowercase', rs, m, src, "last FID line has metric 'fid'", log)
    m = log.copy()
    for i in evals:
        m.del_meta(i, 'metric')
    c.add(f'{g}/no_metric_metadata', rs, m, src, "no eval_accuracy has a 'metric'", log)
    m = log.copy()
    m.set_meta(clip[-1], 'samples_count', m.record(clip[-1])['metadata']['samples_count'] + 1)
    c.add(f'{g}/clip_at_other_samples_count', rs, m, src, 'last CLIP logged at samples_count + 1', log)
    m = log.copy()
    m.del_meta(fid[0], 'samples_count')
    c.add(f'{g}/fid_without_samples_count', rs, m, src, 'first FID line lacks samples_count', log)
    m = log.copy()
    m.delete(evals)
    c.add(f'{g}/no_eval_accuracy', rs, m, src, 'all eval_accuracy lines removed', log)


# --------------------------------------------------------------------------
# Benchmark-specific hyperparameter rules.

class Raw(str):
    """JSON text written verbatim as a value, for number spellings json.dumps never emits."""


def value_cases(c, g, log, rs, src, key, values):
    i = log.first(key)
    for nv in values:
        m = log.copy()
        if isinstance(nv, Raw):
            m.set_value(i, '@RAW@')
            m.lines[i] = m.lines[i].replace('"@RAW@"', nv)
            name = 'raw_' + tag(str(nv))
        else:
            m.set_value(i, nv)
            name = tag(nv)
        c.add(f'{g}/{key}_{name}', rs, m, src, f'{key} = {nv}', log)


def insert_after(log, anchor_key, key, value):
    i = log.first(anchor_key)
    rec = log.record(i)
    rec.update(key=key, value=value)
    log.insert(i + 1, record_line(rec))


def resnet_mutations(c, g, log, rs, src):
    value_cases(c, g, log, rs, src, 'lars_epsilon', [0.5, 0.0, False, -0.0, Raw('1e-400'), Raw('0e5'), '0', None])
    value_cases(c, g, log, rs, src, 'lars_opt_weight_decay',
                [1e-4, 2e-4, 3e-5, 0, 0.0, -1e-4, 5.000001e-05, 5.0001e-05, 1e-4 * 2 ** -10, '5e-05'])
    value_cases(c, g, log, rs, src, 'lars_opt_end_learning_rate', [0.0002, 1e-4 + 1e-12, '0.0001'])
    value_cases(c, g, log, rs, src, 'lars_opt_learning_rate_decay_poly_power', [2.0, True, 2.5, '2', 1])
    value_cases(c, g, log, rs, src, 'opt_name', ['sgd', 'adam', 'LARS', ''])
    value_cases(c, g, log, rs, src, 'global_batch_size', [0.5])
    # A complete SGD log: opt_name switched and the closed_resnet_sgd keys added.
    sgd = log.copy()
    sgd.set_value(sgd.first('opt_name'), 'sgd')
    for key, v in [('sgd_opt_base_learning_rate', 11.0), ('sgd_opt_learning_rate_decay_steps', 37),
                   ('sgd_opt_weight_decay', 5e-05), ('sgd_opt_momentum', 0.9),
                   ('opt_learning_rate_warmup_epochs', 2)]:
        insert_after(sgd, 'opt_name', key, v)
    c.add(f'{g}/sgd_complete', rs, sgd, src, 'opt_name sgd with every closed_resnet_sgd key', log)
    for key, values in [('sgd_opt_base_learning_rate', [0.0105, 0.0120000001, 0.01201, 0, '11.0']),
                        ('sgd_opt_end_learning_rate', [0.0002, 1e-4]),
                        ('sgd_opt_weight_decay', [3e-5, 4e-4, -5e-05])]:
        i = sgd.first(key)
        for nv in values:
            if nv == sgd.record(i)['value'] and type(nv) is type(sgd.record(i)['value']):
                continue
            m = sgd.copy()
            m.set_value(i, nv)
            c.add(f'{g}/sgd_{key}_{tag(nv)}', rs, m, src, f'sgd log with {key} = {nv!r}', sgd)
    for key in ['sgd_opt_base_learning_rate', 'sgd_opt_momentum', 'opt_learning_rate_warmup_epochs']:
        m = sgd.copy()
        m.delete(m.find(key))
        c.add(f'{g}/sgd_drop_{key}', rs, m, src, f'sgd log without {key}', sgd)


def unet3d_mutations(c, g, log, rs, src):
    value_cases(c, g, log, rs, src, 'train_samples', [168.0, 169, '168'])
    value_cases(c, g, log, rs, src, 'eval_samples', [42.0, 43, True])
    value_cases(c, g, log, rs, src, 'opt_learning_rate_warmup_epochs', [-1, 0, 0.0, '0'])


def bert_mutations(c, g, log, rs, src):
    value_cases(c, g, log, rs, src, 'opt_lamb_epsilon', [1.0, '1e-6', None])
    value_cases(c, g, log, rs, src, 'global_batch_size', [-1, 'big'])


def retinanet_mutations(c, g, log, rs, src):
    value_cases(c, g, log, rs, src, 'opt_weight_decay', [0.0, False, 1e-4, '0.0'])
    value_cases(c, g, log, rs, src, 'opt_name', ['Adam', 'adamw'])
    value_cases(c, g, log, rs, src, 'opt_learning_rate_warmup_factor', [-0.001, 0])


def rgat_mutations(c, g, log, rs, src):
    value_cases(c, g, log, rs, src, 'opt_name', ['adamw', 'sgd'])
    value_cases(c, g, log, rs, src, 'global_batch_size', [0, 1.5])
    value_cases(c, g, log, rs, src, 'opt_base_learning_rate', [-0.001, 0])


def dlrm_mutations(c, g, log, rs, src):
    value_cases(c, g, log, rs, src, 'opt_adagrad_epsilon', [Raw('1.0e-8'), Raw('0.00000001'), Raw('1E-8'), 1.00000001e-8, 1e-7, '1e-8'])
    value_cases(c, g, log, rs, src, 'eval_samples', [89137319.0, 89137318, '89137319'])
    value_cases(c, g, log, rs, src, 'opt_weight_decay', [0.0, False, -0.0, 1e-9])
    value_cases(c, g, log, rs, src, 'opt_learning_rate_decay_steps', [1, None])


def llama_mutations(c, g, log, rs, src):
    value_cases(c, g, log, rs, src, 'lora_rank', [16.0, 16.5, '16', True, 8])
    value_cases(c, g, log, rs, src, 'lora_alpha', [None, 'x'])


def sd_mutations(c, g, log, rs, src):
    value_cases(c, g, log, rs, src, 'opt_adamw_epsilon', [Raw('1.00e-8'), 1.0000000000000002e-08, 1e-7])
    value_cases(c, g, log, rs, src, 'opt_adamw_weight_decay', [0.010000000000000002, '0.01'])
    value_cases(c, g, log, rs, src, 'opt_learning_rate_warmup_steps', [-1])
    value_cases(c, g, log, rs, src, 'global_batch_size', [-1])
    m = log.copy()
    insert_after(m, 'global_batch_size', 'global_batch_size', 512)
    c.add(f'{g}/second_global_batch_size', rs, m, src, 'a second, different global_batch_size (AT_LEAST_ONE)', log)


SPECIFIC = {'resnet': resnet_mutations, 'unet3d': unet3d_mutations, 'bert30': bert_mutations,
            'bert50': bert_mutations, 'retinanet': retinanet_mutations, 'rgat': rgat_mutations,
            'dlrm_dcnv2': dlrm_mutations, 'llama2_70b_lora': llama_mutations,
            'stable_diffusion': sd_mutations}


# --------------------------------------------------------------------------
# Parser and file-format quirks (spec section 3).

def format_mutations(c, g, log, rs, src, rng):
    n = len(log.lines)
    records = [i for i in range(n) if log.record(i) is not None]
    seed_line = log.first('seed')

    def add(name, what, m):
        c.add(f'{g}/{name}', rs, m, src, what, log)

    def raw(name, what, fn):
        m = log.copy()
        fn(m)
        add(name, what, m)

    add('empty_file', 'an empty file', '')
    add('no_mllog_lines', 'text without any MLLOG line',
        ''.join(l.replace(TOKEN, 'LOG ') for l in log.lines))
    add('only_newlines', 'three empty lines', '\n\n\n')
    raw('leading_garbage_all', 'every line prefixed with an mpirun tag',
        lambda m: m.lines.__setitem__(slice(None), ['[1,0]<stdout>:' + l for l in m.lines]))
    raw('leading_garbage_timestamp', 'every line prefixed with a timestamp and a stray :::MLLOG',
        lambda m: m.lines.__setitem__(slice(None), [f'2023-05-06 12:00:00 {TOKEN}x {l}' for l in m.lines]))
    raw('token_in_string_value', "submission_platform value contains ':::MLLOG '",
        lambda m: m.set_value(m.first('submission_platform'), 'a :::MLLOG b'))
    raw('token_without_space_run_stop', "run_stop written as ':::MLLOG{' (not recognised)",
        lambda m: m.lines.__setitem__(m.first('run_stop'), m.lines[m.first('run_stop')].replace(TOKEN, ':::MLLOG')))
    raw('extra_spaces_after_token', 'three spaces between :::MLLOG and the JSON',
        lambda m: m.lines.__setitem__(slice(None), [l.replace(TOKEN, TOKEN + '  ') for l in m.lines]))
    raw('tab_after_json', 'a tab and spaces after the JSON of every record',
        lambda m: m.lines.__setitem__(slice(None), [l.rstrip('\n') + '\t  \n' for l in m.lines]))
    raw('crlf', 'CRLF line endings',
        lambda m: m.lines.__setitem__(slice(None), [l.rstrip('\n') + '\r\n' for l in m.lines]))
    raw('no_final_newline', 'the last newline removed',
        lambda m: m.lines.__setitem__(-1, m.lines[-1].rstrip('\n')))
    raw('utf8_bom', 'a UTF-8 byte order mark before the first line',
        lambda m: m.lines.__setitem__(0, '\xef\xbb\xbf' + m.lines[0]))
    raw('blank_and_noise_lines', 'blank lines and non-MLLOG noise at random places',
        lambda m: [m.insert(rng.randrange(len(m.lines)), rng.choice(['\n', 'noise line\n', 'MLLOG x\n']))
                   for _ in range(20)])
    raw('truncated_last_line', 'the last record cut in the middle, no newline',
        lambda m: m.lines.__setitem__(-1, m.lines[-1][:len(m.lines[-1]) // 2]))
    raw('broken_json_appended', 'a broken JSON record appended',
        lambda m: m.lines.append(f'{TOKEN}{{"namespace": "", "time_ms": 1, "key": \n'))
    broken = rng.choice(records[len(records) // 4:])
    raw('broken_json_middle', 'one record in the middle has its closing brace removed',
        lambda m: m.lines.__setitem__(broken, m.lines[broken].rstrip().rstrip('}') + '\n'))
    raw('json_array_record', 'a record that is a JSON array',
        lambda m: m.insert(seed_line, f'{TOKEN}[1, 2]\n'))
    raw('non_utf8_byte_in_platform', 'a raw 0xFF byte inside the submission_platform string',
        lambda m: m.set_value(m.first('submission_platform'), 'DGX\xff H100'))
    raw('non_utf8_byte_in_division', 'a raw 0xE9 byte appended to the division value',
        lambda m: m.set_value(m.first('submission_division'), 'closed\xe9'))
    raw('utf8_multibyte_in_org', 'UTF-8 bytes of a non-ASCII name in submission_org',
        lambda m: m.set_value(m.first('submission_org'), 'NVIDIA \xc3\xbc'))
    raw('escaped_unicode_in_org', 'a \\u00fc escape in submission_org',
        lambda m: m.lines.__setitem__(m.first('submission_org'),
                                      m.lines[m.first('submission_org')].replace('"NVIDIA"', '"NVIDI\\u00c4"')))
    div = log.first('submission_division')
    raw('duplicate_json_field_open_first', 'division record with "value": "open" before the real value',
        lambda m: m.lines.__setitem__(div, m.lines[div].replace('"value":', '"value": "open", "value":', 1)))
    raw('duplicate_json_field_open_last', 'division record with "value": "open" after the real value',
        lambda m: m.lines.__setitem__(div, m.lines[div].replace('"metadata":', '"value": "open", "metadata":', 1)))
    for field in ['metadata', 'time_ms', 'value', 'key']:
        raw(f'seed_missing_{field}', f'the seed record lacks {field}',
            lambda m, f=field: m.put(seed_line, {k: v for k, v in m.record(seed_line).items() if k != f}))
    ts = log.record(seed_line)['time_ms']
    for name, v in [('string', str(ts)), ('string_bad', 'abc'), ('null', None), ('float', ts + 0.5),
                    ('true', True), ('exponent', float(ts)), ('string_inf', 'inf'), ('list', [ts])]:
        raw(f'seed_time_ms_{name}', f'seed record time_ms = {v!r}', lambda m, v=v: m.edit(seed_line, time_ms=v))
    stop = log.first('init_stop')
    raw('init_stop_time_ms_string', 'init_stop time_ms as a decimal string',
        lambda m: m.edit(stop, time_ms=str(m.record(stop)['time_ms'])))
    raw('init_stop_time_ms_infinity', 'init_stop time_ms Infinity',
        lambda m: m.edit(stop, time_ms=math.inf))
    raw('seed_metadata_null', 'seed record metadata null', lambda m: m.edit(seed_line, metadata=None))
    raw('eval_metadata_null', 'first eval_accuracy metadata null',
        lambda m: m.edit(m.first('eval_accuracy'), metadata=None))
    raw('eval_metadata_list', 'first eval_accuracy metadata a list',
        lambda m: m.edit(m.first('eval_accuracy'), metadata=['epoch_num']))
    raw('key_not_string', 'seed record key is a number', lambda m: m.edit(seed_line, key=7))
    raw('unknown_key_added', 'an unknown key between records',
        lambda m: m.insert(seed_line, record_line(dict(m.record(seed_line), key='my_custom_key'))))


# --------------------------------------------------------------------------
# Retargeting: logs under rulesets whose benchmarks have no corpus log.

def retarget_mutations(c, logs):
    for g, (src, own, _) in REPS.items():
        for rs in RULESETS:
            if rs != own:
                c.add(f'{g}/under_{rs}', rs, logs[g], REPS[g][0], f'unchanged log under ruleset {rs}')

    def renamed(g, bench, rulesets, extra=None, suffix=''):
        m = logs[g].copy()
        m.set_value(m.first('submission_benchmark'), bench)
        if extra:
            extra(m)
        for rs in rulesets:
            c.add(f'{g}/as_{bench}{suffix}_under_{rs}', rs, m, REPS[g][0],
                  f'submission_benchmark {bench!r} under {rs}', logs[g])

    renamed('retinanet', 'ssd', ['1.0.0', '2.0.0', '2.1.0', '3.0.0', '3.1.0', '4.0.0', '4.1.0'])
    renamed('rgat', 'gnn', ['4.0.0', '4.1.0', '5.0.0'])
    renamed('bert50', 'llama31_405b', ['5.0.0'])
    renamed('llama2_70b_lora', 'llama31_8b', ['5.1.0', '6.1.0'])
    renamed('llama2_70b_lora', 'flux1', ['6.0.0'])

    def step_num(m):  # 3.1.0 names the stable_diffusion position step_num
        for i in range(len(m.lines)):
            rec = m.record(i)
            if rec is not None and isinstance(rec.get('metadata'), dict) and 'samples_count' in rec['metadata']:
                rec['metadata']['step_num'] = rec['metadata'].pop('samples_count')
                m.put(i, rec)
    m = logs['stable_diffusion'].copy()
    step_num(m)
    for rs in ['3.1.0', '4.0.0']:
        c.add(f'stable_diffusion/step_num_under_{rs}', rs, m, REPS['stable_diffusion'][0],
              f'samples_count renamed step_num, under {rs}', logs['stable_diffusion'])

    # 6.x optional precision/parallelism records on the llama log.
    base = logs['llama2_70b_lora']
    for key, v in [('lowest_numerical_precision_in_linear', 'bfloat16'),
                   ('lowest_numerical_precision_in_linear', 'bf16'),
                   ('lowest_numerical_precision_in_attn', 'fp8'),
                   ('tensor_parallelism', 2), ('tensor_parallelism', 2.5), ('micro_batch_size', '1'),
                   ('config_filename', None)]:
        m = base.copy()
        insert_after(m, 'global_batch_size', key, v)
        for rs in ['5.1.0', '6.1.0']:
            c.add(f'llama2_70b_lora/opt_{key}_{tag(v)}_under_{rs}', rs, m, REPS['llama2_70b_lora'][0],
                  f'optional {key} = {v!r} under {rs}', base)
    m = base.copy()
    m.delete(m.find('submission_status'))
    c.add('llama2_70b_lora/no_status_under_6.1.0', '6.1.0', m, REPS['llama2_70b_lora'][0],
          'submission_status removed, under 6.1.0', base)


def open_division_mutations(c, g, log, rs, src):
    m = log.copy()
    m.set_value(m.first('submission_division'), 'open')
    c.add(f'{g}/open_division', rs, m, src, 'submission_division open', log)
    m2 = m.copy()
    m2.delete(m2.find('gradient_accumulation_steps'))
    c.add(f'{g}/open_division_drop_gradient_accumulation_steps', rs, m2, src,
          'open division without gradient_accumulation_steps', m)
    m2 = m.copy()
    m2.delete(m2.find('global_batch_size'))
    c.add(f'{g}/open_division_drop_global_batch_size', rs, m2, src, 'open division without global_batch_size', m)


def generate(corpus, seed=1):
    rng = random.Random(seed)
    c = Cases()
    logs = {g: Log.read(os.path.join(corpus, src)) for g, (src, _, _) in REPS.items()}
    for g, (src, rs, target) in REPS.items():
        log = logs[g]
        key_mutations(c, g, log, rs, src)
        if g in FORMAT_REPS:
            submission_mutations(c, g, log, rs, src)
        else:  # the benchmark name is what differs between benchmarks
            value_cases(c, g, log, rs, src, 'submission_benchmark', [bench_name(log).upper(), 'foo'])
        order_mutations(c, g, log, rs, src)
        metadata_mutations(c, g, log, rs, src)
        open_division_mutations(c, g, log, rs, src)
        if target is None:
            sd_quality_mutations(c, g, log, rs, src)
        else:
            quality_mutations(c, g, log, rs, src, target)
        SPECIFIC[g](c, g, log, rs, src)
        if g in FORMAT_REPS:
            format_mutations(c, g, log, rs, src, rng)
    retarget_mutations(c, logs)
    return c.items


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
