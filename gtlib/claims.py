"""Claims: how a chapter states what a paper found and checks it on this run's measurements.

A claim is a **rule**, a short boolean expression over named values measured in this run. gtlib
evaluates the rule itself, so no outcome is typed by hand. Every claim has a *kind*:

``effect`` (the default)
    A result of the paper. It names a **control**, a *measured null*: the same measurement taken
    on an experiment in which the paper's mechanism is removed (the linear model, a random mask in
    place of the magnitude mask, a centred background, a 1-nearest-neighbour learner, an
    equal-budget run without pretraining). The claim holds only if the rule is true on the
    measurement **and false on the control**. A control that fails by arithmetic is refused: one
    whose values copy the measurement's, one in which two measured names take the same value while
    they differ in the measurement (the baseline put into both sides of the rule, ``x <= x / 5``),
    or one that repeats a measured float or list unchanged (a quantity the null does not
    re-measure belongs in ``given``, the constants both sides share).
``sanity``
    An identity or invariance of the implementation (a permuted network computes the same
    function, a batched ensemble equals the loop). No control; shown apart and never counted as
    a reproduction.

A chapter creates one :class:`Claims` register and calls :meth:`Claims.check` once per claim::

    claims = Claims("preliminaries")
    claims.check("prelim.mlp_beats_linear",
                 statement="An MLP beats a linear classifier on MNIST-1D",
                 paper="MNIST-1D README: MLP about 68%, logistic regression about 32%",
                 rule="test_acc >= chance + 0.3",
                 values={"test_acc": 0.68}, given={"chance": 0.1},
                 control=("logistic regression, same data", {"test_acc": 0.32}))

Quantities that vary from run to run are passed as lists of replicates, and the rule compares
them through their spread (``min(effect) > max(null)``, or ``mean``/``sd`` of the replicates).

A claim that does not hold is recorded as ``FAILED`` and shown at the claim as a plain statement
(what was expected, what was measured, the control, the seed); the notebook goes on, so a reader's
build always produces a site. ``make test`` fails on a failed claim (``book/_tools/claims_gate.py``
reads the results files), and so does :meth:`Claims.check` itself when ``GTLIB_STRICT_CLAIMS=1``.
A claim that honestly does not reproduce passes ``reason=(text, rule, values)``: its *measured
reason* as a rule of its own. It is a *documented non-reproduction* only if that reason rule
holds on this run; otherwise it is ``FAILED`` too. Every check rewrites
``GTLIB_RESULTS_DIR/<chapter>.json``, which holds each claim's rule, values, control and reason,
so anyone can re-evaluate every outcome from the file alone (:func:`reevaluate`).
"""

from __future__ import annotations

import ast
import html
import json
import math
import os
import re
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .config import settings

__all__ = [
    # recording claims
    "Claim",
    "ClaimFailed",
    "Claims",
    "RuleError",
    "evaluate_rule",
    "margin",
    # reading results (the reproduction report, the claims gate)
    "claims_table_html",
    "control_refusal",
    "failure_text",
    "load_results",
    "reevaluate",
    "shown_status",
    "sweep_dir",
    "sweep_entries",
    "verdict_html",
]


_ID = re.compile(r"^[a-z0-9]+(\.[a-z0-9_]+)+$")
_SLUG = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
KINDS = ("effect", "sanity")
STATUSES = ("reproduced", "documented non-reproduction", "passed", "FAILED")


class ClaimFailed(AssertionError):
    """A claim did not hold in this run (raised only when ``GTLIB_STRICT_CLAIMS=1``)."""


class RuleError(ValueError):
    """A rule that is not allowed, refers to an unknown name, or does not give a bool."""


# -- the rule evaluator --------------------------------------------------------------------------
def _mean(xs) -> float:
    xs = list(xs)
    if not xs:
        raise RuleError("mean() of an empty list")
    return sum(xs) / len(xs)


def _sd(xs) -> float:
    """Sample standard deviation (n - 1 in the denominator) of replicates."""
    xs = list(xs)
    if len(xs) < 2:
        raise RuleError("sd() needs at least two replicates")
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


_FUNCS = {
    "abs": abs,
    "min": min,
    "max": max,
    "all": all,
    "any": any,
    "len": len,
    "sum": sum,
    "mean": _mean,
    "sd": _sd,
}
_CMPOPS = {
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}
_MAX_RULE = 500
_MAX_EXPONENT = (
    64  # a rule compares measured values: it needs powers such as n ** 0.5
)
_MAX_BITS = 2**16  # the largest integer a rule may build (about 20,000 digits)
_MAX_STEPS = 1_000_000  # comprehension items one rule may visit (a rule is a check, not a job)
_MAX_DEPTH = 32  # the deepest nesting of lists/dicts a claim's value may have
# The Python a rule may use: arithmetic, comparisons, boolean logic, conditional expressions,
# indexing and slicing, list/tuple literals, simple comprehensions, and calls of _FUNCS.
_ALLOWED = (
    ast.Expression,
    ast.BoolOp,
    ast.And,
    ast.Or,
    ast.UnaryOp,
    ast.Not,
    ast.USub,
    ast.UAdd,
    ast.BinOp,
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.FloorDiv,
    ast.Mod,
    ast.Pow,
    ast.Compare,
    ast.Lt,
    ast.LtE,
    ast.Gt,
    ast.GtE,
    ast.Eq,
    ast.NotEq,
    ast.In,
    ast.NotIn,
    ast.IfExp,
    ast.Call,
    ast.Name,
    ast.Load,
    ast.Store,
    ast.Constant,
    ast.List,
    ast.Tuple,
    ast.Subscript,
    ast.Slice,
    ast.GeneratorExp,
    ast.ListComp,
    ast.comprehension,
)


def _pow(a, b):
    if isinstance(b, (int, float)) and abs(b) > _MAX_EXPONENT:
        raise RuleError(f"exponents above {_MAX_EXPONENT} are not allowed in a rule")
    if (
        isinstance(a, int)
        and isinstance(b, int)
        and b > 0
        and abs(a).bit_length() * b > _MAX_BITS
    ):
        raise RuleError(
            f"the rule builds a number of more than {_MAX_BITS} bits; a rule "
            "compares measured values, it does not compute towers of powers"
        )
    return a**b


def _mul(a, b):
    if isinstance(a, (str, list)) or isinstance(b, (str, list)):
        raise RuleError("repeating a list or string is not allowed in a rule")
    return a * b


_GUARDS = {
    "__pow": _pow,
    "__mul": _mul,
}  # names a rule cannot spell (it may not use "__")


def _counted():
    """An iterator wrapper for a rule's comprehensions that stops after _MAX_STEPS items in all
    (nested loops over a few hundred values would otherwise run for hours)."""
    left = [_MAX_STEPS]

    def counted(items):
        for item in items:
            left[0] -= 1
            if left[0] < 0:
                raise RuleError(
                    f"the rule's comprehensions take more than {_MAX_STEPS} steps; "
                    "compute the value in the chapter and name it in values"
                )
            yield item

    return counted


