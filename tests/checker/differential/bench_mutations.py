"""Benchmark-specific hyperparameter rules, and logs retargeted to rulesets and
benchmarks the corpus has no log for (spec sections 4.6, 5.2-5.5)."""
from cases import Raw, insert_after, tag, value_cases


def resnet(rep):
    value_cases(rep, 'lars_epsilon', [0.5, 0.0, False, -0.0, Raw('1e-400'), Raw('0e5'), '0', None])
    value_cases(rep, 'lars_opt_weight_decay',
                [1e-4, 2e-4, 3e-5, 0, 0.0, -1e-4, 5.000001e-05, 5.0001e-05, 1e-4 * 2 ** -10, '5e-05'])
    value_cases(rep, 'lars_opt_end_learning_rate', [0.0002, 1e-4 + 1e-12, Raw('1.0E-4'), '0.0001'])
    value_cases(rep, 'lars_opt_learning_rate_decay_poly_power', [2.0, True, 2.5, '2', 1])
    value_cases(rep, 'opt_name', ['sgd', 'adam', 'LARS', ''])
    value_cases(rep, 'global_batch_size', [0.5])
    # A complete SGD log: opt_name switched and the closed_resnet_sgd keys added.
    sgd = rep.log.copy()
    sgd.set_value(sgd.first('opt_name'), 'sgd')
    for key, v in [('sgd_opt_base_learning_rate', 11.0), ('sgd_opt_learning_rate_decay_steps', 37),
                   ('sgd_opt_weight_decay', 5e-05), ('sgd_opt_momentum', 0.9),
                   ('opt_learning_rate_warmup_epochs', 2)]:
        insert_after(sgd, 'opt_name', key, v)
    rep.add('sgd_complete', sgd, 'opt_name sgd with every closed_resnet_sgd key')
    value_cases(rep, 'sgd_opt_base_learning_rate', [0.0105, 0.0120000001, 0.01201, 0, '11.0'], sgd, 'sgd_')
    value_cases(rep, 'sgd_opt_end_learning_rate', [0.0002, 0.00010000001], sgd, 'sgd_')
    value_cases(rep, 'sgd_opt_weight_decay', [3e-5, 4e-4, -5e-05], sgd, 'sgd_')
    for key in ['sgd_opt_base_learning_rate', 'sgd_opt_momentum', 'opt_learning_rate_warmup_epochs']:
        m = sgd.copy()
        m.delete(m.find(key))
        rep.add(f'sgd_drop_{key}', m, f'sgd log without {key}', sgd)


def unet3d(rep):
    value_cases(rep, 'train_samples', [169])
    value_cases(rep, 'eval_samples', [43, True])
    value_cases(rep, 'opt_learning_rate_warmup_epochs', [-1, 0, 0.0, '0'])


def bert(rep):
    value_cases(rep, 'opt_lamb_epsilon', [1.0, '1e-6', None])
    value_cases(rep, 'global_batch_size', [-1, 'big'])


def retinanet(rep):
    value_cases(rep, 'opt_weight_decay', [0.0, False, 1e-4, '0.0'])
    value_cases(rep, 'opt_name', ['Adam', 'adamw'])
    value_cases(rep, 'opt_learning_rate_warmup_factor', [-0.001, 0])


def rgat(rep):
    value_cases(rep, 'opt_name', ['adamw', 'sgd'])
    value_cases(rep, 'global_batch_size', [1.5])
    value_cases(rep, 'opt_base_learning_rate', [-0.001, 0])


def dlrm_dcnv2(rep):
    value_cases(rep, 'opt_adagrad_epsilon',
                [Raw('1.0e-8'), Raw('0.00000001'), Raw('1E-8'), 1.00000001e-8, 1e-7, '1e-8'])
    value_cases(rep, 'eval_samples', [89137318, True])
    value_cases(rep, 'opt_weight_decay', [0.0, False, -0.0, 1e-9])
    value_cases(rep, 'opt_learning_rate_decay_steps', [1, None])
    value_cases(rep, 'opt_adagrad_learning_rate_decay', [2 ** 64, 0.0])


