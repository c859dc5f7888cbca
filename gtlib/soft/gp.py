"""Gaussian-process label regression and its marginal likelihood (gtlib.soft, section 2).

Wilson's Figure 1(d, e), after Zhang et al. 2017: the GP fits corrupted labels, and its log
marginal likelihood falls as the corruption grows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from ..checks import (
    SEED,
    Tensor,
    boundary,
    check_labels,
    count,
    fraction,
    positive,
    tuple_of,
)
from ..config import Config, Result, param
from ..data import Dataset, corrupt_labels
from .common import _ARR, _fits, _pos, _vec

__all__ = [
    # configs and results
    "GPConfig",
    # functions
    "run_gp_corruption",
]


@boundary(
    a=Tensor("float", 2),
    b=Tensor("float", 2),
    lengthscale=positive(),
    variance=positive(),
)
def rbf_kernel(
    a: torch.Tensor, b: torch.Tensor, lengthscale: float, variance: float = 1.0
) -> torch.Tensor:
    """``variance * exp(-||a - b||^2 / (2 lengthscale^2))`` between the rows of ``a`` and ``b``."""
    lengthscale = _pos("lengthscale", lengthscale)
    variance = _pos("variance", variance)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise ValueError("a and b must be 2-D with the same number of columns")
    d2 = (
        a.pow(2).sum(1)[:, None] + b.pow(2).sum(1)[None, :] - 2 * a @ b.T
    ).clamp_min(0)
    return variance * torch.exp(-0.5 * d2 / lengthscale**2)


@boundary(x=Tensor("float", 2))
def median_lengthscale(x: torch.Tensor) -> float:
    """The median pairwise distance of the rows of ``x`` (the 'median heuristic')."""
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError("x must be 2-D with at least two rows")
    d = torch.cdist(x, x)
    return float(d[torch.triu(torch.ones_like(d, dtype=torch.bool), 1)].median())


@boundary(
    x=Tensor("float", 2),
    y=Tensor("int", 1),
    x_test=Tensor("float", 2),
    num_classes=count(2),
    lengthscales=_ARR,
    noise_ratio=positive(),
)
def gp_label_regression(
    x: torch.Tensor,
    y: torch.Tensor,
    x_test: torch.Tensor,
    num_classes: int,
    lengthscales,
    noise_ratio: float = 1e-3,
) -> dict:
    """GP regression on centred one-hot labels, hyperparameters chosen by marginal likelihood.

    Each class score is an independent GP with kernel ``s * (k_ell(x, x') + noise_ratio * delta)``:
    an RBF kernel ``k_ell`` of lengthscale ``ell`` plus observation noise that is a fixed small
    fraction ``noise_ratio`` of the signal variance ``s``, so the posterior mean nearly interpolates
    the labels (as a network trained to zero error does). The class is the arg-max of the
    posterior means, a standard GP classifier by label regression. For each candidate ``ell`` the
    scale ``s`` has the closed-form maximizer ``s* = sum_c t_c^T A^-1 t_c / (n C)`` with
    ``A = K_ell + noise_ratio I``, and the log marginal likelihood (type-II maximum likelihood) is
    ``-(n C / 2) (1 + log(2 pi s*)) - (C / 2) log|A|``; the best ``ell`` is kept. Float64 Cholesky.

    Returns
    -------
    dict with ``train_pred``, ``test_pred`` (class indices), ``log_ml`` (nats, total),
    ``lengthscale`` and ``signal_var``.
    """
    noise_ratio = _pos("noise_ratio", noise_ratio)
    lengthscales = _vec("lengthscales", lengthscales)
    if np.any(lengthscales <= 0):
        raise ValueError(
            f"lengthscales must all be > 0, got {lengthscales.tolist()}"
        )
    check_labels("y", y, num_classes, x.shape[0])
    if x_test.shape[1] != x.shape[1]:
        raise ValueError(
            f"x_test must have the {x.shape[1]} columns of x, got "
            f"{tuple(x_test.shape)}"
        )
    x = x.double()
    x_test = x_test.double()
    n, C = x.shape[0], num_classes
    t = F.one_hot(y.long(), C).double() - 1.0 / C
    eye = torch.eye(n, dtype=torch.float64, device=x.device)
    best = None
    for ell in lengthscales:
        k = rbf_kernel(x, x, float(ell))
        chol = torch.linalg.cholesky(k + noise_ratio * eye)
        alpha = torch.cholesky_solve(t, chol)
        s = float((t * alpha).sum()) / (n * C)
        log_ml = -0.5 * n * C * (1 + math.log(2 * math.pi * s)) - C * float(
            torch.log(torch.diagonal(chol)).sum()
        )
        if best is None or log_ml > best[0]:
            best = (log_ml, float(ell), s, k, alpha)
    log_ml, ell, s, k, alpha = best
    train_mean = k @ alpha
    test_mean = rbf_kernel(x_test, x, ell) @ alpha
    return {
        "train_pred": train_mean.argmax(1),
        "test_pred": test_mean.argmax(1),
        "log_ml": log_ml,
        "lengthscale": ell,
        "signal_var": s,
    }


@dataclass
class GPConfig(Config):
    """A GP under label corruption on MNIST-1D, after Wilson (2025), Figure 1(d, e).

    ``FULL``: more data, finer corruption and lengthscale grids.

    Parameters
    ----------
    n_train : int, default 2000
        Number of training examples; an int >= 2.
    n_test : int, default 1000
        Number of test examples; an int >= 1.
    corruptions : tuple, default (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
        Fractions of corrupted labels; a tuple (at least 1 item) of items each a finite number in
        [0, 1].
    noise_ratio : float, default 0.001
        Observation noise relative to the kernel's scale; a finite number > 0.
    lengthscale_factors : tuple, default (0.35, 0.5, 0.7, 1.0, 1.4)
        Kernel lengthscales, as multiples of the median pairwise distance; a tuple (at least 1
        item) of items each a finite number > 0.
    """

    FULL = dict(
        n_train=6000,
        n_test=2000,
        corruptions=tuple(np.round(np.linspace(0, 1, 11), 2)),
        lengthscale_factors=tuple(np.round(np.geomspace(0.25, 2.0, 10), 3)),
    )

    n_train: int = param(2000, count(2))
    n_test: int = param(1000, count())
    corruptions: tuple = param((0.0, 0.2, 0.4, 0.6, 0.8, 1.0), tuple_of(fraction()))
    noise_ratio: float = param(1e-3, positive())
    lengthscale_factors: tuple = param(
        (0.35, 0.5, 0.7, 1.0, 1.4),  # x median pairwise distance
        tuple_of(positive()),
    )


@dataclass
class GPCorruptionResult(Result):
    """What :func:`run_gp_corruption` measured, one entry per corruption level: training accuracy
    (on the corrupted labels), test accuracy (on the clean test labels), log marginal likelihood
    per training point (nats) and the chosen lengthscale; ``chance`` is ``1 / classes``."""

    corruption: list[float]
    train_acc: list[float]
    test_acc: list[float]
    log_ml: list[float]
    lengthscale: list[float]
    chance: float


@boundary(seed=SEED)
def run_gp_corruption(
    cfg: GPConfig, ds: Dataset, seed: int = 0
) -> GPCorruptionResult:
    """Train accuracy, test accuracy and log marginal likelihood by corruption.

    Train accuracy, test accuracy and log marginal likelihood (per training point) by corruption.

    ``ds`` is a :class:`gtlib.data.Dataset`; its first ``cfg.n_train`` training and ``cfg.n_test``
    test points are used. Corruptions are nested (``corrupt_labels`` with one seed); test accuracy
    is measured against the clean test labels, as in Zhang et al. (2017).

    Parameters
    ----------
    cfg : GPConfig
        The experiment's settings; a GPConfig.
    ds : Dataset
        The dataset; a Dataset.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].

    Returns
    -------
    GPCorruptionResult
        The curves, by corruption fraction.

    References
    ----------
    Wilson (2025), "Deep Learning is Not So Mysterious or Different", ICML 2025, Figure 1(d, e).
    Zhang et al. (2017), "Understanding deep learning requires rethinking generalization".
    """
    _fits(ds, cfg.n_train, cfg.n_test)
    x, y0 = ds.x[: cfg.n_train].cpu(), ds.y[: cfg.n_train].cpu()
    xt, yt = ds.x_test[: cfg.n_test].cpu(), ds.y_test[: cfg.n_test].cpu()
    ells = np.asarray(cfg.lengthscale_factors) * median_lengthscale(x)
    out = GPCorruptionResult([], [], [], [], [], chance=1.0 / ds.num_classes)
    for frac in cfg.corruptions:
        y = corrupt_labels(y0, float(frac), ds.num_classes, seed=seed)
        r = gp_label_regression(x, y, xt, ds.num_classes, ells, cfg.noise_ratio)
        out.corruption.append(float(frac))
        out.train_acc.append(float((r["train_pred"] == y).double().mean()))
        out.test_acc.append(float((r["test_pred"] == yt).double().mean()))
        out.log_ml.append(r["log_ml"] / cfg.n_train)
        out.lengthscale.append(r["lengthscale"])
    return out