class _Lists(ast.NodeTransformer):
    """Tuples in a rule are lists (``(a, b) == [a, b]`` as a reader expects); ``**`` and ``*``
    go through :func:`_pow` and :func:`_mul`, which refuse towers of powers and repeated lists,
    and a comprehension's items through a counter (a rule compares values; it must not run for
    minutes)."""

    def visit_Tuple(self, node):
        return ast.copy_location(
            ast.List([self.visit(e) for e in node.elts], ast.Load()), node
        )

    def visit_comprehension(self, node):
        node = self.generic_visit(node)
        node.iter = ast.copy_location(
            ast.Call(ast.Name("__iter", ast.Load()), [node.iter], []), node.iter
        )
        return node

    def visit_BinOp(self, node):
        node = self.generic_visit(node)
        guard = {ast.Pow: "__pow", ast.Mult: "__mul"}.get(type(node.op))
        if guard is None:
            return node
        call = ast.Call(ast.Name(guard, ast.Load()), [node.left, node.right], [])
        return ast.copy_location(call, node)


def _validated(tree: ast.AST) -> ast.AST:
    """Refuse anything but the small subset of Python a rule is written in (no attributes, no
    imports, no calls but those of :data:`_FUNCS`, no constants but numbers, strings, bools and
    None), so a rule can only compare values."""
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise RuleError(f"{type(node).__name__} is not allowed in a rule")
        if isinstance(node, ast.Constant) and not (
            node.value is None or isinstance(node.value, (bool, int, float, str))
        ):
            raise RuleError(f"constant {node.value!r} is not allowed in a rule")
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCS:
                name = (
                    node.func.id
                    if isinstance(node.func, ast.Name)
                    else ast.unparse(node.func)
                )
                raise RuleError(
                    f"call of {name!r} is not allowed in a rule "
                    f"(allowed: {sorted(_FUNCS)})"
                )
            if node.keywords:
                raise RuleError("keyword arguments are not allowed in a rule")
        if isinstance(node, ast.Name) and node.id.startswith("__"):
            raise RuleError(f"name {node.id!r} is not allowed in a rule")
        if isinstance(node, ast.comprehension) and (
            node.is_async or not isinstance(node.target, ast.Name)
        ):
            raise RuleError(
                "only simple 'for name in values' comprehensions are allowed in a rule"
            )
    return _Lists().visit(tree)


def _ev(node: ast.AST, env: dict) -> Any:
    """The value of a validated rule (or part of one) on ``env``: Python's own ``eval`` with no
    builtins but the rule functions."""
    expr = node if isinstance(node, ast.Expression) else ast.Expression(node)
    code = compile(ast.fix_missing_locations(expr), "<rule>", "eval")
    scope = {**env, **_FUNCS, **_GUARDS, "__iter": _counted(), "__builtins__": {}}
    try:
        return eval(code, scope)  # noqa: S307 - the tree was validated by _validated
    except NameError as exc:
        raise RuleError(
            f"unknown name {exc.name!r} (the rule can use only {sorted(env)})"
        ) from None


def evaluate_rule(rule: str, values: dict) -> bool:
    """Evaluate a claim's rule on named values, allowing only a small, safe subset of Python.

    Allowed: the names in ``values`` (and comprehension variables), numbers, strings,
    comparisons, ``+ - * / // % **``, ``and``/``or``/``not``, ``x if c else y``, indexing and
    slicing, list literals, ``for`` comprehensions, and calls of ``abs``, ``min``, ``max``,
    ``all``, ``any``, ``len``, ``sum``, ``mean`` and ``sd`` (the sample standard deviation of
    replicates). Nothing else: no attributes, no other calls, no imports.

    Parameters
    ----------
    rule : str
        The rule, e.g. ``"rel_drop >= 0.40"``.
    values : dict
        Name -> value (numbers, bools, strings, and lists or dicts of those).

    Returns
    -------
    bool
        The rule's outcome.

    Raises
    ------
    RuleError
        If the rule uses anything not allowed, names a value that is not given, fails to
        evaluate, or gives anything but a ``bool``.
    """
    if not isinstance(rule, str) or not rule.strip():
        raise RuleError(f"rule must be a non-empty str, got {rule!r}")
    if len(rule) > _MAX_RULE:
        raise RuleError(
            f"rule is {len(rule)} characters long; keep it under {_MAX_RULE}"
        )
    if not isinstance(values, dict):
        raise RuleError(f"values must be a dict, got {type(values).__name__}")
    for key, value in values.items():
        if key in _FUNCS:
            raise RuleError(
                f"values[{key!r}]: a value may not take the name of a rule function "
                f"({sorted(_FUNCS)})"
            )
        _finite_or_raise(value, f"values[{key!r}]")
    try:
        tree = ast.parse(rule.strip(), mode="eval")
    except SyntaxError as exc:
        raise RuleError(
            f"rule {rule!r} is not a valid expression: {exc.msg}"
        ) from None
    try:
        out = _ev(_validated(tree), values)
    except RuleError:
        raise
    except (
        Exception
    ) as exc:  # an error of the values (index, type, division by zero...)
        raise RuleError(
            f"rule {rule!r} failed on values {values!r}: {type(exc).__name__}: {exc}"
        ) from None
    if not isinstance(out, bool):
        raise RuleError(
            f"rule {rule!r} gave {out!r} ({type(out).__name__}), not a bool"
        )
    return out


# -- values ---------------------------------------------------------------------------------------
def _finite_or_raise(value: Any, where: str, depth: int = 0) -> None:
    """Refuse NaN and infinities anywhere in a rule's value (a NaN compares false both ways, so a
    rule such as ``not (x > 1)`` would hold on it)."""
    if depth > 20:
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise RuleError(
            f"{where} is {value!r}: a rule's values must be finite numbers"
        )
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _finite_or_raise(v, f"{where}[{i}]", depth + 1)
    elif isinstance(value, dict):
        for k, v in value.items():
            _finite_or_raise(v, f"{where}[{k!r}]", depth + 1)
    elif (
        hasattr(value, "dtype")
        and hasattr(value, "tolist")
        and not isinstance(value, (str, bytes))
    ):
        _finite_or_raise(
            value.tolist()
            if not hasattr(value, "detach")
            else value.detach().cpu().tolist(),
            where,
            depth + 1,
        )


