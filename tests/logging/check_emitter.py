"""Compares our emitter with the official one (mlperf_logging.mllog) byte by
byte: both write every case of emitter_cases.json; the outputs must match.

usage: check_emitter.py OUR_EMIT_CASES_BINARY CASES.json
"""
import io
import json
import logging
import subprocess
import sys
from unittest import mock

from mlperf_logging import mllog


def official_lines(cases):
    out = io.StringIO()
    logger = logging.getLogger("check_emitter")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logger.addHandler(logging.StreamHandler(out))
    mllogger = mllog.mllog.MLLogger(logger=logger)
    emit = {"start": mllogger.start, "end": mllogger.end, "event": mllogger.event}
    for case in cases:
        caller = {"file": case["file"], "lineno": case["lineno"]}
        with mock.patch.object(mllog.mllog, "get_caller", return_value=caller):
            emit[case["type"]](key=case["key"], value=case["value"],
                               metadata=case.get("metadata"),
                               namespace=case.get("namespace"),
                               time_ms=case["time_ms"],
                               clear_line=case.get("clear_line", False))
    # The official emitter also logs a warning, after an empty line, when
    # metadata overrides file/lineno; it is no MLLOG line, so it is dropped.
    lines = []
    for line in out.getvalue().split("\n"):
        if line.startswith("Metadata fields"):
            lines.pop()
        else:
            lines.append(line)
    return lines


def main():
    binary, cases_path = sys.argv[1:3]
    with open(cases_path, encoding="utf-8") as f:
        cases = json.load(f)
    ours = subprocess.run([binary, cases_path], capture_output=True, check=True).stdout
    ours_lines = ours.decode("ascii").split("\n")
    theirs = official_lines(cases)
    failed = 0
    for i in range(max(len(ours_lines), len(theirs))):
        a = ours_lines[i] if i < len(ours_lines) else "<missing>"
        b = theirs[i] if i < len(theirs) else "<missing>"
        if a != b:
            failed += 1
            print(f"line {i}:\n  ours:     {a}\n  official: {b}")
    passed = len(theirs) - failed
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
