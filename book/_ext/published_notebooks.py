"""Sphinx extension: the notebooks a reader downloads or opens from the site.

After an HTML build, every notebook page's download (``_sources/<page>.ipynb``) is rewritten:

* its set-up cell installs gtlib at the commit the site was built from (``git rev-parse HEAD``, or
  ``GTLIB_BOOK_REF``), so a notebook and the library it installs match;
* in the student edition (``hide_solutions: true``) every solution is removed: the gated
  ``solution-start`` ... ``solution-end`` regions (markdown and code cells) and every
  ``{solution}`` block. The Pages workflow publishes these notebooks to the branch that the student
  edition's launch buttons open (``book/_tools/build_config.py``), so no button of the student edition
  leads to a solution.

The functions are plain (notebook JSON in, notebook JSON out) and tested in
``tests/book/test_published_notebooks.py``.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

_OPEN = re.compile(r"^\s*(`{3,}|:{3,})\{(solution-start|solution-end|solution)\}")
_PIN = re.compile(r"(git\+[^\"'\s@]+?\.git)@[A-Za-z0-9._/-]+(?=[\"'])")


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def _closing(lines: list[str], start: int, fence: str) -> int:
    """Index of the line closing a fence opened with ``fence`` (CommonMark: the same character,
    at least as long, nothing else), or the last line when the block is not closed."""
    close = re.compile(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$")
    for j in range(start, len(lines)):
        if close.match(lines[j]):
            return j
    return len(lines) - 1


def student_notebook(nb: dict) -> dict:
    """A copy of ``nb`` without any solution: gated regions (their markdown and code cells,
    possibly spanning several cells) and ``{solution}`` blocks. Cells left empty are dropped."""
    out = copy.deepcopy(nb)
    cells, gated = [], False
    for cell in out["cells"]:
        if cell["cell_type"] != "markdown":
            if not gated:
                cells.append(cell)
            continue
        lines, kept, i = _source(cell).split("\n"), [], 0
        while i < len(lines):
            m = _OPEN.match(lines[i])
            if m:
                end = _closing(lines, i + 1, m.group(1))
                if m.group(2) == "solution-start":
                    gated = True
                elif m.group(2) == "solution-end":
                    gated = False
                i = end + 1
                continue
            if not gated:
                kept.append(lines[i])
            i += 1
        text = "\n".join(kept).strip("\n")
        if text.strip():
            cell["source"] = text
            cells.append(cell)
    out["cells"] = cells
    return out


def solution_sources(nb: dict) -> list[str]:
    """The code cells of ``nb`` inside gated solutions (what a student notebook must not hold)."""
    gated, found = False, []
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            for line in _source(cell).split("\n"):
                m = _OPEN.match(line)
                if m and m.group(2) == "solution-start":
                    gated = True
                elif m and m.group(2) == "solution-end":
                    gated = False
        elif gated:
            found.append(_source(cell))
    return found


def pin_install(nb: dict, ref: str) -> dict:
    """A copy of ``nb`` whose set-up cell (the first code cell) installs gtlib at ``ref``."""
    out = copy.deepcopy(nb)
    first = next((c for c in out["cells"] if c["cell_type"] == "code"), None)
    if first is not None:
        first["source"] = _PIN.sub(lambda m: f"{m.group(1)}@{ref}", _source(first))
    return out


def book_ref(srcdir: Path) -> str | None:
    """The commit this build is made from: ``GTLIB_BOOK_REF``, else ``git rev-parse HEAD``."""
    if os.environ.get("GTLIB_BOOK_REF"):
        return os.environ["GTLIB_BOOK_REF"]
    try:
        r = subprocess.run(
            ["git", "-C", str(srcdir), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    ref = r.stdout.strip()
    return ref if r.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", ref) else None


def _write_published(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    student = bool(getattr(app.config, "gtlib_hide_solutions", False))
    ref = book_ref(Path(app.srcdir))
    if ref is None:
        logger.info(
            "published notebooks: no git commit found, the set-up cells keep their ref"
        )
    sources = Path(app.outdir) / "_sources"
    for doc in sorted(app.env.found_docs):
        src = Path(app.env.doc2path(doc))
        target = sources / f"{doc}.ipynb"
        if src.suffix != ".ipynb" or not target.exists():
            continue
        nb = json.loads(src.read_text(encoding="utf-8"))
        if ref is not None:
            nb = pin_install(nb, ref)
        if student:
            nb = student_notebook(nb)
        target.write_text(
            json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )


def setup(app):
    app.connect("build-finished", _write_published)
    return {
        "version": "0.1",
        "parallel_read_safe": True,
        "parallel_write_safe": True,
    }
