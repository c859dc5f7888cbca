"""Claims: how a chapter states what a paper found and checks it on this run's measurements.

A claim is a **rule**, a short boolean expression over named values measured in this run. gtlib
evaluates the rule itself, so no outcome is typed by hand. Every claim has a *kind*:

``effect`` (the default)
    A result of the paper. It names a **control**: the same values measured on the baseline that
    the paper's effect is defined against (the linear model, a single run, the null predictor,
    initialization...). The claim holds only if the rule is true on the measurement **and false on
    the control**; a rule that is also true on the control cannot tell the effect from its
    control, and the claim fails.
``sanity``
    An identity or invariance of the implementation (a permuted network computes the same
    function, a batched ensemble equals the loop). No control; shown apart and never counted as
    a reproduction.

A chapter creates one :class:`Claims` register and calls :meth:`Claims.check` once per claim::

    claims = Claims("preliminaries")
    claims.check("prelim.mlp_beats_linear",
                 statement="An MLP beats a linear classifier on MNIST-1D",
                 paper="MNIST-1D README: MLP about 68%, logistic regression about 32%",
                 rule="test_acc >= 0.5",
                 values={"test_acc": 0.68},
                 control=("logistic regression, same data", {"test_acc": 0.32}))

A claim that does not hold raises :class:`ClaimFailed` (which fails the notebook, nbval and the site
build) unless the chapter passes ``nonreproduction="the measured reason"``: it is then recorded
and shown as a *documented non-reproduction*. Every check rewrites
``GTLIB_RESULTS_DIR/<chapter>.json``, which holds each claim's rule, values and control values, so
anyone can re-evaluate every outcome from the file alone (:func:`reevaluate`).
"""
from __future__ import annotations

import ast
import html
import json
import math
import os
import re
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .config import settings

__all__ = ["Claim", "ClaimFailed", "Claims", "RuleError", "claims_table_html", "evaluate_rule",
           "load_results", "reevaluate"]

_ID = re.compile(r"^[a-z0-9]+(\.[a-z0-9_]+)+$")
_SLUG = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
KINDS = ("effect", "sanity")
STATUSES = ("reproduced", "documented non-reproduction", "passed", "FAILED")


class ClaimFailed(AssertionError):
    """A claim that the chapter expects to hold did not hold in this run."""


class RuleError(ValueError):
    """A rule that is not allowed, refers to an unknown name, or does not give a bool."""


# -- the rule evaluator --------------------------------------------------------------------------
_FUNCS = {"abs": abs, "min": min, "max": max, "all": all, "any": any, "len": len, "sum": sum}
_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b,
           ast.Mod: lambda a, b: a % b, ast.Pow: lambda a, b: a ** b}