def _clean(value: Any, where: str, depth: int = 0) -> Any:
    """JSON-safe plain Python copy of a measured value; reject what a rule cannot use."""
    if depth > _MAX_DEPTH:
        raise ValueError(
            f"{where.split('[')[0]} nests lists/dicts more than {_MAX_DEPTH} deep "
            f"(at {where[:120]}...): a claim's values are numbers or short lists"
        )
    if hasattr(value, "detach"):  # torch tensor
        value = value.detach().cpu()
    if hasattr(value, "tolist") and not isinstance(
        value, (str, bytes)
    ):  # numpy array / scalar
        value = value.tolist()
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(
                f"{where} is {value!r}: a claim's values must be finite numbers"
            )
        return value
    if isinstance(value, (list, tuple)):
        return [_clean(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, (str, int)):
                raise TypeError(
                    f"{where} has a key {k!r} of type {type(k).__name__}; use str keys"
                )
            out[str(k)] = _clean(v, f"{where}[{k!r}]", depth + 1)
        return out
    raise TypeError(
        f"{where} is a {type(value).__name__}; a claim's values must be numbers, bools, "
        "strings, or lists/dicts of those"
    )


def _clean_values(values: Any, where: str) -> dict:
    if not isinstance(values, dict) or not values:
        raise TypeError(
            f"{where} must be a non-empty dict of named measured values, got {values!r}"
        )
    out = {}
    for k, v in values.items():
        if not isinstance(k, str) or not k.isidentifier():
            raise ValueError(
                f"{where} key {k!r} must be a Python identifier (the rule refers to it)"
            )
        out[k] = _clean(v, f"{where}[{k!r}]")
    return out


# -- refusing controls that fail by arithmetic ----------------------------------------------------
def _has_float(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, float):
        return True
    if isinstance(v, list):
        return any(_has_float(x) for x in v)
    if isinstance(v, dict):
        return any(_has_float(x) for x in v.values())
    return False


def control_refusal(
    values: dict, control_values: dict, given: dict | None = None
) -> str:
    """Why a control fails by arithmetic rather than by measurement ('' if it does not).

    A control is refused when (1) its values are a copy of the measurement's; (2) two measured
    names take the same value in the control while they differ in the measurement (the baseline
    put into both sides of the rule: ``matched = naive`` makes ``matched <= naive / 5`` false
    whatever was measured); or (3) a measured float, or list, is repeated unchanged (the null did
    not re-measure it: declare it in ``given``). Whole numbers and bools are exempt from (2) and
    (3): counts and flags coincide honestly. (4) A constant in ``given`` that is the control's
    own measurement (a measured float of the control, or the mean of its replicates) is refused
    too: ``tail >= random_tail + 2 * se`` with ``random_tail`` given and the random encoder as the
    control compares the control with itself. (5) A list of measured floats that sums to zero
    to rounding while the measurement's does not is a null made by construction (deviations from
    their own mean, ``x - roll(x)``): its mean is 0 whatever was measured.

    Parameters
    ----------
    values, control_values : dict
        The measurement's and the control's values, under the same names.
    given : dict, optional
        The constants both sides share.

    Returns
    -------
    str
        The reason for refusing, or ``""`` when the control is a measurement.
    """
    if not isinstance(values, dict) or not isinstance(control_values, dict):
        raise TypeError(
            "values and control_values must be dicts of named measured values, got "
            f"{type(values).__name__} and {type(control_values).__name__}"
        )
    if set(values) != set(control_values):
        return (
            f"the control names {sorted(control_values)}, not the measured values "
            f"{sorted(values)}: a control is the same measurement on a null experiment"
        )
    if values == control_values:
        return "the control's values are a copy of the measurement's"
    names = sorted(values)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            ca, cb = control_values[a], control_values[b]
            if (
                ca == cb
                and values[a] != values[b]
                and (
                    _has_float(ca) or _has_float(values[a]) or _has_float(values[b])
                )
            ):
                return (
                    f"in the control, {a!r} and {b!r} take the same value ({_fmt(ca)}) while "
                    f"they differ in the measurement ({_fmt(values[a])} and {_fmt(values[b])}): "
                    "the baseline is in both sides of the rule, so the control fails by "
                    "arithmetic; measure a null experiment instead"
                )
    for k in names:
        if control_values[k] == values[k] and (
            _has_float(values[k])
            or (isinstance(values[k], list) and len(values[k]) > 1)
        ):
            return (
                f"the control repeats the measured value of {k!r} ({_fmt(values[k])}) "
                "unchanged: a quantity the null does not re-measure is a constant of both "
                "sides; pass it in given="
            )
    for k in names:
        if _sums_to_zero(control_values[k]) and not _sums_to_zero(values[k]):
            return (
                f"the control's {k!r} sums to zero ({_fmt(control_values[k])}): a list of "
                "deviations from its own mean (or x - roll(x)) has mean 0 by construction, "
                "not by measurement; measure a null experiment instead"
            )
    for g, gv in (given or {}).items():
        if not (isinstance(gv, float) and math.isfinite(gv)):
            continue
        for k, cv in control_values.items():
            seen = [cv] if isinstance(cv, float) else []
            if (
                isinstance(cv, list)
                and cv
                and all(_num(x) for x in cv)
                and _has_float(cv)
            ):
                seen.append(sum(cv) / len(cv))
            if any(abs(gv - c) <= 1e-12 * max(1.0, abs(c)) for c in seen):
                return (
                    f"the constant {g!r} ({_fmt(gv)}) in given is the control's own "
                    f"measurement of {k!r}: the rule then compares the control with itself, "
                    "so it fails by arithmetic; measure a second null instead (another "
                    "draw of the null experiment)"
                )
    return ""


def _sums_to_zero(v: Any) -> bool:
    """A list of two or more measured floats whose sum is zero to rounding."""
    if not (
        isinstance(v, list)
        and len(v) > 1
        and all(_num(x) for x in v)
        and _has_float(v)
    ):
        return False
    size = sum(abs(x) for x in v)
    return size > 0 and abs(sum(v)) <= 1e-9 * size


# -- margins --------------------------------------------------------------------------------------
def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _margin(node: ast.AST, env: dict) -> tuple[float, str]:
    """Signed relative slack of a rule: positive where it holds, negative where it fails, with
    the tightest comparison written out (``inf`` where no numeric comparison decides it)."""
    if isinstance(node, ast.Expression):
        return _margin(node.body, env)
    if isinstance(node, ast.BoolOp):
        is_and = isinstance(node.op, ast.And)
        parts, decided = [], False
        for v in node.values:
            try:
                parts.append(_margin(v, env))
            except Exception:
                if decided:  # Python's short circuit never evaluates this operand
                    continue
                raise
            if not decided and bool(_ev(v, env)) != is_and:
                decided = True
        pick = min if is_and else max
        return pick(parts, key=lambda p: p[0])
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        m, text = _margin(node.operand, env)
        return -m, f"not ({text})"
    if isinstance(node, ast.Compare) and all(
        type(op) in (ast.Lt, ast.LtE, ast.Gt, ast.GtE) for op in node.ops
    ):
        left = _ev(node.left, env)
        best, decided = (math.inf, ""), False
        for op, comp in zip(node.ops, node.comparators):
            try:
                right = _ev(comp, env)
                ok = _CMPOPS[type(op)](left, right)
            except Exception:
                if (
                    decided
                ):  # a chain stops at its first false comparison, as in Python
                    break
                raise
            decided = decided or not ok
            if not (_num(left) and _num(right)):
                part = (math.inf if ok else -math.inf, "")
            else:
                diff = (
                    (right - left)
                    if isinstance(op, (ast.Lt, ast.LtE))
                    else (left - right)
                )
                scale = max(abs(left), abs(right), 1e-12)
                sym = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}[
                    type(op)
                ]
                part = (
                    diff / scale,
                    f"{_fmt(float(left))} {sym} {_fmt(float(right))}",
                )
            best = min(best, part, key=lambda p: p[0])
            left = right
        return best
    out = _ev(node, env)
    return (math.inf if out else -math.inf), ""


def margin(rule: str, values: dict) -> tuple[float | None, str]:
    """How far a rule is from flipping on these values.

    For each numeric comparison ``a <= b`` (or ``<``, ``>``, ``>=``) of the rule the relative slack
    is :math:`(b - a) / \\max(|a|, |b|)`; ``and`` takes the smallest slack, ``or`` the largest,
    ``not`` the opposite. The result is positive when the rule holds and negative when it fails.

    Parameters
    ----------
    rule : str
        A rule, as for :func:`evaluate_rule`.
    values : dict
        Name -> value.

    Returns
    -------
    (float or None, str)
        The relative slack and the comparison that sets it (e.g. ``"1.31 >= 1.25"``); ``None``
        when no numeric comparison decides the rule (a bool, ``==``, ``all(...)``).
    """
    evaluate_rule(rule, values)  # validates the rule and the values
    m, text = _margin(_validated(ast.parse(rule.strip(), mode="eval")), values)
    return (None, "") if math.isinf(m) else (m, text)


