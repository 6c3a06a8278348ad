"""Mutations aimed at the rule files: required keys, duplicates, ordering, the
init time limit, metadata, division and the quality target (spec sections 4-5)."""
import math
from decimal import Decimal

from cases import Raw, other_value, set_value, tag, value_cases
from logedit import record_line

# Keys of common.yaml and closed_common.yaml: they behave alike for every
# benchmark of a ruleset, so only the full reps mutate them...
COMMON_RULE_KEYS = {
    'submission_benchmark', 'submission_division', 'submission_org', 'submission_platform',
    'submission_status', 'cache_clear', 'init_start', 'init_stop', 'run_start', 'run_stop',
    'block_start', 'block_stop', 'epoch_start', 'epoch_stop', 'eval_start', 'eval_stop',
    'train_samples', 'eval_samples', 'gradient_accumulation_steps'}
# ... unless a benchmark file redefines them (spec 5.3-5.5, quirk 11.3).
OVERRIDDEN = {'unet3d': {'train_samples', 'eval_samples'}, 'dlrm_dcnv2': {'eval_samples'},
              'llama2_70b_lora': {'gradient_accumulation_steps'}}

INIT_LIMIT_MS = {'closed': 30 * 60 * 1000, 'open': 240 * 60 * 1000}

_OPS = {'>=': lambda a, b: a >= b, '>': lambda a, b: a > b,
        '<=': lambda a, b: a <= b, '<': lambda a, b: a < b}


def covers(rep, key):
    return rep.full or key not in COMMON_RULE_KEYS or key in OVERRIDDEN.get(rep.group, ())


def key_mutations(rep):
    """Removed keys, keys repeated with the same and with a different value, type swaps."""
    log = rep.log
    counts = log.keys()
    for key, n in counts.items():
        # Free-form keys logged many times (weights_initialization, ...) are never required.
        if covers(rep, key) and (n == 1 or key in COMMON_RULE_KEYS or key == 'eval_accuracy'):
            m = log.copy()
            m.delete(m.find(key))
            rep.add(f'drop_{key}', m, f'every {key} record removed')
    if rep.full:
        for a, b in [('block_start', 'epoch_start'), ('block_stop', 'epoch_stop'),
                     ('eval_start', 'block_start'), ('eval_stop', 'block_stop')]:
            if a in counts and b in counts:
                m = log.copy()
                m.delete(m.find(a) + m.find(b))
                rep.add(f'drop_{a}_and_{b}', m, f'both alternatives {a} and {b} removed')
    for key, n in counts.items():
        if n != 1 or not covers(rep, key):
            continue
        i = log.first(key)
        # An identical repeat is at most a warning: the full reps show it for the common keys.
        if rep.full and (key in COMMON_RULE_KEYS or key in ('global_batch_size', 'opt_name', 'lora_rank')):
            m = log.copy()
            m.insert(i + 1, m.lines[i])
            rep.add(f'dup_same_{key}', m, f'{key} repeated with the same value')
        m = log.copy()
        rec = m.record(i)
        rec['value'] = other_value(rec['value'])
        m.insert(i + 1, record_line(rec))
        rep.add(f'dup_diff_{key}', m, f'{key} repeated with value {rec["value"]!r}')
    # int/float/bool/string/null swaps on numeric keys whose CHECK compares numbers.
    for key in ['global_batch_size', 'gradient_accumulation_steps', 'train_samples', 'eval_samples']:
        if key not in counts or not covers(rep, key):
            continue
        v = log.record(log.first(key))['value']
        values = [float(v), '', str(v), 0, -abs(v)]
        if rep.full:
            values += [None]
            if key in ('global_batch_size', 'gradient_accumulation_steps'):  # CHECK v > 0
                values += [True, False, 10 ** 30, 2 ** 64, 1 - 2 ** 64]
        value_cases(rep, key, values)


