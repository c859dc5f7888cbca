"""gtlib.claims against independent references (issue 19, section 6).

The rule evaluator is compared with Python's own ``eval`` on a few thousand generated expressions
(asymmetric operands, negative numbers, ties, chained comparisons, short-circuits); the register's
outcome logic on all four (rule on values, rule on control) combinations and both kinds; value
conversion on hand-written inputs; the results file against ``json``; the tables against the
stored claims; ``load_results``/``reevaluate`` on hand-made folders and dicts.
"""
from __future__ import annotations

import json
import re
import random

import numpy as np
import pytest
import torch

from gtlib import claims as K
from gtlib.claims import (ClaimFailed, Claims, RuleError, claims_table_html, evaluate_rule,
                          load_results, reevaluate)

BASE = dict(statement="s", paper="p")
V = {"a": 3, "b": -2, "c": 2.5, "d": 0, "e": -7, "f": 1.25, "xs": [4, -1, 7, 2, -3]}


# ================================================================================================
# the evaluator against Python's eval
# ================================================================================================
def _py(rule: str, values: dict):
    # one globals dict: names must be visible inside comprehensions too
    return eval(rule, {"__builtins__": {}, "abs": abs, "min": min, "max": max, "all": all,
                       "any": any, "len": len, "sum": sum, **values})


def _gen_num(r: random.Random, depth: int) -> str:
    if depth == 0 or r.random() < 0.2:
        return r.choice(["a", "b", "c", "d", "e", "f", str(r.randint(-9, 9)),
                         f"xs[{r.randint(-5, 4)}]", "len(xs)", "sum(xs)", "min(xs)", "max(xs)",
                         "2.75", "-0.5"])
    k = r.randint(0, 9)
    x, y = _gen_num(r, depth - 1), _gen_num(r, depth - 1)
    if k <= 3:
        op = r.choice(["+", "-", "*", "/", "//", "%", "-", "//", "%"])
        return f"({x} {op} {y})"
    if k == 4:
        return f"({x}) ** {r.choice([0, 1, 2, 3, -1])}"
    if k == 5:
        return f"{r.choice(['-', '+', '- -'])}({x})"
    if k == 6:
        fn = r.choice(["abs", "min", "max"])
        return f"{fn}({x}" + ("" if r.random() < 0.3 else f", {y}") + ")"
    if k == 7:
        return f"({x} if {_gen_bool(r, depth - 1)} else {y})"
    if k == 8:
        i, j = r.randint(-5, 5), r.randint(-5, 5)
        step = r.choice(["", ":1", ":2", ":-1", ":-2", ":3"])
        sl = f"{r.choice([str(i), ''])}:{r.choice([str(j), ''])}{step}"
        return f"{r.choice(['sum', 'len'])}(xs[{sl}])"
    return f"({x} {r.choice(['and', 'or'])} {y})"


def _gen_bool(r: random.Random, depth: int) -> str:
    k = r.randint(0, 7)
    if depth == 0 or k <= 2:
        ops = ["<", "<=", ">", ">=", "==", "!="]
        parts = [_gen_num(r, max(depth - 1, 0))]
        for _ in range(r.choice([1, 1, 2, 3])):
            parts += [r.choice(ops), _gen_num(r, max(depth - 1, 0))]
        return "(" + " ".join(parts) + ")"
    if k == 3:
        return f"not {_gen_bool(r, depth - 1)}"
    if k == 4:
        parts = [_gen_bool(r, depth - 1) for _ in range(r.choice([2, 2, 3]))]
        return "(" + f" {r.choice(['and', 'or'])} ".join(parts) + ")"
    if k == 5:
        return (f"{r.choice(['all', 'any'])}(v {r.choice(['<', '<=', '>', '>=', '==', '!='])} "
                f"{_gen_num(r, depth - 1)} for v in xs)")
    if k == 6:
        return f"({_gen_num(r, depth - 1)} {r.choice(['in', 'not in'])} xs)"
    return f"({_gen_bool(r, depth - 1)} if {_gen_bool(r, depth - 1)} else {_gen_bool(r, depth - 1)})"


def _cases(kind: str, n: int, seed: int):
    r = random.Random(seed)
    out = []
    while len(out) < n:
        rule = _gen_num(r, 3) if kind == "num" else _gen_bool(r, 3)
        if len(rule) < 480:
            out.append(rule)
    return out


@pytest.mark.parametrize("seed", [11, 12])
def test_numeric_expressions_give_pythons_values(seed):
    """``(E) == r`` holds exactly when gtlib computes Python's value r of E (same float ops)."""
    checked = 0
    for expr in _cases("num", 700, seed):
        try:
            want = _py(expr, V)
        except (ZeroDivisionError, TypeError, IndexError, OverflowError):
            with pytest.raises(RuleError):
                evaluate_rule(f"({expr}) == 0", V)
            continue
        if isinstance(want, complex):
            continue
        vals = {**V, "r": want}
        assert evaluate_rule(f"({expr}) == r", vals) is True, expr
        if isinstance(want, (int, float)) and not isinstance(want, bool):
            # a value off by anything shows: r + 1 must differ, and the order must be Python's
            assert evaluate_rule(f"({expr}) < r + 1", vals) is True, expr
            assert evaluate_rule(f"({expr}) > r - 1", vals) is True, expr
        checked += 1
    assert checked > 400


@pytest.mark.parametrize("seed", [21, 22])
def test_boolean_expressions_give_pythons_outcomes(seed):
    outcomes = set()
    for rule in _cases("bool", 700, seed):
        try:
            want = _py(rule, V)
        except (ZeroDivisionError, TypeError, IndexError, OverflowError):
            with pytest.raises(RuleError):
                evaluate_rule(rule, V)
            continue
        if not isinstance(want, bool):
            with pytest.raises(RuleError, match="not a bool"):
                evaluate_rule(rule, V)
            continue
        assert evaluate_rule(rule, V) is want, rule
        outcomes.add(want)
    assert outcomes == {True, False}


@pytest.mark.parametrize("op", ["<", "<=", ">", ">=", "==", "!="])
@pytest.mark.parametrize("x,y", [(1, 2), (2, 2), (3, 2), (-1.5, -1.5), (-2.5, 1), (0, -0.0)])
def test_each_comparison_below_at_and_above_a_tie(op, x, y):
    rule = f"x {op} y"
    assert evaluate_rule(rule, {"x": x, "y": y}) is _py(rule, {"x": x, "y": y})
    rule = f"y {op} x"  # the operands' order matters
    assert evaluate_rule(rule, {"x": x, "y": y}) is _py(rule, {"x": x, "y": y})


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "//", "%", "**"])
@pytest.mark.parametrize("x,y", [(7, 3), (-7, 3), (7, -3), (-7, -3), (2, 5), (7.5, 2), (-7.5, 2),
                                 (3, 0.5), (0, 4)])
