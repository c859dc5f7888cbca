"""Norms and norm-based bounds (gtlib.uniform, section 2).

Spectral norms, (2,1)-norms, distance from initialization (Nagarajan and Kolter 2017), the
spectrally normalized margin bound of Bartlett, Foster and Telgarsky (NeurIPS 2017, Theorem 1.1)
and the PAC-Bayesian bound of Neyshabur, Bhojanapalli and Srebro (ICLR 2018, Theorem 1), each up
to the constants and log factors that the papers leave in O-notation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from ..checks import Tensor, boundary, check_int, count, positive
from ..config import Result
from .common import _pos

__all__ = [
    # functions
    "bartlett_bound",
    "distance_from_init",
]


def _matrix(name: str, w) -> torch.Tensor:
    if not isinstance(w, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(w).__name__}")
    if w.ndim < 2:
        raise ValueError(
            f"{name} must have at least 2 dimensions (..., out, in), got shape "
            f"{tuple(w.shape)}"
        )
    return w


@boundary(w=Tensor("float"))
def spectral_norm(w: torch.Tensor) -> torch.Tensor:
    """Largest singular value ``||W||_2`` of ``w`` (shape ``(..., out, in)``), computed exactly.

    This is the ``||W||_2`` of Bartlett et al. (2017) and Neyshabur et al. (2018). It is the first
    singular value from ``torch.linalg.svdvals`` evaluated in float64, so its relative error is at
    the level of float64 rounding (singular values are perfectly conditioned: the absolute error
    is about 1e-16 ``||W||_2``) whatever the gap between the top two singular values; power iteration, which converges at the rate
    ``(s_2 / s_1)^2``, would need thousands of steps when ``s_2 / s_1`` is near 1 (a
    default-initialized square layer has ``s_2 / s_1`` within a percent of 1). The result has the
    dtype of ``w``.

    Raises
    ------
    TypeError, ValueError
        If ``w`` is not a tensor with at least two dimensions, or holds a NaN or an infinity.
    """
    w = _matrix("w", w).detach()
    if not bool(torch.isfinite(w).all()):
        raise ValueError("w must hold finite values (it has NaN or inf entries)")
    return torch.linalg.svdvals(w.to(torch.float64))[..., 0].to(w.dtype)


@boundary(w=Tensor("float"))
def norm_21(w: torch.Tensor) -> torch.Tensor:
    """Bartlett et al.'s ``||W^T||_{2,1}``: the sum over units of the l2 norm of each unit's weights.

    For a weight matrix ``W`` of shape ``(out, in)`` (PyTorch's layout), the columns of ``W^T`` are
    the rows of ``W``, so this is ``sum_j ||W[j, :]||_2``. Works on stacks ``(..., out, in)``.
    """
    return _matrix("w", w).norm(dim=-1).sum(-1)


@boundary()
def distance_from_init(
    weights: Sequence[torch.Tensor], init: Sequence[torch.Tensor]
) -> torch.Tensor:
    r"""The distance from initialization of Nagarajan and Kolter (2017).

    ``sqrt(sum_l ||W_l - W_l^0||_F^2)``, the distance from initialization of Nagarajan and Kolter (2017).

    ``weights`` and ``init`` are lists of per-layer tensors ``(..., out, in)`` of equal shapes.

    .. math::

       \Big(\sum_l \lVert W_l - W_l^0 \rVert_F^2\Big)^{1/2}

    Parameters
    ----------
    weights : Sequence[torch.Tensor]
        Weight matrices, one per layer; a non-empty list or tuple whose items are each a
        torch.Tensor (non-empty, finite).
    init : Sequence[torch.Tensor]
        The weights at initialization; a non-empty list or tuple whose items are each a
        torch.Tensor (non-empty, finite).

    Returns
    -------
    torch.Tensor
        The distance, one per member.

    References
    ----------
    Nagarajan and Kolter (2017), "Generalization in Deep Networks: The Role of Distance from
    Initialization".
    """
    if len(weights) != len(init) or len(weights) == 0:
        raise ValueError(
            "weights and init must be non-empty lists of the same length"
        )
    total = 0.0
    for l, (w, w0) in enumerate(zip(weights, init)):
        _matrix(f"weights[{l}]", w)
        _matrix(f"init[{l}]", w0)
        if w.shape != w0.shape:
            raise ValueError(
                f"weights[{l}] and init[{l}] differ in shape: {tuple(w.shape)} vs "
                f"{tuple(w0.shape)}"
            )
        total = total + ((w - w0) ** 2).sum((-1, -2))
    return torch.as_tensor(total).sqrt()


@dataclass
class NetworkMeasures(Result):
    """Norms and bounds of one trained network (see :func:`network_measures`)."""

    spectral: list[float]  # ||W_l||_2 per layer
    spectral_product: float  # prod_l ||W_l||_2
    distance: float  # sqrt(sum_l ||W_l - W_l^0||_F^2)
    bartlett: float  # Bartlett-Foster-Telgarsky complexity term, constants dropped
    neyshabur: (
        float  # Neyshabur-Bhojanapalli-Srebro complexity term, constants dropped
    )


@boundary(data_norm=positive(), gamma=positive(), n=count())
def bartlett_bound(
    weights: Sequence[torch.Tensor],
    init: Sequence[torch.Tensor],
    data_norm: float,
    gamma: float,
    n: int,
    spectral: Sequence[float] | None = None,
) -> float:
    r"""The complexity term of Bartlett, Foster and Telgarsky (2017), Theorem 1.1.

    Without constants and logs:

    .. math::
        \frac{\|X\|_F}{\gamma\, n}\;\prod_{l=1}^{L}\|W_l\|_2\;
        \Big(\sum_{l=1}^{L}
        \frac{\|(W_l - W_l^0)^\top\|_{2,1}^{2/3}}{\|W_l\|_2^{2/3}}\Big)^{3/2}

    ``data_norm`` is ``||X||_F = sqrt(sum_i ||x_i||^2)`` over the ``n`` training
    inputs, as in the theorem (so ``||X||_F / n = rms input norm / sqrt(n)``;
    Nagarajan and Kolter's code uses the largest input norm over ``sqrt(n)`` instead,
    which is larger by the ratio max/rms). Reference matrices ``M_l = W_l^0`` (the
    initialization, as Nagarajan and Kolter 2019 do) and 1-Lipschitz activations. The
    theorem adds ``ln(W)`` (W the largest width) times this, an
    ``O(sqrt(ln(1/delta)/n))`` term and the empirical margin loss, and hides a
    constant in O-notation; all are left out, so the value is a lower estimate of the
    bound itself. ``spectral`` may pass the layers' spectral norms if they are
    already known.

    Parameters
    ----------
    weights : Sequence[torch.Tensor]
        Weight matrices, one per layer; a non-empty list or tuple whose items are
        each a torch.Tensor (non-empty, finite).
    init : Sequence[torch.Tensor]
        The weights at initialization; a non-empty list or tuple whose items are each
        a torch.Tensor (non-empty, finite).
    data_norm : float
        Frobenius norm of the data matrix; a finite number > 0.
    gamma : float
        The margin; a finite number > 0.
    n : int
        Number of training points; an int >= 1.
    spectral : Sequence[float] | None, default None
        Spectral norms of the layers (None: computed); a non-empty list or tuple
        whose items are each a finite number or None.

    Returns
    -------
    float
        The complexity term (no constants or logarithms).

    References
    ----------
    Bartlett, Foster and Telgarsky (2017), "Spectrally-normalized margin bounds for
    neural networks", Theorem 1.1.
    """
    _check_bound_args(weights, init, data_norm, gamma, n, spectral, "data_norm")
    spec = spectral or [float(spectral_norm(w)) for w in weights]
    ratio = sum(
        (float(norm_21(w - w0)) / s) ** (2 / 3)
        for w, w0, s in zip(weights, init, spec)
    )
    return float(data_norm * np.prod(spec) * ratio**1.5 / (gamma * n))


@boundary(input_norm=positive(), gamma=positive(), n=count())
def neyshabur_bound(
    weights: Sequence[torch.Tensor],
    init: Sequence[torch.Tensor],
    input_norm: float,
    gamma: float,
    n: int,
    spectral: Sequence[float] | None = None,
) -> float:
    """The complexity term of Neyshabur, Bhojanapalli and Srebro (2018), Theorem 1, without constants.

    .. math::
        \\sqrt{\\frac{B^2 L^2 h \\ln(Lh)\\,\\prod_{l}\\|W_l\\|_2^2\\,
        \\sum_{l}\\|W_l - W_l^0\\|_F^2 / \\|W_l\\|_2^2}{\\gamma^2 n}}

    with ``B`` the largest input norm (the theorem assumes inputs in a ball of radius ``B``),
    depth ``L`` (number of weight matrices), width ``h`` (largest layer size) and, as in
    Nagarajan and Kolter (2019), the Frobenius distance from initialization in place of the
    Frobenius norm. The theorem's ``ln(Ln/delta)`` term inside the root, the empirical margin loss
    and the O-constant are left out. ``spectral`` may pass the layers' spectral norms.
    """
    _check_bound_args(weights, init, input_norm, gamma, n, spectral)
    spec = spectral or [float(spectral_norm(w)) for w in weights]
    L = len(weights)
    h = max(max(w.shape[-1], w.shape[-2]) for w in weights)
    ratio = sum(
        float(((w - w0) ** 2).sum()) / s**2 for w, w0, s in zip(weights, init, spec)
    )
    val = input_norm**2 * L**2 * h * math.log(L * h) * np.prod(spec) ** 2 * ratio
    return float(math.sqrt(val / (gamma**2 * n)))


def _check_bound_args(
    weights, init, input_norm, gamma, n, spectral=None, norm_name="input_norm"
) -> None:
    if len(weights) == 0 or len(weights) != len(init):
        raise ValueError(
            "weights and init must be non-empty lists of the same length"
        )
    for l, (w, w0) in enumerate(zip(weights, init)):
        if (
            _matrix(f"weights[{l}]", w).ndim != 2
            or _matrix(f"init[{l}]", w0).shape != w.shape
        ):
            raise ValueError(
                f"weights[{l}] and init[{l}] must be matrices of the same shape"
            )
    _pos(norm_name, input_norm)
    _pos("gamma", gamma)
    check_int("n", n, minimum=1)
    if spectral is not None:
        if len(spectral) != len(weights):
            raise ValueError(
                f"spectral must hold one norm per layer ({len(weights)}), got "
                f"{len(spectral)}"
            )
        for i, v in enumerate(spectral):
            _pos(f"spectral[{i}]", v)


@boundary(x=Tensor("float", 2), gamma=positive())
def network_measures(
    weights: Sequence[torch.Tensor],
    init: Sequence[torch.Tensor],
    x: torch.Tensor,
    gamma: float,
) -> NetworkMeasures:
    """Spectral norms, their product, the distance from initialization and both bounds.

    ``x`` holds the ``n`` training inputs ``(n, d)``: the Bartlett et al. term uses their
    ``||X||_F``, the Neyshabur et al. term their largest norm ``B``.
    """
    if not isinstance(x, torch.Tensor) or x.ndim != 2 or len(x) == 0:
        raise ValueError("x must be a non-empty (n, d) tensor of training inputs")
    n = len(x)
    data_norm, B = float(x.double().norm()), float(x.double().norm(dim=1).max())
    _check_bound_args(weights, init, B, gamma, n)
    spec = [float(spectral_norm(w)) for w in weights]
    return NetworkMeasures(
        spectral=spec,
        spectral_product=float(np.prod(spec)),
        distance=float(distance_from_init(list(weights), list(init))),
        bartlett=bartlett_bound(weights, init, data_norm, gamma, n, spec),
        neyshabur=neyshabur_bound(weights, init, B, gamma, n, spec),
    )
