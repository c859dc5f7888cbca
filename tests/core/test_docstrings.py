"""Every public name of gtlib has a numpydoc docstring that numpydoc's own validator accepts.

The public names are each module's ``__all__``; the modules are found as ``gtlib/*.py`` and
``gtlib/*/__init__.py``, so a new module is covered as soon as it exists. The API reference page
(``book/api.md``) renders these docstrings, so a missing ``Parameters`` entry would be a missing
line on the site.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

numpydoc_validate = pytest.importorskip("numpydoc.validate")

ROOT = Path(__file__).resolve().parents[2]

# The checks enforced (numpydoc's codes, see numpydoc.validate.ERROR_MSGS):
ENFORCED = {
    "GL08": "the object has no docstring",
    "SS01": "no summary line",
    "SS02": "the summary does not start with a capital letter",
    "SS03": "the summary does not end with a period",
    "SS06": "the summary does not fit on one line",
    "PR01": "an argument of the signature is not documented under Parameters",
    "PR02": "Parameters documents an argument the signature does not have",
    "PR07": "a parameter has no description",
    "RT01": "no Returns section (a function that returns something)",
    "RT03": "a return value has no description",
    "YD01": "no Yields section (a generator)",
}

# Modules whose numpydoc sections are still being written (empty this set when they are done).
SKIP_MODULES: set[str] = set()


def _modules() -> list[str]:
    # a chapter split into a package (gtlib/<p>/__init__.py) is one module here: its __init__
    # re-exports its submodules' __all__, and book/api.md documents it under the package's name
    names = []
    for path in sorted(
        [*(ROOT / "gtlib").glob("*.py"), *(ROOT / "gtlib").glob("*/__init__.py")]
    ):
        if path == ROOT / "gtlib" / "__init__.py":
            names.append("gtlib")
        else:
            names.append(
                "gtlib."
                + (path.parent.name if path.stem == "__init__" else path.stem)
            )
    return names


def _public() -> list[tuple[str, str]]:
    """(module, name) for every name in every module's ``__all__`` that is a function or class.

    Constants (``SCALES``, ``OKABE_ITO``...) carry no docstring of their own and are skipped.
    """
    out = []
    for modname in _modules():
        module = importlib.import_module(modname)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                out.append((modname, name))
    return out


def test_every_module_declares_all():
    missing = [
        m
        for m in _modules()
        if m not in SKIP_MODULES
        and not hasattr(importlib.import_module(m), "__all__")
    ]
    assert not missing, f"modules without __all__ (their public API): {missing}"


def test_all_names_exist():
    for modname in _modules():
        module = importlib.import_module(modname)
        names = list(getattr(module, "__all__", ()))
        assert len(names) == len(set(names)), f"{modname}.__all__ repeats a name"
        absent = [n for n in names if not hasattr(module, n)]
        assert not absent, (
            f"{modname}.__all__ names what the module does not define: {absent}"
        )


@pytest.mark.parametrize("modname,name", _public(), ids=lambda v: v)
def test_numpydoc(modname, name):
    if modname in SKIP_MODULES:
        pytest.skip(f"{modname}'s numpydoc sections are still being written")
    obj = getattr(importlib.import_module(modname), name)
    # numpydoc validates the object where it is defined; a re-export (gtlib.Claims) is checked
    # under its home module too, and reading it through __module__ keeps the report's name real.
    home = obj.__module__
    result = numpydoc_validate.validate(f"{home}.{obj.__qualname__}")
    errors = [f"{code}: {msg}" for code, msg in result["errors"] if code in ENFORCED]
    assert not errors, f"{modname}.{name}:\n  " + "\n  ".join(errors)


def test_api_page_lists_every_public_name():
    """book/api.md has a section per module whose autosummary lists exactly its ``__all__``."""
    import re

    page = (ROOT / "book" / "api.md").read_text()
    sections = dict(
        re.findall(r"^## `([\w.]+)`\n(.*?)(?=^## |\Z)", page, re.M | re.S)
    )
    for modname in _modules():
        if modname in SKIP_MODULES:
            continue
        assert modname in sections, f"book/api.md has no section for {modname}"
        module = importlib.import_module(modname)
        listed = re.findall(r"^   (\w+)$", sections[modname], re.M)
        if (
            modname == "gtlib"
        ):  # the package lists its own function; its re-exports are linked
            assert listed == ["setup_chapter"]
        else:
            assert listed == list(getattr(module, "__all__", [])), (
                f"book/api.md's autosummary of {modname} is not its __all__"
            )


@pytest.mark.parametrize(
    "path",
    sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "gtlib").rglob("*.py")),
)
def test_module_source_has_no_invalid_escape(path):
    # a docstring's LaTeX in an ordinary string turns "\f" or "\b" into control characters and
    # breaks the API page; Python warns of the invalid ones ("\s") when it compiles the module
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compile((ROOT / path).read_text(encoding="utf-8"), path, "exec")
    text = (ROOT / path).read_text(encoding="utf-8")
    assert "\f" not in text and "\b" not in text, (
        f"{path}: a control character in the source"
    )
