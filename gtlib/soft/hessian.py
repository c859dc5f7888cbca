"""Hessian spectra by Lanczos (gtlib.soft, section 5).

Hessian-vector products from ``torch.func`` fed to :func:`scipy.sparse.linalg.eigsh`, with a check
that the computed top of the spectrum covers every eigenvalue that matters for ``alpha``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F

from ..checks import (
    SEED,
    boundary,
    check_int,
    check_labels,
    count,
    fraction,
    positive,
)
from .common import _Array, _XY
from .random_features import effective_dimensionality

__all__ = [
    # functions
    "effective_parameters",
]


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


def _check_xy(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> None:
    """Refuse labels outside the model's classes and inputs the model cannot take."""
    p = next(iter(model.parameters()), None)
    try:
        with torch.no_grad():
            out = model(x[:1].to(p.device, p.dtype) if p is not None else x[:1])
    except RuntimeError as e:
        raise ValueError(
            f"x must fit the model's input (shape {tuple(x.shape)}): {e}"
        ) from None
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
def dense_hessian(
    model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor
) -> np.ndarray:
    """The full Hessian of the mean cross-entropy via ``torch.func.hessian`` (small models only)."""
    _check_xy(model, x, y)
    model = _as_double(model)
    loss, flat = _flat_loss(model, x.double().cpu(), y.cpu())
    return torch.func.hessian(loss)(flat).numpy()


@boundary(**_XY, k=count(), tol=positive(), seed=SEED)
def lanczos_top_eigs(
    model: torch.nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    k: int,
    tol: float = 1e-6,
    seed: int = 0,
    vectors: bool = False,
):
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
def tail_trace(
    matvec: Callable, q: np.ndarray, probes: int = 20, seed: int = 0
) -> tuple[float, float]:
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


@boundary(
    **_XY,
    alpha=positive(),
    k=count(),
    max_k=count(),
    weight_tol=fraction("neither"),
    seed=SEED,
    probes=count(0),
)
def effective_parameters(
    model: torch.nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    alpha: float,
    k: int = 32,
    max_k: int = 256,
    weight_tol: float = 0.05,
    seed: int = 0,
    probes: int = 0,
) -> dict:
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
        raise ValueError(
            "probes must be 0 (no tail estimate) or >= 2 (a standard error needs "
            "two), got 1"
        )
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
    out = {
        "neff": effective_dimensionality(eigs, alpha),
        "eigs": eigs,
        "k": k_eff,
        "covered": bool(covered),
        "n_params": P,
        "train_loss": train_loss,
    }
    if probes:
        matvec, _ = hessian_matvec(model, x.cpu(), y.cpu())
        t, se = tail_trace(matvec, vecs, probes, seed)
        out.update(
            tail=t, tail_se=se, neff_upper=out["neff"] + max(t + 2 * se, 0.0) / alpha
        )
    return out
