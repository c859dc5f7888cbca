"""Read the built site the way a reader does: in a real browser, with the network unplugged.

Debian's chromium, driven by Playwright (no browser download). Every page must load with no
console error and no failed request, and must request nothing outside the site itself; math must
be typeset by the vendored MathJax; notebook pages must carry their Colab link, figures and a
working interactive control; the reproduction report must list every chapter's claims.

Pages a student can read on any screen (issue 21), at 1366 px (a laptop) and 390 px (a phone):
nothing wider than the viewport, no code or output block that scrolls sideways (and on the laptop
no line of code, output or listing that wraps), wide tables and
equations only inside their own scroll box, no object dumps (``Name(field=...``), no Markdown
table left as text, alt text on every figure, static sliders that change the figure, chapter
pages of at most 4 MB, and no critical or serious axe-core violation (WCAG 2 A and AA).
Screenshots of every page at both widths go to ``_build/screenshots``.
"""

import json
import os
import re
from pathlib import Path

import pytest

from .conftest import ROOT, SITE, pages

playwright = pytest.importorskip("playwright.sync_api")
# The browser: GTLIB_CHROMIUM, else Debian's chromium, else a preinstalled Google Chrome.
CHROMIUM = next(
    (
        p
        for p in (
            os.environ.get("GTLIB_CHROMIUM"),
            "/usr/bin/chromium",
            "/usr/bin/google-chrome",
        )
        if p and Path(p).exists()
    ),
    "/usr/bin/chromium",
)
NOTEBOOKS = sorted(p.stem for p in (ROOT / "book").glob("*.ipynb"))
AXE = (
    ROOT / "tests" / "site" / "vendor" / "axe.min.js"
)  # `make vendor` copies it from npm
WIDTHS = (1366, 390)
MAX_CHAPTER_BYTES = 4_000_000
SHOTS = ROOT / "_build" / "screenshots"
RESULTS = Path(os.environ.get("GTLIB_RESULTS_DIR") or ROOT / "_build" / "results")


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is required: apt-get install chromium")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield b
        b.close()


def open_page(browser, server, rel: str, width: int = 1280):
    """Open ``rel`` offline at ``width`` px; returns (context, page, log of the load)."""
    ctx = browser.new_context(viewport={"width": width, "height": 900})
    page = ctx.new_page()
    log = {"errors": [], "failed": [], "external": []}
    page.on(
        "console",
        lambda m: log["errors"].append(m.text) if m.type == "error" else None,
    )
    page.on("pageerror", lambda e: log["errors"].append(str(e)))
    page.on("requestfailed", lambda r: log["failed"].append(r.url))
    # a 404 (the favicon was one) is a response, not a failed request
    page.on(
        "response",
        lambda r: (
            log["failed"].append(f"{r.status} {r.url}") if r.status >= 400 else None
        ),
    )

    def route(r):
        url = r.request.url
        if url.startswith(server) or url.startswith(("data:", "blob:", "about:")):
            r.continue_()
        else:  # the network is "unplugged": anything outside the site is refused and recorded
            log["external"].append(url)
            r.abort()

    page.route("**/*", route)
    page.goto(f"{server}/{rel}", wait_until="load")
    page.wait_for_load_state(
        "networkidle", timeout=90000
    )  # a loaded CI machine is slow
    # MathJax typesets asynchronously: wait for it when the page loads it
    page.wait_for_function(
        "() => !window.MathJax || !MathJax.startup || !MathJax.startup.promise"
        " || MathJax.startup.promise.then(() => true)",
        timeout=30000,
    )
    page.wait_for_timeout(300)
    # the page weight: every byte the page loaded (decoded), once fonts and MathJax are in
    log["bytes"] = page.evaluate("""async () => {
        await document.fonts.ready;
        const nav = performance.getEntriesByType('navigation')[0];
        return (nav ? nav.decodedBodySize : 0) + performance.getEntriesByType('resource')
            .reduce((s, r) => s + (r.decodedBodySize || 0), 0); }""")
    # figures below the fold are lazy: count which, then load them all for the checks on images
    log["lazy"] = page.evaluate(EAGER_IMAGES)
    return ctx, page, log


# Make every lazy image load now and wait for it; returns how many figures there are, how many
# were lazy, and the index of the first lazy one.
EAGER_IMAGES = """async () => {
  const imgs = Array.from(document.querySelectorAll('main img'));
  const figs = imgs.filter(i => i.getAttribute('src').includes('_images/'));
  const lazy = figs.map((i, k) => i.loading === 'lazy' ? k : -1).filter(k => k >= 0);
  imgs.forEach(i => { i.loading = 'eager'; });
  await Promise.all(imgs.map(i => i.complete ? null
                                : new Promise(r => { i.onload = r; i.onerror = r; })));
  return {count: figs.length, lazy: lazy.length, firstLazy: lazy.length ? lazy[0] : null};
}"""


