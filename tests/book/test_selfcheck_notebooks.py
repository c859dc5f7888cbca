"""Every exercise that computes something ends with a self-check the student edition keeps.

An exercise *computes* when its gated solution (``solution-start`` ... ``solution-end``) holds a
code cell. Such an exercise has, in this order: an answer cell (tag ``exercise-answer``) between
the exercise and its solution that sets one name to ``None``; the solution, which assigns that
name; and, as the first cell after ``solution-end``, a check cell (tag ``self-check``) calling
``selfcheck.check("<label>", <name>, ...)``, whose output the site does not show (tag
``remove-output``: both editions are built from one execution, with the solutions). The student
edition (``book/_ext/published_notebooks.py``) keeps the answer and check cells, and there, run
before the student has answered, every check says "not answered yet" rather than failing.
"""

import contextlib
import io
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gtlib import selfcheck

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
from published_notebooks import solution_sources, student_notebook  # noqa: E402

NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))
EXERCISE = re.compile(r"^\s*(`{3,}|:{3,})\{exercise\}[^\n]*\n:label: (\S+)", re.M)
FENCE = re.compile(
    r"^\s*(`{3,}|:{3,})\{(solution-start|solution-end)\}\s*(\S*)", re.M
)
ANSWER = re.compile(r"^(\w+) = None  # your code here$", re.M)
CHECK = re.compile(r'selfcheck\.check\("([^"]+)", (\w+)[,)]')

# Computing exercises without a self-check, with the reason (none at present).
WITHOUT_CHECK: dict[str, str] = {}


def text(cell) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


def tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


@dataclass
class Exercise:
    label: str
    cell: int  # the markdown cell stating it
    start: int | None = None  # the cell opening its gated solution
    end: int | None = None  # the cell closing it
    code: list[int] = field(default_factory=list)  # solution code cells


def exercises(nb) -> dict[str, Exercise]:
    """The exercises of a notebook, with where their gated solutions start and end."""
    found, current = {}, None
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "markdown":
            if (
                current is not None
                and current.start is not None
                and current.end is None
            ):
                current.code.append(i)
            continue
        src = text(cell)
        events = sorted(
            [(m.start(), "exercise", m.group(2)) for m in EXERCISE.finditer(src)]
            + [(m.start(), m.group(2), m.group(3)) for m in FENCE.finditer(src)]
        )
        for _, kind, label in events:
            if kind == "exercise":
                current = found[label] = Exercise(label, i)
            elif kind == "solution-start":
                assert current is not None and label == current.label, (
                    f"solution-start {label} does not follow its exercise"
                )
                current.start = i
            else:
                current.end = i
    return found


def computing(nb) -> dict[str, Exercise]:
    return {k: e for k, e in exercises(nb).items() if e.code}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_computing_exercise_ends_with_a_check(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    cells, problems = nb["cells"], []
    for label, ex in computing(nb).items():
        if label in WITHOUT_CHECK:
            continue
        answers = [
            i
            for i in range(ex.cell, ex.start + 1)
            if "exercise-answer" in tags(cells[i])
        ]
        if len(answers) != 1 or cells[answers[0]]["cell_type"] != "code":
            problems.append(
                f"{label}: one answer code cell between exercise and solution"
            )
            continue
        m = ANSWER.search(text(cells[answers[0]]))
        if not m:
            problems.append(f"{label}: the answer cell sets no name to None")
            continue
        name = m.group(1)
        if not any(
            re.search(rf"^\s*{name}(\s*=[^=]|\.append\(|\[)", text(cells[i]), re.M)
            for i in ex.code
        ):
            problems.append(f"{label}: the solution does not compute {name}")
        after = cells[ex.end + 1] if ex.end + 1 < len(cells) else None
        if (
            after is None
            or after["cell_type"] != "code"
            or "self-check" not in tags(after)
        ):
            problems.append(
                f"{label}: the cell after solution-end is not a self-check cell"
            )
            continue
        if "remove-output" not in tags(after):
            problems.append(
                f"{label}: the check cell needs the tag remove-output (the student "
                "site is built from the execution with the solutions)"
            )
        c = CHECK.search(text(after))
        if not c or c.groups() != (label, name):
            problems.append(
                f"{label}: the check cell must call selfcheck.check({label!r}, "
                f"{name}, ...)"
            )
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_check_and_answer_cells_sit_outside_solutions(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    ours = [
        (i, c)
        for i, c in enumerate(nb["cells"])
        if {"self-check", "exercise-answer"} & set(tags(c))
    ]
    gated = set(map(str.strip, solution_sources(nb)))
    inside = [i for i, c in ours if text(c).strip() in gated]
    assert not inside, (
        f"{path.name}: check or answer cells inside a solution region: {inside}"
    )
    exs = list(exercises(nb).values())
    for i, cell in ours:
        if "self-check" in tags(cell):
            label = CHECK.search(text(cell)).group(1)
            ex = next(e for e in exs if e.label == label)
            assert ex.end is not None and i == ex.end + 1, (
                f"{path.name}: the check of {label} is not right after its solution"
            )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_student_edition_keeps_them_in_order(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    student = [c for c in student_notebook(nb)["cells"] if c["cell_type"] == "code"]
    for label, ex in computing(nb).items():
        if label in WITHOUT_CHECK:
            continue
        answer = next(
            c
            for c in nb["cells"][ex.cell : ex.start + 1]
            if "exercise-answer" in tags(c)
        )
        check = nb["cells"][ex.end + 1]
        kept = [text(c) for c in student]
        assert text(answer) in kept and text(check) in kept, f"{label}: not kept"
        # in the student edition the check follows the student's answer cell directly
        assert kept.index(text(check)) == kept.index(text(answer)) + 1, label


def test_every_registered_check_is_used_and_every_used_one_registered():
    used = set()
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text(encoding="utf-8"))
        used |= {
            CHECK.search(text(c)).group(1)
            for c in nb["cells"]
            if "self-check" in tags(c)
        }
    assert used == set(selfcheck.EXERCISES), (
        f"checked but not registered: {sorted(used - set(selfcheck.EXERCISES))}; "
        f"registered but not checked: {sorted(set(selfcheck.EXERCISES) - used)}"
    )
    assert not set(WITHOUT_CHECK) & used


class _Anything:
    """Stands for every chapter object a check cell passes (the chapter has not run)."""

    def __getattr__(self, name):
        return self

    def __call__(self, *args, **kwargs):
        return self

    def __getitem__(self, key):
        return self


class _Chapter(dict):
    def __missing__(self, key):
        return _Anything()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_student_edition_check_says_not_answered_yet(path, monkeypatch):
    monkeypatch.delenv("GTLIB_STRICT_SELFCHECKS", raising=False)
    nb = student_notebook(json.loads(path.read_text(encoding="utf-8")))
    cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
    pairs = [
        (cells[k - 1], c) for k, c in enumerate(cells) if "self-check" in tags(c)
    ]
    for answer, check in pairs:
        scope = _Chapter()
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(text(answer), {"__builtins__": __builtins__}, scope)
            exec(text(check), {"__builtins__": __builtins__}, scope)
        label = CHECK.search(text(check)).group(1)
        assert out.getvalue().startswith(f"Self-check {label}: not answered yet."), (
            out.getvalue()
        )
