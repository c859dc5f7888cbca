"""Mode connectivity: feature-level metrics (LLFC, weak additivity, commutativity)."""

from __future__ import annotations

from typing import Sequence

import torch

from ..checks import boundary, fraction
from ..models import MLP
from .common import (
    _check_data,
    _check_inputs,
    _check_same_shape,
    GRID,
    INPUTS,
    LABELS,
)
from .training import params
from .paths import _alpha_grid, lerp, path_stack

__all__ = [
    "commutativity_bound_ratio",
    "commutativity_residual",
    "endpoint_dissimilarity",
    "llfc_dissimilarity",
    "logit_interpolation",
    "weak_additivity",
]


@boundary(u=INPUTS, v=INPUTS)
def cosine_dissimilarity(u: torch.Tensor, v: torch.Tensor) -> float:
    """Mean over rows of ``1 - cos(u_i, v_i)`` (0 for identical rows, including two zero rows)."""
    if u.shape != v.shape or u.ndim != 2:
        raise ValueError(
            f"u and v must be 2-D of the same shape, got {tuple(u.shape)}, "
            f"{tuple(v.shape)}"
        )
    nu, nv = u.norm(dim=1), v.norm(dim=1)
    cos = (u * v).sum(1) / (nu * nv).clamp_min(1e-12)
    both_zero = (nu < 1e-12) & (nv < 1e-12)
    cos = torch.where(both_zero, torch.ones_like(cos), cos)
    return float((1 - cos).mean())


@boundary(x=INPUTS, alpha=fraction())
@torch.no_grad()
def llfc_dissimilarity(
    a: MLP, b: MLP, x: torch.Tensor, alpha: float = 0.5
) -> list[float]:
    """Per-layer LLFC dissimilarity (Zhou et al. 2023: their definition and metric).

    For every hidden layer and the logits, ``mean_x [1 - cos(f_l(theta(alpha); x),
    (1 - alpha) f_l(theta_A; x) + alpha f_l(theta_B; x))]``: 0 when the interpolated network's
    features are (up to a positive scale) the interpolated features. The same quantity between two
    models fine-tuned on different tasks is the cross-task linearity (CTL) dissimilarity of Zhou
    et al. (2024).

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP.
    b : MLP
        The second network (the path ends here); an MLP.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).
    alpha : float, default 0.5
        Regularization constant of ``N_eff``; a finite number in [0, 1].

    Returns
    -------
    list[float]
        Per-layer LLFC dissimilarity (Zhou et al. 2023: their definition and metric).

    References
    ----------
    Zhou, Yang, Yang, Yan and Hu (2023), "Going Beyond Linear Mode Connectivity: The Layerwise
    Linear Feature Connectivity".
    """
    _check_same_shape(a, b)
    _check_inputs("x", x, a)
    fa, fb, fm = a.features(x), b.features(x), lerp(a, b, alpha).features(x)
    return [
        cosine_dissimilarity(m, (1 - alpha) * u + alpha * v)
        for u, v, m in zip(fa, fb, fm)
    ]


def _hidden_layers(a: MLP, b: MLP, x: torch.Tensor):
    """For each hidden layer: both networks' features on ``x`` and the next layer's weights."""
    _check_same_shape(a, b)
    _check_inputs("x", x, a)
    fa, fb = a.features(x)[:-1], b.features(x)[:-1]
    (wa, _), (wb, _) = params(a), params(b)
    return [(ha, hb, wa[l + 1], wb[l + 1]) for l, (ha, hb) in enumerate(zip(fa, fb))]


@boundary(x=INPUTS)
@torch.no_grad()
def commutativity_residual(a: MLP, b: MLP, x: torch.Tensor) -> list[float]:
    """Relative commutativity residual per hidden layer (Zhou et al. 2023).

    For hidden layer ``l`` with features ``H_A, H_B`` (rows = inputs ``x``) and the next layer's
    weights ``W_A, W_B``: ``||W_A H_A + W_B H_B - W_A H_B - W_B H_A||_F / ||W_A H_A + W_B H_B||_F``,
    i.e. ``||(W_A - W_B)(H_A - H_B)|| / ||W_A H_A + W_B H_B||``. Commutativity (residual 0) plus
    weak additivity of ReLU implies LLFC.

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP.
    b : MLP
        The second network (the path ends here); an MLP.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).

    Returns
    -------
    list[float]
        Relative commutativity residual per hidden layer (Zhou et al. 2023).

    References
    ----------
    Zhou, Yang, Yang, Yan and Hu (2023), "Going Beyond Linear Mode Connectivity: The Layerwise
    Linear Feature Connectivity".
    """
    out = []
    for ha, hb, A, B in _hidden_layers(a, b, x):
        same = ha @ A.T + hb @ B.T
        resid = (ha - hb) @ (A - B).T
        out.append(float(resid.norm() / same.norm().clamp_min(1e-12)))
    return out


@boundary(x=INPUTS)
@torch.no_grad()
def commutativity_bound_ratio(a: MLP, b: MLP, x: torch.Tensor) -> list[float]:
    """The commutativity residual per hidden layer divided by its trivial upper bound.

    ``||(H_A - H_B)(W_A - W_B)^T||_F / (||W_A - W_B||_2 ||H_A - H_B||_F)``, in ``[0, 1]``: the
    residual of :func:`commutativity_residual` can be small only because one of its two factors
    is small (a weight difference or a feature difference), and this ratio takes both factors
    out. It is 1 when the feature differences lie along the top right-singular vector of the
    weight difference and small when they avoid the directions that ``W_A - W_B`` amplifies (a
    layer with ``W_A = W_B`` or ``H_A = H_B`` gives 0/0, reported as 0).

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP.
    b : MLP
        The second network (the path ends here); an MLP.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).

    Returns
    -------
    list[float]
        The commutativity residual per hidden layer divided by its trivial upper bound.
    """
    out = []
    for ha, hb, A, B in _hidden_layers(a, b, x):
        dw, dh = A - B, ha - hb
        bound = torch.linalg.matrix_norm(dw, ord=2) * dh.norm()
        out.append(
            float((dh @ dw.T).norm() / bound) if float(bound) > 1e-12 else 0.0
        )
    return out


