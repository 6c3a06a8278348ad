"""Python-semantics quirks a C++ port can easily get wrong (spec 3, 4.4, 5.7):
what Python's text-mode file iteration, str.strip, json.loads and float()
accept, and how Python's == treats 1/1.0/True, NaN and big integers."""
from logedit import TOKEN, record_line


def set_raw(log, i, field, text, meta=False):
    """Writes JSON text verbatim as the value of `field` (or of metadata[field])."""
    rec = log.record(i)
    (rec['metadata'] if meta else rec)[field] = '@RAW@'
    log.put(i, rec)
    log.lines[i] = log.lines[i].replace('"@RAW@"', text)


def parser_quirks(rep):
    """File reading and JSON parsing; the log's rules do not matter here."""
    log = rep.log
    seed = log.first('seed')

    def edited(name, what, fn):
        m = log.copy()
        fn(m)
        rep.add(name, m, what)

    def raw_seed(name, field, text):
        edited(name, f'seed record {field} written as {text[:40]}', lambda m: set_raw(m, seed, field, text))

    # Text mode splits lines on \n, \r and \r\n; str.strip() also removes \x85, \xa0, \x1c-\x1f.
    edited('cr_only_line_endings', 'lines end in a lone CR', lambda m: m.lines.__setitem__(
        slice(None), [l.replace('\n', '\r') for l in m.lines]))
    edited('cr_inside_record', 'a raw CR between two JSON fields of the seed record',
           lambda m: m.lines.__setitem__(seed, m.lines[seed].replace(', "key"', ',\r "key"', 1)))
    edited('cr_before_token', 'a raw CR in the garbage before the token of every line',
           lambda m: m.lines.__setitem__(slice(None), ['[1,0]<stdout>\r' + l for l in m.lines]))
    edited('formfeed_inside_record', 'a form feed between two JSON fields of the seed record',
           lambda m: m.lines.__setitem__(seed, m.lines[seed].replace(', "key"', ',\x0c "key"', 1)))
    edited('nbsp_after_every_record', 'a 0xA0 byte after the JSON of every record',
           lambda m: m.lines.__setitem__(slice(None), [l.rstrip('\n') + '\xa0\n' for l in m.lines]))
    edited('unicode_spaces_after_every_record', 'bytes 0x85 0x1c 0x1f after the JSON of every record',
           lambda m: m.lines.__setitem__(slice(None), [l.rstrip('\n') + '\x85\x1c\x1f\n' for l in m.lines]))
    edited('nul_after_seed_record', 'a NUL byte after the JSON of the seed record',
           lambda m: m.lines.__setitem__(seed, m.lines[seed].rstrip('\n') + '\x00\n'))
    edited('extra_data_after_seed_record', 'a second JSON object after the seed record',
           lambda m: m.lines.__setitem__(seed, m.lines[seed].rstrip('\n') + ' {}\n'))
    edited('nbsp_after_token', 'a 0xA0 byte between the token and the JSON of the seed record',
           lambda m: m.lines.__setitem__(seed, m.lines[seed].replace(TOKEN, TOKEN + '\xa0', 1)))
    edited('tab_after_token', 'a tab between the token and the JSON of every record',
           lambda m: m.lines.__setitem__(slice(None), [l.replace(TOKEN, TOKEN + '\t', 1) for l in m.lines]))
    edited('token_only_line', "a line that is just ':::MLLOG '", lambda m: m.insert(seed, TOKEN + '\n'))
    for name, text in [('null', 'null'), ('string', '"x"'), ('number', '7')]:
        edited(f'record_is_{name}', f'a record that is the JSON {text}',
               lambda m, t=text: m.insert(seed, f'{TOKEN}{t}\n'))
    # JSON number and literal spellings on a value no rule reads.
    for name, text in [('leading_zero', '0123'), ('plus', '+1'), ('bare_fraction', '.5'), ('bare_point', '1.'),
                       ('bad_exponent', '1e'), ('hex', '0x10'), ('minus_zero', '-0'), ('exp_plus', '1E+2'),
                       ('overflow_exponent', '1e999'), ('nan_lower', 'nan'), ('python_true', 'True'),
                       ('python_none', 'None'), ('single_quotes', "'x'"), ('bad_escape', '"\\x41"'),
                       ('lone_surrogate', '"\\ud800"'), ('raw_tab_in_string', '"a\tb"'),
                       ('raw_del_in_string', '"a\x7fb"'), ('trailing_comma', '[1, 2,]'),
                       ('deeply_nested', '[' * 100000 + ']' * 100000)]:
        raw_seed(f'seed_value_{name}', 'value', text)
    # float(time_ms): strings Python's float() accepts, and an int too big for a double.
    for name, text in [('underscores', '"1_683_388_854_158"'), ('padded', '" 1683388854158 "'),
                       ('arabic_digits', '"\\u0661\\u0662\\u0663"'), ('fullwidth_digits', '"\\uff11\\uff12"'),
                       ('unicode_space_padded', '"\\u2003123\\u00a0"'),
                       ('infinity_word', '"Infinity"'), ('nan_word', '"nan"'), ('string_1e400', '"1e400"'),
                       ('hex_string', '"0x1F"'), ('empty_string', '""'), ('comma', '"1,000"'),
                       ('huge_int', '1' + '0' * 400), ('object', '{}')]:
        raw_seed(f'seed_time_ms_{name}', 'time_ms', text)
    stop = log.first('init_stop')
    edited('init_stop_time_ms_underscores', 'init_stop time_ms with digit-group underscores',
           lambda m: set_raw(m, stop, 'time_ms', '"{:_}"'.format(m.record(stop)['time_ms'])))
    # Times are doubles: 1799999.75 ms is under the limit, truncated integer ms would not be.
    first = log.first('init_start')
    edited('init_fractional_ms_under_30min', 'init_start at T + 0.75 ms, init_stop at T + 30 min + 0.5 ms',
           lambda m: (m.edit(first, time_ms=m.record(first)['time_ms'] + 0.75),
                      m.edit(stop, time_ms=m.record(first)['time_ms'] - 0.75 + 1800000.5)))
    edited('init_stop_before_first_init_start_in_time', 'init_stop time_ms 1 h before the first init_start',
           lambda m: m.edit(stop, time_ms=m.record(log.first('init_start'))['time_ms'] - 3600 * 1000))
    for name, key in [('null', None), ('list', ['run_stop']), ('object', {'k': 1})]:
        edited(f'key_is_{name}', f'an extra record whose key is {key!r}',
               lambda m, k=key: m.insert(seed, record_line(dict(m.record(seed), key=k))))


