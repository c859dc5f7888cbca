"""gtlib.selfcheck: the exercises' self-checks accept the solution's answer, reject a wrong one
with a message that does not reveal the expected value, say "not answered yet" for the sentinel,
and refuse a bad call with an error naming the argument."""

import math
import re
from statistics import NormalDist

import numpy as np
import pytest
import torch

from gtlib import selfcheck
from gtlib.selfcheck import SelfCheckFailed, check, close, verdict, within


@pytest.fixture(autouse=True)
def _lenient(monkeypatch):
    monkeypatch.delenv("GTLIB_STRICT_SELFCHECKS", raising=False)


def renderings(x: float) -> list[str]:
    """The ways a message could show the value ``x``."""
    return {
        f"{x:.4g}",
        f"{x:.3g}",
        f"{x:.2f}",
        f"{x:.1f}",
        f"{x:.3f}",
        str(round(x)),
    } - {"0"}


D_OVER_M = (8 * NormalDist().inv_cdf(0.95)) ** 2
BITS = (0.1**2 * 2 * 8000 - math.log(20)) / math.log(2)
MLP = {"test_acc": [0.65, 0.67]}


def closed_form(tau: float) -> float:
    return math.log1p(7 * math.exp(-1.7 / tau))


@pytest.mark.parametrize(
    "name, answer, given",
    [
        ("uniform-convergence-ex1", D_OVER_M, {}),
        ("soft-inductive-biases-ex2", BITS, {}),
        ("imbalanced-contrastive-ex1", closed_form(0.5), {"tau": 0.5}),
        ("prelim-ex2", 0.55, {"mlp_out": MLP}),
        ("prelim-ex2", np.float32(0.55), {"mlp_out": MLP}),
        ("prelim-ex6", 0.6, {"lin": {"test_acc": [0.3]}, "mlp_out": MLP}),
        ("mode-connectivity-ex2", [20.0, 8.0, 2.5, 2.0], {}),
        ("soft-inductive-biases-ex8", [1e6, 30.0], {}),
    ],
)
def test_accepts_the_solution_value(name, answer, given, capsys):
    v = verdict(name, answer, **given)
    assert v.ok and v.status == "correct", v.line()
    assert check(name, answer, **given) is None
    out = capsys.readouterr().out
    assert out.startswith(f"Self-check {name}: correct.") and out.endswith("\n")
    # the verdict, wrapped to the book's code column, and nothing else
    assert " ".join(out.split()) == " ".join(v.line().split())
    assert max(len(line) for line in out.splitlines()) <= 85


def test_accepts_values_computed_from_gtlib():
    from gtlib import contrastive as C
    from gtlib import soft

    full = C.ContrastiveConfig.full()
    mus = [C.learning_margin(full, x) for x in list(full.ratios) + [10.0]]
    assert verdict("imbalanced-contrastive-ex3", mus).ok
    assert verdict(
        "imbalanced-contrastive-ex3", torch.tensor(mus)
    ).ok  # a tensor is a number
    kl = [
        soft.pac_bayes_kl_bound(0.1, K * math.log(2), 8000)
        for K in (1000, 3000, 10000)
    ]
    assert verdict("soft-inductive-biases-ex1", kl).ok
    phi = np.random.default_rng(0).normal(size=(20, 30))
    hat = phi @ np.linalg.solve(phi.T @ phi + 2 * np.eye(30), phi.T)
    neff = soft.effective_dimensionality(np.linalg.eigvalsh(phi.T @ phi), 2.0)
    assert verdict("soft-inductive-biases-ex4", (np.trace(hat), neff)).ok


@pytest.mark.parametrize(
    "name, answer, given, expected, words",
    [
        ("uniform-convergence-ex1", 100.0, {}, D_OVER_M, "too low"),
        ("uniform-convergence-ex1", 8 * 1.645, {}, D_OVER_M, "square it"),
        ("uniform-convergence-ex1", 246.0, {}, D_OVER_M, "one-sided"),
        ("soft-inductive-biases-ex2", BITS * math.log(2), {}, BITS, "nats"),
        ("soft-inductive-biases-ex2", 400.0, {}, BITS, "too high"),
        (
            "imbalanced-contrastive-ex1",
            math.log(8),
            {"tau": 0.5},
            closed_form(0.5),
            "log n",
        ),
        ("prelim-ex2", 0.9, {"mlp_out": MLP}, 0.66, "above the expected range"),
        ("prelim-ex2", 0.12, {"mlp_out": MLP}, 0.66, "below the expected range"),
    ],
)
def test_rejects_a_wrong_value_with_a_useful_message(
    name, answer, given, expected, words
):
    v = verdict(name, answer, **given)
    assert v.status == "wrong" and not v
    line = v.line()
    assert line.startswith(f"Self-check {name}: not right yet.")
    assert words in line, line
    assert f"{float(answer):.4g}" in line, (
        "the message shows the student's own value"
    )
    shown = [
        r
        for r in renderings(expected)
        if re.search(rf"(?<![\d.]){re.escape(r)}(?![\d])", line)
    ]
    assert not shown, f"the message reveals the expected value: {shown} in {line!r}"