# -- the register ---------------------------------------------------------------------------------
@dataclass
class Claim:
    """One checked claim (the fields of the results JSON).

    Parameters
    ----------
    id : str
        The claim's id, ``<chapter>.<name>``.
    kind : str
        ``"effect"`` (a finding of a paper) or ``"sanity"`` (a check of the implementation).
    statement : str
        The claim in words.
    paper : str
        The source of the claim (author, year, figure or section).
    rule : str
        The rule, a Python expression over ``values``.
    values : dict
        The measured values the rule reads.
    control : dict | None
        For an effect: the control's name, rule and values (the rule must fail on them).
    holds : bool
        Whether the rule held on ``values``.
    control_holds : bool | None
        Whether the rule held on the control's values (None for a sanity check).
    status : str
        One of ``STATUSES``.
    explanation : str, default ''
        Why a documented non-reproduction does not reproduce.
    given : dict, optional
        Settings of the run (scale, seed, versions).
    reason : dict | None, default None
        For a documented non-reproduction: the rule that explains it and its values.
    refused : str, default ''
        Why the control was refused, if it was.
    """

    id: str
    kind: str
    statement: str
    paper: str
    rule: str
    values: dict
    control: dict | None
    holds: bool
    control_holds: bool | None
    status: str
    explanation: str = ""
    given: dict = field(default_factory=dict)
    reason: dict | None = None
    refused: str = ""


def _env(values: dict, given: dict | None) -> dict:
    return {**(given or {}), **values}


def _outcome(
    kind: str,
    rule: str,
    values: dict,
    control: dict | None,
    given: dict | None = None,
) -> tuple[bool, bool | None]:
    on_values = evaluate_rule(rule, _env(values, given))
    if kind == "sanity":
        return on_values, None
    on_control = evaluate_rule(rule, _env(control["values"], given))
    refused = control_refusal(values, control["values"], given)
    return (on_values and not on_control and not refused), on_control


def _reason_holds(reason: dict | None, values: dict, given: dict | None) -> bool:
    if not reason:
        return False
    return evaluate_rule(
        reason["rule"], {**_env(values, given), **reason.get("values", {})}
    )


def _status(kind: str, holds: bool, reason_holds: bool) -> str:
    if holds:
        return "reproduced" if kind == "effect" else "passed"
    return "documented non-reproduction" if reason_holds else "FAILED"


_DECLARED_KEYS = ("statement", "paper", "rule", "kind", "control", "reason")


def _check_declarations(declared: Any) -> dict:
    """Validate a chapter's claims table (see :class:`Claims`) and fill in its defaults."""
    if declared is None:
        return {}
    if not isinstance(declared, dict):
        raise TypeError(
            f"declared must be a dict of claim id -> declaration, got "
            f"{type(declared).__name__}"
        )
    out = {}
    for id, entry in declared.items():
        if not isinstance(id, str) or not _ID.fullmatch(id):
            raise ValueError(
                f"declared ids must look like 'chapter.claim_name', got {id!r}"
            )
        if not isinstance(entry, dict):
            raise TypeError(
                f"declared[{id!r}] must be a dict, got {type(entry).__name__}"
            )
        unknown = sorted(set(entry) - set(_DECLARED_KEYS))
        if unknown:
            raise ValueError(
                f"declared[{id!r}] has unknown key(s) {unknown}; the keys are "
                f"{list(_DECLARED_KEYS)}"
            )
        for key in ("statement", "paper", "rule"):
            if not isinstance(entry.get(key), str) or not entry[key].strip():
                raise TypeError(
                    f"declared[{id!r}][{key!r}] must be a non-empty str, got "
                    f"{entry.get(key)!r}"
                )
        kind = entry.get("kind", "effect")
        if kind not in KINDS:
            raise ValueError(
                f"declared[{id!r}]['kind'] must be one of {KINDS}, got {kind!r}"
            )
        control = entry.get("control")
        if kind == "effect" and (
            not isinstance(control, str) or not control.strip()
        ):
            raise TypeError(
                f"declared[{id!r}] is an effect: its 'control' must name the measured "
                f"null (a non-empty str), got {control!r}"
            )
        if kind == "sanity" and control is not None:
            raise ValueError(
                f"declared[{id!r}] is a sanity check: it takes no control"
            )
        reason = entry.get("reason")
        if reason is not None and (
            not isinstance(reason, (tuple, list))
            or len(reason) != 2
            or not all(isinstance(r, str) and r.strip() for r in reason)
        ):
            raise TypeError(
                f"declared[{id!r}]['reason'] must be (text, rule), got {reason!r}"
            )
        for rule in [entry["rule"]] + ([reason[1]] if reason else []):
            try:
                _validated(ast.parse(rule.strip(), mode="eval"))
            except SyntaxError as err:
                raise RuleError(
                    f"declared[{id!r}] has a rule that does not parse: {rule!r}"
                ) from err
        out[id] = {
            "statement": entry["statement"].strip(),
            "paper": entry["paper"].strip(),
            "rule": entry["rule"].strip(),
            "kind": kind,
            "control": control.strip() if control else None,
            "reason": (reason[0].strip(), reason[1].strip()) if reason else None,
        }
    return out


def _filler(id: str, given: Any):
    """Fill a declared text's ``{name}`` fields from ``given`` (settings of the run, such as a
    width or an epoch, that the text names)."""

    def fill(text: str) -> str:
        if "{" not in text:
            return text
        try:
            return text.format(**(given if isinstance(given, dict) else {}))
        except (KeyError, IndexError, ValueError) as err:
            raise ValueError(
                f"the declared text of claim {id!r} names a field that given= does "
                f"not supply ({err}): {text!r}"
            ) from None

    return fill


_ACTIVE: dict[str, str] = {}  # results file -> token of the register that owns it