def test_each_arithmetic_operator_in_both_orders(op, x, y):
    for rule in (f"x {op} y == r", f"y {op} x == r"):
        try:
            want = _py(rule.split(" == ")[0], {"x": x, "y": y})
        except ZeroDivisionError:
            with pytest.raises(RuleError, match="ZeroDivisionError"):
                evaluate_rule(rule, {"x": x, "y": y, "r": 0})
            continue
        if isinstance(want, complex):
            continue
        assert evaluate_rule(rule, {"x": x, "y": y, "r": want}) is True, (rule, x, y)
        assert evaluate_rule(rule, {"x": x, "y": y, "r": want + 1}) is False, (rule, x, y)


@pytest.mark.parametrize("rule,expected", [
    ("1 < 2 < 3", True), ("1 < 3 < 2", False), ("3 < 1 < 4", False), ("1 < 2 > 0", True),
    ("1 < 2 > 5", False), ("2 <= 2 < 3", True), ("2 <= 2 < 2", False), ("1 == 1 == 1", True),
    ("1 == 1 == 2", False), ("0 < 5 > 3 < 4", True), ("0 < 5 > 3 < 3", False),
    ("5 > 3 > 1 > -1", True), ("5 > 3 > 4", False), ("1 != 2 != 1", True)])
def test_chained_comparisons_compare_each_neighbouring_pair(rule, expected):
    assert evaluate_rule(rule, {}) is expected is _py(rule, {})


def test_chains_and_boolean_operators_short_circuit_like_python():
    # the right-hand operands would raise (index out of range) if evaluated
    v = {"x": 1, "xs": [1]}
    assert evaluate_rule("x > 2 < xs[5]", v) is False
    assert evaluate_rule("x > 0 and x > 2 and xs[5] > 0", v) is False
    assert evaluate_rule("x > 2 or x > 0 or xs[5] > 0", v) is True
    assert evaluate_rule("(x > 0 if x > 0 else xs[5] > 0)", v) is True
    assert evaluate_rule("(xs[5] > 0 if x < 0 else x == 1)", v) is True
    with pytest.raises(RuleError):
        evaluate_rule("x > 0 < xs[5]", v)
    with pytest.raises(RuleError):
        evaluate_rule("x > 0 and xs[5] > 0", v)
    with pytest.raises(RuleError):
        evaluate_rule("x > 2 or xs[5] > 0", v)


@pytest.mark.parametrize("rule", [
    "(a and b) == -2", "(d and b) == 0", "(a or b) == 3", "(d or b) == -2", "(d or 0) == 0",
    "(a and b and c) == 2.5", "(d or 0 or e) == -7", "(a and d and e) == 0",
    "(b or a or c) == -2"])
def test_and_or_return_the_deciding_operand(rule):
    assert evaluate_rule(rule, V) is True is _py(rule, V)


@pytest.mark.parametrize("rule,expected", [
    ("not a", False), ("not d", True), ("not not a", True), ("-b == 2", True), ("+b == -2", True),
    ("-(-e) == -7", True), ("--b == -2", True), ("not (a > 2)", False), ("-a < b", True)])
def test_unary_operators(rule, expected):
    assert evaluate_rule(rule, V) is expected is _py(rule, V)


@pytest.mark.parametrize("rule", [
    "abs(b) == 2", "abs(-2.5) == 2.5", "min(a, b) == -2", "max(a, b) == 3", "min(xs) == -3",
    "max(xs) == 7", "min(a, b, e) == -7", "max(b, e, f) == 1.25", "len(xs) == 5", "len([]) == 0",
    "sum(xs) == 9", "sum(xs, 10) == 19", "sum([]) == 0", "all([])", "not any([])",
    "all([a, c])", "not all([a, d])", "any([d, b])", "not any([d, 0])", "min([c, f]) == 1.25",
    "max([c, f]) == 2.5", "len('abc') == 3", "xs[1:3] == [-1, 7]", "xs[::-1][0] == -3",
    "xs[:2] == [4, -1]", "xs[3:] == [2, -3]", "xs[::2] == [4, 7, -3]", "xs[1::2] == [-1, 2]",
    "xs[-2:] == [2, -3]", "xs[4:1:-1] == [-3, 2, 7]", "xs[-1] == -3", "xs[0] == 4",
    "[a, b] == [3, -2]", "[a, b][1] == -2", "'x' in 'xyz'", "'q' not in 'xyz'", "7 in xs",
    "5 not in xs", "d == 0 and d != None", "[x * 2 for x in xs] == [8, -2, 14, 4, -6]",
    "[x for x in xs if x > 0] == [4, 7, 2]", "[x for x in xs if x > 0 if x < 7] == [4, 2]",
    "[x + y for x in [1, 2] for y in [10, 20]] == [11, 21, 12, 22]",
    "[[x, y] for x in [1, 2] for y in [x, 3]] == [[1, 1], [1, 3], [2, 2], [2, 3]]",
    "sum(x for x in xs if x < 0) == -4", "sum(a * x for x in xs) == 27",
    "[x for x in xs][-1] == -3", "len([x for x in xs if x == 99]) == 0",
    "max(x - a for x in xs) == 4", "2 ** 3 ** 2 == 512", "-2 ** 2 == -4", "7 // -2 == -4",
    "-7 % 3 == 2", "7 % -3 == -2", "7 / 2 == 3.5", "a - b - e == 12", "a / b / f == -1.2",
    "(a if b > 0 else e) == -7", "(a if b < 0 else e) == 3", "1e3 == 1000", "'ab' + 'c' == 'abc'",
    "[1] + [2] == [1, 2]", "d == 0.0", "0.1 + 0.2 != 0.3", "3 == 3.0", "True == 1",
    "(True + True) == 2"])
def test_listed_expressions_hold_in_gtlib_and_in_python(rule):
    assert _py(rule, V) is True
    assert evaluate_rule(rule, V) is True


def test_dicts_index_by_key_and_comprehension_names_stay_local():
    v = {"d": {"train": 0.9, "test": 0.6}, "x": 5, "ys": [1, 2, 3]}
    assert evaluate_rule("d['train'] - d['test'] > 0.25", v) is True
    assert evaluate_rule("d['test'] > d['train']", v) is False
    assert evaluate_rule("'train' in d and 'val' not in d", v) is True
    # the comprehension variable shadows the value x inside, not outside
    assert evaluate_rule("[x for x in ys] == [1, 2, 3] and x == 5", v) is True
    assert evaluate_rule("all(y > x for y in ys)", v) is False
    assert evaluate_rule("all(x > y for y in ys)", v) is True
    assert evaluate_rule("[x for x in ys] == ys and x == 5", v) is True
    assert v == {"d": {"train": 0.9, "test": 0.6}, "x": 5, "ys": [1, 2, 3]}  # untouched


