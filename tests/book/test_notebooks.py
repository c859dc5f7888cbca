"""House rules for the notebooks: committed without outputs, listed in the table of contents,
first cell installs gtlib from the repository named in _config.yml, claims table and bibliography."""

import json
import re
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())


def install_header() -> str:
    sys.path.insert(0, str(ROOT / "book" / "_tools"))
    from apply_install_cell import header

    return header()


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
            assert (
                cell.get("outputs") == [] and cell.get("execution_count") is None
            ), f"{path.name} cell {i} carries outputs: strip them before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_cell_has_a_unique_id(path):
    nb = load(path)
    assert (nb["nbformat"], nb["nbformat_minor"]) >= (4, 5)
    ids = [cell.get("id") for cell in nb["cells"]]
    missing = [i for i, x in enumerate(ids) if not x]
    assert not missing, f"{path.name}: cells {missing} have no id (nbformat 4.5)"
    assert len(set(ids)) == len(ids), f"{path.name}: cell ids repeat"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_listed_in_toc(path):
    assert f"book/{path.stem}" in toc_files(), f"{path.name} is not in _toc.yml"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_first_cell_installs_gtlib_from_the_configured_repository(path):
    """The set-up header written by book/_tools/apply_install_cell.py from _config.yml: installs gtlib
    from the configured repository at a ref when it is missing, and raises if pip fails."""
    first = next(c for c in load(path)["cells"] if c["cell_type"] == "code")
    src = "".join(first["source"])
    url = CONFIG["repository"]["url"].rstrip("/")
    assert f'"git+{url}.git@main"' in src, f"{path.name} does not install from {url}"
    assert src.startswith(install_header()), (
        f"{path.name}: run book/_tools/apply_install_cell.py"
    )
    assert "\nimport gtlib\n" in src and "gtlib.setup_chapter()" in src


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_chapter_structure(path):
    cells = load(path)["cells"]
    code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    md = "\n".join(
        "".join(c["source"]) for c in cells if c["cell_type"] == "markdown"
    )
    assert re.search(rf'gtlib\.Claims\("{path.stem}"[,)]', code), (
        "the chapter's claims register uses its slug"
    )
    assert "claims.table()" in code
    assert "{bibliography}" in md and ":filter: docname in docnames" in md
    assert len(re.findall(r"```\{exercise\}", md)) >= 5, "at least five exercises"
    assert len(re.findall(r"```\{solution-start\}", md)) >= 3, (
        "at least three executable solutions"
    )
    assert re.search(r"ipywidgets|widgets\.(live|interact)\(", code), (
        "an interactive control"
    )
    assert "small_multiples" in code or "static_slider" in code, (
        "the static stand-in for the interactive control (a static slider or small multiples)"
    )


# -- page conventions -------------------------------------------------------------
# A new convention may list the chapters that have not adopted it yet (xfail, not strict, so a
# converted chapter shows up as XPASS: then remove it). Today every chapter follows every one.
PENDING: dict[str, set] = {  # every chapter has adopted every convention
    "line_length": set(),
    "figure_metadata": set(),
    "live_widgets_tagged": set(),
    "solutions": set(),
    "no_markdown_tables": set(),
    "setup_folded": set(),
}


def convention(name):
    """Parametrize over the notebooks, expecting failure for those still pending."""
    return pytest.mark.parametrize(
        "path",
        [
            pytest.param(
                p,
                marks=pytest.mark.xfail(
                    reason=f"{p.stem} has not adopted the {name} convention yet",
                    strict=False,
                ),
            )
            if p.stem in PENDING[name]
            else p
            for p in NOTEBOOKS
        ],
        ids=lambda p: p.name,
    )


def code_cells(path):
    return [
        (i, c) for i, c in enumerate(load(path)["cells"]) if c["cell_type"] == "code"
    ]


def source(cell):
    return "".join(cell["source"])


@convention("setup_folded")
def test_the_title_comes_first_and_the_setup_code_is_folded(path):
    """A page opens with the chapter's title and question, not with install code: the set-up
    cell follows the title and its code is folded on the site (the Preliminaries, which explain
    that cell, show it)."""
    cells = load(path)["cells"]
    assert cells[0]["cell_type"] == "markdown" and source(cells[0]).startswith("# ")
    if path.stem != "preliminaries":
        first = next(c for c in cells if c["cell_type"] == "code")
        assert "hide-input" in first["metadata"].get("tags", []), path.name


