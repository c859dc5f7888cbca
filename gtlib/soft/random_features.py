"""Random-feature regression (gtlib.soft, section 3).

Minimum-norm least squares on random ReLU features (double descent in the number of features),
and the effective dimensionality ``N_eff = sum_i lambda_i / (lambda_i + alpha)`` of its Hessian
(Maddox et al. 2020).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..checks import (
    SEED,
    InstanceOf,
    boundary,
    check_int,
    count,
    fraction,
    nonnegative,
    positive,
    tuple_of,
)
from ..config import Config, Result, param
from .common import _ARR, _Array, _pos, _vec

__all__ = [
    # configs and results
    "RFConfig",
    # functions
    "double_descent_summary",
    "effective_dimensionality",
    "rf_spectrum",
    "run_random_features",
]


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
    eigs = np.sort(np.clip(_vec("eigs", eigs), 0, None))[::-1]
    k = check_int("k", k, 1)
    if k > eigs.size:
        raise ValueError(
            f"k must be <= the number of eigenvalues ({eigs.size}), got {k}"
        )
    return float(k - effective_dimensionality(eigs[:k], alpha))


@boundary(x=_Array(2), w=_Array(2), b=_Array(1))
def relu_features(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Random ReLU features ``max(0, x w + b) / sqrt(p)`` of inputs ``x`` (n, D); ``w`` is (D, p)."""
    x, w, b = (np.asarray(v, dtype=np.float64) for v in (x, w, b))
    if w.shape[0] != x.shape[1]:
        raise ValueError(
            f"w must have one row per column of x ({x.shape[1]}), got {w.shape}"
        )
    if b.shape != (w.shape[1],):
        raise ValueError(
            f"b must have one entry per column of w ({w.shape[1]}), got {b.shape}"
        )
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
    ps: tuple = param(
        tuple(
            sorted(
                set(
                    np.unique(
                        np.round(np.geomspace(5, 2000, 34)).astype(int)
                    ).tolist()
                    + [100, 200, 400]
                )
            )
        ),
        tuple_of(count(), increasing="strict"),
    )
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
    betas = (s / (s**2 + lams[:, None]) * c) @ vt
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
        feats = [relu_features(z, w, b) * np.sqrt(P) for z in (x, xt, xv)]
        null[r] = np.mean((yt - y.mean()) ** 2)
        for j, p in enumerate(cfg.ps):
            phi, phit, phiv = (f[:, :p] / np.sqrt(p) for f in feats)
            betas, beta = ridge_path(phi, y, cfg.ridges)
            test[r, j] = np.mean((phit @ beta - yt) ** 2)
            best = int(np.argmin(((phiv @ betas.T - yv[:, None]) ** 2).mean(0)))
            ridge[r, j] = np.mean((phit @ betas[best] - yt) ** 2)
            eigs = np.linalg.svd(phi, compute_uv=False) ** 2 / cfg.n
            neff[r, j] = effective_dimensionality(eigs, cfg.alpha)
            poor[r, j] = poorly_determined(eigs, cfg.alpha, min(cfg.n, p))
    return RandomFeaturesResult(
        ps=np.array(cfg.ps),
        n=cfg.n,
        test_mse=np.median(test, 0),
        test_mse_draws=test,
        ridge_mse=np.median(ridge, 0),
        null_mse=float(np.median(null)),
        neff=neff.mean(0),
        poor=poor.mean(0),
        noise_var=cfg.noise**2,
    )


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
        raise ValueError(
            f"mse must have one entry per p ({ps.size}), got {mse.size}"
        )
    under, over = mse[ps < n], mse[ps > n]
    if under.size == 0 or over.size == 0:
        raise ValueError("ps must include values below and above n")
    near = mse[(ps >= n / 2) & (ps <= 2 * n)]
    return {
        "first": float(mse[0]),
        "best_under": float(under.min()),
        "best_under_p": int(ps[ps < n][under.argmin()]),
        "best_over": float(over.min()),
        "best_over_p": int(ps[ps > n][over.argmin()]),
        "peak": float(near.max()),
        "max_rise": float(np.max(mse[1:] / mse[:-1]) - 1),
    }


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
    eigs = np.linalg.svd(phi, compute_uv=False)[: min(cfg.n, p)] ** 2 / cfg.n
    return {
        "eigs": eigs,
        "test_mse": float(np.mean((phit @ beta - yt) ** 2)),
        "neff": effective_dimensionality(eigs, cfg.alpha),
        "poor": poorly_determined(eigs, cfg.alpha, min(cfg.n, p)),
    }
