"""Read the built site the way a reader does: in a real browser, with the network unplugged.

Debian's chromium, driven by Playwright (no browser download). Every page must load with no
console error and no failed request, and must request nothing outside the site itself; math must
be typeset by the vendored MathJax; notebook pages must carry their Colab link and figures; saved
widget state must render; the reproduction report must list every chapter's claims.
"""
import json
import os
import re
from pathlib import Path

import pytest

from .conftest import ROOT, pages

playwright = pytest.importorskip("playwright.sync_api")
# The browser: GTLIB_CHROMIUM, else Debian's chromium, else a preinstalled Google Chrome.
CHROMIUM = next((p for p in (os.environ.get("GTLIB_CHROMIUM"), "/usr/bin/chromium",
                             "/usr/bin/google-chrome") if p and Path(p).exists()),
                "/usr/bin/chromium")
NOTEBOOKS = sorted(p.stem for p in (ROOT / "book").glob("*.ipynb"))


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is required: apt-get install chromium")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        yield b
        b.close()


def visit(browser, server, rel: str, screenshot: Path | None = None) -> dict:
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    page = ctx.new_page()
    errors, failed, external = [], [], []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("requestfailed", lambda r: failed.append(r.url))

    def route(r):
        url = r.request.url
        if url.startswith(server) or url.startswith(("data:", "blob:", "about:")):
            r.continue_()
        else:  # the network is "unplugged": anything outside the site is refused and recorded
            external.append(url)
            r.abort()

    page.route("**/*", route)
    page.goto(f"{server}/{rel}", wait_until="load")
    page.wait_for_load_state("networkidle")
    # MathJax typesets asynchronously: wait for it when the page loads it
    page.wait_for_function("() => !window.MathJax || !MathJax.startup || !MathJax.startup.promise"
                           " || MathJax.startup.promise.then(() => true)", timeout=30000)
    page.wait_for_timeout(300)
    info = page.evaluate("""() => ({
        mathjax: document.querySelectorAll('mjx-container').length,
        text: document.querySelector('main') ? document.querySelector('main').innerText : '',
        colab: Array.from(document.querySelectorAll('a')).map(a => a.href)
                    .filter(h => h.includes('colab.research.google.com')),
        images: Array.from(document.querySelectorAll('main img')).filter(i => i.naturalWidth > 0).length,
        brokenImages: Array.from(document.querySelectorAll('main img')).filter(i => i.complete && i.naturalWidth === 0).map(i => i.src),
        widgetViews: document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length,
        widgetsRendered: document.querySelectorAll('.widget-slider, .jupyter-widgets.widget-slider, .widget-hslider, .jupyter-widgets').length,
        claimsRows: document.querySelectorAll('table.gtlib-claims tbody tr').length,
    })""")
    if screenshot is not None:
        page.screenshot(path=str(screenshot), full_page=False)
    ctx.close()
    return {**info, "errors": errors, "failed": failed, "external": external}


ALL = [str(p.relative_to(ROOT / "_build" / "html")) for p in pages()] if (ROOT / "_build" / "html").exists() else []


@pytest.mark.parametrize("rel", ALL)
def test_page_loads_cleanly_offline(browser, server, rel):
    r = visit(browser, server, rel)
    assert r["errors"] == [], f"console errors on {rel}: {r['errors']}"
    assert r["external"] == [], f"{rel} requests outside the site: {r['external']}"
    assert r["failed"] == [], f"failed requests on {rel}: {r['failed']}"
    assert r["brokenImages"] == [], f"broken images on {rel}: {r['brokenImages']}"
    # no raw TeX left behind: inline or display delimiters that MathJax should have consumed
    raw = re.findall(r"\\\(|\\\[|\$\$", r["text"])
    assert not raw, f"untypeset math on {rel}: {raw[:5]}"


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_page(browser, server, site, name):
    rel = f"book/{name}.html"
    assert (site / rel).exists(), f"{rel} was not built (is {name}.ipynb in _toc.yml?)"
    shot = ROOT / "_build" / "screenshots" / f"{name}.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    r = visit(browser, server, rel, screenshot=shot)
    assert r["colab"], f"{rel} has no Colab launch link"
    assert all(f"/blob/main/book/{name}.ipynb" in h for h in r["colab"]), r["colab"]
    assert r["mathjax"] > 0, f"no typeset math on {rel}"
    assert r["images"] > 0, f"no figures on {rel}"
    assert r["claimsRows"] > 0, f"no claims table on {rel}"
    assert r["widgetViews"] > 0, f"no saved widget on {rel}"
    assert r["widgetsRendered"] > 0, f"widgets on {rel} were not rendered"
    assert shot.exists() and shot.stat().st_size > 10_000


def test_reproduction_report_lists_every_claim(browser, server, site):
    r = visit(browser, server, "book/reproduction-report.html",
              screenshot=ROOT / "_build" / "screenshots" / "reproduction-report.png")
    results = [json.loads(p.read_text()) for p in (ROOT / "_build" / "results").glob("*.json")]
    ids = [c["id"] for res in results for c in res["claims"]]
    assert {res["chapter"] for res in results} >= set(NOTEBOOKS)
    assert r["claimsRows"] == len(ids)
    for claim_id in ids:
        assert claim_id in r["text"], f"{claim_id} missing from the report"
