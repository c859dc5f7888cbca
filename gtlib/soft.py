"""Soft inductive biases: the tools of Wilson (2025), "Deep Learning is Not So Mysterious or Different".

Wilson (ICML 2025, arXiv 2503.02113) argues that benign overfitting, double descent and the success
of overparameterized models are neither mysterious nor special to deep learning. They appear in
simple models, and long-standing tools explain them: a *soft inductive bias* (a flexible hypothesis
space with a preference for simple solutions), the marginal likelihood, effective dimensionality
(Maddox et al. 2020) and countable-hypothesis / compression bounds (Lotfi et al. 2022).

This module holds, top to bottom:

1. **Order-regularized polynomials**: a degree-150 Legendre expansion with
   the penalty ``sum_j gamma**j * w_j**2``, fitted in closed form; its marginal likelihood sets the
   noise level and the prior scale.
2. **Gaussian-process label regression** with its log marginal likelihood, under label corruption
   (Wilson's Figure 1(d, e), after Zhang et al. 2017).
3. **Random-feature regression** with minimum-norm least squares, and the effective
   dimensionality ``N_eff = sum_i lambda_i / (lambda_i + alpha)`` of its Hessian (Maddox et al. 2020).
4. **MLP width sweep** on MNIST-1D with label noise (deep double descent, Nakkiran et al. 2020),
   batched over widths with :class:`gtlib.models.BatchedMLP`'s ``hidden_mask``.
5. **Hessian spectra by Lanczos**: Hessian-vector products from ``torch.func`` fed to
   :func:`scipy.sparse.linalg.eigsh`, with a check that the computed top of the spectrum covers every
   eigenvalue that matters for ``alpha``.
6. **Compression bounds**: training in a random subspace (Li et al. 2018), quantization, a real
   adaptive arithmetic coder, prefix-free integer codes, and the countable-hypothesis bound
   ``R(h) <= R_hat(h) + sqrt((K(h) ln 2 + ln(1/delta)) / (2n))`` (Wilson's Eq. 1; Lotfi et al. 2022),
   next to a parameter-counting bound.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F
from numpy.polynomial import legendre as _leg

from .checks import (SEED, Boolean, Constraint, InstanceOf, Interval, Options, Tensor, boundary,
                     check_int, check_labels, check_positive, count, fraction,
                     nonnegative, positive, tuple_of)
from .config import Config, Result, param
from .data import Dataset, corrupt_labels
from .engine import StackedOptimizer, StreamBatches, fit
from .models import BatchedMLP, MLP
from .train import TrainConfig, train_ensemble

__all__ = [
    # configs and results
    "CompressionConfig", "GPConfig", "MLPSweepConfig", "PolyConfig", "RFConfig", "TARGETS",
    # functions
    "bits_at_fit", "countable_bound", "counting_bound", "double_descent_summary",
    "effective_dimensionality", "effective_parameters", "evidence_decomposition",
    "fit_polynomial", "interpolation_threshold", "kl_inverse", "legendre_features",
    "order_penalty", "overfitting_taxonomy", "pac_bayes_kl_bound", "poly_log_evidence",
    "predict_polynomial", "rf_spectrum", "run_compression", "run_gp_corruption", "run_mlp_sweep",
    "run_polynomial", "run_random_features", "split_peak_test",
]


# ------------------------------------------------------------------------------------------------
# small validation helpers
# ------------------------------------------------------------------------------------------------
_pos = check_positive


class _Array(Constraint):
    """An array-like of numbers (list, tuple, numpy array or CPU tensor): not None, not a string,
    not empty, with ``ndim`` dimensions (any if None), finite (``finite``), integer-valued
    (``integer``: int dtype, or floats that are whole numbers); ``optional`` also accepts None."""

    def __init__(self, ndim=1, finite: bool = True, integer: bool = False, optional: bool = False,
                 empty: bool = False):
        self.ndim = (ndim,) if isinstance(ndim, int) else ndim
        self.finite, self.integer, self.optional, self.empty = finite, integer, optional, empty

    def describe(self) -> str:
        dims = "" if self.ndim is None else "/".join(map(str, self.ndim)) + "-D "
        what = "integers" if self.integer else ("finite numbers" if self.finite else "numbers")
        text = f"a {'' if self.empty else 'non-empty '}{dims}array (list or numpy array) of {what}"
        return text + (" or None" if self.optional else "")

    def check(self, name: str, value):
        if value is None and self.optional:
            return value
        if value is None or isinstance(value, (str, bytes, dict, set)):
            self._fail(name, value, TypeError)
        try:
            arr = np.asarray(value.detach().cpu() if isinstance(value, torch.Tensor) else value)
        except (TypeError, ValueError, RuntimeError):
            self._fail(name, value, TypeError)
        if arr.dtype.kind not in "iuf" and not (arr.dtype.kind == "O" and arr.size == 0):
            self._fail(name, value, TypeError)  # strings, bools, objects, ragged lists
        if self.ndim is not None and arr.ndim not in self.ndim:
            self._fail(name, value)
        if arr.size == 0 and not self.empty:
            self._fail(name, value)
        if arr.size and arr.dtype.kind == "f":
            if self.finite and not np.isfinite(arr).all():
                raise ValueError(f"{name} must hold finite values only, got NaN or inf")
            if self.integer and not (np.isfinite(arr).all() and np.all(arr == np.round(arr))):
                self._fail(name, value, TypeError)
        return value


class _Bits(Constraint):
    """A non-empty list/tuple/array of bits (ints 0 and 1)."""

    def describe(self) -> str:
        return "a non-empty list of bits (0s and 1s)"

    def check(self, name: str, value):
        if value is None or isinstance(value, (str, bytes, dict, set)) or \
                not hasattr(value, "__len__"):
            self._fail(name, value, TypeError)
        if len(value) == 0:
            self._fail(name, value)
        arr = np.asarray(value)
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            self._fail(name, value, TypeError)
        if not np.all((arr == 0) | (arr == 1)):
            self._fail(name, value)
        return value


_ARR = _Array()
_POLY = dict(x=_ARR, y=_ARR, degree=count(0), gamma=Interval(float, 1))


def _vec(name: str, x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be finite")
    return x


# ================================================================================================
# 1. Order-regularized polynomials (Wilson 2025, the soft-inductive-bias example)
# ================================================================================================
@boundary(x=_ARR, degree=count(0))
def legendre_features(x, degree: int) -> np.ndarray:
    """Orthonormal Legendre features ``sqrt(2j + 1) P_j(x)``, ``j = 0..degree``.

    The Legendre polynomials are orthogonal on ``[-1, 1]``; with this scaling the features have unit
    mean square under the uniform distribution, so a coefficient's size is the size of its
    contribution, and a degree-150 design stays well conditioned (the monomial basis would not).

    Parameters
    ----------
    x : array_like
        Inputs, in [-1, 1]; a non-empty 1-D array (list or numpy array) of finite numbers.
    degree : int
        Polynomial degree; an int >= 0.

    Returns
    -------
    np.ndarray
        The features, shape ``(n, degree + 1)``.

    Raises
    ------
    ValueError
        If ``x`` is not a finite 1-D array inside ``[-1, 1]`` or ``degree < 0``.
    """
    x = _vec("x", x)
    degree = check_int("degree", degree, 0)
    if np.any(np.abs(x) > 1 + 1e-12):
        raise ValueError("x must lie in [-1, 1] (rescale the inputs first)")
    return _leg.legvander(x, degree) * np.sqrt(2 * np.arange(degree + 1) + 1.0)


@boundary(degree=count(0), gamma=Interval(float, 1), scale=nonnegative())
def order_penalty(degree: int, gamma: float, scale: float = 1.0) -> np.ndarray:
    r"""The per-coefficient weights ``scale * gamma**j`` of Wilson's regularizer.

    The regularizer is ``sum_j gamma^j w_j^2``. ``gamma > 1`` makes high orders
    expensive without forbidding them: the soft inductive bias. ``gamma = 1`` is
    ordinary ridge regression.

    .. math::

       \sum_{j=0}^{\mathrm{degree}} \gamma^j w_j^2

    Parameters
    ----------
    degree : int
        Polynomial degree; an int >= 0.
    gamma : float
        Order-penalty base: coefficient ``j`` costs ``gamma**j``; a finite number >=
        1.
    scale : float, default 1.0
        Overall scale of the penalty; a finite number >= 0.

    Returns
    -------
    np.ndarray
        The weights, shape ``(degree + 1,)``.

    References
    ----------
    Wilson (2025), "Deep Learning is Not So Mysterious or Different", ICML 2025.
    """
    degree = check_int("degree", degree, 0)
    gamma = _pos("gamma", gamma)
    scale = _pos("scale", scale, allow_zero=True)
    if gamma < 1:
        raise ValueError(f"gamma must be >= 1, got {gamma}")
    return scale * gamma ** np.arange(degree + 1, dtype=np.float64)


@boundary(x=_ARR, y=_ARR, degree=count(0), penalty=_Array(optional=True))
def fit_polynomial(x, y, degree: int, penalty=None) -> np.ndarray:
    r"""Legendre coefficients minimizing ``||y - Phi w||^2 + sum_j penalty_j w_j^2`` (closed form).

    ``penalty=None`` gives the unregularized least-squares fit, and for ``degree + 1 > n`` the
    minimum-norm interpolant (``numpy.linalg.lstsq``). Otherwise the normal equations
    ``(Phi^T Phi + diag(penalty)) w = Phi^T y`` are solved.

    .. math::

       \hat w = \arg\min_w \lVert y - \Phi w \rVert^2 + \sum_j \mathrm{penalty}_j\, w_j^2

    Parameters
    ----------
    x : array_like
        Inputs, in [-1, 1]; a non-empty 1-D array (list or numpy array) of finite numbers.
    y : array_like
        Targets, one per input; a non-empty 1-D array (list or numpy array) of finite numbers.
    degree : int
        Polynomial degree; an int >= 0.
    penalty : array_like, default None
        Per-coefficient penalty weights (None: unregularized least squares); a non-empty 1-D array
        (list or numpy array) of finite numbers or None.

    Returns
    -------
    np.ndarray
        The coefficients, shape ``(degree + 1,)``.

    Raises
    ------
    ValueError
        If shapes disagree or a penalty is negative.
    """
    phi = legendre_features(x, degree)
    y = _vec("y", y)
    if y.shape[0] != phi.shape[0]:
        raise ValueError(f"x and y must have the same length, got {phi.shape[0]} and {y.shape[0]}")
    if penalty is None:
        return np.linalg.lstsq(phi, y, rcond=None)[0]
    penalty = np.asarray(penalty, dtype=np.float64)
    if penalty.shape != (degree + 1,) or np.any(penalty < 0) or not np.all(np.isfinite(penalty)):
        raise ValueError(f"penalty must be {degree + 1} finite non-negative numbers")
    return np.linalg.solve(phi.T @ phi + np.diag(penalty), phi.T @ y)


@boundary(w=_ARR, x=_ARR)
def predict_polynomial(w, x) -> np.ndarray:
    """Evaluate the Legendre expansion with coefficients ``w`` at ``x``.

    Parameters
    ----------
    w : array_like
        Legendre coefficients; a non-empty 1-D array (list or numpy array) of finite numbers.
    x : array_like
        Inputs, in [-1, 1]; a non-empty 1-D array (list or numpy array) of finite numbers.

    Returns
    -------
    np.ndarray
        The predictions, shape ``(n,)``.
    """
    w = _vec("w", w)
    return legendre_features(x, len(w) - 1) @ w


@boundary(**_POLY, noise_vars=_ARR, prior_vars=_ARR)
def poly_log_evidence(x, y, degree: int, gamma: float, noise_vars, prior_vars) -> np.ndarray:
    """Log marginal likelihood ``log p(y | x)`` of the Bayesian polynomial, on a grid.

    The model is ``y = Phi w + eps`` with ``w_j ~ N(0, tau^2 gamma^-j)`` and ``eps ~ N(0, sigma^2)``;
    its MAP estimate is :func:`fit_polynomial` with ``penalty = (sigma^2 / tau^2) gamma^j``, i.e.
    Wilson's regularizer. ``y ~ N(0, tau^2 K + sigma^2 I)`` with ``K = Phi diag(gamma^-j) Phi^T``; one
    eigendecomposition of ``K`` gives the evidence for every ``(sigma^2, tau^2)`` pair.

    Parameters
    ----------
    x : array_like
        Inputs, in [-1, 1]; a non-empty 1-D array (list or numpy array) of finite numbers.
    y : array_like
        Targets, one per input; a non-empty 1-D array (list or numpy array) of finite numbers.
    degree : int
        Polynomial degree; an int >= 0.
    gamma : float
        Order-penalty base: coefficient ``j`` costs ``gamma**j``; a finite number >= 1.
    noise_vars : array_like
        Grid of noise variances; a non-empty 1-D array (list or numpy array) of finite numbers.
    prior_vars : array_like
        Grid of prior variances; a non-empty 1-D array (list or numpy array) of finite numbers.

    Returns
    -------
    numpy.ndarray
        The log evidence, of shape ``(len(noise_vars), len(prior_vars))``.
    """
    phi = legendre_features(x, degree)
    y = _vec("y", y)
    if y.shape[0] != phi.shape[0]:
        raise ValueError("x and y must have the same length")
    s2 = _vec("noise_vars", noise_vars)
    t2 = _vec("prior_vars", prior_vars)
    if np.any(s2 <= 0) or np.any(t2 <= 0):
        raise ValueError("noise_vars and prior_vars must be positive")
    prior = order_penalty(degree, gamma) ** -1.0
    evals, evecs = np.linalg.eigh((phi * prior) @ phi.T)
    evals = np.clip(evals, 0.0, None)
    proj2 = (evecs.T @ y) ** 2
    var = t2[None, :, None] * evals[None, None, :] + s2[:, None, None]  # (S, T, n)
    n = y.shape[0]
    return -0.5 * (proj2 / var).sum(-1) - 0.5 * np.log(var).sum(-1) - 0.5 * n * np.log(2 * np.pi)


@boundary(x=_ARR, y=_ARR, degree=count(0), gammas=_ARR, noise_vars=_ARR, prior_vars=_ARR)
def fit_soft_polynomial(x, y, degree: int, gammas, noise_vars, prior_vars) -> dict:
    """Empirical Bayes: pick ``(gamma, sigma^2, tau^2)`` by marginal likelihood, return the MAP fit.

    Returns a dict with ``w``, ``gamma``, ``noise_var``, ``prior_var`` and ``log_evidence``.
    """
    gammas = _vec("gammas", gammas)
    if np.any(gammas < 1):
        raise ValueError(f"gammas must all be >= 1, got {gammas.tolist()}")
    best = None
    for g in gammas:
        ev = poly_log_evidence(x, y, degree, float(g), noise_vars, prior_vars)
        i, j = np.unravel_index(np.argmax(ev), ev.shape)
        if best is None or ev[i, j] > best[0]:
            best = (float(ev[i, j]), float(g), float(np.asarray(noise_vars)[i]),
                    float(np.asarray(prior_vars)[j]))
    ev, g, s2, t2 = best
    w = fit_polynomial(x, y, degree, order_penalty(degree, g, s2 / t2))
    return {"w": w, "gamma": g, "noise_var": s2, "prior_var": t2, "log_evidence": ev}


@boundary(**_POLY, noise_var=positive(), prior_var=positive())
def evidence_decomposition(x, y, degree: int, gamma: float, noise_var: float,
                           prior_var: float) -> dict:
    """The log evidence of the Bayesian polynomial as data fit plus a (log) Occam factor.

    For a linear-Gaussian model the identity ``log p(y) = log p(y | w*) + log p(w*) -
    log p(w* | y)`` holds at any ``w``, in particular at the MAP ``w*``; the posterior is
    ``N(w*, S)`` with ``S = (Phi^T Phi / sigma^2 + diag(gamma^j) / tau^2)^-1``, so
    ``-log p(w* | y) = log sqrt(det(2 pi S))`` and

    ``log p(y) = log p(y | w*)  +  [log p(w*) + log sqrt(det(2 pi S))]``
                 (data fit)          (log Occam factor: posterior volume over prior volume)

    (MacKay 1992). Returns ``data_fit``, ``occam``, their sum ``log_evidence`` and ``w``.

    Parameters
    ----------
    x : array_like
        Inputs, in [-1, 1]; a non-empty 1-D array (list or numpy array) of finite numbers.
    y : array_like
        Targets, one per input; a non-empty 1-D array (list or numpy array) of finite numbers.
    degree : int
        Polynomial degree; an int >= 0.
    gamma : float
        Order-penalty base: coefficient ``j`` costs ``gamma**j``; a finite number >= 1.
    noise_var : float
        Noise variance; a finite number > 0.
    prior_var : float
        Prior variance of the coefficients; a finite number > 0.

    Returns
    -------
    dict
        ``data_fit``, ``occam``, ``log_evidence`` (their sum) and ``w``.

    References
    ----------
    Wilson (2025), "Deep Learning is Not So Mysterious or Different", ICML 2025.
    """
    phi = legendre_features(x, degree)
    y = _vec("y", y)
    s2, t2 = _pos("noise_var", noise_var), _pos("prior_var", prior_var)
    prec = order_penalty(degree, gamma) / t2
    A = phi.T @ phi / s2 + np.diag(prec)
    w = np.linalg.solve(A, phi.T @ y / s2)
    n, d = phi.shape
    fit = -0.5 * np.sum((y - phi @ w) ** 2) / s2 - 0.5 * n * np.log(2 * np.pi * s2)
    log_prior = -0.5 * np.sum(prec * w ** 2) - 0.5 * np.sum(np.log(2 * np.pi / prec))
    occam = log_prior + 0.5 * d * np.log(2 * np.pi) - 0.5 * np.linalg.slogdet(A)[1]
    return {"data_fit": float(fit), "occam": float(occam), "log_evidence": float(fit + occam),
            "w": w}


@boundary(x=_Array(None))
def simple_target(x) -> np.ndarray:
    """The 'simple' structured target of the polynomial experiment (a gentle quadratic)."""
    x = np.asarray(x, dtype=np.float64)
    return 0.5 * x ** 2 - 0.3 * x + 0.2


@boundary(x=_Array(None))
def complex_target(x) -> np.ndarray:
    """The 'complex' structured target: a damped three-period sine plus a faster cosine."""
    x = np.asarray(x, dtype=np.float64)
    return np.sin(3 * np.pi * x) * np.exp(-x) + 0.5 * np.cos(7 * x)


#: The target functions of the polynomial experiment, by name.
TARGETS = {"simple": simple_target, "complex": complex_target}


@dataclass
class PolyConfig(Config):
    """The order-regularized polynomial experiment of Wilson (2025).

    ``FULL``: a larger test set and finer hyperparameter grids.

    Parameters
    ----------
    n : int, default 100
        Training points; an int >= 2.
    noise : float, default 0.2
        Noise level; a finite number >= 0.
    degree : int, default 150
        Polynomial degree; an int >= 0.
    n_test : int, default 2000
        Number of test examples; an int >= 1.
    gammas : tuple, optional
        Grid of order-penalty bases; a tuple (at least 1 item) of items each a finite number >= 1.
    noise_vars : tuple, optional
        Grid of noise variances; a tuple (at least 1 item) of items each a finite number > 0.
    prior_vars : tuple, optional
        Grid of prior variances; a tuple (at least 1 item) of items each a finite number > 0.
    interpolate_noise_var : float, default 1e-06
        Noise variance of the near-exact fit; a finite number > 0.
    interpolate_gamma : float, default 1.1
        Order-penalty base of the interpolating fit; a finite number >= 1.
    max_ls_degree : int | None, default None
        Largest degree of the least-squares fits (None: ``n - 1``); an int >= 0 or None.
    restricted_degree : int, default 20
        Degree of the hard-restricted hypothesis space; an int >= 0.
    """

    FULL = dict(n_test=20000, gammas=tuple(np.round(np.linspace(1.02, 3.0, 34), 3)),
                noise_vars=tuple(np.logspace(-5, 0, 81)), prior_vars=tuple(np.logspace(-3, 3, 37)))

    n: int = param(100, count(2))
    noise: float = param(0.2, nonnegative())
    degree: int = param(150, count(0))
    n_test: int = param(2000, count())
    gammas: tuple = param((1.05, 1.1, 1.2, 1.3, 1.5, 2.0, 3.0), tuple_of(Interval(float, 1)))
    noise_vars: tuple = param(tuple(np.logspace(-4, 0, 33)), tuple_of(positive()))
    prior_vars: tuple = param(tuple(np.logspace(-2, 2, 17)), tuple_of(positive()))
    interpolate_noise_var: float = param(1e-6, positive())  # sigma^2 for an exact fit
    interpolate_gamma: float = param(1.1, Interval(float, 1))
    max_ls_degree: int | None = param(None, count(0, optional=True))  # default n - 1
    restricted_degree: int = param(20, count(0))  # a hard restriction of the hypothesis space

    def _check_together(self) -> None:
        if self.max_ls_degree is not None and self.max_ls_degree > self.n - 1:
            self._refuse("max_ls_degree", f"<= n - 1 = {self.n - 1} or None")


@dataclass
class PolyFit(Result):
    """One fit of :func:`run_polynomial`: its curve on the grid, its training MSE and its excess
    risk; ``degree`` where the fit has its own degree, and the hyperparameters chosen by the
    marginal likelihood (``gamma``, ``noise_var``, ``prior_var``, ``log_evidence``) for the
    evidence fit (None elsewhere)."""

    curve: np.ndarray
    train_mse: float
    excess: float
    degree: int | None = None
    gamma: float | None = None
    noise_var: float | None = None
    prior_var: float | None = None
    log_evidence: float | None = None


@dataclass
class PolyDataset(Result):
    """One dataset of :func:`run_polynomial`: its training targets ``y``, the true function on the
    grid (``truth``), its noise variance and its fits by name (``interpolant``, ``evidence``,
    ``minnorm``, ``best_ls``, ``restricted``)."""

    y: np.ndarray
    truth: np.ndarray
    noise_var: float
    fits: dict[str, PolyFit]


@dataclass
class PolyResult(Result):
    """What :func:`run_polynomial` measured: the training inputs ``x``, the plotting ``grid`` and
    the datasets by name (``simple``, ``complex``, ``noise``)."""

    x: np.ndarray
    grid: np.ndarray
    targets: dict[str, PolyDataset]


@boundary(seed=SEED)
def run_polynomial(cfg: PolyConfig, seed: int = 0) -> PolyResult:
    """Wilson's three polynomial datasets with one design and one model.

    Wilson's three polynomial datasets (simple, complex, pure noise) with one design and one model.

    All three share the inputs (``n`` equispaced points on ``[-1, 1]``) and every fit below. The
    structured targets get Gaussian noise of s.d. ``cfg.noise``; pure noise is ``y ~ N(0, 1)``
    (target 0, noise variance 1). Per dataset, all of degree ``cfg.degree`` unless said:

    * ``interpolant``: the order-regularized polynomial with ``gamma = cfg.interpolate_gamma`` and
      a likelihood that trusts the data (``sigma^2 = cfg.interpolate_noise_var``, ``tau^2 = 1``):
      one fixed configuration for every panel;
    * ``evidence``: the same model with ``(gamma, sigma^2, tau^2)`` chosen by marginal likelihood;
    * ``minnorm``: unregularized least squares, the minimum-norm interpolant;
    * ``best_ls``: unregularized least squares at the degree ``0..max_ls_degree`` with the lowest
      excess risk (chosen with hindsight: an oracle);
    * ``restricted``: unregularized least squares of degree ``cfg.restricted_degree``.

    Each fit (a :class:`PolyFit`) reports its curve on a grid, its training MSE and its **excess
    risk** ``E_x[(f_hat(x) - f(x))^2]`` on ``n_test`` uniform test inputs (the test MSE minus
    the noise variance). Equispaced inputs, because uniform random inputs include
    near-coincident pairs with unrelated noise values, which a degree-150 polynomial can
    separate only with enormous coefficients (Bernstein's inequality bounds its slope by ``150
    max|f| / sqrt(1 - x^2)``).

    Parameters
    ----------
    cfg : PolyConfig
        The experiment's settings; a PolyConfig.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].

    Returns
    -------
    PolyResult
        The fits and their test errors.

    References
    ----------
    Wilson (2025), "Deep Learning is Not So Mysterious or Different", ICML 2025, Figure 1(a, b,
    c).
    """
    rng = np.random.default_rng(seed)
    x = np.linspace(-1, 1, cfg.n)
    xt = rng.uniform(-1, 1, cfg.n_test)
    grid = np.linspace(-1, 1, 801)
    max_deg = cfg.n - 1 if cfg.max_ls_degree is None else cfg.max_ls_degree
    J = cfg.degree
    targets = {}
    datasets = [(k, f, cfg.noise) for k, f in TARGETS.items()] + [("noise", np.zeros_like, 1.0)]
    for name, f, sd in datasets:
        y = f(x) + sd * rng.normal(size=cfg.n)
        truth_t = f(xt)

        def report(w, **extra):
            return PolyFit(curve=predict_polynomial(w, grid),
                           train_mse=float(np.mean((predict_polynomial(w, x) - y) ** 2)),
                           excess=float(np.mean((predict_polynomial(w, xt) - truth_t) ** 2)),
                           **extra)

        pen = order_penalty(J, cfg.interpolate_gamma, cfg.interpolate_noise_var)
        soft = fit_soft_polynomial(x, y, J, cfg.gammas, cfg.noise_vars, cfg.prior_vars)
        ls = [report(fit_polynomial(x, y, d), degree=d) for d in range(max_deg + 1)]
        best = min(ls, key=lambda r: r.excess)
        fits = {
            "interpolant": report(fit_polynomial(x, y, J, pen)),
            "evidence": report(soft["w"], **{k: soft[k] for k in
                                             ("gamma", "noise_var", "prior_var", "log_evidence")}),
            "minnorm": report(fit_polynomial(x, y, J)),
            "best_ls": best,
            "restricted": report(fit_polynomial(x, y, cfg.restricted_degree),
                                 degree=cfg.restricted_degree),
        }
        targets[name] = PolyDataset(y=y, truth=f(grid), noise_var=sd ** 2, fits=fits)
    return PolyResult(x=x, grid=grid, targets=targets)


@dataclass
class InterpolantRisk(Result):
    """One spectrum of :func:`overfitting_taxonomy`: the min-norm interpolant's training MSE and
    excess risk, the dimension ``d``, and the tail's effective rank and total variance ``r_0``."""

    train_mse: float
    excess: float
    d: int
    tail_rank: float
    tail_r0: float


