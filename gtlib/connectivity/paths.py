"""Mode connectivity: interpolation paths between two networks, and their barriers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from ..checks import boundary
from ..models import BatchedMLP, MLP
from .common import _check_data, _check_same_shape, _Numbers, GRID, INPUTS, LABELS
from .training import from_params, params

__all__ = ["barrier", "evaluate_path"]


@boundary()
def lerp(a: MLP, b: MLP, alpha: float) -> MLP:
    """The network ``(1 - alpha) * theta_A + alpha * theta_B`` (every weight and bias)."""
    _check_same_shape(a, b)
    alpha = float(alpha)
    (wa, ba), (wb, bb) = params(a), params(b)
    ws = [(1 - alpha) * u + alpha * v for u, v in zip(wa, wb)]
    bs = (
        None if ba is None else [(1 - alpha) * u + alpha * v for u, v in zip(ba, bb)]
    )
    return from_params(ws, bs, a.act_name)


@boundary(alphas=_Numbers())
def path_stack(a: MLP, b: MLP, alphas: Sequence[float]) -> BatchedMLP:
    """All networks on the segment from ``a`` to ``b`` at ``alphas``, as one stack."""
    _check_same_shape(a, b)
    al = torch.as_tensor(np.asarray(alphas, dtype=np.float32)).to(
        a.layers[0].weight.device
    )
    if al.ndim != 1 or len(al) == 0 or not bool(torch.isfinite(al).all()):
        raise ValueError("alphas must be a non-empty 1-D sequence of finite numbers")
    (wa, ba), (wb, bb) = params(a), params(b)
    ws = [
        (1 - al).view(-1, 1, 1) * u + al.view(-1, 1, 1) * v for u, v in zip(wa, wb)
    ]
    bs = (
        None
        if ba is None
        else [(1 - al).view(-1, 1) * u + al.view(-1, 1) * v for u, v in zip(ba, bb)]
    )
    return BatchedMLP(ws, bs, act=a.act_name)


@dataclass
class Path:
    """Loss and accuracy along a linear path, with the barrier summaries."""

    alphas: np.ndarray
    loss: np.ndarray
    acc: np.ndarray

    def __post_init__(self):
        for name in ("alphas", "loss", "acc"):
            value = getattr(self, name)
            _Numbers().check(f"Path.{name}", value)
            setattr(self, name, np.asarray(value))
        if not len(self.alphas) == len(self.loss) == len(self.acc):
            raise ValueError(
                f"Path.alphas, loss and acc must have the same length, got "
                f"{len(self.alphas)}, {len(self.loss)} and {len(self.acc)}"
            )

    @property
    def loss_barrier(self) -> float:
        """Largest rise of the loss above the straight line between the endpoint losses."""
        return barrier(self.alphas, self.loss)

    @property
    def error_barrier(self) -> float:
        """Largest rise of the error (1 - accuracy) above the line between the endpoint errors."""
        return barrier(self.alphas, 1 - self.acc)

    @property
    def error_barrier_mean(self) -> float:
        """Frankle et al.'s error barrier: largest error minus the mean endpoint error."""
        return barrier_mean(self.alphas, 1 - self.acc)

    @property
    def mid_acc(self) -> float:
        """Accuracy at the point of the path closest to alpha = 0.5."""
        return float(self.acc[np.argmin(np.abs(self.alphas - 0.5))])

    @property
    def end_acc(self) -> float:
        """Mean accuracy of the two endpoints."""
        return float((self.acc[0] + self.acc[-1]) / 2)


def _curve(alphas, values) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(alphas, dtype=float)
    v = np.asarray(values, dtype=float)
    if a.ndim != 1 or v.shape != a.shape or len(a) < 2:
        raise ValueError(
            f"alphas and values must be 1-D of the same length >= 2, got "
            f"{len(a)} and {len(v)}"
        )
    if not (np.isclose(a[0], 0.0) and np.isclose(a[-1], 1.0)) or np.any(
        np.diff(a) <= 0
    ):
        raise ValueError("alphas must increase from 0 to 1")
    return a, v