def submission_mutations(rep):
    bench = rep.log.record(rep.log.first('submission_benchmark'))['value']
    value_cases(rep, 'submission_benchmark', [bench.upper()])
    if not rep.full:
        return
    value_cases(rep, 'submission_benchmark', ['foo', '', 'gpt3', 'llama31_8b'])
    value_cases(rep, 'submission_division', ['foo', '', 'Closed', 'closed ', None])
    value_cases(rep, 'submission_org', ['', None, 'NVIDIA\xe9'])
    value_cases(rep, 'submission_platform', ['', 0])
    value_cases(rep, 'submission_status', ['foo', 'cloud', 'research', ''])


def order_mutations(rep):
    """Init/run ordering, the init time limit and where the division is logged."""
    log = rep.log
    init_starts = log.find('init_start')
    init_stop = log.first('init_stop')
    first_ts = min(log.record(i)['time_ms'] for i in init_starts)
    timings = [('init_over_30min', 'closed', INIT_LIMIT_MS['closed'] + 1)]
    if rep.full:
        timings += [('init_exactly_30min', 'closed', INIT_LIMIT_MS['closed']),
                    ('init_just_under_30min', 'closed', INIT_LIMIT_MS['closed'] - 1),
                    ('init_over_30min', 'open', INIT_LIMIT_MS['closed'] + 1),
                    ('init_just_under_240min', 'open', INIT_LIMIT_MS['open'] - 1),
                    ('init_over_240min', 'open', INIT_LIMIT_MS['open'] + 1)]
    for name, division, delta in timings:
        m = log.copy()
        m.edit(init_stop, time_ms=first_ts + delta)
        if division == 'open':
            m.set_value(m.first('submission_division'), 'open')
        rep.add(f'{name}_{division}', m, f'{division} division, init_stop {delta} ms after the first init_start')
    m = log.copy()
    m.move(m.first('submission_division'), m.first('init_stop') + 1)
    rep.add('division_after_init_stop', m, 'submission_division moved right after init_stop')
    if not rep.full:
        return
    m = log.copy()
    early = m.record(init_starts[0])
    early['time_ms'] = m.record(init_stop)['time_ms'] - INIT_LIMIT_MS['closed'] - 5000
    m.insert(0, record_line(early))
    rep.add('earlier_init_start_31min', m, 'an extra init_start 30 min + 5 s before init_stop at the top')
    m = log.copy()
    m.insert(m.first('run_start'), m.lines[init_starts[-1]])
    rep.add('init_start_after_init_stop', m, 'an init_start between init_stop and run_start')
    m = log.copy()
    m.move(m.first('run_start'), m.first('init_stop'))
    rep.add('run_start_before_init_stop', m, 'run_start moved before init_stop')
    m = log.copy()
    m.move(m.first('run_stop'), m.first('run_start'))
    rep.add('run_stop_before_run_start', m, 'run_stop moved before run_start')
    m = log.copy()
    m.move(m.first('init_stop'), init_starts[0])
    rep.add('init_stop_before_init_start', m, 'init_stop moved before the first init_start')
    stop = log.first('run_stop')
    m = log.copy()
    m.del_meta(stop, 'status')
    rep.add('run_stop_no_status', m, "run_stop metadata without 'status'")
    m = log.copy()
    m.set_meta(stop, 'status', 'aborted')
    rep.add('run_stop_aborted', m, "run_stop status 'aborted'")


