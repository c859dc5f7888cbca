"""Order-regularized polynomials, the soft-inductive-bias example (gtlib.soft, section 1).

A degree-150 Legendre expansion with the penalty ``sum_j gamma**j * w_j**2``, fitted in closed
form; its marginal likelihood sets the noise level and the prior scale. Also the taxonomy of
benign, tempered and catastrophic overfitting of minimum-norm interpolants.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.polynomial import legendre as _leg

from ..checks import (
    SEED,
    Interval,
    boundary,
    check_int,
    count,
    nonnegative,
    positive,
    tuple_of,
)
from ..config import Config, Result, param
from .common import _ARR, _Array, _pos, _vec
from .random_features import min_norm_lstsq

__all__ = [
    # configs and results
    "PolyConfig",
    "TARGETS",
    # functions
    "evidence_decomposition",
    "fit_polynomial",
    "legendre_features",
    "order_penalty",
    "overfitting_taxonomy",
    "poly_log_evidence",
    "predict_polynomial",
    "run_polynomial",
]


_POLY = dict(x=_ARR, y=_ARR, degree=count(0), gamma=Interval(float, 1))


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
        raise ValueError(
            f"x and y must have the same length, got {phi.shape[0]} and {y.shape[0]}"
        )
    if penalty is None:
        return np.linalg.lstsq(phi, y, rcond=None)[0]
    penalty = np.asarray(penalty, dtype=np.float64)
    if (
        penalty.shape != (degree + 1,)
        or np.any(penalty < 0)
        or not np.all(np.isfinite(penalty))
    ):
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
def poly_log_evidence(
    x, y, degree: int, gamma: float, noise_vars, prior_vars
) -> np.ndarray:
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
    return (
        -0.5 * (proj2 / var).sum(-1)
        - 0.5 * np.log(var).sum(-1)
        - 0.5 * n * np.log(2 * np.pi)
    )


@boundary(
    x=_ARR, y=_ARR, degree=count(0), gammas=_ARR, noise_vars=_ARR, prior_vars=_ARR
)
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
            best = (
                float(ev[i, j]),
                float(g),
                float(np.asarray(noise_vars)[i]),
                float(np.asarray(prior_vars)[j]),
            )
    ev, g, s2, t2 = best
    w = fit_polynomial(x, y, degree, order_penalty(degree, g, s2 / t2))
    return {"w": w, "gamma": g, "noise_var": s2, "prior_var": t2, "log_evidence": ev}


@boundary(**_POLY, noise_var=positive(), prior_var=positive())
def evidence_decomposition(
    x, y, degree: int, gamma: float, noise_var: float, prior_var: float
) -> dict:
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
    log_prior = -0.5 * np.sum(prec * w**2) - 0.5 * np.sum(np.log(2 * np.pi / prec))
    occam = log_prior + 0.5 * d * np.log(2 * np.pi) - 0.5 * np.linalg.slogdet(A)[1]
    return {
        "data_fit": float(fit),
        "occam": float(occam),
        "log_evidence": float(fit + occam),
        "w": w,
    }


@boundary(x=_Array(None))
def simple_target(x) -> np.ndarray:
    """The 'simple' structured target of the polynomial experiment (a gentle quadratic)."""
    x = np.asarray(x, dtype=np.float64)
    return 0.5 * x**2 - 0.3 * x + 0.2


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

    FULL = dict(
        n_test=20000,
        gammas=tuple(np.round(np.linspace(1.02, 3.0, 34), 3)),
        noise_vars=tuple(np.logspace(-5, 0, 81)),
        prior_vars=tuple(np.logspace(-3, 3, 37)),
    )

    n: int = param(100, count(2))
    noise: float = param(0.2, nonnegative())
    degree: int = param(150, count(0))
    n_test: int = param(2000, count())
    gammas: tuple = param(
        (1.05, 1.1, 1.2, 1.3, 1.5, 2.0, 3.0), tuple_of(Interval(float, 1))
    )
    noise_vars: tuple = param(tuple(np.logspace(-4, 0, 33)), tuple_of(positive()))
    prior_vars: tuple = param(tuple(np.logspace(-2, 2, 17)), tuple_of(positive()))
    interpolate_noise_var: float = param(
        1e-6, positive()
    )  # sigma^2 for an exact fit
    interpolate_gamma: float = param(1.1, Interval(float, 1))
    max_ls_degree: int | None = param(None, count(0, optional=True))  # default n - 1
    restricted_degree: int = param(
        20, count(0)
    )  # a hard restriction of the hypothesis space

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
    datasets = [(k, f, cfg.noise) for k, f in TARGETS.items()] + [
        ("noise", np.zeros_like, 1.0)
    ]
    for name, f, sd in datasets:
        y = f(x) + sd * rng.normal(size=cfg.n)
        truth_t = f(xt)

        def report(w, **extra):
            return PolyFit(
                curve=predict_polynomial(w, grid),
                train_mse=float(np.mean((predict_polynomial(w, x) - y) ** 2)),
                excess=float(np.mean((predict_polynomial(w, xt) - truth_t) ** 2)),
                **extra,
            )

        pen = order_penalty(J, cfg.interpolate_gamma, cfg.interpolate_noise_var)
        soft = fit_soft_polynomial(
            x, y, J, cfg.gammas, cfg.noise_vars, cfg.prior_vars
        )
        ls = [report(fit_polynomial(x, y, d), degree=d) for d in range(max_deg + 1)]
        best = min(ls, key=lambda r: r.excess)
        fits = {
            "interpolant": report(fit_polynomial(x, y, J, pen)),
            "evidence": report(
                soft["w"],
                **{
                    k: soft[k]
                    for k in ("gamma", "noise_var", "prior_var", "log_evidence")
                },
            ),
            "minnorm": report(fit_polynomial(x, y, J)),
            "best_ls": best,
            "restricted": report(
                fit_polynomial(x, y, cfg.restricted_degree),
                degree=cfg.restricted_degree,
            ),
        }
        targets[name] = PolyDataset(y=y, truth=f(grid), noise_var=sd**2, fits=fits)
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


@boundary(
    n=count(2), noise=positive(), seed=SEED, tail_dim=count(), tail_var=positive()
)
def overfitting_taxonomy(
    n: int = 200,
    noise: float = 0.5,
    seed: int = 0,
    tail_dim: int = 20000,
    tail_var: float = 1e-3,
) -> TaxonomyResult:
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
    specs = {
        "benign": np.full(tail_dim, float(tail_var)),
        "tempered": np.ones(2 * n - 1),
        "catastrophic": np.ones(n + 2),
    }
    out = TaxonomyResult(noise_var=noise**2, n=n, spectra={})
    for name, tail in specs.items():
        lam = np.concatenate([[1.0], tail])
        x = rng.normal(size=(n, lam.size)) * np.sqrt(lam)
        y = x[:, 0] + noise * rng.normal(size=n)
        b = min_norm_lstsq(x, y)
        err = b.copy()
        err[0] -= 1.0
        out.spectra[name] = InterpolantRisk(
            train_mse=float(np.mean((x @ b - y) ** 2)),
            excess=float(np.sum(lam * err**2)),
            d=int(lam.size),
            tail_rank=float(tail.sum() ** 2 / np.sum(tail**2)),
            tail_r0=float(tail.sum()),
        )
    return out
