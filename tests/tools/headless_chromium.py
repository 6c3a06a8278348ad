"""Headless Chromium for tests: rendering a local page or SVG file to a PNG
with JavaScript disabled, over the DevTools protocol on a pipe (nothing but
Debian's chromium is needed), and reading the PNG back without Pillow.
"""

import base64
import json
import os
import shutil
import subprocess
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


def looks_blank(png, min_colours=8, min_inked=0.02):
    """(blank?, colours, inked, sampled): fewer than min_colours distinct
    colours or less than min_inked of the sampled pixels not white."""
    width, height, bpp, rows = png_pixels(png)
    colours, inked = set(), 0
    for row in rows[::4]:
        for x in range(0, width * bpp, bpp * 4):
            px = row[x:x + 3]
            colours.add(px)
            inked += px != b"\xff\xff\xff"
    sampled = len(rows[::4]) * len(range(0, width * bpp, bpp * 4))
    return len(colours) < min_colours or inked < sampled * min_inked, len(colours), inked, sampled