def test_whitespace_around_a_rule_is_ignored_and_the_rule_is_a_whole_expression():
    assert evaluate_rule("  x > 1\n", {"x": 2}) is True
    assert evaluate_rule("\tx < 1 ", {"x": 2}) is False
    for bad in ("x > 1; x < 3", "x = 1", "x > 1\nx < 3"):
        with pytest.raises(RuleError, match="not a valid expression"):
            evaluate_rule(bad, {"x": 2})


@pytest.mark.parametrize("rule", [
    "{1: 2} == d", "{1, 2} == d", "{x for x in xs} == d", "{x: 1 for x in xs} == d",
    "(y := 1) == 1", "x.real == 1", "f'{x}' == '1'", "x is None", "x is not None",
    "b'a' == x", "1j == x", "[*xs] == xs", "all(a > b for a, b in [[2, 1]])",
    "sorted(xs) == xs", "abs(x=1) == 1", "min(xs, key=abs) == 1", "sum(xs, start=1) == 2",
    "max(xs, default=5) == 1", "xs.count(1) == 1", "x @ x == 1", "x << 1 == 2",
    "x & 1 == 1", "~x == -2", "(lambda: 1)() == 1", "...", "x if x else ..."])
def test_everything_outside_the_subset_is_refused(rule):
    with pytest.raises(RuleError):
        evaluate_rule(rule, {"x": 1, "xs": [1], "d": 0})


def test_none_is_a_constant_and_comparisons_with_it_work():
    assert evaluate_rule("x == None", {"x": None}) is True
    assert evaluate_rule("x != None", {"x": 0}) is True


@pytest.mark.parametrize("value", [1, 0, 2.5, "yes", [True], None])
def test_a_rule_must_give_a_bool_not_a_truthy_value(value):
    with pytest.raises(RuleError, match="not a bool"):
        evaluate_rule("x", {"x": value})
    assert evaluate_rule("x == x", {"x": value}) is True


def test_unknown_names_are_listed_without_the_internal_budget():
    with pytest.raises(RuleError, match=r"unknown name 'z'.*\['a', 'b'\]") as info:
        evaluate_rule("z > 0", {"b": 1, "a": 2})
    assert "steps" not in str(info.value)


@pytest.mark.parametrize("rule,err", [
    ("xs[9] > 0", "IndexError"), ("x / 0 > 1", "ZeroDivisionError"), ("x // 0 > 1", "Zero"),
    ("x % 0 > 1", "Zero"), ("xs + 1 > 0", "TypeError"), ("d['q'] > 0", "KeyError"),
    ("min([]) > 0", "ValueError")])
def test_errors_of_the_values_become_rule_errors_naming_the_cause(rule, err):
    with pytest.raises(RuleError, match=err):
        evaluate_rule(rule, {"x": 1, "xs": [1], "d": {"a": 1}})


@pytest.mark.parametrize("rule,values", [(None, {}), (3, {}), ("", {}), ("   ", {}),
                                         ("x > 1", None), ("x > 1", [("x", 1)])])
def test_evaluate_rule_refuses_a_non_str_rule_or_non_dict_values(rule, values):
    with pytest.raises(RuleError):
        evaluate_rule(rule, values)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), [1.0, float("nan")],
                                   {"a": [0.0, float("-inf")]}, np.array([1.0, np.nan]),
                                   torch.tensor([0.0, float("inf")]), (1.0, float("nan")),
                                   [[[[[[[[[[float("nan")]]]]]]]]]],
                                   {"a": {"b": [{"c": [0.5, float("inf")]}]}}])
def test_non_finite_values_are_refused_by_the_evaluator(value):
    # `not (x > 1)` would hold on a NaN
    with pytest.raises(RuleError, match="finite"):
        evaluate_rule("True or x", {"x": value})


# -- the evaluator's limits, at their edges ---------------------------------------------------------
def test_the_documented_limits():
    assert K._MAX_RULE == 500 and K._MAX_EXPONENT == 64 and K._MAX_BITS == 2**16
    assert K._MAX_DEPTH == 32


def test_rule_length_limit_at_its_edge():
    ok = "x == " + "1" * 495 and "x == 1" + " " * 494  # exactly 500 characters
    assert len(ok) == 500 and evaluate_rule(ok, {"x": 1}) is True
    with pytest.raises(RuleError, match="501 characters"):
        evaluate_rule(ok + " ", {"x": 1})


def test_exponent_limits_at_their_edges():
    assert evaluate_rule("2 ** 64 == r", {"r": 2**64}) is True
    assert evaluate_rule("2 ** -64 == r", {"r": 2.0**-64}) is True
    assert evaluate_rule("2.0 ** 64.0 == r", {"r": 2.0**64}) is True
    for bad in ("2 ** 65 > 0", "2 ** -65 > 0", "2.0 ** 64.5 > 0", "1 ** 1000 == 1"):
        with pytest.raises(RuleError, match="exponents above 64"):
            evaluate_rule(bad, {})
    # the size guard: |left|.bit_length() * right may reach 2**16 bits, not exceed it
    big = 2**1023  # bit_length 1024; 1024 * 64 == 2**16
    assert evaluate_rule("x ** 64 > 0", {"x": big}) is True
    assert evaluate_rule("x ** 64 > 0", {"x": -big}) is True
    with pytest.raises(RuleError, match="bits"):
        evaluate_rule("x ** 64 > 0", {"x": 2**1024})
    with pytest.raises(RuleError, match="bits"):
        evaluate_rule("x ** 64 > 0", {"x": -(2**1024)})
    with pytest.raises(RuleError, match="bits"):
        evaluate_rule("(x ** 32) ** 2 > 0", {"x": 2**2047})


@pytest.mark.parametrize("rule", ["xs * 2 == xs", "2 * xs == xs", "'a' * 3 == 'aaa'",
                                  "3 * 'a' == 'aaa'", "[0] * 2 == [0, 0]"])
def test_repeating_lists_or_strings_is_refused(rule):
    with pytest.raises(RuleError, match="repeating"):
        evaluate_rule(rule, {"xs": [1]})


@pytest.mark.parametrize("on_values,on_control,status,holds", [
    (True, False, "reproduced", True), (True, True, "FAILED", False),
    (False, False, "FAILED", False), (False, True, "FAILED", False)])