def visit(browser, server, rel: str, screenshot: Path | None = None) -> dict:
    ctx, page, log = open_page(browser, server, rel)
    info = page.evaluate("""() => ({
        mathjax: document.querySelectorAll('mjx-container').length,
        text: document.querySelector('main') ? document.querySelector('main').innerText : '',
        colab: Array.from(document.querySelectorAll('a:not(.gtlib-student-link a)')).map(a => a.href)
                    .filter(h => h.includes('colab.research.google.com')),
        studentColab: Array.from(document.querySelectorAll('.gtlib-student-link a')).map(a => a.href),
        images: Array.from(document.querySelectorAll('main img')).filter(i => i.naturalWidth > 0).length,
        brokenImages: Array.from(document.querySelectorAll('main img')).filter(i => i.complete && i.naturalWidth === 0).map(i => i.src),
        widgetViews: document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length,
        widgetsRendered: document.querySelectorAll('.widget-slider, .jupyter-widgets.widget-slider, .widget-hslider, .jupyter-widgets').length,
        sliders: document.querySelectorAll('.gtlib-slider input[type=range]').length,
        claimsRows: document.querySelectorAll('table.gtlib-claims tbody tr').length,
        mathNodes: document.querySelectorAll('.math, mjx-container').length,
        mathjaxLoaded: Array.from(document.scripts).some(s => /mathjax/i.test(s.src || '')),
    })""")
    if screenshot is not None:
        page.screenshot(path=str(screenshot), full_page=False)
    ctx.close()
    return {**info, **log}


ALL = [str(p.relative_to(SITE)) for p in pages()] if SITE.exists() else []
CHAPTERS = [f"book/{n}.html" for n in NOTEBOOKS]


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
    # MathJax (1.3 MB) only where there is mathematics
    assert r["mathNodes"] > 0 or not r["mathjaxLoaded"], (
        f"{rel} loads MathJax and has no math"
    )


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_page(browser, server, site, name):
    rel = f"book/{name}.html"
    assert (site / rel).exists(), (
        f"{rel} was not built (is {name}.ipynb in _toc.yml?)"
    )
    shot = SHOTS / f"{name}.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    r = visit(browser, server, rel, screenshot=shot)
    assert r["colab"], f"{rel} has no Colab launch link"
    assert all(f"/blob/main/book/{name}.ipynb" in h for h in r["colab"]), r["colab"]
    # the student edition (no solutions) one click away, opening this chapter's student notebook
    assert len(r["studentColab"]) == 1, r["studentColab"]
    assert f"/blob/student-notebooks/book/{name}.ipynb" in r["studentColab"][0], r[
        "studentColab"
    ]
    assert r["mathjax"] > 0, f"no typeset math on {rel}"
    assert r["images"] > 0, f"no figures on {rel}"
    assert r["claimsRows"] > 0, f"no claims table on {rel}"
    assert r["sliders"] > 0 or r["widgetViews"] > 0, (
        f"no interactive control on {rel}"
    )
    if r["widgetViews"]:  # a live widget kept on the page must at least render
        assert r["widgetsRendered"] > 0, f"widgets on {rel} were not rendered"
    assert shot.exists() and shot.stat().st_size > 10_000


def test_reproduction_report_lists_every_claim(browser, server, site):
    r = visit(
        browser,
        server,
        "book/reproduction-report.html",
        screenshot=SHOTS / "reproduction-report.png",
    )
    results = [json.loads(p.read_text()) for p in RESULTS.glob("*.json")]
    ids = [c["id"] for res in results for c in res["claims"]]
    assert {res["chapter"] for res in results} >= set(NOTEBOOKS)
    assert r["claimsRows"] == len(ids)
    for claim_id in ids:
        assert claim_id in r["text"], f"{claim_id} missing from the report"


