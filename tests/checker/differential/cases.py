"""Bookkeeping shared by the mutation modules: the case list and value helpers."""
from logedit import record_line


class Cases:
    """Collects (name, ruleset, text) cases; refuses duplicate names and no-op mutations."""

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


class Rep:
    """One representative corpus log; its mutations are named <group>/<mutation>.

    `full` reps get every mutation; the others skip what only exercises
    common.yaml logic that the full rep of the same ruleset already covers.
    """

    def __init__(self, cases, group, log, ruleset, source, full, rng):
        self.cases, self.group, self.log, self.ruleset = cases, group, log, ruleset
        self.source, self.full, self.rng = source, full, rng

    def add(self, name, log_or_text, what, base=None, ruleset=None):
        self.cases.add(f'{self.group}/{name}', ruleset or self.ruleset, log_or_text, self.source, what,
                       self.log if base is None else base)


class Raw(str):
    """JSON text written verbatim as a value, for number spellings json.dumps never emits."""


def tag(v):
    """A short file-name-safe tag for a value; the type is part of it (0 vs 0.0 vs false)."""
    if isinstance(v, Raw):
        v, kind = str(v), 'raw'
    elif v is None:
        return 'null'
    elif v == '' and isinstance(v, str):
        return 'empty'
    else:
        kind = type(v).__name__
    s = ''.join(ch if ch.isalnum() else '_' for ch in str(v).encode('ascii', 'replace').decode())
    if len(s) > 30:  # big ints: keep file names short but distinct
        s = f'{s[:12]}_len{len(s)}'
    return s if kind == 'str' else f'{kind}_{s}'


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
    if isinstance(v, list):
        return v + [1]
    return {**v, 'x': 1}


def set_value(log, i, v):
    if isinstance(v, Raw):
        log.set_value(i, '@RAW@')
        log.lines[i] = log.lines[i].replace('"@RAW@"', v)
    else:
        log.set_value(i, v)


def value_cases(rep, key, values, base=None, prefix=''):
    """One case per value: the first `key` record of base (default the rep's log) set to it."""
    base = base or rep.log
    i = base.first(key)
    for v in values:
        m = base.copy()
        set_value(m, i, v)
        shown = repr(v) if len(repr(v)) <= 60 else f'{repr(v)[:20]}... ({len(repr(v))} chars)'
        rep.add(f'{prefix}{key}_{tag(v)}', m, f'{prefix}{key} = {shown}', base)


def insert_after(log, anchor_key, key, value):
    """Inserts a `key` record right after the first `anchor_key` record (same time and metadata)."""
    i = log.first(anchor_key)
    rec = log.record(i)
    rec.update(key=key, value=value)
    log.insert(i + 1, record_line(rec))