def test_effect_outcome_for_every_combination(tmp_path, on_values, on_control, status, holds):
    c = Claims("demo", results_dir=tmp_path)
    # the control's values differ from the measurement's (a copy is refused, tested apart)
    x, xc = (0.7 if on_values else 0.2), (0.8 if on_control else 0.1)
    kw = dict(**BASE, rule="x >= 0.5", values={"x": x}, control=("base", {"x": xc}))
    if status == "FAILED":
        why = "true there too" if on_control else "false on this run's values"
        with pytest.raises(ClaimFailed, match=why):
            c.check("demo.e", **kw)
    else:
        assert c.check("demo.e", **kw) is None
    (claim,) = c.claims
    assert (claim.holds, claim.control_holds, claim.status) == (holds, on_control, status)
    assert reevaluate(load_results(tmp_path)[0]["claims"][0]) == (holds, on_control)


@pytest.mark.parametrize("on_values,on_control,status", [
    (True, False, "reproduced"), (True, True, "documented non-reproduction"),
    (False, False, "documented non-reproduction"), (False, True, "documented non-reproduction")])
def test_a_holding_reason_records_instead_of_raising(tmp_path, on_values, on_control, status):
    c = Claims("demo", results_dir=tmp_path)
    c.check("demo.e", **BASE, rule="x > 1", values={"x": 2.5 if on_values else 0.5},
            control=("base", {"x": 2.0 if on_control else 0.0}),
            reason=("  measured: x is small or the control passes too ", "x < 1 or xc > 1",
                    {"xc": 2.0 if on_control else 0.0}))
    (claim,) = c.claims
    assert claim.status == status and claim.holds is (status == "reproduced")
    assert claim.control_holds is on_control
    assert claim.explanation == ("" if status == "reproduced"
                                 else "measured: x is small or the control passes too")
    assert claim.reason == {"text": "measured: x is small or the control passes too",
                            "rule": "x < 1 or xc > 1", "values": {"xc": claim.control["values"]["x"]},
                            "holds": status != "reproduced"}


@pytest.mark.parametrize("on_values,on_control", [(True, True), (False, False), (False, True)])
def test_a_reason_that_does_not_hold_leaves_the_claim_failed(tmp_path, on_values, on_control):
    c = Claims("demo", results_dir=tmp_path)
    with pytest.raises(ClaimFailed, match="does not hold either: x < 0 is false"):
        c.check("demo.e", **BASE, rule="x > 1", values={"x": 2.5 if on_values else 0.5},
                control=("base", {"x": 2.0 if on_control else 0.0}),
                reason=("measured: x is negative", "x < 0"))
    (claim,) = c.claims
    assert claim.status == "FAILED" and claim.holds is False
    assert claim.control_holds is on_control and claim.reason["holds"] is False


@pytest.mark.parametrize("x,status", [(1.0, "passed"), (0.0, "FAILED")])
def test_sanity_outcome(tmp_path, x, status):
    c = Claims("demo", results_dir=tmp_path)
    if status == "FAILED":
        with pytest.raises(ClaimFailed, match="false on this run's values"):
            c.check("demo.s", **BASE, rule="x > 0.5", values={"x": x}, kind="sanity")
    else:
        c.check("demo.s", **BASE, rule="x > 0.5", values={"x": x}, kind="sanity")
    (claim,) = c.claims
    assert claim.status == status and claim.holds is (status == "passed")
    assert claim.control is None and claim.control_holds is None and claim.kind == "sanity"
    c.check("demo.t", **BASE, rule="x > 0.5", values={"x": 0.0}, kind="sanity",
            reason=("why", "x == 0"))
    assert c.claims[-1].status == "documented non-reproduction"
    assert c.claims[-1].explanation == "why" and c.claims[-1].holds is False


def test_a_failure_is_recorded_before_it_raises_and_says_scale_and_seed(tmp_path, monkeypatch):
    monkeypatch.setenv("GTLIB_SEED", "4")
    monkeypatch.setenv("GTLIB_SCALE", "full")
    c = Claims("demo", results_dir=tmp_path)
    with pytest.raises(ClaimFailed) as info:
        c.check("demo.f", **BASE, rule="x > 1", values={"x": 0.5}, control=("lin", {"x": 0.25}))
    msg = str(info.value)
    assert "demo.f" in msg and "x > 1" in msg and "scale full, seed 4" in msg
    assert "Measured: x = 0.5" in msg and "Control (lin): x = 0.25" in msg
    data = load_results(tmp_path)[0]
    assert (data["scale"], data["seed"]) == ("full", 4)
    assert data["claims"][0]["status"] == "FAILED"
    # a later claim is still accepted and both are on file
    c.check("demo.g", **BASE, rule="x > 1", values={"x": 2}, control=("lin", {"x": 1}))
    assert [x["status"] for x in load_results(tmp_path)[0]["claims"]] == ["FAILED", "reproduced"]


def test_the_control_is_evaluated_on_its_own_values_only(tmp_path):
    c = Claims("demo", results_dir=tmp_path)
    # a name the control lacks is not borrowed from the values, and it may add none of its own
    with pytest.raises(ValueError, match=r"name exactly the measured values \['x', 'y'\]"):
        c.check("demo.a", **BASE, rule="x > y", values={"x": 2, "y": 1}, control=("c", {"x": 0}))
    with pytest.raises(ValueError, match="name exactly"):
        c.check("demo.a", **BASE, rule="x > y", values={"x": 2, "y": 1},
                control=("c", {"x": 0, "y": 1, "z": 5}))
    c.check("demo.b", **BASE, rule="x > y", values={"x": 2, "y": 1}, control=("c", {"x": 0, "y": 1}))
    assert c.claims[0].control_holds is False and c.claims[0].control["values"] == {"x": 0, "y": 1}
    with pytest.raises(ClaimFailed, match="true there too"):  # the control's own y, not 1
        c.check("demo.c", **BASE, rule="x > y", values={"x": 2, "y": 1},
                control=("c", {"x": 0, "y": -1}))
    assert c.claims[1].control_holds is True


def test_a_rule_error_records_nothing(tmp_path):
    c = Claims("demo", results_dir=tmp_path)
    for rule in ("y > 1", "x", "x >"):
        with pytest.raises(RuleError):
            c.check("demo.r", **BASE, rule=rule, values={"x": 1}, control=("c", {"x": 0}))
    with pytest.raises(RuleError):  # a rule that fails only on the control
        c.check("demo.r", **BASE, rule="xs[1] > 0", values={"xs": [1, 2]},
                control=("c", {"xs": [1]}))
    assert c.claims == [] and load_results(tmp_path)[0]["claims"] == []
    c.check("demo.r", **BASE, rule="x > 0", values={"x": 1}, control=("c", {"x": 0}))
    assert len(c.claims) == 1