def metadata_mutations(rep):
    """The epoch/block/eval metadata requirements of common.yaml and the benchmark files."""
    log = rep.log
    for key, field in [('eval_accuracy', 'epoch_num'), ('eval_accuracy', 'samples_count'),
                       ('eval_start', 'epoch_num'), ('eval_stop', 'epoch_num'),
                       ('eval_start', 'samples_count'),
                       ('epoch_start', 'epoch_num'), ('epoch_stop', 'epoch_num'),
                       ('block_start', 'epoch_count'), ('block_start', 'first_epoch_num'),
                       ('block_start', 'samples_count'), ('block_stop', 'first_epoch_num'),
                       ('block_stop', 'samples_count')]:
        idx = [i for i in log.find(key) if field in log.record(i)['metadata']]
        if not idx or (key != 'eval_accuracy' and not rep.full):
            continue
        m = log.copy()
        m.del_meta(idx[-1], field)
        rep.add(f'{key}_last_without_{field}', m, f'last {key} lacks metadata {field}')
    evals = log.find('eval_accuracy')
    m = log.copy()
    m.set_meta(evals[-1], 'step_num', 1)
    m.del_meta(evals[-1], 'samples_count' if 'samples_count' in m.record(evals[-1])['metadata'] else 'epoch_num')
    rep.add('eval_accuracy_last_step_num_only', m, 'last eval_accuracy carries only step_num')
    if not rep.full:
        return
    for field, values in [('epoch_count', [0, -1, 0.5, '2']), ('samples_count', [-1, '0'])]:
        blocks = [i for i in log.find('block_start') if field in log.record(i)['metadata']]
        for v in values if blocks else []:
            m = log.copy()
            m.set_meta(blocks[0], field, v)
            rep.add(f'block_start_{field}_{tag(v)}', m, f'first block_start {field} {v!r}')
    starts = log.find('block_start') + log.find('epoch_start')
    m = log.copy()
    for i in starts:
        m.set_meta(i, 'samples_count', 0)
    rep.add('starts_with_samples_count', m, 'block/epoch starts also carry samples_count 0')


def open_division_mutations(rep):
    m = rep.log.copy()
    m.set_value(m.first('submission_division'), 'open')
    rep.add('open_division', m, 'submission_division open')
    for key in [] if not rep.full else ['gradient_accumulation_steps', 'global_batch_size']:
        m2 = m.copy()
        m2.delete(m2.find(key))
        rep.add(f'open_division_drop_{key}', m2, f'open division without {key}', m)


# ---------------------------------------------------------------- quality target

def reaches(target, v):
    _, bound, bound_op, limit, limit_op = target
    return _OPS[bound_op](v, bound) and (limit is None or _OPS[limit_op](v, limit))


def miss(target, ulp=False):
    """A value just on the wrong side of the target bound."""
    direction, bound = target[0], target[1]
    if ulp:
        return math.nextafter(bound, -math.inf if direction == 'higher' else math.inf)
    return bound - 1e-4 if direction == 'higher' else bound + 1e-4