@dataclass
class TaxonomyResult(Result):
    """What :func:`overfitting_taxonomy` measured: per spectrum (``benign``, ``tempered``,
    ``catastrophic``) an :class:`InterpolantRisk`; the noise variance and ``n``."""

    noise_var: float
    n: int
    spectra: dict[str, InterpolantRisk]


@boundary(n=count(2), noise=positive(), seed=SEED, tail_dim=count(), tail_var=positive())
def overfitting_taxonomy(n: int = 200, noise: float = 0.5, seed: int = 0,
                         tail_dim: int = 20000, tail_var: float = 1e-3) -> TaxonomyResult:
    """Benign, tempered and catastrophic overfitting in one model: min-norm linear regression.

    ``y = x_1 + eps`` with ``eps ~ N(0, noise^2)``: the signal lives in the first coordinate
    (variance 1). Three covariance spectra for the remaining coordinates (Bartlett et al. 2020;
    Mallinar et al. 2022):

    * ``benign``: ``tail_dim`` coordinates of variance ``tail_var``: a tail of high effective rank
      ``R = (sum l)^2 / sum l^2 = tail_dim >> n`` with small total variance
      ``r_0 = tail_dim tail_var``, which absorbs the noise harmlessly;
    * ``tempered``: ``2n - 1`` more unit-variance coordinates (isotropic, ``d = 2n``);
    * ``catastrophic``: ``n + 2`` more unit-variance coordinates (isotropic, ``d = n + 3``), just
      past the interpolation threshold.

    Every fit interpolates (training MSE about 0). Returns per spectrum the training MSE, the
    excess risk ``E[(x^T (b_hat - b))^2]`` (exact, from the covariance, so no test sample is
    drawn) and the tail's effective rank, and ``noise_var`` (a :class:`TaxonomyResult`).

    Parameters
    ----------
    n : int, default 200
        Number of training points; an int >= 2.
    noise : float, default 0.5
        Noise level; a finite number > 0.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    tail_dim : int, default 20000
        Dimension of the spectrum's tail; an int >= 1.
    tail_var : float, default 0.001
        Variance of each tail coordinate; a finite number > 0.

    Returns
    -------
    TaxonomyResult
        The measurements listed above.

    References
    ----------
    Bartlett, Long, Lugosi and Tsigler (2020), "Benign overfitting in linear regression".
    """
    n = check_int("n", n, 2)
    noise = _pos("noise", noise)
    rng = np.random.default_rng(seed)
    specs = {"benign": np.full(tail_dim, float(tail_var)), "tempered": np.ones(2 * n - 1),
             "catastrophic": np.ones(n + 2)}
    out = TaxonomyResult(noise_var=noise ** 2, n=n, spectra={})
    for name, tail in specs.items():
        lam = np.concatenate([[1.0], tail])
        x = rng.normal(size=(n, lam.size)) * np.sqrt(lam)
        y = x[:, 0] + noise * rng.normal(size=n)
        b = min_norm_lstsq(x, y)
        err = b.copy()
        err[0] -= 1.0
        out.spectra[name] = InterpolantRisk(
            train_mse=float(np.mean((x @ b - y) ** 2)), excess=float(np.sum(lam * err ** 2)),
            d=int(lam.size), tail_rank=float(tail.sum() ** 2 / np.sum(tail ** 2)),
            tail_r0=float(tail.sum()))
    return out