def test_the_stored_claim_is_stripped_and_cleaned(tmp_path):
    c = Claims("demo", results_dir=tmp_path)
    c.check("demo.e", statement="  An MLP wins \n", paper="\tREADME ", rule=" x >= 0.5 ",
            values={"x": np.float32(0.75), "n": np.int64(3), "ok": np.bool_(True)},
            control=("  linear model  ", {"x": torch.tensor(0.25), "n": 3, "ok": True}))
    (claim,) = c.claims
    assert (claim.statement, claim.paper, claim.rule) == ("An MLP wins", "README", "x >= 0.5")
    assert claim.values == {"x": 0.75, "n": 3, "ok": True}
    assert type(claim.values["n"]) is int and type(claim.values["ok"]) is bool
    assert type(claim.values["x"]) is float
    assert claim.control == {"name": "linear model", "values": {"x": 0.25, "n": 3, "ok": True}}
    assert claim.explanation == "" and claim.id == "demo.e" and claim.kind == "effect"


@pytest.mark.parametrize("field,value,err", [
    ("id", "", TypeError), ("id", 3, TypeError), ("statement", "", TypeError),
    ("statement", None, TypeError), ("paper", " \n", TypeError), ("rule", "", TypeError),
    ("rule", 1, TypeError), ("id", "demo", ValueError), ("id", "Demo.a", ValueError),
    ("id", "demo.A", ValueError), ("id", "demo.a-b", ValueError), ("id", "de_mo.a", ValueError),
    ("id", ".a", ValueError), ("id", "demo.", ValueError), ("id", "demo..a", ValueError),
    ("id", "demo a.b", ValueError), ("id", "demo.a\n", ValueError), ("id", "demo.a ", ValueError),
    ("kind", "Effect", ValueError), ("kind", None, ValueError),
    ("nonreproduction", "", TypeError), ("nonreproduction", "why", TypeError),
    ("reason", "", TypeError), ("reason", " ", TypeError), ("reason", 3, TypeError),
    ("reason", "x > 0", TypeError), ("reason", ("why",), TypeError),
    ("reason", ("", "x < 0"), TypeError), ("reason", ("why", " "), TypeError),
    ("reason", ("why", 3), TypeError), ("reason", ("why", "x < 0", {}, 1), TypeError),
    ("reason", ("why", "x < 0", {}), TypeError), ("reason", ("why", "x < y", [1]), TypeError),
    ("reason", ("why", "x <"), RuleError), ("reason", ("why", "y < 0"), RuleError),
    ("reason", ("why", "x"), RuleError), ("reason", ("why", "x < y", {"x": 1}), ValueError),
    ("values", {}, TypeError), ("values", None, TypeError),
    ("values", [("x", 1)], TypeError), ("values", {"1x": 1}, ValueError),
    ("values", {"x y": 1}, ValueError), ("values", {"": 1}, ValueError),
    ("values", {3: 1}, ValueError), ("control", ("", {"x": 0}), TypeError),
    ("control", ("  ", {"x": 0}), TypeError), ("control", (None, {"x": 0}), TypeError),
    ("control", ("c",), TypeError), ("control", ("c", {"x": 0}, 1), TypeError),
    ("control", {"name": "c", "values": {"x": 0}}, TypeError), ("control", "c", TypeError),
    ("control", ("c", {}), TypeError), ("control", ("c", None), TypeError)])
def test_check_refuses_bad_arguments_before_recording(tmp_path, field, value, err):
    c = Claims("demo", results_dir=tmp_path)
    kw = dict(id="demo.ok", statement="s", paper="p", rule="x > 0", values={"x": 1},
              control=("c", {"x": 0}), kind="effect")
    kw[field] = value
    with pytest.raises(err):
        c.check(kw.pop("id"), **kw)
    assert c.claims == [] and load_results(tmp_path)[0]["claims"] == []


@pytest.mark.parametrize("kind", ["Effect", "sanity ", None, "both", 1])
def test_kind_must_be_effect_or_sanity(tmp_path, kind):
    c = Claims("demo", results_dir=tmp_path)
    for control in (("c", {"x": 0}), None):
        with pytest.raises(ValueError, match=r"^kind must be one of \('effect', 'sanity'\)"):
            c.check("demo.a", **BASE, rule="x > 0", values={"x": 1}, control=control, kind=kind)
    assert K.KINDS == ("effect", "sanity") and c.claims == []


@pytest.mark.parametrize("key", ["1x", "x y", "", "x-1", "x.y", 3, None])
@pytest.mark.parametrize("where", ["values", "control"])
def test_value_names_must_be_identifiers_even_when_the_rule_does_not_use_them(tmp_path, key,
                                                                              where):
    c = Claims("demo", results_dir=tmp_path)
    vals, ctrl = {"x": 1}, {"x": 0}
    (vals if where == "values" else ctrl)[key] = 2
    with pytest.raises(ValueError, match=r"key .* must be a Python identifier"):
        c.check("demo.a", **BASE, rule="x > 0", values=vals, control=("c", ctrl))
    assert c.claims == []


@pytest.mark.parametrize("cid", ["demo.a", "a.b.c", "demo1.claim_2", "0.0", "demo.a_b_c",
                                 "ch.a.b_c"])
def test_well_formed_ids_are_accepted(tmp_path, cid):
    c = Claims("demo", results_dir=tmp_path)
    c.check(cid, **BASE, rule="x > 0", values={"x": 1}, kind="sanity")
    assert c.claims[0].id == cid


def test_duplicate_ids_are_refused_even_after_a_failure(tmp_path):
    c = Claims("demo", results_dir=tmp_path)
    with pytest.raises(ClaimFailed):
        c.check("demo.a", **BASE, rule="x > 1", values={"x": 0}, kind="sanity")
    with pytest.raises(ValueError, match="already"):
        c.check("demo.a", **BASE, rule="x > -1", values={"x": 0}, kind="sanity")
    c.check("demo.b", **BASE, rule="x > -1", values={"x": 0}, kind="sanity")
    assert [x.id for x in c.claims] == ["demo.a", "demo.b"]


def test_a_sanity_check_with_a_control_and_an_effect_without_one_are_refused(tmp_path):
    c = Claims("demo", results_dir=tmp_path)
    with pytest.raises(ValueError, match="needs control"):
        c.check("demo.a", **BASE, rule="x > 0", values={"x": 1})
    with pytest.raises(ValueError, match="takes no control"):
        c.check("demo.a", **BASE, rule="x > 0", values={"x": 1}, kind="sanity",
                control=("c", {"x": 0}))
    c.check("demo.a", **BASE, rule="x > 0", values={"x": 1}, control=["list", {"x": 0}])
    assert c.claims[0].control["name"] == "list"


