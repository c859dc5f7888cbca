"""The lecture slides (`make slides`): one deck per chapter, made from the built chapter, offline.

Each deck opens from a local server with every other request refused, without console errors, has
the title, objectives, question, equation, experiment and exercise slides, typesets its
mathematics, and shows the chapter's figures and this build's claims.
"""

import functools
import http.server
import json
import os
import sys
import threading
from pathlib import Path

import pytest

from .conftest import ROOT, SITE

sys.path.insert(0, str(ROOT / "book" / "_tools"))
import slides  # noqa: E402

BUILD = SITE.parent
RESULTS = Path(os.environ.get("GTLIB_RESULTS_DIR") or ROOT / "_build" / "results")
CHROMIUM = os.environ.get("GTLIB_CHROMIUM") or "/usr/bin/chromium"
SLUGS = sorted(p.stem for p in (ROOT / "book").glob("*.ipynb"))


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def decks(site, tmp_path_factory):
    out = tmp_path_factory.mktemp("slides")
    slides.build(BUILD, out)
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(out))
    )
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.mark.parametrize("slug", SLUGS)
def test_deck_opens_offline_with_its_slides(decks, slug):
    from playwright.sync_api import sync_playwright

    errors, external = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.on(
            "console", lambda m: errors.append(m.text) if m.type == "error" else None
        )
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.route(
            "**/*",
            lambda r: (
                r.continue_()
                if r.request.url.startswith((decks, "data:", "blob:", "about:"))
                else (external.append(r.request.url), r.abort())
            ),
        )
        page.goto(f"{decks}/{slug}.html", wait_until="load")
        page.wait_for_function(
            "() => window.Reveal && Reveal.isReady()", timeout=30000
        )
        page.wait_for_function(
            "() => !window.MathJax || !MathJax.startup || "
            "MathJax.startup.promise.then(() => true)",
            timeout=60000,
        )
        r = page.evaluate("""() => ({
            total: Reveal.getTotalSlides(),
            heads: Array.from(document.querySelectorAll('.slides h3')).map(h => h.textContent.trim()),
            math: document.querySelectorAll('mjx-container').length,
            images: Array.from(document.querySelectorAll('.slides img')).filter(i => i.naturalWidth > 0).length,
            text: document.querySelector('.slides').textContent})""")
        browser.close()
    assert not errors, errors
    assert not external, external
    assert r["total"] >= 5, r["heads"]
    assert "Learning objectives" in r["heads"] and "Exercises" in r["heads"], r[
        "heads"
    ]
    assert any(h.startswith("Experiment") for h in r["heads"]), r["heads"]
    assert r["math"] > 0, f"{slug}: no typeset mathematics"
    assert r["images"] > 0, f"{slug}: no figure"
    res = RESULTS / f"{slug}.json"
    if res.exists():
        effects = [
            c for c in json.loads(res.read_text())["claims"] if c["kind"] == "effect"
        ]
        assert any(c["statement"] in r["text"] for c in effects), (
            f"{slug}: no claim shown"
        )
