"""Fixtures of the site checks: the built site, served on 127.0.0.1 only."""

import functools
import http.server
import os
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# GTLIB_SITE_DIR checks another build (e.g. a small book built with --path-output).
SITE = Path(os.environ.get("GTLIB_SITE_DIR") or ROOT / "_build" / "html")


def pages() -> list[Path]:
    """Every page of the built site (Sphinx's own search/genindex pages excluded)."""
    skip = {"search.html", "genindex.html"}
    return sorted(
        p
        for p in SITE.rglob("*.html")
        if p.name not in skip
        and "_static" not in p.parts
        and "_sources" not in p.parts
    )


@pytest.fixture(scope="session")
def site() -> Path:
    if not (SITE / "index.html").exists():
        pytest.fail("the site is not built: run `make book` first")
    return SITE


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def server(site):
    handler = functools.partial(_Quiet, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
