"""Contrastive imbalance: the argument checks the sections share, and the configuration."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..checks import (
    Constraint,
    InstanceOf,
    Interval,
    Sequence,
    Tensor,
    count,
    fraction,
    nonnegative,
    positive,
    tuple_of,
)
from ..config import Config, param

__all__ = ["ContrastiveConfig"]


class _Mask(Tensor):
    """A floating-point 0/1 pruning mask (see ``encoder._magnitude_mask``)."""

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


_PROBE_SEED = Interval(
    int, 0, 2**63 - 1 - 10_000
)  # the probe data is seeded 10_000 + seed


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

    FULL = dict(
        dim=128,
        n_features=32,
        n_minority=16,
        base_freq=0.06,
        n_tokens=8,
        n_signal=3,
        neurons=256,
        batch=512,
        steps=4000,
        replicates=6,
        bias_ramp=2000,
        probe_samples=4000,
    )

    dim: int = param(48, count())  #: ambient dimension d
    n_features: int = param(12, count())  #: dictionary size K
    #: the last n_minority features are the minority ones
    n_minority: int = param(6, count())
    #: probability q that a majority feature is active in a sample
    base_freq: float = param(0.15, fraction("neither"))
    n_tokens: int = param(4, count())  #: tokens per sample L
    n_signal: int = param(2, count())  #: tokens that carry the sparse signal M z
    #: expected norm of each token's Gaussian noise
    noise: float = param(1.0, positive())
    neurons: int = param(144, count())  #: MLP neurons m
    init_scale: float = param(0.1, positive())  #: std of the initial neuron weights
    batch: int = param(128, count())  #: fresh samples per step (population training)
    steps: int = param(1200, count())  #: SGD steps
    #: learning rate of the neurons and the attention matrix
    lr: float = param(0.1, positive())
    #: weight decay on all parameters
    weight_decay: float = param(0.02, nonnegative())
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
    #: single-feature samples per probe split
    probe_samples: int = param(1200, count())

    def _check_together(self) -> None:
        if not self.n_minority < self.n_features:
            self._refuse("n_minority", f"< n_features = {self.n_features}")
        if self.n_features > self.dim:
            self._refuse(
                "n_features", f"<= dim = {self.dim} (the dictionary is orthonormal)"
            )
        if self.n_signal > self.n_tokens:
            self._refuse("n_signal", f"<= n_tokens = {self.n_tokens}")
