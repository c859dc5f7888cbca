"""Every chapter notebook is stored in nbformat's on-disk form: each cell's source is a list of
lines (every line but the last ends with a newline), so that a diff of a notebook shows the lines
that changed, and nbformat reads the file as a valid version-4 notebook."""

import json
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_sources_are_lists_of_lines(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    bad = []
    for i, cell in enumerate(nb["cells"]):
        src = cell["source"]
        if not isinstance(src, list):
            bad.append((i, "a single string"))
        elif any(not line.endswith("\n") for line in src[:-1]) or any(
            "\n" in line[:-1] for line in src
        ):
            bad.append((i, "not split at its newlines"))
    assert not bad, f"{path.name}: cells whose source is not a list of lines: {bad}"


# feature-contamination.ipynb declares nbformat 4.5 but its cells have no ids (nbformat warns)
@pytest.mark.filterwarnings("ignore::nbformat.validator.MissingIDFieldWarning")
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_nbformat_reads_the_same_sources(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    read = nbformat.read(str(path), as_version=4)
    assert read.nbformat == 4
    assert [c.source for c in read.cells] == [
        "".join(c["source"]) for c in nb["cells"]
    ]