class Claims:
    """The claims register of one chapter.

    Parameters
    ----------
    chapter : str
        The chapter's slug (its notebook is ``book/<slug>.ipynb``).
    results_dir : path, optional
        Where to write ``<slug>.json`` (default: ``GTLIB_RESULTS_DIR``).
    declared : dict, optional
        The chapter's claims table: for each claim id, a dict with its ``statement``, ``paper``
        and ``rule``, its ``kind`` (default ``"effect"``), the name of its ``control`` (the
        measured null; for an effect) and, for a claim that may not reproduce, its ``reason`` as
        ``(text, rule)``. The statement, the control's name and the reason's text may name
        fields, ``{width}``, that :meth:`check`'s ``given`` fills. A chapter that declares its
        claims passes only the measured values to :meth:`check`, so the page shows the
        experiment, not the bookkeeping; every claim it checks must then be declared.

    Notes
    -----
    Creating a new register for the same chapter and folder (re-running a chapter's first cell)
    retires the old one: checking a claim through a retired register raises, so two registers can
    never silently overwrite each other's file.
    """

    def __init__(
        self,
        chapter: str,
        results_dir: str | Path | None = None,
        declared: dict | None = None,
    ):
        if not isinstance(chapter, str) or not _SLUG.fullmatch(chapter):
            raise ValueError(
                f"chapter must be a lowercase slug like 'mode-connectivity', got {chapter!r}"
            )
        if results_dir is not None and (
            not isinstance(results_dir, (str, os.PathLike))
            or not str(results_dir).strip()
        ):
            raise TypeError(
                f"results_dir must be a folder path (str or pathlib.Path) or None, got "
                f"{results_dir!r}"
            )
        self.declared = _check_declarations(declared)
        s = settings()
        self.chapter = chapter
        self.scale = s.scale
        self.seed = s.seed
        self.results_dir = (
            Path(results_dir) if results_dir is not None else s.results_dir
        )
        if self.results_dir.exists() and not self.results_dir.is_dir():
            raise ValueError(
                f"results_dir {str(self.results_dir)!r} exists and is not a folder"
            )
        self.claims: list[Claim] = []
        self.path = self.results_dir / f"{chapter}.json"
        self._token = uuid.uuid4().hex
        _ACTIVE[str(self.path.resolve())] = self._token
        self._write()

    def check(
        self,
        id: str,
        *,
        values: dict,
        statement: str | None = None,
        paper: str | None = None,
        rule: str | None = None,
        control: tuple[str, dict] | dict | None = None,
        given: dict | None = None,
        kind: str | None = None,
        reason: tuple | dict | None = None,
        **unknown,
    ) -> None:
        """Evaluate a claim's rule on this run's values (and its control's); record it.

        Parameters
        ----------
        id : str
            The claim's id, e.g. ``"prelim.mlp_beats_linear"``.
        values : dict
            This run's measured values, by name (a quantity that varies from run to run as a
            list of replicates).
        statement, paper : str
            One line each: the claim, and what the paper reports (with where it reports it).
            Taken from the register's ``declared`` table when the claim is declared there (and
            then not passed here), as are ``rule``, ``kind`` and the control's name.
        rule : str
            A boolean expression over the names in ``values`` and ``given`` (see
            :func:`evaluate_rule`).
        control : (str, dict) or dict, optional
            Required for an ``effect``, forbidden for a ``sanity`` check: a one-line name of the
            measured null and its values under the same names as ``values`` (for a declared
            claim, the values alone). Refused (the claim fails) if it fails by arithmetic
            (:func:`control_refusal`).
        given : dict, optional
            Constants both sides share (sizes, layer counts, chance level, a threshold derived on
            the page); the rule sees them on the measurement and on the control alike.
        kind : {"effect", "sanity"}, default "effect"
            See the module docstring.
        reason : (str, str) or (str, str, dict) or dict, optional
            For a claim that may honestly not reproduce: the measured reason as ``(text, rule)`` or
            ``(text, rule, values)`` (for a declared claim, its values alone). The reason's rule sees ``values``, ``given`` and its own
            values. A claim that does not hold is a documented non-reproduction only if the reason
            rule holds; otherwise it is ``FAILED``.

        Returns
        -------
        None
            A failed claim is shown at the claim as a plain statement; the chapter's claims table
            (:meth:`table`) shows them all.

        Raises
        ------
        ClaimFailed
            Only when ``GTLIB_STRICT_CLAIMS=1``, if the claim is ``FAILED`` (it is recorded first).
        """
        if unknown:
            extra = sorted(unknown)
            hint = (
                " (nonreproduction= became reason=(text, rule, values): the measured reason "
                "is a rule that must hold)"
                if "nonreproduction" in unknown
                else ""
            )
            raise TypeError(
                f"check() got unexpected keyword argument(s) {extra}{hint}"
            )
        statement, paper, rule, kind, control, reason = self._declared_parts(
            id, statement, paper, rule, kind, control, reason, given
        )
        if _ACTIVE.get(str(self.path.resolve())) != self._token:
            raise RuntimeError(
                f"this claims register for {self.chapter!r} was replaced by a newer one "
                "for the same chapter; use the newest register"
            )
        for name, val in (
            ("id", id),
            ("statement", statement),
            ("paper", paper),
            ("rule", rule),
        ):
            if not isinstance(val, str) or not val.strip():
                raise TypeError(f"{name} must be a non-empty str, got {val!r}")
        if not _ID.fullmatch(id):
            raise ValueError(f"id must look like 'chapter.claim_name', got {id!r}")
        if any(c.id == id for c in self.claims):
            raise ValueError(f"claim {id!r} was already checked in this chapter")
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        clean = _clean_values(values, "values")
        consts = _clean_values(given, "given") if given is not None else {}
        both = sorted(set(consts) & set(clean))
        if both:
            raise ValueError(
                f"given and values share the name(s) {both}: a name is either measured "
                "(values) or a constant of both sides (given)"
            )
        ctrl = None
        if kind == "effect":
            if control is None:
                raise ValueError(
                    f"claim {id!r} is an effect and needs control=(name, values): the "
                    "measured null, the same measurement with the paper's mechanism "
                    "removed"
                )
            if (
                not isinstance(control, (tuple, list))
                or len(control) != 2
                or not isinstance(control[0], str)
                or not control[0].strip()
            ):
                raise TypeError(
                    f"control must be a (name, values) pair with a non-empty name, got {control!r}"
                )
            ctrl = {
                "name": control[0].strip(),
                "values": _clean_values(control[1], "control values"),
            }
            if set(ctrl["values"]) != set(clean):
                raise ValueError(
                    f"control values must name exactly the measured values "
                    f"{sorted(clean)}, got {sorted(ctrl['values'])} (constants go in "
                    "given=)"
                )
        elif control is not None:
            raise ValueError(f"claim {id!r} is a sanity check: it takes no control")
        why = None
        if reason is not None:
            if (
                not isinstance(reason, (tuple, list))
                or len(reason) not in (2, 3)
                or not all(isinstance(r, str) and r.strip() for r in reason[:2])
            ):
                raise TypeError(
                    "reason must be (text, rule) or (text, rule, values) with a "
                    f"non-blank text and rule, got {reason!r}"
                )
            why = {
                "text": reason[0].strip(),
                "rule": reason[1].strip(),
                "values": (
                    _clean_values(reason[2], "reason values")
                    if len(reason) == 3
                    else {}
                ),
            }
            shadow = sorted(set(why["values"]) & (set(clean) | set(consts)))
            if shadow:
                raise ValueError(
                    f"reason values share the name(s) {shadow} with values or given: "
                    "the reason rule sees those already; name its own measurements "
                    "apart"
                )
        holds, control_holds = _outcome(
            kind, rule, clean, ctrl, consts
        )  # raises before recording
        reason_holds = (
            _reason_holds(why, clean, consts) if why else False
        )  # validates it too
        if why is not None:
            why["holds"] = reason_holds
        refused = control_refusal(clean, ctrl["values"], consts) if ctrl else ""
        # a refused control is a construction error, not a non-reproduction: no reason excuses it
        status = "FAILED" if refused else _status(kind, holds, reason_holds)
        claim = Claim(
            id=id,
            kind=kind,
            statement=statement.strip(),
            paper=paper.strip(),
            rule=rule.strip(),
            values=clean,
            control=ctrl,
            holds=holds,
            control_holds=control_holds,
            status=status,
            explanation=why["text"] if (why and not holds) else "",
            given=consts,
            reason=why,
            refused=refused,
        )
        self.claims.append(claim)
        self._write()
        if status == "FAILED":
            message = failure_text(asdict(claim), self.seed, self.scale)
            if os.environ.get("GTLIB_STRICT_CLAIMS", "").strip() == "1":
                raise ClaimFailed(message)
            _show_failure(asdict(claim), self.seed, self.scale)
        else:
            _show_verdict(asdict(claim))

    def _declared_parts(
        self, id, statement, paper, rule, kind, control, reason, given
    ):
        """A declared claim's statement, paper, rule, kind, control and reason, from the table."""
        entry = self.declared.get(id) if isinstance(id, str) else None
        if entry is None:
            if self.declared:
                raise ValueError(
                    f"claim {id!r} is not in this chapter's declared claims table "
                    "(declare it there: its statement, paper, rule and control)"
                )
            return (
                statement,
                paper,
                rule,
                ("effect" if kind is None else kind),
                control,
                reason,
            )
        passed = [
            n
            for n, v in (
                ("statement", statement),
                ("paper", paper),
                ("rule", rule),
                ("kind", kind),
            )
            if v is not None
        ]
        if passed:
            raise TypeError(
                f"claim {id!r} is declared in the chapter's claims table: pass its "
                f"values only, not {passed}"
            )
        fill = _filler(id, given)
        if entry["control"] is not None:
            if not isinstance(control, dict):
                raise TypeError(
                    f"control of claim {id!r} must be the values (a dict) of its "
                    f"declared null ({entry['control']}), got {control!r}"
                )
            control = (fill(entry["control"]), control)
        if entry["reason"] is None:
            if reason is not None:
                raise ValueError(
                    f"claim {id!r} declares no reason; declare its text and rule"
                )
        elif reason is None or isinstance(reason, dict):
            text, rule_ = entry["reason"]
            reason = (fill(text), rule_) + (() if reason is None else (reason,))
        else:
            raise TypeError(
                f"reason of claim {id!r} must be the values (a dict) of its declared "
                f"reason rule, got {reason!r}"
            )
        return (
            fill(entry["statement"]),
            entry["paper"],
            entry["rule"],
            entry["kind"],
            control,
            reason,
        )

    # -- output ---------------------------------------------------------------------------------
    def as_dict(self) -> dict:
        """The register as the results JSON holds it."""
        return {
            "chapter": self.chapter,
            "scale": self.scale,
            "seed": self.seed,
            "claims": [asdict(c) for c in self.claims],
        }

    def _write(self) -> None:
        self.results_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(
            f".{self.path.name}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp"
        )
        try:
            tmp.write_text(json.dumps(self.as_dict(), indent=2, allow_nan=False))
            os.replace(tmp, self.path)
        finally:
            if tmp.exists():
                tmp.unlink()

    def table(self):
        """The chapter's claims as HTML tables, effects and sanity checks apart, with the
        committed seed sweep's counts where a record exists (:func:`sweep_entries`)."""
        from IPython.display import HTML

        return HTML(self._repr_html_())

    def _repr_html_(self) -> str:
        claims = self.as_dict()["claims"]
        return claims_table_html(claims, sweep=sweep_entries(self.chapter, claims))

    def __repr__(self) -> str:
        n = len(self.claims)
        return f"<Claims of {self.chapter!r}: {n} claim{'s' if n != 1 else ''}>"


