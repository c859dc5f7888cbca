"""Mode connectivity: repairing the interpolated network (REPAIR), and curved paths."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from ..checks import SEED, InstanceOf, Options, boundary, count, positive
from .. import engine
from ..engine import EpochBatches, StackedOptimizer
from ..models import BatchedMLP, MLP
from .common import (
    _check_data,
    _check_inputs,
    _check_same_shape,
    _Numbers,
    GRID,
    INPUTS,
    LABELS,
)
from .training import from_params, params, Recipe
from .paths import (
    _alpha_grid,
    evaluate_stack,
    _path_from_logits,
    lerp,
    Path,
    path_stack,
)
from .features import preactivations

__all__ = ["evaluate_bezier", "fit_bezier", "repair_path"]


REPAIR_MODES = ("full", "mean", "layer", "norm")


@boundary(
    alphas=_Numbers(),
    x=INPUTS,
    eps=positive(),
    stats_b=InstanceOf(MLP, optional=True),
    mode=Options(REPAIR_MODES),
)
@torch.no_grad()
def repair_stack(
    a: MLP,
    b: MLP,
    alphas: Sequence[float],
    x: torch.Tensor,
    eps: float = 1e-6,
    stats_b: MLP | None = None,
    mode: str = "full",
) -> BatchedMLP:
    """REPAIR (Jordan et al., ICLR 2023): interpolated nets with renormalized units.

    For every ``alpha`` and every hidden layer, in order from the input, each unit's
    pre-activation in the interpolated network is rescaled and shifted so that its
    mean and standard deviation over ``x`` become the interpolation of the endpoints'
    statistics, ``mu = (1 - alpha) mu_A + alpha mu_B`` and
    ``sd = (1 - alpha) sd_A + alpha sd_B`` (REPAIR undoes the "variance collapse" of
    the interpolated network). The correction is folded into the layer's weights and
    bias, so the result is again a plain MLP per alpha. ``x`` should be training
    inputs (the statistics are part of the repaired model). ``stats_b`` (default
    ``b``) is the network whose unit statistics stand in for ``b``'s: a randomly
    permuted copy of ``b`` aims the same corrections at the wrong units.

    ``mode`` picks what is restored: ``"full"`` (REPAIR) each unit's mean and
    standard deviation; ``"mean"`` each unit's mean only, with no rescaling (a
    partial repair: the shift without the variance restoration); ``"layer"`` each
    unit's mean and one common rescaling per layer, the ratio of the layer's mean
    target deviation to its mean deviation (variance restored per layer, not per
    unit); ``"norm"`` a data-free rescaling that reads no statistics from ``x``: each
    unit's incoming weights and bias are scaled so that their joint L2 norm becomes
    the interpolation of the endpoints' norms (the weight-space analogue of restoring
    the spread; ``x`` is then used only for its shape check).

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP with biases.
    b : MLP
        The second network (the path ends here); an MLP of ``a``'s shape.
    alphas : Sequence[float]
        Interpolation coefficients; a sequence of finite numbers.
    x : torch.Tensor
        Inputs on which the statistics are measured; a torch.Tensor (at least two
        rows, floating-point, 2-dimensional, finite).
    eps : float, default 1e-6
        Units whose interpolated deviation is at most ``eps`` are shifted but not
        rescaled; a number > 0.
    stats_b : MLP | None, default None
        The network whose unit statistics stand in for ``b``'s; an MLP of ``b``'s
        shape or None.
    mode : str, default "full"
        What is restored; one of ``"full"``, ``"mean"``, ``"layer"``, ``"norm"``.

    Returns
    -------
    BatchedMLP
        One repaired interpolated network per alpha.

    References
    ----------
    Jordan, Sedghi, Saukh, Entezari and Neyshabur (2023), "REPAIR: REnormalizing
    Permuted Activations for Interpolation Repair", ICLR.
    """
    _check_same_shape(a, b)
    if stats_b is not None:
        _check_same_shape(b, stats_b, names=("b", "stats_b"))
    if a.layers[0].bias is None:
        raise ValueError("a and b must have biases (REPAIR shifts them)")
    _check_inputs("x", x, a, min_rows=2)  # a standard deviation needs two rows
    return _repair(a, b, _alpha_grid(alphas), x, eps, stats_b, mode)[0]


@torch.no_grad()
def _repair(
    a: MLP,
    b: MLP,
    alphas: np.ndarray,
    x: torch.Tensor,
    eps: float,
    stats_b: MLP | None,
    mode: str,
) -> tuple[BatchedMLP, torch.Tensor]:
    """The REPAIRed stack and its last hidden features on ``x`` (reused by ``repair_path``)."""
    al = torch.as_tensor(np.asarray(alphas, dtype=np.float32))
    al = al.to(x.device).view(-1, 1)
    stk = path_stack(a, b, alphas)
    ws = [w.detach().clone() for w in stk.weights]
    bs = [v.detach().clone() for v in stk.biases]
    if mode == "norm":  # data-free: each unit's (weights, bias) norm, interpolated
        (wa, ba), (wb, bb) = params(a), params(b)

        def rows(w, v):  # each unit's norm of (its weights, its bias)
            return torch.cat([w, v.unsqueeze(-1)], -1).norm(dim=-1)

        for l in range(len(ws) - 1):
            tgt = (1 - al) * rows(wa[l], ba[l]) + al * rows(wb[l], bb[l])
            cur = rows(ws[l], bs[l])
            scale = torch.where(
                cur > eps, tgt / cur.clamp_min(eps), torch.ones_like(cur)
            )
            ws[l], bs[l] = ws[l] * scale.unsqueeze(2), bs[l] * scale
        stk = BatchedMLP(ws, bs, act=a.act_name)
        h = x.unsqueeze(0)
        for w, v in zip(ws[:-1], bs[:-1]):
            h = a.act(torch.matmul(h, w.transpose(1, 2)) + v.unsqueeze(1))
        return stk, h
    za = preactivations(a, x)
    zb = preactivations(b if stats_b is None else stats_b, x)
    h = x.unsqueeze(0)
    for l in range(len(ws) - 1):
        z = torch.matmul(h, ws[l].transpose(1, 2)) + bs[l].unsqueeze(1)
        mu, sd = z.mean(1), z.std(1)
        mu_t = (1 - al) * za[l].mean(0) + al * zb[l].mean(0)
        sd_t = (1 - al) * za[l].std(0) + al * zb[l].std(0)
        if mode == "mean":
            scale = torch.ones_like(sd)
        elif mode == "layer":
            mean_sd = sd.mean(1, keepdim=True).clamp_min(eps)
            scale = (sd_t.mean(1, keepdim=True) / mean_sd).expand_as(sd)
        else:
            ratio = sd_t / sd.clamp_min(eps)
            scale = torch.where(sd > eps, ratio, torch.ones_like(sd))
        ws[l] = ws[l] * scale.unsqueeze(2)
        bs[l] = (bs[l] - mu) * scale + mu_t
        h = a.act(torch.matmul(h, ws[l].transpose(1, 2)) + bs[l].unsqueeze(1))
    return BatchedMLP(ws, bs, act=a.act_name), h


@boundary(
    x_stats=INPUTS,
    x=INPUTS,
    y=LABELS,
    alphas=GRID,
    stats_b=InstanceOf(MLP, optional=True),
    mode=Options(REPAIR_MODES),
)
def repair_path(
    a: MLP,
    b: MLP,
    x_stats: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor,
    alphas: Sequence[float] | int = 25,
    stats_b: MLP | None = None,
    mode: str = "full",
) -> Path:
    """Loss and accuracy on ``(x, y)`` of the REPAIRed interpolations.

    Loss and accuracy on ``(x, y)`` of the REPAIRed interpolations (statistics on ``x_stats``;
    ``stats_b`` as in :func:`repair_stack`).

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP.
    b : MLP
        The second network (the path ends here); an MLP.
    x_stats : torch.Tensor
        Inputs on which REPAIR measures the activation statistics; a torch.Tensor (non-empty,
        floating-point, 2-dimensional, finite).
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).
    y : torch.Tensor
        Integer labels of ``x``; a torch.Tensor (non-empty, integer, 1-dimensional).
    alphas : Sequence[float] | int, default 25
        Number of interpolation points; an int >= 2 (evenly spaced
        points in [0, 1]) or a non-empty 1-D sequence of finite numbers.
    stats_b : MLP | None, default None
        The network whose unit statistics stand in for ``b``'s (default ``b``; see
        :func:`repair_stack`); an MLP or None.
    mode : str, default "full"
        What is restored (see :func:`repair_stack`); one of ``"full"``, ``"mean"``,
        ``"layer"``, ``"norm"`` (data-free).

    Returns
    -------
    Path
        Loss and accuracy on ``(x, y)`` of the REPAIRed interpolations.
    """
    _check_same_shape(a, b)
    if stats_b is not None:
        _check_same_shape(b, stats_b, names=("b", "stats_b"))
    _check_inputs("x_stats", x_stats, a, min_rows=2)
    _check_data(a, x, y)
    alphas = _alpha_grid(alphas)
    stk, h = _repair(a, b, alphas, x_stats, 1e-6, stats_b, mode)
    if x_stats is not x:
        return evaluate_stack(stk, alphas, x, y)
    # statistics on the evaluation inputs: the repair's own forward pass gives the features
    with torch.no_grad():
        logits = torch.matmul(h, stk.weights[-1].transpose(1, 2)) + stk.biases[
            -1
        ].unsqueeze(1)
        return _path_from_logits(logits, alphas, y)


@boundary(ts=_Numbers())
def bezier_stack(
    a: MLP, m: MLP, b: MLP, ts: Sequence[float] | torch.Tensor
) -> BatchedMLP:
    """Networks on the quadratic Bezier curve ``(1-t)^2 theta_A + 2t(1-t) theta_M + t^2 theta_B``.

    Garipov et al. (2018), Section 3.2: the curve starts at A, ends at B and bends towards the
    control point ``theta_M``; with ``theta_M = (theta_A + theta_B) / 2`` it is the straight line.
    """
    _check_same_shape(a, m, names=("a", "m"))
    _check_same_shape(a, b)
    t = (
        torch.as_tensor(_alpha_grid(ts), dtype=torch.float32)
        .to(a.layers[0].weight.device)
        .view(-1)
    )
    ws, bs = _bezier_params([params(n) for n in (a, m, b)], t)
    return BatchedMLP(ws, bs, act=a.act_name)


def _bezier_params(pts, t):
    c = [(1 - t) ** 2, 2 * t * (1 - t), t**2]
    ws = [
        sum(ci.view(-1, 1, 1) * p[0][l] for ci, p in zip(c, pts))
        for l in range(len(pts[0][0]))
    ]
    bs = (
        None
        if pts[0][1] is None
        else [
            sum(ci.view(-1, 1) * p[1][l] for ci, p in zip(c, pts))
            for l in range(len(pts[0][1]))
        ]
    )
    return ws, bs


@boundary(x=INPUTS, y=LABELS, seed=SEED, samples=count())
def fit_bezier(
    a: MLP,
    b: MLP,
    x: torch.Tensor,
    y: torch.Tensor,
    recipe: Recipe,
    seed: int = 0,
    samples: int = 4,
) -> MLP:
    r"""Train the control point of a quadratic Bezier curve from ``a`` to ``b``.

    Train the control point of a quadratic Bezier curve from ``a`` to ``b`` (Garipov et al. 2018).

    The endpoints stay fixed; the control point starts at the midpoint of the straight line and
    minimizes the training loss averaged over the curve, ``E_{t ~ U(0,1)} L(theta(t))``, with
    ``samples`` values of ``t`` drawn afresh for every minibatch (Garipov et al. draw one; a few
    per step average the same objective with less noise). Returns the control point as an MLP.

    The control point is trained by :func:`gtlib.engine.fit` with SGD as ``recipe`` says
    (momentum, weight decay, the warm-up-then-decay schedule); one generator seeded with ``seed``
    draws each epoch's minibatch order and, at every step after it, the ``samples`` values of t.

    .. math::

       \phi(t) = (1 - t)^2 \theta_a + 2 t (1 - t)\, m + t^2 \theta_b

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP.
    b : MLP
        The second network (the path ends here); an MLP.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).
    y : torch.Tensor
        Integer labels of ``x``; a torch.Tensor (non-empty, integer, 1-dimensional).
    recipe : Recipe
        The training recipe; a Recipe.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    samples : int, default 4
        Curve points sampled per training step; an int >= 1.

    Returns
    -------
    MLP
        The control point, as an MLP.

    References
    ----------
    Garipov, Izmailov, Podoprikhin, Vetrov and Wilson (2018), "Loss Surfaces, Mode Connectivity,
    and Fast Ensembling of DNNs".
    """
    _check_same_shape(a, b)
    _check_data(a, x, y)
    mid = lerp(a, b, 0.5)
    pa, pb = params(a), params(b)
    wm = [w.clone().requires_grad_(True) for w in params(mid)[0]]
    bm = (
        None
        if pa[1] is None
        else [v.clone().requires_grad_(True) for v in params(mid)[1]]
    )
    trainable = wm + (bm or [])
    opt = StackedOptimizer(
        trainable,
        "sgd",
        lr=recipe.lr,
        momentum=recipe.momentum,
        weight_decay=recipe.weight_decay,
    )
    # one generator draws each epoch's order (in the batches) and each step's t (in the loss),
    # in that order
    gen = torch.Generator().manual_seed(int(seed))
    n = x.shape[0]
    total = recipe.steps(n)

    def loss(step: int, batch: torch.Tensor) -> torch.Tensor:
        idx = batch[0]
        t = torch.rand(samples, generator=gen).to(x.device)
        ws, bs = _bezier_params([pa, (wm, bm), pb], t)
        h = x[idx].unsqueeze(0)
        for l in range(len(ws)):
            h = torch.matmul(h, ws[l].transpose(1, 2))
            if bs is not None:
                h = h + bs[l].unsqueeze(1)
            if l < len(ws) - 1:
                h = a.act(h)
        return F.cross_entropy(h.reshape(-1, h.shape[-1]), y[idx].repeat(samples))

    engine.fit(
        loss,
        opt,
        total,
        EpochBatches(n, recipe.batch_size, [gen], device=x.device),
        schedule=lambda step: recipe._lr_factor(step, total),
    )
    return from_params(
        [w.detach() for w in wm],
        None if bm is None else [v.detach() for v in bm],
        a.act_name,
    )


@boundary(x=INPUTS, y=LABELS, ts=GRID)
def evaluate_bezier(
    a: MLP,
    m: MLP,
    b: MLP,
    x: torch.Tensor,
    y: torch.Tensor,
    ts: Sequence[float] | int = 25,
) -> Path:
    """Loss and accuracy along the Bezier curve with control point ``m`` (``alphas`` = ``t``).

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP.
    m : MLP
        The Bezier control point, as a network; an MLP.
    b : MLP
        The second network (the path ends here); an MLP.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).
    y : torch.Tensor
        Integer labels of ``x``; a torch.Tensor (non-empty, integer, 1-dimensional).
    ts : Sequence[float] | int, default 25
        Curve parameters in [0, 1]; an int >= 2 (evenly spaced points in [0, 1]) or a non-empty 1-D
        sequence of finite numbers.

    Returns
    -------
    Path
        Loss and accuracy along the Bezier curve with control point ``m`` (``alphas`` = ``t``).
    """
    _check_same_shape(a, m, names=("a", "m"))
    _check_same_shape(a, b)
    _check_data(a, x, y)
    ts = _alpha_grid(ts)
    return evaluate_stack(bezier_stack(a, m, b, ts), ts, x, y)
