"""Feature contamination, experiment 1: the theory configuration and its variants."""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from ..checks import (
    Boolean,
    InstanceOf,
    Tensor,
    boundary,
    count,
    fraction,
    positive,
    tuple_of,
)
from ..config import Result, param
from .common import _device, _int, _RUN_SEED
from .data import Embedding, random_embedding, sample_toy, ToyConfig, ToyData
from .networks import init_two_layer, NetSpec, TwoLayerNets
from .training import ToyHistory, train_two_layer

__all__ = ["TheoryConfig", "run_theory", "theory_specs"]


VARIANTS = (
    "GELU",
    "SiLU",
    "leaky ReLU",
    "tanh",
    "sigmoid",
    "AdamW",
    "logistic loss",
)


@dataclass
class TheoryConfig(ToyConfig):
    """The theory-matching toy configuration.

    The theory-matching toy configuration (authors' code: hinge loss, SGD with momentum 0.9,
    frozen output layer +-1/h, lr 1e-3, weight decay 1e-3, 20 000 full-batch steps).

    Full-batch SGD with a small step follows gradient flow, so what matters is the *time*
    ``lr * steps``: the quick preset takes 400 steps of lr 0.05 (time 20, as 20 000 x 1e-3).
    AdamW's steps are normalized, so it gets its own ``adamw_lr``. ``bias`` gives the first
    layer biases, as the authors' script does; the frozen output layer has no bias (the script
    keeps its random initial output bias, frozen: a constant shift of ``f``, which we drop).
    ``centred`` draws the background from ``U[-1/2, 1/2]`` (the control of the mechanism).

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
    n_test : int, default 1000
        Number of test examples; an int >= 1.
    steps : int, default 400
        Number of optimizer steps; an int >= 1.
    lr : float, default 0.05
        Learning rate; a finite number > 0.
    adamw_lr : float, default 0.0025
        Learning rate of the AdamW variants (their steps are normalized); a finite number > 0.
    momentum : float, default 0.9
        SGD momentum; a finite number in [0, 1).
    bias : bool, default True
        Whether the first layer has biases; a bool.
    seeds_per_variant : int, default 1
        Networks trained per variant; an int >= 1.
    record_every : int, default 10
        Steps between two recorded measurements; an int >= 1.
    variants : tuple[str, ...], optional
        The variants trained next to the ReLU and linear networks (see :func:`theory_specs`); a
        tuple (at least 0 items, without repeats) of items each a str.

    References
    ----------
    Zhang, Zhao, Chen, Jiang and Chen (2024), "Feature Contamination: Neural Networks Learn
    Uncorrelated Features and Fail to Generalize".
    """

    FULL = dict(
        steps=20_000, lr=1e-3, adamw_lr=1e-3, seeds_per_variant=3, record_every=200
    )

    n_test: int = param(1000, count())
    steps: int = param(400, count())
    lr: float = param(0.05, positive())
    adamw_lr: float = param(2.5e-3, positive())
    momentum: float = param(0.9, fraction("left"))
    bias: bool = param(True, Boolean())
    seeds_per_variant: int = param(1, count())
    record_every: int = param(10, count())
    variants: tuple[str, ...] = param(
        VARIANTS, tuple_of(InstanceOf(str), min_len=0, distinct=True)
    )


@boundary()
def theory_specs(cfg: TheoryConfig) -> list[NetSpec]:
    """The configurations of the theory experiment: ReLU, linear, then ``cfg.variants``.

    Parameters
    ----------
    cfg : TheoryConfig
        The experiment's settings; a TheoryConfig.

    Returns
    -------
    list[NetSpec]
        One spec per network.
    """
    base = NetSpec(
        act="relu",
        loss="hinge",
        optimizer="sgd",
        lr=cfg.lr,
        momentum=cfg.momentum,
        weight_decay=cfg.weight_decay,
        label="ReLU",
    )
    table = {
        "linear": replace(base, act="identity", label="linear"),
        "GELU": replace(base, act="gelu", label="GELU"),
        "SiLU": replace(base, act="silu", label="SiLU"),
        "leaky ReLU": replace(base, act="leaky_relu", label="leaky ReLU"),
        "tanh": replace(base, act="tanh", label="tanh"),
        "sigmoid": replace(base, act="sigmoid", label="sigmoid"),
        "AdamW": replace(base, optimizer="adamw", lr=cfg.adamw_lr, label="AdamW"),
        "logistic loss": replace(base, loss="logistic", label="logistic loss"),
    }
    unknown = [v for v in cfg.variants if v not in table or v == "linear"]
    if unknown:
        raise ValueError(
            f"variants must be among {sorted(set(table) - {'linear'})}, got {unknown}"
        )
    return [base, table["linear"]] + [table[v] for v in cfg.variants]


