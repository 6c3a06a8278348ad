"""Compares our log parser with the official one on every corpus log and on
mutated copies of one: the same lines kept (by MLLOG index), the same key
counts, the same lines rejected as parse errors, and a crash exactly where the
official parser raises.

usage: check_parser.py OUR_PARSE_STATS_BINARY CORPUS_DIR
"""
import collections
import glob
import json
import os
import subprocess
import sys
import tempfile

from mlperf_logging.compliance_checker.mlp_parser import parse_file

TOKEN = ":::MLLOG "


def official_stats(path):
    try:
        lines, errors = parse_file(path, ruleset="6.1.0")
    except Exception:  # the official tool stops here with a traceback
        return {"crash": True}
    kept = [l.lineno for l in lines]
    return {"crash": False, "kept": kept, "n_skipped": len(errors),
            "keys": dict(collections.Counter(l.key for l in lines))}


def mutations(source, out_dir):
    """Writes mutated copies of one log; returns their paths."""
    with open(source, "rb") as f:
        lines = f.read().split(b"\n")
    mllog = [i for i, l in enumerate(lines) if TOKEN.encode() in l]
    first, mid, last = mllog[0], mllog[len(mllog) // 2], mllog[-1]

    def replace(i, old, new):
        return lambda ls: ls[:i] + [ls[i].replace(old, new, 1)] + ls[i + 1:]

    cases = {
        "truncated_last_line": lambda ls: ls[:last] + [ls[last][: len(ls[last]) // 2]],
        "broken_json": replace(mid, b'"key"', b'"key" "'),
        "missing_metadata": replace(mid, b'"metadata"', b'"metadata_"'),
        "missing_time": replace(first, b'"time_ms"', b'"time"'),
        "time_as_text": replace(mid, b'"time_ms": ', b'"time_ms": "1.2.3", "x": '),
        "time_as_numeric_text": replace(mid, b'"time_ms": ', b'"time_ms": " 1_5 ", "x": '),
        "time_null": replace(mid, b'"time_ms": ', b'"time_ms": null, "x": '),
        "nan_value": replace(mid, b'"value": ', b'"value": NaN, "x": '),
        "big_int_value": replace(mid, b'"value": ', b'"value": 123456789012345678901234567890, "x": '),
        "latin1_bytes": replace(mid, b'"value": ', b'"value": "caf\xe9 \xff", "x": '),
        "leading_garbage": replace(mid, b":::MLLOG ", b"[1,0]<stdout>: :::MLLOG "),
        "two_tokens": replace(mid, b":::MLLOG ", b":::MLLOG junk :::MLLOG "),
        "crlf": lambda ls: [l + b"\r" for l in ls],
        "cr_only": lambda ls: [b"\r".join(ls)],
        "token_only": lambda ls: ls[:mid] + [b":::MLLOG   "] + ls[mid:],
        "not_object": lambda ls: ls[:mid] + [b":::MLLOG [1, 2]"] + ls[mid:],
        "trailing_data": replace(mid, b"}}", b"}} x"),
        "duplicate_field": replace(mid, b'"key": ', b'"key": "other", "key": '),
        "empty": lambda ls: [],
        "no_mllog": lambda ls: [b"hello", b"world"],
        "control_char": replace(mid, b'"value": ', b'"value": "a\x01b", "x": '),
    }
    paths = []
    for name, mutate in cases.items():
        path = os.path.join(out_dir, f"{name}.txt")
        with open(path, "wb") as f:
            f.write(b"\n".join(mutate(list(lines))))
        paths.append(path)
    return paths


def main():
    binary, corpus = sys.argv[1:3]
    logs = sorted(glob.glob(os.path.join(corpus, "**", "result_*.txt"), recursive=True))
    if not logs:
        print(f"check_parser: no result logs under {corpus}")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        files = logs + mutations(logs[0], tmp)
        out = subprocess.run([binary, *files], capture_output=True, text=True, check=True)
        ours = {d["path"]: d for d in map(json.loads, out.stdout.splitlines())}
        passed = failed = 0
        for path in files:
            theirs, mine = official_stats(path), ours[path]
            if theirs["crash"]:
                same = mine["crash"]
            else:
                same = (not mine["crash"] and mine["kept"] == theirs["kept"]
                        and len(mine["skipped"]) == theirs["n_skipped"]
                        and mine["keys"] == theirs["keys"])
            if same:
                passed += 1
            else:
                failed += 1
                print(f"DIFFERENT {os.path.basename(path)}: official {theirs}\n  ours {mine}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