# -- issue 21: readable on any screen ----------------------------------------------------------
LAYOUT_JS = r"""() => {
  const art = document.querySelector('article.bd-article') || document.querySelector('main');
  const vw = document.documentElement.clientWidth;
  const right = Math.min(vw, art.getBoundingClientRect().right) + 1;
  const where = e => {
    const s = e.closest('section[id]'); const c = e.closest('.cell');
    return (s ? '#' + s.id : '') + (c ? ' cell ' + Array.from(
      document.querySelectorAll('.cell')).indexOf(c) : '');
  };
  const scrolls = e => ['auto', 'scroll'].includes(getComputedStyle(e).overflowX);
  const inScrollBox = e => {  // an ancestor inside the article that scrolls and itself fits
    for (let a = e.parentElement; a && a !== art; a = a.parentElement) {
      if (scrolls(a)) return a.getBoundingClientRect().right <= right;
    }
    return false;
  };
  const out = {pageWidth: document.documentElement.scrollWidth, viewport: vw,
               scrollingCode: [], tooWide: [], dumps: [], pipeTables: [], badAlt: [],
               distorted: [], smallTargets: [], wrapped: []};
  // figures keep the shape of their file: drawn aspect ratio within 5% of the image's own
  for (const i of art.querySelectorAll('img')) {
    if (!i.naturalWidth || !i.clientWidth || !i.clientHeight) continue;
    const drawn = i.clientWidth / i.clientHeight, own = i.naturalWidth / i.naturalHeight;
    if (Math.abs(drawn / own - 1) > 0.05)
      out.distorted.push(where(i) + ': drawn ' + drawn.toFixed(2) + ', file ' + own.toFixed(2));
  }
  // sliders are at least 44 px tall: a finger can hit them
  for (const r of art.querySelectorAll('.gtlib-slider input[type=range]')) {
    const h = r.getBoundingClientRect().height;
    if (h < 44) out.smallTargets.push(where(r) + ': ' + Math.round(h) + ' px');
  }
  // code and output blocks: never scroll sideways (long lines wrap; code keeps to 88 chars)
  for (const pre of art.querySelectorAll('pre')) {
    if (pre.scrollWidth > pre.clientWidth + 1)
      out.scrollingCode.push(where(pre) + ': ' + pre.innerText.split('\n')[0].slice(0, 60));
  }
  // on a laptop no line of code, output or listing wraps: a block shows as many lines as it has
  // (counted as the distinct rows its text is drawn on; a phone wraps long lines instead)
  // (folded solutions are opened first, so that their code is measured too)
  if (vw >= 1000) art.querySelectorAll('details').forEach(d => { d.open = true; });
  if (vw >= 1000) for (const pre of art.querySelectorAll('pre')) {
    if (pre.closest('.gtlib-slider') || !pre.offsetParent || !pre.innerText.trim()) continue;
    const lines = pre.innerText.replace(/\n+$/, '').split('\n').filter(l => l.length > 0);
    const range = document.createRange(); range.selectNodeContents(pre);
    const tops = Array.from(range.getClientRects()).filter(r => r.width > 0)
      .map(r => r.top).sort((a, b) => a - b);
    const gap = 0.6 * parseFloat(getComputedStyle(pre).fontSize);
    let rows = 0, last = -Infinity;
    for (const t of tops) { if (t - last > gap) rows += 1; last = t; }
    if (rows > lines.length) {
      const longest = lines.reduce((a, b) => (b.length > a.length ? b : a), '');
      out.wrapped.push(where(pre) + ': ' + (rows - lines.length) + ' extra rows, longest line '
                       + longest.length + ' chars: ' + longest.trim().slice(0, 50));
    }
  }
  // blocks that may be wide: inside the column, or inside a scroll box that is
  const blocks = art.querySelectorAll('table, img, div.math, mjx-container[display="true"],'
    + ' .gtlib-slider, .cell_output, figure, .highlight, .admonition, .exercise, .solution');
  for (const b of blocks) {
    const r = b.getBoundingClientRect();
    if (r.width === 0 || r.right <= right) continue;
    if (scrolls(b) || inScrollBox(b)) continue;
    out.tooWide.push(where(b) + ' ' + b.tagName.toLowerCase() + '.' + b.className
                     + ' right edge ' + Math.round(r.right) + ' > ' + Math.round(right));
  }
  // object dumps: a dataclass-like repr in a text output
  const dump = /\b[A-Z][A-Za-z0-9_]*\([a-z_][a-z0-9_]*=/;
  for (const o of art.querySelectorAll('.cell_output pre, .output pre')) {
    const m = o.innerText.match(dump);
    if (m) out.dumps.push(where(o) + ': ' + o.innerText.slice(Math.max(0, m.index - 10), m.index + 60));
  }
  // Markdown tables left as text: a paragraph of pipes with a |---| rule
  for (const p of art.querySelectorAll('p')) {
    if (/\|\s*:?-{3,}:?\s*\|/.test(p.innerText)) out.pipeTables.push(where(p) + ': ' + p.innerText.slice(0, 60));
  }
  // alt text that says something: not missing, not a file path
  for (const i of art.querySelectorAll('img')) {
    const alt = (i.getAttribute('alt') || '').trim();
    if (!alt || /\.(png|jpe?g|svg|gif)$/i.test(alt) || (/\//.test(alt) && !/\s/.test(alt)))
      out.badAlt.push(where(i) + ': alt=' + JSON.stringify(alt.slice(0, 60)));
  }
  return out;
}"""


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("rel", ALL)
def test_readable_at_width(browser, server, rel, width):
    ctx, page, _ = open_page(browser, server, rel, width)
    r = page.evaluate(LAYOUT_JS)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(
        path=str(SHOTS / f"{rel.replace('/', '_')[:-5]}-{width}.png"), full_page=True
    )
    ctx.close()
    problems = []
    if r["pageWidth"] > r["viewport"]:
        problems.append(
            f"the page is {r['pageWidth']} px wide in a {r['viewport']} px viewport"
        )
    for key, what in [
        ("scrollingCode", "code/output blocks that scroll sideways"),
        ("tooWide", "blocks wider than the text column, outside a scroll box"),
        ("dumps", "object dumps (Name(field=...) in text outputs"),
        ("pipeTables", "Markdown tables shown as text"),
        ("badAlt", "images without alt text (or with a file path as alt)"),
        ("distorted", "images drawn more than 5% off their aspect ratio"),
        ("smallTargets", "sliders less than 44 px tall"),
        ("wrapped", "code, output or listing lines that wrap on a laptop"),
    ]:
        if r[key]:
            problems.append(f"{len(r[key])} {what}: {r[key][:6]}")
    assert not problems, f"{rel} at {width} px:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("rel", CHAPTERS)
