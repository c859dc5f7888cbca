"""Contrastive learning under imbalanced data, and pruning as a remedy.

This module backs the chapter *Contrastive learning under imbalance* (``book/imbalanced-contrastive``),
which re-runs, at laptop scale, the experiments of

    Liao, Zhou, Zhang, Wang and Zhang, "Theoretical Analysis of Contrastive Learning under
    Imbalanced Data: From Training Dynamics to a Pruning Solution", ICLR 2026 (arXiv:2602.10357).

The paper has no public code. The algorithm follows the paper and its first author's summary; every
constant below is our own choice (the chapter lists them and derives which ratios are learnable). The
pieces, top to bottom:

1. **Data** (sparse coding in the style of Wen and Li, ICML 2021): a dictionary ``M`` of ``K``
   orthonormal feature directions in ``R^d``; a sample's sparse code ``z`` in ``{-1, 0, 1}^K`` has
   feature ``k`` active with probability ``p_k``; majority features have ``p_k = q``, minority
   features ``q / ratio``. A sample is ``L`` tokens; ``n_signal`` of them carry ``M z`` and every
   token carries isotropic Gaussian noise. Two *views* (augmentations) of a sample share ``z`` but
   redraw the noise and which tokens carry the signal.
2. **Encoder**: one single-head self-attention layer (value = identity, ``softmax(X A X^T)``) followed
   by ``m`` neurons with the symmetric biased ReLU ``BReLU_b(s) = ReLU(s - b) - ReLU(-s - b)``,
   summed over tokens: ``f_r(X) = sum_l BReLU_b(<w_r, h_l>)``.
3. **Loss**: InfoNCE with temperature ``tau`` between an online view and a target view under
   stop-gradient, plus weight decay.
4. **Pruning**: every ``prune_every`` steps, mask the fraction ``rho`` of neurons with the smallest
   weight norm in the online forward pass; gradients are computed through the masked model with a
   straight-through rule, so *all* neurons keep being updated and no weight is removed for good.
5. **Metrics**: each neuron's projection on each feature and on the noise space, its dominant feature,
   the dominant-to-second ratio, purity, strong single-feature specialists (with a magnitude
   floor), the minority/majority energy ratio, the stage-I margin ``mu``; linear probes.
6. **Real data**: the same contrastive recipe on long-tailed MNIST-1D (Greydanus and Kobak 2024),
   judged against the randomly initialized encoder.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np
import torch
import torch.nn.functional as F

from .checks import (SEED, Constraint, InstanceOf, Interval, Sequence, Tensor, boundary,
                     check_fraction, check_labels, count, fraction, nonnegative, positive,
                     tuple_of)
from .config import Config, Result, param
from .data import long_tailed, mnist1d
from .engine import ReplacementBatches, StackedOptimizer, fit

__all__ = [
    # configs and results
    "ContrastiveConfig", "LongTailConfig",
    # functions
    "best_alignment_curves", "condition_table", "continue_encoders", "draw_alignment",
    "energy_curves",
    "energy_ratio", "feature_frequencies", "feature_summary", "infonce", "infonce_orthogonal_closed_form",
    "learning_margin", "paired", "random_encoder_accuracy", "representations",
    "single_feature_samples", "stage_curves", "strong_specialists", "train_encoders",
    "train_longtail",
]


class _Mask(Tensor):
    """A floating-point 0/1 pruning mask (see :func:`magnitude_mask`)."""

    def describe(self) -> str:
        return super().describe()[:-1] + ", entries 0 or 1)"

    def check(self, name, value):
        if value is None and self.optional:
            return value
        super().check(name, value)
        if not bool(((value == 0) | (value == 1)).all()):
            self._fail(name, value)
        return value


class _Numbers(Sequence):
    """A non-empty list or tuple of numbers each satisfying ``item``; a 1-D numpy array or torch
    tensor of them too (``checks.Sequence`` takes lists and tuples only)."""

    def __init__(self, item: Constraint):
        super().__init__(item)

    def check(self, name, value):
        if isinstance(value, (np.ndarray, torch.Tensor)) and value.ndim == 1:
            value = value.tolist()
        return super().check(name, value)


class _Axes(Constraint):
    """A matplotlib Axes (anything with ``imshow``)."""

    def describe(self) -> str:
        return "a matplotlib Axes"

    def check(self, name, value):
        if not callable(getattr(value, "imshow", None)):
            self._fail(name, value, TypeError)
        return value


_GENERATOR = InstanceOf(torch.Generator)
_FLOAT2 = Tensor("float", 2)  # a (rows, cols) float matrix, e.g. the dictionary M
_WEIGHTS = Tensor("float", (2, 3))  # neuron weights (m, d) or (E, m, d)
# train_encoders seeds its generators with seed * 1000 + j (j < 1000): keep that below 2**63
_RUN_SEED = Interval(int, 0, (2**63 - 1) // 1000 - 1)
_PROBE_SEED = Interval(int, 0, 2**63 - 1 - 10_000)  # the probe data is seeded 10_000 + seed

# ------------------------------------------------------------------------------------------------
# configuration
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ContrastiveConfig(Config):
    """The synthetic experiment (sparse-coding tokens, attention + BReLU encoder, InfoNCE).

    Every constant is our choice. With these constants the stage-I margin
    :func:`learning_margin` is ``mu = 10 / ratio``: ``mu > 1`` for every quick ratio, yet the
    chapter measures that within ``steps`` the minority features are learned only up to ratio 4,
    while at ratio 5 they grow past their start only in a run three times longer (``mu > 1`` is
    necessary, not sufficient for learning within a given budget).

    Parameters
    ----------
    dim : int, default 48
        Ambient dimension d; an int >= 1.
    n_features : int, default 12
        Dictionary size K; an int >= 1.
    n_minority : int, default 6
        The last n_minority features are the minority ones; an int >= 1.
    base_freq : float, default 0.15
        Probability q that a majority feature is active in a sample; a finite number in (0, 1).
    n_tokens : int, default 4
        Tokens per sample L; an int >= 1.
    n_signal : int, default 2
        Tokens that carry the sparse signal M z; an int >= 1.
    noise : float, default 1.0
        Expected norm of each token's Gaussian noise; a finite number > 0.
    neurons : int, default 144
        MLP neurons m; an int >= 1.
    init_scale : float, default 0.1
        Std of the initial neuron weights; a finite number > 0.
    batch : int, default 128
        Fresh samples per step (population training); an int >= 1.
    steps : int, default 1200
        SGD steps; an int >= 1.
    lr : float, default 0.1
        Learning rate of the neurons and the attention matrix; a finite number > 0.
    weight_decay : float, default 0.02
        Weight decay on all parameters; a finite number >= 0.
    tau : float, default 3.0
        InfoNCE temperature; a finite number > 0.
    bias_max : float, default 0.3
        BReLU threshold, relative to the neuron's weight norm; a finite number >= 0.
    bias_ramp : int, default 600
        Steps over which the threshold rises linearly from 0 (half the run); an int >= 0.
    prune_fraction : float, default 0.5
        Fraction of neurons masked by magnitude pruning; a finite number in [0, 1].
    prune_every : int, default 50
        How often the pruning mask is recomputed ("each epoch"); an int >= 1.
    ratios : tuple, default (1.0, 2.0, 3.0, 4.0, 5.0)
        Imbalance ratios p_majority / p_minority; a tuple (at least 1 item) of items each a finite
        number >= 1.
    replicates : int, default 6
        Independent initializations per condition (paired runs) of the main experiment; an int >=
        1.
    edge_replicates : int, default 3
        Initializations per condition of the runs that only locate the learnable edge; an int >= 1.
    specialist_ratio : float, default 2.0
        A neuron is a single-feature specialist if top/second >= this; a finite number >= 1.
    strong_floor : float, default 0.25
        ... and a strong one if its top is >= this x the model's largest; a finite number in [0,
        1].
    log_every : int, default 50
        How often the neuron metrics are recorded; an int >= 1.
    probe_samples : int, default 1200
        Single-feature samples per probe split; an int >= 1.

    References
    ----------
    Liao, Zhou, Zhang, Wang and Zhang (2026), "Theoretical Analysis of Contrastive Learning
    under Imbalanced Data: From Training Dynamics to a Pruning Solution".
    """

    FULL = dict(dim=128, n_features=32, n_minority=16, base_freq=0.06, n_tokens=8, n_signal=3,
                neurons=256, batch=512, steps=4000, replicates=6,
                bias_ramp=2000, probe_samples=4000)

    dim: int = param(48, count())  #: ambient dimension d
    n_features: int = param(12, count())  #: dictionary size K
    n_minority: int = param(6, count())  #: the last n_minority features are the minority ones
    #: probability q that a majority feature is active in a sample
    base_freq: float = param(0.15, fraction("neither"))
    n_tokens: int = param(4, count())  #: tokens per sample L
    n_signal: int = param(2, count())  #: tokens that carry the sparse signal M z
    noise: float = param(1.0, positive())  #: expected norm of each token's Gaussian noise
    neurons: int = param(144, count())  #: MLP neurons m
    init_scale: float = param(0.1, positive())  #: std of the initial neuron weights
    batch: int = param(128, count())  #: fresh samples per step (population training)
    steps: int = param(1200, count())  #: SGD steps
    lr: float = param(0.1, positive())  #: learning rate of the neurons and the attention matrix
    weight_decay: float = param(0.02, nonnegative())  #: weight decay on all parameters
    tau: float = param(3.0, positive())  #: InfoNCE temperature
    #: BReLU threshold, relative to the neuron's weight norm
    bias_max: float = param(0.3, nonnegative())
    #: steps over which the threshold rises linearly from 0 (half the run)
    bias_ramp: int = param(600, count(0))
    #: fraction of neurons masked by magnitude pruning
    prune_fraction: float = param(0.5, fraction())
    #: how often the pruning mask is recomputed ("each epoch")
    prune_every: int = param(50, count())
    #: imbalance ratios p_majority / p_minority
    ratios: tuple = param((1.0, 2.0, 3.0, 4.0, 5.0), tuple_of(Interval(float, 1)))
    #: independent initializations per condition (paired runs) of the main experiment
    replicates: int = param(6, count())
    #: initializations per condition of the runs that only locate the learnable edge
    edge_replicates: int = param(3, count())
    #: a neuron is a single-feature specialist if top/second >= this
    specialist_ratio: float = param(2.0, Interval(float, 1))
    #: ... and a strong one if its top is >= this x the model's largest
    strong_floor: float = param(0.25, fraction())
    log_every: int = param(50, count())  #: how often the neuron metrics are recorded
    probe_samples: int = param(1200, count())  #: single-feature samples per probe split

    def _check_together(self) -> None:
        if not self.n_minority < self.n_features:
            self._refuse("n_minority", f"< n_features = {self.n_features}")
        if self.n_features > self.dim:
            self._refuse("n_features", f"<= dim = {self.dim} (the dictionary is orthonormal)")
        if self.n_signal > self.n_tokens:
            self._refuse("n_signal", f"<= n_tokens = {self.n_tokens}")


# ------------------------------------------------------------------------------------------------
# data: sparse-coding tokens
# ------------------------------------------------------------------------------------------------


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


@boundary(n_features=count(2), n_minority=count(), base_freq=fraction("neither"),
          ratio=Interval(float, 1))
def feature_frequencies(n_features: int, n_minority: int, base_freq: float,
                        ratio: float) -> torch.Tensor:
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
        raise ValueError(f"n_minority must lie strictly between 0 and n_features, got {n_minority}")
    p = torch.full((n_features,), float(base_freq))
    p[n_features - n_minority:] = base_freq / float(ratio)
    return p


@boundary(freqs=Tensor("float", (1, 2)), n=count(), generator=_GENERATOR)
def sample_codes(freqs: torch.Tensor, n: int, generator: torch.Generator) -> torch.Tensor:
    """Sparse codes ``z`` in ``{-1, 0, 1}``: feature ``k`` active with probability ``freqs[..., k]``,
    with a random sign. ``freqs`` of shape ``(K,)`` or ``(E, K)`` gives ``(n, K)`` or ``(E, n, K)``.

    The same uniform numbers are shared by the E profiles (common random numbers), so conditions
    that differ only in frequency see coupled samples.
    """
    return _sample_codes(freqs, n, generator)


def _sample_codes(freqs: torch.Tensor, n: int, generator: torch.Generator) -> torch.Tensor:
    """:func:`sample_codes` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    if float(freqs.min()) < 0 or float(freqs.max()) > 1:
        raise ValueError("freqs must lie in [0, 1]")
    K = freqs.shape[-1]
    u = torch.rand(n, K, generator=generator)
    sign = torch.randint(0, 2, (n, K), generator=generator) * 2 - 1
    if freqs.ndim == 1:
        return ((u < freqs) * sign).float()
    return ((u[None] < freqs[:, None, :]) * sign[None]).float()


