"""The claims register: rules evaluated by gtlib, controls that must fail, safe evaluation,
values checked before anything is recorded, and a results file that many processes can write."""
import json
import multiprocessing as mp

import numpy as np
import pytest
import torch

from gtlib.claims import (ClaimFailed, Claims, RuleError, claims_table_html, evaluate_rule,
                          load_results, reevaluate)

BASE = dict(statement="s", paper="p (Table 1)")


def effect(c, id="demo.ok", rule="x >= 0.4", values=None, control=None, **kw):
    c.check(id, **BASE, rule=rule, values=values or {"x": 0.5},
            control=control or ("baseline", {"x": 0.3}), **kw)


# -- the evaluator -------------------------------------------------------------------------------
@pytest.mark.parametrize("rule,values,expected", [
    ("x >= 0.4", {"x": 0.5}, True),
    ("x >= 0.4 and not y", {"x": 0.5, "y": False}, True),
    ("abs(a - b) < 0.1 or a > 2", {"a": 1.0, "b": 1.2}, False),
    ("min(xs) > 0 and max(xs) < 1 and len(xs) == 3", {"xs": [0.1, 0.5, 0.9]}, True),
    ("all(v <= 1.5 for v in d) and any(v > 1 for v in d)", {"d": [1.2, 0.3]}, True),
    ("xs[-1] - xs[0] >= 0.4", {"xs": [0.1, 0.2, 0.6]}, True),
    ("d['a'] > d['b']", {"d": {"a": 2, "b": 1}}, True),
    ("sum(xs) / len(xs) > 0.5", {"xs": [1, 0]}, False),
    ("0 < x < 1", {"x": 0.5}, True),
    ("'ok' in tags", {"tags": ["ok"]}, True),
    ("all(a > b for a, b in [[2, 1]])", {}, None),  # tuple targets are refused (see below)
])
def test_evaluator_computes_what_python_computes(rule, values, expected):
    if expected is None:
        with pytest.raises(RuleError):
            evaluate_rule(rule, values)
        return
    assert evaluate_rule(rule, values) is expected
    assert eval(rule, {}, dict(values)) == expected  # the same as Python on safe input


@pytest.mark.parametrize("rule", [
    "x.__class__", "x.real > 0", "__import__('os').system('true')", "open('f')",
    "eval('1')", "(lambda: True)()", "[c for c in ().__class__.__bases__]",
    "print(x)", "max(x, key=abs) > 0", "10 ** 10 ** 10 > 0", "[0] * 10**8 == []",
])
def test_evaluator_refuses_anything_else(rule):
    with pytest.raises(RuleError):
        evaluate_rule(rule, {"x": 1.0})


@pytest.mark.parametrize("rule,values", [("y > 1", {"x": 1.0}), ("x", {"x": 1.0}),
                                         ("x + 1", {"x": 1}), ("xs[3] > 0", {"xs": [1]}),
                                         ("x / 0 > 1", {"x": 1.0}), ("x >", {"x": 1.0}),
                                         ("", {"x": 1.0})])
def test_undefined_names_errors_and_non_bool_results_are_rule_errors(rule, values):
    with pytest.raises(RuleError):
        evaluate_rule(rule, values)


# -- effects and controls ------------------------------------------------------------------------
def test_effect_holds_only_if_false_on_control(tmp_path):
    c = Claims("demo", results_dir=tmp_path)
    effect(c)
    with pytest.raises(ClaimFailed, match="cannot tell the effect from its control"):
        effect(c, id="demo.same", control=("baseline that also passes", {"x": 0.45}))
    with pytest.raises(ClaimFailed, match="false on this run"):
        effect(c, id="demo.false", values={"x": 0.1})
    stored = load_results(tmp_path)[0]["claims"]
    assert [s["status"] for s in stored] == ["reproduced", "FAILED", "FAILED"]
    assert [s["control_holds"] for s in stored] == [False, True, False]
    for s in stored:  # every stored outcome is re-derived from the stored rule and values
        assert reevaluate(s) == (s["holds"], s["control_holds"])


def test_results_json_has_every_field(tmp_path):
    c = Claims("demo", results_dir=tmp_path)
    effect(c)
    c.check("demo.sane", **BASE, rule="err < 1e-6", values={"err": 0.0}, kind="sanity")
    data = json.loads((tmp_path / "demo.json").read_text())
    e, s = data["claims"]
    assert set(e) == {"id", "kind", "statement", "paper", "rule", "values", "control", "holds",
                      "control_holds", "status", "explanation", "given", "reason", "refused"}
    assert e["control"] == {"name": "baseline", "values": {"x": 0.3}}
    assert (e["given"], e["reason"], e["refused"]) == ({}, None, "")
    assert s["kind"] == "sanity" and s["control"] is None and s["status"] == "passed"


def test_effect_needs_a_control_and_sanity_refuses_one(tmp_path):
    c = Claims("demo", results_dir=tmp_path)
    with pytest.raises(ValueError, match="control"):
        c.check("demo.a", **BASE, rule="x > 0", values={"x": 1.0})
    with pytest.raises(ValueError, match="sanity"):
        c.check("demo.b", **BASE, rule="x > 0", values={"x": 1.0}, kind="sanity",
                control=("c", {"x": 0.0}))
    with pytest.raises(ValueError, match="kind"):
        c.check("demo.c", **BASE, rule="x > 0", values={"x": 1.0}, kind="maybe")
    with pytest.raises(ValueError, match="name exactly"):  # the control lacks the rule's name
        effect(c, id="demo.d", control=("c", {"other": 0.0}))
    with pytest.raises(RuleError, match="unknown name"):  # neither side has the rule's name
        effect(c, id="demo.e", values={"y": 0.5}, control=("c", {"y": 0.1}))
    assert c.claims == []