def llama2_70b_lora(rep):
    value_cases(rep, 'lora_rank', [16.0, 16.5, '16', True, 8, 2 ** 64 + 16])
    value_cases(rep, 'lora_alpha', [None, 'x'])


def stable_diffusion(rep):
    value_cases(rep, 'opt_adamw_epsilon', [Raw('1.00e-8'), 1.0000000000000002e-08, 1e-7])
    value_cases(rep, 'opt_adamw_weight_decay', [0.010000000000000002, '0.01'])
    value_cases(rep, 'opt_learning_rate_warmup_steps', [-1])
    value_cases(rep, 'global_batch_size', [-1])
    m = rep.log.copy()
    insert_after(m, 'global_batch_size', 'global_batch_size', 512)
    rep.add('second_global_batch_size', m, 'a second, different global_batch_size (AT_LEAST_ONE)')
    # submission_* keys run their POST once: a repeated benchmark must not enqueue (and
    # so run the BEGIN that builds aggregated_eval_accuracy) twice.
    m = rep.log.copy()
    evals = m.find('eval_accuracy')
    m.delete(evals[:-2])
    i = m.first('submission_benchmark')
    m.insert(i + 1, m.lines[i])
    rep.add('single_eval_point_benchmark_repeated', m, 'only the last eval point, submission_benchmark logged twice')


SPECIFIC = {'resnet': resnet, 'unet3d': unet3d, 'bert30': bert, 'bert50': bert, 'retinanet': retinanet,
            'rgat': rgat, 'dlrm_dcnv2': dlrm_dcnv2, 'llama2_70b_lora': llama2_70b_lora,
            'stable_diffusion': stable_diffusion}


def retarget(reps, rulesets, benchmarks):
    """Unchanged reps under other rulesets; renamed benchmarks; 3.1 step_num; 6.x optional keys."""
    for rep in reps.values():
        bench = rep.log.record(rep.log.first('submission_benchmark'))['value']
        for rs in rulesets:
            # Full reps go under every ruleset; the others where their benchmark is listed.
            if rs != rep.ruleset and (rep.full or bench in benchmarks[rs]):
                rep.cases.add(f'{rep.group}/under_{rs}', rs, rep.log, rep.source, f'unchanged log under {rs}')

    def renamed(group, bench, under):
        if group not in reps:  # not in the fixture corpus
            return
        rep = reps[group]
        m = rep.log.copy()
        m.set_value(m.first('submission_benchmark'), bench)
        for rs in under:
            rep.add(f'as_{bench}_under_{rs}', m, f'submission_benchmark {bench!r} under {rs}', ruleset=rs)

    renamed('retinanet', 'ssd', ['0.7.0', '1.0.0', '2.0.0', '3.0.0', '3.1.0', '4.0.0', '4.1.0'])
    # 0.7.0's own benchmarks: their rule files, with the keys a BERT log lacks.
    renamed('bert30', 'transformer', ['0.7.0'])
    renamed('bert30', 'gnmt', ['0.7.0'])
    renamed('rgat', 'gnn', ['4.0.0', '4.1.0', '5.0.0'])
    renamed('bert50', 'llama31_405b', ['5.0.0'])
    renamed('llama2_70b_lora', 'llama31_8b', ['5.1.0', '6.1.0'])
    renamed('llama2_70b_lora', 'flux1', ['6.0.0'])

    if 'stable_diffusion' in reps:
        step_num_cases(reps['stable_diffusion'])
    if 'llama2_70b_lora' in reps:
        optional_key_cases(reps['llama2_70b_lora'])
        disclosure_cases(reps['llama2_70b_lora'])
        dlrmv4_cases(reps['llama2_70b_lora'])
        flux1_interval_cases(reps['llama2_70b_lora'])