@boundary(M=_FLOAT2, z=Tensor("float", (2, 3)), n_tokens=count(), n_signal=count(),
          noise=nonnegative(), generator=_GENERATOR)
def make_views(M: torch.Tensor, z: torch.Tensor, n_tokens: int, n_signal: int, noise: float,
               generator: torch.Generator) -> torch.Tensor:
    """One augmented view of the samples with codes ``z`` (shape ``(..., n, K)``): ``(..., n, L, d)``.

    ``n_signal`` randomly placed tokens carry ``M z``; every token adds Gaussian noise of expected
    norm ``noise`` (std ``noise / sqrt(d)`` per coordinate). Calling it twice gives two views that
    share the code and differ in noise and token positions.
    """
    return _make_views(M, z, n_tokens, n_signal, noise, generator)


def _make_views(M: torch.Tensor, z: torch.Tensor, n_tokens: int, n_signal: int, noise: float,
                generator: torch.Generator) -> torch.Tensor:
    """:func:`make_views` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    if n_signal > n_tokens:
        raise ValueError(f"n_signal must lie in [1, n_tokens = {n_tokens}], got {n_signal}")
    if z.shape[-1] != M.shape[1] or z.dtype != M.dtype:
        raise ValueError(f"z must have one {M.dtype} code entry per column of M ({M.shape[1]}), "
                         f"got shape {tuple(z.shape)} of {z.dtype}")
    d = M.shape[0]
    lead = z.shape[:-1]
    signal = z @ M.T  # (..., n, d)
    order = torch.rand(*lead, n_tokens, generator=generator).argsort(-1)
    carries = (order < n_signal).to(signal.dtype)  # exactly n_signal tokens per sample
    eps = torch.randn(*lead, n_tokens, d, generator=generator) * (noise / math.sqrt(d))
    return carries[..., None] * signal[..., None, :] + eps


@boundary(M=_FLOAT2, n=count(), n_tokens=count(), n_signal=count(), noise=nonnegative(),
          generator=_GENERATOR)
def single_feature_samples(M: torch.Tensor, n: int, n_tokens: int, n_signal: int, noise: float,
                           generator: torch.Generator):
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
        raise ValueError(f"n_signal must lie in [1, n_tokens = {n_tokens}], got {n_signal}")
    K = M.shape[1]
    y = torch.randint(0, K, (n,), generator=generator)
    z = F.one_hot(y, K).to(M.dtype)
    return _make_views(M, z, n_tokens, n_signal, noise, generator), y


# ------------------------------------------------------------------------------------------------
# encoder, loss, pruning
# ------------------------------------------------------------------------------------------------


@boundary(s=Tensor("float"))
def brelu(s: torch.Tensor, b: float | torch.Tensor) -> torch.Tensor:
    """The symmetric biased ReLU ``ReLU(s - b) - ReLU(-s - b)``: zero on ``[-b, b]``, odd in ``s``.

    For ``b >= 0`` it equals ``s - clamp(s, -b, b)`` exactly (the same float operations on each
    side of the dead zone), which takes two tensor operations instead of five, forward and back.
    """
    return _brelu(s, b)


def _brelu(s: torch.Tensor, b: float | torch.Tensor) -> torch.Tensor:
    """:func:`brelu` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    negative = bool((b < 0).any()) if torch.is_tensor(b) else b < 0
    if negative:
        return F.relu(s - b) - F.relu(-s - b)
    return s - torch.clamp(s, -b, b)


