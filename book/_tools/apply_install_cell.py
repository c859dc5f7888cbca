"""Write the set-up header into the first code cell of every chapter notebook.

The first code cell of a chapter installs gtlib when it is missing (on Colab, or in any fresh
environment) and then sets the chapter up. Its install header is generated here, from
``_config.yml`` (``repository.url``: the one place the URL is written), and is the same in every
notebook:

* pip runs as a subprocess and the cell raises at once, with pip's error and what to do, when the
  install fails (``%pip`` does not raise: the notebook used to go on to a ModuleNotFoundError);
* it installs the repository at a ref: ``main`` in the repository, and the commit the site was
  built from in the notebooks the site publishes (``book/_ext/published_notebooks.py`` rewrites
  the ref), so that a notebook and the library it installs match;
* ``GTLIB_SOURCE`` overrides the pip source (a local clone: ``git+file:///path/to/clone@HEAD``);
  the Colab-path workflow and ``tests/book/test_install_cell.py`` run the cell's own install with it.

Everything from the cell's ``import gtlib`` line on is kept as it is. Usage::

    python book/_tools/apply_install_cell.py            # rewrite book/*.ipynb
    python book/_tools/apply_install_cell.py --check    # exit 1 if a notebook is not up to date
    python book/_tools/apply_install_cell.py path/to/copy.ipynb ...
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
REF = "main"

HEADER = """\
# Set-up: install gtlib if it is missing (e.g. on Colab), then set up the chapter.
import importlib.util, os, subprocess, sys
GTLIB = os.environ.get(  # the book's repository, at this notebook's version
    "GTLIB_SOURCE", "git+{url}.git@{ref}")
if importlib.util.find_spec("gtlib") is None:
    cmd = [sys.executable, "-m", "pip", "install", "-q", f"gtlib @ {{GTLIB}}"]
    pip = subprocess.run(cmd, capture_output=True, text=True)
    if pip.returncode != 0:  # stop here, saying why and what to do
        raise RuntimeError(
            f"pip could not install gtlib from {{GTLIB}}:\\n{{pip.stderr[-1500:]}}\\nInstall "
            "it from a clone (pip install path/to/clone) or set GTLIB_SOURCE.")
    importlib.invalidate_caches()
"""


def repository_url() -> str:
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    return cfg["repository"]["url"].rstrip("/")


def header(url: str | None = None, ref: str = REF) -> str:
    """The install header (everything before ``import gtlib``) of every chapter's first cell."""
    return HEADER.format(url=url or repository_url(), ref=ref)


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def new_first_cell(source: str, url: str | None = None) -> str:
    """``source`` with everything before its ``import gtlib`` line replaced by :func:`header`."""
    lines = source.split("\n")
    try:
        start = next(
            i for i, line in enumerate(lines) if line.strip() == "import gtlib"
        )
    except StopIteration:
        raise ValueError("the first code cell has no `import gtlib` line") from None
    return header(url) + "\n".join(lines[start:])


def apply(path: Path, check: bool = False) -> bool:
    """Rewrite the first code cell of ``path``; return whether it changed (or would change)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    first = next(c for c in nb["cells"] if c["cell_type"] == "code")
    old = _source(first)
    new = new_first_cell(old)
    if new == old:
        return False
    if not check:
        # keep the cell's layout: one string, or nbformat's list of lines
        first["source"] = (
            new if isinstance(first["source"], str) else new.splitlines(True)
        )
        path.write_text(
            json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    return True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", type=Path)
    ap.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if out of date"
    )
    args = ap.parse_args(argv)
    paths = args.paths or sorted((ROOT / "book").glob("*.ipynb"))
    changed = [p for p in paths if apply(p, check=args.check)]
    for p in changed:
        print(("out of date: " if args.check else "updated: ") + str(p))
    return 1 if (args.check and changed) else 0


if __name__ == "__main__":
    sys.exit(main())