def test_documented_nonreproduction_and_blank_reasons(tmp_path):
    c = Claims("demo", results_dir=tmp_path)
    effect(c, id="demo.nr", values={"x": 0.1},
           reason=("too small a scale", "x < small", {"small": 0.2}))
    (claim,) = c.claims
    assert claim.status == "documented non-reproduction" and "too small" in claim.explanation
    for blank in ("", "   ", "\n\t"):
        with pytest.raises(TypeError, match="reason"):
            effect(c, id="demo.blank", values={"x": 0.1}, reason=(blank, "x < 1"))
        with pytest.raises(TypeError, match="reason"):
            effect(c, id="demo.blank", values={"x": 0.1}, reason=("why", blank))
    with pytest.raises(TypeError, match="reason="):
        effect(c, id="demo.old", values={"x": 0.1}, nonreproduction="too small a scale")
    html = claims_table_html(c.as_dict()["claims"])
    assert "not reproduced" in html and "too small" in html and "small = 0.2" in html
    assert [x.id for x in c.claims] == ["demo.nr"]


# -- values are checked before anything is recorded ----------------------------------------------
@pytest.mark.parametrize("values", [{"x": float("nan")}, {"x": float("inf")},
                                    {"x": [1.0, float("nan")]}, {"x": np.float64("nan")},
                                    {"x": torch.tensor(float("nan"))}])
def test_nan_values_are_an_error_not_a_pass(tmp_path, values):
    c = Claims("demo", results_dir=tmp_path)
    with pytest.raises(ValueError, match="finite"):
        c.check("demo.nan", **BASE, rule="not (x < 0.1)" if not isinstance(values["x"], list)
                else "True", values=values, kind="sanity")
    assert c.claims == [] and load_results(tmp_path)[0]["claims"] == []


def test_arrays_are_converted_and_objects_rejected(tmp_path):
    c = Claims("demo", results_dir=tmp_path)
    c.check("demo.arr", **BASE, rule="max(xs) < 1 and n == 3", kind="sanity",
            values={"xs": np.array([0.1, 0.2, 0.3]), "n": np.int64(3)})
    c.check("demo.t", **BASE, rule="t[1] == 2.0", values={"t": torch.tensor([1.0, 2.0])},
            kind="sanity")
    with pytest.raises(TypeError, match="values"):
        c.check("demo.obj", **BASE, rule="True", values={"o": object()}, kind="sanity")
    with pytest.raises(ValueError, match="identifier"):
        c.check("demo.key", **BASE, rule="True", values={"not a name": 1}, kind="sanity")
    assert [x.id for x in c.claims] == ["demo.arr", "demo.t"]
    json.loads((tmp_path / "demo.json").read_text())  # still valid JSON


def test_bad_ids_duplicates_and_slugs(tmp_path):
    c = Claims("demo", results_dir=tmp_path)
    with pytest.raises(ValueError, match="id"):
        effect(c, id="Bad Id")
    with pytest.raises(TypeError, match="statement"):
        c.check("demo.s", statement=" ", paper="p", rule="x > 0", values={"x": 1},
                kind="sanity")
    effect(c, id="demo.a")
    with pytest.raises(ValueError, match="already"):
        effect(c, id="demo.a")
    with pytest.raises(ValueError, match="chapter"):
        Claims("Not A Slug", results_dir=tmp_path)


def test_a_second_register_retires_the_first(tmp_path):
    old = Claims("demo", results_dir=tmp_path)
    new = Claims("demo", results_dir=tmp_path)
    effect(new)
    with pytest.raises(RuntimeError, match="replaced"):
        effect(old, id="demo.other")
    assert [c["id"] for c in load_results(tmp_path)[0]["claims"]] == ["demo.ok"]


def _writer(args):
    folder, k = args
    c = Claims(f"chapter-{k}", results_dir=folder)
    for i in range(15):
        c.check(f"ch.claim_{i}", **BASE, rule="x >= 0", values={"x": float(i)}, kind="sanity")
    return k


def test_many_processes_write_one_results_folder(tmp_path):
    ctx = mp.get_context("spawn")
    with ctx.Pool(4) as pool:
        assert sorted(pool.map(_writer, [(str(tmp_path), k) for k in range(4)])) == [0, 1, 2, 3]
    results = load_results(tmp_path)
    assert len(results) == 4 and all(len(r["claims"]) == 15 for r in results)
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))


def test_rendering_shows_effects_and_sanity_apart(tmp_path):
    c = Claims("demo", results_dir=tmp_path)
    effect(c)
    c.check("demo.sane", **BASE, rule="err < 1e-6", values={"err": 0.0}, kind="sanity")
    html = c._repr_html_()
    assert html.index("Effects") < html.index("Checks of the implementation")
    assert "baseline" in html and "x &gt;= 0.4" in html and "0.3" in html
    assert c.check("demo.none", **BASE, rule="x > 0", values={"x": 1}, kind="sanity") is None


def test_a_recorded_full_scale_run_is_a_column_beside_this_run(tmp_path):
    c = Claims("demo", results_dir=tmp_path)
    effect(c)
    stored = c.as_dict()["claims"]
    html = claims_table_html(stored, full={"demo.ok": {**stored[0], "values": {"x": 0.61}}})
    assert "full scale (recorded run)" in html and "0.61" in html
    assert "not in the record" in claims_table_html(stored, full={})
    assert "full scale" not in claims_table_html(stored)