def test_static_sliders_change_the_figure(browser, server, site, rel):
    if not (site / rel).exists():
        pytest.skip(f"{rel} was not built")
    ctx, page, log = open_page(browser, server, rel, 1366)
    boxes = page.locator(".gtlib-slider")
    dead, unlabelled = [], []
    for b in range(boxes.count()):
        box = boxes.nth(b)
        img = box.locator("img.gtlib-slider-img")
        for j in range(box.locator("input[type=range]").count()):
            slider = box.locator("input[type=range]").nth(j)
            label = box.locator(f"label[for='{slider.get_attribute('id')}']")
            if label.count() != 1 or not label.inner_text().strip():
                unlabelled.append((b, j))
            before, shown = (
                img.get_attribute("src"),
                box.locator("output").nth(j).inner_text(),
            )
            slider.focus()  # keyboard, as a reader without a mouse would
            page.keyboard.press(
                "Home"
                if slider.input_value() != slider.get_attribute("min")
                else "End"
            )
            if (
                img.get_attribute("src") == before
                or box.locator("output").nth(j).inner_text() == shown
            ):
                dead.append((b, j))
    ctx.close()
    assert log["errors"] == [], log["errors"]
    assert not unlabelled, (
        f"{rel}: sliders (box, input) without a label: {unlabelled}"
    )
    assert not dead, (
        f"{rel}: moving sliders (box, input) {dead} does not change the figure"
    )


@pytest.mark.parametrize("rel", CHAPTERS)
def test_chapter_page_weight(browser, server, site, rel):
    if not (site / rel).exists():
        pytest.skip(f"{rel} was not built")
    ctx, page, log = open_page(browser, server, rel, 1366)
    ctx.close()
    assert log["bytes"] <= MAX_CHAPTER_BYTES, (
        f"{rel} weighs {log['bytes'] / 1e6:.1f} MB (at most {MAX_CHAPTER_BYTES / 1e6:.0f} MB)"
    )
    lazy = log[
        "lazy"
    ]  # every figure but the first waits until the reader scrolls near it
    assert lazy["count"] < 2 or (
        lazy["lazy"] == lazy["count"] - 1 and lazy["firstLazy"] == 1
    ), (
        f"{rel}: {lazy['lazy']} of {lazy['count']} figures load lazily (all but the first should)"
    )


@pytest.mark.parametrize("rel", ALL)
def test_no_serious_accessibility_violation(browser, server, rel):
    if not AXE.exists():
        pytest.fail(
            f"{AXE.relative_to(ROOT)} is missing: run `make vendor` (npm axe-core)"
        )
    ctx, page, _ = open_page(browser, server, rel, 1366)
    page.add_script_tag(path=str(AXE))
    result = page.evaluate("""() => axe.run(document, {
        runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']},
        resultTypes: ['violations']})""")
    ctx.close()
    bad = [
        f"{v['impact']} {v['id']} ({len(v['nodes'])}x, e.g. {v['nodes'][0]['target']}): "
        f"{v['help']}"
        for v in result["violations"]
        if v["impact"] in ("critical", "serious")
    ]
    assert not bad, f"axe-core on {rel}:\n  " + "\n  ".join(bad)