def step_num_cases(sd):
    """3.1.0 names the stable_diffusion eval position step_num, 4.0.0+ samples_count."""
    m = sd.log.copy()
    for i in range(len(m.lines)):
        rec = m.record(i)
        if rec is not None and isinstance(rec.get('metadata'), dict) and 'samples_count' in rec['metadata']:
            rec['metadata']['step_num'] = rec['metadata'].pop('samples_count')
            m.put(i, rec)
    for rs in ['3.1.0', '4.0.0']:
        sd.add(f'step_num_under_{rs}', m, f'samples_count renamed step_num, under {rs}', ruleset=rs)


def optional_key_cases(llama):
    """6.0+ optional precision/parallelism records (unchecked before 6.0.0)."""
    for key, v in [('lowest_numerical_precision_in_linear', 'bfloat16'),
                   ('lowest_numerical_precision_in_linear', 'bf16'),
                   ('lowest_numerical_precision_in_attn', 'fp8'),
                   ('tensor_parallelism', 2), ('tensor_parallelism', 2.5), ('tensor_parallelism', 10 ** 400),
                   ('micro_batch_size', '1'),
                   ('config_filename', None)]:
        m = llama.log.copy()
        insert_after(m, 'global_batch_size', key, v)
        for rs in ['6.1.0'] if key != 'lowest_numerical_precision_in_linear' else ['5.1.0', '6.1.0']:
            shown = repr(v) if len(repr(v)) <= 60 else f'{repr(v)[:20]}... ({len(repr(v))} digits)'
            llama.add(f'opt_{key}_{tag(v)}_under_{rs}', m, f'optional {key} = {shown} under {rs}', ruleset=rs)
    m = llama.log.copy()
    m.delete(m.find('submission_status'))
    llama.add('no_status_under_6.1.0', m, 'submission_status removed, under 6.1.0', ruleset='6.1.0')


# The run-configuration keys 6.1.0 requires exactly once (mlperf-logging 4.1.68).
DISCLOSURE = [('lowest_numerical_precision_in_linear', 'bfloat16'),
              ('lowest_numerical_precision_in_attn', 'fp8'),
              ('lowest_numerical_precision_in_comm', 'bfloat16'),
              ('tensor_parallelism', 1), ('pipeline_parallelism', 1), ('context_parallelism', 1),
              ('expert_parallelism', 1), ('micro_batch_size', 1), ('config_filename', 'cfg.yaml')]


def disclosed(log):
    m = log.copy()
    for key, v in reversed(DISCLOSURE):
        insert_after(m, 'global_batch_size', key, v)
    return m


def disclosure_cases(llama):
    """Each 6.1.0 disclosure key missing, zero or empty in an otherwise compliant log."""
    base = dlrmv4_log(llama)  # passes, so each case below fails on its own change only
    for key, _ in DISCLOSURE:
        m = base.copy()
        m.delete(m.find(key))
        llama.add(f'disclosed_without_{key}_under_6.1.0', m, f'6.1.0 disclosure without {key}', base,
                  ruleset='6.1.0')
    for key, v in [('micro_batch_size', 0), ('tensor_parallelism', 1.0), ('config_filename', ''),
                   ('lowest_numerical_precision_in_comm', 'mxfp6')]:
        m = base.copy()
        m.set_value(m.first(key), v)
        llama.add(f'disclosed_{key}_{tag(v)}_under_6.1.0', m, f'6.1.0 disclosure with {key} = {v!r}', base,
                  ruleset='6.1.0')


