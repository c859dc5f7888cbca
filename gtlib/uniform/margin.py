"""One network per training-set size, trained to a fixed margin (gtlib.uniform, section 4).

Nagarajan and Kolter (NeurIPS 2019), Figure 1: :func:`train_on_subsets` trains one network per
training-set size in a single batched loop, member ``i`` on the first ``sizes[i]`` points, each
with its own stop rule; :class:`MarginSweepConfig`, :func:`margin_sweep`, and the margin a network
actually reached, :func:`realized_margin`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch

from ..checks import (
    SEED,
    InstanceOf,
    Tensor,
    boundary,
    check_int,
    check_labels,
    check_seeds,
    count,
    fraction,
    positive,
    tuple_of,
)
from ..config import Config, Result, param
from ..data import mnist1d
from ..engine import (
    StackedOptimizer,
    StreamBatches,
    _margins,
    _member_batch,
    fit,
    stop_rule,
)
from ..models import BatchedMLP
from ..train import TrainConfig, accuracy, _ensemble_loss
from .common import _DEVICE, _pos, _sizes
from .norms import NetworkMeasures, network_measures, spectral_norm
from .power_law import power_law_fit

__all__ = [
    # configs and results
    "MarginSweepConfig",
    # functions
    "margin_sweep",
    "realized_margin",
]


@dataclass
class SubsetTraining(Result):
    """What :func:`train_on_subsets` did: per member, the step it stopped at and whether by its rule."""

    stop_step: list[int]
    met_rule: list[bool]
    epochs: list[float]


def _forward(ws, bs, x, act, mask=None):
    """Logits of a stack of MLPs: ``x`` (A, b, d) with weights ``ws[l]`` (A, out, in)."""
    h = x
    for l, w in enumerate(ws):
        h = torch.matmul(h, w.transpose(-1, -2))
        if bs is not None:
            h = h + bs[l].unsqueeze(-2)
        if l < len(ws) - 1:
            h = act(h)
    return h


def _member_logits(model, i, x):
    """Logits ``(n, C)`` of member ``i`` of ``model`` on ``x`` ``(n, d)``, without copying the
    ensemble. Unchecked: its callers pass a member and data they built."""
    bs = [p[i] for p in model.biases] if model.has_bias else None
    return _forward([w[i] for w in model.weights], bs, x, model.act)


@boundary(
    model=InstanceOf(BatchedMLP),
    x=Tensor("float", 2),
    y=Tensor("int", 1),
    sizes=None,
    cfg=InstanceOf(TrainConfig),
    seeds=None,
    check_every_epochs=positive(),
    max_epochs=positive(),
)
def train_on_subsets(
    model: BatchedMLP,
    x: torch.Tensor,
    y: torch.Tensor,
    sizes: Sequence[int],
    cfg: TrainConfig,
    seeds: Sequence[int] | None = None,
    check_every_epochs: float = 1.0,
    max_epochs: float = 1000.0,
) -> SubsetTraining:
    """Train member ``i`` of ``model`` by minibatch SGD on ``(x[:sizes[i]], y[:sizes[i]])``, in place.

    This batches Nagarajan and Kolter's sweep over the training-set size: the training sets are
    nested prefixes of one pool, every member takes one minibatch of ``cfg.batch_size`` points of
    its own set per step (its own shuffled order, reshuffled every epoch; a batch may straddle two
    epochs: :class:`gtlib.engine.StreamBatches`), and all active members share one batched forward
    and backward pass (:func:`gtlib.engine.fit`). Member ``i`` is checked on its whole training set
    every ``check_every_epochs`` of its epochs; once it meets the stop rule of ``cfg``
    (:func:`gtlib.engine.stop_rule`: ``target_train_acc`` or ``margin_gamma``/``margin_fraction``),
    or after ``max_epochs`` epochs, it is frozen and left out of the forward pass, so later steps
    cost only what the remaining members need.

    Only plain SGD is supported (``cfg.optimizer='sgd'``, no momentum, no weight decay);
    ``cfg.epochs``, ``cfg.steps`` and ``cfg.check_every`` are ignored in favour of the per-member
    ``max_epochs`` and ``check_every_epochs``.

    Raises
    ------
    ValueError
        On a size larger than ``len(x)``, an unsupported optimizer, or mismatched shapes.
    """
    E = model.size
    sizes = _sizes("sizes", sizes)
    if len(sizes) != E:
        raise ValueError(
            f"sizes must have one entry per member ({E}), got {len(sizes)}"
        )
    if x.shape[0] != y.shape[0]:
        raise ValueError(
            f"x must be (n, d) and y (n,); got {tuple(x.shape)} and {tuple(y.shape)}"
        )
    if max(sizes) > x.shape[0]:
        raise ValueError(
            f"sizes must not exceed len(x) = {x.shape[0]}, got {max(sizes)}"
        )
    if x.shape[1] != model.weights[0].shape[-1]:
        raise ValueError(
            f"x must have {model.weights[0].shape[-1]} columns (the input size), "
            f"got {x.shape[1]}"
        )
    check_labels("y", y, num_classes=model.weights[-1].shape[-2], n=x.shape[0])
    if seeds is not None:
        seeds = check_seeds("seeds", seeds)
    cfg.validate()
    if cfg.optimizer != "sgd" or cfg.momentum != 0 or cfg.weight_decay != 0:
        raise ValueError(
            "train_on_subsets supports plain SGD only (optimizer='sgd', momentum=0, "
            "weight_decay=0)"
        )
    if cfg.batch_size is None:
        raise ValueError(
            "cfg.batch_size must be set (full-batch training would not need this)"
        )
    if cfg.target_train_acc is None and cfg.margin_gamma is None:
        raise ValueError(
            "cfg must set a stop rule (target_train_acc or margin_gamma)"
        )
    _pos("check_every_epochs", check_every_epochs)
    _pos("max_epochs", max_epochs)
    seeds = (
        [cfg.seed + i for i in range(E)]
        if seeds is None
        else [int(s) for s in seeds]
    )
    if len(seeds) != E:
        raise ValueError(
            f"seeds must have one entry per member ({E}), got {len(seeds)}"
        )
    b = cfg.batch_size
    act = model.act
    if model.hidden_mask is not None:
        raise ValueError("train_on_subsets does not support hidden_mask")

    check_period = [max(1, int(round(check_every_epochs * s / b))) for s in sizes]
    max_steps = [max(1, int(math.ceil(max_epochs * s / b))) for s in sizes]
    opt = StackedOptimizer(model.parameters(), "sgd", cfg.lr, members=E)
    batches = StreamBatches(sizes, b, seeds, device=x.device)
    rule = stop_rule(cfg.target_train_acc, cfg.margin_gamma, cfg.margin_fraction)
    weights = list(model.weights)
    biases = list(model.biases) if model.has_bias else None

    def loss(step: int, idx: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        if bool(active.all()):
            xb, yb = _member_batch(x, y, idx)
            return _ensemble_loss(cfg.loss, _forward(weights, biases, xb, act), yb)
        # only the members still training: their weights, their batches, one forward pass
        live = active.nonzero().flatten()
        lo, hi = int(live[0]), int(live[-1]) + 1
        rows = live.to(x.device)
        # usually the larger sets are the ones left: a slice (a view) then, else a gather
        sliced = hi - lo == len(live)

        def pick(t: torch.Tensor) -> torch.Tensor:
            return t[lo:hi] if sliced else t.index_select(0, rows)

        ws = [pick(w) for w in weights]
        bs = None if biases is None else [pick(p) for p in biases]
        xb, yb = _member_batch(x, y, pick(idx))
        out = _ensemble_loss(cfg.loss, _forward(ws, bs, xb, act), yb)
        return out.new_zeros(E).index_put((rows,), out)

    def check(step: int, due: torch.Tensor) -> torch.Tensor:
        met = torch.zeros(E, dtype=torch.bool)
        with torch.no_grad():
            for i in (
                due.nonzero().flatten().tolist()
            ):  # member i on its own training set
                met[i] = rule(_member_logits(model, i, x[: sizes[i]]), y[: sizes[i]])
        return met

    run = fit(
        loss, opt, max_steps, batches, check, every=check_period, active_only=True
    )
    return SubsetTraining(
        stop_step=run.stop_step,
        met_rule=run.met_rule,
        epochs=[s * b / n for s, n in zip(run.stop_step, sizes)],
    )


@boundary(logits=Tensor("float", 2), y=Tensor("int", 1), fraction=fraction())
def realized_margin(
    logits: torch.Tensor, y: torch.Tensor, fraction: float = 0.99
) -> float:
    """The largest margin ``g`` such that at least ``fraction`` of the points have margin ``>= g``.

    The margin of a point is ``f_y(x) - max_{j != y} f_j(x)``. This is the margin a network
    trained by Nagarajan and Kolter's stop rule (2019, Sec. 2: at most 1% of the training points
    with margin below gamma) has actually reached: the stop rule guarantees it is at least gamma,
    and it exceeds gamma by whatever the last steps before the check added. With ``n`` points it
    is the ``(n - ceil(fraction * n) + 1)``-th smallest margin.

    .. math::

        \\gamma_{\\mathrm{real}} = \\max\\{g : |\\{i : f_{y_i}(x_i) - \\max_{j \\ne y_i} f_j(x_i)
        \\ge g\\}| \\ge \\lceil \\mathrm{fraction} \\cdot n \\rceil\\}

    Parameters
    ----------
    logits : torch.Tensor
        Outputs of the network on the points, shape ``(n, classes)``; finite floats.
    y : torch.Tensor
        Labels, shape ``(n,)``; ints in ``[0, classes)``.
    fraction : float, default 0.99
        Fraction of the points that must reach the margin; a finite number in [0, 1].

    Returns
    -------
    float
        The realized margin.

    References
    ----------
    Nagarajan and Kolter (2019), "Uniform convergence may be unable to explain generalization in
    deep learning", Section 2.
    """
    if logits.shape[0] != y.shape[0] or len(y) == 0:
        raise ValueError(
            f"logits (n, C) and y (n,) must match and be non-empty, got "
            f"{tuple(logits.shape)} and {tuple(y.shape)}"
        )
    check_labels("y", y, num_classes=logits.shape[1], n=len(y))
    m = torch.sort(_margins(logits, y)).values  # as the stop rule computes them
    n = len(m)
    keep = max(
        1, math.ceil(fraction * n - 1e-9)
    )  # points that must clear the margin
    return float(m[n - keep])


@dataclass
class MarginSweepConfig(Config):
    """Nagarajan and Kolter's Figure 1 on MNIST-1D: train to a fixed margin at several n.

    One bias-free ReLU MLP per training-set size (nested prefixes of one pool), plain SGD,
    stopped once ``margin_fraction`` of the training points have margin at least ``gamma``
    (the defaults of the authors' public code, ``experiments.py``: depth 5, width 500, no biases,
    SGD lr 0.1, batch 64, margin 10, at most 0.1% of the points below it, sigmoid cross-entropy).

    Parameters
    ----------
    sizes : tuple, default (500, 1000, 2000, 4000, 8000)
        Training-set sizes; a tuple (at least 2 items, strictly increasing) of items each an int >=
        1.
    n_test : int, default 4000
        Number of test examples; an int >= 1.
    width : int, default 256
        Hidden width; an int >= 1.
    depth : int, default 2
        Number of hidden layers; an int >= 1.
    lr : float, default 0.1
        Learning rate; a finite number > 0.
    batch_size : int, default 64
        Minibatch size; an int >= 1.
    gamma : float, default 4.0
        The margin; a finite number > 0.
    margin_fraction : float, default 0.99
        Fraction of training points that must reach the margin; a finite number in [0, 1].
    check_every_epochs : float, default 1.0
        Epochs between two checks of the margin; a finite number > 0.
    max_epochs : float, default 2000.0
        Most training epochs; a finite number > 0.

    References
    ----------
    Nagarajan and Kolter (2019), "Uniform convergence may be unable to explain generalization in
    deep learning", Figure 1.
    """

    FULL = dict(
        sizes=(1000, 2000, 4000, 8000, 16000, 32000),
        n_test=8000,
        width=1024,
        depth=5,
        gamma=10.0,
        check_every_epochs=1.0,
    )

    sizes: tuple = param(
        (500, 1000, 2000, 4000, 8000),
        tuple_of(count(), min_len=2, increasing="strict"),
    )
    n_test: int = param(4000, count())
    width: int = param(256, count())
    depth: int = param(2, count())
    lr: float = param(0.1, positive())
    batch_size: int = param(64, count())
    gamma: float = param(4.0, positive())
    margin_fraction: float = param(0.99, fraction())
    check_every_epochs: float = param(1.0, positive())
    max_epochs: float = param(2000.0, positive())


@dataclass
class MarginSweepResult(Result):
    """Per training-set size: test error, norms, bounds; plus the log-log fits against n.

    ``init_test_error`` and ``init_spectral_product`` are the same members' values at
    initialization, before training (the baseline in which n plays no role).
    ``realized_margin`` is each member's margin at stop on its own training set
    (:func:`realized_margin` at ``margin_fraction``): at least ``gamma`` by the stop rule, and the
    bounds, evaluated at ``gamma``, are fair only if it is not much larger.
    """

    sizes: list[int]
    test_error: list[float]
    met_margin: list[bool]
    epochs: list[float]
    measures: list[NetworkMeasures]
    fits: dict = field(default_factory=dict)
    init_test_error: list[float] = field(default_factory=list)
    init_spectral_product: list[float] = field(default_factory=list)
    realized_margin: list[float] = field(
        default_factory=list
    )  # see realized_margin()

    def series(self) -> dict[str, np.ndarray]:
        """The quantities plotted against n, by name."""
        return {
            "test error": np.asarray(self.test_error),
            "distance from init": np.array([m.distance for m in self.measures]),
            "product of spectral norms": np.array(
                [m.spectral_product for m in self.measures]
            ),
            "Bartlett et al. bound": np.array([m.bartlett for m in self.measures]),
            "Neyshabur et al. bound": np.array([m.neyshabur for m in self.measures]),
        }


@boundary(cfg=InstanceOf(MarginSweepConfig), seed=SEED, device=_DEVICE)
def margin_sweep(
    cfg: MarginSweepConfig,
    seed: int = 0,
    device: str | None = None,
    fixed_size: bool = False,
) -> MarginSweepResult:
    """Train to a fixed margin at every size in ``cfg.sizes``.

    Train to a fixed margin at every size in ``cfg.sizes`` and measure what Nagarajan and Kolter plot.

    All sizes are trained as one batched ensemble by :func:`train_on_subsets`; every member starts
    from its own initialization (seeded by ``seed``). The bounds use ``gamma`` = the stopping
    margin and the member's own training inputs (see :func:`network_measures`).

    ``fixed_size=True`` is the chapter's null for the growth with n: every member trains, from its
    own initialization (other seeds than the sweep's), on the *same* ``cfg.sizes[0]`` points, and
    the result still reports (and fits against) the nominal ``cfg.sizes``. Whatever slope it shows
    comes from run-to-run variation alone, since the training set does not grow.

    Parameters
    ----------
    cfg : MarginSweepConfig
        The experiment's settings; a MarginSweepConfig.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    device : str | None, default None
        Torch device of the run (default: ``GTLIB_DEVICE``); an available torch device ('cpu',
        'cuda', 'cuda:<k>', 'mps' or a torch.device) or None.
    fixed_size : bool, default False
        Whether to run the chapter's null for the growth with n (see above); a bool.

    Returns
    -------
    MarginSweepResult
        What Nagarajan and Kolter plot, per training-set size.

    References
    ----------
    Nagarajan and Kolter (2019), "Uniform convergence may be unable to explain generalization in
    deep learning", Figure 1.
    """
    cfg.validate()
    seed = check_int("seed", seed, minimum=0)
    if not isinstance(fixed_size, bool):
        raise TypeError(f"fixed_size must be a bool, got {fixed_size!r}")
    sizes = list(cfg.sizes)
    used = [sizes[0]] * len(sizes) if fixed_size else sizes
    ds = mnist1d(max(sizes), cfg.n_test, device=device)
    E = len(sizes)
    seeds = [seed * 100 + (80 if fixed_size else 50) + i for i in range(E)]
    model = BatchedMLP.init(
        seeds,
        ds.dim,
        cfg.width,
        cfg.depth,
        ds.num_classes,
        bias=False,
        device=ds.x.device,
    )
    init = [w.detach().clone() for w in model.weights]
    with torch.no_grad():
        init_err = (1 - accuracy(model(ds.x_test), ds.y_test)).tolist()
    init_spec = [
        float(np.prod([float(spectral_norm(w0[i])) for w0 in init]))
        for i in range(E)
    ]
    tcfg = TrainConfig(
        lr=cfg.lr,
        batch_size=cfg.batch_size,
        margin_gamma=cfg.gamma,
        margin_fraction=cfg.margin_fraction,
        seed=seed,
    )
    run = train_on_subsets(
        model,
        ds.x,
        ds.y,
        used,
        tcfg,
        seeds=seeds,
        check_every_epochs=cfg.check_every_epochs,
        max_epochs=cfg.max_epochs,
    )
    with torch.no_grad():
        test_err = (1 - accuracy(model(ds.x_test), ds.y_test)).tolist()
        realized = [
            realized_margin(
                _member_logits(model, i, ds.x[:n]), ds.y[:n], cfg.margin_fraction
            )
            for i, n in enumerate(used)
        ]
    measures = [
        network_measures(
            [w[i].detach() for w in model.weights],
            [w0[i] for w0 in init],
            ds.x[:n],
            cfg.gamma,
        )
        for i, n in enumerate(used)
    ]
    res = MarginSweepResult(
        sizes=sizes,
        test_error=test_err,
        met_margin=run.met_rule,
        epochs=run.epochs,
        measures=measures,
        init_test_error=init_err,
        init_spectral_product=init_spec,
        realized_margin=realized,
    )
    res.fits = {k: power_law_fit(sizes, v) for k, v in res.series().items()}
    return res
