#!/usr/bin/env python3
"""compliance_check --html in a real browser.

Checks the corpus packages with --json and --html, opens the page in headless
Chromium with JavaScript disabled (over the DevTools protocol on a pipe, so
nothing but Debian's chromium is needed), and asserts that:
  * the page is self-contained: no script, no external URL, no @import;
  * the rendered page (a PNG screenshot) is not blank;
  * the overall, package and benchmark verdicts and every score read from the
    rendered DOM equal what --json says for the same input.
Exit 0 pass, 1 fail, 77 skip (no Chromium; scripts/install_deps.sh --test installs it).
--screenshot FILE keeps the screenshot (docs/images/compliance_report.png comes from it).
"""

import argparse
import html.parser
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from headless_chromium import find_chromium, looks_blank, render  # noqa: E402


class PageData(html.parser.HTMLParser):
    """Verdicts and scores as the rendered page shows them."""

    def __init__(self):
        super().__init__()
        self.overall = None
        self.rows = []  # (org, system or None, benchmark or None, verdict, score)
        self._row = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id") == "overall":
            self.overall = a.get("data-verdict")
        if tag == "tr" and "data-org" in a:
            self._row = {"org": a["data-org"], "system": a.get("data-system"),
                         "benchmark": a.get("data-benchmark"), "verdict": None, "score": None}
        if self._row is not None and tag == "td":
            if "data-verdict" in a:
                self._row["verdict"] = a["data-verdict"]
            if "data-score" in a:
                self._row["score"] = a["data-score"]

    def handle_endtag(self, tag):
        if tag == "tr" and self._row is not None:
            self.rows.append(self._row)
            self._row = None


def self_contained_problems(page):
    problems = []
    if re.search(r"<script", page, re.I):
        problems.append("a <script> element")
    if re.search(r"\son\w+\s*=", page, re.I):
        problems.append("an inline event handler")
    if re.search(r"@import", page, re.I):
        problems.append("a CSS @import")
    for attr in re.findall(r"(?:src|href)\s*=\s*\"([^\"]*)\"", page, re.I):
        if not attr.startswith("#"):
            problems.append(f"an external reference {attr!r}")
    for url in re.findall(r"url\(([^)]*)\)", page):
        if not url.startswith("#"):
            problems.append(f"a CSS url({url})")
    return problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True, help="compliance_check")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--screenshot", help="keep the screenshot here")
    args = ap.parse_args()

    chromium = find_chromium()
    if not chromium:
        print("SKIP: Chromium is not installed (scripts/install_deps.sh --test installs "
              "Debian's chromium)")
        return 77
    packages = [os.path.join(args.corpus, v, "NVIDIA") for v in ("v3.0", "v5.0")]
    packages = [p for p in packages if os.path.isdir(p)]
    claims = os.path.join(args.corpus, "official_time_to_train.csv")
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        page_path = os.path.join(tmp, "report.html")
        cmd = [args.bin, "--json", "--html", page_path] + (
            ["--claims", claims] if os.path.exists(claims) else []) + packages
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if run.returncode not in (0, 1):
            print(f"FAIL: compliance_check exited {run.returncode}: {run.stderr.strip()}")
            return 1
        expected = json.loads(run.stdout)
        with open(page_path, encoding="utf-8") as f:
            page = f.read()
        failures += [f"page is not self-contained: {p}" for p in self_contained_problems(page)]

        dom, png, probe = render(chromium, page_path)
        if args.screenshot:
            with open(args.screenshot, "wb") as f:
                f.write(png)

    # JavaScript really was off: the probe page's script did not run.
    if 'id="js-ran"' in probe or "<body" not in probe:
        failures.append("JavaScript was not disabled in the browser")

    blank, colours, inked, sampled = looks_blank(png)
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    if blank:
        failures.append(f"the screenshot looks blank ({colours} colours, "
                        f"{inked}/{sampled} sampled pixels not white)")

    data = PageData()
    data.feed(dom)
    if data.overall != expected["verdict"]:
        failures.append(f"overall verdict: page {data.overall}, --json {expected['verdict']}")
    want = []
    for p in expected["packages"]:
        want.append({"org": p["organization"], "system": None, "benchmark": None,
                     "verdict": p["verdict"], "score": None})
        for b in p["benchmarks"]:
            score = b["score_minutes"]
            want.append({"org": p["organization"], "system": b["system"],
                         "benchmark": b["benchmark"], "verdict": b["verdict"],
                         "score": "" if score is None else repr(float(score))})
    if data.rows != want:
        failures.append(f"verdict table differs from --json:\n  page:   {data.rows}\n  --json: {want}")
    if len(want) < 3:
        failures.append("the corpus gave fewer than three rows to compare")

    for f in failures:
        print("FAIL:", f)
    if not failures:
        print(f"PASS: {len(want)} verdict rows and {sum(1 for w in want if w['score'])} scores "
              f"agree with --json; {colours} colours in a {width}x{height} screenshot")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
