"""The overparameterized linear construction (gtlib.uniform, section 5).

Nagarajan and Kolter (2019), Section 3.1: the data, one step of gradient descent, and the set S'
of negated noise on which the learned classifier fails: :func:`linear_data`, :func:`one_step_gd`,
:func:`linear_sprime`, :func:`linear_errors`, :func:`linear_sweep`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from ..checks import SEED, InstanceOf, Tensor, boundary, check_int, count, positive
from ..config import Config, Result, param
from .common import _sizes
from .power_law import nearest_neighbour_predict

__all__ = [
    # configs and results
    "LinearConstruction",
    # functions
    "linear_errors",
    "linear_nn_errors",
    "linear_sweep",
]


@dataclass
class LinearConstruction(Config):
    """Nagarajan and Kolter's distribution for an overparameterized linear classifier.

    An input is ``x = (x1, x2)`` with ``x1`` in R^K and ``x2`` in R^D; the label ``y`` is +1 or -1
    with probability 1/2, ``x1 = 2 y u`` for a fixed ``u`` with ``||u|| = 1/sqrt(m)`` (``m`` the
    training-set size; we take ``u`` along the all-ones direction) and ``x2 ~ N(0, (noise_var/D) I)``
    with ``noise_var = 32``. The learner takes one gradient step of size 1 from ``w = 0`` on the
    linear loss ``-sum_i y_i w.x_i`` (the first step of hinge-loss GD), so ``w = sum_i y_i x_i``.

    Parameters
    ----------
    K : int, default 1
        Dimension of ``x1``, the signal; an int >= 1.
    D : int, default 20000
        Dimension of ``x2``, the noise; an int >= 1.
    m : int, default 64
        Training-set size; an int >= 1.
    noise_var : float, default 32.0
        Noise variance; a finite number > 0.
    signal : float, default 2.0
        Scale of the signal: ``x1 = signal * y * u``; a finite number > 0.

    References
    ----------
    Nagarajan and Kolter (2019), "Uniform convergence may be unable to explain generalization in
    deep learning".
    """

    K: int = param(1, count())
    D: int = param(20_000, count())
    m: int = param(64, count())
    noise_var: float = param(32.0, positive())
    signal: float = param(2.0, positive())

    @property
    def u(self) -> torch.Tensor:
        """The signal direction, ``||u|| = 1/sqrt(m)``."""
        return torch.full(
            (self.K,), 1.0 / math.sqrt(self.K * self.m), dtype=torch.float64
        )

    @boundary(n=count(), generator=InstanceOf(torch.Generator))
    def sample(
        self, n: int, generator: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``n`` draws ``(x1 (n, K), x2 (n, D), y (n,) in {-1, +1})`` in float64."""
        self.validate()
        n = check_int("n", n, minimum=1)
        y = torch.randint(0, 2, (n,), generator=generator).to(torch.float64) * 2 - 1
        x1 = self.signal * y[:, None] * self.u[None, :]
        x2 = torch.randn(
            n, self.D, generator=generator, dtype=torch.float64
        ) * math.sqrt(self.noise_var / self.D)
        return x1, x2, y


@boundary(cfg=InstanceOf(LinearConstruction), seed=SEED)
def linear_data(cfg: LinearConstruction, seed: int = 0):
    """A training set of ``cfg.m`` points from :class:`LinearConstruction` (``x1, x2, y``)."""
    seed = check_int("seed", seed, minimum=0)
    return cfg.validate().sample(cfg.m, torch.Generator().manual_seed(seed))


