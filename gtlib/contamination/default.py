"""Feature contamination, experiment 2: the default configuration."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..checks import Options, boundary, count, positive, tuple_of
from ..config import param
from ..models import ACTIVATIONS, activation
from .common import _device, _int, _RUN_SEED
from .data import random_embedding, sample_toy, ToyConfig, ToyData
from .networks import init_two_layer, NetSpec
from .training import train_two_layer
from .theory import ToyResult

__all__ = ["DefaultConfig", "run_default"]


@dataclass
class DefaultConfig(ToyConfig):
    """The authors' default toy script.

    The authors' default toy script: core on spheres of radius 1 (y=+1) and 2 (y=-1), logistic
    loss, AdamW (lr 1e-3, weight decay 1e-3), trainable output layer, 20 000 full-batch steps.

    As in that script, the OOD evaluation keeps the training points' core features and moves
    only their background, so any change in accuracy is caused by the shift. The run trains
    ``replicates`` independent datasets and initializations at once (their outcomes vary a lot),
    for each activation of ``activations`` (replicate ``r`` of every activation sees the same
    data). ``centred`` draws the background from ``U[-1/2, 1/2]``; unlike in the theory
    configuration this is no control here: with a trained output layer and AdamW the background
    weights grow even when the background has mean zero. ``replicates`` is 8 at the quick scale,
    so that the spread of the OOD drop across replicates is itself measured.

    Parameters
    ----------
    n : int, default 1000
        Training points; an int >= 1.
    d_core : int, default 32
        Label-carrying core coordinates; an int >= 1.
    d_background : int, default 32
        Background coordinates (independent of the label); an int >= 1.
    dim : int, default 256
        Ambient dimension (``d_core + d_background <= dim``); an int >= 1.
    width : int, default 256
        Hidden width; an int >= 1.
    weight_decay : float, default 0.001
        Weight decay; a finite number >= 0.
    centred : bool, default False
        Whether the background is drawn from ``U[-1/2, 1/2]`` instead of ``U[0, 1]``; a bool.
    steps : int, default 1000
        Number of optimizer steps; an int >= 1.
    lr : float, default 0.001
        Learning rate; a finite number > 0.
    replicates : int, default 8
        Independent repetitions; an int >= 1.
    record_every : int, default 20
        Steps between two recorded measurements; an int >= 1.
    activations : tuple[str, ...], default ('relu',)
        The activations, one group of networks each; a tuple (at least 1 item) of items each one of
        ('relu', 'gelu', 'silu', 'tanh', 'sigmoid', 'leaky_relu', 'identity').
    """

    FULL = dict(steps=20_000, replicates=16, record_every=250)

    steps: int = param(1000, count())
    lr: float = param(1e-3, positive())
    replicates: int = param(8, count())
    record_every: int = param(20, count())
    activations: tuple[str, ...] = param(
        ("relu",), tuple_of(Options(tuple(ACTIVATIONS)))
    )


ACT_LABELS = {
    "relu": "ReLU",
    "gelu": "GELU",
    "silu": "SiLU",
    "leaky_relu": "leaky ReLU",
    "tanh": "tanh",
    "sigmoid": "sigmoid",
    "identity": "linear",
}


@boundary(seed=_RUN_SEED)
def run_default(cfg: DefaultConfig, seed: int = 0, device=None) -> ToyResult:
    """Train ``cfg.replicates`` nets of the default configuration per activation, one sample each.

    Members are ordered activation by activation, replicate by replicate, and labelled
    ``"<activation> (default)"`` (e.g. ``"ReLU (default)"``). The history's ``id_*`` curves are
    measured on each replicate's training points and the ``ood_*`` curves on the same points with
    the background shifted by 1; ``result.test`` holds a fresh held-out ID sample per member
    (stacked, ``(E, n, d)``).

    Parameters
    ----------
    cfg : DefaultConfig
        The experiment's settings; a DefaultConfig.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**32 - 1].
    device : object, default None
        Torch device of the run (default: ``GTLIB_DEVICE``).

    Returns
    -------
    ToyResult
        The trained networks' curves and accuracies.

    References
    ----------
    Zhang, Zhao, Chen, Jiang and Chen (2024), "Feature Contamination: Neural Networks Learn
    Uncorrelated Features and Fail to Generalize".
    """
    dev = _device(device)
    R = _int("replicates", cfg.replicates)
    acts = list(cfg.activations)
    if not acts:
        raise ValueError("cfg.activations must not be empty")
    for a in acts:
        activation(a)
    emb = random_embedding(cfg.d_core, cfg.d_background, cfg.dim, seed=seed)

    def stacked(offset: int) -> ToyData:
        parts = [
            sample_toy(
                cfg.n,
                emb,
                "default",
                seed=1000 * seed + 100 * r + offset,
                centred=cfg.centred,
            )
            for r in range(R)
        ] * len(acts)
        return ToyData(
            *(
                torch.stack([getattr(p, k) for p in parts])
                for k in ("x", "y", "core", "background")
            )
        )

    train, test = stacked(3), stacked(4)
    specs = [
        NetSpec(
            act=a,
            loss="logistic",
            optimizer="adamw",
            lr=cfg.lr,
            weight_decay=cfg.weight_decay,
            label=f"{ACT_LABELS.get(a, a)} (default)",
        )
        for a in acts
        for _ in range(R)
    ]
    seeds = [1000 * seed + 50 + r for _ in acts for r in range(R)]
    net = init_two_layer(
        [s.act for s in specs],
        cfg.dim,
        cfg.width,
        seeds,
        frozen_output=False,
        bias=True,
    )
    W_init = net.W.detach().clone()
    b_init = None if net.b is None else net.b.detach().clone()
    net.to(dev)
    x, y = train.x.to(dev), train.y.to(dev)
    hist = train_two_layer(
        net, specs, x, y, cfg.steps, emb.to(dev), x, y, record_every=cfg.record_every
    )
    net.to("cpu")
    return ToyResult(cfg, emb, train, test, specs, net, W_init, hist, b_init)
