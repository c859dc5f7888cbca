"""Mode connectivity: permuting hidden units, and weight and activation matching."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment

from ..checks import SEED, Options, boundary, count
from ..models import MLP
from .common import _check_inputs, _check_same_shape, INPUTS
from .training import from_params, params

__all__ = ["activation_matching", "permute", "random_perms", "weight_matching"]


def _check_perm_list(
    name: str, perms, widths: list[int] | None = None
) -> list[np.ndarray]:
    """A list with one permutation (1-D integer array) per hidden layer (of ``widths`` if given)."""
    if isinstance(perms, (str, bytes)) or not isinstance(perms, (list, tuple)):
        raise TypeError(
            f"{name} must be a list of permutations (one integer array per hidden "
            f"layer), got {type(perms).__name__}"
        )
    if widths is not None and len(perms) != len(widths):
        raise ValueError(
            f"{name} must be a list of {len(widths)} permutations (one per hidden "
            f"layer), got {len(perms)}"
        )
    if not perms:
        raise ValueError(f"{name} must hold at least one permutation, got []")
    out = []
    for l, p in enumerate(perms):
        p = np.asarray(p.detach().cpu() if isinstance(p, torch.Tensor) else p)
        if p.dtype.kind not in "iu":
            raise TypeError(
                f"{name}[{l}] must be an integer array (a permutation), got dtype "
                f"{p.dtype}"
            )
        w = len(p) if widths is None or p.ndim != 1 else widths[l]
        if (
            p.ndim != 1
            or p.shape != (w,)
            or not np.array_equal(np.sort(p), np.arange(w))
        ):
            raise ValueError(
                f"{name}[{l}] must be a permutation of range({w}), got shape "
                f"{p.shape}"
            )
        out.append(p.astype(np.int64))
    return out


def _check_perms(model: MLP, perms) -> list[np.ndarray]:
    return _check_perm_list(
        "perms", perms, [l.weight.shape[0] for l in model.layers[:-1]]
    )


@boundary(perms=None)  # checked against the model's widths below
def permute(model: MLP, perms: Sequence[np.ndarray]) -> MLP:
    """The same function with its hidden units reordered.

    The same function with hidden units reordered: unit ``i`` of layer ``l`` becomes ``perms[l][i]``.

    Rows of ``W_l`` and entries of ``b_l`` are permuted by ``perms[l]``; columns of ``W_{l+1}`` by
    the same permutation, so the network computes exactly the same function (Entezari et al. 2022,
    Section 2; Git Re-Basin, Section 2).

    Parameters
    ----------
    model : MLP
        The network; an MLP.
    perms : Sequence[np.ndarray]
        One permutation per hidden layer.

    Returns
    -------
    MLP
        The permuted network.
    """
    perms = _check_perms(model, perms)
    ws, bs = params(model)
    ws, bs = [w.clone() for w in ws], None if bs is None else [b.clone() for b in bs]
    for l, p in enumerate(perms):
        pt = torch.as_tensor(p, device=ws[l].device)
        ws[l] = ws[l][pt]
        ws[l + 1] = ws[l + 1][:, pt]
        if bs is not None:
            bs[l] = bs[l][pt]
    return from_params(ws, bs, model.act_name)


@boundary(seed=SEED)
def random_perms(model: MLP, seed: int = 0) -> list[np.ndarray]:
    """One uniformly random permutation per hidden layer of ``model``.

    Parameters
    ----------
    model : MLP
        The network; an MLP.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].

    Returns
    -------
    list[np.ndarray]
        One uniformly random permutation per hidden layer of ``model``.
    """
    rng = np.random.default_rng(seed)
    return [rng.permutation(l.weight.shape[0]) for l in model.layers[:-1]]


def _check_finite_weights(name: str, model: MLP) -> None:
    if not all(bool(torch.isfinite(p).all()) for p in model.parameters()):
        raise ValueError(f"{name} must have finite weights, got NaN or inf")


@boundary(max_iter=count(), seed=SEED)
def weight_matching(
    a: MLP, b: MLP, max_iter: int = 100, seed: int = 0
) -> list[np.ndarray]:
    """Permutations aligning ``b`` to ``a`` by weight matching (Git Re-Basin Alg. 1).

    Maximizes ``sum_l <W_l^A, P_l W_l^B P_{l-1}^T> + <b_l^A, P_l b_l^B>`` over one
    permutation ``P_l`` per hidden layer by coordinate descent: each pass visits the
    hidden layers in a random order and solves the linear assignment problem of one
    layer (its incoming and outgoing weights) with the others fixed, using
    :func:`scipy.optimize.linear_sum_assignment`. Stops when a pass improves nothing
    or after ``max_iter`` passes. Apply the result with ``permute(b, perms)``.

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP.
    b : MLP
        The second network (the path ends here); an MLP.
    max_iter : int, default 100
        Most iterations; an int >= 1.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].

    Returns
    -------
    list[np.ndarray]
        One permutation per hidden layer.

    References
    ----------
    Ainsworth, Hayase and Srinivasa (2023), "Git Re-Basin: Merging Models modulo
    Permutation Symmetries", Algorithm 1.
    """
    _check_same_shape(a, b)
    _check_finite_weights("a", a)
    _check_finite_weights("b", b)
    (wa, ba), (wb, bb) = params(a), params(b)
    wa = [w.cpu().double().numpy() for w in wa]
    wb = [w.cpu().double().numpy() for w in wb]
    ba = None if ba is None else [v.cpu().double().numpy() for v in ba]
    bb = None if bb is None else [v.cpu().double().numpy() for v in bb]
    L = len(wa) - 1
    perms = [np.arange(wa[l].shape[0]) for l in range(L)]
    rng = np.random.default_rng(seed)
    for _ in range(max_iter):
        improved = False
        for l in rng.permutation(L):
            w_in = wb[l] if l == 0 else wb[l][:, perms[l - 1]]
            cost = wa[l] @ w_in.T
            if ba is not None:
                cost += np.outer(ba[l], bb[l])
            w_out = wb[l + 1] if l + 1 == L else wb[l + 1][perms[l + 1]]
            cost += wa[l + 1].T @ w_out
            _, col = linear_sum_assignment(cost, maximize=True)
            old = cost[np.arange(len(col)), perms[l]].sum()
            new = cost[np.arange(len(col)), col].sum()
            if new > old + 1e-12 * max(1.0, abs(old)):
                improved = True
                perms[l] = col
        if not improved:
            break
    return perms


@boundary(x=INPUTS, method=Options(("cross", "pearson")))
@torch.no_grad()
def activation_matching(
    a: MLP, b: MLP, x: torch.Tensor, method: str = "cross"
) -> list[np.ndarray]:
    """Permutations that align ``b`` to ``a`` by matching hidden activations on inputs ``x``.

    For each hidden layer, solves one linear assignment problem that maximizes the summed
    similarity between unit ``i`` of ``a`` and its partner in ``b`` (Git Re-Basin, Section 3.1).
    ``method="cross"`` (default) uses the raw cross moment ``E[a_i b_j]`` of the post-ReLU
    activations, which is what the authors' MNIST MLP script matches on (a Pearson-correlation
    variant is present there but commented out); ``method="pearson"`` uses the correlation
    (Entezari et al. 2022 and Li et al. 2015 match on correlations). Layers are independent
    because the features depend only on the inputs.

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP.
    b : MLP
        The second network (the path ends here); an MLP.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).
    method : str, default 'cross'
        ``"cross"`` (raw cross moment of the activations) or ``"pearson"`` (their correlation); one
        of ('cross', 'pearson').

    Returns
    -------
    list[np.ndarray]
        One permutation per hidden layer.

    References
    ----------
    Ainsworth, Hayase and Srinivasa (2023), "Git Re-Basin: Merging Models modulo Permutation
    Symmetries".
    """
    _check_same_shape(a, b)
    _check_inputs("x", x, a, min_rows=2 if method == "pearson" else 1)
    perms = []
    for fa, fb in zip(a.features(x)[:-1], b.features(x)[:-1]):
        if method == "pearson":
            fa = (fa - fa.mean(0)) / (fa.std(0) + 1e-8)
            fb = (fb - fb.mean(0)) / (fb.std(0) + 1e-8)
        sim = (fa.T @ fb / len(x)).cpu().double().numpy()
        perms.append(linear_sum_assignment(sim, maximize=True)[1])
    return perms


@boundary(found=None, planted=None)  # checked below (lists or arrays)
def perm_recovery(
    found: Sequence[np.ndarray], planted: Sequence[np.ndarray]
) -> list[float]:
    """Fraction of units per layer for which matching undid a planted permutation.

    If ``b = permute(a, planted)`` then aligning ``b`` back to ``a`` needs ``found[l] =
    argsort(planted[l])`` (the inverse permutation); this returns the fraction of agreeing entries.
    """
    found = _check_perm_list("found", found)
    planted = _check_perm_list("planted", planted, [len(p) for p in found])
    return [
        float(np.mean(np.asarray(f) == np.argsort(np.asarray(p))))
        for f, p in zip(found, planted)
    ]
