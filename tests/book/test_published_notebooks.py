"""The notebooks the site publishes (book/_ext/published_notebooks.py): a student notebook holds no
solution (no gated solution cell, no solution block) and every exercise; the set-up cell of a
published notebook installs gtlib at the commit of the build."""

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
sys.path.insert(0, str(ROOT / "book" / "_tools"))
import apply_install_cell  # noqa: E402
from published_notebooks import pin_install, solution_sources, student_notebook  # noqa: E402

NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))
SOLUTION = re.compile(r"^\s*(`{3,}|:{3,})\{solution", re.M)


def text(cell) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_solution_reaches_a_student_notebook(path):
    nb = json.loads(path.read_text())
    student = student_notebook(nb)
    solutions = solution_sources(nb)
    assert solutions, f"{path.name} has executable solutions (the chapter contract)"
    kept = [text(c) for c in student["cells"]]
    assert not [c for c in kept if SOLUTION.search(c)], "a solution block is left"
    code = [text(c) for c in student["cells"] if c["cell_type"] == "code"]
    assert not [s for s in solutions if s in code], "a solution's code cell is left"
    exercises = len(
        re.findall(r"\{exercise\}", "\n".join(text(c) for c in nb["cells"]))
    )
    assert len(re.findall(r"\{exercise\}", "\n".join(kept))) == exercises
    # every code cell outside the solutions is kept, in order
    full_code = [text(c) for c in nb["cells"] if c["cell_type"] == "code"]
    assert code == [c for c in full_code if c not in solutions]


def test_student_notebook_drops_solution_blocks_inside_mixed_cells():
    nb = {
        "cells": [
            {
                "cell_type": "markdown",
                "metadata": {},
                "source": "```{exercise} One\n:label: ex1\nDo it.\n```\n\n````{solution} ex1\n:class: dropdown\n"
                "Like this:\n```python\nx = 1\n```\n````\n\nAfter.",
            },
            {
                "cell_type": "markdown",
                "metadata": {},
                "source": "Text.\n\n```{solution-start} ex2\n:class: dropdown\n```\nHidden prose.",
            },
            {
                "cell_type": "code",
                "metadata": {},
                "outputs": [],
                "execution_count": None,
                "source": "answer = 42",
            },
            {
                "cell_type": "markdown",
                "metadata": {},
                "source": "More hidden.\n```{solution-end}\n```\n\nVisible again.",
            },
            {
                "cell_type": "code",
                "metadata": {},
                "outputs": [],
                "execution_count": None,
                "source": "print('kept')",
            },
        ]
    }
    out = [text(c) for c in student_notebook(nb)["cells"]]
    assert out == [
        "```{exercise} One\n:label: ex1\nDo it.\n```\n\n\nAfter.",
        "Text.",
        "Visible again.",
        "print('kept')",
    ]


def test_published_set_up_cell_installs_the_build_commit():
    url = apply_install_cell.repository_url()
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {},
                "outputs": [],
                "execution_count": None,
                "source": apply_install_cell.header() + "import gtlib\n",
            }
        ]
    }
    ref = "0123456789abcdef0123456789abcdef01234567"
    src = text(pin_install(nb, ref)["cells"][0])
    assert f'"git+{url}.git@{ref}"' in src and "@main" not in src
    assert text(nb["cells"][0]).count("@main") == 1, "the input is not modified"
