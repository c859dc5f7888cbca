"""Contrastive imbalance: how well neurons align with the dictionary's features."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..checks import Interval, Options, Tensor, boundary, count, fraction
from .common import _FLOAT2, _WEIGHTS, ContrastiveConfig
from .encoder import _magnitude_mask

__all__ = [
    "energy_ratio",
    "feature_summary",
    "learning_margin",
    "masked_energy_share",
    "masked_majority_share",
    "strong_specialists",
    "union_purity_gap",
]


def _alignment(W: torch.Tensor, M: torch.Tensor) -> dict:
    """Projections of every neuron on every feature and on the noise space.

    Parameters
    ----------
    W : ``(..., m, d)`` neuron weights; M : ``(d, K)`` orthonormal features.

    Returns
    -------
    dict with ``proj`` ``|<w_r, M_k>|`` ``(..., m, K)``; ``noise`` ``||(I - M M^T) w_r||``;
    ``dominant`` (argmax feature), ``top`` and ``second`` (largest two projections), ``ratio``
    (top / second) and ``purity`` (``top^2 / sum_k proj^2``, 1 for a single-feature neuron).
    """
    if W.shape[-1] != M.shape[0] or W.dtype != M.dtype:
        raise ValueError(
            f"W's last dimension ({W.shape[-1]}, {W.dtype}) must equal M's rows "
            f"({M.shape[0]}, {M.dtype})"
        )
    if M.shape[1] < 2:
        raise ValueError("M must hold at least two features")
    coef = W @ M
    proj = coef.abs()
    noise = (W - coef @ M.T).norm(dim=-1)
    top2 = proj.topk(2, dim=-1).values
    top, second = top2[..., 0], top2[..., 1]
    purity = top**2 / (proj**2).sum(-1).clamp_min(1e-30)
    return dict(
        proj=proj,
        noise=noise,
        dominant=proj.argmax(-1),
        top=top,
        second=second,
        ratio=top / second.clamp_min(1e-30),
        purity=purity,
    )


@boundary(W=_WEIGHTS, M=_FLOAT2, ratio=Interval(float, 1), floor=fraction())
def strong_specialists(
    W: torch.Tensor, M: torch.Tensor, ratio: float = 2.0, floor: float = 0.25
) -> torch.Tensor:
    """Strong single-feature specialists per feature: a ``(..., K)`` count.

    Neuron ``r`` is a strong specialist of its dominant feature ``k`` when its top projection
    is at least ``ratio`` times its second one **and** at least ``floor`` times the largest
    top projection of its model, ``max_s max_j |<w_s, M_j>|``. The floor keeps small, decayed
    neurons (whose top/second ratio is noise) from counting as specialists.

    Parameters
    ----------
    W : torch.Tensor
        Neuron weights, ``(..., m, d)``.
    M : torch.Tensor
        Orthonormal features, ``(d, K)``.
    ratio : float, default 2.0
        The top/second threshold (>= 1).
    floor : float, default 0.25
        The magnitude floor, relative to the model's largest projection (in [0, 1]).

    Returns
    -------
    torch.Tensor
        ``(..., K)`` float counts of strong specialists of each feature.
    """
    return _strong_specialists(W, M, ratio, floor)


def _strong_specialists(
    W: torch.Tensor, M: torch.Tensor, ratio: float = 2.0, floor: float = 0.25
) -> torch.Tensor:
    """:func:`strong_specialists` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    a = _alignment(W, M)
    K = M.shape[1]
    top = a["top"]
    biggest = top.max(dim=-1, keepdim=True).values
    strong = (a["ratio"] >= ratio) & (top >= floor * biggest)
    onehot = F.one_hot(a["dominant"], K).to(W.dtype)
    return (onehot * strong[..., None].to(W.dtype)).sum(-2)


def _check_minority(W: torch.Tensor, M: torch.Tensor, n_minority: int) -> int:
    """The feature count ``K``, after checking ``n_minority`` and ``W`` against ``M``."""
    K = M.shape[1]
    if not 0 < n_minority < K:
        raise ValueError(
            f"n_minority must lie strictly between 0 and {K}, got {n_minority}"
        )
    if W.shape[-1] != M.shape[0] or W.dtype != M.dtype:
        raise ValueError(
            f"W's last dimension ({W.shape[-1]}) must equal M's rows, same dtype"
        )
    return K


