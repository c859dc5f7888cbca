"""The tests mirror gtlib: every module ``gtlib/<m>.py`` has its tests in ``tests/core/test_<m>.py``,
or in ``tests/chapters/test_<m>.py`` for a chapter's module, so that ``pytest <that file>`` runs
everything that checks the module (unit, reference, boundary and engine-equivalence tests).

The chapter modules are the ones the import-linter contract in pyproject.toml keeps independent of
each other; every other module is core. A subpackage ``gtlib/<p>/<m>.py`` is mirrored the same way,
at ``tests/<core or chapters>/<p>/test_<m>.py``."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GTLIB = ROOT / "gtlib"
TESTS = ROOT / "tests"


def chapter_modules() -> set[str]:
    """The modules of the independence contract in pyproject.toml (read without tomllib, which
    Python 3.10 lacks)."""
    text = (ROOT / "pyproject.toml").read_text()
    blocks = [
        b
        for b in text.split("[[tool.importlinter.contracts]]")[1:]
        if re.search(r'^type = "independence"$', b, re.M)
    ]
    assert len(blocks) == 1, "one independence contract names the chapter modules"
    listed = re.search(r"^modules = \[(.*?)\]", blocks[0], re.M | re.S).group(1)
    return set(re.findall(r'"gtlib\.(\w+)"', listed))


def gtlib_modules() -> list[Path]:
    return sorted(
        p.relative_to(GTLIB)
        for p in GTLIB.rglob("*.py")
        if p.name != "__init__.py" and "__pycache__" not in p.parts
    )


def mirrored(module: Path, chapters: set[str]) -> Path:
    top = module.parts[0].removesuffix(".py")
    folder = "chapters" if top in chapters else "core"
    return TESTS / folder / module.parent / f"test_{module.name}"


def test_every_gtlib_module_has_its_test_module_at_the_mirrored_path():
    chapters = chapter_modules()
    assert chapters, "the chapter modules are named in pyproject.toml"
    missing = [
        f"gtlib/{m} -> {mirrored(m, chapters).relative_to(ROOT)}"
        for m in gtlib_modules()
        if not mirrored(m, chapters).is_file()
    ]
    assert not missing, "modules without their test module:\n" + "\n".join(missing)


def test_every_chapter_module_exists():
    for m in chapter_modules():
        assert (GTLIB / f"{m}.py").is_file() or (
            GTLIB / m / "__init__.py"
        ).is_file(), f"pyproject.toml names gtlib.{m}, which does not exist"
