"""Every public function refuses every bad argument with an error that names it (generated).

For each name in each gtlib module's ``__all__`` (modules found as ``gtlib/*.py`` and
``gtlib/*/__init__.py``) that carries :func:`gtlib.checks.boundary`, the test reads the
constraints the decorator checks (``func.__gtlib_constraints__``), builds a valid call (each
required argument's :meth:`~gtlib.checks.Constraint.valid_value`, or an example from ``EXAMPLES``
below), and then,
for each checked argument and each value its constraint refuses
(:meth:`~gtlib.checks.Constraint.invalid_values`), calls the function with that one argument
replaced: the call must raise ``TypeError`` or ``ValueError`` naming the argument. One test item
per function runs all of that function's cases. The boundary
raises before the function's body runs, so no experiment is trained.

The hand-written bad-input tests (tests/test_bad_input*.py, tests/test_boundary_*.py) check the
messages and the cross-argument rules in detail; this one checks that nothing public was missed.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

from gtlib import checks
from gtlib.checks import Constraint, _show

ROOT = Path(__file__).resolve().parents[2]


# Valid examples that no constraint proposes, by the constraint's class name: a matplotlib Axes
# (the chapters' private ``_Axes`` constraint). An argument that must be an instance of a gtlib
# class (a config, a result, a stack of networks) gets a bare instance (``cls.__new__(cls)``):
# the boundary checks ``isinstance`` only, and the function's body never runs.
def _axes():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    plt.close(fig)
    return ax


EXAMPLES = {"_Axes": _axes}


def _modules() -> list:
    # gtlib's modules, a chapter split into a package (gtlib/<p>/__init__.py) counted as one module:
    # its __init__ re-exports its submodules' __all__
    paths = sorted(
        [*(ROOT / "gtlib").glob("*.py"), *(ROOT / "gtlib").glob("*/__init__.py")]
    )
    return [
        importlib.import_module(
            "gtlib"
            if p == ROOT / "gtlib" / "__init__.py"
            else "gtlib." + (p.parent.name if p.stem == "__init__" else p.stem)
        )
        for p in paths
    ]


def _public_boundary_functions() -> list:
    out, seen = [], set()
    for module in _modules():
        for name in getattr(module, "__all__", ()):
            f = getattr(module, name)
            if (
                inspect.isfunction(f)
                and hasattr(f, "__gtlib_constraints__")
                and f not in seen
            ):
                seen.add(f)
                out.append(f)
    return out


def _valid(c: Constraint):
    try:
        return c.valid_value()
    except LookupError:
        pass
    if type(c).__name__ in EXAMPLES:
        return EXAMPLES[type(c).__name__]()
    cls = getattr(
        c, "cls", None
    )  # InstanceOf of a class that needs arguments to be built
    if isinstance(cls, type):
        value = cls.__new__(cls)
        if not c.refuses(value):
            return value
    raise LookupError(f"no valid example for a value that must be {c.describe()}")


def _valid_call(f) -> dict:
    """Keyword arguments that pass every boundary check of ``f`` (required arguments only)."""
    sig = inspect.signature(f)
    plan = f.__gtlib_constraints__
    kwargs = {}
    for name, p in sig.parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.default is not p.empty:
            continue
        if name not in plan:
            kwargs[name] = (
                object()
            )  # not checked by the boundary: any value passes it
            continue
        kwargs[name] = _valid(plan[name])
    return kwargs


def _cases(f) -> list:
    """``(argument, invalid value)`` for every checked argument of ``f``."""
    sig = inspect.signature(f)
    out = []
    for name, c in f.__gtlib_constraints__.items():
        default = sig.parameters[name].default
        # the boundary trusts the function's own default, so a refused default is not a case
        out += [(name, bad) for bad in c.invalid_values() if bad is not default]
    return out


FUNCTIONS = _public_boundary_functions()


def _label(f) -> str:
    return f"{f.__module__}.{f.__qualname__}"


def test_every_public_boundary_function_has_a_valid_call():
    missing = []
    for f in FUNCTIONS:
        try:
            _valid_call(f)
        except LookupError as e:
            missing.append(f"{_label(f)}: {e}")
    assert not missing, "add an example to EXAMPLES for:\n" + "\n".join(missing)


@pytest.mark.parametrize("f", FUNCTIONS, ids=_label)
def test_bad_arguments_are_refused_by_name(f):
    """Each (argument, invalid value) case of ``f``: TypeError/ValueError naming the argument."""
    sig = inspect.signature(f)
    valid = _valid_call(f)
    cases = _cases(f)
    assert cases, f"{_label(f)} checks no argument"
    wrong = []
    for name, bad in cases:
        kwargs = dict(valid, **{name: bad})
        args = [
            kwargs.pop(n)
            for n, p in sig.parameters.items()  # positional-only ones first
            if p.kind is p.POSITIONAL_ONLY and n in kwargs
        ]
        try:
            f(*args, **kwargs)
        except (TypeError, ValueError) as e:
            if not re.search(rf"\b{re.escape(name)}\b", str(e)):
                wrong.append(
                    f"{name}={_show(bad)}: the message does not name {name}: {e}"
                )
        else:
            wrong.append(f"{name}={_show(bad)}: accepted")
    assert not wrong, f"{_label(f)}:\n  " + "\n  ".join(wrong)


@pytest.mark.parametrize(
    "c",
    [
        checks.Interval(int, 0, 5),
        checks.Interval(float, 0, 1, "neither", optional=True),
        checks.count(),
        checks.positive(),
        checks.SEED,
        checks.Options(("sgd", "adamw")),
        checks.Boolean(),
        checks.InstanceOf(int),
        checks.tuple_of(checks.count(), 2, "strict"),
        checks.Tensor("float", 2),
        checks.Tensor("int", (1, 2), optional=True),
        checks.Device(),
    ],
    ids=lambda c: c.describe(),
)
def test_constraints_propose_values_they_accept_and_refuse(c):
    """What the generated test relies on: a valid value that passes, invalid ones that do not."""
    good = c.valid_value()
    assert c.check("x", good) is good
    bad = c.invalid_values()
    assert bad, f"{c.describe()}: no invalid value"
    for v in bad:
        with pytest.raises((TypeError, ValueError), match=r"\bx\b"):
            c.check("x", v)


def test_boundary_exposes_the_constraints_it_checks():
    @checks.boundary(n=checks.count())
    def f(n, lr: float = 0.1, name: str = "a", data=None):
        return n

    plan = f.__gtlib_constraints__
    assert list(plan) == ["n", "lr", "name"]  # data has no annotation: not checked
    assert plan["n"].describe() == "an int >= 1"
    assert f(3) == 3
    with pytest.raises(ValueError, match=r"f\(\): n must be an int >= 1, got 0"):
        f(0)
