"""Line-level editing of MLLOG result logs, for building mutated test fixtures.

Logs are read and written as latin-1 so that every byte survives a round trip
(the official parser also reads latin-1). Untouched lines keep their exact
bytes; only edited records are re-serialised.
"""
import copy
import json

TOKEN = ':::MLLOG '


def dumps(obj):
    # Same separators as the mllog emitter; raw non-ASCII stays raw, NaN and
    # Infinity are written as the bare literals Python's json accepts.
    return json.dumps(obj, ensure_ascii=False)


def record_line(obj, prefix=''):
    return f'{prefix}{TOKEN}{dumps(obj)}\n'


class Log:
    """A result log as a list of lines (with their line endings)."""

    def __init__(self, text):
        self.lines = text.splitlines(keepends=True)

    @classmethod
    def read(cls, path):
        with open(path, encoding='latin-1', newline='') as f:
            return cls(f.read())

    def copy(self):
        return copy.deepcopy(self)

    def text(self):
        return ''.join(self.lines)

    def record(self, i):
        """The JSON object of line i, or None if it is not a parseable MLLOG line."""
        line = self.lines[i]
        pos = line.rfind(TOKEN)
        if pos < 0:
            return None
        try:
            obj = json.loads(line[pos + len(TOKEN):])
        except ValueError:
            return None
        return obj if isinstance(obj, dict) else None

    def find(self, key):
        """Indices of the records whose key is `key`, in file order."""
        out = []
        for i in range(len(self.lines)):
            if TOKEN in self.lines[i]:
                rec = self.record(i)
                if rec is not None and rec.get('key') == key:
                    out.append(i)
        return out

    def first(self, key):
        found = self.find(key)
        if not found:
            raise KeyError(f'no {key!r} record')
        return found[0]

    def keys(self):
        """Distinct record keys with their occurrence counts, in first-seen order."""
        counts = {}
        for i in range(len(self.lines)):
            rec = self.record(i)
            if rec is not None and 'key' in rec:
                counts[rec['key']] = counts.get(rec['key'], 0) + 1
        return counts

    def put(self, i, obj):
        ending = '\r\n' if self.lines[i].endswith('\r\n') else '\n'
        self.lines[i] = record_line(obj).rstrip('\n') + ending

    def edit(self, i, **fields):
        rec = self.record(i)
        rec.update(fields)
        self.put(i, rec)

    def set_value(self, i, value):
        self.edit(i, value=value)

    def set_meta(self, i, name, value):
        rec = self.record(i)
        rec['metadata'][name] = value
        self.put(i, rec)

    def del_meta(self, i, name):
        rec = self.record(i)
        del rec['metadata'][name]
        self.put(i, rec)

    def delete(self, indices):
        for i in sorted(set(indices), reverse=True):
            del self.lines[i]

    def insert(self, i, line):
        self.lines.insert(i, line)

    def move(self, src, dst):
        """Moves line src so that it ends up right before the line now at dst."""
        line = self.lines[src]
        del self.lines[src]
        self.lines.insert(dst - 1 if dst > src else dst, line)