# ================================================================================================
# value conversion
# ================================================================================================
def _clean(v):
    return K._clean(v, "values['v']")


@pytest.mark.parametrize("value,expected", [
    (np.int64(-3), -3), (np.float32(0.5), 0.5), (np.bool_(False), False), (True, True),
    (None, None), ("txt", "txt"), ((1, 2.5), [1, 2.5]), (np.array([[1, 2], [3, 4]]), [[1, 2], [3, 4]]),
    (torch.tensor([1.5, -2.0]), [1.5, -2.0]), (torch.tensor(3), 3), (torch.tensor(True), True),
    ({"a": (1, np.int32(2))}, {"a": [1, 2]}), ({1: "x", "b": 2}, {"1": "x", "b": 2}),
    ([{"k": np.array([0.25])}], [{"k": [0.25]}]), (10**30, 10**30), (-0.0, 0.0),
    (torch.tensor([[1, 2, 3]], dtype=torch.int32), [[1, 2, 3]])])
def test_values_are_converted_to_plain_python(value, expected):
    out = _clean(value)
    assert out == expected
    assert type(out) is type(expected)
    json.dumps(out, allow_nan=False)


def test_converted_values_keep_their_types():
    out = _clean({"i": np.int64(3), "f": np.float64(3.0), "b": np.bool_(True), "t": torch.tensor(2)})
    assert [type(out[k]) for k in "ifbt"] == [int, float, bool, int]
    assert out["b"] is True
    assert _clean(torch.tensor([1.0], requires_grad=True) * 2) == [2.0]


@pytest.mark.parametrize("value,err,words", [
    (float("nan"), ValueError, "finite"), (float("-inf"), ValueError, "finite"),
    (np.float64("inf"), ValueError, "finite"), ([1, [2, float("nan")]], ValueError, r"\[1\]\[1\]"),
    ({"a": float("inf")}, ValueError, r"\['a'\]"), (torch.tensor([0.0, float("nan")]), ValueError, "finite"),
    (object(), TypeError, "object"), ({(1, 2): 3}, TypeError, "key"), ({1.5: 3}, TypeError, "key"),
    (b"bytes", TypeError, "bytes"), ({1, 2}, TypeError, "set"), (1 + 2j, TypeError, "complex")])
def test_values_a_rule_cannot_use_are_refused_naming_where(value, err, words):
    with pytest.raises(err, match=words):
        _clean(value)


def test_nesting_depth_at_its_edge():
    def nest(k):
        v = 1
        for _ in range(k):
            v = [v]
        return v

    assert _clean(nest(32)) == nest(32)
    with pytest.raises(ValueError, match="more than 32 deep"):
        _clean(nest(33))
    d = 1
    for _ in range(33):
        d = {"k": d}
    with pytest.raises(ValueError, match="deep"):
        _clean(d)


# ================================================================================================
# the register: files, registers, output
# ================================================================================================
def test_a_new_register_writes_an_empty_file_with_the_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("GTLIB_SEED", "9")
    monkeypatch.setenv("GTLIB_SCALE", "full")
    c = Claims("my-chapter-2", results_dir=tmp_path / "deep" / "er")
    path = tmp_path / "deep" / "er" / "my-chapter-2.json"
    assert c.path == path and path.exists()
    assert json.loads(path.read_text()) == {"chapter": "my-chapter-2", "scale": "full", "seed": 9,
                                            "claims": []}
    assert (c.chapter, c.scale, c.seed) == ("my-chapter-2", "full", 9)


def test_the_default_folder_is_gtlib_results_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("GTLIB_RESULTS_DIR", str(tmp_path / "res"))
    c = Claims("demo")
    assert c.path == tmp_path / "res" / "demo.json" and c.path.exists()
    assert load_results()[0]["chapter"] == "demo"


def test_the_file_equals_as_dict_after_every_check(tmp_path):
    c = Claims("demo", results_dir=str(tmp_path))
    c.check("demo.a", **BASE, rule="x[0] > 0", values={"x": [1, 2]},
            control=("c", {"x": [3]}), reason=("n", "x[0] < m", {"m": 2}))
    assert json.loads(c.path.read_text()) == c.as_dict()
    c.check("demo.b", **BASE, rule="x[0] > 0", values={"x": [1]}, kind="sanity")
    data = json.loads(c.path.read_text())
    assert data == c.as_dict()
    assert data["claims"][0] == {
        "id": "demo.a", "kind": "effect", "statement": "s", "paper": "p", "rule": "x[0] > 0",
        "values": {"x": [1, 2]}, "control": {"name": "c", "values": {"x": [3]}}, "holds": False,
        "control_holds": True, "status": "documented non-reproduction", "explanation": "n",
        "given": {}, "reason": {"text": "n", "rule": "x[0] < m", "values": {"m": 2}, "holds": True},
        "refused": ""}
    assert data["claims"][1]["status"] == "passed" and data["claims"][1]["control"] is None
    assert c.path.read_text().startswith('{\n  "chapter": "demo"')
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo.json"]  # no temporary files


@pytest.mark.parametrize("chapter", ["Demo", "demo_x", "-demo", "demo-", "de--mo", "", "de mo",
                                     None, 3, "démo", "demo\n", "demo "])
def test_chapter_slugs(tmp_path, chapter):
    with pytest.raises(ValueError, match="chapter"):
        Claims(chapter, results_dir=tmp_path)


@pytest.mark.parametrize("chapter", ["a", "demo-2", "1", "mode-connectivity-and-more"])
def test_good_chapter_slugs(tmp_path, chapter):
    assert Claims(chapter, results_dir=tmp_path).path.name == f"{chapter}.json"


def test_results_dir_must_be_a_folder_path(tmp_path):
    for bad in (3, "", "  ", ["x"]):
        with pytest.raises(TypeError, match="results_dir"):
            Claims("demo", results_dir=bad)
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(ValueError, match="not a folder"):
        Claims("demo", results_dir=f)


