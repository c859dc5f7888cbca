"""House rules for the notebooks: committed without outputs, listed in the table of contents,
first cell installs gtlib from the repository named in _config.yml, claims table and bibliography."""
import json
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())


def load(path):
    return json.loads(path.read_text())


def toc_files():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part.get("chapters", [])]
    return files


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_outputs_are_stripped(path):
    for i, cell in enumerate(load(path)["cells"]):
        if cell["cell_type"] == "code":
            assert cell.get("outputs") == [] and cell.get("execution_count") is None, \
                f"{path.name} cell {i} carries outputs: strip them before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_listed_in_toc(path):
    assert f"book/{path.stem}" in toc_files(), f"{path.name} is not in _toc.yml"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_first_cell_installs_gtlib_from_the_configured_repository(path):
    first = next(c for c in load(path)["cells"] if c["cell_type"] == "code")
    src = "".join(first["source"])
    url = CONFIG["repository"]["url"].rstrip("/")
    m = re.search(r'%pip install -q "gtlib @ git\+(\S+?)"', src)
    assert m, f"{path.name}: the first code cell must install gtlib when it is missing"
    assert m.group(1) == url + ".git", f"{path.name} installs from {m.group(1)}, _config.yml says {url}"
    assert 'find_spec("gtlib") is None' in src and "gtlib.setup_chapter()" in src


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_chapter_structure(path):
    cells = load(path)["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    md = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    assert f'gtlib.Claims("{path.stem}")' in code, "the chapter's claims register uses its slug"
    assert "claims.table()" in code
    assert "{bibliography}" in md and ":filter: docname in docnames" in md
    assert len(re.findall(r"```\{exercise\}", md)) >= 5, "at least five exercises"
    assert len(re.findall(r"```\{solution-start\}", md)) >= 3, "at least three executable solutions"
    assert "ipywidgets" in code, "an interactive control"
    assert "small_multiples" in code, "the static stand-in for the interactive control"
