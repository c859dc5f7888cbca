"""Random and corrupted labels (Zhang et al. 2017; gtlib.uniform, section 1).

The same network and SGD that generalize on true labels memorize random ones (Zhang, Bengio, Hardt,
Recht and Vinyals, ICLR 2017, Figure 1): :class:`CorruptionConfig`, :func:`corruption_experiment`,
:func:`cnn_randomization` and its capacity null :func:`linear_randomization`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from ..checks import (
    SEED,
    InstanceOf,
    Tensor,
    boundary,
    check_int,
    count,
    fraction,
    positive,
    tuple_of,
)
from ..config import Config, Result, param
from ..data import corrupt_labels, mnist1d
from ..engine import ReplacementBatches, StackedOptimizer, fit, stop_rule
from ..models import BatchedMLP
from ..train import TrainConfig, accuracy, _ensemble_loss, train_ensemble
from .common import _DEVICE
from .power_law import nearest_neighbour_predict

__all__ = [
    # configs and results
    "CNNRandomizationConfig",
    "CorruptionConfig",
    # functions
    "cnn_randomization",
    "corruption_experiment",
    "corruption_nn_test_error",
    "linear_randomization",
]


@dataclass
class CorruptionConfig(Config):
    """Zhang et al.'s randomization test on MNIST-1D.

    Zhang et al.'s randomization test on MNIST-1D, all corruption levels trained as one ensemble.

    Every member is the same MLP (Zhang et al.'s "MLP 1x512") trained with plain SGD from its own
    initialization on the same inputs; member ``i`` sees labels with a fraction ``levels[i]``
    replaced by uniformly random labels, and stops when its training accuracy reaches
    ``target_train_acc``.

    Parameters
    ----------
    n_train : int, default 4000
        Number of training examples; an int >= 1.
    n_test : int, default 4000
        Number of test examples; an int >= 1.
    levels : tuple, default (0.0, 0.5, 1.0)
        Fractions of corrupted labels, one network each; a tuple (at least 2 items, strictly
        increasing) of items each a finite number in [0, 1].
    width : int, default 512
        Hidden width; an int >= 1.
    depth : int, default 1
        Number of hidden layers; an int >= 1.
    lr : float, default 0.1
        Learning rate; a finite number > 0.
    batch_size : int, default 64
        Minibatch size; an int >= 1.
    target_train_acc : float, default 0.99
        Training accuracy at which training stops; a finite number in [0, 1].
    max_steps : int, default 40000
        Most optimizer steps; an int >= 1.
    check_every : int, default 50
        Steps between two checks of the stop rule; an int >= 1.

    References
    ----------
    Zhang, Bengio, Hardt, Recht and Vinyals (2017), "Understanding deep learning requires
    rethinking generalization".
    """

    FULL = dict(
        n_train=8000,
        n_test=4000,
        levels=tuple(np.round(np.linspace(0, 1, 11), 2)),
        width=512,
        depth=3,
        max_steps=200_000,
        check_every=25,
    )

    n_train: int = param(4000, count())
    n_test: int = param(4000, count())
    levels: tuple = param(
        (0.0, 0.5, 1.0), tuple_of(fraction(), min_len=2, increasing="strict")
    )
    width: int = param(512, count())
    depth: int = param(1, count())
    lr: float = param(0.1, positive())
    batch_size: int = param(64, count())
    target_train_acc: float = param(0.99, fraction())
    max_steps: int = param(40_000, count())
    check_every: int = param(50, count())


@dataclass
class CorruptionResult(Result):
    """What :func:`corruption_experiment` measured, one entry per corruption level.

    The ``replicate_*`` fields describe one more network trained on the true labels from another
    initialization (the run-to-run spread that any difference between levels must exceed); the
    ``init_*`` field gives each member's test error at initialization (before any training).
    """

    levels: list[float]
    test_error: list[float]
    final_train_acc: list[float]
    stop_step: list[int]
    reached_target: list[bool]
    curve_steps: list[int]  # steps at which the training accuracy was measured
    curve_train_acc: np.ndarray  # (len(curve_steps), len(levels))
    init_test_error: list[float] = field(default_factory=list)
    replicate_test_error: float = float("nan")
    replicate_train_acc: float = float("nan")
    replicate_stop_step: int = -1
    model: BatchedMLP | None = None  # the trained ensemble, member i at levels[i]
    init: list | None = None  # its weights at initialization, per layer (E, out, in)
    x_train: torch.Tensor | None = None


@boundary(cfg=InstanceOf(CorruptionConfig), seed=SEED, device=_DEVICE)
def corruption_experiment(
    cfg: CorruptionConfig,
    seed: int = 0,
    device: str | None = None,
    replicate: bool = True,
) -> CorruptionResult:
    """Train one MLP per corruption level and measure Zhang et al.'s curves.

    Train one MLP per corruption level (as one batched ensemble) and measure Zhang et al.'s curves.

    Reproduces the shape of Zhang et al. (2017), Figure 1a (training accuracy against steps for true,
    partially corrupted and random labels) and Figure 1c (test error against the corrupted fraction).
    The labels of level ``f`` come from :func:`gtlib.data.corrupt_labels` with the same seed, so
    the points corrupted at a smaller level are a subset of those at a larger one. One extra member
    (the *replicate*) is trained on the true labels from another initialization and batch order;
    it is removed from ``model`` and reported in the ``replicate_*`` fields (``replicate=False``
    skips it; those fields then stay NaN / -1).

    Parameters
    ----------
    cfg : CorruptionConfig
        The experiment's settings; a CorruptionConfig.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    device : str | None, default None
        Torch device of the run (default: ``GTLIB_DEVICE``); an available torch device ('cpu',
        'cuda', 'cuda:<k>', 'mps' or a torch.device) or None.
    replicate : bool, default True
        Whether to add a network trained on the true labels from another initialization (the
        replicate); a bool.

    Returns
    -------
    CorruptionResult
        The curves of the experiment, per corruption level.

    References
    ----------
    Zhang, Bengio, Hardt, Recht and Vinyals (2017), "Understanding deep learning requires
    rethinking generalization", Figure 1.
    """
    cfg.validate()
    seed = check_int("seed", seed, minimum=0)
    ds = mnist1d(cfg.n_train, cfg.n_test, device=device)
    ys = torch.stack(
        [
            corrupt_labels(ds.y, float(f), ds.num_classes, seed=seed + 1000)
            for f in cfg.levels
        ]
        + ([ds.y] if replicate else [])
    )
    E = len(cfg.levels)
    seeds = [seed * 100 + i for i in range(len(ys))]
    full = BatchedMLP.init(
        seeds,
        ds.dim,
        cfg.width,
        cfg.depth,
        ds.num_classes,
        bias=False,
        device=ds.x.device,
    )
    init_all = [w.detach().clone() for w in full.weights]
    tcfg = TrainConfig(
        lr=cfg.lr,
        batch_size=cfg.batch_size,
        epochs=10**9,
        steps=cfg.max_steps,
        target_train_acc=cfg.target_train_acc,
        check_every=cfg.check_every,
        seed=seed * 100,
    )
    with torch.no_grad():
        init_acc = accuracy(full(ds.x_test), ds.y_test)
    hist = train_ensemble(full, ds.x, ys, tcfg, seeds=seeds)
    with torch.no_grad():
        test_acc = accuracy(full(ds.x_test), ds.y_test)
        train_acc = accuracy(full(ds.x), ys)
    curve = torch.stack(hist.train_acc).numpy()
    stop = [int(s) for s in hist.probes["stop_step"]]
    # a member stopped at the step where it met the rule; after that its curve is frozen
    for i, s in enumerate(stop):
        curve[np.asarray(hist.step) > s, i] = np.nan
    model = BatchedMLP(
        [w.detach()[:E] for w in full.weights], None, act=full.act_name
    )
    return CorruptionResult(
        levels=[float(f) for f in cfg.levels],
        test_error=(1 - test_acc[:E]).tolist(),
        final_train_acc=train_acc[:E].tolist(),
        stop_step=stop[:E],
        reached_target=[bool(a >= cfg.target_train_acc) for a in train_acc[:E]],
        curve_steps=list(hist.step),
        curve_train_acc=curve[:, :E],
        init_test_error=(1 - init_acc[:E]).tolist(),
        replicate_test_error=float(1 - test_acc[E]) if replicate else float("nan"),
        replicate_train_acc=float(train_acc[E]) if replicate else float("nan"),
        replicate_stop_step=stop[E] if replicate else -1,
        model=model,
        init=[w[:E] for w in init_all],
        x_train=ds.x,
    )


@boundary(cfg=InstanceOf(CorruptionConfig), seed=SEED, device=_DEVICE)
def corruption_nn_test_error(
    cfg: CorruptionConfig, seed: int = 0, device: str | None = None
) -> list[float]:
    """Test error of a 1-nearest-neighbour classifier at every corruption level of ``cfg``.

    The same training inputs and the same corrupted labels as :func:`corruption_experiment` with
    the same ``seed`` (so the same points are corrupted), classified by
    :func:`nearest_neighbour_predict`: a learner that fits every labelling exactly without any
    training. Its test error also rises with the corrupted fraction, which is what makes the rise
    of Zhang et al.'s Figure 1c a property of interpolation rather than of networks.

    Parameters
    ----------
    cfg : CorruptionConfig
        The experiment's settings; a CorruptionConfig.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    device : str | None, default None
        Torch device of the run (default: ``GTLIB_DEVICE``); an available torch device ('cpu',
        'cuda', 'cuda:<k>', 'mps' or a torch.device) or None.

    Returns
    -------
    list[float]
        The test error at each corruption level of ``cfg``.
    """
    cfg.validate()
    seed = check_int("seed", seed, minimum=0)
    ds = mnist1d(cfg.n_train, cfg.n_test, device=device)
    # the neighbours do not depend on the labels: find them once (labels = row numbers)
    rows = torch.arange(len(ds.x), device=ds.x.device)
    nearest = nearest_neighbour_predict(ds.x, rows, ds.x_test)
    out = []
    for f in cfg.levels:
        y = corrupt_labels(ds.y, float(f), ds.num_classes, seed=seed + 1000)
        out.append(float((y[nearest] != ds.y_test).float().mean()))
    return out


@dataclass
class CNNRandomizationConfig(Config):
    """The randomization test with a small 1-D CNN on MNIST-1D, a model that generalizes well.

    ``true_runs`` copies of one architecture train on the true labels and ``random_runs`` copies
    on fully random labels (each its own random labelling), all together as one
    :class:`BatchedCNN1d`, each from its own initialization and minibatch order. Plain SGD on the
    cross-entropy, each member stopped when its training accuracy, measured every
    ``check_every`` steps, reaches ``target_train_acc``. The true-label copies give the
    run-to-run spread of the stopping step that a slow-down on random labels must exceed.
    ``FULL``: twice the data, twice the channels.

    Parameters
    ----------
    n_train : int, default 4000
        Number of training examples; an int >= 1.
    n_test : int, default 4000
        Number of test examples; an int >= 1.
    channels : int, default 32
        Convolution channels; an int >= 1.
    hidden : int, default 256
        Hidden units of the dense layer; an int >= 1.
    lr : float, default 0.1
        Learning rate; a finite number > 0.
    batch_size : int, default 64
        Minibatch size; an int >= 1.
    target_train_acc : float, default 0.99
        Training accuracy at which training stops; a finite number in [0, 1].
    max_steps : int, default 40000
        Most optimizer steps; an int >= 1.
    check_every : int, default 50
        Steps between two checks of the stop rule; an int >= 1.
    true_runs : int, default 4
        Runs on the true labels; an int >= 2.
    random_runs : int, default 2
        Runs on random labels; an int >= 1.
    """

    FULL = dict(n_train=8000, channels=64, max_steps=200_000)

    n_train: int = param(4000, count())
    n_test: int = param(4000, count())
    channels: int = param(32, count())
    hidden: int = param(256, count())
    lr: float = param(0.1, positive())
    batch_size: int = param(64, count())
    target_train_acc: float = param(0.99, fraction())
    max_steps: int = param(40_000, count())
    check_every: int = param(50, count())
    true_runs: int = param(4, count(2))
    random_runs: int = param(2, count())


class BatchedCNN1d(torch.nn.Module):
    """``E`` small 1-D CNNs for length-40 signals, evaluated together with grouped convolutions.

    Each member is ``conv(1->C, k5, stride 2) -> ReLU -> conv(C->C, k3, stride 2) -> ReLU ->
    conv(C->C, k3, stride 2) -> ReLU -> flatten (5C) -> linear(hidden) -> ReLU -> linear(classes)``,
    without biases, every weight drawn uniformly in ``+-1/sqrt(fan_in)``. Every parameter has the
    member axis first (``convs[k]`` is ``(E, C, in, kernel)``, ``fcs[k]`` is ``(E, in, out)``), as
    :class:`gtlib.engine.StackedOptimizer` expects; the forward pass flattens the convolution
    weights into one grouped convolution, in which member ``e`` sees only channel group ``e``, so
    one batched call computes every member on its own input exactly as a stand-alone network would.
    """

    @boundary(
        seeds=tuple_of(SEED),
        channels=count(),
        hidden=count(),
        classes=count(2),
        length=count(),
    )
    def __init__(
        self,
        seeds: Sequence[int],
        channels: int = 32,
        hidden: int = 256,
        classes: int = 10,
        length: int = 40,
    ):
        super().__init__()
        seeds = [check_int(f"seeds[{i}]", s, minimum=0) for i, s in enumerate(seeds)]
        if not seeds:
            raise ValueError("seeds must not be empty")
        if length != 40:
            raise ValueError(
                "BatchedCNN1d is built for MNIST-1D signals of length 40"
            )
        C, E = check_int("channels", channels, minimum=1), len(seeds)
        hidden = check_int("hidden", hidden, minimum=1)
        classes = check_int("classes", classes, minimum=2)
        shapes = [
            (C, 1, 5),
            (C, C, 3),
            (C, C, 3),
            (5 * C, hidden),
            (hidden, classes),
        ]
        fans = [5, 3 * C, 3 * C, 5 * C, hidden]
        per = [[] for _ in shapes]
        for s in seeds:
            g = torch.Generator().manual_seed(s)
            for k, (shape, fan) in enumerate(zip(shapes, fans)):
                per[k].append(
                    (torch.rand(*shape, generator=g) * 2 - 1) / math.sqrt(fan)
                )
        self.E, self.C = E, C
        self.convs = torch.nn.ParameterList(
            torch.nn.Parameter(torch.stack(w)) for w in per[:3]
        )
        self.fcs = torch.nn.ParameterList(
            torch.nn.Parameter(torch.stack(w)) for w in per[3:]
        )

    @boundary(x=Tensor("float", (2, 3)), members=Tensor("int", 1, optional=True))
    def forward(
        self, x: torch.Tensor, members: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Logits ``(E, n, classes)``; ``x`` is ``(n, 40)`` (shared) or ``(E, n, 40)``.

        With ``members`` (a 1-D tensor of member indices, A of them) only those members are
        computed: ``x`` is then ``(n, 40)`` or ``(A, n, 40)`` and the logits ``(A, n, classes)``.
        """
        if members is not None and (
            int(members.min()) < 0 or int(members.max()) >= self.E
        ):
            raise ValueError(f"members must hold member indices in [0, {self.E})")
        return self._logits(x, members)

    def _logits(
        self, x: torch.Tensor, members: torch.Tensor | None = None
    ) -> torch.Tensor:
        """:meth:`forward` without the input checks (training steps call this)."""
        convs, fcs = list(self.convs), list(self.fcs)
        if members is not None:
            convs = [w.index_select(0, members) for w in convs]
            fcs = [w.index_select(0, members) for w in fcs]
        A = convs[0].shape[0]
        if x.ndim == 2:
            x = x.unsqueeze(0).expand(A, *x.shape)
        if x.ndim != 3 or x.shape[0] != A or x.shape[2] != 40:
            raise ValueError(
                f"x must be (n, 40) or ({A}, n, 40), got {tuple(x.shape)}"
            )
        h = x.transpose(0, 1)  # (n, A, 40): channel e = member e
        for w, pad in zip(convs, (2, 1, 1)):
            h = F.relu(F.conv1d(h, w.flatten(0, 1), stride=2, padding=pad, groups=A))
        h = h.reshape(h.shape[0], A, -1).transpose(0, 1)  # (A, n, 5C)
        h = F.relu(torch.bmm(h, fcs[0]))
        return torch.bmm(h, fcs[1])


@dataclass
class CNNRandomizationResult(Result):
    """Per member of :func:`cnn_randomization`: first the true-label runs, then the random-label runs."""

    names: list[str]
    labels: list[str]  # "true" or "random", per member
    train_acc: list[float]
    test_error: list[float]
    init_test_error: list[float]
    stop_step: list[int]
    reached_target: list[bool]

    def of(self, field_name: str, labels: str) -> list:
        """The values of ``field_name`` for the members trained on ``labels`` ("true"/"random")."""
        if labels not in ("true", "random"):
            raise ValueError(f"labels must be 'true' or 'random', got {labels!r}")
        return [
            v for v, l in zip(getattr(self, field_name), self.labels) if l == labels
        ]


@boundary(cfg=InstanceOf(CNNRandomizationConfig), seed=SEED, device=_DEVICE)
def cnn_randomization(
    cfg: CNNRandomizationConfig, seed: int = 0, device: str | None = None
) -> CNNRandomizationResult:
    """Zhang et al.'s randomization test with a small 1-D CNN on MNIST-1D.

    Zhang et al.'s randomization test (2017, Fig. 1a, 1b) with :class:`BatchedCNN1d` on MNIST-1D.

    Trains ``cfg.true_runs`` members on the true labels and ``cfg.random_runs`` members on fully
    random labels (:func:`gtlib.data.corrupt_labels` at fraction 1, a different labelling per
    member) in one batched loop, each from its own initialization and on its own minibatches.
    Plain SGD through :func:`gtlib.engine.fit`, on minibatches drawn with replacement
    (:class:`gtlib.engine.ReplacementBatches`, one generator per member). Every ``check_every``
    steps, and at ``max_steps``, each member still training is measured on its whole training
    set; a member that reached ``target_train_acc`` stops (its weights no longer change), so its
    stopping step is known to within ``check_every`` steps.

    Parameters
    ----------
    cfg : CNNRandomizationConfig
        The experiment's settings; a CNNRandomizationConfig.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    device : str | None, default None
        Torch device of the run (default: ``GTLIB_DEVICE``); an available torch device ('cpu',
        'cuda', 'cuda:<k>', 'mps' or a torch.device) or None.

    Returns
    -------
    CNNRandomizationResult
        The training curves and test errors of the true- and random-label runs.

    References
    ----------
    Zhang, Bengio, Hardt, Recht and Vinyals (2017), "Understanding deep learning requires
    rethinking generalization", Figure 1.
    """
    cfg.validate()
    seed = check_int("seed", seed, minimum=0)
    ds = mnist1d(cfg.n_train, cfg.n_test, device=device)
    dev = ds.x.device
    K, R = cfg.true_runs, cfg.random_runs
    ys = torch.stack(
        [ds.y] * K
        + [
            corrupt_labels(ds.y, 1.0, ds.num_classes, seed=seed + 1000 + r)
            for r in range(R)
        ]
    )
    E = K + R
    model = BatchedCNN1d(
        [seed * 100 + 40 + e for e in range(E)],
        cfg.channels,
        cfg.hidden,
        ds.num_classes,
    ).to(dev)
    with torch.no_grad():
        init_err = (1 - accuracy(model(ds.x_test), ds.y_test)).tolist()
    opt = StackedOptimizer(model.parameters(), "sgd", cfg.lr, members=E)
    batches = ReplacementBatches(
        cfg.n_train, cfg.batch_size, [seed * 100 + 70 + e for e in range(E)], dev
    )
    reached = stop_rule(target_train_acc=cfg.target_train_acc)

    def loss(step: int, idx: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        if bool(active.all()):
            return _ensemble_loss(
                "cross_entropy", model._logits(ds.x[idx]), ys.gather(1, idx)
            )
        live = active.nonzero().flatten().to(dev)  # only the members still training
        idx = idx.index_select(0, live)
        out = _ensemble_loss(
            "cross_entropy",
            model._logits(ds.x[idx], live),
            ys.index_select(0, live).gather(1, idx),
        )
        return out.new_zeros(E).index_put((live,), out)

    def check(step: int, due: torch.Tensor) -> torch.Tensor:
        met = torch.zeros(E, dtype=torch.bool)
        live = due.nonzero().flatten()
        if len(live):
            with torch.no_grad():  # only the members the check is due for
                rows = live.to(dev)
                met[live] = reached(
                    model._logits(ds.x, rows), ys.index_select(0, rows)
                ).cpu()
        return met

    stop = fit(
        loss,
        opt,
        cfg.max_steps,
        batches,
        check,
        every=cfg.check_every,
        active_only=True,
    ).stop_step
    with torch.no_grad():
        test_err = (1 - accuracy(model(ds.x_test), ds.y_test)).tolist()
        train_acc = accuracy(model(ds.x), ys)
    names = [f"true labels, run {k + 1}" for k in range(K)] + [
        f"random labels, run {r + 1}" for r in range(R)
    ]
    return CNNRandomizationResult(
        names=names,
        labels=["true"] * K + ["random"] * R,
        train_acc=train_acc.tolist(),
        test_error=test_err,
        init_test_error=init_err,
        stop_step=stop,
        reached_target=[bool(a >= cfg.target_train_acc) for a in train_acc],
    )


@boundary(cfg=InstanceOf(CNNRandomizationConfig), seed=SEED, device=_DEVICE)
def linear_randomization(
    cfg: CNNRandomizationConfig, seed: int = 0, device: str | None = None
) -> CNNRandomizationResult:
    """The capacity null of :func:`cnn_randomization`: a linear softmax classifier in the CNN's place.

    Everything but the model is the CNN's: the same training and test signals, the same labellings
    (``cfg.true_runs`` members on the true labels, ``cfg.random_runs`` on the CNN's random
    labellings, :func:`gtlib.data.corrupt_labels` with the same seeds), the same minibatch order
    (:class:`gtlib.engine.ReplacementBatches` with the CNN's seeds), plain SGD at ``cfg.lr`` for at
    most ``cfg.max_steps`` steps, and the same stop rule (training accuracy at least
    ``cfg.target_train_acc``, checked every ``cfg.check_every`` steps). The model is
    ``softmax(x W + b)`` (``W`` of shape ``(40, classes)``, drawn uniformly in ``+-1/sqrt(40)``,
    ``b = 0``): 410 parameters for 4000 points, too few to memorize a random labelling. It is the
    measured null of the memorization claim of Zhang et al. (2017), Section 2: with the capacity
    removed, the same optimizer and step budget no longer fit random labels.

    Parameters
    ----------
    cfg : CNNRandomizationConfig
        The CNN experiment's settings, reused unchanged; a CNNRandomizationConfig.
    seed : int, default 0
        Seed of the run's random draws (the CNN run's seed, so the labellings match); an int in
        [0, 2**63 - 1].
    device : str | None, default None
        Torch device of the run (default: ``GTLIB_DEVICE``); an available torch device or None.

    Returns
    -------
    CNNRandomizationResult
        The linear model's training curves and test errors, in the CNN result's layout.

    References
    ----------
    Zhang, Bengio, Hardt, Recht and Vinyals (2017), "Understanding deep learning requires
    rethinking generalization", Section 2.
    """
    cfg.validate()
    seed = check_int("seed", seed, minimum=0)
    ds = mnist1d(cfg.n_train, cfg.n_test, device=device)
    dev, C = ds.x.device, ds.num_classes
    K, R = cfg.true_runs, cfg.random_runs
    ys = torch.stack(
        [ds.y] * K
        + [corrupt_labels(ds.y, 1.0, C, seed=seed + 1000 + r) for r in range(R)]
    )
    E = K + R
    gens = [torch.Generator().manual_seed(seed * 100 + 90 + e) for e in range(E)]
    W = torch.nn.Parameter(
        torch.stack(
            [
                (torch.rand(ds.dim, C, generator=g) * 2 - 1) / math.sqrt(ds.dim)
                for g in gens
            ]
        ).to(dev)
    )
    b = torch.nn.Parameter(torch.zeros(E, 1, C, device=dev))

    def logits(
        x: torch.Tensor,
    ) -> torch.Tensor:  # x (n, 40) or (E, n, 40) -> (E, n, C)
        return torch.baddbmm(b, x if x.ndim == 3 else x.expand(E, *x.shape), W)

    with torch.no_grad():
        init_err = (1 - accuracy(logits(ds.x_test), ds.y_test)).tolist()
    opt = StackedOptimizer([W, b], "sgd", cfg.lr, members=E)
    batches = ReplacementBatches(
        cfg.n_train, cfg.batch_size, [seed * 100 + 70 + e for e in range(E)], dev
    )
    reached = stop_rule(target_train_acc=cfg.target_train_acc)

    def loss(step: int, idx: torch.Tensor) -> torch.Tensor:
        return _ensemble_loss("cross_entropy", logits(ds.x[idx]), ys.gather(1, idx))

    def check(step: int, due: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return reached(logits(ds.x), ys).cpu() & due

    stop = fit(
        loss, opt, cfg.max_steps, batches, check, every=cfg.check_every
    ).stop_step
    with torch.no_grad():
        test_err = (1 - accuracy(logits(ds.x_test), ds.y_test)).tolist()
        train_acc = accuracy(logits(ds.x), ys)
    names = [f"linear, true labels, run {k + 1}" for k in range(K)] + [
        f"linear, random labels, run {r + 1}" for r in range(R)
    ]
    return CNNRandomizationResult(
        names=names,
        labels=["true"] * K + ["random"] * R,
        train_acc=train_acc.tolist(),
        test_error=test_err,
        init_test_error=init_err,
        stop_step=stop,
        reached_target=[bool(a >= cfg.target_train_acc) for a in train_acc],
    )