def test_registers_retire_only_the_same_chapter_in_the_same_folder(tmp_path):
    a = Claims("demo", results_dir=tmp_path / "one")
    b = Claims("demo", results_dir=tmp_path / "two")  # another folder: both stay active
    other = Claims("other", results_dir=tmp_path / "one")  # another chapter: both stay active
    for reg in (a, b, other):
        reg.check("demo.x", **BASE, rule="x > 0", values={"x": 1}, kind="sanity")
    newer = Claims("demo", results_dir=tmp_path / "one")
    assert json.loads((tmp_path / "one" / "demo.json").read_text())["claims"] == []
    with pytest.raises(RuntimeError, match="replaced"):
        a.check("demo.y", **BASE, rule="x > 0", values={"x": 1}, kind="sanity")
    newer.check("demo.y", **BASE, rule="x > 0", values={"x": 1}, kind="sanity")
    b.check("demo.y", **BASE, rule="x > 0", values={"x": 1}, kind="sanity")
    other.check("demo.y", **BASE, rule="x > 0", values={"x": 1}, kind="sanity")
    assert len(b.claims) == 2 and len(other.claims) == 2 and len(newer.claims) == 1


def test_repr_counts_claims(tmp_path):
    c = Claims("demo", results_dir=tmp_path)
    assert repr(c) == "<Claims of 'demo': 0 claims>"
    c.check("demo.a", **BASE, rule="x > 0", values={"x": 1}, kind="sanity")
    assert repr(c) == "<Claims of 'demo': 1 claim>"
    c.check("demo.b", **BASE, rule="x > 0", values={"x": 1}, kind="sanity")
    assert repr(c) == "<Claims of 'demo': 2 claims>"


def test_table_and_repr_html_render_the_stored_claims(tmp_path):
    c = Claims("demo", results_dir=tmp_path)
    c.check("demo.a", **BASE, rule="x > 0", values={"x": 1}, control=("c", {"x": 0}))
    want = claims_table_html(c.as_dict()["claims"])
    assert c.table().data == want and c._repr_html_() == want


# ================================================================================================
# reevaluate and load_results
# ================================================================================================
def _stored(**kw):
    d = dict(id="demo.a", kind="effect", statement="s", paper="p", rule="x >= 2",
             values={"x": 2}, control={"name": "c", "values": {"x": 1}}, holds=True,
             control_holds=False, status="reproduced", explanation="")
    d.update(kw)
    return d


@pytest.mark.parametrize("x,xc,expected", [(2, 1, (True, False)), (2, 3, (False, True)),
                                           (1, 1, (False, False)), (1, 2, (False, True))])
def test_reevaluate_recomputes_from_rule_and_values(x, xc, expected):
    assert reevaluate(_stored(values={"x": x}, control={"name": "c", "values": {"x": xc}})) == \
        expected


def test_reevaluate_a_sanity_claim_ignores_any_control():
    assert reevaluate(_stored(kind="sanity", control=None)) == (True, None)
    assert reevaluate(_stored(kind="sanity", values={"x": 1}, control=None)) == (False, None)
    assert reevaluate({"kind": "sanity", "rule": "x == 2", "values": {"x": 2}}) == (True, None)


@pytest.mark.parametrize("claim,err,words", [
    ([1], TypeError, "claim dict"), ({"rule": "x", "values": {}}, ValueError, "kind"),
    ({"kind": "effect", "values": {}}, ValueError, "rule"), ({"kind": "sanity", "rule": "x"},
                                                            ValueError, "values"),
    (_stored(kind="other"), ValueError, "kind"), (_stored(rule=3), TypeError, "rule"),
    (_stored(values=[1]), TypeError, "values"), (_stored(control=None), ValueError, "control"),
    (_stored(control={"name": "c"}), ValueError, "control"),
    (_stored(control={"values": [1]}), ValueError, "control")])
def test_reevaluate_refuses_what_is_not_a_stored_claim(claim, err, words):
    with pytest.raises(err, match=words):
        reevaluate(claim)


def test_load_results_reads_every_json_sorted_by_name(tmp_path):
    for name, k in (("zeta", 1), ("alpha", 2), ("mid", 3)):
        (tmp_path / f"{name}.json").write_text(json.dumps({"chapter": name, "k": k}))
    (tmp_path / "notes.txt").write_text("not json")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "inner.json").write_text("{}")
    assert [r["chapter"] for r in load_results(tmp_path)] == ["alpha", "mid", "zeta"]
    assert [r["k"] for r in load_results(str(tmp_path))] == [2, 3, 1]


def test_load_results_edges(tmp_path, monkeypatch):
    assert load_results(tmp_path / "absent") == []
    assert not (tmp_path / "absent").exists()  # reading creates nothing
    (tmp_path / "f").write_text("x")
    with pytest.raises(ValueError, match="not a folder"):
        load_results(tmp_path / "f")
    d = tmp_path / "d"
    d.mkdir()
    (d / "a.json").write_text("{}")
    (d / "broken.json").write_text("{not json")
    with pytest.raises(ValueError, match="broken.json"):
        load_results(d)
    (d / "broken.json").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_results(d)
    for bad in (3, "", " "):
        with pytest.raises(TypeError, match="results_dir"):
            load_results(bad)
    monkeypatch.setenv("GTLIB_RESULTS_DIR", str(tmp_path / "env"))
    assert load_results() == []
    Claims("demo")
    assert [r["chapter"] for r in load_results()] == ["demo"]


# ================================================================================================
# the tables
# ================================================================================================
def _row_cells(html_text: str, needle: str) -> list[str]:
    row = [r for r in html_text.split("<tr>") if needle in r][0]
    # each cell carries its column's name (data-label) for the phone layout
    return [c.split("</td>")[0] for c in re.split(r"<td(?: data-label='[^']*')?>", row)[1:]]


def test_effects_come_first_each_in_its_own_table_with_counts():
    claims = [_stored(kind="sanity", id="demo.s1", control=None, status="passed"),
              _stored(id="demo.e1"), _stored(kind="sanity", id="demo.s2", control=None,
                                             status="passed"),
              _stored(id="demo.e2"), _stored(id="demo.e3")]
    out = claims_table_html(claims)
    assert "<strong>Effects</strong> (3)" in out
    assert "<strong>Checks of the implementation</strong> (2)" in out
    assert out.index("Effects") < out.index("Checks of the implementation")
    effects, sanity = out.split("Checks of the implementation")
    assert all(f"demo.e{i}" in effects and f"demo.e{i}" not in sanity for i in (1, 2, 3))
    assert all(f"demo.s{i}" in sanity and f"demo.s{i}" not in effects for i in (1, 2))
    assert effects.index("demo.e1") < effects.index("demo.e2") < effects.index("demo.e3")
    assert "<th>control (measured null)</th>" in effects and "<th>control" not in sanity
    assert out.count("<table") == 2


