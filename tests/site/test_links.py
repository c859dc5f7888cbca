"""Every internal link and asset reference of the built site resolves (file and anchor)."""

from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from .conftest import SITE, pages


class _Refs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "a" and "name" in a:
            self.ids.add(a["name"])
        for key in ("href", "src"):
            if a.get(key) and not (
                tag == "link" and a.get("rel") in ("preconnect", "dns-prefetch")
            ):
                self.refs.append(a[key])


def _parse(path: Path) -> _Refs:
    p = _Refs()
    p.feed(path.read_text(encoding="utf-8", errors="replace"))
    return p


_cache: dict[Path, set] = {}


def _ids(path: Path) -> set:
    if path not in _cache:
        _cache[path] = _parse(path).ids
    return _cache[path]


PAGES = pages() if SITE.exists() else []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(SITE)))
def test_internal_links_resolve(site, page):
    broken = []
    for ref in _parse(page).refs:
        parts = urlsplit(ref)
        if parts.scheme or ref.startswith(("//", "mailto:", "javascript:", "data:")):
            continue  # external links are not followed (the browser test checks nothing is fetched)
        target = (
            page if not parts.path else (page.parent / unquote(parts.path)).resolve()
        )
        if target.is_dir():
            target = target / "index.html"
        if not target.exists():
            broken.append(ref)
            continue
        if (
            parts.fragment
            and target.suffix == ".html"
            and parts.fragment not in _ids(target)
        ):
            broken.append(ref)
    assert not broken, (
        f"{page.relative_to(SITE)}: broken internal links {broken[:10]}"
    )


def test_site_has_the_expected_pages(site):
    rel = {str(p.relative_to(SITE)) for p in PAGES}
    assert {
        "book/index.html",
        "book/preliminaries.html",
        "book/reproduction-report.html",
        "book/bibliography.html",
    } <= rel