@boundary(x1=Tensor("float", 2), x2=Tensor("float", 2), y=Tensor("float", 1))
def one_step_gd(
    x1: torch.Tensor, x2: torch.Tensor, y: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Weights after one step of size 1 from zero on ``-sum_i y_i w.x_i``.

    The step gives ``w = sum_i y_i x_i``.

    Raises
    ------
    ValueError
        If the shapes disagree or a label is not +-1.
    """
    _check_linear(x1, x2, y)
    return (y[:, None] * x1).sum(0), (y[:, None] * x2).sum(0)


def _check_linear(x1, x2, y) -> None:
    for name, t in (("x1", x1), ("x2", x2), ("y", y)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if (
        x1.ndim != 2
        or x2.ndim != 2
        or y.ndim != 1
        or not (len(x1) == len(x2) == len(y))
    ):
        raise ValueError("x1 must be (n, K), x2 (n, D) and y (n,) with the same n")
    if not bool(((y == 1) | (y == -1)).all()):
        raise ValueError("y must hold labels +1 and -1")


@boundary(x1=Tensor("float", 2), x2=Tensor("float", 2), y=Tensor("float", 1))
def linear_sprime(x1: torch.Tensor, x2: torch.Tensor, y: torch.Tensor):
    """Nagarajan and Kolter's S': the training set with its noise part negated.

    ``S' = (x1, -x2, y)``. Negating ``x2`` leaves the distribution unchanged, so S'
    is itself an i.i.d. sample of ``cfg.m`` points, which is what lets it defeat
    every two-sided uniform-convergence bound.
    """
    _check_linear(x1, x2, y)
    return x1, -x2, y


@boundary(
    w1=Tensor("float", 1),
    w2=Tensor("float", 1),
    x1=Tensor("float", 2),
    x2=Tensor("float", 2),
)
def linear_predict(
    w1: torch.Tensor, w2: torch.Tensor, x1: torch.Tensor, x2: torch.Tensor
) -> torch.Tensor:
    """``sign(w1.x1 + w2.x2)`` as +-1 (0 counts as an error for either label)."""
    if len(x1) != len(x2):
        raise ValueError(
            f"x1 and x2 must have the same number of rows, got {len(x1)} and "
            f"{len(x2)}"
        )
    if x1.shape[1] != len(w1):
        raise ValueError(
            f"w1 must have {x1.shape[1]} entries (the columns of x1), got {len(w1)}"
        )
    if x2.shape[1] != len(w2):
        raise ValueError(
            f"w2 must have {x2.shape[1]} entries (the columns of x2), got {len(w2)}"
        )
    return _predict(w1, w2, x1, x2)


def _predict(w1, w2, x1, x2) -> torch.Tensor:
    return torch.sign(x1 @ w1 + x2 @ w2)


@dataclass
class LinearErrors(Result):
    train: float
    test: float  # exact given the learned w (see linear_errors)
    sprime: float
    uc_lower_bound: float
    fresh: float = float(
        "nan"
    )  # error on an independent sample of m points (S' 's control)


@boundary(cfg=InstanceOf(LinearConstruction), seed=SEED)
def linear_errors(cfg: LinearConstruction, seed: int = 0) -> LinearErrors:
    """Train by one GD step on ``cfg.m`` points and measure the errors.

    Train by one GD step on ``cfg.m`` points; return training, test and S' errors and the UC floor.

    The test error is computed exactly given the learned ``(w1, w2)``: for a fresh point,
    ``y (w1.x1 + w2.x2) = signal * w1.u + N(0, ||w2||^2 noise_var / D)``, so the error is
    ``Phi(-signal * w1.u / (||w2|| sqrt(noise_var / D)))``. ``uc_lower_bound`` is
    ``max(0, err_S' - err_test)``, the quantity that the S' argument puts under every two-sided
    uniform-convergence bound (Nagarajan and Kolter 2019, Section 3). ``fresh`` is the error on an
    independent sample of ``cfg.m`` points: distributed like S' but not built from S.

    Parameters
    ----------
    cfg : LinearConstruction
        The experiment's settings; a LinearConstruction.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].

    Returns
    -------
    LinearErrors
        Training, test and S' errors and the uniform-convergence floor.

    References
    ----------
    Nagarajan and Kolter (2019), "Uniform convergence may be unable to explain generalization in
    deep learning".
    """
    x1, x2, y = linear_data(cfg, seed)
    w1, w2 = one_step_gd(x1, x2, y)
    train = float((_predict(w1, w2, x1, x2) != y).double().mean())
    s1, s2, sy = linear_sprime(x1, x2, y)
    sprime = float((_predict(w1, w2, s1, s2) != sy).double().mean())
    fresh_gen = torch.Generator().manual_seed(
        10**6 + check_int("seed", seed, minimum=0)
    )
    f1, f2, fy = cfg.sample(cfg.m, fresh_gen)
    fresh = float((_predict(w1, w2, f1, f2) != fy).double().mean())
    mean = cfg.signal * float(w1 @ cfg.u)
    sd = float(w2.norm()) * math.sqrt(cfg.noise_var / cfg.D)
    test = 0.5 * math.erfc(mean / sd / math.sqrt(2)) if sd > 0 else float(mean <= 0)
    return LinearErrors(
        train=train,
        test=test,
        sprime=sprime,
        uc_lower_bound=max(0.0, sprime - test),
        fresh=fresh,
    )


@dataclass
class LinearNNErrors(Result):
    """What :func:`linear_nn_errors` measured: the 1-nearest-neighbour null on one draw of S."""

    test: float  # error on n_test fresh points
    sprime: float  # error on S'


@boundary(cfg=InstanceOf(LinearConstruction), seed=SEED, n_test=count())
def linear_nn_errors(
    cfg: LinearConstruction, seed: int = 0, n_test: int = 200
) -> LinearNNErrors:
    """The measured null of Experiment 3: a 1-nearest-neighbour classifier on the same S.

    Uses the training set of :func:`linear_errors` with the same ``seed`` (so the same S and S'),
    classifies S' and ``n_test`` fresh points (drawn from a generator seeded apart from S) by
    :func:`nearest_neighbour_predict` on the whole input ``(x1, x2)``. The 1-NN learner also fits
    S exactly, but it has no one-step-GD weight vector that memorizes the noise of S.

    Parameters
    ----------
    cfg : LinearConstruction
        The experiment's settings; a LinearConstruction.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    n_test : int, default 200
        Number of test examples; an int >= 1.

    Returns
    -------
    LinearNNErrors
        The nearest-neighbour classifier's errors.
    """
    seed = check_int("seed", seed, minimum=0)
    x1, x2, y = linear_data(cfg, seed)
    s1, s2, sy = linear_sprime(x1, x2, y)
    t1, t2, ty = cfg.sample(n_test, torch.Generator().manual_seed(2 * 10**6 + seed))
    xs = torch.cat([x1, x2], 1)

    def err(a, b, lab):
        return float(
            (nearest_neighbour_predict(xs, y, torch.cat([a, b], 1)) != lab)
            .double()
            .mean()
        )

    return LinearNNErrors(test=err(t1, t2, ty), sprime=err(s1, s2, sy))


@boundary(m=count(), Ds=None, seeds=None, K=count(), noise_var=positive())
def linear_sweep(
    m: int,
    Ds: Sequence[int],
    seeds: Sequence[int],
    K: int = 1,
    noise_var: float = 32.0,
) -> dict[str, np.ndarray]:
    """Mean training, test and S' errors and the UC floor over ``seeds``, for each ``D`` in ``Ds``.

    Parameters
    ----------
    m : int
        Training points; an int >= 1.
    Ds : Sequence[int]
        The input dimensions.
    seeds : Sequence[int]
        One seed per repetition.
    K : int, default 1
        Dimension of the signal; an int >= 1.
    noise_var : float, default 32.0
        Noise variance; a finite number > 0.

    Returns
    -------
    dict[str, np.ndarray]
        The mean errors, by name, one entry per ``D``.
    """
    Ds = _sizes("Ds", Ds)
    seeds = _sizes("seeds", seeds, minimum=0)
    out = {
        k: np.zeros(len(Ds))
        for k in ("train", "test", "sprime", "uc_lower_bound", "fresh")
    }
    for j, D in enumerate(Ds):
        errs = [
            linear_errors(LinearConstruction(K=K, D=D, m=m, noise_var=noise_var), s)
            for s in seeds
        ]
        for k in out:
            out[k][j] = np.mean([getattr(e, k) for e in errs])
    out["D"] = np.asarray(Ds)
    return out


def _exact_test_error(
    cfg: LinearConstruction, w1: torch.Tensor, w2: torch.Tensor
) -> float:
    mean = cfg.signal * float(w1 @ cfg.u)
    sd = float(w2.norm()) * math.sqrt(cfg.noise_var / cfg.D)
    return 0.5 * math.erfc(mean / sd / math.sqrt(2)) if sd > 0 else float(mean <= 0)