MAX_LINE = 88  # the width of a code block in the site's text column


@convention("line_length")
def test_code_lines_fit_the_column(path):
    long = [
        (i, len(line))
        for i, c in code_cells(path)
        for line in source(c).splitlines()
        if len(line) > MAX_LINE
    ]
    assert not long, (
        f"{path.name}: code lines over {MAX_LINE} characters (cell, length): {long}"
    )


LISTING = re.compile(r"```\{literalinclude\} (\S+)\n((?::[\w-]+:[^\n]*\n)*)")


def listings(path):
    """Every library listing of a notebook: (target file, its options), as the page gives them."""
    for cell in load(path)["cells"]:
        if cell["cell_type"] == "markdown":
            for m in LISTING.finditer(source(cell)):
                yield (
                    m.group(1),
                    dict(re.findall(r":([\w-]+):[ ]?([^\n]*)", m.group(2))),
                )


@convention("line_length")
def test_library_listings_fit_the_column(path):
    """A listing of gtlib on the page holds its lines to the code column, as Sphinx renders it."""
    from sphinx.config import Config
    from sphinx.directives.code import LiteralIncludeReader

    long = []
    for target, options in listings(path):
        if "dedent" in options:
            options["dedent"] = int(options["dedent"])
        text, _ = LiteralIncludeReader(
            str(path.parent / target), options, Config()
        ).read()
        long += [
            (options.get("pyobject"), len(line))
            for line in text.splitlines()
            if len(line) > MAX_LINE - 3
        ]
    assert not long, (
        f"{path.name}: listing lines over {MAX_LINE - 3} characters: {long}"
    )


# a figure drawn by the cell itself (top-level code, not a function it only defines)
FIGURE_CALL = re.compile(
    r"^(plt\.show\(\)|\S.*=\s*((plotting|plt)\.)?(subplots|small_multiples)\()", re.M
)


@convention("figure_metadata")
def test_figures_are_numbered_captioned_and_described(path):
    bad = []
    for i, c in code_cells(path):
        src = source(c)
        if not FIGURE_CALL.search(src):
            continue
        if "remove-output" in c["metadata"].get("tags", []) or "remove-cell" in c[
            "metadata"
        ].get("tags", []):
            continue
        meta = c["metadata"].get("mystnb", {})
        fig, img = meta.get("figure", {}), meta.get("image", {})
        alt = img.get("alt", "")
        if not (
            fig.get("caption")
            and str(fig.get("name", "")).startswith("fig-")
            and len(alt.split()) >= 4
            and not re.search(r"\.(png|svg|jpe?g)\b|_build/", alt)
        ):
            bad.append(i)
    assert not bad, (
        f"{path.name}: figure cells {bad} need metadata mystnb.figure.caption, "
        "mystnb.figure.name ('fig-...') and mystnb.image.alt (words, not a path)"
    )


@convention("live_widgets_tagged")
def test_live_widgets_are_removed_from_the_static_page(path):
    bad = [
        i
        for i, c in code_cells(path)
        if re.search(r"\binteract(ive)?\(|widgets\.live\(", source(c))
        and not {"remove-output", "remove-cell"} & set(c["metadata"].get("tags", []))
    ]
    assert not bad, (
        f"{path.name}: cells {bad} make live widgets, which do nothing on the "
        "static site: tag them remove-output and show a widgets.static_slider"
    )


@convention("solutions")
def test_every_exercise_has_a_solution(path):
    md = "\n".join(
        source(c) for c in load(path)["cells"] if c["cell_type"] == "markdown"
    )
    exercises = re.findall(r"```\{exercise\}[^\n]*\n:label: (\S+)", md)
    solved = set(re.findall(r"```\{solution(?:-start)?\} (\S+)", md))
    missing = [e for e in exercises if e not in solved]
    assert not missing, f"{path.name}: exercises without a solution: {missing}"


@convention("no_markdown_tables")
def test_tables_are_html(path):
    bad = [i for i, c in code_cells(path) if re.search(r"\bMarkdown\(", source(c))]
    assert not bad, (
        f"{path.name}: cells {bad} display Markdown, which the site shows as text; "
        "use gtlib.display.table"
    )
