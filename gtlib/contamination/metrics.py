"""Feature contamination: losses and metrics (projections, asymmetries, errors)."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..checks import Tensor, boundary, nonnegative
from ..models import activation
from .common import _ACT, _same_dtype, _Signs, BINARY_LOSSES
from .data import Embedding

__all__ = [
    "activation_asymmetry",
    "bias_equivalence",
    "binary_accuracy",
    "mean_direction_components",
    "signed_asymmetry",
]


def _check_outputs(f: torch.Tensor, y: torch.Tensor) -> None:
    """Outputs ``f`` and labels ``y`` that pair up over the last axis (``y`` broadcasts)."""
    if y.ndim > f.ndim or f.shape[f.ndim - y.ndim :] != y.shape:
        raise ValueError(
            f"y must have the shape of f {tuple(f.shape)} or of its last axes, "
            f"got {tuple(y.shape)}"
        )


def _binary_loss(name: str, f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean hinge ``max(0, 1 - y f)`` or logistic ``log(1 + exp(-y f))`` loss over the last axis.

    ``y`` holds the labels -1.0 and +1.0, with the shape of ``f`` or of its last axes."""
    if name == "hinge":
        return F.relu(1.0 - y * f).mean(-1)
    if name == "logistic":
        return F.softplus(-y * f).mean(-1)
    raise ValueError(f"loss must be one of {BINARY_LOSSES}, got {name!r}")