def reevaluate(claim: dict) -> tuple[bool, bool | None]:
    """Re-evaluate a stored claim (a dict from a results JSON) from its rule and values alone.

    Parameters
    ----------
    claim : dict
        A claim dict from a results JSON.

    Returns
    -------
    (holds, control_holds)
        As :meth:`Claims.check` computed them; compare with the stored fields.

    Raises
    ------
    TypeError, ValueError
        If ``claim`` is not such a dict: ``kind`` one of ``KINDS``, a ``rule`` str, a ``values``
        dict, and for an effect a ``control`` dict with its ``values``.
    """
    _check_stored(claim, "claim")
    return _outcome(
        claim["kind"],
        claim["rule"],
        claim["values"],
        claim.get("control"),
        claim.get("given") or {},
    )


def _check_stored(
    claim: Any, where: str, keys: tuple = ("kind", "rule", "values")
) -> None:
    """Refuse a stored claim that lacks what re-evaluating or showing it needs."""
    if not isinstance(claim, dict):
        raise TypeError(
            f"{where} must be a claim dict (as in a results JSON), got "
            f"{type(claim).__name__}"
        )
    missing = [k for k in keys if k not in claim]
    if missing:
        raise ValueError(f"{where} lacks the field(s) {missing} of a stored claim")
    kind = claim.get("kind", "effect")
    if kind not in KINDS:
        raise ValueError(f"{where}['kind'] must be one of {KINDS}, got {kind!r}")
    if not isinstance(claim["rule"], str):
        raise TypeError(
            f"{where}['rule'] must be a str, got {type(claim['rule']).__name__}"
        )
    if not isinstance(claim["values"], dict):
        raise TypeError(
            f"{where}['values'] must be a dict, got {type(claim['values']).__name__}"
        )
    if kind == "effect" and "kind" in keys:
        ctrl = claim.get("control")
        if not isinstance(ctrl, dict) or not isinstance(ctrl.get("values"), dict):
            raise ValueError(
                f"{where} is an effect: its 'control' must be a dict with 'values', got "
                f"{ctrl!r}"
            )


# -- a failed claim, in words ---------------------------------------------------------------------
def failure_text(
    claim: dict, seed: int | None = None, scale: str | None = None
) -> str:
    """One paragraph saying what was expected, what was measured, the control, and where.

    Parameters
    ----------
    claim : dict
        The claim, a dict as in the results JSON.
    seed : int | None, default None
        The seed of the run (shown if given).
    scale : str | None, default None
        The scale of the run (shown if given).

    Returns
    -------
    str
        The paragraph.
    """
    names = _rule_names(claim["rule"])

    def shown(vals):
        return (
            "; ".join(f"{k} = {_fmt(v)}" for k, v in vals.items() if k in names)
            or "(none named by the rule)"
        )

    parts = [f"Claim {claim['id']} did not hold ({claim['statement']})."]
    parts.append(
        f"Expected: {claim['rule']}"
        + (f", with {shown(claim['given'])}" if claim.get("given") else "")
        + "."
    )
    env = _env(claim["values"], claim.get("given"))
    try:
        _, tight = margin(claim["rule"], env)
        on_values = evaluate_rule(claim["rule"], env)
    except (
        Exception
    ):  # a stored claim whose rule no longer evaluates: say what is known
        tight, on_values = "", None
    parts.append(
        f"Measured: {shown(claim['values'])}"
        + (f" (closest comparison: {tight})" if tight else "")
        + ("; the rule is false on this run's values" if on_values is False else "")
        + "."
    )
    ctrl = claim.get("control")
    if ctrl:
        parts.append(
            f"Control ({ctrl['name']}): {shown(ctrl['values'])}; the rule is "
            + (
                "true there too, so the check cannot tell the effect from its control."
                if claim.get("control_holds")
                else "false there."
            )
        )
    if claim.get("refused"):
        parts.append(f"The control is refused: {claim['refused']}.")
    r = claim.get("reason")
    if r:
        if r.get("holds"):
            parts.append(
                f"Its stated reason ({r['text']}: {r['rule']}, with {_reason_values(claim)}) "
                "holds, but a claim whose control is refused is not a documented "
                "non-reproduction."
            )
        else:
            parts.append(
                f"Its stated reason ({r['text']}) does not hold either: {r['rule']} is "
                f"false, with {_reason_values(claim)}."
            )
    where = []
    if scale is not None:
        where.append(f"scale {scale}")
    if seed is not None:
        where.append(f"seed {seed}")
    where.append(f"torch {_torch_version()}")
    where.append(_machine())
    parts.append("Run: " + ", ".join(where) + ".")
    return " ".join(parts)


