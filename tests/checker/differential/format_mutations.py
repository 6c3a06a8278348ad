"""Parser and file-format quirks (spec section 3): garbage around records,
broken JSON, missing fields, odd time_ms values, bytes that are not UTF-8."""
import math

from logedit import TOKEN, record_line


def _per_line(m, fn):
    m.lines[:] = [fn(line) for line in m.lines]


def format_mutations(rep):
    log, rng = rep.log, rep.rng
    records = [i for i in range(len(log.lines)) if log.record(i) is not None]
    seed = log.first('seed')
    div = log.first('submission_division')
    stop = log.first('init_stop')

    def edited(name, what, fn):
        m = log.copy()
        fn(m)
        rep.add(name, m, what)

    rep.add('empty_file', '', 'an empty file')
    rep.add('no_mllog_lines', ''.join(l.replace(TOKEN, 'LOG ') for l in log.lines), 'no line has the token')
    rep.add('only_newlines', '\n\n\n', 'three empty lines')
    edited('leading_garbage_all', 'every line prefixed with an mpirun tag',
           lambda m: _per_line(m, lambda l: '[1,0]<stdout>:' + l))
    edited('leading_garbage_double_token', 'every line prefixed with a timestamp and a stray :::MLLOG',
           lambda m: _per_line(m, lambda l: f'2023-05-06 12:00:00 {TOKEN}x {l}'))
    edited('token_in_string_value', "submission_platform value contains ':::MLLOG '",
           lambda m: m.set_value(m.first('submission_platform'), 'a :::MLLOG b'))
    run_stop = log.first('run_stop')
    edited('token_without_space_run_stop', "run_stop written as ':::MLLOG{' (not a record)",
           lambda m: m.lines.__setitem__(run_stop, m.lines[run_stop].replace(TOKEN, ':::MLLOG')))
    edited('extra_spaces_after_token', 'three spaces between :::MLLOG and the JSON',
           lambda m: _per_line(m, lambda l: l.replace(TOKEN, TOKEN + '  ')))
    edited('whitespace_after_json', 'a tab and spaces after every line',
           lambda m: _per_line(m, lambda l: l.rstrip('\n') + '\t  \n'))
    edited('crlf', 'CRLF line endings', lambda m: _per_line(m, lambda l: l.rstrip('\n') + '\r\n'))
    edited('no_final_newline', 'the last newline removed',
           lambda m: m.lines.__setitem__(-1, m.lines[-1].rstrip('\n')))
    edited('utf8_bom', 'a UTF-8 byte order mark before the first line',
           lambda m: m.lines.__setitem__(0, '\xef\xbb\xbf' + m.lines[0]))
    edited('blank_and_noise_lines', 'blank lines and non-MLLOG noise at random places',
           lambda m: [m.insert(rng.randrange(len(m.lines)), rng.choice(['\n', 'noise line\n', 'MLLOG x\n']))
                      for _ in range(20)])
    edited('truncated_last_line', 'the last record cut in the middle, no newline',
           lambda m: m.lines.__setitem__(-1, m.lines[-1][:len(m.lines[-1]) // 2]))
    edited('broken_json_appended', 'a broken JSON record appended',
           lambda m: m.lines.append(f'{TOKEN}{{"namespace": "", "time_ms": 1, "key": \n'))
    broken = rng.choice(records[len(records) // 4:])
    edited('broken_json_middle', 'one record in the middle has its closing brace removed',
           lambda m: m.lines.__setitem__(broken, m.lines[broken].rstrip().rstrip('}') + '\n'))
    edited('json_array_record', 'a record that is a JSON array', lambda m: m.insert(seed, f'{TOKEN}[1, 2]\n'))
    edited('non_utf8_byte_in_platform', 'a raw 0xFF byte inside the submission_platform string',
           lambda m: m.set_value(m.first('submission_platform'), 'DGX\xff H100'))
    edited('non_utf8_byte_in_division', 'a raw 0xE9 byte appended to the division value',
           lambda m: m.set_value(div, 'closed\xe9'))
    edited('utf8_multibyte_in_org', 'UTF-8 bytes of a non-ASCII name in submission_org',
           lambda m: m.set_value(m.first('submission_org'), 'NVIDIA \xc3\xbc'))
    org = log.first('submission_org')
    edited('escaped_unicode_in_org', 'a \\u00c4 escape in submission_org',
           lambda m: m.lines.__setitem__(org, m.lines[org].replace('"NVIDIA"', '"NVIDI\\u00c4"')))
    edited('escaped_division', 'submission_division value spelled with \\u escapes',
           lambda m: m.lines.__setitem__(div, m.lines[div].replace('"closed"', '"\\u0063losed"')))
    edited('duplicate_json_field_open_first', 'division record with "value": "open" before the real value',
           lambda m: m.lines.__setitem__(div, m.lines[div].replace('"value":', '"value": "open", "value":', 1)))
    edited('duplicate_json_field_open_last', 'division record with "value": "open" after the real value',
           lambda m: m.lines.__setitem__(div, m.lines[div].replace('"metadata":', '"value": "open", "metadata":', 1)))
    for field in ['metadata', 'time_ms', 'value', 'key']:
        edited(f'seed_missing_{field}', f'the seed record lacks {field}',
               lambda m, f=field: m.put(seed, {k: v for k, v in m.record(seed).items() if k != f}))
    ts = log.record(seed)['time_ms']
    for name, v in [('string', str(ts)), ('string_bad', 'abc'), ('null', None), ('float', ts + 0.5),
                    ('true', True), ('string_inf', 'inf'), ('list', [ts])]:
        edited(f'seed_time_ms_{name}', f'seed record time_ms = {v!r}', lambda m, v=v: m.edit(seed, time_ms=v))
    edited('init_stop_time_ms_string', 'init_stop time_ms as a decimal string',
           lambda m: m.edit(stop, time_ms=str(m.record(stop)['time_ms'])))
    edited('init_stop_time_ms_exponent', 'init_stop time_ms as 1.xe12',
           lambda m: m.edit(stop, time_ms=float(m.record(stop)['time_ms'])))
    edited('init_stop_time_ms_infinity', 'init_stop time_ms Infinity', lambda m: m.edit(stop, time_ms=math.inf))
    edited('seed_metadata_null', 'seed record metadata null', lambda m: m.edit(seed, metadata=None))
    first_eval = log.first('eval_accuracy')
    edited('eval_metadata_null', 'first eval_accuracy metadata null', lambda m: m.edit(first_eval, metadata=None))
    edited('eval_metadata_list', 'first eval_accuracy metadata a list',
           lambda m: m.edit(first_eval, metadata=['epoch_num']))
    edited('key_not_string', 'seed record key is a number', lambda m: m.edit(seed, key=7))
    edited('unknown_key_added', 'an unknown key before the seed record',
           lambda m: m.insert(seed, record_line(dict(m.record(seed), key='my_custom_key'))))
