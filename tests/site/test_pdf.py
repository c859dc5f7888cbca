"""The PDF handouts (`make pdf`): printed offline from the built site, whole and readable.

Each chapter's PDF has several pages, contains the chapter's headings and its claims table (every
claim id this build recorded), and no text runs past the right edge of a page; the whole book is
the chapters and the other pages in one file.
"""

import json
import os
import sys
from pathlib import Path

import pytest

from .conftest import ROOT

sys.path.insert(0, str(ROOT / "book" / "_tools"))
import pdf as handouts  # noqa: E402

RESULTS = Path(os.environ.get("GTLIB_RESULTS_DIR") or ROOT / "_build" / "results")
CHAPTERS = handouts.chapters()


@pytest.fixture(scope="module")
def printed(site, tmp_path_factory):
    out = tmp_path_factory.mktemp("pdf")
    parts = handouts.print_pages(site, out)
    return {p.stem: p for p in parts} | {
        "book": handouts.merge(parts, out / "book.pdf")
    }


def _text_runs(reader):
    """(page index, x, estimated width, page width, text) of every text run."""
    runs = []
    for i, page in enumerate(reader.pages):
        width = float(page.mediabox.width)

        def visit(text, cm, tm, font, size, i=i, width=width):
            if text.strip():
                scale = cm[0] if cm[0] else 1.0
                x = cm[4] + tm[4] * scale
                runs.append(
                    (
                        i,
                        x,
                        0.4 * size * scale * len(text.strip()),
                        width,
                        text.strip(),
                    )
                )

        page.extract_text(visitor_text=visit)
    return runs


@pytest.mark.parametrize("rel", CHAPTERS)
def test_chapter_pdf(printed, rel):
    from pypdf import PdfReader

    slug = Path(rel).stem
    reader = PdfReader(str(printed[slug]))
    assert len(reader.pages) >= 3, f"{slug}.pdf has {len(reader.pages)} pages"
    text = "\n".join(p.extract_text() for p in reader.pages)
    nb = json.loads((ROOT / rel.replace(".html", ".ipynb")).read_text())
    md = "\n".join(
        "".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"
    )
    heads = [
        ln.lstrip("#").strip()
        for ln in md.splitlines()
        if ln.startswith(("# ", "## "))
    ]
    flat = " ".join(text.split())
    for h in heads[:1] + [h for h in heads if h.startswith(("Exercises", "Claims"))]:
        words = " ".join(h.replace("*", "").replace("`", "").split()[:3])
        assert words in flat, f"{slug}.pdf lacks the heading {h!r}"
    results = RESULTS / f"{slug}.json"
    if results.exists():
        for c in json.loads(results.read_text())["claims"]:
            assert c["id"] in flat.replace(" ", "") or c["id"] in flat, (
                f"{slug}.pdf lacks claim {c['id']} of the claims table"
            )
    cut = [
        (i + 1, t[:40])
        for i, x, w, width, t in _text_runs(reader)
        if len(t) >= 5 and (x < -2 or x + w > width + 2)
    ]
    assert not cut, f"{slug}.pdf: text past the page edge (page, text): {cut[:5]}"


def test_book_pdf_is_every_page(printed):
    from pypdf import PdfReader

    total = sum(
        len(PdfReader(str(p)).pages) for k, p in printed.items() if k != "book"
    )
    assert len(PdfReader(str(printed["book"])).pages) == total