_CMPOPS = {ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
           ast.GtE: lambda a, b: a >= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
           ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
_MAX_RULE = 500
_MAX_STEPS = 1_000_000  # comprehension iterations one rule may take (a rule is a check, not a job)
_BUDGET = "<steps left>"  # env key no rule name can spell
_MAX_BITS = 2**16  # the largest integer a rule may build (about 20,000 digits)
_MAX_DEPTH = 32  # the deepest nesting of lists/dicts a claim's value may have


def _ev(node: ast.AST, env: dict) -> Any:
    if isinstance(node, ast.Expression):
        return _ev(node.body, env)
    if isinstance(node, ast.Constant):
        if isinstance(node.value, (bool, int, float, str)) or node.value is None:
            return node.value
        raise RuleError(f"constant {node.value!r} is not allowed in a rule")
    if isinstance(node, ast.Name):
        if node.id not in env:
            raise RuleError(f"unknown name {node.id!r} (the rule can use only "
                            f"{sorted(k for k in env if k != _BUDGET)})")
        return env[node.id]
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            out = True
            for v in node.values:
                out = _ev(v, env)
                if not out:
                    return out
            return out
        out = False
        for v in node.values:
            out = _ev(v, env)
            if out:
                return out
        return out
    if isinstance(node, ast.UnaryOp):
        v = _ev(node.operand, env)
        if isinstance(node.op, ast.Not):
            return not v
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return +v
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _ev(node.left, env), _ev(node.right, env)
        if isinstance(node.op, ast.Pow) and isinstance(right, (int, float)) and abs(right) > 64:
            raise RuleError("exponents above 64 are not allowed in a rule")
        if (isinstance(node.op, ast.Pow) and isinstance(left, int) and isinstance(right, int)
                and right > 0 and abs(left).bit_length() * right > _MAX_BITS):
            raise RuleError(f"the rule builds a number of more than {_MAX_BITS} bits; a rule "
                            "compares measured values, it does not compute towers of powers")
        if isinstance(node.op, ast.Mult) and (isinstance(left, (str, list)) or isinstance(right, (str, list))):
            raise RuleError("repeating a list or string is not allowed in a rule")
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.Compare):
        left = _ev(node.left, env)
        for op, comp in zip(node.ops, node.comparators):
            if type(op) not in _CMPOPS:
                raise RuleError(f"comparison {type(op).__name__} is not allowed in a rule")
            right = _ev(comp, env)
            if not _CMPOPS[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _ev(node.body, env) if _ev(node.test, env) else _ev(node.orelse, env)
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCS:
            name = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
            raise RuleError(f"call of {name!r} is not allowed in a rule (allowed: {sorted(_FUNCS)})")
        if node.keywords:
            raise RuleError("keyword arguments are not allowed in a rule")
        args = [_ev(a, env) for a in node.args]
        return _FUNCS[node.func.id](*args)
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_ev(e, env) for e in node.elts]
    if isinstance(node, ast.Subscript):
        container = _ev(node.value, env)
        if isinstance(node.slice, ast.Slice):
            s = node.slice
            parts = [None if p is None else _ev(p, env) for p in (s.lower, s.upper, s.step)]
            return container[slice(*parts)]
        return container[_ev(node.slice, env)]
    if isinstance(node, (ast.GeneratorExp, ast.ListComp)):
        return _comprehension(node, env)
    raise RuleError(f"{type(node).__name__} is not allowed in a rule")


def _comprehension(node, env: dict) -> list:
    out: list = []

    def loop(i: int, scope: dict) -> None:
        if i == len(node.generators):
            out.append(_ev(node.elt, scope))
            return
        gen = node.generators[i]
        if gen.is_async or not isinstance(gen.target, ast.Name):
            raise RuleError("only simple 'for name in values' comprehensions are allowed in a rule")
        for item in _ev(gen.iter, scope):
            budget = scope[_BUDGET]
            budget[0] -= 1
            if budget[0] < 0:
                raise RuleError(f"the rule's comprehensions take more than {_MAX_STEPS} steps; "
                                "compute the value in the chapter and name it in values")
            inner = {**scope, gen.target.id: item}
            if all(_ev(cond, inner) for cond in gen.ifs):
                loop(i + 1, inner)

    loop(0, env)
    return out


