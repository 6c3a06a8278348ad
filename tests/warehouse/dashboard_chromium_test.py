#!/usr/bin/env python3
"""results_db dashboard in a real browser.

Ingests the corpus packages, writes the dashboard, and opens every page in
headless Chromium with JavaScript disabled, asserting that:
  * each page is self-contained: no script, no URL but the dashboard's own pages;
  * each rendered page (a PNG screenshot) is not blank;
  * the index lists every benchmark stored, each linking to its page;
  * each benchmark page draws both charts with a point per best result, and its
    table of fastest results, read from the rendered DOM, equals
    `results_db query best --benchmark B --format json` cell for cell.
Exit 0 pass, 1 fail, 77 skip (no Chromium, or no corpus package).
--screenshot FILE keeps one benchmark page's screenshot (docs/images/).
"""

import argparse
import html.parser
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
sys.path.insert(0, os.path.join(HERE, "..", "checker", "report"))
from headless_chromium import find_chromium, looks_blank, render  # noqa: E402
from chromium_report_test import self_contained_problems  # noqa: E402


class Tables(html.parser.HTMLParser):
    """Every table's rows as {data-col: text}, links, and the SVG circles per chart."""

    def __init__(self):
        super().__init__()
        self.tables, self.links, self.circles = {}, [], {}
        self._table = self._row = self._col = self._svg = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self._table = self.tables.setdefault(a.get("id"), [])
        elif tag == "tr" and self._table is not None:
            self._row = {}
        elif tag == "td" and self._row is not None:
            self._col = a.get("data-col")
            self._row[self._col] = ""
        elif tag == "a":
            self.links.append(a.get("href"))
        elif tag == "svg":
            self._svg = len(self.circles)
            self.circles[self._svg] = 0
        elif tag == "circle" and self._svg is not None:
            self.circles[self._svg] += 1

    def handle_endtag(self, tag):
        if tag == "td":
            self._col = None
        elif tag == "tr" and self._row is not None:
            if self._row:
                self._table.append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None
        elif tag == "svg":
            self._svg = None

    def handle_data(self, data):
        if self._row is not None and self._col is not None:
            self._row[self._col] += data


def text(v):
    if v is None:
        return ""
    return repr(v) if isinstance(v, float) else str(v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="results_db")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--screenshot")
    args = ap.parse_args()
    chromium = find_chromium()
    if not chromium:
        print("SKIP: Chromium is not installed (scripts/install_deps.sh --test installs it)")
        return 77
    corpus = pathlib.Path(args.corpus)
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        for rel in ("v3.0/NVIDIA", "v5.0/NVIDIA"):
            if (corpus / rel / "systems").is_dir():
                shutil.copytree(corpus / rel, tmp / "results" / rel)
        if not (tmp / "results").is_dir():
            print("SKIP: no whole package in the corpus")
            return 77
        db = str(tmp / "w.db")
        run = lambda *a: subprocess.run([args.bin, "--db", db, *a], capture_output=True, text=True,
                                        timeout=300)
        p = run("ingest", str(tmp / "results"))
        if p.returncode != 0:
            print(f"FAIL: ingest exited {p.returncode}: {p.stderr}")
            return 1
        out = tmp / "dash"
        p = run("dashboard", "--out", str(out))
        if p.returncode != 0:
            print(f"FAIL: dashboard exited {p.returncode}: {p.stderr}")
            return 1
        benchmarks = sorted(r["benchmark"] for r in json.loads(
            run("sql", "SELECT DISTINCT benchmark FROM results", "--format", "json").stdout))
        pages = sorted(f.name for f in out.iterdir() if f.suffix == ".html")
        if pages != sorted(["index.html"] + [b + ".html" for b in benchmarks]):
            failures.append(f"pages {pages} for benchmarks {benchmarks}")
        compared = 0
        for name in pages:
            path = out / name
            page = path.read_text(encoding="utf-8")
            for problem in self_contained_problems(page):
                m = re.match(r"an external reference '([^'/]+\.html)'", problem)
                if not (m and m.group(1) in pages):
                    failures.append(f"{name}: not self-contained: {problem}")
            dom, png, probe = render(chromium, str(path))
            if 'id="js-ran"' in probe:
                failures.append("JavaScript was not disabled in the browser")
            # The index is one small table: little ink is right there.
            blank, colours, inked, sampled = looks_blank(
                png, min_inked=0.003 if name == "index.html" else 0.02)
            if blank:
                failures.append(f"{name}: the screenshot looks blank ({colours} colours)")
            if args.screenshot and name == "bert.html":
                pathlib.Path(args.screenshot).write_bytes(png)
            t = Tables()
            t.feed(dom)
            if name == "index.html":
                listed = sorted(r.get("benchmark", "") for r in t.tables.get("benchmarks", []))
                if listed != benchmarks:
                    failures.append(f"index lists {listed}, stored {benchmarks}")
                if sorted(l for l in t.links if l) != sorted(b + ".html" for b in benchmarks):
                    failures.append(f"index links {t.links}")
                continue
            benchmark = name[:-len(".html")]
            want = json.loads(run("query", "best", "--benchmark", benchmark, "--format", "json").stdout)
            got = t.tables.get("best", [])
            want_text = [{k: text(v) for k, v in row.items()} for row in want]
            if got != want_text:
                failures.append(f"{name}: best table {got} differs from the query's {want_text}")
            compared += len(want)
            charts = list(t.circles.values())
            if len(charts) != 2 or charts[0] < len(want) or charts[1] < 1:
                failures.append(f"{name}: chart points {charts} for {len(want)} best results")
    for f in failures:
        print("FAIL:", f)
    if not failures:
        print(f"PASS: {len(pages)} pages, {compared} best results agree with the query")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