@boundary(alphas=_Numbers(), values=_Numbers())
def barrier(alphas: Sequence[float], values: Sequence[float]) -> float:
    r"""Barrier of a curve above its chord (Entezari et al. 2022, loss barrier).

    ``max_alpha [v(alpha) - ((1 - alpha) v(0) + alpha v(1))]`` over the sampled
    ``alphas``, which must start at 0 and end at 1. It is 0 for a curve that never
    rises above its chord (a convex or flat curve), and negative only if the curve
    lies strictly below its chord.

    .. math::

       B = \max_\alpha \big[L(\alpha) - ((1 - \alpha) L(0) + \alpha L(1))\big]

    Parameters
    ----------
    alphas : Sequence[float]
        Interpolation points; a non-empty 1-D sequence of
        finite numbers.
    values : Sequence[float]
        The curve's values at evenly spaced points; a non-empty 1-D sequence of
        finite numbers.

    Returns
    -------
    float
        The barrier (0 for a curve on or below its chord).

    References
    ----------
    Entezari, Sedghi, Saukh and Neyshabur (2022), "The Role of Permutation Invariance
    in Linear Mode Connectivity of Neural Networks".
    """
    a, v = _curve(alphas, values)
    chord = (1 - a) * v[0] + a * v[-1]
    return float(np.max(v - chord))


@boundary(alphas=_Numbers(), values=_Numbers())
def barrier_mean(alphas: Sequence[float], values: Sequence[float]) -> float:
    """Barrier above the mean of the endpoints (Frankle et al. 2020, error barrier height).

    ``max_alpha v(alpha) - (v(0) + v(1)) / 2``: Frankle et al.'s instability of a pair of
    networks, computed on the test error. It equals :func:`barrier` when both endpoints have the
    same value and differs from it by at most half the endpoints' difference.
    """
    a, v = _curve(alphas, values)
    return float(np.max(v) - (v[0] + v[-1]) / 2)


@boundary(x=INPUTS, y=LABELS, alphas=GRID)
@torch.no_grad()
def evaluate_path(
    a: MLP,
    b: MLP,
    x: torch.Tensor,
    y: torch.Tensor,
    alphas: Sequence[float] | int = 25,
) -> Path:
    """Cross-entropy loss and accuracy of the interpolated networks on ``(x, y)``.

    ``alphas`` is a sequence from 0 to 1 or a number of evenly spaced points (Git Re-Basin uses 25).

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
    alphas : Sequence[float] | int, default 25
        Number of interpolation points; an int >= 2 (evenly spaced
        points in [0, 1]) or a non-empty 1-D sequence of finite numbers.

    Returns
    -------
    Path
        Cross-entropy loss and accuracy of the interpolated networks on ``(x, y)``.
    """
    _check_same_shape(a, b)
    _check_data(a, x, y)
    alphas = _alpha_grid(alphas)
    return evaluate_stack(path_stack(a, b, alphas), alphas, x, y)


def _alpha_grid(alphas) -> np.ndarray:
    if isinstance(alphas, (int, np.integer)) and not isinstance(alphas, bool):
        return np.linspace(0, 1, int(alphas))
    return np.asarray(
        alphas.detach().cpu() if isinstance(alphas, torch.Tensor) else alphas,
        dtype=float,
    )


@boundary(alphas=_Numbers(), x=INPUTS, y=LABELS)
@torch.no_grad()
def evaluate_stack(
    model: BatchedMLP, alphas: Sequence[float], x: torch.Tensor, y: torch.Tensor
) -> Path:
    """Loss and accuracy of the members of a stack of networks along a path (one per alpha)."""
    alphas = np.asarray(alphas, dtype=float)
    if model.size != len(alphas):
        raise ValueError(
            f"alphas must have one entry per member of the stack ({model.size}), "
            f"got {len(alphas)}"
        )
    _check_data(model, x, y)
    return _path_from_logits(model(x), alphas, y)


def _path_from_logits(
    logits: torch.Tensor, alphas: np.ndarray, y: torch.Tensor
) -> Path:
    """Loss and accuracy at every point of a path from its logits, ``(len(alphas), n, C)``."""
    C = logits.shape[-1]
    loss = (
        F.cross_entropy(
            logits.reshape(-1, C), y.repeat(len(alphas)), reduction="none"
        )
        .view(len(alphas), -1)
        .mean(1)
    )
    acc = (logits.argmax(-1) == y).float().mean(1)
    return Path(alphas, loss.cpu().numpy(), acc.cpu().numpy())