# ================================================================================================
# 2. Gaussian-process label regression and its marginal likelihood (Wilson's Figure 1(d, e))
# ================================================================================================
@boundary(a=Tensor("float", 2), b=Tensor("float", 2), lengthscale=positive(),
          variance=positive())
def rbf_kernel(a: torch.Tensor, b: torch.Tensor, lengthscale: float, variance: float = 1.0) -> torch.Tensor:
    """``variance * exp(-||a - b||^2 / (2 lengthscale^2))`` between the rows of ``a`` and ``b``."""
    return _rbf_kernel(a, b, lengthscale, variance)


def _rbf_kernel(a: torch.Tensor, b: torch.Tensor, lengthscale: float, variance: float = 1.0) -> torch.Tensor:
    """:func:`rbf_kernel` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    lengthscale = _pos("lengthscale", lengthscale)
    variance = _pos("variance", variance)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise ValueError("a and b must be 2-D with the same number of columns")
    d2 = (a.pow(2).sum(1)[:, None] + b.pow(2).sum(1)[None, :] - 2 * a @ b.T).clamp_min(0)
    return variance * torch.exp(-0.5 * d2 / lengthscale ** 2)


@boundary(x=Tensor("float", 2))
def median_lengthscale(x: torch.Tensor) -> float:
    """The median pairwise distance of the rows of ``x`` (the 'median heuristic')."""
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError("x must be 2-D with at least two rows")
    d = torch.cdist(x, x)
    return float(d[torch.triu(torch.ones_like(d, dtype=torch.bool), 1)].median())


@boundary(x=Tensor("float", 2), y=Tensor("int", 1), x_test=Tensor("float", 2),
          num_classes=count(2), lengthscales=_ARR, noise_ratio=positive())
def gp_label_regression(x: torch.Tensor, y: torch.Tensor, x_test: torch.Tensor, num_classes: int,
                        lengthscales, noise_ratio: float = 1e-3) -> dict:
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
        raise ValueError(f"lengthscales must all be > 0, got {lengthscales.tolist()}")
    check_labels("y", y, num_classes, x.shape[0])
    if x_test.shape[1] != x.shape[1]:
        raise ValueError(f"x_test must have the {x.shape[1]} columns of x, got "
                         f"{tuple(x_test.shape)}")
    x = x.double()
    x_test = x_test.double()
    n, C = x.shape[0], num_classes
    t = F.one_hot(y.long(), C).double() - 1.0 / C
    eye = torch.eye(n, dtype=torch.float64, device=x.device)
    best = None
    for ell in lengthscales:
        k = _rbf_kernel(x, x, float(ell))
        chol = torch.linalg.cholesky(k + noise_ratio * eye)
        alpha = torch.cholesky_solve(t, chol)
        s = float((t * alpha).sum()) / (n * C)
        log_ml = (-0.5 * n * C * (1 + math.log(2 * math.pi * s))
                  - C * float(torch.log(torch.diagonal(chol)).sum()))
        if best is None or log_ml > best[0]:
            best = (log_ml, float(ell), s, k, alpha)
    log_ml, ell, s, k, alpha = best
    train_mean = k @ alpha
    test_mean = _rbf_kernel(x_test, x, ell) @ alpha
    return {"train_pred": train_mean.argmax(1), "test_pred": test_mean.argmax(1), "log_ml": log_ml,
            "lengthscale": ell, "signal_var": s}


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

    FULL = dict(n_train=6000, n_test=2000, corruptions=tuple(np.round(np.linspace(0, 1, 11), 2)),
                lengthscale_factors=tuple(np.round(np.geomspace(0.25, 2.0, 10), 3)))

    n_train: int = param(2000, count(2))
    n_test: int = param(1000, count())
    corruptions: tuple = param((0.0, 0.2, 0.4, 0.6, 0.8, 1.0), tuple_of(fraction()))
    noise_ratio: float = param(1e-3, positive())
    lengthscale_factors: tuple = param((0.35, 0.5, 0.7, 1.0, 1.4),  # x median pairwise distance
                                       tuple_of(positive()))


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


def _fits(ds: Dataset, n_train: int, n_test: int | None = None) -> None:
    """Refuse a config that asks for more points than ``ds`` holds."""
    if n_train > ds.n:
        raise ValueError(f"cfg.n_train must be <= the dataset's {ds.n} training points, got "
                         f"{n_train}")
    if n_test is not None and n_test > ds.x_test.shape[0]:
        raise ValueError(f"cfg.n_test must be <= the dataset's {ds.x_test.shape[0]} test points, "
                         f"got {n_test}")


@boundary(seed=SEED)
def run_gp_corruption(cfg: GPConfig, ds: Dataset, seed: int = 0) -> GPCorruptionResult:
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
    x, y0 = ds.x[:cfg.n_train].cpu(), ds.y[:cfg.n_train].cpu()
    xt, yt = ds.x_test[:cfg.n_test].cpu(), ds.y_test[:cfg.n_test].cpu()
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


# ================================================================================================
# 3. Random-feature regression, min-norm least squares and effective dimensionality
# ================================================================================================
@boundary(eigs=_ARR, alpha=positive())
def effective_dimensionality(eigs, alpha: float) -> float:
    r"""Maddox et al. (2020), Eq. 2: ``N_eff(H, alpha) = sum_i lambda_i / (lambda_i + alpha)``.

    Negative eigenvalues (possible for a non-convex loss's Hessian) are counted as zero.

    .. math::

       N_\mathrm{eff}(H, \alpha) = \sum_i \frac{\lambda_i}{\lambda_i + \alpha}

    Parameters
    ----------
    eigs : array_like
        Eigenvalues of the Hessian; a non-empty 1-D array (list or numpy array) of finite numbers.
    alpha : float
        Regularization constant of ``N_eff``; a finite number > 0.

    Returns
    -------
    float
        ``N_eff``.

    References
    ----------
    Maddox, Benton and Wilson (2020), "Rethinking Parameter Counting in Deep Models: Effective
    Dimensionality Revisited", Eq. 2.
    """
    return _effective_dimensionality(eigs, alpha)


def _effective_dimensionality(eigs, alpha: float) -> float:
    """:func:`effective_dimensionality` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    eigs = np.clip(_vec("eigs", eigs), 0, None)
    alpha = _pos("alpha", alpha)
    return float(np.sum(eigs / (eigs + alpha)))


@boundary(eigs=_ARR, alpha=positive(), k=count())
def poorly_determined(eigs, alpha: float, k: int) -> float:
    """``k - N_eff`` over the ``k`` directions the data touch: how many are *poorly* determined.

    For least squares with ``n`` points and ``p`` features the data touch ``k = min(n, p)``
    directions; this is the curve Maddox et al.'s random-feature notebook plots (there written
    ``min(n, d) - sum s^2 / (s^2 + lambda n)``). Only the ``k`` largest eigenvalues are used.
    """
    return _poorly_determined(eigs, alpha, k)


def _poorly_determined(eigs, alpha: float, k: int) -> float:
    """:func:`poorly_determined` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    eigs = np.sort(np.clip(_vec("eigs", eigs), 0, None))[::-1]
    k = check_int("k", k, 1)
    if k > eigs.size:
        raise ValueError(f"k must be <= the number of eigenvalues ({eigs.size}), got {k}")
    return float(k - _effective_dimensionality(eigs[:k], alpha))


@boundary(x=_Array(2), w=_Array(2), b=_Array(1))
def relu_features(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Random ReLU features ``max(0, x w + b) / sqrt(p)`` of inputs ``x`` (n, D); ``w`` is (D, p)."""
    return _relu_features(x, w, b)


def _relu_features(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`relu_features` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    x, w, b = (np.asarray(v, dtype=np.float64) for v in (x, w, b))
    if w.shape[0] != x.shape[1]:
        raise ValueError(f"w must have one row per column of x ({x.shape[1]}), got {w.shape}")
    if b.shape != (w.shape[1],):
        raise ValueError(f"b must have one entry per column of w ({w.shape[1]}), got {b.shape}")
    return np.maximum(x @ w + b, 0.0) / np.sqrt(w.shape[1])


@boundary(phi=_Array(2), y=_Array(1))
def min_norm_lstsq(phi: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The minimum-norm least-squares solution ``phi^+ y`` (the interpolant of least norm when p >= n)."""
    phi, y = np.asarray(phi, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if phi.ndim != 2 or y.ndim != 1 or phi.shape[0] != y.shape[0]:
        raise ValueError("phi must be (n, p) and y (n,) with the same n")
    return np.linalg.lstsq(phi, y, rcond=None)[0]


@boundary(x=_Array(2))
def rf_target(x: np.ndarray) -> np.ndarray:
    """Target of the random-feature experiment: a smooth function of the first two input coordinates."""
    x = np.asarray(x, dtype=np.float64)
    if x.shape[1] < 2:
        raise ValueError(f"x must have at least 2 columns, got shape {x.shape}")
    return np.sin(2 * x[:, 0]) + 0.5 * np.cos(3 * x[:, 1]) + 0.3 * x[:, 0] * x[:, 1]


@dataclass
class RFConfig(Config):
    """Random-feature double descent, after Belkin et al. (2019).

    As in Maddox et al. (2020)'s notebook. ``FULL``: more draws and test points.

    The target depends on two of the ``dim = 3`` input coordinates, so a few hundred random
    features can learn it from ``n = 200`` points (with 10 input dimensions they cannot, and no
    model beats the constant predictor by much). ``ridges`` is the grid over which the ridge
    penalty is tuned on a separate validation set of ``n_val`` points.

    Parameters
    ----------
    n : int, default 200
        Training points; an int >= 1.
    dim : int, default 3
        Input dimension; an int >= 2.
    noise : float, default 0.1
        Noise level; a finite number >= 0.
    n_test : int, default 2000
        Number of test examples; an int >= 1.
    n_val : int, default 1000
        Number of validation examples; an int >= 1.
    ps : tuple, optional
        Numbers of random features; a tuple (at least 1 item, strictly increasing) of items each an
        int >= 1.
    n_draws : int, default 5
        Draws of the random features; an int >= 1.
    alpha : float, default 1e-05
        Regularization constant of ``N_eff``; a finite number > 0.
    ridges : tuple, optional
        Ridge strengths tried by the tuned fit; a tuple (at least 1 item) of items each a finite
        number > 0.
    """

    FULL = dict(n_draws=30, n_test=10000)

    n: int = param(200, count())
    dim: int = param(3, count(2))
    noise: float = param(0.1, nonnegative())
    n_test: int = param(2000, count())
    n_val: int = param(1000, count())
    ps: tuple = param(tuple(sorted(set(np.unique(np.round(np.geomspace(5, 2000, 34)).astype(int))
                                       .tolist() + [100, 200, 400]))),
                      tuple_of(count(), increasing="strict"))
    n_draws: int = param(5, count())
    alpha: float = param(1e-5, positive())
    ridges: tuple = param(tuple(np.logspace(-8, 1, 19)), tuple_of(positive()))


@boundary(rng=InstanceOf(np.random.Generator))
def rf_data(cfg: RFConfig, rng: np.random.Generator):
    """Training and test sets of the random-feature experiment: Gaussian inputs, noisy targets."""
    x = rng.normal(size=(cfg.n, cfg.dim))
    xt = rng.normal(size=(cfg.n_test, cfg.dim))
    y = rf_target(x) + cfg.noise * rng.normal(size=cfg.n)
    yt = rf_target(xt) + cfg.noise * rng.normal(size=cfg.n_test)
    return x, y, xt, yt


@boundary(phi=_Array(2), y=_Array(1), ridges=_ARR, rcond=fraction("neither"))
def ridge_path(phi: np.ndarray, y: np.ndarray, ridges, rcond: float = 1e-10):
    """Ridge solutions ``(phi^T phi + lam I)^-1 phi^T y`` for every ``lam`` in ``ridges``, and the
    minimum-norm solution (``lam -> 0``), from one thin SVD of ``phi``.

    Singular values below ``rcond`` times the largest are dropped (as ``numpy.linalg.lstsq``
    does). Returns ``(betas, beta_min_norm)`` with ``betas`` of shape ``(len(ridges), p)``.
    """
    return _ridge_path(phi, y, ridges, rcond)


def _ridge_path(phi: np.ndarray, y: np.ndarray, ridges, rcond: float = 1e-10):
    """:func:`ridge_path` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    phi, y = np.asarray(phi, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if phi.ndim != 2 or y.ndim != 1 or phi.shape[0] != y.shape[0]:
        raise ValueError("phi must be (n, p) and y (n,) with the same n")
    lams = _vec("ridges", ridges)
    if np.any(lams <= 0):
        raise ValueError("ridges must be positive")
    u, s, vt = np.linalg.svd(phi, full_matrices=False)
    keep = s > rcond * s[0]
    u, s, vt = u[:, keep], s[keep], vt[keep]
    c = u.T @ y
    betas = (s / (s ** 2 + lams[:, None]) * c) @ vt
    return betas, (c / s) @ vt


@dataclass
class RandomFeaturesResult(Result):
    """What :func:`run_random_features` measured, per number of features ``ps``: the min-norm
    fit's median test MSE (``test_mse``; every draw in ``test_mse_draws``, shape
    ``(n_draws, len(ps))``), the tuned ridge's (``ridge_mse``), the mean ``N_eff`` and poorly
    determined count; the constant predictor's median test MSE, ``n`` and the noise variance."""

    ps: np.ndarray
    n: int
    test_mse: np.ndarray
    test_mse_draws: np.ndarray
    ridge_mse: np.ndarray
    null_mse: float
    neff: np.ndarray
    poor: np.ndarray
    noise_var: float


@boundary(seed=SEED)
def run_random_features(cfg: RFConfig, seed: int = 0) -> RandomFeaturesResult:
    """Test MSE of min-norm and of tuned-ridge random-feature regression, and ``N_eff``.

    For each draw, one set of ``max(ps)`` random ReLU features is drawn and the models use its
    first ``p`` (nested features, as in Belkin et al. 2019). Per ``p``: the minimum-norm
    least-squares fit (it interpolates once ``p >= n``), and ridge regression with the penalty
    chosen from ``cfg.ridges`` on a validation set (Nakkiran et al. 2021 tune it optimally). The
    constant predictor (the training mean) is the null model. The Hessian of the mean squared
    loss is ``Phi^T Phi / n`` (up to a factor 2); its eigenvalues are ``s_i^2 / n``. Errors are
    medians over ``cfg.n_draws`` draws of data and features (near ``p = n`` one nearly singular
    draw would dominate a mean); ``N_eff`` curves are means.

    Parameters
    ----------
    cfg : RFConfig
        The experiment's settings; a RFConfig.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].

    Returns
    -------
    RandomFeaturesResult
        The curves over the number of features.

    References
    ----------
    Belkin et al. (2019).
    Maddox, Benton and Wilson (2020).
    """
    rng = np.random.default_rng(seed)
    P = max(cfg.ps)
    shape = (cfg.n_draws, len(cfg.ps))
    test, ridge, neff, poor = (np.zeros(shape) for _ in range(4))
    null = np.zeros(cfg.n_draws)
    for r in range(cfg.n_draws):
        x, y, xt, yt = rf_data(cfg, rng)
        xv = rng.normal(size=(cfg.n_val, cfg.dim))
        yv = rf_target(xv) + cfg.noise * rng.normal(size=cfg.n_val)
        w = rng.normal(size=(cfg.dim, P)) / np.sqrt(cfg.dim)
        b = rng.uniform(-1, 1, size=P)
        feats = [_relu_features(z, w, b) * np.sqrt(P) for z in (x, xt, xv)]
        null[r] = np.mean((yt - y.mean()) ** 2)
        for j, p in enumerate(cfg.ps):
            phi, phit, phiv = (f[:, :p] / np.sqrt(p) for f in feats)
            betas, beta = _ridge_path(phi, y, cfg.ridges)
            test[r, j] = np.mean((phit @ beta - yt) ** 2)
            best = int(np.argmin(((phiv @ betas.T - yv[:, None]) ** 2).mean(0)))
            ridge[r, j] = np.mean((phit @ betas[best] - yt) ** 2)
            eigs = np.linalg.svd(phi, compute_uv=False) ** 2 / cfg.n
            neff[r, j] = _effective_dimensionality(eigs, cfg.alpha)
            poor[r, j] = _poorly_determined(eigs, cfg.alpha, min(cfg.n, p))
    return RandomFeaturesResult(ps=np.array(cfg.ps), n=cfg.n, test_mse=np.median(test, 0),
                                test_mse_draws=test, ridge_mse=np.median(ridge, 0),
                                null_mse=float(np.median(null)), neff=neff.mean(0),
                                poor=poor.mean(0), noise_var=cfg.noise ** 2)


@boundary(ps=_Array(integer=True), mse=_ARR, n=count())
def double_descent_summary(ps, mse, n: int) -> dict:
    """Belkin et al.'s comparison on one test-error curve.

    Belkin et al.'s comparison on one test-error curve: the best under-parameterized model
    (``p < n``), the best over-parameterized one (``p > n``), the smallest model, the largest
    error near the threshold (``n/2 <= p <= 2n``) and the largest relative rise between
    consecutive ``p``.

    Parameters
    ----------
    ps : array_like
        Numbers of parameters (features); a non-empty 1-D array (list or numpy array) of integers.
    mse : array_like
        Test error at each ``p``; a non-empty 1-D array (list or numpy array) of finite numbers.
    n : int
        Number of training points; an int >= 1.

    Returns
    -------
    dict
        The summary statistics named above, by name.

    References
    ----------
    Belkin, Hsu, Ma and Mandal (2019), "Reconciling modern machine-learning practice and the
    classical bias-variance trade-off".
    """
    ps, mse = np.asarray(ps), np.asarray(mse, dtype=np.float64)
    if mse.shape != ps.shape:
        raise ValueError(f"mse must have one entry per p ({ps.size}), got {mse.size}")
    under, over = mse[ps < n], mse[ps > n]
    if under.size == 0 or over.size == 0:
        raise ValueError("ps must include values below and above n")
    near = mse[(ps >= n / 2) & (ps <= 2 * n)]
    return {"first": float(mse[0]), "best_under": float(under.min()),
            "best_under_p": int(ps[ps < n][under.argmin()]), "best_over": float(over.min()),
            "best_over_p": int(ps[ps > n][over.argmin()]), "peak": float(near.max()),
            "max_rise": float(np.max(mse[1:] / mse[:-1]) - 1)}


@boundary(p=count(), seed=SEED)
def rf_spectrum(cfg: RFConfig, p: int, seed: int = 0) -> dict:
    """One draw of the random-feature experiment at ``p`` features.

    One draw of the random-feature experiment at ``p`` features: the Hessian spectrum and errors.

    Returns the eigenvalues of ``Phi^T Phi / n`` within the data's span (descending), the test MSE of
    the min-norm fit, ``N_eff`` and the poorly determined count at ``cfg.alpha`` (for the widget).

    Parameters
    ----------
    cfg : RFConfig
        The experiment's settings; a RFConfig.
    p : int
        Number of random features; an int >= 1.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].

    Returns
    -------
    dict
        The quantities listed above, by name.
    """
    p = check_int("p", p, 1)
    rng = np.random.default_rng(seed)
    x, y, xt, yt = rf_data(cfg, rng)
    w = rng.normal(size=(cfg.dim, p)) / np.sqrt(cfg.dim)
    b = rng.uniform(-1, 1, size=p)
    phi, phit = relu_features(x, w, b), relu_features(xt, w, b)
    beta = min_norm_lstsq(phi, y)
    eigs = np.linalg.svd(phi, compute_uv=False)[:min(cfg.n, p)] ** 2 / cfg.n
    return {"eigs": eigs, "test_mse": float(np.mean((phit @ beta - yt) ** 2)),
            "neff": effective_dimensionality(eigs, cfg.alpha),
            "poor": poorly_determined(eigs, cfg.alpha, min(cfg.n, p))}


# ================================================================================================
# 4. MLP width sweep on MNIST-1D with label noise (deep double descent)
# ================================================================================================
@dataclass
class MLPSweepConfig(Config):
    """Two-hidden-layer MLPs of many widths on MNIST-1D with label noise.

    After Nakkiran et al. (2020). ``FULL``: more data, epochs, replicates and widths.

    Parameters
    ----------
    n_train : int, default 2000
        Number of training examples; an int >= 1.
    label_noise : float, default 0.15
        Fraction of training labels replaced by random ones; a finite number in [0, 1].
    width_groups : tuple, optional
        Widths trained together in one batched stack; a tuple (at least 1 item) of items each a
        tuple (at least 1 item) of items each an int >= 1.
    epochs : int, default 300
        Number of training epochs; an int >= 1.
    lr : float, default 0.01
        Learning rate; a finite number > 0.
    momentum : float, default 0.9
        SGD momentum; a finite number in [0, 1).
    batch_size : int, default 100
        Minibatch size; an int >= 1.
    replicates : int, default 8
        Independent repetitions; an int >= 1.
    check_epochs : int, default 10
        Epochs between two recordings of the errors (0: at the end only); an int >= 0.
    """

    FULL = dict(n_train=4000, epochs=500, replicates=16,
                width_groups=((4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 47, 52, 56, 61),
                              (64, 72, 80, 96, 112, 128), (160, 200, 250, 300)))

    n_train: int = param(2000, count())
    label_noise: float = param(0.15, fraction())
    width_groups: tuple = param(((8, 16, 24, 32, 40, 48), (128,)),
                                tuple_of(tuple_of(count())))
    epochs: int = param(300, count())
    lr: float = param(0.01, positive())
    momentum: float = param(0.9, fraction("left"))
    batch_size: int = param(100, count())
    replicates: int = param(8, count())
    check_epochs: int = param(10, count(0))  # > 0: record the errors every so many epochs

    @property
    def widths(self) -> list[int]:
        return [w for g in self.width_groups for w in g]


@boundary(widths=tuple_of(count()), seeds=tuple_of(SEED), in_dim=count(), out_dim=count(),
          depth=count())
def masked_ensemble(widths, seeds, in_dim: int, out_dim: int, depth: int = 2) -> BatchedMLP:
    """A :class:`BatchedMLP` of common width ``max(widths)`` whose member ``i`` uses ``widths[i]`` units."""
    widths = [check_int("widths[i]", w, 1) for w in widths]
    if len(seeds) != len(widths):
        raise ValueError("seeds must have one entry per width")
    W = max(widths)
    mask = torch.zeros(len(widths), W)
    for i, w in enumerate(widths):
        mask[i, :w] = 1
    return BatchedMLP.init(list(seeds), in_dim, W, depth, out_dim, hidden_mask=mask)


@boundary(i=count(0), width=count())
def member_at_width(model: BatchedMLP, i: int, width: int) -> MLP:
    """Member ``i`` of a masked ensemble as a stand-alone MLP of its true ``width``.

    Unlike :meth:`BatchedMLP.member`, the masked units are cut out, so the parameter count (and the
    Hessian) is that of a ``width``-unit network.
    """
    if i >= model.size:
        raise ValueError(f"i must lie in [0, {model.size}), got {i}")
    units = int(model.weights[0].shape[1]) if model.hidden_mask is None else \
        int(model.hidden_mask[i].sum())
    if width > units:
        raise ValueError(f"width must be <= member {i}'s {units} hidden units, got {width}")
    full = model.member(i)
    depth = full.depth
    m = MLP(full.layers[0].in_features, width, depth, full.layers[-1].out_features,
            bias=full.layers[0].bias is not None, activation=full.act_name)
    with torch.no_grad():
        for l, (src, dst) in enumerate(zip(full.layers, m.layers)):
            rows = slice(None) if l == depth else slice(0, width)
            cols = slice(None) if l == 0 else slice(0, width)
            dst.weight.copy_(src.weight[rows, cols])
            if dst.bias is not None:
                dst.bias.copy_(src.bias[rows])
    return m


@dataclass
class MLPSweepResult(Result):
    """What :func:`run_mlp_sweep` measured, per width: the parameter count, the train error (on the
    noisy labels) and test error (on the clean test labels) averaged over replicates, and per
    replicate (``(replicates, widths)``); the noisy labels ``y_noisy``, the first replicate's
    trained networks ``nets`` (stand-alone MLPs at their true widths) and ``n_train``."""

    widths: np.ndarray
    params: np.ndarray
    train_err: np.ndarray
    test_err: np.ndarray
    test_err_reps: np.ndarray
    train_err_reps: np.ndarray
    y_noisy: torch.Tensor
    nets: list
    n_train: int
    hist_epochs: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    train_err_hist: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0)))
    test_err_hist: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0)))
    train_loss_hist: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0)))
    nets_hist: list = field(default_factory=list)


