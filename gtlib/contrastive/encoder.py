"""Contrastive imbalance: the encoder, the InfoNCE loss, and pruning masks."""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F

from ..checks import Tensor, boundary, check_fraction, count, nonnegative, positive

__all__ = ["infonce", "infonce_orthogonal_closed_form"]


def _brelu(s: torch.Tensor, b: float | torch.Tensor) -> torch.Tensor:
    """The symmetric biased ReLU ``ReLU(s - b) - ReLU(-s - b)``: zero on ``[-b, b]``, odd in ``s``.

    For ``b >= 0`` it equals ``s - clamp(s, -b, b)`` exactly (the same float operations on each
    side of the dead zone), which takes two tensor operations instead of five. Its gradient
    in ``s`` is 1 where the output is non-zero and 0 in the dead zone; ``_DeadZone`` computes
    it from the output in one operation, where autograd's clamp takes four (a threshold ``b``
    that needs a gradient of its own takes autograd's way).
    """
    negative = bool((b < 0).any()) if torch.is_tensor(b) else b < 0
    if negative:
        return F.relu(s - b) - F.relu(-s - b)
    if torch.is_tensor(b) and b.requires_grad:
        return s - torch.clamp(s, -b, b)
    return _DeadZone.apply(s, b)


class _DeadZone(torch.autograd.Function):
    """``s - clamp(s, -b, b)`` for ``b >= 0``, its gradient read off the output.

    The gradient is exactly autograd's: outside ``[-b, b]`` the output ``s -/+ b`` is not
    zero (two distinct floats have a non-zero difference), inside it is ``s - s = 0``.
    """

    @staticmethod
    def forward(ctx, s: torch.Tensor, b: float | torch.Tensor) -> torch.Tensor:
        out = s - torch.clamp(s, -b, b)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (out,) = ctx.saved_tensors
        return grad * (out != 0), None


