"""Self-checks for the exercises: tell a student whether a computed answer is right.

Every exercise that computes something has three cells in its notebook:

1. an *answer cell* (tag ``exercise-answer``) right after the exercise, outside the solution, that
   sets the answer to the sentinel ``None`` (``small_acc = None  # your code here``);
2. the solution (removed from the student edition), which computes the answer into that name;
3. a *check cell* (tags ``self-check`` and ``remove-output``) right after the solution:
   ``selfcheck.check("prelim-ex2", small_acc, mlp_out=mlp_out)``. The site does not show its
   output: both editions are built from one execution, with the solutions, so the student
   edition would show the solution's "correct".

:func:`check` prints one line, :func:`verdict` returns it as a :class:`Verdict`: ``correct``,
``not answered yet`` (the answer is still ``None``) or ``not right yet`` with what is off ("your
accuracy 0.91 is above the expected range. It is not below the accuracy with 4000 signals; did
you ...?"). It never prints the expected value and never raises for a wrong answer, so a student
edition runs from top to bottom before the student has answered anything. It raises only for a
mistake in the call itself (an unknown exercise, a missing or unexpected keyword, a bad tolerance,
a NaN expected value), naming the argument.

What an exercise's answer must be is registered here, under the exercise's label: a *judge* that
receives the answer and the chapter objects the check cell passes in (``mlp_out=mlp_out``), and,
where the expected value must be computed, computes it from gtlib (cheaply: no training), so that
the check cell shows no solution. Where an exercise trains new networks, its judge checks what
the text can promise at every seed: a range, an order or a sign.

Set ``GTLIB_STRICT_SELFCHECKS=1`` to turn every answer that is not correct into a
:class:`SelfCheckFailed` error, for a run that must prove the solutions pass their own checks.
"""

from __future__ import annotations

import math
import os
import textwrap
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Callable

import numpy as np

__all__ = [
    "check",
    "verdict",
    "close",
    "within",
    "Verdict",
    "SelfCheckFailed",
    "EXERCISES",
    "NOT_ANSWERED",
]

NOT_ANSWERED = None
"""The sentinel an answer cell starts with: ``answer = None  # your code here``."""


class SelfCheckFailed(AssertionError):
    """Raised instead of printing, for an answer that is not correct, in strict mode.

    :func:`gtlib.selfcheck.check` raises it when the environment sets
    ``GTLIB_STRICT_SELFCHECKS=1``, so that a run can prove the solutions pass their own checks.
    """


@dataclass(frozen=True)
class Verdict:
    """The outcome of a check: ``status`` is ``"correct"``, ``"unanswered"`` or ``"wrong"``.

    A verdict is true exactly when the answer is correct (``bool(v) == v.ok``).

    Parameters
    ----------
    name : str
        The exercise's label, e.g. ``"prelim-ex2"``.
    status : str
        ``"correct"``, ``"unanswered"`` (the answer is still ``None``) or ``"wrong"``.
    message : str
        What the student reads after the status: the success message, what is off, or what the
        answer should be.
    """

    name: str
    status: str
    message: str

    @property
    def ok(self) -> bool:
        """Whether the answer is correct."""
        return self.status == "correct"

    def __bool__(self) -> bool:
        return self.ok

    def line(self) -> str:
        """The one line :func:`gtlib.selfcheck.check` prints.

        Returns
        -------
        str
            ``"Self-check <name>: <correct | not answered yet | not right yet>. <message>"``.
        """
        head = {
            "correct": "correct",
            "unanswered": "not answered yet",
            "wrong": "not right yet",
        }[self.status]
        return f"Self-check {self.name}: {head}. {self.message}".rstrip()


class _Wrong(Exception):
    """Raised by a judge (or a helper) with the message a student sees."""


# ----------------------------------------------------------------------------------------------
# Argument checks (mistakes in a check cell, not in an answer: these raise)