def evaluate_rule(rule: str, values: dict) -> bool:
    """Evaluate a claim's rule on named values, allowing only a small, safe subset of Python.

    Allowed: the names in ``values`` (and comprehension variables), numbers, strings,
    comparisons, ``+ - * / // % **``, ``and``/``or``/``not``, ``x if c else y``, indexing and
    slicing, list literals, ``for`` comprehensions, and calls of ``abs``, ``min``, ``max``,
    ``all``, ``any``, ``len`` and ``sum``. Nothing else: no attributes, no other calls, no imports.

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
        raise RuleError(f"rule is {len(rule)} characters long; keep it under {_MAX_RULE}")
    if not isinstance(values, dict):
        raise RuleError(f"values must be a dict, got {type(values).__name__}")
    for key, value in values.items():
        _finite_or_raise(value, f"values[{key!r}]")
    try:
        tree = ast.parse(rule.strip(), mode="eval")
    except SyntaxError as exc:
        raise RuleError(f"rule {rule!r} is not a valid expression: {exc.msg}") from None
    try:
        out = _ev(tree, {**values, _BUDGET: [_MAX_STEPS]})
    except RuleError:
        raise
    except Exception as exc:  # an error of the values (index, type, division by zero...)
        raise RuleError(f"rule {rule!r} failed on values {values!r}: "
                        f"{type(exc).__name__}: {exc}") from None
    if not isinstance(out, bool):
        raise RuleError(f"rule {rule!r} gave {out!r} ({type(out).__name__}), not a bool")
    return out


# -- values ---------------------------------------------------------------------------------------
def _finite_or_raise(value: Any, where: str, depth: int = 0) -> None:
    """Refuse NaN and infinities anywhere in a rule's value (a NaN compares false both ways, so a
    rule such as ``not (x > 1)`` would hold on it)."""
    if depth > 20:
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise RuleError(f"{where} is {value!r}: a rule's values must be finite numbers")
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _finite_or_raise(v, f"{where}[{i}]", depth + 1)
    elif isinstance(value, dict):
        for k, v in value.items():
            _finite_or_raise(v, f"{where}[{k!r}]", depth + 1)
    elif hasattr(value, "dtype") and hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        _finite_or_raise(value.tolist() if not hasattr(value, "detach") else
                         value.detach().cpu().tolist(), where, depth + 1)


def _clean(value: Any, where: str, depth: int = 0) -> Any:
    """JSON-safe plain Python copy of a measured value; reject what a rule cannot use."""
    if depth > _MAX_DEPTH:
        raise ValueError(f"{where.split('[')[0]} nests lists/dicts more than {_MAX_DEPTH} deep "
                         f"(at {where[:120]}...): a claim's values are numbers or short lists")
    if hasattr(value, "detach"):  # torch tensor
        value = value.detach().cpu()
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):  # numpy array / scalar
        value = value.tolist()
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where} is {value!r}: a claim's values must be finite numbers")
        return value
    if isinstance(value, (list, tuple)):
        return [_clean(v, f"{where}[{i}]", depth + 1) for i, v in enumerate(value)]
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, (str, int)):
                raise TypeError(f"{where} has a key {k!r} of type {type(k).__name__}; use str keys")
            out[str(k)] = _clean(v, f"{where}[{k!r}]", depth + 1)
        return out
    raise TypeError(f"{where} is a {type(value).__name__}; a claim's values must be numbers, bools, "
                    "strings, or lists/dicts of those")


def _clean_values(values: Any, where: str) -> dict:
    if not isinstance(values, dict) or not values:
        raise TypeError(f"{where} must be a non-empty dict of named measured values, got {values!r}")
    out = {}
    for k, v in values.items():
        if not isinstance(k, str) or not k.isidentifier():
            raise ValueError(f"{where} key {k!r} must be a Python identifier (the rule refers to it)")
        out[k] = _clean(v, f"{where}[{k!r}]")
    return out


# -- the register ---------------------------------------------------------------------------------
@dataclass
class Claim:
    """One checked claim (the fields of the results JSON)."""

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


def _outcome(kind: str, rule: str, values: dict, control: dict | None) -> tuple[bool, bool | None]:
    on_values = evaluate_rule(rule, values)
    if kind == "sanity":
        return on_values, None
    on_control = evaluate_rule(rule, control["values"])
    return (on_values and not on_control), on_control


_ACTIVE: dict[str, str] = {}  # results file -> token of the register that owns it


class Claims:
    """The claims register of one chapter.

    Parameters
    ----------
    chapter : str
        The chapter's slug (its notebook is ``book/<slug>.ipynb``).
    results_dir : path, optional
        Where to write ``<slug>.json`` (default: ``GTLIB_RESULTS_DIR``).

    Notes
    -----
    Creating a new register for the same chapter and folder (re-running a chapter's first cell)
    retires the old one: checking a claim through a retired register raises, so two registers can
    never silently overwrite each other's file.
    """

    def __init__(self, chapter: str, results_dir: str | Path | None = None):
        if not isinstance(chapter, str) or not _SLUG.fullmatch(chapter):
            raise ValueError(f"chapter must be a lowercase slug like 'mode-connectivity', got {chapter!r}")
        if results_dir is not None and (not isinstance(results_dir, (str, os.PathLike))
                                        or not str(results_dir).strip()):
            raise TypeError(f"results_dir must be a folder path (str or pathlib.Path) or None, got "
                            f"{results_dir!r}")
        s = settings()
        self.chapter = chapter
        self.scale = s.scale
        self.seed = s.seed
        self.results_dir = Path(results_dir) if results_dir is not None else s.results_dir
        if self.results_dir.exists() and not self.results_dir.is_dir():
            raise ValueError(f"results_dir {str(self.results_dir)!r} exists and is not a folder")
        self.claims: list[Claim] = []
        self.path = self.results_dir / f"{chapter}.json"
        self._token = uuid.uuid4().hex
        _ACTIVE[str(self.path.resolve())] = self._token
        self._write()

    def check(self, id: str, *, statement: str, paper: str, rule: str, values: dict,
              control: tuple[str, dict] | None = None, kind: str = "effect",
              nonreproduction: str | None = None) -> None:
        """Evaluate a claim's rule on this run's values (and its control's); record it.

        Parameters
        ----------
        id : str
            The claim's id, e.g. ``"prelim.mlp_beats_linear"``.
        statement, paper : str
            One line each: the claim, and what the paper reports (with where it reports it).
        rule : str
            A boolean expression over the names in ``values`` (see :func:`evaluate_rule`).
        values : dict
            This run's measured values, by name.
        control : (str, dict), optional
            Required for an ``effect``, forbidden for a ``sanity`` check: a one-line name of the
            control and its values under the same names.
        kind : {"effect", "sanity"}
            See the module docstring.
        nonreproduction : str, optional
            If given, a claim that does not hold is recorded as a documented non-reproduction
            with this explanation (the measured reason) instead of raising.

        Returns
        -------
        None
            The chapter's claims table (:meth:`table`) shows the claims.

        Raises
        ------
        ClaimFailed
            If the claim does not hold and no ``nonreproduction`` is given; the claim is recorded
            first, so the results file shows the failure.
        """
        if _ACTIVE.get(str(self.path.resolve())) != self._token:
            raise RuntimeError(f"this claims register for {self.chapter!r} was replaced by a newer one "
                               "for the same chapter; use the newest register")
        for name, val in (("id", id), ("statement", statement), ("paper", paper), ("rule", rule)):
            if not isinstance(val, str) or not val.strip():
                raise TypeError(f"{name} must be a non-empty str, got {val!r}")
        if not _ID.fullmatch(id):
            raise ValueError(f"id must look like 'chapter.claim_name', got {id!r}")
        if any(c.id == id for c in self.claims):
            raise ValueError(f"claim {id!r} was already checked in this chapter")
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        if nonreproduction is not None and (not isinstance(nonreproduction, str)
                                            or not nonreproduction.strip()):
            raise ValueError("nonreproduction must be a non-blank explanation (the measured reason), "
                             f"got {nonreproduction!r}")
        clean = _clean_values(values, "values")
        ctrl = None
        if kind == "effect":
            if control is None:
                raise ValueError(f"claim {id!r} is an effect and needs control=(name, values): the "
                                 "baseline the paper's effect is defined against, measured in this run")
            if (not isinstance(control, (tuple, list)) or len(control) != 2
                    or not isinstance(control[0], str) or not control[0].strip()):
                raise TypeError(f"control must be a (name, values) pair with a non-empty name, got {control!r}")
            ctrl = {"name": control[0].strip(), "values": _clean_values(control[1], "control values")}
        elif control is not None:
            raise ValueError(f"claim {id!r} is a sanity check: it takes no control")
        holds, control_holds = _outcome(kind, rule, clean, ctrl)  # raises before anything is recorded
        if holds:
            status = "reproduced" if kind == "effect" else "passed"
        elif nonreproduction:
            status = "documented non-reproduction"
        else:
            status = "FAILED"
        claim = Claim(id=id, kind=kind, statement=statement.strip(), paper=paper.strip(),
                      rule=rule.strip(), values=clean, control=ctrl, holds=holds,
                      control_holds=control_holds, status=status,
                      explanation="" if holds else (nonreproduction or "").strip())
        self.claims.append(claim)
        self._write()
        if status == "FAILED":
            why = ("the rule is also true on the control "
                   f"({ctrl['name']}), so the check cannot tell the effect from its control"
                   if control_holds else "the rule is false on this run's values")
            raise ClaimFailed(f"claim {id} does not hold: {why}. rule: {rule}; values: {clean}"
                              + (f"; control values: {ctrl['values']}" if ctrl else "")
                              + f" (scale={self.scale}, seed={self.seed})")

    # -- output ---------------------------------------------------------------------------------
    def as_dict(self) -> dict:
        """The register as the results JSON holds it."""
        return {"chapter": self.chapter, "scale": self.scale, "seed": self.seed,
                "claims": [asdict(c) for c in self.claims]}

    def _write(self) -> None:
        self.results_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")
        try:
            tmp.write_text(json.dumps(self.as_dict(), indent=2, allow_nan=False))
            os.replace(tmp, self.path)
        finally:
            if tmp.exists():
                tmp.unlink()

    def table(self):
        """The chapter's claims as HTML tables, effects and sanity checks apart."""
        from IPython.display import HTML

        return HTML(claims_table_html(self.as_dict()["claims"]))

    def _repr_html_(self) -> str:
        return claims_table_html(self.as_dict()["claims"])

    def __repr__(self) -> str:
        n = len(self.claims)
        return f"<Claims of {self.chapter!r}: {n} claim{'s' if n != 1 else ''}>"


def reevaluate(claim: dict) -> tuple[bool, bool | None]:
    """Re-evaluate a stored claim (a dict from a results JSON) from its rule and values alone.

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
    return _outcome(claim["kind"], claim["rule"], claim["values"], claim.get("control"))


def _check_stored(claim: Any, where: str, keys: tuple = ("kind", "rule", "values")) -> None:
    """Refuse a stored claim that lacks what re-evaluating or showing it needs."""
    if not isinstance(claim, dict):
        raise TypeError(f"{where} must be a claim dict (as in a results JSON), got "
                        f"{type(claim).__name__}")
    missing = [k for k in keys if k not in claim]
    if missing:
        raise ValueError(f"{where} lacks the field(s) {missing} of a stored claim")
    kind = claim.get("kind", "effect")
    if kind not in KINDS:
        raise ValueError(f"{where}['kind'] must be one of {KINDS}, got {kind!r}")
    if not isinstance(claim["rule"], str):
        raise TypeError(f"{where}['rule'] must be a str, got {type(claim['rule']).__name__}")
    if not isinstance(claim["values"], dict):
        raise TypeError(f"{where}['values'] must be a dict, got {type(claim['values']).__name__}")
    if kind == "effect" and "kind" in keys:
        ctrl = claim.get("control")
        if not isinstance(ctrl, dict) or not isinstance(ctrl.get("values"), dict):
            raise ValueError(f"{where} is an effect: its 'control' must be a dict with 'values', got "
                             f"{ctrl!r}")


# -- rendering ------------------------------------------------------------------------------------
STATUS_LABEL = {"reproduced": "reproduced", "passed": "passed",
                "documented non-reproduction": "not reproduced (documented)", "FAILED": "FAILED"}


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


def _values_html(values: dict | None, names: set | None = None) -> str:
    if not values:
        return ""
    return "<br>".join(f"<code>{html.escape(k)}</code> = {html.escape(_fmt(v))}"
                       for k, v in values.items() if names is None or k in names)


def _rule_names(rule: str) -> set:
    try:
        return {n.id for n in ast.walk(ast.parse(rule, mode="eval")) if isinstance(n, ast.Name)}
    except SyntaxError:
        return set()


def _one_table(claims: list[dict], chapter_col: bool, effects: bool,
               full: dict | None = None) -> str:
    heads = (["chapter"] if chapter_col else []) + ["claim", "rule", "this run"]
    heads += ["control"] if effects else []
    heads += ["status"]
    heads += ["full scale (recorded run)"] if full is not None else []
    rows = []
    for c in claims:
        names = _rule_names(c["rule"])
        status = c["status"]
        cls = {"reproduced": "ok", "passed": "ok", "FAILED": "fail"}.get(status, "nr")
        cells = ([html.escape(c.get("chapter", ""))] if chapter_col else []) + [
            f"<code>{html.escape(c['id'])}</code><br>{html.escape(c['statement'])}"
            f"<br><small>Paper: {html.escape(c['paper'])}</small>",
            f"<code>{html.escape(c['rule'])}</code>",
            _values_html(c["values"], names)]
        if effects:
            ctrl = c.get("control") or {}
            cells.append(f"<em>{html.escape(ctrl.get('name', ''))}</em><br>"
                         + _values_html(ctrl.get("values"), names)
                         + (f"<br><small>rule on control: {ctrl and c.get('control_holds')}</small>"
                            if ctrl else ""))
        cells.append(f"<span class='gtlib-status gtlib-{cls}'>{STATUS_LABEL.get(status, html.escape(status))}</span>"
                     + (f"<br><small>{html.escape(c['explanation'])}</small>" if c.get("explanation") else ""))
        if full is not None:
            f = full.get(c["id"])
            cells.append("not in the record" if f is None else
                         _values_html(f.get("values"), names) + "<br>"
                         + STATUS_LABEL.get(f.get("status", ""), html.escape(str(f.get("status")))))
        rows.append("<tr>" + "".join(f"<td>{x}</td>" for x in cells) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in heads)
    return (f'<div class="gtlib-table-wrap" tabindex="0" role="region" aria-label="table (scrolls sideways)"><table class="gtlib-claims"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


def claims_table_html(claims: list[dict], chapter_col: bool = False,
                      full: dict | None = None) -> str:
    """Render claims (dicts as in the results JSON) as HTML: effects, then sanity checks apart.

    Each effect shows its rule, this run's values, the control's name and values, and its status;
    the checks of the implementation (``kind="sanity"``) follow in a table of their own. Used by
    every chapter's claims table and by the site's reproduction report. ``full`` (claim id ->
    claim dict of a recorded full-scale run) adds a column with that run's values and status.
    """
    if not isinstance(claims, list):
        raise TypeError(f"claims must be a list of claim dicts, got {type(claims).__name__}")
    if not isinstance(chapter_col, (bool, np.bool_)):
        raise TypeError(f"chapter_col must be a bool, got {chapter_col!r}")
    if full is not None and not isinstance(full, dict):
        raise TypeError(f"full must be a dict (claim id -> claim dict) or None, got "
                        f"{type(full).__name__}")
    for i, c in enumerate(claims):
        _check_stored(c, f"claims[{i}]", keys=("id", "statement", "paper", "rule", "values",
                                               "status"))
    effects = [c for c in claims if c.get("kind", "effect") == "effect"]
    sanity = [c for c in claims if c.get("kind") == "sanity"]
    parts = []
    if effects:
        parts.append(f"<p><strong>Effects</strong> ({len(effects)}): each holds only if its rule is true "
                     "on this run and false on its control.</p>" + _one_table(effects, chapter_col, True, full))
    if sanity:
        parts.append(f"<p><strong>Checks of the implementation</strong> ({len(sanity)}): identities "
                     "and invariances, not reproductions.</p>" + _one_table(sanity, chapter_col, False, full))
    if not parts:
        parts.append("<p>No claims were checked.</p>")
    return "\n".join(parts)


def load_results(results_dir: str | Path | None = None) -> list[dict]:
    """Every ``<chapter>.json`` in ``results_dir`` (default ``GTLIB_RESULTS_DIR``), sorted by name."""
    if results_dir is not None and (not isinstance(results_dir, (str, os.PathLike))
                                    or not str(results_dir).strip()):
        raise TypeError(f"results_dir must be a folder path (str or pathlib.Path) or None, got "
                        f"{results_dir!r}")
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
            raise ValueError(f"results file {p} in results_dir is not valid JSON ({e}); delete it "
                             "or re-run its chapter") from None
    return out