@boundary(W=Tensor("float", (2, 3)), M=Tensor("float", 2), n_minority=count())
def energy_ratio(W: torch.Tensor, M: torch.Tensor, n_minority: int) -> torch.Tensor:
    """Minority/majority energy ratio of neurons ``W`` ``(..., m, d)``.

    Shape ``(...)``: ``sum_r sum_{k minority} <w_r, M_k>^2 / K_min`` over the same
    sum for the majority features (divided by ``K - K_min``); the minority features
    are the last ``n_minority`` columns of ``M``. It is 1 when both groups carry the
    same energy per feature, and it is minority-specific: a change that scales every
    weight (pruning inflates all norms a little) leaves it unchanged.

    Parameters
    ----------
    W : torch.Tensor
        Neuron weights, ``(..., m, d)``; a torch.Tensor (non-empty, floating-point, 2
        or 3-dimensional, finite).
    M : torch.Tensor
        Orthonormal feature dictionary, ``(d, K)``; a torch.Tensor (non-empty,
        floating-point, 2-dimensional, finite).
    n_minority : int
        Number of minority (rare) features; an int >= 1.

    Returns
    -------
    torch.Tensor
        The ratio, shape ``(...)``.
    """
    K = _check_minority(W, M, n_minority)
    e = ((W @ M) ** 2).sum(-2)  # energy per feature, summed over neurons: (..., K)
    minor = e[..., K - n_minority :].mean(-1)
    major = e[..., : K - n_minority].mean(-1)
    return minor / major.clamp_min(1e-30)


@boundary(
    W=Tensor("float", (2, 3)),
    M=Tensor("float", 2),
    n_minority=count(),
    fraction=fraction(),
)
def masked_energy_share(
    W: torch.Tensor, M: torch.Tensor, n_minority: int, fraction: float
) -> torch.Tensor:
    """Share of the minority energy held by the neurons a magnitude mask would hide.

    The mask is ``_magnitude_mask`` of ``W`` at ``fraction`` (the smallest neurons by
    norm); the share is ``sum`` of ``<w_r, M_k>^2`` over masked neurons ``r`` and minority
    features ``k`` over the same sum over all neurons. Near 0 when the minority lives in
    the large neurons, which the mask keeps.

    Parameters
    ----------
    W : torch.Tensor
        Neuron weights, ``(m, d)`` or ``(E, m, d)``; a torch.Tensor (non-empty,
        floating-point, 2 or 3-dimensional, finite).
    M : torch.Tensor
        Orthonormal feature dictionary, ``(d, K)``; a torch.Tensor (non-empty,
        floating-point, 2-dimensional, finite).
    n_minority : int
        Number of minority (rare) features, the last columns of ``M``; an int >= 1.
    fraction : float
        Fraction of neurons masked; a finite number in [0, 1].

    Returns
    -------
    torch.Tensor
        The share, shape ``()`` or ``(E,)``.
    """
    K = _check_minority(W, M, n_minority)
    hidden = 1 - _magnitude_mask(W, fraction)  # 1 = masked, (m,) or (E, m)
    e = ((W @ M[:, K - n_minority :]) ** 2).sum(-1)  # minority energy per neuron
    return (e * hidden).sum(-1) / e.sum(-1).clamp_min(1e-30)


@boundary(
    W=Tensor("float", (2, 3)),
    M=Tensor("float", 2),
    n_minority=count(),
    fraction=fraction(),
)
def masked_majority_share(
    W: torch.Tensor, M: torch.Tensor, n_minority: int, fraction: float
) -> torch.Tensor:
    """Share of majority-dominant neurons among those a magnitude mask hides and keeps.

    The mask is ``_magnitude_mask`` of ``W`` at ``fraction``; a neuron is
    majority-dominant when its largest projection ``|<w_r, M_k>|`` is on a majority
    feature (the first ``K - n_minority`` columns of ``M``). A mask that hid only
    minority neurons would give 0 in the first column.

    Parameters
    ----------
    W : torch.Tensor
        Neuron weights, ``(m, d)`` or ``(E, m, d)``; a torch.Tensor (non-empty,
        floating-point, 2 or 3-dimensional, finite).
    M : torch.Tensor
        Orthonormal feature dictionary, ``(d, K)``; a torch.Tensor (non-empty,
        floating-point, 2-dimensional, finite).
    n_minority : int
        Number of minority (rare) features, the last columns of ``M``; an int >= 1.
    fraction : float
        Fraction of neurons masked; a finite number in (0, 1).

    Returns
    -------
    torch.Tensor
        ``(2,)`` or ``(E, 2)``: the share among the masked neurons, then among the kept.
    """
    K = _check_minority(W, M, n_minority)
    if not 0 < fraction < 1:
        raise ValueError(
            f"fraction must lie strictly between 0 and 1, got {fraction}"
        )
    hidden = 1 - _magnitude_mask(W, fraction)  # 1 = masked, (m,) or (E, m)
    major = ((W @ M).abs().argmax(-1) < K - n_minority).to(W.dtype)
    shares = [
        (major * h).sum(-1) / h.sum(-1).clamp_min(1) for h in (hidden, 1 - hidden)
    ]
    return torch.stack(shares, -1)