@pytest.mark.parametrize(
    "answer, words",
    [
        ("0.5", "should be numbers"),
        ([0.5, 0.6], "one number"),
        (float("nan"), "NaN"),
        (float("inf"), "infinite"),
        (55.0, "percentage"),
        (-0.2, "between 0 and 1"),
    ],
)
def test_a_malformed_answer_is_a_message_not_an_error(answer, words):
    v = verdict("prelim-ex2", answer, mlp_out=MLP)
    assert v.status == "wrong" and words in v.message, v.message


def test_wrong_shape_and_order_are_named():
    assert "6 entries" in verdict("imbalanced-contrastive-ex3", [1.0, 2.0]).message
    v = verdict("mode-connectivity-ex2", [2.0, 2.0, 20.0, 8.0])
    assert v.status == "wrong" and "order" in v.message
    v = verdict("soft-inductive-biases-ex7", {"simple": 0.1}, poly=None)
    assert v.status == "wrong" and "'complex'" in v.message


@pytest.mark.parametrize("sentinel", [None, ...])
def test_the_sentinel_is_not_answered_yet(sentinel, capsys):
    # the chapter objects are not looked at: a student edition run before any answer never fails
    v = verdict("prelim-ex2", sentinel, mlp_out=object())
    assert v.status == "unanswered" and not v
    check("uniform-convergence-ex2", sentinel, rand=object())
    out = " ".join(
        capsys.readouterr().out.split()
    )  # the printed line wraps at 85 characters
    assert out.startswith("Self-check uniform-convergence-ex2: not answered yet.")
    assert "answer cell" in out


def test_every_exercise_says_what_its_answer_is():
    for name, ex in selfcheck.EXERCISES.items():
        given = {g: object() for g in ex.given}
        v = verdict(name, None, **given)
        assert v.status == "unanswered" and ex.answer in v.message


def test_strict_mode_raises_for_anything_but_correct(monkeypatch, capsys):
    monkeypatch.setenv("GTLIB_STRICT_SELFCHECKS", "1")
    with pytest.raises(SelfCheckFailed, match="not right yet"):
        check("uniform-convergence-ex1", 10.0)
    with pytest.raises(SelfCheckFailed, match="not answered yet"):
        check("uniform-convergence-ex1", None)
    check("uniform-convergence-ex1", D_OVER_M)
    assert "correct" in capsys.readouterr().out


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: check("prelim-ex99", 1.0), ValueError, "name must be the label"),
        (lambda: check(3, 1.0), TypeError, "name must be an exercise label"),
        (lambda: check("prelim-ex2", 0.5), TypeError, "mlp_out"),
        (
            lambda: check("prelim-ex2", 0.5, mlp_out=MLP, lin=MLP),
            TypeError,
            "unexpected keyword",
        ),
        (
            lambda: check("uniform-convergence-ex1", None, extra=1),
            TypeError,
            "extra",
        ),
        (lambda: close(1.0, 1.0, rtol=-0.1), ValueError, "rtol"),
        (lambda: close(1.0, 1.0, rtol=float("nan")), ValueError, "rtol"),
        (lambda: close(1.0, 1.0, atol=float("inf")), ValueError, "atol"),
        (lambda: close(1.0, 1.0, rtol="1e-3"), TypeError, "rtol"),
        (lambda: close(1.0, 1.0, atol=True), TypeError, "atol"),
        (lambda: close(1.0, float("nan")), ValueError, "expected contains NaN"),
        (
            lambda: close(1.0, [1.0, float("nan")]),
            ValueError,
            "expected contains NaN",
        ),
        (lambda: close(1.0, "one"), TypeError, "expected"),
        (lambda: close(1.0, []), ValueError, "expected"),
        (lambda: within(1.0, float("nan"), 2.0), ValueError, "low"),
        (lambda: within(1.0, 0.0, float("nan")), ValueError, "high"),
        (lambda: within(1.0, 2.0, 1.0), ValueError, "low must be below high"),
    ],
)
def test_a_bad_call_raises_naming_the_argument(call, error, words):
    with pytest.raises(error, match=re.escape(words)):
        call()


def test_close_and_within_never_show_the_reference():
    from gtlib.selfcheck import _Wrong

    with pytest.raises(_Wrong) as e:
        close([1.0, 5.0], [1.0, 3.14159], rtol=0.01, what="values")
    assert "entry 1" in str(e.value) and "too high" in str(e.value)
    assert "3.14" not in str(e.value)
    with pytest.raises(_Wrong) as e:
        within(0.2, 0.31416, 0.9)
    assert "below the expected range" in str(e.value) and "0.31" not in str(e.value)
    assert within(0.5, 0.31416, 0.9) == 0.5