def quality_mutations(rep, target):
    """Target missing, just missed, exactly met, met only after run_stop, odd value types."""
    log = rep.log
    evals = [i for i in log.find('eval_accuracy')
             if isinstance(log.record(i)['value'], (int, float)) and not isinstance(log.record(i)['value'], bool)]
    passing = [i for i in evals if reaches(target, log.record(i)['value'])]
    failing = [i for i in evals if i not in passing]
    assert passing, f'{rep.group}: representative log does not reach its target'
    bound, limit = target[1], target[3]

    def with_values(name, what, changes):
        m = log.copy()
        for i, v in changes:
            set_value(m, i, v)
        rep.add(name, m, what)

    with_values('target_missed', f'every passing eval set to {miss(target)!r}',
                [(i, miss(target)) for i in passing])
    with_values('target_missed_by_ulp', f'every passing eval set to {miss(target, True)!r}',
                [(i, miss(target, True)) for i in passing])
    with_values('target_exactly_met', f'only the last passing eval, set exactly to {bound!r}, meets the target',
                [(i, miss(target)) for i in passing[:-1]] + [(passing[-1], bound)])
    if limit is not None:
        with_values('target_at_other_limit', f'passing evals set to the other limit {limit!r}',
                    [(i, limit) for i in passing])
    with_values('eval_nan_passing', 'every passing eval is NaN', [(i, math.nan) for i in passing])
    with_values('eval_inf_passing', 'every passing eval is Infinity', [(i, math.inf) for i in passing])
    with_values('eval_true_passing', 'every passing eval is true', [(i, True) for i in passing])
    last = log.record(passing[-1])['value']
    with_values('eval_string_last', 'last passing eval written as a string', [(passing[-1], str(last))])
    if rep.full:
        with_values('eval_neg_inf_passing', 'every passing eval is -Infinity', [(i, -math.inf) for i in passing])
        if limit is not None:
            with_values('target_at_other_limit_int', f'passing evals set to the int {int(limit)}',
                        [(i, int(limit)) for i in passing])
        if failing:
            with_values('eval_nan_failing', 'one non-passing eval is NaN', [(failing[0], math.nan)])
        with_values('eval_string_first', 'first eval written as a string',
                    [(evals[0], str(log.record(evals[0])['value']))])
        with_values('eval_null_last', 'last passing eval is null', [(passing[-1], None)])
        with_values('eval_list_last', 'last passing eval is a list', [(passing[-1], [last])])
        with_values('eval_last_passing_with_trailing_zeros', f'last passing eval written {last!r}0000',
                    [(passing[-1], Raw(f'{last!r}0000'))])
        # A long decimal just below the bound that still rounds to the bound's double.
        text = format(Decimal(bound) - Decimal('1e-19'), 'f')
        assert float(text) == bound
        with_values('target_met_by_rounding', f'passing evals missed, the last written {text}',
                    [(i, miss(target)) for i in passing[:-1]] + [(passing[-1], Raw(text))])

    if not rep.full:
        return
    m = log.copy()
    stop = m.first('run_stop')
    if stop > passing[0]:
        m.move(stop, passing[0])
        rep.add('target_only_after_run_stop', m, 'run_stop moved before the first passing eval')
    m = log.copy()
    for i in passing:
        m.set_value(i, miss(target))
    m.lines.append(record_line(log.record(passing[-1])))
    rep.add('target_appended_after_run_stop', m, 'passing evals missed; one passing eval appended at the end')


def sd_quality_mutations(rep):
    """stable_diffusion: FID and CLIP at the same eval point, at least two eval points."""
    log = rep.log
    evals = log.find('eval_accuracy')
    by_metric = {}
    for i in evals:
        by_metric.setdefault(log.record(i)['metadata']['metric'], []).append(i)
    fid, clip = by_metric['FID'], by_metric['CLIP']

    def with_values(name, what, changes):
        m = log.copy()
        for i, v in changes:
            m.set_value(i, v)
        rep.add(name, m, what)

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
    for name, what, drop in [('last_point_without_clip', 'the CLIP line of the last eval point removed', [clip[-1]]),
                             ('single_eval_point', 'only the last eval point left', fid[:-1] + clip[:-1]),
                             ('no_eval_accuracy', 'all eval_accuracy lines removed', evals)]:
        m = log.copy()
        m.delete(drop)
        rep.add(name, m, what)
    m = log.copy()
    m.set_meta(fid[-1], 'metric', 'fid')
    rep.add('metric_lowercase', m, "last FID line has metric 'fid'")
    m = log.copy()
    for i in evals:
        m.del_meta(i, 'metric')
    rep.add('no_metric_metadata', m, "no eval_accuracy has a 'metric'")
    m = log.copy()
    m.set_meta(clip[-1], 'samples_count', m.record(clip[-1])['metadata']['samples_count'] + 1)
    rep.add('clip_at_other_samples_count', m, 'last CLIP logged at samples_count + 1')
    m = log.copy()
    m.del_meta(fid[0], 'samples_count')
    rep.add('fid_without_samples_count', m, 'first FID line lacks samples_count')
    # The BEGIN block groups by samples_count in a Python dict: 2048000 and 2048000.0 are one key.
    for name, idx in [('clip_samples_count_as_float', [clip[-1]]), ('middle_fid_samples_count_as_float', [fid[1]])]:
        m = log.copy()
        for i in idx:
            m.set_meta(i, 'samples_count', float(m.record(i)['metadata']['samples_count']))
        rep.add(name, m, f'{name.replace("_", " ")}')