@boundary(f=Tensor("float"), y=_Signs((1, 2)))
def binary_accuracy(f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Fraction of points with ``sign(f) == y`` (ties count as errors), over the last axis.

    Parameters
    ----------
    f : torch.Tensor
        The networks' outputs; a torch.Tensor (non-empty, floating-point, finite).
    y : torch.Tensor
        Labels, -1.0 or +1.0; a torch.Tensor (non-empty, floating-point, 1 or 2-dimensional,
        finite) of labels -1.0 and +1.0.

    Returns
    -------
    torch.Tensor
        The accuracy over the last axis.
    """
    _check_outputs(f, y)
    return _binary_accuracy(f, y)


def _binary_accuracy(f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (f * y > 0).float().mean(-1)


def _check_weights(W: torch.Tensor, emb: Embedding) -> None:
    if W.shape[-1] != emb.dim:
        raise ValueError(f"W must have {emb.dim} columns, got {W.shape[-1]}")
    _same_dtype("W", W, emb.core, "emb")


@boundary(W=Tensor("float", (2, 3)))
def projection_norms(
    W: torch.Tensor, emb: Embedding
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-neuron norms of the first-layer weights projected on the core and background subspaces.

    ``||P_c^T w_j||`` and ``||P_b^T w_j||`` for the rows ``w_j`` of ``W`` ((h, d) or (E, h, d)):
    the quantities whose means the paper plots in Figure 3.
    """
    _check_weights(W, emb)
    return (W @ emb.core).norm(dim=-1), (W @ emb.background).norm(dim=-1)


@boundary(W=Tensor("float", (2, 3)))
def mean_direction_components(
    W: torch.Tensor, emb: Embedding
) -> tuple[torch.Tensor, torch.Tensor]:
    """Split each neuron's background weights ``P_b^T w_j`` along the mean direction.

    With ``e = 1 / sqrt(k_b)`` (the unit vector along all ``k_b`` background
    coordinates), returns the signed components ``e . P_b^T w_j`` and the norms of
    the remainders ``||P_b^T w_j - (e . P_b^T w_j) e||``, each ``(h,)`` or
    ``(E, h)``. A shift of every background coordinate by ``-m`` moves neuron ``j``'s
    pre-activation by ``-m sqrt(k_b) (e . P_b^T w_j)``: the shift sees only the first
    part.

    Parameters
    ----------
    W : torch.Tensor
        First-layer weights; a torch.Tensor (non-empty, floating-point, 2 or
        3-dimensional, finite).
    emb : Embedding
        The embedding of core and background features; a Embedding.

    Returns
    -------
    tuple[torch.Tensor, torch.Tensor]
        The components along and off the mean direction (see above).

    References
    ----------
    Zhang, Zhao, Chen, Jiang and Chen (2024), "Feature Contamination: Neural Networks
    Learn Uncorrelated Features and Fail to Generalize".
    """
    _check_weights(W, emb)
    v = W @ emb.background  # P_b^T w_j, (..., h, k_b)
    k = v.shape[-1]
    along = v.sum(-1) / np.sqrt(k)  # e . P_b^T w_j
    orth = (v - along[..., None] / np.sqrt(k)).norm(dim=-1)
    return along, orth


@boundary(
    W0=Tensor("float", 2),
    W1=Tensor("float", 2),
    b0=Tensor("float", 1),
    b1=Tensor("float", 1),
    decay=nonnegative(),
)
def bias_equivalence(
    W0: torch.Tensor,
    W1: torch.Tensor,
    b0: torch.Tensor,
    b1: torch.Tensor,
    emb: Embedding,
    decay: float = 1.0,
) -> dict[str, float]:
    """How closely each neuron's weight change along the background mean tracks its bias change.

    The gradient of a loss with respect to ``w_j``, projected on the background mean direction
    ``e``, is ``sqrt(k_b) / 2`` times the gradient with respect to ``b_j`` plus a term that
    averages the centred background coordinates (for a ``U[0,1]`` background, whose mean is
    ``sqrt(k_b)/2 e``). Under SGD with weight decay both move by the same linear recursion, so
    ``d_e = along_1 - decay * along_0`` and ``d_b = b_1 - decay * b_0`` satisfy
    ``d_e = sqrt(k_b) / 2 * d_b`` up to that centred term (``decay``: the factor by which weight
    decay alone would multiply a weight over the run; 1 for none).

    Parameters
    ----------
    W0, W1 : torch.Tensor
        First-layer weights ``(h, d)`` before and after training.
    b0, b1 : torch.Tensor
        First-layer biases ``(h,)`` before and after training.
    emb : Embedding
        The data's embedding (its background subspace defines ``e``).
    decay : float
        Weight decay's factor over the run (see above).

    Returns
    -------
    dict
        ``slope`` (least squares of ``d_e`` on ``d_b`` through the origin), ``corr`` (their
        correlation across neurons), ``bias_change`` (the mean ``|b_1 - b_0|``), ``bias_move``
        (the mean ``|d_b|``: what training moved the biases beyond weight decay's own shrinking)
        and ``weight_change`` (the mean ``|d_e|``).
    """
    if W0.shape != W1.shape:
        raise ValueError(
            f"W0 and W1 must have the same shape, got {tuple(W0.shape)} and "
            f"{tuple(W1.shape)}"
        )
    for name, b in (("b0", b0), ("b1", b1)):
        if b.shape[0] != W0.shape[0]:
            raise ValueError(
                f"{name} must have one entry per neuron ({W0.shape[0]}), "
                f"got {b.shape[0]}"
            )
    if W0.shape[0] < 2:
        raise ValueError(
            f"W0 must have at least two neurons (rows), got {W0.shape[0]}"
        )
    a0, _ = mean_direction_components(W0, emb)
    a1, _ = mean_direction_components(W1, emb)
    de = (a1 - decay * a0).double()
    db = (b1 - decay * b0).double()
    if (
        float(db.abs().max()) == 0.0
        or float(db.std()) == 0.0
        or float(de.std()) == 0.0
    ):
        raise ValueError(
            "b1: the corrected bias changes (and the weight changes along e) must "
            "vary across neurons to define a slope and a correlation"
        )
    corr = float(torch.corrcoef(torch.stack([de, db]))[0, 1])
    return {
        "slope": float((de * db).sum() / (db * db).sum()),
        "corr": corr,
        "bias_change": float((b1 - b0).abs().mean()),
        "bias_move": float(db.abs().mean()),
        "weight_change": float(de.abs().mean()),
    }


@boundary(pre=Tensor("float", (2, 3)), y=_Signs())
def activation_asymmetry(pre: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-neuron ``|P(active | y=+1) - P(active | y=-1)|``.

    Per-neuron ``|P(active | y=+1) - P(active | y=-1)|`` with *active* meaning pre-activation > 0.

    ``pre`` is ``(n, h)`` or ``(E, n, h)``; ``y`` in {-1, +1} is ``(n,)``. Theorem 4.1 of the paper:
    after training, most neurons are active mostly on one ("positive") class.

    Parameters
    ----------
    pre : torch.Tensor
        Pre-activations of the first layer, ``(..., n, width)``; a torch.Tensor (non-empty,
        floating-point, 2 or 3-dimensional, finite).
    y : torch.Tensor
        Labels, -1.0 or +1.0; a torch.Tensor (non-empty, floating-point, 1-dimensional, finite) of
        labels -1.0 and +1.0.

    Returns
    -------
    torch.Tensor
        The asymmetry of every neuron.

    References
    ----------
    Zhang, Zhao, Chen, Jiang and Chen (2024), "Feature Contamination: Neural Networks Learn
    Uncorrelated Features and Fail to Generalize".
    """
    if pre.shape[-2] != y.shape[0]:
        raise ValueError(
            f"pre must have one row per label ({y.shape[0]}), got {pre.shape[-2]}"
        )
    pos, neg = y > 0, y < 0
    if not pos.any() or not neg.any():
        raise ValueError("y must contain both classes -1 and +1")
    active = (pre > 0).float()
    return (active[..., pos, :].mean(-2) - active[..., neg, :].mean(-2)).abs()


@boundary(
    pre=Tensor("float", (2, 3)), y=_Signs(), a=Tensor("float", (1, 2)), act=_ACT
)
def signed_asymmetry(
    pre: torch.Tensor, y: torch.Tensor, a: torch.Tensor, act: str = "relu"
) -> torch.Tensor:
    """Per-neuron ``sign(a_j) (E[act'(pre_j) | y=+1] - E[act'(pre_j) | y=-1])``.

    For ReLU, ``act'`` is 1 on active units and 0 elsewhere, so this is
    ``sign(a_j) (P(active | y=+1) - P(active | y=-1))``: positive when neuron ``j``
    fires mostly on the class its output weight ``a_j`` votes for (its "positive"
    class, Theorem 4.1), negative when it fires mostly on the other class. For
    another activation it is the same class asymmetry of the gate ``act'`` through
    which the neuron's gradient flows. ``pre`` is ``(n, h)`` or ``(E, n, h)``, ``a``
    is ``(h,)`` or ``(E, h)``.

    Parameters
    ----------
    pre : torch.Tensor
        Pre-activations of the first layer, ``(..., n, width)``; a torch.Tensor
        (non-empty, floating-point, 2 or 3-dimensional, finite).
    y : torch.Tensor
        Labels, -1.0 or +1.0; a torch.Tensor (non-empty, floating-point,
        1-dimensional, finite) of labels -1.0 and +1.0.
    a : torch.Tensor
        Output weights, one per neuron; a torch.Tensor (non-empty, floating-point, 1
        or 2-dimensional, finite).
    act : str, default 'relu'
        The activation; one of ('relu', 'gelu', 'silu', 'tanh', 'sigmoid',
        'leaky_relu', 'identity').

    Returns
    -------
    torch.Tensor
        The signed asymmetry of every neuron.
    """
    if a.shape[-1] != pre.shape[-1]:
        raise ValueError(
            f"a must have one entry per neuron ({pre.shape[-1]}), got {a.shape[-1]}"
        )
    if pre.shape[-2] != y.shape[0]:
        raise ValueError(
            f"pre must have one row per label ({y.shape[0]}), got {pre.shape[-2]}"
        )
    pos, neg = y > 0, y < 0
    if not pos.any() or not neg.any():
        raise ValueError("y must contain both classes -1 and +1")
    if act == "relu":
        gate = (pre > 0).float()
    else:
        with torch.enable_grad():
            z = pre.detach().clone().requires_grad_(True)
            (gate,) = torch.autograd.grad(activation(act)(z).sum(), z)
    return torch.sign(a) * (gate[..., pos, :].mean(-2) - gate[..., neg, :].mean(-2))


@boundary(h=Tensor("float", (2, 3)), target=Tensor("float", (2, 3)))
def relative_error(h: torch.Tensor, target: torch.Tensor) -> float:
    """``sum ||h - target||^2 / sum ||target||^2``: the relative error of a representation fit."""
    if h.shape != target.shape:
        raise ValueError(
            f"h and target must have the same shape, got {tuple(h.shape)} and "
            f"{tuple(target.shape)}"
        )
    denom = float((target**2).sum())
    if denom == 0:
        raise ValueError("target must not be identically zero")
    return float(((h - target) ** 2).sum()) / denom