def _straight_through_mask(f: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Forward: ``f * mask``. Backward: masked entries get the gradient as if
    unmasked.

    This is "compute gradients through the masked model but update all
    parameters": the loss sees the pruned model, yet masked neurons keep receiving
    the gradient of their own output.
    """
    pairs = zip(mask.shape[::-1], f.shape[::-1])
    if mask.ndim > f.ndim or any(a not in (1, b) for a, b in pairs):
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} must broadcast to "
            f"f's shape {tuple(f.shape)}"
        )
    return f * mask + (f - f.detach()) * (1 - mask)


def _encode(
    X: torch.Tensor,
    W: torch.Tensor,
    A: torch.Tensor,
    beta: float,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """The attention + BReLU encoder, batched over E independent models.

    Parameters
    ----------
    X : ``(E, n, L, d)`` tokens.
    W : ``(E, m, d)`` neuron weights ``w_r``.
    A : ``(E, d, d)`` attention matrix (``W_Q W_K^T`` merged); scores ``x_l^T A x_j``.
    beta : float
        BReLU threshold relative to each neuron's norm: ``b_r = beta * ||w_r||`` (not differentiated).
    mask : ``(E, m)`` 0/1, optional
        Pruning mask applied to the outputs with ``_straight_through_mask``.

    Returns
    -------
    ``(E, n, m)`` representations ``f_r(X) = sum_l BReLU(<w_r, h_l>)`` with
    ``h_l = sum_j softmax_j(x_l^T A x_j) x_j``.
    """
    E, d = X.shape[0], X.shape[-1]
    if (
        X.ndim != 4
        or W.shape[::2] != (E, d)
        or A.shape != (E, d, d)
        or (mask is not None and mask.shape != W.shape[:2])
    ):
        raise ValueError(
            f"X must be (E, n, L, d), W (E, m, d), A (E, d, d) and mask (E, m), got "
            f"X {tuple(X.shape)}, W {tuple(W.shape)}, A {tuple(A.shape)}"
            + ("" if mask is None else f", mask {tuple(mask.shape)}")
        )
    scores = torch.einsum("enld,edf,enkf->enlk", X, A, X)
    H = torch.softmax(scores, dim=-1) @ X
    S = torch.einsum("enld,emd->enlm", H, W)
    b = beta * W.detach().norm(dim=-1)[:, None, None, :]
    f = _brelu(S, b).sum(2)
    if mask is not None:
        f = _straight_through_mask(f, mask[:, None, :].to(f.dtype))
    return f


@boundary(
    f=Tensor("float", (2, 3)), f_target=Tensor("float", (2, 3)), tau=positive()
)
def infonce(f: torch.Tensor, f_target: torch.Tensor, tau: float) -> torch.Tensor:
    r"""InfoNCE with the second branch under stop-gradient, averaged over the batch.

    ``L = -(1/n) sum_i log( exp(<f_i, sg(g_i)>/tau) / sum_j exp(<f_i, sg(g_j)>/tau) )`` for
    representations ``f`` (online view) and ``g = f_target`` (other view), of shape ``(n, m)`` or
    ``(E, n, m)`` (then one loss per model, shape ``(E,)``).

    .. math::

       \mathcal L = -\frac1n \sum_i \log \frac{\exp(\langle f_i, \mathrm{sg}(f'_i)\rangle / \tau)}{\sum_j \exp(\langle f_i, \mathrm{sg}(f'_j)\rangle / \tau)}

    Parameters
    ----------
    f : torch.Tensor
        Representations of the first view (the online branch); a torch.Tensor (non-empty,
        floating-point, 2 or 3-dimensional, finite).
    f_target : torch.Tensor
        Representations of the second view (under stop-gradient); a torch.Tensor (non-empty,
        floating-point, 2 or 3-dimensional, finite).
    tau : float
        Temperature of the InfoNCE loss; a finite number > 0.

    Returns
    -------
    torch.Tensor
        The loss, one per model.

    Raises
    ------
    ValueError
        If the shapes differ or ``tau <= 0``.

    References
    ----------
    Chen, Kornblith, Norouzi and Hinton (2020), "A Simple Framework for Contrastive Learning of
    Visual Representations".
    Liao, Zhou, Zhang, Wang and Zhang (2026), "Theoretical Analysis of Contrastive Learning
    under Imbalanced Data: From Training Dynamics to a Pruning Solution".
    """
    return _infonce(f, f_target, tau)


def _infonce(f: torch.Tensor, f_target: torch.Tensor, tau: float) -> torch.Tensor:
    """:func:`infonce` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    if (
        f.shape != f_target.shape
        or f.ndim not in (2, 3)
        or f.dtype != f_target.dtype
    ):
        raise ValueError(
            f"f and f_target must have the same shape (n, m) or (E, n, m) and dtype, "
            f"got {tuple(f.shape)} {f.dtype} and {tuple(f_target.shape)} "
            f"{f_target.dtype}"
        )
    logits = f @ f_target.detach().transpose(-1, -2) / tau
    return (
        torch.logsumexp(logits, -1) - torch.diagonal(logits, dim1=-2, dim2=-1)
    ).mean(-1)


@boundary(sq_norm=nonnegative(), n=count(), tau=positive())
def infonce_orthogonal_closed_form(sq_norm: float, n: int, tau: float) -> float:
    """InfoNCE of identical views with mutually orthogonal representations.

    InfoNCE when both views are identical and the n representations are mutually orthogonal
    with squared norm ``sq_norm``: ``log(1 + (n - 1) exp(-sq_norm / tau))``.

    Parameters
    ----------
    sq_norm : float
        Squared norm of every representation; a finite number >= 0.
    n : int
        Number of samples; an int >= 1.
    tau : float
        Temperature of the InfoNCE loss; a finite number > 0.

    Returns
    -------
    float
        ``log(1 + (n - 1) exp(-sq_norm / tau))``.
    """
    return math.log1p((n - 1) * math.exp(-sq_norm / tau))


def _magnitude_mask(W: torch.Tensor, fraction) -> torch.Tensor:
    """A 0/1 ``(E, m)`` mask zeroing the ``round(fraction * m)`` neurons of
    smallest norm.

    ``W`` is ``(E, m, d)`` (or ``(m, d)``, giving ``(m,)``); ``fraction`` a number
    or a length-E sequence (one per model). Ties are broken by index, so exactly
    the requested count is masked.
    """
    squeeze = W.ndim == 2
    if squeeze:
        W = W[None]
    if W.ndim != 3:
        raise ValueError("W must have shape (m, d) or (E, m, d)")
    E, m, _ = W.shape
    fr = [fraction] * E if np.ndim(fraction) == 0 else list(fraction)
    if len(fr) != E:
        raise ValueError(
            f"fraction must be a number or have one entry per model ({E})"
        )
    fr = [check_fraction("fraction", f) for f in fr]
    norms = W.detach().norm(dim=-1)
    order = norms.argsort(dim=-1, stable=True)
    mask = torch.ones(E, m, dtype=W.dtype, device=W.device)
    for e in range(E):
        k = int(round(fr[e] * m))
        mask[e, order[e, :k]] = 0.0
    return mask[0] if squeeze else mask


def _random_mask(
    W: torch.Tensor, fraction, generator: torch.Generator
) -> torch.Tensor:
    """The control of ``_magnitude_mask``: the same count of neurons, chosen at random.

    A 0/1 ``(E, m)`` mask (``(m,)`` for ``W`` of shape ``(m, d)``) zeroing ``round(fraction * m)``
    neurons drawn uniformly without replacement from ``generator``, ignoring the weights (only
    their shape is read). ``fraction`` is a number or one entry per model, as in
    ``_magnitude_mask``.
    """
    squeeze = W.ndim == 2
    if squeeze:
        W = W[None]
    E, m, _ = W.shape
    fr = [fraction] * E if np.ndim(fraction) == 0 else list(fraction)
    if len(fr) != E:
        raise ValueError(
            f"fraction must be a number or have one entry per model ({E})"
        )
    fr = [check_fraction("fraction", f) for f in fr]
    mask = torch.ones(E, m, dtype=W.dtype, device=W.device)
    for e in range(E):
        k = int(round(fr[e] * m))
        mask[e, torch.randperm(m, generator=generator)[:k]] = 0.0
    return mask[0] if squeeze else mask