def _reason_values(claim: dict) -> str:
    """The values a claim's reason rule names (its own, the measured ones and the given ones)."""
    r = claim.get("reason") or {}
    env = {
        **(claim.get("given") or {}),
        **claim.get("values", {}),
        **(r.get("values") or {}),
    }
    names = _rule_names(r.get("rule", ""))
    return (
        "; ".join(f"{k} = {_fmt(v)}" for k, v in env.items() if k in names)
        or "no values"
    )


def _torch_version() -> str:
    try:
        import torch

        return torch.__version__
    except Exception:  # pragma: no cover - torch is a dependency
        return "unknown"


def _machine() -> str:
    import platform

    return f"{platform.machine()} CPU, {os.cpu_count()} cores"


def _show_failure(claim: dict, seed: int, scale: str) -> None:
    """Show a failed claim where it was checked: a short box, not a traceback."""
    try:
        from IPython import get_ipython
        from IPython.display import HTML, display
    except ImportError:  # pragma: no cover
        print(failure_text(claim, seed, scale))
        return
    if get_ipython() is None:
        print(failure_text(claim, seed, scale))
        return
    display(
        HTML(
            "<div class='gtlib-claim-failed' role='alert'><strong>Claim not reproduced "
            "on this run.</strong> "
            + html.escape(failure_text(claim, seed, scale))
            + "</div>"
        )
    )


def verdict_html(claim: dict) -> str:
    """A claim's verdict in one short block, shown where the claim is checked.

    Its status on this run, its statement, its rule and the values the rule reads, on the
    measurement and on the control.

    Parameters
    ----------
    claim : dict
        The claim, a dict as in the results JSON.

    Returns
    -------
    str
        HTML.
    """
    _, cls = shown_status(claim)
    label = {"reproduced": "reproduced on this run"}.get(
        claim["status"], STATUS_LABEL[claim["status"]]
    )
    names = _rule_names(claim["rule"])

    def vals(values):
        return _values_html(values, names, "; ")

    out = (
        f"<div class='gtlib-claim' role='note'><span class='gtlib-status gtlib-{cls}'>"
        f"{html.escape(label)}</span> <code>{html.escape(claim['id'])}</code>: "
        f"{html.escape(claim['statement'])}<br><small>Rule <code>{html.escape(claim['rule'])}"
        f"</code>: {vals(claim['values'])}"
    )
    ctrl = claim.get("control")
    if ctrl:
        out += (
            f"<br>Null ({html.escape(ctrl['name'])}): {vals(ctrl['values'])}; the rule "
            f"{'holds' if claim.get('control_holds') else 'fails'} there"
        )
    r = claim.get("reason")
    if r and not claim.get("holds"):
        out += f"<br>Reason: {html.escape(r['text'])} (<code>{html.escape(r['rule'])}</code>)"
    return out + "</small></div>"


def _show_verdict(claim: dict) -> None:
    """Show a claim's verdict where it was checked, in a notebook (nothing elsewhere)."""
    try:
        from IPython import get_ipython
        from IPython.display import HTML, display
    except ImportError:  # pragma: no cover
        return
    if get_ipython() is not None:
        display(HTML(verdict_html(claim)))


def shown_status(claim: dict, swept: dict | None = None) -> tuple[str, str]:
    """The status a reader sees, and its CSS class (``ok``, ``nr`` or ``fail``).

    An effect reproduced in this run is shown as reproduced only if the committed seed sweep
    (``swept``: the claim's entry of the sweep record) saw it hold at every seed; one that held
    at fewer is *not robust*, not a reproduction.

    Parameters
    ----------
    claim : dict
        The claim, a dict as in the results JSON.
    swept : dict | None, default None
        The claim's entry of the sweep record, if any.

    Returns
    -------
    tuple of str
        ``(status, css_class)``.
    """
    status = claim["status"]
    if status == "FAILED":
        return "FAILED", "fail"
    if status == "documented non-reproduction":
        return "not reproduced (documented)", "nr"
    if status == "passed":
        return "passed", "ok"
    if swept is None:
        return "reproduced (not swept)", "ok"
    k, n = swept["holds"], swept["n"]
    if k < n:
        return f"not robust: holds at {k} of {n} seeds", "nr"
    return f"reproduced ({k} of {n} seeds)", "ok"


# -- rendering ------------------------------------------------------------------------------------
STATUS_LABEL = {
    "reproduced": "reproduced",
    "passed": "passed",
    "documented non-reproduction": "not reproduced (documented)",
    "FAILED": "FAILED",
}


def _fmt(v: Any, depth: int = 0) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list):
        items = [_fmt(x, depth + 1) for x in v[:8]]
        return "[" + ", ".join(items) + (", …" if len(v) > 8 else "") + "]"
    if isinstance(v, dict):
        items = [f"{k}: {_fmt(x, depth + 1)}" for k, x in list(v.items())[:8]]
        return "{" + ", ".join(items) + (", …" if len(v) > 8 else "") + "}"
    return str(v)


def _values_html(
    values: dict | None, names: set | None = None, sep: str = "<br>"
) -> str:
    if not values:
        return ""
    return sep.join(
        f"<code>{html.escape(k)}</code> = {html.escape(_fmt(v))}"
        for k, v in values.items()
        if names is None or k in names
    )


def _rule_names(rule: str) -> set:
    try:
        return {
            n.id
            for n in ast.walk(ast.parse(rule, mode="eval"))
            if isinstance(n, ast.Name)
        }
    except SyntaxError:
        return set()


def _sweep_html(entry: dict | None) -> str:
    if entry is None:
        return "not in the sweep record"
    out = f"holds at {entry['holds']} of {entry['n']} seeds"
    if entry.get("worst_margin") is not None:
        out += (
            f"<br><small>worst margin {entry['worst_margin']:+.1%} at seed "
            f"{entry['worst_seed']}: {html.escape(entry.get('worst_text', ''))}</small>"
        )
    return out