@boundary(seed=SEED)
def run_mlp_sweep(cfg: MLPSweepConfig, ds: Dataset, seed: int = 0) -> MLPSweepResult:
    """Train ``cfg.replicates`` MLPs per width on labels with noise.

    Train ``cfg.replicates`` MLPs per width on ``ds`` with ``cfg.label_noise`` of its labels corrupted.

    Each group of widths (times the replicates) is one masked :class:`gtlib.models.BatchedMLP` whose members
    share the group's maximum width, trained with SGD + momentum exactly as separate networks
    would be. Errors are averaged over the replicates (different initializations and minibatch
    orders). Returns widths, parameter counts, train error (on the noisy labels), test error (on
    clean test labels), per-replicate test errors, the noisy labels, and the first replicate's
    trained networks (stand-alone, at their true widths).

    With ``cfg.check_epochs > 0`` the sweep also keeps its history: every ``check_epochs``
    epochs (and at the end) the train error, test error and mean training cross-entropy (on the
    noisy labels) of every member, as ``(checks, replicates, widths)`` arrays, their epochs in
    ``hist_epochs``, and the first replicate's networks at each check in ``nets_hist`` (one list
    of stand-alone MLPs per check). Recording does not change the training.

    Parameters
    ----------
    cfg : MLPSweepConfig
        The experiment's settings; an MLPSweepConfig.
    ds : Dataset
        The dataset; a Dataset.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].

    Returns
    -------
    MLPSweepResult
        The measurements listed above.

    References
    ----------
    Nakkiran et al. (2020), "Deep Double Descent: Where Bigger Models and More Data Hurt".
    """
    import copy

    _fits(ds, cfg.n_train)
    ds = ds.subset(torch.arange(cfg.n_train))
    y = corrupt_labels(ds.y, cfg.label_noise, ds.num_classes, seed=seed)
    steps_per_epoch = -(-cfg.n_train // cfg.batch_size)
    every = 10 ** 9 if not cfg.check_epochs else cfg.check_epochs * steps_per_epoch
    tcfg = TrainConfig(lr=cfg.lr, momentum=cfg.momentum, batch_size=cfg.batch_size,
                       epochs=cfg.epochs, check_every=every, seed=seed)
    R = check_int("replicates", cfg.replicates, 1)
    widths, tr, te, nets, hist, steps = [], [], [], [], [], None

    def errors(model, g):
        with torch.no_grad():
            out = model(ds.x)
            a = (1 - (out.argmax(-1) == y).float().mean(1)).view(R, len(g))
            b = (1 - (model(ds.x_test).argmax(-1) == ds.y_test).float().mean(1)).view(R, len(g))
            loss = F.cross_entropy(out.transpose(1, 2), y.expand(out.shape[0], -1),
                                   reduction="none").mean(1).view(R, len(g))
        return a, b, loss

    for g in cfg.width_groups:
        ws = [w for _ in range(R) for w in g]
        tags = [1000 * (seed * R + r) + w for r in range(R) for w in g]
        model = masked_ensemble(ws, tags, ds.dim, ds.num_classes).to(ds.x.device)
        probes = {"snap": copy.deepcopy} if cfg.check_epochs else None
        h = train_ensemble(model, ds.x, y, tcfg, seeds=[7919 + t for t in tags], probes=probes)
        a, b, _ = errors(model, g)
        tr.append(a)
        te.append(b)
        nets += [member_at_width(model, i, w) for i, w in enumerate(g)]
        widths += list(g)
        if cfg.check_epochs:
            steps = h.step
            hist.append([(*errors(m, g), [member_at_width(m, i, w) for i, w in enumerate(g)])
                         for m in h.probes["snap"]])
    tr, te = torch.cat(tr, 1).numpy(), torch.cat(te, 1).numpy()
    params = [sum(p.numel() for p in m.parameters()) for m in nets]
    extra = {}
    if cfg.check_epochs:
        T = len(steps)

        def cat(k):
            return np.stack([torch.cat([grp[t][k] for grp in hist], 1).numpy() for t in range(T)])

        extra = dict(hist_epochs=np.array([-(-s // steps_per_epoch) for s in steps]),
                     train_err_hist=cat(0), test_err_hist=cat(1), train_loss_hist=cat(2),
                     nets_hist=[[n for grp in hist for n in grp[t][3]] for t in range(T)])
    return MLPSweepResult(widths=np.array(widths), params=np.array(params), train_err=tr.mean(0),
                          test_err=te.mean(0), test_err_reps=te, train_err_reps=tr, y_noisy=y,
                          nets=nets, n_train=cfg.n_train, **extra)


def _width_reps(widths, err_reps, least: int):
    """Widths and a (replicates, widths) error array, checked for a peak test."""
    widths = np.asarray(widths)
    e = np.asarray(err_reps, dtype=np.float64)
    if e.ndim != 2 or e.shape[1] != widths.size or e.shape[0] < least:
        raise ValueError(f"err_reps must be (replicates >= {least}, len(widths) = {widths.size}), "
                         f"got {e.shape}")
    if widths.size < 3:
        raise ValueError(f"widths must hold at least 3 widths (a peak between two ends), got "
                         f"{widths.size}")
    return widths, e


@boundary(widths=_ARR, err_reps=_Array(2), threshold=positive(optional=True))
def width_peak_summary(widths, err_reps, threshold: float | None = None,
                       keys_only: bool = False) -> dict:
    """Where a width sweep's mean error peaks, and by how much it stands out from replicate noise.

    ``err_reps`` is ``(replicates, widths)``. The peak is the largest mean error among widths
    within a factor 2 of ``threshold`` (default: all widths but the first and last); ``left`` is
    the lowest mean error at a smaller width, ``right`` the mean error of the widest network, and
    ``se_diff`` the standard error of a difference of two widths' means,
    ``sqrt(2) * median_w(sd_w) / sqrt(R)``. With ``keys_only`` only ``peak``, ``left``, ``right``
    and ``se_diff`` are returned (for a claim's control).
    """
    widths, e = _width_reps(widths, err_reps, 2)
    m = e.mean(0)
    inner = np.arange(1, widths.size - 1)
    if threshold is not None:
        near = inner[(widths[inner] >= threshold / 2) & (widths[inner] <= 2 * threshold)]
        inner = near if near.size else inner
    i = int(inner[np.argmax(m[inner])])
    j = int(np.argmin(m[:i]))
    se = float(np.sqrt(2) * np.median(e.std(0, ddof=1)) / np.sqrt(e.shape[0]))
    out = {"peak": float(m[i]), "left": float(m[j]), "right": float(m[-1]), "se_diff": se}
    if not keys_only:
        out.update(peak_width=int(widths[i]), left_width=int(widths[j]))
    return out


@boundary(widths=_ARR, err_reps=_Array(2), threshold=positive(optional=True),
          at_threshold=Boolean())
def split_peak_test(widths, err_reps, threshold: float | None = None,
                    at_threshold: bool = False) -> dict:
    """A width sweep's peak, chosen on one half of the replicates and measured on the other.

    Picking the largest of several noisy means (the peak) and the smallest of several others
    (the best smaller width) biases their difference upwards: under a sweep with no bump at all
    it is positive on average, so "twice the standard error" is too lax. Sample splitting removes
    the bias. ``err_reps`` is ``(replicates >= 4, widths)``; the first ``R // 2`` replicates
    *select*: the peak is the width of largest mean error among the inner widths within a factor
    2 of ``threshold`` (all inner widths if none is, or without a threshold), ``left`` the width
    of smallest mean error below it, ``right`` the widest. The other replicates *measure*:
    ``gap_left`` and ``gap_right`` are the differences of their means (peak minus left, peak
    minus right), with standard errors ``se_left`` and ``se_right`` from the same replicates
    (``sqrt(s_a^2 / m + s_b^2 / m)``). Given the selection, the held-out differences are
    unbiased, so ``gap > 2 se`` is a one-sided test at about 2.5% under no bump.

    With ``at_threshold`` the peak is not chosen at all: it is the width ``threshold`` itself
    (which must be one of the inner widths), the place where Nakkiran et al. (2020) put the
    peak. Only the best smaller width is then chosen on the first half.

    Returns ``peak_width``, ``left_width``, ``gap_left``, ``gap_right``, ``se_left``,
    ``se_right`` and ``measured`` (the number of held-out replicates).

    Parameters
    ----------
    widths : array_like
        Hidden widths; a non-empty 1-D array (list or numpy array) of finite numbers.
    err_reps : array_like
        Test errors, replicates by widths; a non-empty 2-D array (list or numpy array) of finite
        numbers.
    threshold : float | None, default None
        The interpolation threshold, a width: the candidate peaks lie within a factor 2 of it
        (see above); a finite number > 0 or None.
    at_threshold : bool, default False
        Take the peak at the width ``threshold`` instead of choosing it; a bool (True needs a
        ``threshold`` equal to an inner width).

    Returns
    -------
    dict
        The keys listed above.

    References
    ----------
    Nakkiran et al. (2020), "Deep Double Descent: Where Bigger Models and More Data Hurt", Fig. 1.
    """
    widths, e = _width_reps(widths, err_reps, 4)
    half = e.shape[0] // 2
    sel, mea = e[:half].mean(0), e[half:]
    inner = np.arange(1, widths.size - 1)
    if at_threshold:
        if threshold is None or not np.any(widths[inner] == threshold):
            raise ValueError(f"threshold must be one of the inner widths "
                             f"{widths[inner].tolist()} when at_threshold is True, got "
                             f"{threshold}")
        inner = inner[widths[inner] == threshold]
    elif threshold is not None:
        near = inner[(widths[inner] >= threshold / 2) & (widths[inner] <= 2 * threshold)]
        inner = near if near.size else inner
    i = int(inner[np.argmax(sel[inner])])
    j = int(np.argmin(sel[:i]))
    m, v, k = mea.mean(0), mea.var(0, ddof=1), mea.shape[0]

    def se(a, b):
        return float(np.sqrt(v[a] / k + v[b] / k))

    return {"peak_width": int(widths[i]), "left_width": int(widths[j]),
            "gap_left": float(m[i] - m[j]), "gap_right": float(m[i] - m[-1]),
            "se_left": se(i, j), "se_right": se(i, -1), "measured": int(k)}


@boundary(widths=_ARR, train_err=_ARR, tol=nonnegative())
def interpolation_threshold(widths, train_err, tol: float = 0.01):
    """The smallest width whose training error is at most ``tol`` (None if no model interpolates).

    Parameters
    ----------
    widths : array_like
        Hidden widths; a non-empty 1-D array (list or numpy array) of finite numbers.
    train_err : array_like
        Training error at each width; a non-empty 1-D array (list or numpy array) of finite
        numbers.
    tol : float, default 0.01
        Tolerance; a finite number >= 0.

    Returns
    -------
    int or None
        The width, or None.
    """
    widths, train_err = np.asarray(widths), np.asarray(train_err)
    if train_err.shape != widths.shape:
        raise ValueError(f"train_err must have one entry per width ({widths.size}), got "
                         f"{train_err.size}")
    ok = np.nonzero(train_err <= tol)[0]
    return None if ok.size == 0 else int(widths[ok[0]])


# ================================================================================================
# 5. Hessian spectra by Lanczos (torch.func Hessian-vector products + scipy eigsh)
# ================================================================================================
def _flat_loss(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor):
    """The mean cross-entropy as a function of one flat parameter vector, and that vector."""
    names = [n for n, _ in model.named_parameters()]
    shapes = [p.shape for _, p in model.named_parameters()]
    sizes = [p.numel() for _, p in model.named_parameters()]
    flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])

    def loss(theta):
        parts = torch.split(theta, sizes)
        params = {n: t.view(s) for n, t, s in zip(names, parts, shapes)}
        return F.cross_entropy(torch.func.functional_call(model, params, (x,)), y)

    return loss, flat


_XY = dict(x=Tensor("float", 2), y=Tensor("int", 1))


def _check_xy(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> None:
    """Refuse labels outside the model's classes and inputs the model cannot take."""
    p = next(iter(model.parameters()), None)
    try:
        with torch.no_grad():
            out = model(x[:1].to(p.device, p.dtype) if p is not None else x[:1])
    except RuntimeError as e:
        raise ValueError(f"x must fit the model's input (shape {tuple(x.shape)}): {e}") from None
    check_labels("y", y, int(out.shape[-1]), x.shape[0])


@boundary(**_XY)
def hessian_matvec(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor):
    """A function ``v -> H v`` (numpy in, numpy out) for the Hessian of the mean cross-entropy.

    Forward-over-reverse: ``torch.func.jvp`` of ``torch.func.grad``. Computations are float64.
    """
    _check_xy(model, x, y)
    model = _as_double(model)
    loss, flat = _flat_loss(model, x.double(), y)
    grad = torch.func.grad(loss)

    def matvec(v):
        v = torch.as_tensor(np.asarray(v, dtype=np.float64).reshape(-1))
        return torch.func.jvp(grad, (flat,), (v,))[1].numpy()

    return matvec, flat.numel()


def _as_double(model: torch.nn.Module) -> torch.nn.Module:
    import copy

    return copy.deepcopy(model).double().cpu()


@boundary(**_XY)
def dense_hessian(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> np.ndarray:
    """The full Hessian of the mean cross-entropy via ``torch.func.hessian`` (small models only)."""
    _check_xy(model, x, y)
    model = _as_double(model)
    loss, flat = _flat_loss(model, x.double().cpu(), y.cpu())
    return torch.func.hessian(loss)(flat).numpy()


@boundary(**_XY, k=count(), tol=positive(), seed=SEED)
def lanczos_top_eigs(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, k: int,
                     tol: float = 1e-6, seed: int = 0, vectors: bool = False):
    """The ``k`` largest (algebraic) Hessian eigenvalues by Lanczos (``scipy.sparse.linalg.eigsh``).

    Descending order. ``k`` must be smaller than the number of parameters. With
    ``vectors=True`` returns ``(eigenvalues, eigenvectors)``, the vectors as the columns of a
    ``(P, k)`` array.
    """
    from scipy.sparse.linalg import LinearOperator, eigsh

    matvec, P = hessian_matvec(model, x.cpu(), y.cpu())
    k = check_int("k", k, 1)
    if k >= P:
        raise ValueError(f"k must be < the number of parameters ({P}), got {k}")
    op = LinearOperator((P, P), matvec=matvec, dtype=np.float64)
    v0 = np.random.default_rng(seed).normal(size=P)
    if not vectors:
        vals = eigsh(op, k=k, which="LA", tol=tol, v0=v0, return_eigenvectors=False)
        return np.sort(vals)[::-1]
    vals, vecs = eigsh(op, k=k, which="LA", tol=tol, v0=v0)
    order = np.argsort(vals)[::-1]
    return vals[order], vecs[:, order]


@boundary(q=_Array(2), probes=count(2), seed=SEED)
def tail_trace(matvec: Callable, q: np.ndarray, probes: int = 20,
               seed: int = 0) -> tuple[float, float]:
    """Hutchinson estimate of ``tr H - sum(top eigenvalues)``: the trace of ``H`` on the orthogonal
    complement of the computed eigenvectors ``q`` (columns), with Rademacher probes projected off
    ``q``. Returns ``(estimate, standard error)``.

    Deflating the top of the spectrum before probing (as Hutch++ does) removes the large
    eigenvalues from the estimator's variance.
    """
    q = np.asarray(q, dtype=np.float64)
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(probes):
        z = rng.choice([-1.0, 1.0], size=q.shape[0])
        z -= q @ (q.T @ z)
        vals.append(float(z @ matvec(z)))
    vals = np.asarray(vals)
    return float(vals.mean()), float(vals.std(ddof=1) / np.sqrt(probes))


@boundary(**_XY, alpha=positive(), k=count(), max_k=count(), weight_tol=fraction("neither"),
          seed=SEED, probes=count(0))
def effective_parameters(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, alpha: float,
                         k: int = 32, max_k: int = 256, weight_tol: float = 0.05, seed: int = 0,
                         probes: int = 0) -> dict:
    """``N_eff`` of the loss Hessian from its top eigenvalues, with a coverage check.

    Lanczos computes the top ``k`` eigenvalues; if the smallest of them still counts for more than
    ``weight_tol`` (``lambda_k / (lambda_k + alpha) > weight_tol``), an uncomputed eigenvalue might
    matter, so ``k`` is doubled (up to ``max_k``). This bounds each left-out eigenvalue's term (if
    Lanczos found the true top ``k``), not their sum. With ``probes > 0`` the sum is *estimated*:
    every left-out eigenvalue adds at most ``lambda / alpha`` to ``N_eff``, so
    ``N_eff <= neff + tail / alpha`` with ``tail`` the trace left after the top ``k``
    (:func:`tail_trace`, a Hutchinson estimate; the inequality needs every left-out eigenvalue
    non-negative). ``neff_upper`` is therefore an estimate of an upper end (two standard errors
    of ``probes`` random probes), not a certificate. Returns ``neff`` (a lower bound: the top
    ``k`` terms), ``eigs``, ``k``, ``covered``, ``n_params``, ``train_loss`` (mean cross-entropy
    on ``x, y``) and, with probes, ``tail``, ``tail_se`` and ``neff_upper``
    (``neff + max(tail + 2 tail_se, 0) / alpha``).

    Parameters
    ----------
    model : torch.nn.Module
        The network; a Module.
    x : torch.Tensor
        Training inputs of the network; a torch.Tensor (non-empty, floating-point, 2-dimensional, finite).
    y : torch.Tensor
        Their integer labels; a torch.Tensor (non-empty, integer, 1-dimensional).
    alpha : float
        Regularization constant of ``N_eff``; a finite number > 0.
    k : int, default 32
        Eigenvalues computed; an int >= 1.
    max_k : int, default 256
        Most eigenvalues computed; an int >= 1.
    weight_tol : float, default 0.05
        Tolerance of the coverage check; a finite number in (0, 1).
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    probes : int, default 0
        Probe vectors for the trace of the tail; an int >= 0.

    Returns
    -------
    dict
        The keys listed above.

    References
    ----------
    Maddox, Benton and Wilson (2020), "Rethinking Parameter Counting in Deep Models: Effective
    Dimensionality Revisited".
    """
    if max_k < k:
        raise ValueError(f"max_k must be >= k = {k}, got {max_k}")
    if probes == 1:
        raise ValueError("probes must be 0 (no tail estimate) or >= 2 (a standard error needs "
                         "two), got 1")
    _check_xy(model, x, y)
    P = sum(p.numel() for p in model.parameters())
    while True:
        k_eff = min(k, P - 1)
        eigs, vecs = lanczos_top_eigs(model, x, y, k_eff, seed=seed, vectors=True)
        last = max(eigs[-1], 0.0)
        covered = last / (last + alpha) <= weight_tol
        if covered or k_eff >= min(max_k, P - 1):
            break
        k *= 2
    with torch.no_grad():
        train_loss = float(F.cross_entropy(model(x), y))
    out = {"neff": effective_dimensionality(eigs, alpha), "eigs": eigs, "k": k_eff,
           "covered": bool(covered), "n_params": P, "train_loss": train_loss}
    if probes:
        matvec, _ = hessian_matvec(model, x.cpu(), y.cpu())
        t, se = tail_trace(matvec, vecs, probes, seed)
        out.update(tail=t, tail_se=se, neff_upper=out["neff"] + max(t + 2 * se, 0.0) / alpha)
    return out


# ================================================================================================
# 6. Compression: subspace training, quantization, arithmetic coding, bounds
# ================================================================================================
@boundary(n=count())
def elias_gamma(n: int) -> list[int]:
    """The Elias gamma code of a positive integer: a prefix-free code of ``2 floor(log2 n) + 1`` bits."""
    n = check_int("n", n, 1)
    b = bin(n)[2:]
    return [0] * (len(b) - 1) + [int(c) for c in b]


@boundary(bits=_Bits(), pos=count(0))
def elias_gamma_decode(bits, pos: int = 0) -> tuple[int, int]:
    """Decode one Elias gamma integer from ``bits`` at ``pos``; return ``(n, next_pos)``."""
    return _elias_gamma_decode(bits, pos)


def _elias_gamma_decode(bits, pos: int = 0) -> tuple[int, int]:
    """:func:`elias_gamma_decode` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    if pos >= len(bits):
        raise ValueError(f"pos must be < len(bits) = {len(bits)}, got {pos}")
    zeros = 0
    while pos + zeros < len(bits) and bits[pos + zeros] == 0:
        zeros += 1
    if pos + 2 * zeros + 1 > len(bits):
        raise ValueError(f"bits ends inside an Elias gamma code (it starts at {pos} with {zeros} "
                         f"zeros and needs {2 * zeros + 1} bits; {len(bits) - pos} are left)")
    val = 0
    for b in bits[pos + zeros: pos + 2 * zeros + 1]:
        val = 2 * val + int(b)
    return val, pos + 2 * zeros + 1


_PREC = 32
_FULL = (1 << _PREC) - 1
_HALF = 1 << (_PREC - 1)
_QUARTER = 1 << (_PREC - 2)


@boundary(symbols=_Array(integer=True, empty=True), alphabet_size=count())
def arithmetic_encode(symbols, alphabet_size: int) -> list[int]:
    """Adaptive arithmetic code (Witten, Neal and Cleary 1987) of a symbol sequence, as a bit list.

    The model is adaptive Laplace: symbol ``s`` has probability ``(count_s + 1) / (t + A)`` after
    ``t`` symbols, so the decoder needs no table, only ``alphabet_size`` and the number of symbols.
    Integer arithmetic with 32-bit registers; the code length is within a few bits of
    ``-sum log2 p(s_t)``.
    """
    A = check_int("alphabet_size", alphabet_size, 1)
    symbols = [int(s) for s in symbols]
    if any(s < 0 or s >= A for s in symbols):
        raise ValueError(f"symbols must lie in [0, {A})")
    counts = [1] * A
    total = A
    low, high, pending, out = 0, _FULL, 0, []

    def emit(bit):
        nonlocal pending
        out.append(bit)
        out.extend([1 - bit] * pending)
        pending = 0

    for s in symbols:
        rng = high - low + 1
        c_lo = sum(counts[:s])
        high = low + rng * (c_lo + counts[s]) // total - 1
        low = low + rng * c_lo // total
        while True:
            if high < _HALF:
                emit(0)
            elif low >= _HALF:
                emit(1)
                low -= _HALF
                high -= _HALF
            elif low >= _QUARTER and high < _HALF + _QUARTER:
                pending += 1
                low -= _QUARTER
                high -= _QUARTER
            else:
                break
            low, high = 2 * low, 2 * high + 1
        counts[s] += 1
        total += 1
    pending += 1
    emit(0 if low < _QUARTER else 1)
    return out


@boundary(bits=_Bits(), n_symbols=count(0), alphabet_size=count())
def arithmetic_decode(bits, n_symbols: int, alphabet_size: int) -> list[int]:
    """Invert :func:`arithmetic_encode` given the number of symbols and the alphabet size."""
    return _arithmetic_decode(bits, n_symbols, alphabet_size)


def _arithmetic_decode(bits, n_symbols: int, alphabet_size: int) -> list[int]:
    """:func:`arithmetic_decode` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    A = check_int("alphabet_size", alphabet_size, 1)
    n_symbols = check_int("n_symbols", n_symbols, 0)
    bits = list(bits)
    pos = 0

    def next_bit():
        nonlocal pos
        b = bits[pos] if pos < len(bits) else 0
        pos += 1
        return b

    counts = [1] * A
    total = A
    low, high, value = 0, _FULL, 0
    for _ in range(_PREC):
        value = 2 * value + next_bit()
    out = []
    for _ in range(n_symbols):
        rng = high - low + 1
        target = ((value - low + 1) * total - 1) // rng
        s, c_lo = 0, 0
        while c_lo + counts[s] <= target:
            c_lo += counts[s]
            s += 1
        high = low + rng * (c_lo + counts[s]) // total - 1
        low = low + rng * c_lo // total
        while True:
            if high < _HALF:
                pass
            elif low >= _HALF:
                low -= _HALF
                high -= _HALF
                value -= _HALF
            elif low >= _QUARTER and high < _HALF + _QUARTER:
                low -= _QUARTER
                high -= _QUARTER
                value -= _QUARTER
            else:
                break
            low, high, value = 2 * low, 2 * high + 1, 2 * value + next_bit()
        out.append(s)
        counts[s] += 1
        total += 1
    return out


@boundary(z=_ARR, levels=count(), iters=count())
def quantize(z, levels: int, iters: int = 30) -> tuple[np.ndarray, np.ndarray]:
    """1-D k-means (Lloyd) quantization of ``z`` to ``levels`` float32 centres.

    Returns ``(centres, symbols)`` with ``centres[symbols]`` the quantized vector. Centres start at
    evenly spaced quantiles; empty clusters keep their previous centre.
    """
    z = _vec("z", z)
    levels = check_int("levels", levels, 1)
    c = np.quantile(z, (np.arange(levels) + 0.5) / levels)
    for _ in range(iters):
        sym = np.abs(z[:, None] - c[None, :]).argmin(1)
        for j in range(levels):
            if np.any(sym == j):
                c[j] = z[sym == j].mean()
    c = np.sort(c).astype(np.float32)
    sym = np.abs(z[:, None] - c[None, :].astype(np.float64)).argmin(1)
    return c, sym


@boundary(centres=_ARR, symbols=_Array(integer=True))
def encode_quantized(centres, symbols) -> list[int]:
    """A prefix-free description of a quantized vector: the whole message, as bits.

    Layout: Elias gamma of the length ``d``, Elias gamma of the number of levels ``L``, the ``L``
    centres as raw float32 (32 bits each), then the adaptive arithmetic code of the ``d`` symbols.
    Every field is prefix-free given the earlier ones, so the set of all messages satisfies Kraft's
    inequality, which is all the countable-hypothesis bound needs.
    """
    centres = np.asarray(centres, dtype=np.float32)
    symbols = np.asarray(symbols).astype(np.int64)
    L, d = len(centres), len(symbols)
    if symbols.min() < 0 or symbols.max() >= L:
        raise ValueError(f"symbols must index the {L} centres (lie in [0, {L})), got range "
                         f"[{symbols.min()}, {symbols.max()}]")
    bits = elias_gamma(d) + elias_gamma(L)
    for c in centres:
        word = int(np.frombuffer(np.float32(c).tobytes(), dtype=np.uint32)[0])
        bits += [(word >> (31 - i)) & 1 for i in range(32)]
    return bits + arithmetic_encode(symbols.tolist(), L)


@boundary(bits=_Bits())
def decode_quantized(bits) -> tuple[np.ndarray, np.ndarray]:
    """Invert :func:`encode_quantized`: return ``(centres, symbols)``."""
    d, pos = _elias_gamma_decode(bits, 0)
    if pos >= len(bits):
        raise ValueError("bits ends after the length field (no number of levels)")
    L, pos = _elias_gamma_decode(bits, pos)
    if pos + 32 * L >= len(bits):
        raise ValueError(f"bits ends inside the {L} float32 centres")
    centres = []
    for _ in range(L):
        word = 0
        for b in bits[pos:pos + 32]:
            word = 2 * word + int(b)
        centres.append(np.frombuffer(np.uint32(word).tobytes(), dtype=np.float32)[0])
        pos += 32
    return (np.array(centres, dtype=np.float32),
            np.array(_arithmetic_decode(bits[pos:], d, L)))


_BOUND = dict(train_error=fraction(), n=count(), delta=fraction("neither"))


def _bound_args(train_error: float, n: int, delta: float) -> tuple[int, float]:
    """The arguments every generalization bound shares: an error rate in [0, 1], the sample size
    and the confidence parameter in (0, 1)."""
    if not 0 <= train_error <= 1:
        raise ValueError(f"train_error must lie in [0, 1], got {train_error}")
    n = check_int("n", n, 1)
    delta = _pos("delta", delta)
    if delta >= 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    return n, delta


@boundary(**_BOUND, bits=nonnegative())
def countable_bound(train_error: float, bits: float, n: int,
                    delta: float = 0.05) -> float:
    r"""Wilson (2025), Eq. 1: ``R_hat + sqrt((K ln 2 + ln(1/delta)) / (2n))``.

    Holds with probability ``1 - delta`` simultaneously for every hypothesis with a
    prefix-free description of ``K`` bits (Occam / countable-hypothesis bound;
    Hoeffding plus a union bound weighted by ``2^-K``).

    .. math::

       R(h) \le \hat R(h) + \sqrt{\frac{K(h) \ln 2 + \ln(1/\delta)}{2n}}

    Parameters
    ----------
    train_error : float
        Training error of the hypothesis; a finite number in [0, 1].
    bits : float
        Code length of the hypothesis in bits; a finite number >= 0.
    n : int
        Number of training points; an int >= 1.
    delta : float, default 0.05
        Confidence parameter: the bound holds with probability at least
        ``1 - delta``; a finite number in (0, 1).

    Returns
    -------
    float
        The bound on the population error.

    References
    ----------
    Wilson (2025), "Deep Learning is Not So Mysterious or Different", ICML 2025, Eq.
    1. Lotfi et al. (2022), "PAC-Bayes Compression Bounds So Tight That They Can
    Explain Generalization".
    """
    bits = _pos("bits", bits, allow_zero=True)
    n, delta = _bound_args(train_error, n, delta)
    complexity = bits * math.log(2) + math.log(1 / delta)
    return float(train_error + math.sqrt(complexity / (2 * n)))


@boundary(**_BOUND, n_params=count(), bits_per_param=count())
def counting_bound(train_error: float, n_params: int, n: int, bits_per_param: int = 32,
                   delta: float = 0.05) -> float:
    """The same bound with ``K = bits_per_param * n_params``: counting all float32 networks alike.

    Parameters
    ----------
    train_error : float
        Training error of the hypothesis; a finite number in [0, 1].
    n_params : int
        Number of parameters; an int >= 1.
    n : int
        Number of training points; an int >= 1.
    bits_per_param : int, default 32
        Bits counted per parameter; an int >= 1.
    delta : float, default 0.05
        Confidence parameter: the bound holds with probability at least ``1 - delta``; a finite
        number in (0, 1).

    Returns
    -------
    float
        The bound on the population error.
    """
    n_params = check_int("n_params", n_params, 1)
    bits_per_param = check_int("bits_per_param", bits_per_param, 1)
    return countable_bound(train_error, bits_per_param * n_params, n, delta)


@boundary(q=fraction(), p=fraction())
def kl_bernoulli(q: float, p: float) -> float:
    """``kl(q || p) = q ln(q/p) + (1-q) ln((1-q)/(1-p))`` between Bernoulli means (nats)."""
    return _kl_bernoulli(q, p)


def _kl_bernoulli(q: float, p: float) -> float:
    out = 0.0
    for a, b in ((q, p), (1 - q, 1 - p)):
        if a > 0:
            out += math.inf if b == 0 else a * math.log(a / b)
    return out


@boundary(q=fraction(), c=nonnegative(), tol=positive())
def kl_inverse(q: float, c: float, tol: float = 1e-12) -> float:
    """The largest ``p`` in ``[q, 1]`` with ``kl(q || p) <= c``.

    Found by bisection to width ``tol``, or until the interval holds no float strictly inside.

    Parameters
    ----------
    q : float
        Empirical error; a finite number in [0, 1].
    c : float
        The bound on ``kl(q || p)``; a finite number >= 0.
    tol : float, default 1e-12
        Tolerance; a finite number > 0.

    Returns
    -------
    float
        ``p``.
    """
    return _kl_inverse(q, c, tol)


def _kl_inverse(q: float, c: float, tol: float = 1e-12) -> float:
    """:func:`kl_inverse` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    lo, hi = float(q), 1.0
    if _kl_bernoulli(q, hi) <= c:
        return 1.0
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if not lo < mid < hi:  # adjacent floats: a tol below their spacing is met
            break
        lo, hi = (mid, hi) if _kl_bernoulli(q, mid) <= c else (lo, mid)
    return hi


@boundary(**_BOUND, kl=nonnegative())
def pac_bayes_kl_bound(train_error: float, kl: float, n: int,
                       delta: float = 0.05) -> float:
    """The McAllester/Maurer PAC-Bayes bound in kl form (Maurer 2004; Seeger 2002).

    With probability ``1 - delta`` over the sample, for every posterior ``Q`` at
    once, ``kl(R_hat(Q) || R(Q)) <= (KL(Q || P) + ln(2 sqrt(n) / delta)) / n``; the
    bound is the largest ``R(Q)`` allowed. A point mass on ``h`` with a prior
    ``P(h) = 2^-K(h)`` has ``KL = K ln 2``: pass ``kl = K * ln 2`` for the
    countable-hypothesis bound in kl form.

    Parameters
    ----------
    train_error : float
        Training error of the hypothesis; a finite number in [0, 1].
    kl : float
        KL divergence of the posterior from the prior, in nats; a finite number >= 0.
    n : int
        Number of training points; an int >= 1.
    delta : float, default 0.05
        Confidence parameter: the bound holds with probability at least
        ``1 - delta``; a finite number in (0, 1).

    Returns
    -------
    float
        The bound on the population error.
    """
    kl = _pos("kl", kl, allow_zero=True)
    n, delta = _bound_args(train_error, n, delta)
    return _kl_inverse(train_error, (kl + math.log(2 * math.sqrt(n) / delta)) / n)


class ConvNet1D(torch.nn.Module):
    """A small 1-D CNN for MNIST-1D: three stride-2 convolutions (ReLU) and a linear read-out.

    Convolutions suit MNIST-1D's translated templates (its CNN baseline reaches about 94% test
    accuracy where an MLP reaches about 68%; Greydanus and Kobak 2024).
    """

    @boundary(length=count(8), channels=count(), out_dim=count())
    def __init__(self, length: int = 40, channels: int = 16, out_dim: int = 10):
        super().__init__()
        self.length = length
        self.c1 = torch.nn.Conv1d(1, channels, 5, stride=2, padding=2)
        self.c2 = torch.nn.Conv1d(channels, channels, 3, stride=2, padding=1)
        self.c3 = torch.nn.Conv1d(channels, channels, 3, stride=2, padding=1)
        out_len = length
        for _ in range(3):
            out_len = (out_len + 1) // 2
        self.head = torch.nn.Linear(channels * out_len, out_dim)

    @boundary(x=Tensor("float", 2))
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[1] != self.length:
            raise ValueError(f"x must have {self.length} columns (the signal length), got "
                             f"{tuple(x.shape)}")
        h = x.unsqueeze(1)
        for conv in (self.c1, self.c2, self.c3):
            h = F.relu(conv(h))
        return self.head(h.flatten(1))

    def _apply_params(self, x: torch.Tensor, p: dict) -> torch.Tensor:
        """:meth:`forward` with the weights ``p`` (by parameter name) in place of the module's,
        unchecked: the same ``F.conv1d``/``F.linear`` calls the layers make (for training loops
        that must not pay :meth:`forward`'s argument checks every step)."""
        h = x.unsqueeze(1)
        for name in ("c1", "c2", "c3"):
            conv = getattr(self, name)
            h = F.relu(F.conv1d(h, p[f"{name}.weight"], p[f"{name}.bias"], conv.stride,
                                conv.padding, conv.dilation, conv.groups))
        return F.linear(h.flatten(1), p["head.weight"], p["head.bias"])


class SubspaceNet(torch.nn.Module):
    """A network whose weights are ``theta_0 + P z``, trained only through ``z`` in R^d (Li et al. 2018).

    ``theta_0`` (PyTorch's default initialization of ``ConvNet1D``) and the dense Gaussian projection
    ``P`` (entries ``N(0, 1/d)``, so each row has unit expected squared norm and a unit
    step in ``z`` moves every weight by about one unit of that coordinate's direction) are fixed by ``seed``, so a decoder that knows the seed
    and the architecture rebuilds the network from ``z`` alone: only ``z`` must be coded.
    """

    @boundary(length=count(8), out_dim=count(), dim=count(), channels=count(), seed=SEED)
    def __init__(self, length: int, out_dim: int, dim: int, channels: int = 16, seed: int = 0):
        super().__init__()
        g = torch.Generator().manual_seed(int(seed))
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(seed))
            self.base = ConvNet1D(length, channels, out_dim)
        for p in self.base.parameters():
            p.requires_grad_(False)
        self.names = [n for n, _ in self.base.named_parameters()]
        self.shapes = [p.shape for p in self.base.parameters()]
        self.sizes = [p.numel() for p in self.base.parameters()]
        self.register_buffer("theta0", torch.cat([p.reshape(-1) for p in self.base.parameters()]))
        self.register_buffer("proj", torch.randn(self.theta0.numel(), dim, generator=g) / math.sqrt(dim))
        self.z = torch.nn.Parameter(torch.zeros(dim))

    @property
    def n_params(self) -> int:
        """Parameters of the underlying network (not of the subspace)."""
        return int(self.theta0.numel())

    @boundary(x=Tensor("float", 2), z=Tensor("float", 1, optional=True))
    def forward(self, x: torch.Tensor, z: torch.Tensor | None = None) -> torch.Tensor:
        if x.shape[1] != self.base.length:
            raise ValueError(f"x must have {self.base.length} columns (the signal length), got "
                             f"{tuple(x.shape)}")
        if z is not None and z.shape != self.z.shape:
            raise ValueError(f"z must have shape {tuple(self.z.shape)}, got {tuple(z.shape)}")
        return self._forward(x, z)

    def _forward(self, x: torch.Tensor, z: torch.Tensor | None = None) -> torch.Tensor:
        """:meth:`forward` without its argument checks (for the training loops)."""
        theta = self.theta0 + self.proj @ (self.z if z is None else z)
        params = {n: t.view(s) for n, t, s in zip(self.names, torch.split(theta, self.sizes), self.shapes)}
        return self.base._apply_params(x, params)


@dataclass
class CompressionConfig(Config):
    """Subspace training, quantization and arithmetic coding, after Lotfi et al. (2022).

    ``FULL``: more data, channels, subspace dimensions and steps.

    Parameters
    ----------
    n_train : int, default 8000
        Number of training examples; an int >= 1.
    channels : int, default 16
        Channels of the network of the random-label control; an int >= 1.
    sizes : tuple, default (8, 16)
        Channels of the size sweep; a tuple (at least 1 item) of items each an int >= 1.
    dim : int, default 1000
        Dimension of the training subspace; an int >= 1.
    levels : tuple, default (3, 5, 7, 11, 15)
        Quantization levels tried; a tuple (at least 1 item) of items each an int >= 2.
    steps : int, default 1500
        Number of optimizer steps; an int >= 1.
    batch_size : int, default 256
        Minibatch size; an int >= 1.
    tune_steps : int, default 30
        Steps of tuning the quantization centres; an int >= 0.
    lr : float, default 0.02
        Learning rate; a finite number > 0.
    delta : float, default 0.05
        Confidence parameter: the bound holds with probability at least ``1 - delta``; a finite
        number in (0, 1).

    References
    ----------
    Lotfi et al. (2022), "PAC-Bayes Compression Bounds So Tight That They Can Explain Generalization".
    """

    FULL = dict(n_train=40000, channels=32, sizes=(8, 16, 32), dim=2000, steps=6000)

    n_train: int = param(8000, count())
    channels: int = param(16, count())          # the network of the random-label control
    sizes: tuple = param((8, 16), tuple_of(count()))  # channels of the size sweep
    dim: int = param(1000, count())
    levels: tuple = param((3, 5, 7, 11, 15), tuple_of(count(2)))
    steps: int = param(1500, count())
    batch_size: int = param(256, count())
    tune_steps: int = param(30, count(0))
    lr: float = param(0.02, positive())
    delta: float = param(0.05, fraction("neither"))


def _check_data(model: SubspaceNet, x: torch.Tensor, y: torch.Tensor) -> None:
    """Refuse inputs of the wrong length and labels outside the network's classes."""
    if x.shape[1] != model.base.length:
        raise ValueError(f"x must have {model.base.length} columns (the signal length), got "
                         f"{tuple(x.shape)}")
    check_labels("y", y, model.base.head.out_features, x.shape[0])


@boundary(**_XY, steps=count(), lr=positive(), batch_size=count(optional=True), seed=SEED)
def train_subspace(model: SubspaceNet, x: torch.Tensor, y: torch.Tensor, steps: int, lr: float,
                   batch_size: int | None = None, seed: int = 0) -> None:
    """Train the subspace coordinates ``z`` of ``model`` in place (Li et al. 2018).

    Adam (Kingma and Ba 2015) on the cross-entropy, the learning rate decayed from ``lr`` to 0
    along a cosine over ``steps`` updates (Loshchilov and Hutter 2017): update ``t`` uses
    ``lr (1 + cos(pi t / steps)) / 2``. Full batch when ``batch_size`` is None or at least the
    number of points; otherwise minibatches drawn without replacement from a permutation seeded by
    ``seed``, a new permutation whenever fewer than ``batch_size`` points are left in the current
    one. A composition of :mod:`gtlib.engine` with one model (no member axis).
    """
    _check_data(model, x, y)
    n = x.shape[0]
    opt = StackedOptimizer([model.z], "adam", lr)
    batches = None
    if batch_size is not None and batch_size < n:
        batches = StreamBatches([n], batch_size, [seed], device=x.device, drop_remainder=True)

    def loss(step, batch):
        if batch is None:
            return F.cross_entropy(model._forward(x), y)
        idx = batch[0]
        return F.cross_entropy(model._forward(x[idx]), y[idx])

    fit(loss, opt, steps, batches, schedule=lambda t: (1 + math.cos(math.pi * t / steps)) / 2)


@boundary(**_XY, centres=_ARR, symbols=_Array(integer=True), steps=count(0), lr=positive())
def tune_centres(model: SubspaceNet, x: torch.Tensor, y: torch.Tensor, centres, symbols,
                 steps: int = 30, lr: float = 0.01) -> np.ndarray:
    """Refit the ``L`` quantization centres to the training loss with the assignments held fixed.

    A learned codebook (as in Lotfi et al. 2022's quantization-aware training): only ``L`` numbers
    move, so the code length is unchanged while the quantized network's training error drops.
    ``steps`` full-batch Adam updates (Kingma and Ba 2015) of the centres, through
    :mod:`gtlib.engine`. Returns the new centres as float32.
    """
    _check_data(model, x, y)
    L, d = len(np.asarray(centres)), model.z.numel()
    sym = np.asarray(symbols)
    if sym.shape != (d,):
        raise ValueError(f"symbols must hold one symbol per subspace coordinate ({d}), got "
                         f"shape {sym.shape}")
    if sym.min() < 0 or sym.max() >= L:
        raise ValueError(f"symbols must index the {L} centres (lie in [0, {L})), got range "
                         f"[{sym.min()}, {sym.max()}]")
    # a copy: the caller's centres stay as they were
    c = torch.nn.Parameter(torch.tensor(np.asarray(centres, dtype=np.float32), device=x.device))
    sym = torch.as_tensor(sym, dtype=torch.int64, device=x.device)
    opt = StackedOptimizer([c], "adam", lr)
    fit(lambda step, batch: F.cross_entropy(model._forward(x, c[sym]), y), opt, steps)
    return c.detach().cpu().numpy().astype(np.float32)


@boundary(**_XY, levels=tuple_of(count()), delta=fraction("neither"), tune_steps=count(0))
def compress_and_bound(model: SubspaceNet, x: torch.Tensor, y: torch.Tensor, levels,
                       delta: float = 0.05, tune_steps: int = 30) -> dict:
    """Quantize ``z`` at each candidate number of levels, code it, and keep the tightest bound.

    For each ``L``: 1-D k-means, a short refit of the centres (:func:`tune_centres`), then the
    prefix-free code of :func:`encode_quantized`. The number of levels is inside the message, so
    choosing it after seeing the data is paid for by its Elias gamma code. Returns the bound, the
    bits, the quantized training error, the chosen levels, the bits themselves, the symbols and the
    centres, and ``curve``: one ``(levels, bits, quantized training error)`` triple per candidate,
    the code length each fit costs.
    """
    _check_data(model, x, y)
    z = model.z.detach().cpu().numpy().astype(np.float64)
    n = int(y.shape[0])
    best, curve = None, []
    for L in levels:
        centres, sym = quantize(z, int(L))
        if tune_steps:
            centres = tune_centres(model, x, y, centres, sym, tune_steps)
        bits = encode_quantized(centres, sym)
        with torch.no_grad():
            zq = torch.as_tensor(centres[sym], dtype=model.z.dtype, device=model.z.device)
            err = float((model._forward(x, zq).argmax(1) != y).float().mean())
        bound = countable_bound(err, len(bits), n, delta)
        curve.append((int(L), len(bits), err))
        if best is None or bound < best["bound"]:
            best = {"bound": bound, "bits": len(bits), "train_err_q": err, "levels": int(L),
                    "bits_list": bits, "symbols": sym, "centres": centres}
    best["curve"] = curve
    return best


@boundary(target=fraction())
def bits_at_fit(curve, target: float) -> float | None:
    """The code length at which a network's quantized training error first reaches ``target``.

    ``curve`` holds ``(levels, bits, quantized training error)`` triples (``CompressionResult.curve``).
    Taken in order of increasing bits, the first point with error at most ``target`` gives the
    answer; if an earlier (shorter) point misses it, the bits are interpolated linearly in the
    error between the two, so that two networks are compared at exactly the same fit. ``None``
    if no point reaches ``target``.

    Parameters
    ----------
    curve : object
        ``(levels, bits, quantized training error)`` triples (``CompressionResult.curve``).
    target : float
        The training error to reach; a finite number in [0, 1].

    Returns
    -------
    float | None
        The code length in bits, or None if no point reaches ``target``.
    """
    pts = sorted((float(b), float(e)) for _, b, e in curve)
    if not pts:
        raise ValueError("curve must hold at least one (levels, bits, error) point")
    for k, (b, e) in enumerate(pts):
        if e <= target:
            if k == 0:
                return b
            b0, e0 = pts[k - 1]
            return b0 + (e0 - target) / (e0 - e) * (b - b0) if e0 > e else b
    return None


@dataclass
class CompressionResult(Result):
    """What :func:`run_compression` measured for one network: its labels (``"true"`` or
    ``"random"``), channels, training-set size ``n``, weights ``n_params`` and subspace ``dim``;
    its training error before (``train_err``) and after quantization (``train_err_q``), the
    quantized network's test error, the code length in ``bits`` and the chosen ``levels``; the
    countable-hypothesis ``bound``, its ``kl_bound`` form, the parameter-counting bounds over all
    weights and over the subspace coordinates; whether the code decodes (``roundtrip``); and the
    ``curve`` of ``(levels, bits, quantized training error)`` over the candidate levels."""

    labels: str
    channels: int
    n: int
    n_params: int
    dim: int
    train_err: float
    train_err_q: float
    test_err_q: float
    bits: int
    levels: int
    bound: float
    kl_bound: float
    counting_bound: float
    counting_bound_subspace: float
    roundtrip: bool
    curve: list = field(default_factory=list)


@boundary(labels=Options(("true", "random")), seed=SEED, channels=count(optional=True))
def run_compression(cfg: CompressionConfig, ds: Dataset, labels: str, seed: int = 0,
                    channels: int | None = None) -> CompressionResult:
    """Train a subspace CNN on true or random labels, compress it, and bound its error.

    ``labels`` is ``"true"`` or ``"random"`` (``corrupt_labels(..., 1.0)``); ``channels``
    (default ``cfg.channels``) sets the CNN's width. Training is minibatch Adam on the
    ``cfg.dim`` subspace coordinates (:func:`train_subspace`). Returns the training error before
    and after quantization, the quantized model's test error, the code length, the chosen
    number of levels, the countable-hypothesis bound (:func:`countable_bound`), its kl form
    (:func:`pac_bayes_kl_bound` with ``KL = bits ln 2``), the parameter-counting bounds (all
    ``n_params`` float32 weights, and the ``dim`` float32 subspace coordinates), and whether the
    code decodes back to the same quantized weights.

    Parameters
    ----------
    cfg : CompressionConfig
        The experiment's settings; a CompressionConfig.
    ds : Dataset
        The dataset; a Dataset.
    labels : str
        ``"true"`` or ``"random"`` labels; one of ('true', 'random').
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    channels : int | None, default None
        Channels of the network; an int >= 1 or None.

    Returns
    -------
    CompressionResult
        The measurements listed above.

    References
    ----------
    Lotfi et al. (2022), "PAC-Bayes Compression Bounds So Tight That They Can Explain
    Generalization".
    Wilson (2025), "Deep Learning is Not So Mysterious or Different", ICML 2025.
    """
    channels = cfg.channels if channels is None else channels
    _fits(ds, cfg.n_train)
    ds = ds.subset(torch.arange(cfg.n_train))
    y = ds.y if labels == "true" else corrupt_labels(ds.y, 1.0, ds.num_classes, seed=seed + 1)
    model = SubspaceNet(ds.dim, ds.num_classes, cfg.dim, channels, seed=seed).to(ds.x.device)
    train_subspace(model, ds.x, y, cfg.steps, cfg.lr, cfg.batch_size, seed=seed)
    with torch.no_grad():
        train_err = float((model(ds.x).argmax(1) != y).float().mean())
    best = compress_and_bound(model, ds.x, y, cfg.levels, cfg.delta, cfg.tune_steps)
    centres, sym = decode_quantized(best["bits_list"])
    roundtrip = bool(np.array_equal(sym, best["symbols"]) and np.array_equal(centres, best["centres"]))
    with torch.no_grad():
        zq = torch.as_tensor(centres[sym], dtype=model.z.dtype, device=ds.x.device)
        test_err = float((model(ds.x_test, zq).argmax(1) != ds.y_test).float().mean())
    err_q = best["train_err_q"]
    return CompressionResult(
        labels=labels, channels=channels, n=cfg.n_train, n_params=model.n_params, dim=cfg.dim,
        train_err=train_err, train_err_q=err_q, test_err_q=test_err, bits=best["bits"],
        levels=best["levels"], bound=best["bound"],
        kl_bound=pac_bayes_kl_bound(err_q, best["bits"] * math.log(2), cfg.n_train, cfg.delta),
        counting_bound=counting_bound(err_q, model.n_params, cfg.n_train, delta=cfg.delta),
        counting_bound_subspace=counting_bound(err_q, cfg.dim, cfg.n_train, delta=cfg.delta),
        roundtrip=roundtrip, curve=best["curve"])
