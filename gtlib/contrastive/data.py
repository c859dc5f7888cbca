"""Contrastive imbalance: the data, sparse-coding tokens and their two views."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ..checks import SEED, Interval, boundary, count, fraction, nonnegative
from .common import _FLOAT2, _GENERATOR

__all__ = ["feature_frequencies", "single_feature_samples"]


@boundary(dim=count(), n_features=count(), seed=SEED)
def feature_dictionary(dim: int, n_features: int, seed: int = 0) -> torch.Tensor:
    """A ``(dim, n_features)`` matrix with orthonormal columns: the ground-truth features ``M``.

    Raises
    ------
    ValueError
        If ``n_features > dim`` or a size is not positive.
    """
    if n_features > dim:
        raise ValueError(f"n_features ({n_features}) must be <= dim ({dim})")
    g = torch.Generator().manual_seed(int(seed))
    q, r = torch.linalg.qr(torch.randn(dim, dim, generator=g))
    q = q * torch.sign(torch.diagonal(r))[None, :]
    return q[:, :n_features].contiguous()


@boundary(
    n_features=count(2),
    n_minority=count(),
    base_freq=fraction("neither"),
    ratio=Interval(float, 1),
)
def feature_frequencies(
    n_features: int, n_minority: int, base_freq: float, ratio: float
) -> torch.Tensor:
    """Activation probabilities ``p_k`` of the majority and minority features.

    Activation probabilities ``p_k``: ``base_freq`` for majority features and ``base_freq / ratio``
    for the last ``n_minority`` (minority) features.

    Parameters
    ----------
    n_features : int
        Dictionary size K; an int >= 2.
    n_minority : int
        Number of minority (rare) features; an int >= 1.
    base_freq : float
        Probability that a majority feature is active; a finite number in (0, 1).
    ratio : float
        Imbalance ratio; a finite number >= 1.

    Returns
    -------
    torch.Tensor
        The probabilities, one per feature.

    Raises
    ------
    ValueError
        If ``ratio < 1``, ``base_freq`` is not in (0, 1) or ``n_minority`` is not in (0, n_features).
    """
    if not 0 < n_minority < n_features:
        raise ValueError(
            f"n_minority must lie strictly between 0 and n_features, got {n_minority}"
        )
    p = torch.full((n_features,), float(base_freq))
    p[n_features - n_minority :] = base_freq / float(ratio)
    return p


def _sample_codes(
    freqs: torch.Tensor, n: int, generator: torch.Generator
) -> torch.Tensor:
    """Sparse codes ``z`` in ``{-1, 0, 1}``: feature ``k`` active with probability ``freqs[..., k]``,
    with a random sign. ``freqs`` of shape ``(K,)`` or ``(E, K)`` gives ``(n, K)`` or ``(E, n, K)``.

    The same uniform numbers are shared by the E profiles (common random numbers), so conditions
    that differ only in frequency see coupled samples.
    """
    if float(freqs.min()) < 0 or float(freqs.max()) > 1:
        raise ValueError("freqs must lie in [0, 1]")
    K = freqs.shape[-1]
    u = torch.rand(n, K, generator=generator)
    sign = torch.randint(0, 2, (n, K), generator=generator) * 2 - 1
    if freqs.ndim == 1:
        return ((u < freqs) * sign).float()
    return ((u[None] < freqs[:, None, :]) * sign[None]).float()


def _make_views(
    M: torch.Tensor,
    z: torch.Tensor,
    n_tokens: int,
    n_signal: int,
    noise: float,
    generator: torch.Generator,
) -> torch.Tensor:
    """One augmented view of the samples with codes ``z`` (shape ``(..., n, K)``): ``(..., n, L, d)``.

    ``n_signal`` randomly placed tokens carry ``M z``; every token adds Gaussian noise of expected
    norm ``noise`` (std ``noise / sqrt(d)`` per coordinate). Calling it twice gives two views that
    share the code and differ in noise and token positions.
    """
    if n_signal > n_tokens:
        raise ValueError(
            f"n_signal must lie in [1, n_tokens = {n_tokens}], got {n_signal}"
        )
    if z.shape[-1] != M.shape[1] or z.dtype != M.dtype:
        raise ValueError(
            f"z must have one {M.dtype} code entry per column of M ({M.shape[1]}), "
            f"got shape {tuple(z.shape)} of {z.dtype}"
        )
    d = M.shape[0]
    lead = z.shape[:-1]
    signal = z @ M.T  # (..., n, d)
    order = torch.rand(*lead, n_tokens, generator=generator).argsort(-1)
    carries = (order < n_signal).to(
        signal.dtype
    )  # exactly n_signal tokens per sample
    eps = torch.randn(*lead, n_tokens, d, generator=generator) * (
        noise / math.sqrt(d)
    )
    return carries[..., None] * signal[..., None, :] + eps


@boundary(
    M=_FLOAT2,
    n=count(),
    n_tokens=count(),
    n_signal=count(),
    noise=nonnegative(),
    generator=_GENERATOR,
)
def single_feature_samples(
    M: torch.Tensor,
    n: int,
    n_tokens: int,
    n_signal: int,
    noise: float,
    generator: torch.Generator,
):
    """Balanced probe data: each sample carries exactly one feature (uniform over K, sign +1).

    Returns ``(X, y)`` with ``X`` of shape ``(n, L, d)`` and ``y`` the feature index.

    Parameters
    ----------
    M : torch.Tensor
        Orthonormal feature dictionary, ``(d, K)``; a torch.Tensor (non-empty, floating-point,
        2-dimensional, finite).
    n : int
        Number of samples; an int >= 1.
    n_tokens : int
        Tokens per sample; an int >= 1.
    n_signal : int
        Tokens that carry the signal; an int >= 1.
    noise : float
        Noise level; a finite number >= 0.
    generator : torch.Generator
        The random generator of the draws; a Generator.

    Returns
    -------
    tuple of torch.Tensor
        ``(X, y)`` as described above.
    """
    if n_signal > n_tokens:
        raise ValueError(
            f"n_signal must lie in [1, n_tokens = {n_tokens}], got {n_signal}"
        )
    K = M.shape[1]
    y = torch.randint(0, K, (n,), generator=generator)
    z = F.one_hot(y, K).to(M.dtype)
    return _make_views(M, z, n_tokens, n_signal, noise, generator), y