def _one_table(
    claims: list[dict],
    chapter_col: bool,
    effects: bool,
    full: dict | None = None,
    sweep: dict | None = None,
) -> str:
    heads = (["chapter"] if chapter_col else []) + ["claim", "rule", "this run"]
    heads += ["control (measured null)"] if effects else []
    heads += ["status"]
    heads += ["seed sweep"] if sweep is not None else []
    heads += ["full scale (recorded run)"] if full is not None else []
    rows = []
    for c in claims:
        names = _rule_names(c["rule"])
        label, cls = shown_status(c, None if sweep is None else sweep.get(c["id"]))
        given = _values_html(c.get("given"), names)
        cells = ([html.escape(c.get("chapter", ""))] if chapter_col else []) + [
            f"<code>{html.escape(c['id'])}</code><br>{html.escape(c['statement'])}"
            f"<br><small>Paper: {html.escape(c['paper'])}</small>",
            f"<code>{html.escape(c['rule'])}</code>"
            + (f"<br><small>given: {given}</small>" if given else ""),
            _values_html(c["values"], names),
        ]
        if effects:
            ctrl = c.get("control") or {}
            cells.append(
                f"<em>{html.escape(ctrl.get('name', ''))}</em><br>"
                + _values_html(ctrl.get("values"), names)
                + (
                    f"<br><small>rule on control: {ctrl and c.get('control_holds')}</small>"
                    if ctrl
                    else ""
                )
                + (
                    f"<br><small>refused: {html.escape(c['refused'])}</small>"
                    if c.get("refused")
                    else ""
                )
            )
        note = ""
        r = c.get("reason")
        if r and not c.get("holds"):
            note = (
                f"<br><small>Reason: {html.escape(r['text'])} (<code>{html.escape(r['rule'])}"
                f"</code>: {'holds' if r.get('holds') else 'does not hold'}, with "
                f"{html.escape(_reason_values(c))})</small>"
            )
        cells.append(
            f"<span class='gtlib-status gtlib-{cls}'>{html.escape(label)}</span>"
            + note
        )
        if sweep is not None:
            cells.append(_sweep_html(sweep.get(c["id"])))
        if full is not None:
            f = full.get(c["id"])
            cells.append(
                "not in the record"
                if f is None
                else _values_html(f.get("values"), names)
                + "<br>"
                + STATUS_LABEL.get(
                    f.get("status", ""), html.escape(str(f.get("status")))
                )
            )
        rows.append(
            "<tr>"
            + "".join(
                f"<td data-label='{html.escape(h)}'>{x}</td>"
                for h, x in zip(heads, cells)
            )
            + "</tr>"
        )
    head = "".join(f"<th>{h}</th>" for h in heads)
    return (
        f'<div class="gtlib-table-wrap" tabindex="0" role="region" aria-label="table (scrolls sideways)"><table class="gtlib-claims"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def claims_table_html(
    claims: list[dict],
    chapter_col: bool = False,
    full: dict | None = None,
    sweep: dict | None = None,
) -> str:
    """Render claims (dicts as in the results JSON) as HTML: effects, then sanity checks apart.

    Each effect shows its rule, this run's values, the control's name and values, and its status;
    the checks of the implementation (``kind="sanity"``) follow in a table of their own. Used by
    every chapter's claims table and by the site's reproduction report. ``full`` (claim id ->
    claim dict of a recorded full-scale run) adds a column with that run's values and status;
    ``sweep`` (claim id -> the claim's entry of the committed seed-sweep record) adds the number
    of seeds at which the claim held and its worst margin, and an effect that held at fewer than
    all of them is shown as not robust.

    Parameters
    ----------
    claims : list[dict]
        Claims as dicts, as in the results JSON.
    chapter_col : bool, default False
        Whether to add a column with each claim's chapter.
    full : dict | None, default None
        Claim id -> claim dict of a recorded full-scale run (adds a column).
    sweep : dict | None, default None
        Claim id -> the claim's entry of the seed-sweep record (adds a column).

    Returns
    -------
    str
        The HTML of the tables.
    """
    if not isinstance(claims, list):
        raise TypeError(
            f"claims must be a list of claim dicts, got {type(claims).__name__}"
        )
    if not isinstance(chapter_col, (bool, np.bool_)):
        raise TypeError(f"chapter_col must be a bool, got {chapter_col!r}")
    for name, val in (("full", full), ("sweep", sweep)):
        if val is not None and not isinstance(val, dict):
            raise TypeError(
                f"{name} must be a dict (claim id -> claim dict) or None, got "
                f"{type(val).__name__}"
            )
    for i, c in enumerate(claims):
        _check_stored(
            c,
            f"claims[{i}]",
            keys=("id", "statement", "paper", "rule", "values", "status"),
        )
    effects = [c for c in claims if c.get("kind", "effect") == "effect"]
    sanity = [c for c in claims if c.get("kind") == "sanity"]
    parts = []
    if effects:
        parts.append(
            f"<p><strong>Effects</strong> ({len(effects)}): each holds only if its rule is true "
            "on this run and false on its control, a measured null.</p>"
            + _one_table(effects, chapter_col, True, full, sweep)
        )
    if sanity:
        parts.append(
            f"<p><strong>Checks of the implementation</strong> ({len(sanity)}): identities "
            "and invariances, not reproductions.</p>"
            + _one_table(sanity, chapter_col, False, full, sweep)
        )
    if not parts:
        parts.append("<p>No claims were checked.</p>")
    return "\n".join(parts)


def sweep_dir() -> Path:
    """Where the committed seed-sweep records are.

    Where the committed seed-sweep records are: ``GTLIB_SWEEP_DIR``, else ``book/_data/sweep``
    of the checkout gtlib is imported from.

    Returns
    -------
    Path
        The folder.
    """
    env = os.environ.get("GTLIB_SWEEP_DIR", "").strip()
    return (
        Path(env)
        if env
        else Path(__file__).resolve().parents[1] / "book" / "_data" / "sweep"
    )


def sweep_entries(chapter: str, claims: list[dict] | None = None) -> dict | None:
    """The committed sweep record's entries of ``chapter``.

    The committed sweep record's entries of ``chapter`` (claim id -> entry), or ``None`` when
    there is no record. With ``claims``, an entry is kept only if its rule and statement are the
    claim's own (a stale entry says nothing about the claim as it now stands).

    Parameters
    ----------
    chapter : str
        The chapter's slug.
    claims : list[dict] | None, default None
        The chapter's claims (dicts); entries whose rule or statement differ are dropped.

    Returns
    -------
    dict or None
        Claim id -> entry, or None when there is no record.
    """
    path = sweep_dir() / f"{chapter}.json"
    if not path.is_file():
        return None
    record = json.loads(path.read_text())
    entries = {e["id"]: e for e in record.get("claims", [])}
    if claims is not None:
        current = {c["id"]: c for c in claims}
        entries = {
            k: e
            for k, e in entries.items()
            if k in current
            and e.get("rule") == current[k]["rule"]
            and e.get("statement") == current[k]["statement"]
        }
    return entries


def load_results(results_dir: str | Path | None = None) -> list[dict]:
    """Every ``<chapter>.json`` in ``results_dir`` (default ``GTLIB_RESULTS_DIR``), sorted by name.

    Parameters
    ----------
    results_dir : str | Path | None, default None
        The folder (default ``GTLIB_RESULTS_DIR``).

    Returns
    -------
    list[dict]
        One dict per chapter file.
    """
    if results_dir is not None and (
        not isinstance(results_dir, (str, os.PathLike))
        or not str(results_dir).strip()
    ):
        raise TypeError(
            f"results_dir must be a folder path (str or pathlib.Path) or None, got "
            f"{results_dir!r}"
        )
    d = Path(results_dir) if results_dir is not None else settings().results_dir
    if not d.exists():
        return []
    if not d.is_dir():
        raise ValueError(f"results_dir {str(d)!r} is not a folder")
    out = []
    for p in sorted(d.glob("*.json")):
        try:
            out.append(json.loads(p.read_text()))
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise ValueError(
                f"results file {p} in results_dir is not valid JSON ({e}); delete it "
                "or re-run its chapter"
            ) from None
    return out