def test_only_effects_or_only_sanity_or_nothing():
    only_e = claims_table_html([_stored()])
    assert "Effects" in only_e and "Checks of the implementation" not in only_e
    only_s = claims_table_html([_stored(kind="sanity", control=None, status="passed")])
    assert "Effects" not in only_s and "Checks of the implementation</strong> (1)" in only_s
    assert claims_table_html([]) == "<p>No claims were checked.</p>"
    # a stored claim without a kind is an effect
    no_kind = _stored()
    del no_kind["kind"]
    assert "<strong>Effects</strong> (1)" in claims_table_html([no_kind])


def test_a_row_shows_only_the_rules_names_formatted_and_escaped():
    claim = _stored(statement="a < b & c", paper="Table <1>", rule="x > 0.5 and ys[0] > 0",
                    values={"x": 0.123456789, "unused": 99, "ys": list(range(10)),
                            "d": {"k": 1}}, control={"name": "lin <base>",
                                                     "values": {"x": 0.25, "ys": [1], "zz": 5}},
                    control_holds=False)
    cells = _row_cells(claims_table_html([claim]), "demo.a")
    assert len(cells) == 5  # claim, rule, this run, control, status
    assert "a &lt; b &amp; c" in cells[0] and "Paper: Table &lt;1&gt;" in cells[0]
    assert cells[1] == "<code>x &gt; 0.5 and ys[0] &gt; 0</code>"
    assert cells[2] == ("<code>x</code> = 0.1235<br><code>ys</code> = "
                        "[0, 1, 2, 3, 4, 5, 6, 7, …]")
    assert cells[3] == ("<em>lin &lt;base&gt;</em><br><code>x</code> = 0.25<br><code>ys</code>"
                        " = [1]<br><small>rule on control: False</small>")
    assert "unused" not in cells[2] and "zz" not in cells[3]
    assert cells[4] == "<span class='gtlib-status gtlib-ok'>reproduced (not swept)</span>"


@pytest.mark.parametrize("status,label,cls", [
    ("reproduced", "reproduced (not swept)", "ok"), ("passed", "passed", "ok"),
    ("FAILED", "FAILED", "fail"),
    ("documented non-reproduction", "not reproduced (documented)", "nr")])
def test_status_labels_and_classes(status, label, cls):
    doc = "doc" in status
    claim = _stored(status=status, holds=status in ("reproduced", "passed"),
                    explanation="the reason" if doc else "",
                    reason={"text": "the reason", "rule": "x < lim", "values": {"lim": 3},
                            "holds": True} if doc else None)
    cells = _row_cells(claims_table_html([claim]), "demo.a")
    assert cells[-1].startswith(f"<span class='gtlib-status gtlib-{cls}'>{label}</span>")
    assert ("<small>Reason: the reason (<code>x &lt; lim</code>: holds, with x = 2; lim = 3)"
            "</small>" in cells[-1]) is doc


def test_value_formatting():
    f = K._fmt
    assert f(0.123456) == "0.1235" and f(12345.678) == "1.235e+04" and f(2.0) == "2"
    assert f(True) == "True" and f(None) == "None" and f(7) == "7" and f("s") == "s"
    assert f(list(range(8))) == "[0, 1, 2, 3, 4, 5, 6, 7]"
    assert f(list(range(9))) == "[0, 1, 2, 3, 4, 5, 6, 7, …]"
    assert f([0.5, [1.25, True]]) == "[0.5, [1.25, True]]"
    assert f({"a": 0.333333, "b": [1]}) == "{a: 0.3333, b: [1]}"
    big = {f"k{i}": i for i in range(9)}
    assert f(big) == "{" + ", ".join(f"k{i}: {i}" for i in range(8)) + ", …}"
    assert f({f"k{i}": i for i in range(8)}).endswith("k7: 7}")


def test_rule_names_and_a_rule_that_does_not_parse():
    assert K._rule_names("a > b and all(x > c for x in xs)") == {"a", "all", "b", "c", "x",
                                                                          "xs"}
    assert K._rule_names("a >") == set()
    claim = _stored(rule="x >", values={"x": 1})
    cells = _row_cells(claims_table_html([claim]), "demo.a")
    assert cells[2] == ""


def test_chapter_column_and_full_scale_column():
    claim = {**_stored(), "chapter": "my-ch"}
    plain = claims_table_html([claim])
    with_ch = claims_table_html([claim], chapter_col=True)
    assert "<th>chapter</th>" not in plain and "<th>chapter</th><th>claim</th>" in with_ch
    assert _row_cells(with_ch, "demo.a")[0] == "my-ch"
    assert claims_table_html([claim], chapter_col=np.bool_(True)) == with_ch
    full = {"demo.a": _stored(values={"x": 0.61, "y": 3}, status="documented non-reproduction")}
    cells = _row_cells(claims_table_html([claim], full=full), "demo.a")
    assert cells[-1] == "<code>x</code> = 0.61<br>not reproduced (documented)"
    assert "<th>status</th><th>full scale (recorded run)</th>" in claims_table_html([claim],
                                                                                    full=full)
    assert _row_cells(claims_table_html([claim], full={"x.y": {}}), "demo.a")[-1] == \
        "not in the record"
    assert "full scale" not in plain


def test_sanity_table_gets_the_chapter_and_full_scale_columns_too():
    sane = {**_stored(kind="sanity", id="demo.s", control=None, status="passed"), "chapter": "ch"}
    eff = {**_stored(), "chapter": "ch"}
    full = {"demo.s": _stored(kind="sanity", control=None, values={"x": 7}, status="FAILED")}
    out = claims_table_html([eff, sane], chapter_col=True, full=full)
    effects, sanity = out.split("Checks of the implementation")
    assert "<th>chapter</th><th>claim</th><th>rule</th><th>this run</th><th>status</th>" \
        "<th>full scale (recorded run)</th>" in sanity
    cells = _row_cells(sanity, "demo.s")
    assert cells[0] == "ch" and cells[-1] == "<code>x</code> = 7<br>FAILED" and len(cells) == 6
    assert _row_cells(effects, "demo.a")[-1] == "not in the record"


@pytest.mark.parametrize("args,err", [
    (("not a list",), TypeError), (({"a": 1},), TypeError), (([], 1), TypeError),
    (([], "yes"), TypeError), (([], False, [1]), TypeError), (([1],), TypeError),
    (([{"id": "a"}],), ValueError), (([_stored(kind="x")],), ValueError),
    (([_stored(rule=None)],), TypeError)])
def test_claims_table_html_refuses_bad_input(args, err):
    with pytest.raises(err):
        claims_table_html(*args)


def test_the_table_is_wrapped_for_sideways_scrolling():
    out = claims_table_html([_stored()])
    assert out.count('<div class="gtlib-table-wrap" tabindex="0" role="region"') == 1
    assert '<table class="gtlib-claims">' in out and out.rstrip().endswith("</div>")
