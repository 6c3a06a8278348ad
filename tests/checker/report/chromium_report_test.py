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
import base64
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zlib

CHROMIUM_NAMES = ["/usr/lib/chromium/chromium", "chromium", "chromium-browser",
                  "google-chrome"]


def find_chromium():
    for name in CHROMIUM_NAMES:
        path = name if os.path.isabs(name) else shutil.which(name)
        if path and os.access(path, os.X_OK):
            return path
    return None


class DevTools:
    """The DevTools protocol over --remote-debugging-pipe (fd 3 in, fd 4 out)."""

    def __init__(self, chromium, profile, width, height):
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def wire_fds():
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--remote-debugging-pipe", "--no-first-run", "--user-data-dir=" + profile,
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=wire_fds, pass_fds=(3, 4))
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next_id = 0
        self.events = []

    def _read_message(self):
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_chrome, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method, session=None, **params):
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read_message()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method):
        for i, e in enumerate(self.events):
            if e.get("method") == method:
                return self.events.pop(i)
        while True:
            e = self._read_message()
            if e.get("method") == method:
                return e
            self.events.append(e)

    def close(self):
        try:
            self.send("Browser.close")
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


PROBE = "<!DOCTYPE html><html><body><script>document.body.id = 'js-ran';</script></body></html>"


def render(chromium, page_path, width=1200, height=1400):
    """(DOM of the page, PNG bytes, DOM of a page whose script marks its body),
    all rendered with JavaScript disabled."""
    probe_path = os.path.join(os.path.dirname(page_path), "probe.html")
    with open(probe_path, "w") as f:
        f.write(PROBE)
    with tempfile.TemporaryDirectory() as profile:
        dt = DevTools(chromium, profile, width, height)
        try:
            target = dt.send("Target.createTarget", url="about:blank")["targetId"]
            session = dt.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
            dt.send("Emulation.setScriptExecutionDisabled", session, value=True)
            dt.send("Emulation.setDeviceMetricsOverride", session, width=width, height=height,
                    deviceScaleFactor=1, mobile=False)
            dt.send("Page.enable", session)

            def load(path):
                dt.send("Page.navigate", session, url="file://" + os.path.abspath(path))
                dt.wait_event("Page.loadEventFired")
                root = dt.send("DOM.getDocument", session, depth=-1)["root"]["nodeId"]
                return dt.send("DOM.getOuterHTML", session, nodeId=root)["outerHTML"]

            probe = load(probe_path)
            dom = load(page_path)
            png = base64.b64decode(dt.send("Page.captureScreenshot", session, format="png")["data"])
        finally:
            dt.close()
    return dom, png, probe


def png_pixels(png):
    """(width, height, rows of RGB(A) bytes) of an 8-bit non-interlaced PNG."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(png):
        length = int.from_bytes(png[pos:pos + 4], "big")
        kind, data = png[pos + 4:pos + 8], png[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = data
        elif kind == b"IDAT":
            idat += data
    width, height = int.from_bytes(header[0:4], "big"), int.from_bytes(header[4:8], "big")
    depth, colour, interlace = header[8], header[9], header[12]
    assert depth == 8 and colour in (2, 6) and interlace == 0, "unexpected PNG format"
    bpp = 3 if colour == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


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

    width, height, bpp, rows = png_pixels(png)
    colours, inked = set(), 0
    for row in rows[::4]:
        for x in range(0, width * bpp, bpp * 4):
            px = row[x:x + 3]
            colours.add(px)
            inked += px != b"\xff\xff\xff"
    sampled = len(rows[::4]) * len(range(0, width * bpp, bpp * 4))
    if len(colours) < 8 or inked < sampled * 0.02:
        failures.append(f"the screenshot looks blank ({len(colours)} colours, "
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
              f"agree with --json; {len(colours)} colours in a {width}x{height} screenshot")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
