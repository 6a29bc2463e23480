"""Screenshots of every page of the built site in headless Chromium, and what a reader meets there.

    mkdocs build --strict --site-dir site
    python scripts/screenshots.py site shots/            # every page
    python scripts/screenshots.py site shots/ --pages guide/sweeps/ index.html --full

Needs Debian's ``chromium`` (``apt-get install chromium``; not a CI dependency) and tornado (a
dependency of the ``docs`` extra's Jupyter stack) to speak the DevTools protocol. The site is
served from a local HTTP server on 127.0.0.1; the browser runs with the network features off
and a fresh profile, at a 1280 x 800 window (one "screen" is 800 px of page height).

Writes, under the output folder:

- ``<page>.png``: the first screen of each page (``--full``: the whole page, as well);
- ``pages.json``: per page, the height in screens, what the first screen shows (headings,
  figures, tables, code blocks and the start of the text), the code blocks and tables wider than
  the column, the figures drawn smaller than 60% of their natural width, and the measured
  column (its width in px and in characters of the code font);
- ``pages.md``: the same as a table, one row per page.

The HTML check scripts/check_site.py estimates the same widths from the built HTML, without a
browser; this script is what its character capacity was measured with.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import functools
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

WIDTH, SCREEN = 1280, 800

#: Chromium without anything that talks to the network by itself.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--mute-audio", f"--window-size={WIDTH},{SCREEN}"]

#: Measures one page in the browser: everything pages.json reports.
MEASURE = r"""
(() => {
  const content = document.querySelector('.md-content article') || document.body;
  const top = (el) => el.getBoundingClientRect().top + window.scrollY;
  // NOTE: the content of a closed <details> counts as hidden (Chromium may still give it a box).
  const visible = (el) => el.offsetParent !== null && el.getClientRects().length > 0 &&
      !(el.closest('details:not([open])') && !el.closest('summary'));
  const first = [];
  for (const el of content.querySelectorAll('h1, h2, h3, p, pre, table, img, svg, details, ul, ol')) {
    if (!visible(el) || top(el) >= 800 || el.closest('li') && el.tagName !== 'UL') continue;
    if (el.parentElement.closest('table, pre, p, details:not([open])')) continue;
    const tag = el.tagName.toLowerCase();
    let what = tag;
    if (/^h[1-3]$/.test(tag)) what = tag + ' "' + el.textContent.replace('¶', '').trim().slice(0, 60) + '"';
    else if (tag === 'img') what = 'figure "' + (el.getAttribute('alt') || '').slice(0, 50) + '"';
    else if (tag === 'pre') what = 'code (' + el.textContent.split('\n').filter(Boolean).length + ' lines)';
    else if (tag === 'table') what = 'table (' + el.rows.length + ' rows)';
    else if (tag === 'details') what = 'folded "' + (el.querySelector('summary') || el).textContent.trim().slice(0, 40) + '"';
    else if (tag === 'p') what = 'text "' + el.textContent.trim().slice(0, 50) + '"';
    else if (tag === 'ul' || tag === 'ol') what = 'list (' + el.children.length + ' items)';
    first.push(what);
  }
  // The code font's character width and the column's capacity in characters.
  const probe = document.createElement('pre');
  probe.className = 'highlight';
  probe.innerHTML = '<code>' + 'x'.repeat(100) + '</code>';
  probe.style.visibility = 'hidden';
  (content.querySelector('.md-typeset') || content).appendChild(probe);
  const code = probe.querySelector('code');
  const charPx = code.scrollWidth / 100;
  const cs = getComputedStyle(code);
  const inner = code.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
  probe.remove();
  // Wider than the column: the element (or the box Material scrolls it in) scrolls sideways.
  const columnPx = (content.querySelector('.md-typeset') || content).clientWidth;
  const wide = (sel) => [...content.querySelectorAll(sel)].filter(visible)
      .map((el) => [el, el.closest('.md-typeset__scrollwrap') || el])
      .filter(([el, box]) => box.scrollWidth > box.clientWidth + 1 || el.scrollWidth > columnPx + 1)
      .map(([el, box]) => ({px: Math.max(el.scrollWidth, box.scrollWidth), column: columnPx,
                            text: el.textContent.trim().split('\n')[0].slice(0, 60)}));
  const small = [...content.querySelectorAll('img')].filter(visible)
      .filter((im) => im.naturalWidth > 0 && im.width < 0.6 * im.naturalWidth &&
                      !(im.getAttribute('src') || '').endsWith('.svg'))
      .map((im) => ({src: im.getAttribute('src'), shown: im.width, drawn: im.naturalWidth}));
  const height = document.documentElement.scrollHeight;
  // Tables inside folds, measured with every fold open: each against the box it is shown in.
  for (const d of content.querySelectorAll('details')) d.open = true;
  const folded = [...content.querySelectorAll('details table')]
      .map((el) => [el, el.closest('.md-typeset__scrollwrap') || el.parentElement])
      .map(([el, box]) => ({px: el.scrollWidth, box: box.clientWidth,
                            text: el.textContent.trim().split('\n')[0].slice(0, 60)}));
  return {
    height: height,
    title: document.title,
    first_screen: first,
    column_px: Math.round(inner), code_char_px: +charPx.toFixed(2),
    column_chars: Math.floor(inner / charPx),
    wide_code: wide('pre > code'), wide_tables: wide('article table'),
    folded_tables: folded, wide_folded_tables: folded.filter((t) => t.px > t.box + 1),
    small_figures: small,
  };
})()
"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(site: Path) -> tuple[http.server.ThreadingHTTPServer, int]:
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