def dlrmv4_log(llama):
    """A closed dlrmv4 log: the llama log retargeted, with every closed_dlrmv4 key and its eval grid."""
    m = disclosed(llama.log)
    m.set_value(m.first('submission_benchmark'), 'dlrmv4')
    m.delete(m.find('opt_base_learning_rate'))  # logged before the batch size there
    m.set_value(m.first('opt_gradient_clip_norm'), 1.0)
    gbs = 8192  # eval every 280 batches, first at block 25
    m.set_value(m.first('global_batch_size'), gbs)
    m.set_value(m.first('train_samples'), 2290835423)
    m.set_value(m.first('eval_samples'), 2058204)
    lr = 1e-6 * gbs / 8192
    for key, v in reversed([('max_sequence_length', 4096), ('opt_name', 'Adam'), ('opt_base_learning_rate', lr),
                            ('opt_adam_beta_1', 0.95), ('opt_adam_beta_2', 0.999), ('opt_adam_epsilon', 1e-8),
                            ('opt_weight_decay', 0.0), ('opt_sparse_name', 'RowWiseAdagrad'),
                            ('opt_sparse_base_learning_rate', lr), ('opt_learning_rate_warmup_steps', 24000),
                            ('opt_learning_rate_warmup_start_lr', 0.0), ('eval_every_data_pct', 0.001)]):
        insert_after(m, 'global_batch_size', key, v)
    interval = 280 * gbs
    evals = m.find('eval_accuracy')
    for n, i in enumerate(evals):
        rec = m.record(i)
        rec['metadata']['samples_count'] = (25 + n) * interval
        rec['value'] = 0.7 + 0.02 * n
        m.put(i, rec)
    return m


def dlrmv4_cases(llama):
    """The dlrmv4 rules added in 6.1.0: learning-rate band, eval grid, first eval, target."""
    base = dlrmv4_log(llama)
    llama.add('dlrmv4_closed_under_6.1.0', base, 'a closed dlrmv4 log at global batch 8192', ruleset='6.1.0')
    for key, v in [('opt_base_learning_rate', 1.6e-6), ('opt_base_learning_rate', 4.9e-7),
                   ('opt_sparse_base_learning_rate', 1.1e-6), ('global_batch_size', 8192.0),
                   ('global_batch_size', 16384), ('opt_sparse_name', 'Adagrad'), ('train_samples', 1)]:
        m = base.copy()
        m.set_value(m.first(key), v)
        llama.add(f'dlrmv4_{key}_{tag(v)}_under_6.1.0', m, f'dlrmv4 with {key} = {v!r}', base, ruleset='6.1.0')
    evals = base.find('eval_accuracy')
    for what, i, field, v in [('first_eval_early', evals[0], 'samples_count', 24 * 2293760),
                              ('eval_off_grid', evals[1], 'samples_count', 26 * 2293760 + 8192),
                              ('no_samples_count', evals[2], None, None)]:
        m = base.copy()
        if field:
            m.set_meta(i, field, v)
        else:
            m.del_meta(i, 'samples_count')
        llama.add(f'dlrmv4_{what}_under_6.1.0', m, f'dlrmv4 with {what}', base, ruleset='6.1.0')
    m = base.copy()
    for i in evals:
        m.set_value(i, 0.74)
    llama.add('dlrmv4_target_missed_under_6.1.0', m, 'dlrmv4 never reaching 0.75', base, ruleset='6.1.0')
    m = base.copy()
    m.move(m.first('opt_base_learning_rate'), m.first('global_batch_size'))
    llama.add('dlrmv4_lr_before_batch_under_6.1.0', m, 'learning rate logged before the batch size', base,
              ruleset='6.1.0')
    m = base.copy()
    m.set_value(m.first('submission_division'), 'open')
    llama.add('dlrmv4_open_under_6.1.0', m, 'the dlrmv4 log in the open division', base, ruleset='6.1.0')


def flux1_interval_cases(llama):
    """6.1.0 flux1: evaluation_frequency is 262,144 samples rounded up to whole global batches."""
    base = disclosed(llama.log)
    base.set_value(base.first('submission_benchmark'), 'flux1')
    for gbs, freq in [(512, 262144), (1000, 263000), (1000, 262144), (0, 0)]:
        m = base.copy()
        m.set_value(m.first('global_batch_size'), gbs)
        insert_after(m, 'global_batch_size', 'evaluation_frequency', freq)
        llama.add(f'flux1_gbs_{gbs}_frequency_{freq}_under_6.1.0', m,
                  f'flux1 at global batch {gbs} evaluating every {freq} samples', ruleset='6.1.0')