@boundary(
    W_ref=Tensor("float", 3),
    W=Tensor("float", 3),
    M=_FLOAT2,
    floor=fraction(),
    n_minority=count(optional=True),
    group=Options(("all", "minority", "majority")),
)
def union_purity_gap(
    W_ref: torch.Tensor,
    W: torch.Tensor,
    M: torch.Tensor,
    floor: float = 0.25,
    n_minority: int | None = None,
    group: str = "all",
) -> np.ndarray:
    r"""Purity fall from ``W_ref`` to ``W`` over a neuron set fixed within each pair.

    ``W_ref`` and ``W`` are paired models ``(E, m, d)``: neuron ``r`` of ``W_ref[e]`` and of
    ``W[e]`` share their initialization, so neuron ``r`` is paired with neuron ``r``. The set is
    the union of the neurons strong in either model (top projection at least ``floor`` times
    that model's largest, as in :func:`feature_summary`); a neuron that loses its feature and
    drops below the floor in one model stays in the set. With ``group`` ``"minority"`` or
    ``"majority"`` the set keeps only the neurons whose dominant feature in ``W_ref`` is a
    minority (the last ``n_minority`` columns of ``M``) or a majority feature, so that opposite
    shifts of the two groups do not cancel in one mean. Returns, per pair, the mean purity
    ``top^2 / sum_k proj^2`` over the set in ``W_ref`` minus the same mean in ``W``:

    .. math::

        g = \frac{1}{|S|} \sum_{r \in S} \bigl(\pi_r(W_{\mathrm{ref}}) - \pi_r(W)\bigr),
        \qquad \pi_r = \frac{\max_k |\langle w_r, M_k\rangle|^2}
        {\sum_k |\langle w_r, M_k\rangle|^2}.

    Parameters
    ----------
    W_ref : torch.Tensor
        Reference neuron weights, ``(E, m, d)``; a torch.Tensor (non-empty,
        floating-point, 3-dimensional, finite).
    W : torch.Tensor
        Paired neuron weights, the same shape as ``W_ref``; a torch.Tensor (non-empty,
        floating-point, 3-dimensional, finite).
    M : torch.Tensor
        Orthonormal feature dictionary, ``(d, K)``; a torch.Tensor (non-empty,
        floating-point, 2-dimensional, finite).
    floor : float, default 0.25
        The strong floor, relative to the model's largest top projection; a finite
        number in [0, 1].
    n_minority : int, optional
        Number of minority features, the last columns of ``M``; an int >= 1, or None
        (needed when ``group`` is not ``"all"``).
    group : {"all", "minority", "majority"}, default "all"
        Which neurons of the union to average over, by their dominant feature in ``W_ref``.

    Returns
    -------
    numpy.ndarray
        ``(E,)`` purity gaps, positive where the set lost purity (0 for a pair whose set is
        empty).

    References
    ----------
    Liao, Zhou, Zhang, Wang and Zhang (2026), "Theoretical Analysis of Contrastive Learning
    under Imbalanced Data: From Training Dynamics to a Pruning Solution" (under imbalance,
    neurons mix larger sets of features).
    """
    if W_ref.shape != W.shape:
        raise ValueError(
            f"W must have W_ref's shape {tuple(W_ref.shape)}, got {tuple(W.shape)}"
        )
    a, b = _alignment(W_ref, M), _alignment(W, M)
    union = torch.zeros_like(a["top"], dtype=torch.bool)
    for x in (a, b):
        union |= x["top"] >= floor * x["top"].max(dim=-1, keepdim=True).values
    if group != "all":
        if n_minority is None:
            raise ValueError(f"n_minority is needed with group={group!r}, got None")
        K = _check_minority(W_ref, M, n_minority)
        minor = a["dominant"] >= K - n_minority
        union &= minor if group == "minority" else ~minor
    n = union.sum(-1).clamp_min(1)
    gap = ((a["purity"] - b["purity"]) * union).sum(-1) / n
    return gap.cpu().numpy()


@boundary(ratio=Interval(float, 1))
def learning_margin(cfg: ContrastiveConfig, ratio: float) -> float:
    """The stage-I margin ``mu = L_s^2 p_min / (tau lambda)`` of the minority features.

    Linearizing stage I (small weights, uniform attention, threshold near zero), the expected
    InfoNCE gradient grows the projection of a neuron on feature ``k`` by
    ``lr (L_s^2 / tau) p_k`` per step, while weight decay shrinks it by ``lr lambda``; the
    minority features (``p_min = q / ratio``) grow out of the initialization only if
    ``mu > 1``.

    Parameters
    ----------
    cfg : ContrastiveConfig
        The experiment's settings; a ContrastiveConfig.
    ratio : float
        Imbalance ratio; a finite number >= 1.

    Returns
    -------
    float
        ``mu``.

    References
    ----------
    Liao, Zhou, Zhang, Wang and Zhang (2026), "Theoretical Analysis of Contrastive Learning
    under Imbalanced Data: From Training Dynamics to a Pruning Solution".
    """
    if not cfg.weight_decay > 0:
        raise ValueError("the margin needs weight_decay > 0")
    p_min = cfg.base_freq / float(ratio)
    return cfg.n_signal**2 * p_min / (cfg.tau * cfg.weight_decay)