@boundary(x=INPUTS, y=LABELS, alphas=GRID)
@torch.no_grad()
def logit_interpolation(
    a: MLP,
    b: MLP,
    x: torch.Tensor,
    y: torch.Tensor,
    alphas: Sequence[float] | int = 25,
) -> dict:
    """The lemma "LLFC implies LMC" of Zhou et al. (2023), measured on ``(x, y)``.

    If the interpolated network's logits were the interpolated logits, ``f_alpha = (1 - alpha)
    f_A + alpha f_B``, its error could not exceed ``err_A + err_B``: an input that both ends
    classify correctly has ``f_y - f_j > 0`` at both ends for every ``j != y``, so at every
    convex combination too. Returns the largest error along the network path (``path_error``),
    along the interpolated logits (``lerp_error``, at most ``either_wrong`` by the argument
    above), the exact per-example bound ``either_wrong``, the fraction of inputs that ``a`` or
    ``b`` misclassifies, the looser bound ``err_A + err_B`` (``bound``) and the two endpoint
    errors.

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
    dict
        The errors named above.

    References
    ----------
    Zhou, Yang, Yang, Yan and Hu (2023), "Going Beyond Linear Mode Connectivity: The Layerwise
    Linear Feature Connectivity".
    """
    _check_same_shape(a, b)
    _check_data(a, x, y)
    alphas = _alpha_grid(alphas)
    la, lb = a(x), b(x)
    net = path_stack(a, b, alphas)(x).argmax(-1) != y
    al = torch.as_tensor(alphas, dtype=la.dtype).view(-1, 1, 1)
    mix = ((1 - al) * la + al * lb).argmax(-1) != y
    wa, wb = la.argmax(-1) != y, lb.argmax(-1) != y
    ea, eb = float(wa.float().mean()), float(wb.float().mean())
    return {
        "path_error": float(net.float().mean(1).max()),
        "lerp_error": float(mix.float().mean(1).max()),
        "either_wrong": float((wa | wb).float().mean()),
        "bound": ea + eb,
        "err_a": ea,
        "err_b": eb,
    }


@boundary(x=INPUTS)
@torch.no_grad()
def endpoint_dissimilarity(a: MLP, b: MLP, x: torch.Tensor) -> list[float]:
    """Per-layer ``mean_x [1 - cos(f_l(theta_A; x), f_l(theta_B; x))]``, hidden layers and logits.

    The baseline against which Zhou et al. (2023) read an LLFC dissimilarity: how different the
    two networks' own features are. LLFC is informative only when the interpolated network's
    features are much closer to the interpolated features than the two endpoints are to each
    other (two networks with identical features satisfy LLFC trivially).

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP.
    b : MLP
        The second network (the path ends here); an MLP.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).

    Returns
    -------
    list[float]
        Per-layer ``mean_x [1 - cos(f_l(theta_A; x), f_l(theta_B; x))]``, hidden layers and logits.
    """
    _check_same_shape(a, b)
    _check_inputs("x", x, a)
    return [cosine_dissimilarity(u, v) for u, v in zip(a.features(x), b.features(x))]


@boundary(x=INPUTS)
@torch.no_grad()
def preactivations(model: MLP, x: torch.Tensor) -> list[torch.Tensor]:
    """The pre-activations ``W_l h_{l-1} + b_l`` of every hidden layer (rows = inputs)."""
    _check_inputs("x", x, model)
    out, h = [], x
    for layer in model.layers[:-1]:
        z = layer(h)
        out.append(z)
        h = model.act(z)
    return out


@boundary(x=INPUTS)
@torch.no_grad()
def weak_additivity(a: MLP, b: MLP, x: torch.Tensor) -> list[float]:
    """Weak-additivity dissimilarity of ReLU per hidden layer (Zhou et al. 2023, Sec. 5).

    With ``z_A, z_B`` the two networks' own pre-activations of layer ``l`` on ``x``,
    ``mean_x [1 - cos(sigma(z_A) + sigma(z_B), sigma(z_A + z_B))]``, as the authors'
    ``weak_additivity.py`` measures it: 0 when the two pre-activations agree in sign unit by unit
    (then the ReLU of the sum is the sum of the ReLUs), large when the networks' units switch on
    for different inputs.

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP.
    b : MLP
        The second network (the path ends here); an MLP.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).

    Returns
    -------
    list[float]
        Weak-additivity dissimilarity of ReLU per hidden layer (Zhou et al. 2023, Sec. 5).

    References
    ----------
    Zhou, Yang, Yang, Yan and Hu (2023), "Going Beyond Linear Mode Connectivity: The Layerwise
    Linear Feature Connectivity", Section 5.
    """
    _check_same_shape(a, b)
    _check_inputs("x", x, a)
    act = a.act
    return [
        cosine_dissimilarity(act(u) + act(v), act(u + v))
        for u, v in zip(preactivations(a, x), preactivations(b, x))
    ]