def semantic_quirks(rep, presence_key=None):
    """Metadata that is a string ('x' in 'xy' is a substring test); with an EXACTLY_ONE
    key that has no CHECK, duplicates whose values Python's == does or does not call equal."""
    log = rep.log
    evals = log.find('eval_accuracy')
    field = 'samples_count' if 'samples_count' in log.record(evals[0])['metadata'] else 'epoch_num'
    m = log.copy()
    for i in evals:
        m.edit(i, metadata=field)
    rep.add('eval_metadata_is_field_name_string', m, f'every eval_accuracy metadata is the string {field!r}')
    m = log.copy()
    m.edit(evals[0], metadata=7)
    rep.add('eval_metadata_is_number', m, 'first eval_accuracy metadata is the number 7')
    m = log.copy()
    m.edit(m.first('run_stop'), metadata='status')
    rep.add('run_stop_metadata_is_string', m, "run_stop metadata is the string 'status'")
    if presence_key is None:
        return
    # EX1 repeated with values Python's == calls equal (a warning) or not (an error).
    i = log.first(presence_key)
    for name, first, second in [('int_float', '1', '1.0'), ('int_true', '1', 'true'), ('zero_false', '0', 'false'),
                                ('zero_minus_zero', '0.0', '-0.0'), ('nan_nan', 'NaN', 'NaN'),
                                ('inf_overflow', 'Infinity', '1e999'), ('list_int_float', '[1, 2]', '[1.0, 2]'),
                                ('dict_int_float', '{"a": 1}', '{"a": 1.0}'), ('string_int', '"1"', '1'),
                                ('null_null', 'null', 'null'), ('big_ints', '1' + '0' * 30, '1' + '0' * 30),
                                ('big_int_vs_double', '9007199254740993', '9007199254740992.0'),
                                ('big_int_pair', '9007199254740993', '9007199254740992')]:
        m = log.copy()
        set_raw(m, i, 'value', first)
        m.insert(i + 1, m.lines[i])
        set_raw(m, i + 1, 'value', second)
        rep.add(f'dup_{presence_key}_{name}', m, f'{presence_key} logged as {first} and then {second}')