def _tolerance(arg: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise TypeError(f"{arg} must be a finite number >= 0, got {value!r}")
    if not math.isfinite(float(value)) or value < 0:
        raise ValueError(f"{arg} must be a finite number >= 0, got {value!r}")
    return float(value)


def _reference(arg: str, value: Any) -> np.ndarray:
    """An expected value or range end: finite numbers (an author's or the library's value)."""
    try:
        a = np.asarray(_numeric(value), dtype=float)
    except (TypeError, ValueError):
        raise TypeError(
            f"{arg} must be a number or an array of numbers, got {value!r}"
        ) from None
    if a.size == 0:
        raise ValueError(f"{arg} must not be empty")
    if np.isnan(a).any():
        raise ValueError(
            f"{arg} contains NaN: the reference value could not be computed"
        )
    if np.isinf(a).any():
        raise ValueError(f"{arg} contains an infinite value")
    return a


def _numeric(value: Any) -> Any:
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu().numpy()
    return value


# ----------------------------------------------------------------------------------------------
# What an answer must be (problems in an answer: these become a printed message)


def _fmt(x: float) -> str:
    return f"{x:.4g}"


def _as_array(answer: Any, what: str) -> np.ndarray:
    if isinstance(answer, (str, bytes, dict, set)):
        raise _Wrong(
            f"{what} should be numbers, but your answer is a {type(answer).__name__} "
            f"({str(answer)[:40]!r})."
        )
    try:
        a = np.asarray(_numeric(answer), dtype=float)
    except (TypeError, ValueError):
        raise _Wrong(
            f"{what} should be numbers, but your answer is a {type(answer).__name__} "
            f"({str(answer)[:40]!r})."
        ) from None
    if np.isnan(a).any():
        raise _Wrong(
            f"your {what} contains NaN; did a division by zero or an empty selection "
            "happen?"
        )
    if np.isinf(a).any():
        raise _Wrong(f"your {what} contains an infinite value.")
    return a


def _number(answer: Any, what: str) -> float:
    a = _as_array(answer, what)
    if a.size != 1:
        raise _Wrong(
            f"{what} should be one number, but your answer has shape {a.shape}."
        )
    return float(a.reshape(()))


def _numbers(answer: Any, what: str, length: int | None = None) -> np.ndarray:
    a = _as_array(answer, what)
    if a.ndim != 1:
        raise _Wrong(
            f"{what} should be a list of numbers, but your answer has shape {a.shape}."
        )
    if length is not None and len(a) != length:
        raise _Wrong(
            f"{what} should have {length} entries, but your answer has {len(a)}."
        )
    return a


def _fraction(answer: Any, what: str) -> float:
    x = _number(answer, what)
    if 1 < x <= 100:
        raise _Wrong(
            f"your {what} {_fmt(x)} looks like a percentage; give it as a fraction "
            "between 0 and 1."
        )
    if not 0 <= x <= 1:
        raise _Wrong(f"your {what} {_fmt(x)} is not between 0 and 1.")
    return x


def close(
    answer: Any,
    expected: Any,
    *,
    rtol: float = 1e-6,
    atol: float = 0.0,
    what: str = "value",
    hint: str = "",
) -> None:
    r"""Raise the student-facing message unless ``answer`` matches ``expected`` elementwise.

    The answer matches when every entry is within ``atol + rtol * |expected|``,

    .. math::

        |a_k - e_k| \leq \mathrm{atol} + \mathrm{rtol}\, |e_k| \quad \text{for every } k.

    The message says which way the answer is off, never the expected value. Bad ``rtol``,
    ``atol`` or ``expected`` raise ``TypeError``/``ValueError``.

    Parameters
    ----------
    answer : Any
        The student's answer: a number or an array of numbers (a tensor is read as an array).
    expected : Any
        The right value, of the answer's shape; finite numbers.
    rtol : float, default 1e-6
        Relative tolerance; a finite number >= 0.
    atol : float, default 0.0
        Absolute tolerance; a finite number >= 0.
    what : str, default "value"
        What the answer is, as the message names it ("accuracy", "distances from
        initialization").
    hint : str, default ""
        A sentence appended to the message when the answer is off.

    Raises
    ------
    TypeError, ValueError
        If ``rtol`` or ``atol`` is not a finite number >= 0, or ``expected`` is not a non-empty
        array of finite numbers (a mistake in the check cell, not in the answer).
    """
    rtol, atol = _tolerance("rtol", rtol), _tolerance("atol", atol)
    exp = _reference("expected", expected)
    got = _as_array(answer, what)
    if got.shape != exp.shape:
        raise _Wrong(
            f"your {what} has shape {got.shape}, but the answer has shape {exp.shape}."
            + (f" {hint}" if hint else "")
        )
    off = np.abs(got - exp) > atol + rtol * np.abs(exp)
    if not off.any():
        return
    k = int(np.flatnonzero(off.ravel())[0])
    g, e = float(got.ravel()[k]), float(exp.ravel()[k])
    subject = f"entry {k} of your {what}" if exp.size > 1 else f"your {what}"
    side = "too high" if g > e else "too low"
    tol = (
        (f"{rtol:.2g} relative" if rtol < 1e-3 else f"{100 * rtol:.3g}% relative")
        if rtol
        else f"{atol:.2g} absolute"
    )
    raise _Wrong(
        f"{subject}, {_fmt(g)}, is {side} by more than the tolerance ({tol})."
        + (f" {hint}" if hint else "")
    )


def within(
    answer: Any,
    low: Any = None,
    high: Any = None,
    *,
    what: str = "value",
    hint_low: str = "",
    hint_high: str = "",
) -> float:
    """Raise the student-facing message unless ``low < answer < high`` (``None``: no bound).

    Returns the answer as a float. ``low``/``high`` that are NaN raise ``ValueError``.

    Parameters
    ----------
    answer : Any
        The student's answer: one number (a one-element array or tensor is read as a number).
    low : Any, default None
        The lower bound, excluded (None: no lower bound); a finite number.
    high : Any, default None
        The upper bound, excluded (None: no upper bound); a finite number above ``low``.
    what : str, default "value"
        What the answer is, as the message names it.
    hint_low : str, default ""
        A sentence appended to the message when the answer is at or below ``low``.
    hint_high : str, default ""
        A sentence appended to the message when the answer is at or above ``high``.

    Returns
    -------
    float
        The answer, when it lies in the range.

    Raises
    ------
    TypeError, ValueError
        If ``low`` or ``high`` is not a finite number, or ``low`` is not below ``high`` (a mistake
        in the check cell, not in the answer).
    """
    lo = None if low is None else float(_reference("low", low).reshape(()))
    hi = None if high is None else float(_reference("high", high).reshape(()))
    if lo is not None and hi is not None and not lo < hi:
        raise ValueError(f"low must be below high, got low={lo} and high={hi}")
    x = _number(answer, what)
    if lo is not None and not x > lo:
        raise _Wrong(
            f"your {what} {_fmt(x)} is below the expected range."
            + (f" {hint_low}" if hint_low else "")
        )
    if hi is not None and not x < hi:
        raise _Wrong(
            f"your {what} {_fmt(x)} is above the expected range."
            + (f" {hint_high}" if hint_high else "")
        )
    return x


# ----------------------------------------------------------------------------------------------
# The exercises


@dataclass(frozen=True)
class Exercise:
    """An exercise's self-check: what the answer is (for messages), the chapter objects the check
    cell must pass (``given``), and the judge, which raises :class:`_Wrong` or returns the success
    message."""

    label: str
    answer: str
    given: tuple[str, ...]
    judge: Callable[..., str]


#: The registered self-checks, by exercise label: what :func:`gtlib.selfcheck.verdict` looks up.
#:
#: :meta hide-value:
EXERCISES: dict[str, Exercise] = {}


def _exercise(label: str, answer: str, *given: str):
    def register(judge):
        EXERCISES[label] = Exercise(label, answer, tuple(given), judge)
        return judge

    return register


def _mean_acc(out) -> float:
    return float(np.mean(_numeric(out["test_acc"])))


# Preliminaries


@_exercise(
    "prelim-ex2",
    "the MLP's mean test accuracy when trained on 1000 signals",
    "mlp_out",
)
def _prelim_ex2(ans, mlp_out):
    full = _mean_acc(mlp_out)
    within(
        _fraction(ans, "accuracy"),
        0.15,
        full,
        what="accuracy",
        hint_low="That is near chance (10%); did you pass the subset to prelim.train_models "
        "with the chapter's cfg?",
        hint_high="It is not below the accuracy with 4000 signals; did you train on "
        "ds.subset(range(1000)) and report the test accuracy, not the training one?",
    )
    return (
        "A quarter of the data costs test accuracy: MNIST-1D is far from saturated."
    )


@_exercise(
    "prelim-ex3",
    "the largest member difference in float32 at seeds 0, 1, 2 (3 numbers)",
)
def _prelim_ex3(ans):
    d = _numbers(ans, "differences", 3)
    if (d < 0).any():
        raise _Wrong(
            "a difference is negative; report the largest *absolute* difference "
            "(r['max_abs_diff'])."
        )
    return "Three seeds measured; compare the sizes with the float64 run of the chapter."


@_exercise(
    "prelim-ex4",
    "the MLP's mean test accuracy on signals with shuffled positions",
    "mlp_out",
)
def _prelim_ex4(ans, mlp_out):
    full = _mean_acc(mlp_out)
    x = _fraction(ans, "accuracy")
    within(
        x,
        full - 0.05,
        full + 0.05,
        what="accuracy",
        hint_low="It differs from the original order by more than seed noise; did you apply "
        "the same permutation to the training and the test signals?",
        hint_high="It differs from the original order by more than seed noise; did you "
        "train with the chapter's cfg, depth and seed?",
    )
    return "A fixed permutation is absorbed by the first layer: the MLP does not notice it."


@_exercise(
    "prelim-ex6",
    "the mean test accuracy of the MLP with one hidden layer",
    "lin",
    "mlp_out",
)
def _prelim_ex6(ans, lin, mlp_out):
    x = _fraction(ans, "accuracy")
    within(
        x,
        _mean_acc(lin),
        _mean_acc(mlp_out) + 0.03,
        what="accuracy",
        hint_low="It is not above the linear classifier; did you pass depth=1 to "
        "prelim.train_models?",
        hint_high="It is above two hidden layers by more than seed noise; did you pass "
        "depth=1 rather than cfg.depth?",
    )
    return (
        "One hidden layer lands between the linear classifier and two hidden layers."
    )


# Uniform convergence


@_exercise("uniform-convergence-ex1", "the ratio D/m at which the test error is 5%")
def _uc_ex1(ans):
    x = _number(ans, "D/m")
    z = NormalDist().inv_cdf(0.95)
    hint = "Solve Phi(-sqrt(D/m)/8) = 0.05 for D/m (a one-sided 5%)."
    if abs(x - 8 * z) < 0.5:
        hint = "You have sqrt(D/m); square it."
    elif abs(x - (8 * NormalDist().inv_cdf(0.975)) ** 2) < 5:
        hint = "A 5% error is one-sided: Phi(-t) = 0.05, not 0.025."
    close(x, (8 * z) ** 2, rtol=0.03, what="D/m", hint=hint)
    return "The formula needs D about 170 times m for a 5% test error."


@_exercise(
    "uniform-convergence-ex2",
    "per corruption level, (distance from initialization, Bartlett et al. term)",
    "rand",
)
def _uc_ex2(ans, rand):
    from . import uniform as U

    X = rand.x_train
    exp = []
    for k in range(len(rand.levels)):
        w = [W[k].detach() for W in rand.model.weights]
        w0 = [W0[k] for W0 in rand.init]
        exp.append(
            (
                float(U.distance_from_init(w, w0)),
                U.bartlett_bound(w, w0, float(X.norm()), gamma=1.0, n=len(X)),
            )
        )
    got = _as_array(ans, "answer")
    if got.shape != (len(exp), 2):
        raise _Wrong(
            f"give one pair (distance, Bartlett term) per corruption level: shape "
            f"({len(exp)}, 2), not {got.shape}."
        )
    close(
        got[:, 0],
        [e[0] for e in exp],
        rtol=1e-3,
        what="distances from initialization",
        hint="Use the Frobenius distance over all layers of network k: "
        "U.distance_from_init(w, w0).",
    )
    close(
        got[:, 1],
        [e[1] for e in exp],
        rtol=1e-3,
        what="Bartlett terms",
        hint="Use U.bartlett_bound with margin gamma=1.0, n=len(X) and ||X|| the norm of all "
        "training inputs.",
    )
    return "Both grow with the fraction of random labels: memorizing needs larger weights."


@_exercise(
    "uniform-convergence-ex3",
    "the largest network's error on projected fresh test points",
    "sph",
)
def _uc_ex3(ans, sph):
    x = _fraction(ans, "error")
    sprime = float(sph.sprime_error[-1])
    within(
        x,
        None,
        0.5 * sprime,
        what="error",
        hint_high="That is close to the S' error of projected *training* points; project "
        "fresh test points (with flipped labels) and use the largest network.",
    )
    return "Projected fresh points behave like test points: the bulges sit at the training set."


@_exercise(
    "uniform-convergence-ex4",
    "the fraction of the 20 training sets on which event 3 held",
)
def _uc_ex4(ans):
    within(
        _fraction(ans, "fraction"),
        0.75,
        None,
        what="fraction",
        hint_low="The bad set has probability at most delta; count a training set when "
        "its test error is at most 0.05 and its S' error is 1.",
    )
    return "Event 3 holds on (almost) every training set, as the argument needs."


@_exercise(
    "uniform-convergence-ex5",
    "the S' errors of the small-sphere sweep, in the order of increasing n",
)
def _uc_ex5(ans):
    e = _numbers(ans, "S' errors")
    if len(e) < 2:
        raise _Wrong("give the S' error at two or more training-set sizes.")
    if (e < 0).any() or (e > 1).any():
        raise _Wrong("an S' error is outside [0, 1]; give errors as fractions.")
    if not e[-1] < e[0]:
        raise _Wrong(
            "your S' error does not fall as n grows; did you take sprime_error (not "
            "test_error), and sizes well past the width?"
        )
    return "Once n is large against the width and d, the S' error leaves one."


@_exercise(
    "uniform-convergence-ex6",
    "the Bartlett et al. terms at margin 2 for the first two sizes",
    "series",
)
def _uc_ex6(ans, series):
    b4 = np.asarray(series["Bartlett et al. bound"], dtype=float)
    b2 = _numbers(ans, "Bartlett terms", 2)
    if not (b2 > b4[:2]).all():
        raise _Wrong(
            "your terms at margin 2 are not above those at margin 4; did you pass "
            "gamma=2.0 and keep the first two sizes and the same seed?"
        )
    return (
        "The 1/gamma factor wins at this scale: a smaller margin gives larger terms."
    )


# Feature contamination


@_exercise(
    "feature-contamination-ex1",
    "the predicted background ratio, as a dict {'quick': ..., 'full': ...}",
)
def _fc_ex1(ans):
    import gtlib
    from . import contamination as fc

    if not isinstance(ans, dict) or set(ans) != {"quick", "full"}:
        raise _Wrong("give a dict with the keys 'quick' and 'full'.")
    for preset in ("quick", "full"):
        c = gtlib.preset(fc.TheoryConfig, preset)
        rate = c.lr * c.weight_decay / (1 - c.momentum)
        close(
            _number(ans[preset], "ratio"),
            math.exp(-rate * c.steps),
            rtol=0.01,
            what=f"{preset} prediction",
            hint="The slow mode decays by 1 - lr * weight_decay / (1 - momentum) per step; "
            "raise it to the number of steps.",
        )
    return "The same product lr x steps gives the same prediction for both presets."


def _relu_along(history, members) -> float:
    m = history.array("background_mean")[:, members].mean(-1)
    return float(m[-1] - m[0])


@_exercise(
    "feature-contamination-ex2",
    "the ReLU network's change along e (last minus first record), constant background",
    "th",
)
def _fc_ex2(ans, th):
    x = _number(ans, "change along e")
    ref = _relu_along(th.history, th.members("ReLU"))
    within(
        x,
        0.5 * ref,
        None,
        what="change along e",
        hint_low="A constant background is a second bias input: the ReLU network's weights "
        "along e should grow about as much as with the random background. Did you "
        "take the ReLU member and the last minus the first record?",
    )
    return "The variance of the background plays no part: contamination is a first-moment effect."


@_exercise(
    "feature-contamination-ex3",
    "the first-order prediction of the output change of the first ReLU network at each "
    "of the 200 points th.test.x[:200], for a shift m = 0.01",
    "th",
)
def _fc_ex3(ans, th):
    import torch
    from . import contamination as fc

    net, i = th.net, th.members("ReLU")[0]
    x = th.test.x[:200]
    with torch.no_grad():
        actual = (
            (net(fc.shift_background(x, th.emb, 0.01))[i] - net(x)[i]).cpu().numpy()
        )
    got = _numbers(ans, "predictions", len(actual))
    scale = float(np.abs(actual).mean())
    err = float(np.abs(got - actual).mean()) / scale
    if err <= 0.1:
        return "The first-order formula matches the network's actual change."
    if float(np.abs(got + actual).mean()) / scale <= 0.1:
        raise _Wrong(
            "your predictions have the wrong sign; the shift *subtracts* m from every "
            "background coordinate."
        )
    raise _Wrong(
        "your predictions differ from the network's actual change by more than 10% "
        "on average. Sum a_j * gate_j * (e^T P_b^T w_j) over the units, times "
        "-m sqrt(k_b), point by point."
    )


@_exercise(
    "feature-contamination-ex4",
    "the linear classifier's accuracy drop (ID - OOD) for the uniform, centred and "
    "constant backgrounds",
    "mn",
)
def _fc_ex4(ans, mn):
    exp = [
        mn[f"linear{t}"]["ID"] - mn[f"linear{t}"]["OOD"]
        for t in ("", ", centred", ", constant")
    ]
    close(
        _numbers(ans, "drops", 3),
        exp,
        atol=2e-3,
        what="drops",
        hint="Order: uniform, centred, constant; a drop is ID minus OOD accuracy, as a "
        "fraction, read from mn['linear...'].",
    )
    return "Read off the runs: compare the centred and the constant drop with the uniform one."


@_exercise(
    "feature-contamination-ex5",
    "the mean component along e of the long run, at every recorded step",
)
def _fc_ex5(ans):
    a = _numbers(ans, "components along e")
    if len(a) < 2:
        raise _Wrong(
            "give the component along e at every recorded step (at least two)."
        )
    if not a[-1] > a[0]:
        raise _Wrong(
            "your component along e does not grow; did you take "
            "hist.array('background_mean') of the long run (steps=2000)?"
        )
    return (
        "The background weights along e keep growing; the core simply grows faster."
    )


@_exercise(
    "feature-contamination-ex6",
    "the gated student's change of ||P_b^T w|| and of the component along e",
    "di",
)
def _fc_ex6(ans, di):
    (n0, n1), (m0, m1) = di.student_background_norm, di.student_background_mean
    got = _numbers(ans, "changes", 2)
    close(
        got,
        [n1 - n0, m1 - m0],
        atol=1e-3,
        what="changes (norm, along e)",
        hint="Take the U[0,1] run's student: the last minus the first value of "
        "student_background_norm and of student_background_mean.",
    )
    return "The norm and the component along e need not move together; see the solution."


# Imbalanced contrastive learning


@_exercise(
    "imbalanced-contrastive-ex1",
    "the closed form of InfoNCE for n = 8, a = 1.7 and the chapter's tau",
    "tau",
)
def _ic_ex1(ans, tau):
    import torch
    from . import contrastive as C

    v = 1.7**0.5 * torch.eye(8)
    x = _number(ans, "loss")
    hint = "Each row has a/tau on the diagonal and 0 elsewhere; use the natural logarithm."
    if abs(x - math.log(8)) < 1e-6:
        hint = "That is log n, the limit a -> 0; keep a = 1.7."
    close(x, float(C.infonce(v, v, tau)), rtol=1e-5, what="loss", hint=hint)
    return "Your closed form agrees with C.infonce."


@_exercise(
    "imbalanced-contrastive-ex2", "the largest |f(X) + f(-X)| over all encoders"
)
def _ic_ex2(ans):
    x = _number(ans, "largest |f(X) + f(-X)|")
    if x < 0:
        raise _Wrong("a largest absolute value cannot be negative.")
    within(
        x,
        None,
        1e-5,
        what="largest |f(X) + f(-X)|",
        hint_high="If the encoder is odd, f(X) + f(-X) vanishes; did you add the two "
        "representations (not subtract them), on the same samples X?",
    )
    return "The encoder is odd: f(-X) = -f(X)."


@_exercise(
    "imbalanced-contrastive-ex3",
    "mu for the full preset at each of its ratios and then at ratio 10",
)
def _ic_ex3(ans):
    from . import contrastive as C

    full = C.ContrastiveConfig.full()
    ratios = list(full.ratios) + [10.0]
    close(
        _numbers(ans, "margins", len(ratios)),
        [C.learning_margin(full, x) for x in ratios],
        rtol=1e-3,
        what="margins",
        hint="mu = L_s^2 p_min / (tau lambda) with the full preset's constants; p_min "
        "depends on the ratio.",
    )
    return "Now read off which ratios have mu > 1."


@_exercise(
    "imbalanced-contrastive-ex4",
    "the energy ratios at pruning fractions 0, 0.25 and 0.75 (one replicate)",
)
def _ic_ex4(ans):
    e = _numbers(ans, "energy ratios", 3)
    if not (e > 0).all():
        raise _Wrong("an energy ratio is a ratio of energies and must be positive.")
    return "Compare the three; with one replicate, small differences are noise."


@_exercise(
    "imbalanced-contrastive-ex6",
    "the energy ratios of the unpruned, the pruned (straight-through) and the hard-mask "
    "encoders",
    "unpruned",
    "pruned",
)
def _ic_ex6(ans, unpruned, pruned):
    e = _numbers(ans, "energy ratios", 3)
    close(
        e[:2],
        [unpruned, pruned],
        rtol=1e-4,
        what="first two energy ratios",
        hint="Take Experiment 1's encoders at ratio 3, first replicate: get('energy', kl) "
        "and get('energy', kl, rho).",
    )
    if not e[2] > 0:
        raise _Wrong("the hard-mask energy ratio must be positive.")
    if abs(e[2] - e[1]) <= 1e-9 * abs(e[1]):
        raise _Wrong(
            "your hard-mask ratio equals the straight-through one; did you pass "
            "hard_mask=True?"
        )
    return "Now compare the order with your prediction."


# Mode connectivity


@_exercise(
    "mode-connectivity-ex2",
    "the error barriers at k = 0, in points, for (lr 0.2, no warm-up), (0.2, 20%), "
    "(0.1, none), (0.1, 20%)",
)
def _mc_ex2(ans):
    b = _numbers(ans, "barriers", 4)
    if (b < -1).any() or (b > 100).any():
        raise _Wrong("a barrier is outside [0, 100] points.")
    if b.max() <= 1 and b[0] > 0:
        raise _Wrong(
            "these look like fractions; give the barriers in points (x 100)."
        )
    if not b[2] < b[0]:
        raise _Wrong(
            "your half-learning-rate barrier is not below the peak-learning-rate one "
            "(both without warm-up); check the order of the four recipes."
        )
    return "The learning rate matters more than the warm-up here."


@_exercise(
    "mode-connectivity-ex3",
    "the matched train-loss barriers: weight matching, activation matching E[ab], "
    "activation matching Pearson",
    "A",
)
def _mc_ex3(ans, A):
    b = _numbers(ans, "barriers", 3)
    close(
        b[0],
        A.matched_train.loss_barrier,
        rtol=1e-3,
        what="weight-matching barrier",
        hint="Evaluate the path from A.a to A.b_matched on the training set.",
    )
    naive = float(A.naive_train.loss_barrier)
    if not (b < naive).all():
        raise _Wrong(
            "an aligned barrier is not below the naive one; align b to a before "
            "evaluating the path (C.permute with the matching)."
        )
    return "Every alignment removes most of the barrier, none removes all of it."


@_exercise(
    "mode-connectivity-ex4",
    "the endpoint test accuracy of the pair trained with a ten times smaller learning "
    "rate",
    "reference",
)
def _mc_ex4(ans, reference):
    x = _fraction(ans, "accuracy")
    within(
        x,
        0.15,
        float(reference.naive.end_acc),
        what="accuracy",
        hint_low="That is near chance for MNIST-1D; did training run?",
        hint_high="A ten times smaller learning rate should learn less in the same steps; "
        "did you divide the recipe's lr by 10?",
    )
    return "The low-learning-rate networks learn less; compare their barriers accordingly."


@_exercise(
    "mode-connectivity-ex6",
    "task 0's and task 1's accuracies after negating task 0's vector with lambda = 2",
)
def _mc_ex6(ans):
    a = _numbers(ans, "accuracies", 2)
    if (a < 0).any() or (a > 1).any():
        raise _Wrong("give accuracies as fractions between 0 and 1.")
    if not a[0] < a[1]:
        raise _Wrong(
            "task 0 is not hurt more than task 1; did you subtract lambda * tau_0 "
            "(scale -2) and evaluate each task with its own head?"
        )
    return "Negation hurts its own task most; now compare how much task 1 keeps."


# Soft inductive biases


@_exercise(
    "soft-inductive-biases-ex1",
    "the kl-form bounds at train error 0.1, n = 8000, for K = 1000, 3000, 10000 bits",
)
def _sib_ex1(ans):
    from . import soft

    Ks = (1000, 3000, 10000)
    got = _numbers(ans, "kl-form bounds", 3)
    close(
        got,
        [soft.pac_bayes_kl_bound(0.1, K * math.log(2), 8000) for K in Ks],
        rtol=1e-3,
        what="kl-form bounds",
        hint="Pass the complexity in nats: K bits are K ln 2 nats.",
    )
    if not (got < [soft.countable_bound(0.1, K, 8000) for K in Ks]).all():
        raise _Wrong("a kl-form bound is not below the square-root form.")
    return "The kl form is tighter than the square-root form at every code length."


@_exercise(
    "soft-inductive-biases-ex2",
    "the number of bits for a complexity term of 0.1 (n = 8000, delta = 0.05)",
)
def _sib_ex2(ans):
    x = _number(ans, "number of bits")
    n = 8000
    exact = (0.1**2 * 2 * n - math.log(1 / 0.05)) / math.log(2)
    hint = "Solve sqrt((K ln 2 + ln(1/delta)) / (2n)) = 0.1 for K."
    if abs(x - exact * math.log(2)) < 1:
        hint = "That is in nats; a bit is ln 2 nats."
    close(x, exact, rtol=0.01, what="number of bits", hint=hint)
    return "A couple of hundred bits: far fewer than any network's parameters."


@_exercise(
    "soft-inductive-biases-ex3",
    "the degree the evidence prefers (2 <= J < 60)",
    "poly",
)
def _sib_ex3(ans, poly):
    from . import soft

    x = _number(ans, "degree")
    if x != int(x):
        raise _Wrong("a degree is a whole number.")
    rc = poly.targets["complex"]
    degrees = range(2, 60)
    ev = [
        soft.evidence_decomposition(poly.x, rc.y, J, 1.0, 0.2**2, 1.0)[
            "log_evidence"
        ]
        for J in degrees
    ]
    best = degrees[int(np.argmax(ev))]
    if int(x) != best:
        side = "higher" if x > best else "lower"
        raise _Wrong(
            f"your degree {int(x)} is {side} than the one the evidence prefers; use "
            "the complex target, gamma = 1, sigma^2 = 0.2^2, tau^2 = 1, and degrees "
            "2 to 59."
        )
    return "Now compare it with the hindsight-best degree of Experiment 1."


@_exercise(
    "soft-inductive-biases-ex4",
    "(trace of the hat matrix, N_eff) for random features of your choice",
)
def _sib_ex4(ans):
    t, neff = _numbers(ans, "pair (trace, N_eff)", 2)
    if not t > 0:
        raise _Wrong("the trace of a hat matrix with alpha > 0 is positive.")
    close(
        neff,
        t,
        rtol=1e-6,
        what="N_eff",
        hint="N_eff sums lambda / (lambda + alpha) over the eigenvalues of H = Phi^T Phi; "
        "use the same alpha as the hat matrix.",
    )
    return "N_eff is the effective degrees of freedom of ridge regression."


@_exercise(
    "soft-inductive-biases-ex5",
    "the test MSE at p = n for noise s.d. 0, 0.1 and 0.3",
)
def _sib_ex5(ans):
    p = _numbers(ans, "peak heights", 3)
    if not (p > 0).all():
        raise _Wrong("a test MSE is positive.")
    if not (p[0] < p[1] < p[2]):
        raise _Wrong(
            "your peak heights do not rise with the noise; take the test MSE at "
            "p / n = 1 of each curve, in the order 0, 0.1, 0.3."
        )
    return "The peak stays without noise; more noise raises it."


@_exercise(
    "soft-inductive-biases-ex6",
    "the bound of each model of Experiment 6 with five times as many training points",
    "comp_sizes",
)
def _sib_ex6(ans, comp_sizes):
    from . import soft

    exp = [soft.countable_bound(r.train_err_q, r.bits, 5 * r.n) for r in comp_sizes]
    close(
        _numbers(ans, "bounds", len(exp)),
        exp,
        rtol=1e-4,
        what="bounds",
        hint="Keep each model's quantized training error and code length; only n changes.",
    )
    return "The complexity term shrinks as 1/sqrt(n)."


@_exercise(
    "soft-inductive-biases-ex7",
    "excess risk / noise variance of the cross-validated fit, "
    "{'simple': ..., 'complex': ...}",
    "poly",
)
def _sib_ex7(ans, poly):
    if not isinstance(ans, dict) or set(ans) != {"simple", "complex"}:
        raise _Wrong("give a dict with the keys 'simple' and 'complex'.")
    for name in ("simple", "complex"):
        r = poly.targets[name]
        soft_ex = r.fits["evidence"].excess / r.noise_var
        within(
            _number(ans[name], "excess risk"),
            0,
            5 * soft_ex + 0.05,
            what=f"{name} excess risk / noise variance",
            hint_low="An excess risk is positive.",
            hint_high="It is far worse than the soft fit; choose the degree by 5-fold "
            "cross-validation on the training data and divide by the noise "
            "variance.",
        )
    return "The hard restriction lands close to the soft fit here; the difference is elsewhere."


@_exercise(
    "soft-inductive-biases-ex8",
    "the excess risks of the unpenalized and the soft fit on random inputs",
)
def _sib_ex8(ans):
    free, soft_ = _numbers(ans, "excess risks", 2)
    if not (free > soft_ > 1):
        raise _Wrong(
            "expected: the unpenalized fit far above the soft one, and both above "
            "the noise variance 1; check the order (no penalty, soft) and that you "
            "measure the mean of f^2 on a fine grid of [-1, 1]."
        )
    return "Catastrophic without the penalty, tempered with it."


# ----------------------------------------------------------------------------------------------


def verdict(name: str, answer: Any, **given: Any) -> Verdict:
    """The :class:`gtlib.selfcheck.Verdict` on the answer to exercise ``name``, without printing it.

    ``name`` is the exercise's label, e.g. ``"prelim-ex2"``; :func:`gtlib.selfcheck.check` prints
    the verdict. ``given`` are the chapter objects the exercise's check needs (see
    :data:`gtlib.selfcheck.EXERCISES`).
    An ``answer`` of ``None`` (or ``...``) is "not answered yet". Raises only for a bad call:
    ``TypeError``/``ValueError`` naming the argument.

    Parameters
    ----------
    name : str
        The exercise's label, a key of :data:`gtlib.selfcheck.EXERCISES`.
    answer : Any
        The student's answer (``None`` or ``...``: not answered yet).
    **given : Any
        The chapter objects the exercise's check needs, by the names it declares (e.g.
        ``mlp_out=mlp_out``); exactly those.

    Returns
    -------
    Verdict
        ``"correct"`` with the exercise's message, ``"unanswered"`` with what the answer should
        be, or ``"wrong"`` with what is off (never the expected value).

    Raises
    ------
    TypeError
        If ``name`` is not a str, or a keyword the exercise needs is missing or one it does not
        take is given.
    ValueError
        If ``name`` is not the label of an exercise with a self-check.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be an exercise label (a str), got {name!r}")
    if name not in EXERCISES:
        raise ValueError(
            f"name must be the label of an exercise with a self-check, one of "
            f"{sorted(EXERCISES)}, got {name!r}"
        )
    ex = EXERCISES[name]
    missing = [g for g in ex.given if g not in given]
    extra = sorted(set(given) - set(ex.given))
    if missing:
        raise TypeError(
            f"check({name!r}, ...) needs the keyword argument(s) {missing}"
        )
    if extra:
        raise TypeError(
            f"check({name!r}, ...) got unexpected keyword argument(s) {extra}; it "
            f"takes {list(ex.given) or 'none'}"
        )
    if answer is NOT_ANSWERED or answer is Ellipsis:
        return Verdict(
            name,
            "unanswered",
            f"Put your answer in the answer cell above and run both cells. Wanted: "
            f"{ex.answer}.",
        )
    try:
        return Verdict(name, "correct", ex.judge(answer, **given))
    except _Wrong as wrong:
        text = str(wrong)
        return Verdict(name, "wrong", text[:1].upper() + text[1:])


def check(name: str, answer: Any, **given: Any) -> None:
    """Print the :func:`gtlib.selfcheck.verdict` on the answer to exercise ``name``.

    The verdict's line is wrapped at 85 characters, the width of the book's code column.

    Never raises for a wrong or missing answer, except with ``GTLIB_STRICT_SELFCHECKS=1``, where an
    answer that is not correct raises :class:`gtlib.selfcheck.SelfCheckFailed`. Returns nothing, so
    that a check cell shows the line and nothing else.

    Parameters
    ----------
    name : str
        The exercise's label, e.g. ``"prelim-ex2"``.
    answer : Any
        The student's answer (``None`` or ``...``: not answered yet).
    **given : Any
        The chapter objects the exercise's check needs, by the names it declares (e.g.
        ``mlp_out=mlp_out``).

    Raises
    ------
    TypeError, ValueError
        For a bad call, as :func:`gtlib.selfcheck.verdict` (an unknown exercise, a missing or
        unexpected keyword).
    SelfCheckFailed
        If the answer is not correct and ``GTLIB_STRICT_SELFCHECKS=1``.
    """
    v = verdict(name, answer, **given)
    if not v.ok and os.environ.get("GTLIB_STRICT_SELFCHECKS", "") == "1":
        raise SelfCheckFailed(v.line())
    print(
        textwrap.fill(v.line(), 85, break_long_words=False, break_on_hyphens=False)
    )
