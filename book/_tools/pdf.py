"""`make pdf`: print handouts of the built site with the local Chromium, offline.

Each chapter becomes ``_build/pdf/<slug>.pdf`` and the whole book ``_build/pdf/book.pdf`` (the
pages in table-of-contents order, merged). The pages are printed by Playwright's ``page.pdf`` from
the site in ``_build/html``, served on 127.0.0.1 with every other request refused, after MathJax has
typeset them, with the site's print stylesheet (``book/_vendor/gtlib.css``: no navigation, figures
and code kept whole). Exercise solutions stay folded, so the handouts are the student's version.
Nothing is downloaded: the browser is Debian's Chromium (or ``GTLIB_CHROMIUM``).

Usage: ``python book/_tools/pdf.py [--site _build/html] [--out _build/pdf]``
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import threading
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
A4 = {
    "format": "A4",
    "margin": {"top": "16mm", "bottom": "16mm", "left": "14mm", "right": "14mm"},
}


def book_pages() -> list[str]:
    """The site's pages in table-of-contents order, as paths relative to the site."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]] + [
        c["file"] for part in toc.get("parts", []) for c in part.get("chapters", [])
    ]
    return [f"{f}.html" for f in files]


def chapters() -> list[str]:
    return [
        p for p in book_pages() if (ROOT / p.replace(".html", ".ipynb")).exists()
    ]


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def chromium() -> str:
    path = os.environ.get("GTLIB_CHROMIUM") or "/usr/bin/chromium"
    if not Path(path).exists():
        raise SystemExit(
            f"no Chromium at {path}: apt-get install chromium, or set GTLIB_CHROMIUM"
        )
    return path


def print_pages(site: Path, out: Path, pages: list[str] | None = None) -> list[Path]:
    """Print ``pages`` (default: every page of the book) to ``out``; returns the PDFs, in order."""
    from playwright.sync_api import sync_playwright

    pages = pages or book_pages()
    missing = [p for p in pages if not (site / p).exists()]
    if missing:
        raise SystemExit(f"not built: {missing} (run `make book` first)")
    out.mkdir(parents=True, exist_ok=True)
    handler = functools.partial(_Quiet, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    written = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=chromium(), args=["--no-sandbox"]
            )
            ctx = browser.new_context(viewport={"width": 1100, "height": 1400})
            page = ctx.new_page()
            page.route(
                "**/*",
                lambda r: (
                    r.continue_()
                    if r.request.url.startswith((base, "data:", "blob:", "about:"))
                    else r.abort()
                ),
            )
            for rel in pages:
                page.goto(f"{base}/{rel}", wait_until="load")
                page.wait_for_load_state("networkidle", timeout=90000)
                page.wait_for_function(
                    "() => !window.MathJax || !MathJax.startup || !MathJax.startup.promise"
                    " || MathJax.startup.promise.then(() => true)",
                    timeout=60000,
                )
                # lazy figures below the fold would print as blanks: load every one first
                page.evaluate("""async () => {
                  const imgs = Array.from(document.images);
                  imgs.forEach(i => { i.loading = 'eager'; });
                  await Promise.all(imgs.map(i => i.complete ? null
                                    : new Promise(r => { i.onload = r; i.onerror = r; })));
                }""")
                page.emulate_media(media="print")
                target = out / (Path(rel).stem + ".pdf")
                page.pdf(path=str(target), print_background=True, **A4)
                written.append(target)
            browser.close()
    finally:
        httpd.shutdown()
    return written


def merge(parts: list[Path], target: Path) -> Path:
    from pypdf import PdfWriter

    writer = PdfWriter()
    for part in parts:
        writer.append(str(part))
    with open(target, "wb") as fh:
        writer.write(fh)
    return target


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--site", type=Path, default=ROOT / "_build" / "html")
    ap.add_argument("--out", type=Path, default=ROOT / "_build" / "pdf")
    args = ap.parse_args(argv)
    parts = print_pages(args.site, args.out)
    book = merge(parts, args.out / "book.pdf")
    for p in parts + [book]:
        print(
            f"{p.relative_to(ROOT) if p.is_relative_to(ROOT) else p}: {p.stat().st_size // 1024} KB"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