def pages(site: Path, only: list[str] | None) -> list[str]:
    found = sorted(p.relative_to(site).as_posix() for p in site.rglob("index.html"))
    found = [p for p in found if not p.startswith(("assets/", "search/"))]
    if only:
        want = ["index.html" if o.strip("/") in ("", "home") else o.strip("/") for o in only]
        found = [p for p in found if any(p == w or p == f"{w}/index.html" or p.startswith(w + "/index")
                                         for w in want)]
    return found


class Browser:
    """One headless Chromium, driven over the DevTools protocol (tornado's websocket client)."""

    def __init__(self, binary: str):
        self.profile = tempfile.mkdtemp(prefix="rheo-shots-")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen([binary, *FLAGS, f"--user-data-dir={self.profile}",
                                      f"--remote-debugging-port={self.port}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/version", timeout=1)
                break
            except OSError:
                time.sleep(0.2)
        else:
            raise RuntimeError("chromium did not open its DevTools port")
        self._id = 0

    async def open(self):
        from tornado.websocket import websocket_connect

        tabs = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{self.port}/json/list").read())
        url = next(t["webSocketDebuggerUrl"] for t in tabs if t.get("type") == "page")
        self.ws = await websocket_connect(url, max_message_size=1 << 30)
        await self.call("Page.enable")
        await self.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=SCREEN,
                        deviceScaleFactor=1, mobile=False)

    async def call(self, method, **params):
        self._id += 1
        my = self._id
        await self.ws.write_message(json.dumps({"id": my, "method": method, "params": params}))
        while True:
            msg = json.loads(await self.ws.read_message())
            if msg.get("id") == my:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    async def goto(self, url):
        await self.call("Page.navigate", url=url)
        for _ in range(200):  # until the document and its images have loaded
            state = await self.evaluate("document.readyState === 'complete' && "
                                        "[...document.images].every(i => i.complete)")
            if state:
                break
            await asyncio.sleep(0.1)
        await asyncio.sleep(0.2)

    async def evaluate(self, expr):
        out = await self.call("Runtime.evaluate", expression=expr, returnByValue=True)
        return out.get("result", {}).get("value")

    async def shot(self, path: Path, height: int | None = None):
        clip = {"x": 0, "y": 0, "width": WIDTH, "height": height or SCREEN, "scale": 1}
        out = await self.call("Page.captureScreenshot", format="png", clip=clip,
                              captureBeyondViewport=height is not None)
        path.write_bytes(base64.b64decode(out["data"]))

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


async def run(site: Path, out: Path, only, full: bool, binary: str) -> list[dict]:
    server, port = serve(site)
    browser = Browser(binary)
    rows = []
    try:
        await browser.open()
        for page in pages(site, only):
            url = f"http://127.0.0.1:{port}/{page[:-len('index.html')]}"
            await browser.goto(url)
            info = await browser.evaluate(MEASURE)
            name = page[:-len("/index.html")] if page != "index.html" else "home"
            stem = name.replace("/", "_")
            await browser.shot(out / f"{stem}.png")
            if full:
                await browser.shot(out / f"{stem}-full.png", height=min(info["height"], 16000))
            info.update(page=name, screens=round(info["height"] / SCREEN, 1))
            rows.append(info)
            print(f"{name:45s} {info['screens']:6.1f} screens  wide code {len(info['wide_code']):3d}  "
                  f"wide tables {len(info['wide_tables']):3d}  small figures {len(info['small_figures'])}",
                  flush=True)
    finally:
        browser.close()
        server.shutdown()
    return rows


def table(rows: list[dict]) -> str:
    lines = ["| page | screens | wide code | wide tables | small figures | first screen |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        first = "; ".join(r["first_screen"][:8]).replace("|", "/")
        lines.append(f"| {r['page']} | {r['screens']} | {len(r['wide_code'])} | {len(r['wide_tables'])} | "
                     f"{len(r['small_figures'])} | {first} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("site", type=Path, help="the built site (mkdocs build --site-dir SITE)")
    parser.add_argument("out", type=Path, help="folder for the screenshots and pages.json / pages.md")
    parser.add_argument("--pages", nargs="+", help="only these pages (site paths, e.g. guide/sweeps)")
    parser.add_argument("--full", action="store_true", help="also a whole-page screenshot (up to 16000 px)")
    parser.add_argument("--chromium", default=os.environ.get("CHROMIUM", "chromium"), help="browser binary")
    args = parser.parse_args(argv)
    if not (args.site / "index.html").is_file():
        print(f"screenshots.py: {args.site} is not a built site (no index.html)", file=sys.stderr)
        return 2
    if not shutil.which(args.chromium):
        print(f"screenshots.py: no {args.chromium} on PATH (apt-get install chromium)", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    rows = asyncio.run(run(args.site, args.out, args.pages, args.full, args.chromium))
    (args.out / "pages.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    (args.out / "pages.md").write_text(table(rows), encoding="utf-8")
    if rows:
        r = rows[0]
        print(f"column: {r['column_px']} px, {r['column_chars']} characters of {r['code_char_px']} px")
    print(f"{len(rows)} pages -> {args.out}/pages.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