@boundary(f=Tensor("float"), mask=_Mask("float"))
def straight_through_mask(f: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Forward: ``f * mask``. Backward: masked entries get the gradient as if unmasked.

    This is "compute gradients through the masked model but update all parameters": the
    loss sees the pruned model, yet masked neurons keep receiving the gradient of their
    own output.
    """
    return _straight_through_mask(f, mask)


def _straight_through_mask(f: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """:func:`straight_through_mask` without its boundary checks.

    For callers whose arguments are already checked or built here."""
    pairs = zip(mask.shape[::-1], f.shape[::-1])
    if mask.ndim > f.ndim or any(a not in (1, b) for a, b in pairs):
        raise ValueError(f"mask of shape {tuple(mask.shape)} must broadcast to "
                         f"f's shape {tuple(f.shape)}")
    return f * mask + (f - f.detach()) * (1 - mask)


@boundary(X=Tensor("float", 4), W=Tensor("float", 3), A=Tensor("float", 3), beta=nonnegative(),
          mask=_Mask("float", 2, optional=True))
def encode(X: torch.Tensor, W: torch.Tensor, A: torch.Tensor, beta: float,
           mask: torch.Tensor | None = None) -> torch.Tensor:
    """The attention + BReLU encoder, batched over E independent models.

    Parameters
    ----------
    X : ``(E, n, L, d)`` tokens.
    W : ``(E, m, d)`` neuron weights ``w_r``.
    A : ``(E, d, d)`` attention matrix (``W_Q W_K^T`` merged); scores ``x_l^T A x_j``.
    beta : float
        BReLU threshold relative to each neuron's norm: ``b_r = beta * ||w_r||`` (not differentiated).
    mask : ``(E, m)`` 0/1, optional
        Pruning mask applied to the outputs with :func:`straight_through_mask`.

    Returns
    -------
    ``(E, n, m)`` representations ``f_r(X) = sum_l BReLU(<w_r, h_l>)`` with
    ``h_l = sum_j softmax_j(x_l^T A x_j) x_j``.
    """
    return _encode(X, W, A, beta, mask)


def _encode(X: torch.Tensor, W: torch.Tensor, A: torch.Tensor, beta: float,
            mask: torch.Tensor | None = None) -> torch.Tensor:
    """:func:`encode` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    E, d = X.shape[0], X.shape[-1]
    if X.ndim != 4 or W.shape[::2] != (E, d) or A.shape != (E, d, d) or \
            (mask is not None and mask.shape != W.shape[:2]):
        raise ValueError(f"X must be (E, n, L, d), W (E, m, d), A (E, d, d) and mask (E, m), got "
                         f"X {tuple(X.shape)}, W {tuple(W.shape)}, A {tuple(A.shape)}"
                         + ("" if mask is None else f", mask {tuple(mask.shape)}"))
    scores = torch.einsum("enld,edf,enkf->enlk", X, A, X)
    H = torch.softmax(scores, dim=-1) @ X
    S = torch.einsum("enld,emd->enlm", H, W)
    b = beta * W.detach().norm(dim=-1)[:, None, None, :]
    f = _brelu(S, b).sum(2)
    if mask is not None:
        f = _straight_through_mask(f, mask[:, None, :].to(f.dtype))
    return f


@boundary(f=Tensor("float", (2, 3)), f_target=Tensor("float", (2, 3)), tau=positive())
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
    if f.shape != f_target.shape or f.ndim not in (2, 3) or f.dtype != f_target.dtype:
        raise ValueError(f"f and f_target must have the same shape (n, m) or (E, n, m) and dtype, "
                         f"got {tuple(f.shape)} {f.dtype} and {tuple(f_target.shape)} "
                         f"{f_target.dtype}")
    logits = f @ f_target.detach().transpose(-1, -2) / tau
    return (torch.logsumexp(logits, -1) - torch.diagonal(logits, dim1=-2, dim2=-1)).mean(-1)


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


@boundary(W=Tensor("float", (2, 3)))
def magnitude_mask(W: torch.Tensor, fraction) -> torch.Tensor:
    """A 0/1 ``(E, m)`` mask zeroing the ``round(fraction * m)`` neurons of smallest norm.

    ``W`` is ``(E, m, d)`` (or ``(m, d)``, giving ``(m,)``); ``fraction`` a number or a
    length-E sequence (one per model). Ties are broken by index, so exactly the requested
    count is masked.
    """
    return _magnitude_mask(W, fraction)


def _magnitude_mask(W: torch.Tensor, fraction) -> torch.Tensor:
    """:func:`magnitude_mask` without its boundary checks.

    For callers whose arguments are already checked or built here."""
    squeeze = W.ndim == 2
    if squeeze:
        W = W[None]
    if W.ndim != 3:
        raise ValueError("W must have shape (m, d) or (E, m, d)")
    E, m, _ = W.shape
    fr = [fraction] * E if np.ndim(fraction) == 0 else list(fraction)
    if len(fr) != E:
        raise ValueError(
            f"fraction must be a number or have one entry per model ({E})")
    fr = [check_fraction("fraction", f) for f in fr]
    norms = W.detach().norm(dim=-1)
    order = norms.argsort(dim=-1, stable=True)
    mask = torch.ones(E, m, dtype=W.dtype, device=W.device)
    for e in range(E):
        k = int(round(fr[e] * m))
        mask[e, order[e, :k]] = 0.0
    return mask[0] if squeeze else mask


@boundary(W=Tensor("float", (2, 3)), generator=_GENERATOR)
def random_mask(W: torch.Tensor, fraction, generator: torch.Generator) -> torch.Tensor:
    """The control of :func:`magnitude_mask`: the same count of neurons, chosen at random.

    A 0/1 ``(E, m)`` mask (``(m,)`` for ``W`` of shape ``(m, d)``) zeroing ``round(fraction * m)``
    neurons drawn uniformly without replacement from ``generator``, ignoring the weights (only
    their shape is read). ``fraction`` is a number or one entry per model, as in
    :func:`magnitude_mask`.
    """
    return _random_mask(W, fraction, generator)


def _random_mask(W: torch.Tensor, fraction, generator: torch.Generator) -> torch.Tensor:
    """:func:`random_mask` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    squeeze = W.ndim == 2
    if squeeze:
        W = W[None]
    E, m, _ = W.shape
    fr = [fraction] * E if np.ndim(fraction) == 0 else list(fraction)
    if len(fr) != E:
        raise ValueError(
            f"fraction must be a number or have one entry per model ({E})")
    fr = [check_fraction("fraction", f) for f in fr]
    mask = torch.ones(E, m, dtype=W.dtype, device=W.device)
    for e in range(E):
        k = int(round(fr[e] * m))
        mask[e, torch.randperm(m, generator=generator)[:k]] = 0.0
    return mask[0] if squeeze else mask


# ------------------------------------------------------------------------------------------------
# neuron-feature alignment
# ------------------------------------------------------------------------------------------------


@boundary(W=_WEIGHTS, M=_FLOAT2)
def alignment(W: torch.Tensor, M: torch.Tensor) -> dict:
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
    return _alignment(W, M)


def _alignment(W: torch.Tensor, M: torch.Tensor) -> dict:
    """:func:`alignment` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    if W.shape[-1] != M.shape[0] or W.dtype != M.dtype:
        raise ValueError(f"W's last dimension ({W.shape[-1]}, {W.dtype}) must equal M's rows "
                         f"({M.shape[0]}, {M.dtype})")
    if M.shape[1] < 2:
        raise ValueError("M must hold at least two features")
    coef = W @ M
    proj = coef.abs()
    noise = (W - coef @ M.T).norm(dim=-1)
    top2 = proj.topk(2, dim=-1).values
    top, second = top2[..., 0], top2[..., 1]
    purity = top**2 / (proj**2).sum(-1).clamp_min(1e-30)
    return dict(proj=proj, noise=noise, dominant=proj.argmax(-1), top=top, second=second,
                ratio=top / second.clamp_min(1e-30), purity=purity)


@boundary(W=_WEIGHTS, M=_FLOAT2, ratio=Interval(float, 1), floor=fraction())
def strong_specialists(W: torch.Tensor, M: torch.Tensor, ratio: float = 2.0,
                       floor: float = 0.25) -> torch.Tensor:
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


def _strong_specialists(W: torch.Tensor, M: torch.Tensor, ratio: float = 2.0,
                        floor: float = 0.25) -> torch.Tensor:
    """:func:`strong_specialists` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    a = _alignment(W, M)
    K = M.shape[1]
    top = a["top"]
    biggest = top.max(dim=-1, keepdim=True).values
    strong = (a["ratio"] >= ratio) & (top >= floor * biggest)
    onehot = F.one_hot(a["dominant"], K).to(W.dtype)
    return (onehot * strong[..., None].to(W.dtype)).sum(-2)


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
    K = M.shape[1]
    if not 0 < n_minority < K:
        raise ValueError(
            f"n_minority must lie strictly between 0 and {K}, got {n_minority}")
    if W.shape[-1] != M.shape[0] or W.dtype != M.dtype:
        raise ValueError(
            f"W's last dimension ({W.shape[-1]}) must equal M's rows, same dtype")
    e = ((W @ M) ** 2).sum(-2)  # energy per feature, summed over neurons: (..., K)
    minor = e[..., K - n_minority:].mean(-1)
    major = e[..., :K - n_minority].mean(-1)
    return minor / major.clamp_min(1e-30)


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
    return cfg.n_signal ** 2 * p_min / (cfg.tau * cfg.weight_decay)


@boundary(W=Tensor("float", 3), M=_FLOAT2, n_minority=count(),
          specialist_ratio=Interval(float, 1), strong_floor=fraction())
def feature_summary(W: torch.Tensor, M: torch.Tensor, n_minority: int,
                    specialist_ratio: float = 2.0, strong_floor: float = 0.25) -> dict:
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
      ``top^2 / sum_k proj^2`` (:func:`alignment`); 1 when every neuron serves one feature.

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


def _feature_summary(W: torch.Tensor, M: torch.Tensor, n_minority: int,
                     specialist_ratio: float = 2.0, strong_floor: float = 0.25) -> dict:
    """:func:`feature_summary` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    K = M.shape[1]
    if not 0 < n_minority < K:
        raise ValueError(f"n_minority must lie strictly between 0 and {K}")
    a = _alignment(W, M)
    best = a["proj"].max(dim=1).values  # (E, K)
    counts = _strong_specialists(W, M, specialist_ratio, strong_floor)
    big = a["top"] >= strong_floor * a["top"].max(dim=1, keepdim=True).values
    pure = (big & (a["ratio"] >= specialist_ratio)).float().sum(1) / big.float().sum(1)
    maj = slice(0, K - n_minority)
    mino = slice(K - n_minority, K)
    out = dict(best_major=best[:, maj].mean(1), best_minor=best[:, mino].mean(1),
               spec_major=counts[:, maj].mean(1), spec_minor=counts[:, mino].mean(1),
               energy=energy_ratio(W, M, n_minority),
               single_fraction=(a["ratio"] >= specialist_ratio).float().mean(1),
               strong_purity=pure, mean_purity=a["purity"].mean(1),
               median_ratio=a["ratio"].median(1).values,
               noise=a["noise"].mean(1))
    return {k: v.cpu().numpy() for k, v in out.items()}


# ------------------------------------------------------------------------------------------------
# training on the synthetic data
# ------------------------------------------------------------------------------------------------


MASKS = ("magnitude", "random")


@dataclass
class EncoderRun(Result):
    """The outcome of :func:`train_encoders`: E models trained side by side.

    ``ratios`` and ``fractions`` (length E) say each model's imbalance ratio and pruning fraction;
    ``history`` holds, at each logged ``step``, the mean noise norm, the mean top and second
    projections and the median top/second ratio of every model (arrays ``(T, E)``), and every
    neuron's feature projections ``proj`` ``(T, E, m, K)`` and noise norm ``neuron_noise`` ``(T, E, m)``.
    """

    config: ContrastiveConfig
    M: torch.Tensor
    W: torch.Tensor
    A: torch.Tensor
    ratios: list
    fractions: list
    seeds: list
    history: dict = field(default_factory=dict)
    masks: list = field(default_factory=list)  #: each model's mask kind, "magnitude" or "random"

    @boundary(ratio=Interval(float, 1), fraction=fraction(), mask=InstanceOf(str))
    def select(self, ratio: float, fraction: float, mask: str = "magnitude") -> list[int]:
        """Indices of the models with this imbalance ratio and pruning fraction; for a fraction
        above zero, only those pruned with this ``mask`` kind ("magnitude" or "random")."""
        if mask not in MASKS:
            raise ValueError(f"mask must be one of {MASKS}, got {mask!r}")
        kinds = self.masks or ["magnitude"] * len(self.ratios)
        return [i for i, (r, f, k) in enumerate(zip(self.ratios, self.fractions, kinds))
                if r == ratio and f == fraction and (f == 0 or k == mask)]


@boundary(step=count(0))
def bias_schedule(step: int, cfg: ContrastiveConfig) -> float:
    """The relative BReLU threshold at ``step``: rises linearly from 0 to ``bias_max`` (Wen and Li
    also raise the bias during training), constant afterwards."""
    return _bias_schedule(step, cfg)


def _bias_schedule(step: int, cfg: ContrastiveConfig) -> float:
    """:func:`bias_schedule` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    if cfg.bias_ramp == 0:
        return cfg.bias_max
    return cfg.bias_max * min(1.0, step / cfg.bias_ramp)


@boundary(ratios=_Numbers(Interval(float, 1)), fractions=_Numbers(fraction()), seed=_RUN_SEED,
          replicates=Interval(int, 1, 999, optional=True), stream=Interval(int, 0, 99),
          independent=InstanceOf(bool))
def train_encoders(cfg: ContrastiveConfig, ratios, fractions, seed: int = 0,
                   replicates: int | None = None, hard_mask: bool = False,
                   masks=None, stream: int = 0, independent: bool = False) -> EncoderRun:
    """Train one encoder per (ratio, fraction) pair and replicate, all at once (batched).

    Each model sees fresh population samples every step (common random numbers across models);
    replicate ``j`` of every condition starts from the same initialization (seed ``seed*1000+j``),
    so a pruned and an unpruned model differ only in pruning. SGD with weight decay
    (:class:`gtlib.engine.StackedOptimizer`, trained by :func:`gtlib.engine.fit`); the target
    branch is the unpruned model under stop-gradient; the online branch is masked by
    :func:`magnitude_mask` every ``prune_every`` steps with the straight-through rule, the
    pruning remedy of Liao et al. (ICLR 2026). The history is recorded every ``log_every``
    updates and after the last one; the entry for step ``t`` holds the weights after ``t``
    updates.

    ``hard_mask=True`` is the ablation that the chapter argues against: the mask is applied to
    both branches and without the straight-through rule, so a masked neuron outputs zero in
    both views and receives no gradient at all while it is masked.

    ``masks`` (one entry per condition, default all "magnitude") chooses each pruned model's
    mask: "random" masks the same count of neurons drawn at random every ``prune_every`` steps
    (:func:`random_mask`, from a generator of its own, so the sample stream is unchanged): the
    control that tells what magnitude pruning adds to masking as such.

    ``stream`` chooses an independent draw of the same experiment (same dictionary ``M``):
    stream ``s`` starts replicate ``j`` from seed ``seed*1000 + s*R + j`` (``R`` replicates, as
    if the replicates of stream 0 continued) and draws its samples and random masks from
    generators of its own. Two streams of one condition are two independent sets of
    replicates: the chapter's measured null for a difference between conditions.

    ``independent=True`` gives every replicate samples of its own: codes, token positions and
    noise. The conditions of one replicate share all three (their codes differ only where
    their frequencies do), so pruned and unpruned stay paired, and the replicates are
    independent draws, as a standard error over replicates assumes. By default all models of
    the run share the codes (common random numbers) and each draws its own noise.

    Parameters
    ----------
    cfg : ContrastiveConfig
        The experiment's settings; a ContrastiveConfig.
    ratios : array_like
        Imbalance ratios; a tuple (at least 1 item) of items each a finite number >= 1.
    fractions : array_like
        Pruning fraction of each model; a tuple (at least 1 item) of items each a finite number in
        [0, 1].
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    replicates : int | None, default None
        Independent repetitions; an int in [1, 999] or None.
    hard_mask : bool, default False
        Whether to mask both branches without the straight-through rule (the ablation); a bool.
    masks : object, default None
        One entry per condition, ``"magnitude"`` or ``"random"`` (default: all ``"magnitude"``).
    stream : int, default 0
        Which independent draw of initializations and samples; an int in [0, 99].
    independent : bool, default False
        Whether each replicate draws its own samples (shared by its conditions); a bool.

    Returns
    -------
    EncoderRun
        The run: the trained weights and their history.

    References
    ----------
    Liao, Zhou, Zhang, Wang and Zhang (2026), "Theoretical Analysis of Contrastive Learning
    under Imbalanced Data: From Training Dynamics to a Pruning Solution".
    """
    cfg.validate()
    ratios, fractions = list(ratios), list(fractions)
    if len(ratios) != len(fractions):
        raise ValueError(f"ratios and fractions must be of equal length, got {len(ratios)} and "
                         f"{len(fractions)}")
    kinds = ["magnitude"] * len(ratios) if masks is None else list(masks)
    if len(kinds) != len(ratios) or any(k not in MASKS for k in kinds):
        raise ValueError(f"masks must hold one of {MASKS} per condition ({len(ratios)}), got "
                         f"{masks!r}")
    R = cfg.replicates if replicates is None else int(replicates)
    if (stream + 1) * R > 998 - 2 * stream:
        raise ValueError(f"stream {stream} with {R} replicates runs out of seeds: need "
                         f"(stream + 1) * replicates <= 998 - 2 * stream")
    first = seed * 1000 + stream * R  # seed of this stream's replicate 0
    conds = [(r, f, j) for j in range(R) for r, f in zip(ratios, fractions)]
    kinds = kinds * R
    E = len(conds)
    d, K, m = cfg.dim, cfg.n_features, cfg.neurons
    M = feature_dictionary(d, K, seed=seed)
    freqs = torch.stack([feature_frequencies(K, cfg.n_minority, cfg.base_freq, r)
                         for r, _, _ in conds])
    inits = []
    for j in range(R):
        g0 = torch.Generator().manual_seed(first + j)
        inits.append(torch.randn(m, d, generator=g0) * cfg.init_scale)
    W = torch.stack([inits[j] for _, _, j in conds])
    A = torch.zeros(E, d, d)
    g = torch.Generator().manual_seed(seed * 1000 + 999 - 2 * stream)
    g_mask = torch.Generator().manual_seed(seed * 1000 + 998 - 2 * stream)
    fr = [f for _, f, _ in conds]
    rep = [c[2] for c in conds] if independent else None
    W, A, history = _train(cfg, M, W, A, freqs, fr, kinds, g, g_mask, hard_mask, rep, 0,
                           cfg.steps)
    return EncoderRun(config=cfg, M=M, W=W, A=A, ratios=[c[0] for c in conds],
                      fractions=fr, seeds=[first + c[2] for c in conds], history=history,
                      masks=kinds)


def _train(cfg, M, W, A, freqs, fr, kinds, g, g_mask, hard_mask, rep, offset, steps):
    """The training loop of :func:`train_encoders` and :func:`continue_encoders`: ``steps``
    updates of the stacked models ``W``, ``A`` starting after ``offset`` updates (the threshold
    schedule and the pruning period count from the start of training). ``rep`` (one replicate
    index per model, or None) gives each replicate its own samples."""
    W, A = W.clone().requires_grad_(), A.clone().requires_grad_()
    E = W.shape[0]
    rand = [e for e, k in enumerate(kinds) if k == "random" and fr[e] > 0]
    rep_idx = None if rep is None else torch.tensor(rep)
    hist = {k: [] for k in ("step", "noise", "top", "second", "ratio", "proj", "neuron_noise")}
    opt = StackedOptimizer([W, A], "sgd", cfg.lr, weight_decay=cfg.weight_decay, members=E)
    mask = None

    def loss(step: int, _batch) -> torch.Tensor:
        """This step's InfoNCE per model, on fresh samples drawn from ``g``."""
        nonlocal mask
        # per-step calls go to the unchecked building blocks: the inputs are built here from a
        # validated config
        t = offset + step
        beta = _bias_schedule(t, cfg)
        if (t % cfg.prune_every == 0 or mask is None) and max(fr) > 0:
            mask = _magnitude_mask(W, fr)
            if rand:
                mask[rand] = _random_mask(W[rand], [fr[e] for e in rand], g_mask)
        if rep_idx is None:
            z = _sample_codes(freqs, cfg.batch, g)
            X1 = _make_views(M, z, cfg.n_tokens, cfg.n_signal, cfg.noise, g)
            X2 = _make_views(M, z, cfg.n_tokens, cfg.n_signal, cfg.noise, g)
        else:
            z = _sample_codes_per_replicate(freqs, rep_idx, cfg.batch, g)
            X1, X2 = (_views_per_replicate(M, z, rep_idx, cfg.n_tokens, cfg.n_signal,
                                           cfg.noise, g) for _ in range(2))
        if hard_mask and mask is not None:
            f1 = _encode(X1, W, A, beta) * mask[:, None, :]
            with torch.no_grad():
                f2 = _encode(X2, W, A, beta) * mask[:, None, :]
        else:
            f1 = _encode(X1, W, A, beta, mask)
            with torch.no_grad():
                f2 = _encode(X2, W, A, beta)
        return _infonce(f1, f2, cfg.tau)

    def record(step: int, _due) -> None:
        """The neuron metrics after ``offset + step`` updates (a continuation does not record
        its start again)."""
        if offset and step == 0:
            return
        with torch.no_grad():
            a = _alignment(W, M)
        hist["step"].append(offset + step)
        hist["noise"].append(a["noise"].mean(1).numpy())
        hist["top"].append(a["top"].mean(1).numpy())
        hist["second"].append(a["second"].mean(1).numpy())
        hist["ratio"].append(a["ratio"].median(1).values.numpy())
        hist["proj"].append(a["proj"].numpy())
        hist["neuron_noise"].append(a["noise"].numpy())

    fit(loss, opt, steps, check=record, every=cfg.log_every)
    return W.detach(), A.detach(), {k: np.array(v) for k, v in hist.items()}


def _sample_codes_per_replicate(freqs: torch.Tensor, rep: torch.Tensor, n: int,
                                generator: torch.Generator) -> torch.Tensor:
    """Codes ``(E, n, K)`` for the E profiles ``freqs``: model ``e`` uses the uniform numbers
    and signs of its replicate ``rep[e]``, so the models of one replicate share their codes and
    different replicates draw independent ones."""
    K, R = freqs.shape[-1], int(rep.max()) + 1
    u = torch.rand(R, n, K, generator=generator)
    sign = torch.randint(0, 2, (R, n, K), generator=generator) * 2 - 1
    return ((u[rep] < freqs[:, None, :]) * sign[rep]).float()


def _views_per_replicate(M: torch.Tensor, z: torch.Tensor, rep: torch.Tensor, n_tokens: int,
                         n_signal: int, noise: float, generator: torch.Generator) -> torch.Tensor:
    """One view ``(E, n, L, d)`` of the codes ``z`` ``(E, n, K)``, as :func:`make_views`, except
    that the models of one replicate (``rep[e]``) share their token positions and noise: the
    conditions of a replicate differ only in their codes, and each replicate draws its own."""
    R, n, d = int(rep.max()) + 1, z.shape[1], M.shape[0]
    order = torch.rand(R, n, n_tokens, generator=generator).argsort(-1)
    carries = (order < n_signal).to(z.dtype)[rep]  # exactly n_signal tokens per sample
    eps = (torch.randn(R, n, n_tokens, d, generator=generator) * (noise / math.sqrt(d)))[rep]
    return carries[..., None] * (z @ M.T)[..., None, :] + eps


@boundary(steps=count(), seed=_RUN_SEED, stream=Interval(int, 0, 99))
def continue_encoders(run: EncoderRun, models, steps: int, seed: int = 0,
                      stream: int = 0) -> EncoderRun:
    """Continue some models of a run for ``steps`` more updates, on samples of their own.

    The models keep their weights, attention, ratio, pruning fraction and mask kind, and the
    threshold schedule and pruning period go on counting from the run's last step, so the
    result is the same experiment run longer (not a retraining from step 0). Each replicate
    draws its own samples (the continued models of one replicate share theirs), from a
    generator fixed by ``seed`` and ``stream`` (pick a stream no other run of the seed uses).
    The history holds the run's records of these models followed by the new ones.

    Parameters
    ----------
    run : EncoderRun
        The training run to continue.
    models : array_like
        Indices of the models of ``run`` to continue; a list of ints.
    steps : int
        Further SGD steps; an int >= 1.
    seed : int, default 0
        Seed of the continuation's samples and random masks; an int in [0, 2**63 - 1].
    stream : int, default 0
        Which draw of samples for this seed; an int in [0, 99].

    Returns
    -------
    EncoderRun
        The continued models; ``config.steps`` counts all their updates.

    References
    ----------
    Liao, Zhou, Zhang, Wang and Zhang (2026), "Theoretical Analysis of Contrastive Learning
    under Imbalanced Data: From Training Dynamics to a Pruning Solution".
    """
    if not isinstance(run, EncoderRun):
        raise TypeError(f"run must be an EncoderRun, got {type(run).__name__}")
    idx = list(models) if isinstance(models, (list, tuple, range)) else None
    if not idx or any(isinstance(i, bool) or not isinstance(i, (int, np.integer))
                      or not 0 <= i < len(run.ratios) for i in idx) or len(set(idx)) < len(idx):
        raise ValueError(f"models must be a list of distinct model indices in [0, "
                         f"{len(run.ratios)}), got {models!r}")
    cfg, done = run.config, int(run.history["step"][-1])
    K = cfg.n_features
    freqs = torch.stack([feature_frequencies(K, cfg.n_minority, cfg.base_freq, run.ratios[i])
                         for i in idx])
    kinds = [(run.masks or ["magnitude"] * len(run.ratios))[i] for i in idx]
    fr = [run.fractions[i] for i in idx]
    seeds = [run.seeds[i] for i in idx]
    rep = [sorted(set(seeds)).index(s) for s in seeds]
    g = torch.Generator().manual_seed(seed * 1000 + 799 - 2 * stream)  # not a training stream's
    g_mask = torch.Generator().manual_seed(seed * 1000 + 798 - 2 * stream)
    W, A, new = _train(cfg, run.M, run.W[idx], run.A[idx], freqs, fr, kinds, g, g_mask,
                       False, rep, done, steps)
    old = {k: np.asarray(v)[:, idx] if k != "step" else np.asarray(v)
           for k, v in run.history.items()}
    history = {k: np.concatenate([old[k], new[k]]) for k in new}
    return EncoderRun(config=replace(cfg, steps=done + steps), M=run.M, W=W, A=A,
                      ratios=[run.ratios[i] for i in idx], fractions=fr, seeds=seeds,
                      history=history, masks=kinds)


@boundary(level=fraction("right"))
def stage_boundaries(step, top, ratio, level: float = 0.9) -> tuple[int, int]:
    """The ends of stages I and II, read off the measured curves of one model.

    Stage I (feature growth) ends at the first logged step where the mean top projection reaches
    ``level`` of its maximum over training; stage II (separation) ends at the first later step where
    the median top/second ratio reaches ``level`` of its maximum; stage III (convergence) follows.
    """
    return _stage_boundaries(step, top, ratio, level)


def _stage_boundaries(step, top, ratio, level: float = 0.9) -> tuple[int, int]:
    """:func:`stage_boundaries` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    step, top, ratio = map(np.asarray, (step, top, ratio))
    if not (step.shape == top.shape == ratio.shape) or step.ndim != 1 or len(step) < 3:
        raise ValueError("step, top and ratio must be 1-D arrays of equal length >= 3")
    for name, v in (("step", step), ("top", top), ("ratio", ratio)):
        if v.dtype.kind not in "iuf":
            raise TypeError(f"{name} must hold numbers, got dtype {v.dtype}")
        if not np.isfinite(v).all():
            raise ValueError(f"{name} must hold finite numbers, got NaN or inf")
    i1 = int(np.argmax(top >= level * top.max()))
    later = ratio[i1:] >= level * ratio[i1:].max()
    i2 = i1 + int(np.argmax(later))
    return int(step[i1]), int(step[i2])


@boundary(X=Tensor("float", 3))
def representations(run: EncoderRun, X: torch.Tensor) -> torch.Tensor:
    """Unpruned representations of tokens ``X`` ``(n, L, d)`` under every model: ``(E, n, m)``.

    Parameters
    ----------
    run : EncoderRun
        The training run (:func:`train_encoders`); a training run, as returned by the chapter's
        training function; an EncoderRun.
    X : torch.Tensor
        Tokens, ``(n, L, d)``; a torch.Tensor (non-empty, floating-point, 3-dimensional, finite).

    Returns
    -------
    torch.Tensor
        The representations, ``(E, n, m)``.
    """
    E, d = run.W.shape[0], run.W.shape[-1]
    if X.shape[-1] != d or X.dtype != run.W.dtype:
        raise ValueError(f"X must be (n, L, d = {d}) tokens of {run.W.dtype}, got "
                         f"{tuple(X.shape)} of {X.dtype}")
    beta = _bias_schedule(run.config.steps, run.config)
    with torch.no_grad():
        return _encode(X[None].expand(E, *X.shape), run.W, run.A, beta)


@boundary(f_train=Tensor("float", (2, 3)), y_train=Tensor("int", 1),
          f_test=Tensor("float", (2, 3)), n_classes=count(), ridge=positive())
def ridge_probe(f_train: torch.Tensor, y_train: torch.Tensor, f_test: torch.Tensor,
                n_classes: int, ridge: float = 1e-2) -> torch.Tensor:
    """A linear probe: one-vs-rest ridge regression on standardized features, closed form.

    Batched over a leading model axis: ``f_*`` of shape ``(E, n, m)`` or ``(n, m)``. Returns the
    predicted classes of ``f_test`` (``(E, n_test)`` or ``(n_test,)``).
    """
    squeeze = f_train.ndim == 2
    if f_train.shape[:-2] + f_train.shape[-1:] != f_test.shape[:-2] + f_test.shape[-1:] or \
            f_train.dtype != f_test.dtype:
        raise ValueError(f"f_train and f_test must be (n, m) or (E, n, m) with the same E, m and "
                         f"dtype, got {tuple(f_train.shape)} {f_train.dtype} and "
                         f"{tuple(f_test.shape)} {f_test.dtype}")
    check_labels("y_train", y_train, n_classes, n=f_train.shape[-2])
    if squeeze:
        f_train, f_test = f_train[None], f_test[None]
    mu = f_train.mean(1, keepdim=True)
    sd = f_train.std(1, keepdim=True).clamp_min(1e-6)
    a, b = (f_train - mu) / sd, (f_test - mu) / sd
    ones = torch.ones(*a.shape[:2], 1, dtype=a.dtype)
    a = torch.cat([a, ones], -1)
    b = torch.cat([b, torch.ones(*b.shape[:2], 1, dtype=b.dtype)], -1)
    Y = F.one_hot(y_train, n_classes).to(a.dtype) * 2 - 1
    gram = a.transpose(1, 2) @ a + ridge * a.shape[1] * torch.eye(a.shape[-1], dtype=a.dtype)
    coef = torch.linalg.solve(gram, a.transpose(1, 2) @ Y[None].expand(a.shape[0], *Y.shape))
    pred = (b @ coef).argmax(-1)
    return pred[0] if squeeze else pred


@boundary(seed=_PROBE_SEED)
def feature_probe_accuracy(run: EncoderRun, seed: int = 0) -> np.ndarray:
    """Per-feature accuracy ``(E, K)`` of a linear probe that names the feature of a single-feature
    sample (balanced over features), trained and tested on fresh samples."""
    cfg = run.config
    g = torch.Generator().manual_seed(10_000 + seed)
    args = cfg.probe_samples, cfg.n_tokens, cfg.n_signal, cfg.noise, g
    Xtr, ytr = single_feature_samples(run.M, *args)
    Xte, yte = single_feature_samples(run.M, *args)
    pred = ridge_probe(representations(run, Xtr), ytr, representations(run, Xte), cfg.n_features)
    K = cfg.n_features
    correct = (pred == yte[None]).float()
    return np.stack([[correct[e, yte == k].mean().item() for k in range(K)]
                     for e in range(pred.shape[0])])


def energy_curves(run: EncoderRun) -> np.ndarray:
    """The minority/majority energy ratio of every model at every logged step, ``(T, E)``.

    The same quantity as :func:`energy_ratio`, computed from the logged projections
    ``run.history["proj"]`` (``|<w_r, M_k>|``, whose squares are the energies), so its last row
    is the energy ratio of the trained weights. The chapter reads the effect of pruning along a
    longer run from it: the paired gain at every step, not only at the end.

    Parameters
    ----------
    run : EncoderRun
        The training run.

    Returns
    -------
    np.ndarray
        The energy ratios, ``(T, E)``.

    References
    ----------
    Liao, Zhou, Zhang, Wang and Zhang (2026), "Theoretical Analysis of Contrastive Learning
    under Imbalanced Data: From Training Dynamics to a Pruning Solution".
    """
    if not isinstance(run, EncoderRun):
        raise TypeError(f"run must be an EncoderRun, got {type(run).__name__}")
    P, k = np.asarray(run.history["proj"]), run.config.n_features - run.config.n_minority
    e = (P.astype(np.float64) ** 2).sum(axis=2)  # energy per feature: (T, E, K)
    return e[..., k:].mean(-1) / np.maximum(e[..., :k].mean(-1), 1e-30)


def best_alignment_curves(run: EncoderRun) -> dict:
    """How strongly each group of features is carried, at every logged step.

    Returns ``major`` and ``minor``, each ``(T, E)``: the mean over the group's features of the
    feature's best alignment ``max_r |<w_r, M_k>|`` (from ``run.history["proj"]``), and
    ``growth`` ``(E,)``, the minority curve's last value over its first. A minority feature is
    *learned* when ``growth > 1``: it ends above its initialization, where weight decay alone
    would shrink it by ``(1 - lr * weight_decay) ** steps``.

    Parameters
    ----------
    run : EncoderRun
        The training run.

    Returns
    -------
    dict
        ``major``, ``minor`` and ``growth``, as described above.
    """
    if not isinstance(run, EncoderRun):
        raise TypeError(f"run must be an EncoderRun, got {type(run).__name__}")
    P, k = np.asarray(run.history["proj"]), run.config.n_features - run.config.n_minority
    best = P.max(axis=2)  # (T, E, K)
    major, minor = best[..., :k].mean(-1), best[..., k:].mean(-1)
    return {"major": major, "minor": minor, "growth": minor[-1] / minor[0]}


@boundary(ratio=Interval(float, 1), fraction=fraction(), mask=InstanceOf(str))
def paired(run: EncoderRun, values, ratio: float, fraction: float,
           mask: str = "magnitude") -> tuple[np.ndarray, np.ndarray]:
    """Per-replicate values of the unpruned and the pruned models at one ratio, paired.

    ``values`` is a per-model array ``(E, ...)``; the result is ``(unpruned, pruned)``, each
    ``(R, ...)``, where row ``j`` of both comes from the same initialization and the same
    samples, so ``pruned - unpruned`` is the effect of pruning alone.

    Parameters
    ----------
    run : EncoderRun
        The training run.
    values : object
        A per-model array ``(E, ...)``.
    ratio : float
        Imbalance ratio; a finite number >= 1.
    fraction : float
        Fraction; a finite number in [0, 1].
    mask : str, default 'magnitude'
        The pruned models' mask (``"magnitude"`` or ``"random"``); a str.

    Returns
    -------
    tuple[np.ndarray, np.ndarray]
        The unpruned and the pruned values, replicate by replicate.

    Raises
    ------
    ValueError
        If either condition was not trained or the replicates do not pair up.
    """
    a, b = run.select(ratio, 0.0), run.select(ratio, fraction, mask)
    if not a or not b:
        raise ValueError(f"no unpruned or no pruned ({fraction}) model at ratio {ratio}")
    if [run.seeds[i] for i in a] != [run.seeds[i] for i in b]:
        raise ValueError("the unpruned and pruned replicates do not share initializations")
    v = np.asarray(values)
    if v.ndim == 0 or len(v) != len(run.ratios):
        raise ValueError(f"values must have one row per model ({len(run.ratios)}), got shape "
                         f"{v.shape}")
    return v[a], v[b]


@boundary(values=Tensor(numpy=True, finite=False))
def condition_means(run: EncoderRun, values: np.ndarray) -> dict:
    """Average a per-model array ``(E, ...)`` over replicates: ``{(ratio, fraction): mean}``
    (keys ``(ratio, fraction, "random")`` for random-mask conditions)."""
    if values.ndim == 0 or len(values) != len(run.ratios):
        raise ValueError(f"values must have one row per model ({len(run.ratios)}), got shape "
                         f"{tuple(values.shape)}")
    return {key: np.mean(values[run.select(*key)], axis=0) for key in _condition_keys(run)}


def _condition_keys(run: EncoderRun) -> list:
    """``(ratio, fraction)`` for unpruned and magnitude-pruned conditions, ``(ratio, fraction,
    "random")`` for random-mask ones, in training order."""
    kinds = run.masks or ["magnitude"] * len(run.ratios)
    return list(dict.fromkeys((r, f) if f == 0 or k == "magnitude" else (r, f, k)
                              for r, f, k in zip(run.ratios, run.fractions, kinds)))


# ------------------------------------------------------------------------------------------------
# real data: long-tailed MNIST-1D
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LongTailConfig(Config):
    """Contrastive pretraining on long-tailed MNIST-1D, then a linear probe on balanced data.

    Parameters
    ----------
    n_train : int, default 4000
        Number of training examples; an int >= 1.
    n_test : int, default 1000
        Number of test examples; an int >= 1.
    imbalance : float, default 20.0
        Long-tail ratio (class 0 head, class 9 tail); a finite number >= 1.
    width : int, default 256
        Hidden neurons of the MLP encoder (the representation); an int >= 1.
    out_dim : int, default 64
        Projection dimension fed to InfoNCE; an int >= 1.
    batch : int, default 256
        Minibatch size; an int >= 2.
    steps : int, default 4000
        Number of optimizer steps; an int >= 1.
    lr : float, default 0.05
        Learning rate; a finite number > 0.
    momentum : float, default 0.9
        SGD momentum; a finite number in [0, 1).
    weight_decay : float, default 0.0005
        Weight decay; a finite number >= 0.
    tau : float, default 0.2
        Temperature of the InfoNCE loss; a finite number > 0.
    prune_fraction : float, default 0.5
        Fraction of neurons pruned; a finite number in [0, 1].
    prune_every : int, default 50
        Steps between two prunings; an int >= 1.
    shift : int, default 8
        Augmentation: random circular shift of up to +-shift samples; an int >= 0.
    scale : float, default 0.15
        Augmentation: amplitude scaled by 1 +- scale; a finite number in [0, 1).
    jitter : float, default 0.2
        Augmentation: added Gaussian noise std; a finite number >= 0.
    head_classes : int, default 3
        Classes counted as the head; an int >= 1.
    tail_classes : int, default 3
        Classes counted as the tail; an int >= 1.
    """

    FULL = dict(n_train=10000, n_test=4000, width=1024, out_dim=128, steps=8000, batch=512)

    n_train: int = param(4000, count())
    n_test: int = param(1000, count())
    #: long-tail ratio (class 0 head, class 9 tail)
    imbalance: float = param(20.0, Interval(float, 1))
    width: int = param(256, count())  #: hidden neurons of the MLP encoder (the representation)
    out_dim: int = param(64, count())  #: projection dimension fed to InfoNCE
    batch: int = param(256, count(2))
    steps: int = param(4000, count())
    lr: float = param(0.05, positive())
    momentum: float = param(0.9, fraction("left"))
    weight_decay: float = param(5e-4, nonnegative())
    tau: float = param(0.2, positive())
    prune_fraction: float = param(0.5, fraction())
    prune_every: int = param(50, count())
    #: augmentation: random circular shift of up to +-shift samples
    shift: int = param(8, count(0))
    scale: float = param(0.15, fraction("left"))  #: augmentation: amplitude scaled by 1 +- scale
    jitter: float = param(0.2, nonnegative())  #: augmentation: added Gaussian noise std
    head_classes: int = param(3, count())
    tail_classes: int = param(3, count())

    def _check_together(self) -> None:
        if self.head_classes + self.tail_classes > 10:
            self._refuse("tail_classes", f"<= 10 - head_classes = {10 - self.head_classes} "
                         "(MNIST-1D has 10 classes)")


@boundary(x=_FLOAT2, generator=_GENERATOR, shift=count(0), scale=fraction("left"),
          jitter=nonnegative())
def augment_1d(x: torch.Tensor, generator: torch.Generator, shift: int, scale: float,
               jitter: float) -> torch.Tensor:
    """MNIST-1D-style augmentation: random circular shift, amplitude scaling and Gaussian noise.

    ``x`` is ``(n, length)``; ``scale`` in [0, 1) keeps the amplitude factor ``1 +- scale``
    positive.
    """
    return _augment_1d(x, generator, shift, scale, jitter)


def _augment_1d(x: torch.Tensor, generator: torch.Generator, shift: int, scale: float,
                jitter: float) -> torch.Tensor:
    """:func:`augment_1d` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    n, L = x.shape
    s = torch.randint(-shift, shift + 1, (n,), generator=generator)
    idx = (torch.arange(L)[None, :] - s[:, None]) % L
    x = torch.gather(x, 1, idx)
    x = x * (1 + scale * (2 * torch.rand(n, 1, generator=generator) - 1))
    return x + jitter * torch.randn(x.shape, generator=generator)


def _encoder_init(cfg: LongTailConfig, dim: int, seed: int, E: int):
    """The encoders' shared initialization, drawn from a generator seeded with ``seed`` (which
    goes on to draw the minibatches and augmentations)."""
    h, o = cfg.width, cfg.out_dim
    g = torch.Generator().manual_seed(seed)
    W1 = (torch.randn(h, dim, generator=g) / math.sqrt(dim)).expand(E, h, dim).clone()
    W2 = (torch.randn(o, h, generator=g) / math.sqrt(h)).expand(E, o, h).clone()
    return g, W1, W2


@boundary(seed=SEED, bias_scale=Interval(float, 0))
def random_encoder_accuracy(cfg: LongTailConfig, seed: int = 0,
                            bias_scale: float = 0.0) -> np.ndarray:
    """Per-class linear-probe test accuracy of an untrained encoder of :func:`train_longtail`.

    The encoder is the one :func:`train_longtail` starts from with the same ``seed``
    (``acc_random`` there); another seed draws another random encoder, the null of "contrastive
    pretraining helps": two random encoders differ only by their draw.

    Parameters
    ----------
    cfg : LongTailConfig
        The long-tail configuration (width and data sizes are used).
    seed : int
        Seed of the initialization.
    bias_scale : float, default 0.0
        ``0`` keeps the zero biases that pretraining starts from. Above ``0``, every hidden
        neuron gets a random bias, ``bias_scale`` times a standard normal draw times the
        standard deviation of that neuron's pre-activation on the training inputs, so that each
        neuron fires on its own random share of the data: a random feature map that does not
        rely on the zero bias.

    Returns
    -------
    numpy.ndarray
        Shape ``(10,)``: test accuracy of the probe on each class.
    """
    if not isinstance(cfg, LongTailConfig):
        raise TypeError(f"cfg must be a LongTailConfig, got {type(cfg).__name__}")
    ds = mnist1d(cfg.n_train, cfg.n_test, device="cpu")
    g, W1, _ = _encoder_init(cfg, ds.dim, seed, 1)
    with torch.no_grad():
        pre = lambda x: torch.einsum("end,ehd->enh", x, W1)  # noqa: E731
        b = torch.zeros(cfg.width)
        if bias_scale > 0:  # drawn after the weights, from the same generator
            z = torch.randn(cfg.width, generator=g)
            b = bias_scale * z * pre(ds.x[None])[0].std(0)
        hid = lambda x: F.relu(pre(x) + b)  # noqa: E731
        return _probe_per_class(hid(ds.x[None]), hid(ds.x_test[None]), ds)[0]


@boundary(prune_fractions=_Numbers(fraction()), seed=SEED, balanced=InstanceOf(bool))
def train_longtail(cfg: LongTailConfig, prune_fractions=(0.0, 0.5), seed: int = 0,
                   balanced: bool = False, masks=None) -> dict:
    """Contrastive pretraining on long-tailed MNIST-1D, then per-class linear probes.

    Contrastive pretraining of MLP encoders (one per pruning fraction, batched, same init and
    same minibatches) on long-tailed MNIST-1D; then per-class linear-probe test accuracy.

    The probe (ridge, :func:`ridge_probe`) is fit on the *balanced* training split and scored on the
    balanced test split. Returns ``{"acc": (E, 10), "acc_random": (10,), "counts": per-class
    pretraining counts, "fractions"}``; ``acc_random`` is the same probe on the randomly
    initialized encoder (the shared starting point): the control that pretraining must beat.

    Training is SGD with momentum and weight decay (:class:`gtlib.engine.StackedOptimizer`, one
    member per pruning fraction) for ``steps`` updates of :func:`gtlib.engine.fit`; each step draws
    a minibatch with replacement and its two augmented views from one generator, and the
    magnitude mask of Liao et al. (ICLR 2026) is refreshed every ``prune_every`` steps.

    ``balanced=True`` is the reference without imbalance: pretraining uses a *balanced* subsample
    of the same size as the long-tailed one (``n // 10`` points of every class, drawn with
    ``seed``), and everything else is unchanged. ``masks`` (one entry per pruning fraction,
    default all "magnitude") puts a :func:`random_mask` of the same size in place of the
    magnitude mask, redrawn as often, from a generator of its own.

    Parameters
    ----------
    cfg : LongTailConfig
        The experiment's settings; a LongTailConfig.
    prune_fractions : array_like, default (0.0, 0.5)
        Pruning fraction of each model; a tuple (at least 1 item) of items each a finite number in
        [0, 1].
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    balanced : bool, default False
        Whether to pretrain on a balanced subsample instead (the reference); a bool.
    masks : object, default None
        One entry per pruning fraction, ``"magnitude"`` or ``"random"`` (default: all
        ``"magnitude"``).

    Returns
    -------
    dict
        ``acc``, ``acc_random``, ``counts`` and ``fractions``, as described above.

    References
    ----------
    Liao, Zhou, Zhang, Wang and Zhang (2026), "Theoretical Analysis of Contrastive Learning
    under Imbalanced Data: From Training Dynamics to a Pruning Solution".
    Jiang, Chen, Mortazavi and Wang (2021), "Self-Damaging Contrastive Learning".
    """
    kinds = ["magnitude"] * len(prune_fractions) if masks is None else list(masks)
    if len(kinds) != len(prune_fractions) or any(k not in MASKS for k in kinds):
        raise ValueError(f"masks must hold one of {MASKS} per pruning fraction "
                         f"({len(prune_fractions)}), got {masks!r}")
    ds = mnist1d(cfg.n_train, cfg.n_test, device="cpu")
    lt = long_tailed(ds, cfg.imbalance, seed=seed)
    if balanced:
        gb = torch.Generator().manual_seed(seed)
        per = lt.n // ds.num_classes
        idx = [torch.nonzero(ds.y == k).flatten() for k in range(ds.num_classes)]
        if min(len(i) for i in idx) < per:
            raise ValueError(f"balanced=True needs {per} training points of every class")
        lt = ds.subset(torch.cat([i[torch.randperm(len(i), generator=gb)[:per]] for i in idx]))
    fr = [float(f) for f in prune_fractions]
    E, h = len(fr), cfg.width
    g, W1, W2 = _encoder_init(cfg, ds.dim, seed, E)
    params = [W1.requires_grad_(), torch.zeros(E, h, requires_grad=True), W2.requires_grad_()]
    opt = StackedOptimizer(params, "sgd", cfg.lr, cfg.momentum, cfg.weight_decay, members=E)

    def hidden(x, mask=None):
        hid = F.relu(torch.einsum("end,ehd->enh", x, params[0]) + params[1][:, None, :])
        return hid if mask is None else _straight_through_mask(hid, mask[:, None, :])

    with torch.no_grad():
        acc_random = _probe_per_class(hidden(ds.x[None]), hidden(ds.x_test[None]), ds)[0]
    mask = None
    rand = [e for e, k in enumerate(kinds) if k == "random" and fr[e] > 0]
    g_mask = torch.Generator().manual_seed(seed * 1000 + 998)
    eye = torch.arange(cfg.batch).repeat(E)
    # one minibatch for all E encoders, drawn with replacement from g (one row)
    batches = ReplacementBatches(lt.n, cfg.batch, [g])

    def loss(step: int, idx: torch.Tensor) -> torch.Tensor:
        """Each encoder's InfoNCE on two augmented views of this step's minibatch."""
        nonlocal mask
        if step % cfg.prune_every == 0:  # per-step calls go to the unchecked building blocks
            mask = _magnitude_mask(params[0], fr)
            if rand:
                mask[rand] = _random_mask(params[0][rand], [fr[e] for e in rand], g_mask)
        xb = lt.x[idx[0]]
        x1 = _augment_1d(xb, g, cfg.shift, cfg.scale, cfg.jitter)[None].expand(E, -1, -1)
        x2 = _augment_1d(xb, g, cfg.shift, cfg.scale, cfg.jitter)[None].expand(E, -1, -1)
        z1 = F.normalize(hidden(x1, mask) @ params[2].transpose(1, 2), dim=-1)
        with torch.no_grad():
            z2 = F.normalize(hidden(x2) @ params[2].transpose(1, 2), dim=-1)
        logits = z1 @ z2.transpose(1, 2) / cfg.tau
        ce = F.cross_entropy(logits.reshape(-1, cfg.batch), eye, reduction="none")
        return ce.view(E, cfg.batch).sum(1) / cfg.batch

    fit(loss, opt, cfg.steps, batches)
    with torch.no_grad():
        ftr = hidden(ds.x[None].expand(E, -1, -1))
        fte = hidden(ds.x_test[None].expand(E, -1, -1))
    acc = _probe_per_class(ftr, fte, ds)
    return {"acc": acc, "acc_random": acc_random,
            "counts": torch.bincount(lt.y, minlength=ds.num_classes).numpy(), "fractions": fr,
            "masks": kinds}


def _probe_per_class(ftr: torch.Tensor, fte: torch.Tensor, ds) -> np.ndarray:
    """Per-class test accuracy ``(E, classes)`` of the ridge probe on features ``(E, n, h)``."""
    pred = ridge_probe(ftr, ds.y, fte, ds.num_classes)
    return np.stack([[(pred[e, ds.y_test == k] == k).float().mean().item()
                      for k in range(ds.num_classes)] for e in range(pred.shape[0])])


# ------------------------------------------------------------------------------------------------
# summaries used by the chapter's claims
# ------------------------------------------------------------------------------------------------


@boundary(seed=_PROBE_SEED)
def condition_table(run: EncoderRun, seed: int = 0) -> dict:
    """Every condition's replicate-averaged metrics: ``{(ratio, fraction): {name: value}}``.

    Names: those of :func:`feature_summary`, plus ``probe_major`` / ``probe_minor`` (mean linear-probe
    accuracy on single-feature samples of majority / minority features, :func:`feature_probe_accuracy`).

    Parameters
    ----------
    run : EncoderRun
        The training run (:func:`train_encoders`); a training run, as returned by the chapter's
        training function; an EncoderRun.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].

    Returns
    -------
    dict
        ``{(ratio, fraction): {name: value}}``.
    """
    cfg = run.config
    summ = _feature_summary(run.W, run.M, cfg.n_minority, cfg.specialist_ratio,
                                       cfg.strong_floor)
    acc = feature_probe_accuracy(run, seed)
    K, n_min = cfg.n_features, cfg.n_minority
    summ["probe_major"] = acc[:, :K - n_min].mean(1)
    summ["probe_minor"] = acc[:, K - n_min:].mean(1)
    table = {}
    for key in _condition_keys(run):
        idx = run.select(*key)
        table[key] = {name: float(np.mean(v[idx])) for name, v in summ.items()}
    return table


@boundary(fraction=fraction())
def stage_curves(run: EncoderRun, fraction: float = 0.0) -> dict:
    """Mean curves over the unpruned (``fraction``) models of all ratios, and the stage boundaries.

    Returns ``step``, ``noise``, ``top``, ``second``, ``ratio`` (each ``(T,)``), the stage ends
    ``t1``, ``t2`` from :func:`stage_boundaries`, and ``noise_at_t1_rel`` (noise norm at ``t1``
    over its initial value) with ``ratio_init`` / ``ratio_final`` (min and max over those models).

    Parameters
    ----------
    run : EncoderRun
        The training run (:func:`train_encoders`); a training run, as returned by the chapter's
        training function; an EncoderRun.
    fraction : float, default 0.0
        Fraction; a finite number in [0, 1].

    Returns
    -------
    dict
        The keys listed above.

    References
    ----------
    Liao, Zhou, Zhang, Wang and Zhang (2026), "Theoretical Analysis of Contrastive Learning
    under Imbalanced Data: From Training Dynamics to a Pruning Solution".
    """
    idx = [i for i, f in enumerate(run.fractions) if f == fraction]
    if not idx:
        raise ValueError(f"no model was trained with pruning fraction {fraction}")
    h = run.history
    c = {k: h[k][:, idx].mean(1) for k in ("noise", "top", "second", "ratio")}
    c["step"] = h["step"]
    t1, t2 = _stage_boundaries(h["step"], c["top"], c["ratio"])
    i1 = int(np.searchsorted(h["step"], t1))
    c.update(t1=t1, t2=t2, noise_at_t1_rel=float(c["noise"][i1] / c["noise"][0]),
             ratio_init_max=float(h["ratio"][0, idx].max()),
             ratio_final_min=float(h["ratio"][-1, idx].min()))
    return c


# ------------------------------------------------------------------------------------------------
# figures
# ------------------------------------------------------------------------------------------------


@boundary(ax=_Axes(), proj=Tensor("float", 2, numpy=True), n_minority=count(0),
          vmax=positive(optional=True))
def draw_alignment(ax, proj, n_minority: int, title: str | None = None, vmax: float | None = None):
    """Heatmap of ``|<w_r, M_k>|`` (neurons x features), neurons sorted by dominant feature.

    Minority features (the last ``n_minority`` columns) sit right of a dashed line.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The matplotlib axes to draw on; a matplotlib Axes.
    proj : torch.Tensor
        Projections ``|<w_r, M_k>|``, ``(m, K)``; a torch.Tensor or numpy array (non-empty,
        floating-point, 2-dimensional, finite).
    n_minority : int
        Number of minority (rare) features; an int >= 0.
    title : str | None, default None
        Title of the axes; a str or None.
    vmax : float | None, default None
        Top of the colour scale (default: the largest projection); a finite number > 0 or None.

    Returns
    -------
    matplotlib.image.AxesImage
        The heatmap (for a colour bar).
    """
    proj = proj.detach().cpu().numpy() if isinstance(proj, torch.Tensor) else proj
    if n_minority >= proj.shape[1]:
        raise ValueError(f"n_minority must be < the number of features ({proj.shape[1]}), got "
                         f"{n_minority}")
    order = np.lexsort((-proj.max(1), proj.argmax(1)))
    im = ax.imshow(proj[order], aspect="auto", cmap="viridis", vmin=0,
                   vmax=vmax if vmax is not None else proj.max(), interpolation="nearest")
    from matplotlib.ticker import MaxNLocator

    K = proj.shape[1]
    ax.axvline(K - n_minority - 0.5, color="white", ls="--", lw=1.2)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("feature k (minority right of dashes)")
    ax.set_ylabel("neuron r (sorted)")
    ax.grid(False)
    if title:
        ax.set_title(title, fontsize=9)
    return im