@boundary(
    W=Tensor("float", 3),
    M=_FLOAT2,
    n_minority=count(),
    specialist_ratio=Interval(float, 1),
    strong_floor=fraction(),
)
def feature_summary(
    W: torch.Tensor,
    M: torch.Tensor,
    n_minority: int,
    specialist_ratio: float = 2.0,
    strong_floor: float = 0.25,
) -> dict:
    """Per-model feature statistics of neurons ``W`` ``(E, m, d)`` (each entry a length-E array).

    * ``best_major`` / ``best_minor``: mean over majority/minority features of the feature's best
      alignment ``max_r |<w_r, M_k>|`` (how strongly the feature is learned).
    * ``spec_major`` / ``spec_minor``: strong specialists per majority/minority feature
      (:func:`strong_specialists` with ``specialist_ratio`` and ``strong_floor``).
    * ``energy``: the minority/majority energy ratio (:func:`energy_ratio`).
    * ``single_fraction``: fraction of neurons whose top/second ratio is >= ``specialist_ratio``
      (no magnitude floor: the purity of all neurons); ``median_ratio``; ``noise``.
    * ``strong_purity``: among the strong neurons (top >= ``strong_floor`` x the model's
      largest), the fraction whose top/second ratio is >= ``specialist_ratio``; it falls only
      if strong neurons mix features.
    * ``mean_purity``: the mean over *all* neurons, weak ones included, of the purity
      ``top^2 / sum_k proj^2`` (``_alignment``); 1 when every neuron serves one feature.
    * ``purity_strong`` / ``purity_weak``: the same mean over the strong neurons only (top
      >= ``strong_floor`` x the model's largest) and over the other, weak ones (0 if none).
    * ``strong_share``: the fraction of neurons that are strong (top >= ``strong_floor`` x
      the model's largest); the all-neuron ``mean_purity`` is
      ``strong_share * purity_strong + (1 - strong_share) * purity_weak``.

    Parameters
    ----------
    W : torch.Tensor
        Neuron weights, ``(..., m, d)``; a torch.Tensor (non-empty, floating-point, 3-dimensional,
        finite).
    M : torch.Tensor
        Orthonormal feature dictionary, ``(d, K)``; a torch.Tensor (non-empty, floating-point,
        2-dimensional, finite).
    n_minority : int
        Number of minority (rare) features; an int >= 1.
    specialist_ratio : float, default 2.0
        Top/second projection ratio of a specialist; a finite number >= 1.
    strong_floor : float, default 0.25
        Magnitude floor of a strong specialist, relative to the model's largest projection; a
        finite number in [0, 1].

    Returns
    -------
    dict
        The statistics, by name.
    """
    return _feature_summary(W, M, n_minority, specialist_ratio, strong_floor)


def _feature_summary(
    W: torch.Tensor,
    M: torch.Tensor,
    n_minority: int,
    specialist_ratio: float = 2.0,
    strong_floor: float = 0.25,
) -> dict:
    """:func:`feature_summary` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    K = M.shape[1]
    if not 0 < n_minority < K:
        raise ValueError(f"n_minority must lie strictly between 0 and {K}")
    a = _alignment(W, M)
    best = a["proj"].max(dim=1).values  # (E, K)
    counts = _strong_specialists(W, M, specialist_ratio, strong_floor)
    big = a["top"] >= strong_floor * a["top"].max(dim=1, keepdim=True).values
    pure = (big & (a["ratio"] >= specialist_ratio)).float().sum(1) / big.float().sum(
        1
    )
    maj = slice(0, K - n_minority)
    mino = slice(K - n_minority, K)
    out = dict(
        best_major=best[:, maj].mean(1),
        best_minor=best[:, mino].mean(1),
        spec_major=counts[:, maj].mean(1),
        spec_minor=counts[:, mino].mean(1),
        energy=energy_ratio(W, M, n_minority),
        single_fraction=(a["ratio"] >= specialist_ratio).float().mean(1),
        strong_purity=pure,
        mean_purity=a["purity"].mean(1),
        purity_strong=(a["purity"] * big).sum(1) / big.sum(1).clamp_min(1),
        purity_weak=(a["purity"] * ~big).sum(1) / (~big).sum(1).clamp_min(1),
        strong_share=big.float().mean(1),
        median_ratio=a["ratio"].median(1).values,
        noise=a["noise"].mean(1),
    )
    return {k: v.cpu().numpy() for k, v in out.items()}