@dataclass
class ToyResult(Result):
    """What a toy experiment returns: the data, the trained stack and its history."""

    cfg: object
    emb: Embedding
    train: ToyData
    test: ToyData
    specs: list[NetSpec]
    net: TwoLayerNets
    W_init: torch.Tensor
    history: ToyHistory
    b_init: torch.Tensor | None = None

    @boundary(x=Tensor("float", 2))
    def preactivations(
        self, x: torch.Tensor, label: str, initial: bool = False
    ) -> torch.Tensor:
        """Pre-activations ``(n, h)`` of the first member called ``label`` for inputs ``x``
        ``(n, d)``, trained or at initialization."""
        i = self.members(label)[0]
        self.net._check_input(x)
        with torch.no_grad():
            if not initial:
                return self.net._preactivations(x)[i]
            pre = x @ self.W_init[i].T
            return pre if self.b_init is None else pre + self.b_init[i]

    @boundary()
    def members(self, label: str) -> list[int]:
        """Indices of the members whose spec is called ``label``."""
        idx = [i for i, s in enumerate(self.specs) if s.name == label]
        if not idx:
            raise ValueError(
                f"label must name a member, one of "
                f"{sorted({s.name for s in self.specs})}, got {label!r}"
            )
        return idx

    @boundary()
    def background_ratio(self, label: str) -> float:
        """Final / initial mean background projection norm, averaged over ``label``'s members."""
        bg = self.history.array("background_norm")[:, self.members(label)]
        return float((bg[-1] / bg[0]).mean())

    @boundary()
    def final(self, name: str, label: str) -> float:
        """The last recorded value of curve ``name`` averaged over ``label``'s members."""
        return float(self.history.array(name)[-1, self.members(label)].mean())


@boundary(seed=_RUN_SEED)
def run_theory(cfg: TheoryConfig, seed: int = 0, device=None) -> ToyResult:
    """Train the ReLU net, the linear net and every variant of ``cfg`` as one batched stack.

    The data (embedding, training set, ID test set) and the initializations are fixed by ``seed``;
    the OOD test set is the ID test set with its background shifted by 1 (:func:`shift_background`).
    Training runs on ``device`` (default: the run settings'); the result lives on the CPU.

    Parameters
    ----------
    cfg : TheoryConfig
        The experiment's settings; a TheoryConfig.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**32 - 1].
    device : object, default None
        Torch device of the run (default: ``GTLIB_DEVICE``).

    Returns
    -------
    ToyResult
        The curves and accuracies of every network.

    References
    ----------
    Zhang, Zhao, Chen, Jiang and Chen (2024), "Feature Contamination: Neural Networks Learn
    Uncorrelated Features and Fail to Generalize".
    """
    dev = _device(device)
    emb = random_embedding(cfg.d_core, cfg.d_background, cfg.dim, seed=seed)
    train = sample_toy(
        cfg.n, emb, "theory", seed=1000 * seed + 1, centred=cfg.centred
    )
    test = sample_toy(
        cfg.n_test, emb, "theory", seed=1000 * seed + 2, centred=cfg.centred
    )
    specs = [
        s
        for s in theory_specs(cfg)
        for _ in range(_int("seeds_per_variant", cfg.seeds_per_variant))
    ]
    net = init_two_layer(
        [s.act for s in specs],
        cfg.dim,
        cfg.width,
        [1000 * seed + 10 + i for i in range(len(specs))],
        frozen_output=True,
        bias=cfg.bias,
    )
    W_init = net.W.detach().clone()
    b_init = None if net.b is None else net.b.detach().clone()
    net.to(dev)
    hist = train_two_layer(
        net,
        specs,
        train.x.to(dev),
        train.y.to(dev),
        cfg.steps,
        emb.to(dev),
        test.x.to(dev),
        test.y.to(dev),
        record_every=cfg.record_every,
    )
    net.to("cpu")
    return ToyResult(cfg, emb, train, test, specs, net, W_init, hist, b_init)
