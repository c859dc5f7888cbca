"""The death of uniform convergence: random labels, norm bounds that grow with n, and S'.

This module backs the chapter ``book/uniform-convergence.ipynb``. Read it top to bottom:

1. **Random and corrupted labels** (Zhang, Bengio, Hardt, Recht and Vinyals, ICLR 2017, Figure 1):
   the same network and SGD that generalize on true labels memorize random ones.
   :class:`CorruptionConfig`, :func:`corruption_experiment`, :func:`cnn_randomization` and its
   capacity null :func:`linear_randomization`.
2. **Norms and norm-based bounds**: spectral norms, (2,1)-norms, distance from initialization
   (Nagarajan and Kolter 2017), the spectrally normalized margin bound of Bartlett, Foster and
   Telgarsky (NeurIPS 2017, Theorem 1.1) and the PAC-Bayesian bound of Neyshabur, Bhojanapalli and
   Srebro (ICLR 2018, Theorem 1), each up to the constants and log factors that the papers leave in
   O-notation. :func:`spectral_norm`, :func:`norm_21`, :func:`network_measures`.
3. **Power-law fits** with a standard error: :func:`power_law_fit`.
4. **Training to a fixed margin as n grows** (Nagarajan and Kolter, NeurIPS 2019, Figure 1):
   :func:`train_on_subsets` trains one network per training-set size in a single batched loop,
   member ``i`` on the first ``sizes[i]`` points, each with its own stop rule.
   :class:`MarginSweepConfig`, :func:`margin_sweep`, and the margin a network actually reached,
   :func:`realized_margin`.
5. **The overparameterized linear construction** (Nagarajan and Kolter 2019, Section 3.1) with its
   set S' of negated noise: :func:`linear_data`, :func:`one_step_gd`, :func:`linear_sprime`,
   :func:`linear_errors`, :func:`linear_sweep`.
6. **Two concentric hyperspheres** (Nagarajan and Kolter 2019, Section 3.2 and Figure 2): the data,
   the set S' (each training point projected onto the other sphere, label flipped), the sweep over
   n and the 2-D decision-boundary slices. :func:`sphere_data`, :func:`sphere_sprime`,
   :class:`SpheresConfig`, :func:`spheres_sweep`, :func:`boundary_slice`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from .checks import (SEED, Constraint, Device, InstanceOf, Interval, Options, Tensor, boundary,
                     check_int, check_labels, check_positive, check_seeds, count, fraction,
                     positive, tuple_of)
from .config import Config, Result, param
from .data import corrupt_labels, mnist1d
from .engine import (ReplacementBatches, StackedOptimizer, StreamBatches, _margins,
                     _member_batch, fit, stop_rule)
from .models import BatchedMLP
from .train import TrainConfig, accuracy, _ensemble_loss, train_ensemble

__all__ = [
    # configs and results
    "CNNRandomizationConfig", "CorruptionConfig", "LinearConstruction", "MarginSweepConfig",
    "SpheresConfig",
    # functions
    "bartlett_bound", "boundary_slice", "bulge_width", "cap_fraction", "cnn_randomization",
    "corruption_experiment", "corruption_nn_test_error", "distance_from_init", "linear_errors",
    "linear_nn_errors", "linear_randomization", "linear_sweep", "log_ticks", "margin_sweep",
    "plot_slice", "realized_margin", "slice_points", "spheres_sweep",
]


# ---------------------------------------------------------------------------------------------
# input checks
# ---------------------------------------------------------------------------------------------
_pos = check_positive


def _sizes(name: str, values, minimum: int = 1) -> list[int]:
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(f"{name} must be a sequence of ints")
    if len(values) == 0:
        raise ValueError(f"{name} must not be empty")
    return [check_int(f"{name}[{i}]", v, minimum=minimum) for i, v in enumerate(values)]


class _MaybeDevice(Device):
    """A torch device this machine has, or None (the library's default)."""

    def describe(self) -> str:
        return super().describe() + " or None"

    def check(self, name, value):
        return value if value is None else super().check(name, value)


class _Axes(Constraint):
    """A matplotlib Axes (anything with the plotting methods used here)."""

    def describe(self) -> str:
        return "a matplotlib Axes"

    def check(self, name, value):
        if not all(hasattr(value, a) for a in ("contourf", "plot", "xaxis", "yaxis")):
            self._fail(name, value, TypeError)
        return value


_DEVICE = _MaybeDevice()
_RADII = tuple_of(positive(), min_len=2, increasing="strict")


def _matrix(name: str, w) -> torch.Tensor:
    if not isinstance(w, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(w).__name__}")
    if w.ndim < 2:
        raise ValueError(f"{name} must have at least 2 dimensions (..., out, in), got shape "
                         f"{tuple(w.shape)}")
    return w


# ---------------------------------------------------------------------------------------------
# 1. random and corrupted labels (Zhang et al. 2017)
# ---------------------------------------------------------------------------------------------
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

    FULL = dict(n_train=8000, n_test=4000, levels=tuple(np.round(np.linspace(0, 1, 11), 2)),
                width=512, depth=3, max_steps=200_000, check_every=25)

    n_train: int = param(4000, count())
    n_test: int = param(4000, count())
    levels: tuple = param((0.0, 0.5, 1.0), tuple_of(fraction(), min_len=2, increasing="strict"))
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
    curve_steps: list[int]                 # steps at which the training accuracy was measured
    curve_train_acc: np.ndarray            # (len(curve_steps), len(levels))
    init_test_error: list[float] = field(default_factory=list)
    replicate_test_error: float = float("nan")
    replicate_train_acc: float = float("nan")
    replicate_stop_step: int = -1
    model: BatchedMLP | None = None        # the trained ensemble, member i at levels[i]
    init: list | None = None               # its weights at initialization, per layer (E, out, in)
    x_train: torch.Tensor | None = None


@boundary(cfg=InstanceOf(CorruptionConfig), seed=SEED, device=_DEVICE)
def corruption_experiment(cfg: CorruptionConfig, seed: int = 0, device: str | None = None,
                          replicate: bool = True) -> CorruptionResult:
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
    ys = torch.stack([corrupt_labels(ds.y, float(f), ds.num_classes, seed=seed + 1000)
                      for f in cfg.levels] + ([ds.y] if replicate else []))
    E = len(cfg.levels)
    seeds = [seed * 100 + i for i in range(len(ys))]
    full = BatchedMLP.init(seeds, ds.dim, cfg.width, cfg.depth, ds.num_classes,
                           bias=False, device=ds.x.device)
    init_all = [w.detach().clone() for w in full.weights]
    tcfg = TrainConfig(lr=cfg.lr, batch_size=cfg.batch_size, epochs=10**9, steps=cfg.max_steps,
                       target_train_acc=cfg.target_train_acc, check_every=cfg.check_every,
                       seed=seed * 100)
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
    model = BatchedMLP([w.detach()[:E] for w in full.weights], None, act=full.act_name)
    return CorruptionResult(levels=[float(f) for f in cfg.levels],
                            test_error=(1 - test_acc[:E]).tolist(),
                            final_train_acc=train_acc[:E].tolist(), stop_step=stop[:E],
                            reached_target=[bool(a >= cfg.target_train_acc) for a in train_acc[:E]],
                            curve_steps=list(hist.step), curve_train_acc=curve[:, :E],
                            init_test_error=(1 - init_acc[:E]).tolist(),
                            replicate_test_error=float(1 - test_acc[E]) if replicate
                            else float("nan"),
                            replicate_train_acc=float(train_acc[E]) if replicate
                            else float("nan"),
                            replicate_stop_step=stop[E] if replicate else -1,
                            model=model, init=[w[:E] for w in init_all], x_train=ds.x)


@boundary(cfg=InstanceOf(CorruptionConfig), seed=SEED, device=_DEVICE)
def corruption_nn_test_error(cfg: CorruptionConfig, seed: int = 0,
                             device: str | None = None) -> list[float]:
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

    @boundary(seeds=tuple_of(SEED), channels=count(), hidden=count(), classes=count(2),
              length=count())
    def __init__(self, seeds: Sequence[int], channels: int = 32, hidden: int = 256,
                 classes: int = 10, length: int = 40):
        super().__init__()
        seeds = [check_int(f"seeds[{i}]", s, minimum=0) for i, s in enumerate(seeds)]
        if not seeds:
            raise ValueError("seeds must not be empty")
        if length != 40:
            raise ValueError("BatchedCNN1d is built for MNIST-1D signals of length 40")
        C, E = check_int("channels", channels, minimum=1), len(seeds)
        hidden = check_int("hidden", hidden, minimum=1)
        classes = check_int("classes", classes, minimum=2)
        shapes = [(C, 1, 5), (C, C, 3), (C, C, 3), (5 * C, hidden), (hidden, classes)]
        fans = [5, 3 * C, 3 * C, 5 * C, hidden]
        per = [[] for _ in shapes]
        for s in seeds:
            g = torch.Generator().manual_seed(s)
            for k, (shape, fan) in enumerate(zip(shapes, fans)):
                per[k].append((torch.rand(*shape, generator=g) * 2 - 1) / math.sqrt(fan))
        self.E, self.C = E, C
        self.convs = torch.nn.ParameterList(torch.nn.Parameter(torch.stack(w)) for w in per[:3])
        self.fcs = torch.nn.ParameterList(torch.nn.Parameter(torch.stack(w)) for w in per[3:])

    @boundary(x=Tensor("float", (2, 3)), members=Tensor("int", 1, optional=True))
    def forward(self, x: torch.Tensor, members: torch.Tensor | None = None) -> torch.Tensor:
        """Logits ``(E, n, classes)``; ``x`` is ``(n, 40)`` (shared) or ``(E, n, 40)``.

        With ``members`` (a 1-D tensor of member indices, A of them) only those members are
        computed: ``x`` is then ``(n, 40)`` or ``(A, n, 40)`` and the logits ``(A, n, classes)``.
        """
        if members is not None and (int(members.min()) < 0 or int(members.max()) >= self.E):
            raise ValueError(f"members must hold member indices in [0, {self.E})")
        return self._logits(x, members)

    def _logits(self, x: torch.Tensor, members: torch.Tensor | None = None) -> torch.Tensor:
        """:meth:`forward` without the input checks (training steps call this)."""
        convs, fcs = list(self.convs), list(self.fcs)
        if members is not None:
            convs = [w.index_select(0, members) for w in convs]
            fcs = [w.index_select(0, members) for w in fcs]
        A = convs[0].shape[0]
        if x.ndim == 2:
            x = x.unsqueeze(0).expand(A, *x.shape)
        if x.ndim != 3 or x.shape[0] != A or x.shape[2] != 40:
            raise ValueError(f"x must be (n, 40) or ({A}, n, 40), got {tuple(x.shape)}")
        h = x.transpose(0, 1)                                   # (n, A, 40): channel e = member e
        for w, pad in zip(convs, (2, 1, 1)):
            h = F.relu(F.conv1d(h, w.flatten(0, 1), stride=2, padding=pad, groups=A))
        h = h.reshape(h.shape[0], A, -1).transpose(0, 1)        # (A, n, 5C)
        h = F.relu(torch.bmm(h, fcs[0]))
        return torch.bmm(h, fcs[1])


@dataclass
class CNNRandomizationResult(Result):
    """Per member of :func:`cnn_randomization`: first the true-label runs, then the random-label runs."""

    names: list[str]
    labels: list[str]              # "true" or "random", per member
    train_acc: list[float]
    test_error: list[float]
    init_test_error: list[float]
    stop_step: list[int]
    reached_target: list[bool]

    def of(self, field_name: str, labels: str) -> list:
        """The values of ``field_name`` for the members trained on ``labels`` ("true"/"random")."""
        if labels not in ("true", "random"):
            raise ValueError(f"labels must be 'true' or 'random', got {labels!r}")
        return [v for v, l in zip(getattr(self, field_name), self.labels) if l == labels]


@boundary(cfg=InstanceOf(CNNRandomizationConfig), seed=SEED, device=_DEVICE)
def cnn_randomization(cfg: CNNRandomizationConfig, seed: int = 0,
                      device: str | None = None) -> CNNRandomizationResult:
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
    ys = torch.stack([ds.y] * K + [corrupt_labels(ds.y, 1.0, ds.num_classes, seed=seed + 1000 + r)
                                   for r in range(R)])
    E = K + R
    model = BatchedCNN1d([seed * 100 + 40 + e for e in range(E)], cfg.channels, cfg.hidden,
                         ds.num_classes).to(dev)
    with torch.no_grad():
        init_err = (1 - accuracy(model(ds.x_test), ds.y_test)).tolist()
    opt = StackedOptimizer(model.parameters(), "sgd", cfg.lr, members=E)
    batches = ReplacementBatches(cfg.n_train, cfg.batch_size,
                                 [seed * 100 + 70 + e for e in range(E)], dev)
    reached = stop_rule(target_train_acc=cfg.target_train_acc)

    def loss(step: int, idx: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        if bool(active.all()):
            return _ensemble_loss("cross_entropy", model._logits(ds.x[idx]), ys.gather(1, idx))
        live = active.nonzero().flatten().to(dev)     # only the members still training
        idx = idx.index_select(0, live)
        out = _ensemble_loss("cross_entropy", model._logits(ds.x[idx], live),
                             ys.index_select(0, live).gather(1, idx))
        return out.new_zeros(E).index_put((live,), out)

    def check(step: int, due: torch.Tensor) -> torch.Tensor:
        met = torch.zeros(E, dtype=torch.bool)
        live = due.nonzero().flatten()
        if len(live):
            with torch.no_grad():                     # only the members the check is due for
                rows = live.to(dev)
                met[live] = reached(model._logits(ds.x, rows), ys.index_select(0, rows)).cpu()
        return met

    stop = fit(loss, opt, cfg.max_steps, batches, check, every=cfg.check_every,
               active_only=True).stop_step
    with torch.no_grad():
        test_err = (1 - accuracy(model(ds.x_test), ds.y_test)).tolist()
        train_acc = accuracy(model(ds.x), ys)
    names = [f"true labels, run {k + 1}" for k in range(K)] + \
        [f"random labels, run {r + 1}" for r in range(R)]
    return CNNRandomizationResult(names=names, labels=["true"] * K + ["random"] * R,
                                  train_acc=train_acc.tolist(), test_error=test_err,
                                  init_test_error=init_err, stop_step=stop,
                                  reached_target=[bool(a >= cfg.target_train_acc)
                                                  for a in train_acc])


@boundary(cfg=InstanceOf(CNNRandomizationConfig), seed=SEED, device=_DEVICE)
def linear_randomization(cfg: CNNRandomizationConfig, seed: int = 0,
                         device: str | None = None) -> CNNRandomizationResult:
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
    ys = torch.stack([ds.y] * K + [corrupt_labels(ds.y, 1.0, C, seed=seed + 1000 + r)
                                   for r in range(R)])
    E = K + R
    gens = [torch.Generator().manual_seed(seed * 100 + 90 + e) for e in range(E)]
    W = torch.nn.Parameter(torch.stack([(torch.rand(ds.dim, C, generator=g) * 2 - 1)
                                        / math.sqrt(ds.dim) for g in gens]).to(dev))
    b = torch.nn.Parameter(torch.zeros(E, 1, C, device=dev))

    def logits(x: torch.Tensor) -> torch.Tensor:          # x (n, 40) or (E, n, 40) -> (E, n, C)
        return torch.baddbmm(b, x if x.ndim == 3 else x.expand(E, *x.shape), W)

    with torch.no_grad():
        init_err = (1 - accuracy(logits(ds.x_test), ds.y_test)).tolist()
    opt = StackedOptimizer([W, b], "sgd", cfg.lr, members=E)
    batches = ReplacementBatches(cfg.n_train, cfg.batch_size,
                                 [seed * 100 + 70 + e for e in range(E)], dev)
    reached = stop_rule(target_train_acc=cfg.target_train_acc)

    def loss(step: int, idx: torch.Tensor) -> torch.Tensor:
        return _ensemble_loss("cross_entropy", logits(ds.x[idx]), ys.gather(1, idx))

    def check(step: int, due: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return reached(logits(ds.x), ys).cpu() & due

    stop = fit(loss, opt, cfg.max_steps, batches, check, every=cfg.check_every).stop_step
    with torch.no_grad():
        test_err = (1 - accuracy(logits(ds.x_test), ds.y_test)).tolist()
        train_acc = accuracy(logits(ds.x), ys)
    names = [f"linear, true labels, run {k + 1}" for k in range(K)] + \
        [f"linear, random labels, run {r + 1}" for r in range(R)]
    return CNNRandomizationResult(names=names, labels=["true"] * K + ["random"] * R,
                                  train_acc=train_acc.tolist(), test_error=test_err,
                                  init_test_error=init_err, stop_step=stop,
                                  reached_target=[bool(a >= cfg.target_train_acc)
                                                  for a in train_acc])


# ---------------------------------------------------------------------------------------------
# 2. norms and norm-based bounds
# ---------------------------------------------------------------------------------------------
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
def distance_from_init(weights: Sequence[torch.Tensor], init: Sequence[torch.Tensor]) -> torch.Tensor:
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
        raise ValueError("weights and init must be non-empty lists of the same length")
    total = 0.0
    for l, (w, w0) in enumerate(zip(weights, init)):
        _matrix(f"weights[{l}]", w)
        _matrix(f"init[{l}]", w0)
        if w.shape != w0.shape:
            raise ValueError(f"weights[{l}] and init[{l}] differ in shape: {tuple(w.shape)} vs "
                             f"{tuple(w0.shape)}")
        total = total + ((w - w0) ** 2).sum((-1, -2))
    return torch.as_tensor(total).sqrt()


@dataclass
class NetworkMeasures(Result):
    """Norms and bounds of one trained network (see :func:`network_measures`)."""

    spectral: list[float]            # ||W_l||_2 per layer
    spectral_product: float          # prod_l ||W_l||_2
    distance: float                  # sqrt(sum_l ||W_l - W_l^0||_F^2)
    bartlett: float                  # Bartlett-Foster-Telgarsky complexity term, constants dropped
    neyshabur: float                 # Neyshabur-Bhojanapalli-Srebro complexity term, constants dropped


@boundary(data_norm=positive(), gamma=positive(), n=count())
def bartlett_bound(weights: Sequence[torch.Tensor], init: Sequence[torch.Tensor],
                   data_norm: float, gamma: float, n: int,
                   spectral: Sequence[float] | None = None) -> float:
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
    ratio = sum((float(norm_21(w - w0)) / s) ** (2 / 3)
                for w, w0, s in zip(weights, init, spec))
    return float(data_norm * np.prod(spec) * ratio ** 1.5 / (gamma * n))


@boundary(input_norm=positive(), gamma=positive(), n=count())
def neyshabur_bound(weights: Sequence[torch.Tensor], init: Sequence[torch.Tensor], input_norm: float,
                    gamma: float, n: int, spectral: Sequence[float] | None = None) -> float:
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
    ratio = sum(float(((w - w0) ** 2).sum()) / s ** 2 for w, w0, s in zip(weights, init, spec))
    val = input_norm ** 2 * L ** 2 * h * math.log(L * h) * np.prod(spec) ** 2 * ratio
    return float(math.sqrt(val / (gamma ** 2 * n)))


def _check_bound_args(weights, init, input_norm, gamma, n, spectral=None,
                      norm_name="input_norm") -> None:
    if len(weights) == 0 or len(weights) != len(init):
        raise ValueError("weights and init must be non-empty lists of the same length")
    for l, (w, w0) in enumerate(zip(weights, init)):
        if _matrix(f"weights[{l}]", w).ndim != 2 or _matrix(f"init[{l}]", w0).shape != w.shape:
            raise ValueError(f"weights[{l}] and init[{l}] must be matrices of the same shape")
    _pos(norm_name, input_norm)
    _pos("gamma", gamma)
    check_int("n", n, minimum=1)
    if spectral is not None:
        if len(spectral) != len(weights):
            raise ValueError(f"spectral must hold one norm per layer ({len(weights)}), got "
                             f"{len(spectral)}")
        for i, v in enumerate(spectral):
            _pos(f"spectral[{i}]", v)


@boundary(x=Tensor("float", 2), gamma=positive())
def network_measures(weights: Sequence[torch.Tensor], init: Sequence[torch.Tensor],
                     x: torch.Tensor, gamma: float) -> NetworkMeasures:
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
    return NetworkMeasures(spectral=spec, spectral_product=float(np.prod(spec)),
                           distance=float(distance_from_init(list(weights), list(init))),
                           bartlett=bartlett_bound(weights, init, data_norm, gamma, n, spec),
                           neyshabur=neyshabur_bound(weights, init, B, gamma, n, spec))


# ---------------------------------------------------------------------------------------------
# 3. power-law fits
# ---------------------------------------------------------------------------------------------
@dataclass
class PowerLawFit(Result):
    """``y ~ C x^slope`` fitted by least squares on ``log y`` against ``log x``."""

    slope: float
    slope_se: float      # standard error of the slope (nan with only two points)
    intercept: float     # log C (natural log)

    def __call__(self, x) -> np.ndarray:
        return np.exp(self.intercept) * np.asarray(x, dtype=float) ** self.slope


def _float_array(name: str, v) -> np.ndarray:
    if isinstance(v, (str, bytes, dict)) or v is None:
        raise TypeError(f"{name} must be a sequence of numbers, got {type(v).__name__}")
    try:
        return np.asarray(v, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a sequence of numbers, got {v!r}") from None


def power_law_fit(x, y) -> PowerLawFit:
    """Fit ``y = C x^a`` by ordinary least squares in log-log coordinates.

    The standard error is the usual OLS one, ``sqrt(RSS / (k - 2) / sum (log x - mean)^2)`` for
    ``k`` points: it measures how well a straight line describes the points, not the seed-to-seed
    spread.

    Raises
    ------
    ValueError
        If fewer than two points are given, lengths differ, any value is not positive and finite,
        or all ``x`` are equal.
    """
    x, y = _float_array("x", x), _float_array("y", y)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(f"x and y must be 1-D of the same length, got {x.shape} and {y.shape}")
    if len(x) < 2:
        raise ValueError("power_law_fit needs at least two points")
    for name, v in (("x", x), ("y", y)):
        if not (np.all(np.isfinite(v)) and np.all(v > 0)):
            raise ValueError(f"{name} must be positive and finite for a log-log fit, got {v}")
    lx, ly = np.log(x), np.log(y)
    sxx = ((lx - lx.mean()) ** 2).sum()
    if sxx == 0:
        raise ValueError("x must not be constant")
    slope = float(((lx - lx.mean()) * (ly - ly.mean())).sum() / sxx)
    intercept = float(ly.mean() - slope * lx.mean())
    if len(x) > 2:
        rss = float(((ly - intercept - slope * lx) ** 2).sum())
        se = math.sqrt(rss / (len(x) - 2) / sxx)
    else:
        se = float("nan")
    return PowerLawFit(slope=slope, slope_se=se, intercept=intercept)


@boundary(x_train=Tensor("float", 2), y_train=Tensor(None, 1), x=Tensor("float", 2), chunk=count())
def nearest_neighbour_predict(x_train: torch.Tensor, y_train: torch.Tensor, x: torch.Tensor,
                              chunk: int = 2048) -> torch.Tensor:
    """Labels that a 1-nearest-neighbour classifier trained on ``(x_train, y_train)`` gives ``x``.

    The chapter's measured null: a learner that interpolates every training set by construction
    and has no architecture, no optimizer and no norm. Euclidean distance, computed in blocks of
    ``chunk`` rows of ``x``; a tie goes to the training point that comes first.

    Raises
    ------
    ValueError
        If ``x`` and ``x_train`` have different numbers of columns, or ``y_train`` is not one label
        per training row.
    """
    if x.shape[1] != x_train.shape[1]:
        raise ValueError(f"x must have {x_train.shape[1]} columns (those of x_train), got "
                         f"{x.shape[1]}")
    if y_train.shape != (x_train.shape[0],):
        raise ValueError(f"y_train must hold one label per row of x_train ({x_train.shape[0]}), "
                         f"got shape {tuple(y_train.shape)}")
    xt = x_train.to(x.dtype)
    sq = (xt * xt).sum(1)
    out = []
    for i in range(0, len(x), chunk):
        block = x[i:i + chunk]
        # ||a - b||^2 = ||b||^2 - 2 a.b (+ ||a||^2, the same for every training point)
        d = sq[None, :] - 2 * block @ xt.T
        out.append(y_train[d.argmin(1)])
    return torch.cat(out) if out else y_train[:0]


# ---------------------------------------------------------------------------------------------
# 4. one network per training-set size, trained to a fixed margin
# ---------------------------------------------------------------------------------------------
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


@boundary(model=InstanceOf(BatchedMLP), i=count(0), x=Tensor("float", 2))
def member_logits(model: BatchedMLP, i: int, x: torch.Tensor) -> torch.Tensor:
    """Logits ``(n, C)`` of member ``i`` of ``model`` on ``x`` (n, d), without copying the ensemble."""
    if not 0 <= i < model.size:
        raise ValueError(f"i must lie in [0, {model.size}), got {i}")
    if x.shape[1] != model.weights[0].shape[-1]:
        raise ValueError(f"x must have {model.weights[0].shape[-1]} columns (the input size), "
                         f"got {x.shape[1]}")
    return _member_logits(model, i, x)


def _member_logits(model, i, x):
    bs = [p[i] for p in model.biases] if model.has_bias else None
    return _forward([w[i] for w in model.weights], bs, x, model.act)


@boundary(model=InstanceOf(BatchedMLP), x=Tensor("float", 2), y=Tensor("int", 1),
          sizes=None, cfg=InstanceOf(TrainConfig), seeds=None, check_every_epochs=positive(),
          max_epochs=positive())
def train_on_subsets(model: BatchedMLP, x: torch.Tensor, y: torch.Tensor, sizes: Sequence[int],
                     cfg: TrainConfig, seeds: Sequence[int] | None = None,
                     check_every_epochs: float = 1.0, max_epochs: float = 1000.0) -> SubsetTraining:
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
        raise ValueError(f"sizes must have one entry per member ({E}), got {len(sizes)}")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"x must be (n, d) and y (n,); got {tuple(x.shape)} and {tuple(y.shape)}")
    if max(sizes) > x.shape[0]:
        raise ValueError(f"sizes must not exceed len(x) = {x.shape[0]}, got {max(sizes)}")
    if x.shape[1] != model.weights[0].shape[-1]:
        raise ValueError(f"x must have {model.weights[0].shape[-1]} columns (the input size), "
                         f"got {x.shape[1]}")
    check_labels("y", y, num_classes=model.weights[-1].shape[-2], n=x.shape[0])
    if seeds is not None:
        seeds = check_seeds("seeds", seeds)
    cfg.validate()
    if cfg.optimizer != "sgd" or cfg.momentum != 0 or cfg.weight_decay != 0:
        raise ValueError("train_on_subsets supports plain SGD only (optimizer='sgd', momentum=0, "
                         "weight_decay=0)")
    if cfg.batch_size is None:
        raise ValueError("cfg.batch_size must be set (full-batch training would not need this)")
    if cfg.target_train_acc is None and cfg.margin_gamma is None:
        raise ValueError("cfg must set a stop rule (target_train_acc or margin_gamma)")
    _pos("check_every_epochs", check_every_epochs)
    _pos("max_epochs", max_epochs)
    seeds = [cfg.seed + i for i in range(E)] if seeds is None else [int(s) for s in seeds]
    if len(seeds) != E:
        raise ValueError(f"seeds must have one entry per member ({E}), got {len(seeds)}")
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
            for i in due.nonzero().flatten().tolist():     # member i on its own training set
                met[i] = rule(_member_logits(model, i, x[:sizes[i]]), y[:sizes[i]])
        return met

    run = fit(loss, opt, max_steps, batches, check, every=check_period, active_only=True)
    return SubsetTraining(stop_step=run.stop_step, met_rule=run.met_rule,
                          epochs=[s * b / n for s, n in zip(run.stop_step, sizes)])


@boundary(logits=Tensor("float", 2), y=Tensor("int", 1), fraction=fraction())
def realized_margin(logits: torch.Tensor, y: torch.Tensor, fraction: float = 0.99) -> float:
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
        raise ValueError(f"logits (n, C) and y (n,) must match and be non-empty, got "
                         f"{tuple(logits.shape)} and {tuple(y.shape)}")
    check_labels("y", y, num_classes=logits.shape[1], n=len(y))
    m = torch.sort(_margins(logits, y)).values            # as the stop rule computes them
    n = len(m)
    keep = max(1, math.ceil(fraction * n - 1e-9))       # points that must clear the margin
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

    FULL = dict(sizes=(1000, 2000, 4000, 8000, 16000, 32000), n_test=8000, width=1024, depth=5,
                gamma=10.0, check_every_epochs=1.0)

    sizes: tuple = param((500, 1000, 2000, 4000, 8000),
                         tuple_of(count(), min_len=2, increasing="strict"))
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
    realized_margin: list[float] = field(default_factory=list)   # see realized_margin()

    def series(self) -> dict[str, np.ndarray]:
        """The quantities plotted against n, by name."""
        return {"test error": np.asarray(self.test_error),
                "distance from init": np.array([m.distance for m in self.measures]),
                "product of spectral norms": np.array([m.spectral_product for m in self.measures]),
                "Bartlett et al. bound": np.array([m.bartlett for m in self.measures]),
                "Neyshabur et al. bound": np.array([m.neyshabur for m in self.measures])}


@boundary(cfg=InstanceOf(MarginSweepConfig), seed=SEED, device=_DEVICE)
def margin_sweep(cfg: MarginSweepConfig, seed: int = 0, device: str | None = None,
                 fixed_size: bool = False) -> MarginSweepResult:
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
    model = BatchedMLP.init(seeds, ds.dim, cfg.width, cfg.depth, ds.num_classes, bias=False,
                            device=ds.x.device)
    init = [w.detach().clone() for w in model.weights]
    with torch.no_grad():
        init_err = (1 - accuracy(model(ds.x_test), ds.y_test)).tolist()
    init_spec = [float(np.prod([float(spectral_norm(w0[i])) for w0 in init])) for i in range(E)]
    tcfg = TrainConfig(lr=cfg.lr, batch_size=cfg.batch_size, margin_gamma=cfg.gamma,
                       margin_fraction=cfg.margin_fraction, seed=seed)
    run = train_on_subsets(model, ds.x, ds.y, used, tcfg, seeds=seeds,
                           check_every_epochs=cfg.check_every_epochs, max_epochs=cfg.max_epochs)
    with torch.no_grad():
        test_err = (1 - accuracy(model(ds.x_test), ds.y_test)).tolist()
        realized = [realized_margin(_member_logits(model, i, ds.x[:n]), ds.y[:n],
                                    cfg.margin_fraction) for i, n in enumerate(used)]
    measures = [network_measures([w[i].detach() for w in model.weights], [w0[i] for w0 in init],
                                 ds.x[:n], cfg.gamma) for i, n in enumerate(used)]
    res = MarginSweepResult(sizes=sizes, test_error=test_err, met_margin=run.met_rule,
                            epochs=run.epochs, measures=measures, init_test_error=init_err,
                            init_spectral_product=init_spec, realized_margin=realized)
    res.fits = {k: power_law_fit(sizes, v) for k, v in res.series().items()}
    return res


# ---------------------------------------------------------------------------------------------
# 5. the overparameterized linear construction (Nagarajan and Kolter 2019, Section 3.1)
# ---------------------------------------------------------------------------------------------
@dataclass
class LinearConstruction(Config):
    """Nagarajan and Kolter's distribution for an overparameterized linear classifier.

    An input is ``x = (x1, x2)`` with ``x1`` in R^K and ``x2`` in R^D; the label ``y`` is +1 or -1
    with probability 1/2, ``x1 = 2 y u`` for a fixed ``u`` with ``||u|| = 1/sqrt(m)`` (``m`` the
    training-set size; we take ``u`` along the all-ones direction) and ``x2 ~ N(0, (noise_var/D) I)``
    with ``noise_var = 32``. The learner takes one gradient step of size 1 from ``w = 0`` on the
    linear loss ``-sum_i y_i w.x_i`` (the first step of hinge-loss GD), so ``w = sum_i y_i x_i``.

    Parameters
    ----------
    K : int, default 1
        Dimension of ``x1``, the signal; an int >= 1.
    D : int, default 20000
        Dimension of ``x2``, the noise; an int >= 1.
    m : int, default 64
        Training-set size; an int >= 1.
    noise_var : float, default 32.0
        Noise variance; a finite number > 0.
    signal : float, default 2.0
        Scale of the signal: ``x1 = signal * y * u``; a finite number > 0.

    References
    ----------
    Nagarajan and Kolter (2019), "Uniform convergence may be unable to explain generalization in
    deep learning".
    """

    K: int = param(1, count())
    D: int = param(20_000, count())
    m: int = param(64, count())
    noise_var: float = param(32.0, positive())
    signal: float = param(2.0, positive())

    @property
    def u(self) -> torch.Tensor:
        """The signal direction, ``||u|| = 1/sqrt(m)``."""
        return torch.full((self.K,), 1.0 / math.sqrt(self.K * self.m), dtype=torch.float64)

    @boundary(n=count(), generator=InstanceOf(torch.Generator))
    def sample(self, n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``n`` draws ``(x1 (n, K), x2 (n, D), y (n,) in {-1, +1})`` in float64."""
        self.validate()
        n = check_int("n", n, minimum=1)
        y = torch.randint(0, 2, (n,), generator=generator).to(torch.float64) * 2 - 1
        x1 = self.signal * y[:, None] * self.u[None, :]
        x2 = torch.randn(n, self.D, generator=generator, dtype=torch.float64) * math.sqrt(
            self.noise_var / self.D)
        return x1, x2, y


@boundary(cfg=InstanceOf(LinearConstruction), seed=SEED)
def linear_data(cfg: LinearConstruction, seed: int = 0):
    """A training set of ``cfg.m`` points from :class:`LinearConstruction` (``x1, x2, y``)."""
    seed = check_int("seed", seed, minimum=0)
    return cfg.validate().sample(cfg.m, torch.Generator().manual_seed(seed))


@boundary(x1=Tensor("float", 2), x2=Tensor("float", 2), y=Tensor("float", 1))
def one_step_gd(x1: torch.Tensor, x2: torch.Tensor,
                y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Weights after one step of size 1 from zero on ``-sum_i y_i w.x_i``.

    The step gives ``w = sum_i y_i x_i``.

    Raises
    ------
    ValueError
        If the shapes disagree or a label is not +-1.
    """
    _check_linear(x1, x2, y)
    return (y[:, None] * x1).sum(0), (y[:, None] * x2).sum(0)


def _check_linear(x1, x2, y) -> None:
    for name, t in (("x1", x1), ("x2", x2), ("y", y)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if x1.ndim != 2 or x2.ndim != 2 or y.ndim != 1 or not (len(x1) == len(x2) == len(y)):
        raise ValueError("x1 must be (n, K), x2 (n, D) and y (n,) with the same n")
    if not bool(((y == 1) | (y == -1)).all()):
        raise ValueError("y must hold labels +1 and -1")


@boundary(x1=Tensor("float", 2), x2=Tensor("float", 2), y=Tensor("float", 1))
def linear_sprime(x1: torch.Tensor, x2: torch.Tensor, y: torch.Tensor):
    """Nagarajan and Kolter's S': the training set with its noise part negated.

    ``S' = (x1, -x2, y)``. Negating ``x2`` leaves the distribution unchanged, so S'
    is itself an i.i.d. sample of ``cfg.m`` points, which is what lets it defeat
    every two-sided uniform-convergence bound.
    """
    _check_linear(x1, x2, y)
    return x1, -x2, y


@boundary(w1=Tensor("float", 1), w2=Tensor("float", 1), x1=Tensor("float", 2),
          x2=Tensor("float", 2))
def linear_predict(w1: torch.Tensor, w2: torch.Tensor, x1: torch.Tensor,
                   x2: torch.Tensor) -> torch.Tensor:
    """``sign(w1.x1 + w2.x2)`` as +-1 (0 counts as an error for either label)."""
    if len(x1) != len(x2):
        raise ValueError(f"x1 and x2 must have the same number of rows, got {len(x1)} and "
                         f"{len(x2)}")
    if x1.shape[1] != len(w1):
        raise ValueError(f"w1 must have {x1.shape[1]} entries (the columns of x1), got {len(w1)}")
    if x2.shape[1] != len(w2):
        raise ValueError(f"w2 must have {x2.shape[1]} entries (the columns of x2), got {len(w2)}")
    return _predict(w1, w2, x1, x2)


def _predict(w1, w2, x1, x2) -> torch.Tensor:
    return torch.sign(x1 @ w1 + x2 @ w2)


@dataclass
class LinearErrors(Result):
    train: float
    test: float          # exact given the learned w (see linear_errors)
    sprime: float
    uc_lower_bound: float
    fresh: float = float("nan")     # error on an independent sample of m points (S' 's control)


@boundary(cfg=InstanceOf(LinearConstruction), seed=SEED)
def linear_errors(cfg: LinearConstruction, seed: int = 0) -> LinearErrors:
    """Train by one GD step on ``cfg.m`` points and measure the errors.

    Train by one GD step on ``cfg.m`` points; return training, test and S' errors and the UC floor.

    The test error is computed exactly given the learned ``(w1, w2)``: for a fresh point,
    ``y (w1.x1 + w2.x2) = signal * w1.u + N(0, ||w2||^2 noise_var / D)``, so the error is
    ``Phi(-signal * w1.u / (||w2|| sqrt(noise_var / D)))``. ``uc_lower_bound`` is
    ``max(0, err_S' - err_test)``, the quantity that the S' argument puts under every two-sided
    uniform-convergence bound (Nagarajan and Kolter 2019, Section 3). ``fresh`` is the error on an
    independent sample of ``cfg.m`` points: distributed like S' but not built from S.

    Parameters
    ----------
    cfg : LinearConstruction
        The experiment's settings; a LinearConstruction.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].

    Returns
    -------
    LinearErrors
        Training, test and S' errors and the uniform-convergence floor.

    References
    ----------
    Nagarajan and Kolter (2019), "Uniform convergence may be unable to explain generalization in
    deep learning".
    """
    x1, x2, y = linear_data(cfg, seed)
    w1, w2 = one_step_gd(x1, x2, y)
    train = float((_predict(w1, w2, x1, x2) != y).double().mean())
    s1, s2, sy = linear_sprime(x1, x2, y)
    sprime = float((_predict(w1, w2, s1, s2) != sy).double().mean())
    fresh_gen = torch.Generator().manual_seed(10**6 + check_int("seed", seed, minimum=0))
    f1, f2, fy = cfg.sample(cfg.m, fresh_gen)
    fresh = float((_predict(w1, w2, f1, f2) != fy).double().mean())
    mean = cfg.signal * float(w1 @ cfg.u)
    sd = float(w2.norm()) * math.sqrt(cfg.noise_var / cfg.D)
    test = 0.5 * math.erfc(mean / sd / math.sqrt(2)) if sd > 0 else float(mean <= 0)
    return LinearErrors(train=train, test=test, sprime=sprime,
                        uc_lower_bound=max(0.0, sprime - test), fresh=fresh)


@dataclass
class LinearNNErrors(Result):
    """What :func:`linear_nn_errors` measured: the 1-nearest-neighbour null on one draw of S."""

    test: float          # error on n_test fresh points
    sprime: float        # error on S'


@boundary(cfg=InstanceOf(LinearConstruction), seed=SEED, n_test=count())
def linear_nn_errors(cfg: LinearConstruction, seed: int = 0, n_test: int = 200) -> LinearNNErrors:
    """The measured null of Experiment 3: a 1-nearest-neighbour classifier on the same S.

    Uses the training set of :func:`linear_errors` with the same ``seed`` (so the same S and S'),
    classifies S' and ``n_test`` fresh points (drawn from a generator seeded apart from S) by
    :func:`nearest_neighbour_predict` on the whole input ``(x1, x2)``. The 1-NN learner also fits
    S exactly, but it has no one-step-GD weight vector that memorizes the noise of S.

    Parameters
    ----------
    cfg : LinearConstruction
        The experiment's settings; a LinearConstruction.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    n_test : int, default 200
        Number of test examples; an int >= 1.

    Returns
    -------
    LinearNNErrors
        The nearest-neighbour classifier's errors.
    """
    seed = check_int("seed", seed, minimum=0)
    x1, x2, y = linear_data(cfg, seed)
    s1, s2, sy = linear_sprime(x1, x2, y)
    t1, t2, ty = cfg.sample(n_test, torch.Generator().manual_seed(2 * 10**6 + seed))
    xs = torch.cat([x1, x2], 1)

    def err(a, b, lab):
        return float((nearest_neighbour_predict(xs, y, torch.cat([a, b], 1)) != lab).double().mean())

    return LinearNNErrors(test=err(t1, t2, ty), sprime=err(s1, s2, sy))


@boundary(m=count(), Ds=None, seeds=None, K=count(), noise_var=positive())
def linear_sweep(m: int, Ds: Sequence[int], seeds: Sequence[int], K: int = 1,
                 noise_var: float = 32.0) -> dict[str, np.ndarray]:
    """Mean training, test and S' errors and the UC floor over ``seeds``, for each ``D`` in ``Ds``.

    Parameters
    ----------
    m : int
        Training points; an int >= 1.
    Ds : Sequence[int]
        The input dimensions.
    seeds : Sequence[int]
        One seed per repetition.
    K : int, default 1
        Dimension of the signal; an int >= 1.
    noise_var : float, default 32.0
        Noise variance; a finite number > 0.

    Returns
    -------
    dict[str, np.ndarray]
        The mean errors, by name, one entry per ``D``.
    """
    Ds = _sizes("Ds", Ds)
    seeds = _sizes("seeds", seeds, minimum=0)
    out = {k: np.zeros(len(Ds)) for k in ("train", "test", "sprime", "uc_lower_bound", "fresh")}
    for j, D in enumerate(Ds):
        errs = [linear_errors(LinearConstruction(K=K, D=D, m=m, noise_var=noise_var), s) for s in seeds]
        for k in out:
            out[k][j] = np.mean([getattr(e, k) for e in errs])
    out["D"] = np.asarray(Ds)
    return out


def _exact_test_error(cfg: LinearConstruction, w1: torch.Tensor, w2: torch.Tensor) -> float:
    mean = cfg.signal * float(w1 @ cfg.u)
    sd = float(w2.norm()) * math.sqrt(cfg.noise_var / cfg.D)
    return 0.5 * math.erfc(mean / sd / math.sqrt(2)) if sd > 0 else float(mean <= 0)


# ---------------------------------------------------------------------------------------------
# 6. two concentric hyperspheres (Nagarajan and Kolter 2019, Section 3.2, Figure 2)
# ---------------------------------------------------------------------------------------------
@boundary(n=count(), d=count(2), radii=_RADII)
def sphere_data(n: int, d: int, radii: tuple = (1.0, 1.2), generator: torch.Generator | None = None):
    """``n`` points, label 0 uniform on the sphere of radius ``radii[0]``, label 1 on ``radii[1]``.

    Labels are fair coin flips; directions are uniform on the unit sphere of R^d.
    """
    n, d = check_int("n", n, minimum=1), check_int("d", d, minimum=2)
    if n * d > 10**9:
        raise ValueError(f"n * d must be at most 1e9 values, got n={n}, d={d}")
    r0, r1 = _radii(radii)
    g = generator if generator is not None else torch.Generator().manual_seed(0)
    y = torch.randint(0, 2, (n,), generator=g)
    z = torch.randn(n, d, generator=g)
    z = z / z.norm(dim=1, keepdim=True)
    r = torch.where(y == 1, torch.tensor(r1), torch.tensor(r0))
    return z * r[:, None], y


def _radii(radii) -> tuple[float, float]:
    if not isinstance(radii, (tuple, list)) or len(radii) != 2:
        raise TypeError("radii must be a pair (inner, outer)")
    r0, r1 = _pos("radii[0]", radii[0]), _pos("radii[1]", radii[1])
    if r0 >= r1:
        raise ValueError(f"radii must satisfy inner < outer, got {radii}")
    return r0, r1


@boundary(x=Tensor("float", 2), y=Tensor("int", 1), radii=_RADII, atol=positive())
def sphere_sprime(x: torch.Tensor, y: torch.Tensor, radii: tuple = (1.0, 1.2), atol: float = 1e-4):
    """S' for the spheres: each point projected onto the *other* sphere, its label flipped.

    A point ``x`` with label 0 (radius ``r0``) becomes ``x * r1 / r0`` with label 1, and vice versa,
    so every S' point is correctly labelled for where it lies: its true label is the flipped one.

    Raises
    ------
    ValueError
        If a point does not lie (within ``atol``) on the sphere its label names.
    """
    r0, r1 = _radii(radii)
    if not isinstance(x, torch.Tensor) or x.ndim != 2 or not isinstance(y, torch.Tensor) \
            or y.shape != (x.shape[0],):
        raise ValueError("x must be (n, d) and y (n,) tensors")
    if not bool(((y == 0) | (y == 1)).all()):
        raise ValueError("y must hold labels 0 and 1")
    own = torch.where(y == 1, torch.tensor(r1, dtype=x.dtype), torch.tensor(r0, dtype=x.dtype))
    if not torch.allclose(x.norm(dim=1), own.to(x.device), atol=atol):
        raise ValueError("every x must lie on the sphere of its label's radius")
    other = torch.where(y == 1, torch.tensor(r0, dtype=x.dtype), torch.tensor(r1, dtype=x.dtype))
    return x * (other / own).to(x.device)[:, None], 1 - y


@dataclass
class SpheresConfig(Config):
    """Hyperspheres experiment: a wide one-hidden-layer ReLU net per n, trained to a margin.

    ``FULL`` is the paper's setting (Nagarajan and Kolter 2019, Sec. 3.2): d = 1000, radii 1 and
    1.1, 100 000 hidden units, margin 10 on 99% of the points; the learning rate and batch size,
    which the paper does not state, stay those of the authors' public notebook (0.5, 64).

    Parameters
    ----------
    d : int, default 200
        Input dimension; an int >= 2.
    radii : tuple, default (1.0, 1.2)
        (inner, outer). a tuple (at least 2 items, strictly increasing) of items each a finite
        number > 0.
    sizes : tuple, default (256, 512, 1024, 2048)
        Training-set sizes; a tuple (at least 2 items, strictly increasing) of items each an int >=
        1.
    n_test : int, default 4000
        Number of test examples; an int >= 1.
    width : int, default 2000
        Hidden width; an int >= 1.
    lr : float, default 0.5
        Learning rate; a finite number > 0.
    batch_size : int, default 64
        Minibatch size; an int >= 1.
    gamma : float, default 4.0
        The margin; a finite number > 0.
    margin_fraction : float, default 0.99
        Fraction of training points that must reach the margin; a finite number in [0, 1].
    max_epochs : float, default 3000.0
        Most training epochs; a finite number > 0.
    """

    FULL = dict(d=1000, radii=(1.0, 1.1), sizes=(1024, 2048, 4096, 8192), width=100_000,
                lr=0.5, gamma=10.0, n_test=4000)

    d: int = param(200, count(2))
    radii: tuple = param((1.0, 1.2), tuple_of(positive(), min_len=2, increasing="strict"),
                         doc="(inner, outer)")
    sizes: tuple = param((256, 512, 1024, 2048), tuple_of(count(), min_len=1, increasing="strict"))
    n_test: int = param(4000, count())
    width: int = param(2000, count())
    lr: float = param(0.5, positive())
    batch_size: int = param(64, count())
    gamma: float = param(4.0, positive())
    margin_fraction: float = param(0.99, fraction())
    max_epochs: float = param(3000.0, positive())

    def _check_together(self) -> None:
        if len(self.radii) != 2:
            self._refuse("radii", "a pair (inner, outer) with inner < outer")


@dataclass
class SpheresResult(Result):
    sizes: list[int]
    test_error: list[float]
    sprime_error: list[float]
    train_error: list[float]
    met_margin: list[bool]
    epochs: list[float]
    model: BatchedMLP            # member i was trained on x_train[:sizes[i]]
    x_train: torch.Tensor
    y_train: torch.Tensor
    init_test_error: list[float] = field(default_factory=list)     # before training
    projected_test_error: list[float] = field(default_factory=list)  # fresh points, projected
    nn_test_error: list[float] = field(default_factory=list)   # 1-NN on the same training set
    nn_sprime_error: list[float] = field(default_factory=list)  # 1-NN on the same S'


@boundary(cfg=InstanceOf(SpheresConfig), seed=SEED, device=_DEVICE)
def spheres_sweep(cfg: SpheresConfig, seed: int = 0, device: str | None = None) -> SpheresResult:
    """Nagarajan and Kolter's hypersphere experiment: test error and S' error against n.

    One network per size (nested prefixes of one sample), all trained in one batched loop by
    :func:`train_on_subsets` until ``margin_fraction`` of their training points have margin
    ``gamma``. S' error is each member's error on the S' of its own training set;
    ``projected_test_error`` is its error on the test points projected the same way (a set with
    the same law as S' that was not built from the training set). ``nn_test_error`` and
    ``nn_sprime_error`` are the test and S' errors of a 1-nearest-neighbour classifier on the same
    training prefix (:func:`nearest_neighbour_predict`), the chapter's measured null.

    Parameters
    ----------
    cfg : SpheresConfig
        The experiment's settings; a SpheresConfig.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    device : str | None, default None
        Torch device of the run (default: ``GTLIB_DEVICE``); an available torch device ('cpu',
        'cuda', 'cuda:<k>', 'mps' or a torch.device) or None.

    Returns
    -------
    SpheresResult
        Test error and S' error, per training-set size.

    References
    ----------
    Nagarajan and Kolter (2019), "Uniform convergence may be unable to explain generalization in
    deep learning".
    Gilmer et al. (2018), "Adversarial Spheres".
    """
    cfg.validate()
    seed = check_int("seed", seed, minimum=0)
    dev = device or "cpu"
    g = torch.Generator().manual_seed(seed * 7919 + 13)
    x, y = sphere_data(max(cfg.sizes), cfg.d, cfg.radii, g)
    xt, yt = sphere_data(cfg.n_test, cfg.d, cfg.radii, g)
    xp, yp = sphere_sprime(xt, yt, cfg.radii)       # fresh points projected: S' 's control
    x, y, xt, yt, xp, yp = (t.to(dev) for t in (x, y, xt, yt, xp, yp))
    E = len(cfg.sizes)
    seeds = [seed * 100 + 70 + i for i in range(E)]
    model = BatchedMLP.init(seeds, cfg.d, cfg.width, 1, 2, bias=True, device=dev)
    with torch.no_grad():
        init_err = (1 - accuracy(model(xt), yt)).tolist()
    tcfg = TrainConfig(lr=cfg.lr, batch_size=cfg.batch_size, margin_gamma=cfg.gamma,
                       margin_fraction=cfg.margin_fraction, seed=seed)
    run = train_on_subsets(model, x, y, list(cfg.sizes), tcfg, seeds=seeds, max_epochs=cfg.max_epochs)
    with torch.no_grad():
        test_err = (1 - accuracy(model(xt), yt)).tolist()
        proj_err = (1 - accuracy(model(xp), yp)).tolist()
        sp_err, tr_err, nn_te, nn_sp = [], [], [], []
        for i, n in enumerate(cfg.sizes):
            xs, ys = sphere_sprime(x[:n], y[:n], cfg.radii)
            sp_err.append(1 - accuracy(member_logits(model, i, xs), ys))
            tr_err.append(1 - accuracy(member_logits(model, i, x[:n]), y[:n]))
            nn_te.append(float((nearest_neighbour_predict(x[:n], y[:n], xt) != yt).float().mean()))
            nn_sp.append(float((nearest_neighbour_predict(x[:n], y[:n], xs) != ys).float().mean()))
    return SpheresResult(sizes=list(cfg.sizes), test_error=test_err, sprime_error=sp_err,
                         train_error=tr_err, met_margin=run.met_rule, epochs=run.epochs,
                         model=model, x_train=x, y_train=y, init_test_error=init_err,
                         projected_test_error=proj_err, nn_test_error=nn_te, nn_sprime_error=nn_sp)


@boundary(model=InstanceOf(BatchedMLP), member=count(0), point=Tensor("float", 1),
          radii=_RADII, half_width=positive(), resolution=count(2), seed=SEED)
def boundary_slice(model: BatchedMLP, member: int, point: torch.Tensor, radii: tuple = (1.0, 1.2),
                   half_width: float = 0.6, resolution: int = 161, seed: int = 0):
    """The decision function of one member on a 2-D slice through ``point`` (Figure 2 analogue).

    The plane is spanned by the radial direction ``e1 = point/||point||`` and a random unit
    direction ``e2`` orthogonal to it. Returns ``(a, b, f)``: grid coordinates ``a`` (along
    ``e1``, from ``radii[0] - 0.3`` to ``radii[1] + 0.3``) and ``b`` (along ``e2``, in
    ``[-half_width, half_width]``), and ``f = logit_1 - logit_0`` of shape ``(len(b), len(a))``:
    positive means "outer sphere". In this plane the two spheres are the circles
    ``a^2 + b^2 = r^2``.

    Parameters
    ----------
    model : BatchedMLP
        The stack of networks; a BatchedMLP.
    member : int
        Which member of the stack; an int >= 0.
    point : torch.Tensor
        The point the slice goes through; a torch.Tensor (non-empty, floating-point, 1-dimensional,
        finite).
    radii : tuple, default (1.0, 1.2)
        Radii of the two spheres; a tuple (at least 2 items, strictly increasing) of items each a
        finite number > 0.
    half_width : float, default 0.6
        Half-width of the slice; a finite number > 0.
    resolution : int, default 161
        Grid points per axis; an int >= 2.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].

    Returns
    -------
    tuple of numpy.ndarray
        ``(a, b, f)``, as described above.

    References
    ----------
    Nagarajan and Kolter (2019), "Uniform convergence may be unable to explain generalization in
    deep learning", Figure 2.
    """
    if not isinstance(model, BatchedMLP):
        raise TypeError("model must be a BatchedMLP")
    if not 0 <= member < model.size:
        raise ValueError(f"member must lie in [0, {model.size}), got {member}")
    if not isinstance(point, torch.Tensor) or point.ndim != 1 or point.norm() == 0:
        raise ValueError("point must be a non-zero 1-D tensor")
    r0, r1 = _radii(radii)
    _pos("half_width", half_width)
    resolution = check_int("resolution", resolution, minimum=2)
    e1 = point / point.norm()
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(point.shape[0], generator=g, dtype=point.dtype).to(point.device)
    v = v - (v @ e1) * e1
    e2 = v / v.norm()
    a = torch.linspace(r0 - 0.3, r1 + 0.3, resolution, dtype=point.dtype)
    b = torch.linspace(-half_width, half_width, resolution, dtype=point.dtype)
    B, A = torch.meshgrid(b, a, indexing="ij")
    pts = A.reshape(-1, 1).to(point.device) * e1 + B.reshape(-1, 1).to(point.device) * e2
    with torch.no_grad():
        m = model.member(member)
        logits = m(pts)
    f = (logits[:, 1] - logits[:, 0]).reshape(resolution, resolution)
    return a.cpu().numpy(), b.cpu().numpy(), f.cpu().numpy()


@boundary(res=InstanceOf(SpheresResult), member=count(0), radii=_RADII, seed=SEED,
          candidates=count())
def slice_points(res: SpheresResult, member: int, radii: tuple = (1.0, 1.2), seed: int = 0,
                 candidates: int = 200):
    """Two points to slice through (Figure 2 analogue).

    Two points to slice through (Figure 2 analogue): a training point of ``member`` whose S' image
    the member misclassifies, and a fresh point that it classifies correctly together with its
    projection onto the other sphere. Returns ``(train_point, fresh_point)``; either is ``None`` if
    none of the first ``candidates`` qualifies (with S' error near 1 and a small test error, the
    first candidate almost always does).

    Parameters
    ----------
    res : SpheresResult
        The result of :func:`spheres_sweep`; a SpheresResult.
    member : int
        Which member of the stack; an int >= 0.
    radii : tuple, default (1.0, 1.2)
        Radii of the two spheres; a tuple (at least 2 items, strictly increasing) of items each a
        finite number > 0.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    candidates : int, default 200
        Training points tried, in order; an int >= 1.

    Returns
    -------
    tuple
        ``(train_point, fresh_point)``, as described above.
    """
    if not 0 <= member < len(res.sizes):
        raise ValueError(f"member must lie in [0, {len(res.sizes)}), got {member}")
    k = min(candidates, res.sizes[member])
    with torch.no_grad():
        xs, ys = sphere_sprime(res.x_train[:k], res.y_train[:k], radii)
        bad = (member_logits(res.model, member, xs).argmax(1) != ys).nonzero().flatten()
        xf, yf = sphere_data(candidates, res.x_train.shape[1], radii,
                             torch.Generator().manual_seed(seed + 4242))
        xf, yf = xf.to(res.x_train.device), yf.to(res.x_train.device)
        xp, yp = sphere_sprime(xf, yf, radii)
        good = ((member_logits(res.model, member, xf).argmax(1) == yf)
                & (member_logits(res.model, member, xp).argmax(1) == yp)).nonzero().flatten()
    return (res.x_train[int(bad[0])] if len(bad) else None,
            xf[int(good[0])] if len(good) else None)


@boundary(model=InstanceOf(BatchedMLP), member=count(0), point=Tensor("float", 1),
          label=count(0), radii=_RADII, seed=SEED, resolution=count(3))
def bulge_width(model: BatchedMLP, member: int, point: torch.Tensor, label: int,
                radii: tuple = (1.0, 1.2), seed: int = 0, resolution: int = 721) -> float:
    """Angular width (degrees) around a training point where the member keeps its label.

    Angular width (degrees) of the region around a training point where the member still
    predicts the point's own ``label`` on the *other* sphere, in the plane of
    :func:`boundary_slice` (same ``seed``, so the same random direction ``e2``).

    Walks the circle of the other sphere's radius in that plane, at angles ``phi`` from the point's
    direction in ``[-90, 90]`` degrees, and returns the width of the connected run of angles
    around ``phi = 0`` where the prediction equals ``label`` (0 if the projection itself is
    classified correctly). This is the "bulge" of Nagarajan and Kolter's Figure 2.

    Parameters
    ----------
    model : BatchedMLP
        The stack of networks; a BatchedMLP.
    member : int
        Which member of the stack; an int >= 0.
    point : torch.Tensor
        The point the slice goes through; a torch.Tensor (non-empty, floating-point, 1-dimensional,
        finite).
    label : int
        The point's label; an int >= 0.
    radii : tuple, default (1.0, 1.2)
        Radii of the two spheres; a tuple (at least 2 items, strictly increasing) of items each a
        finite number > 0.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    resolution : int, default 721
        Grid points per axis; an int >= 3.

    Returns
    -------
    float
        The width in degrees (see above).
    """
    if not isinstance(model, BatchedMLP):
        raise TypeError("model must be a BatchedMLP")
    if not 0 <= member < model.size:
        raise ValueError(f"member must lie in [0, {model.size}), got {member}")
    if label not in (0, 1):
        raise ValueError(f"label must be 0 or 1, got {label!r}")
    r0, r1 = _radii(radii)
    resolution = check_int("resolution", resolution, minimum=3)
    if point.shape[0] != model.weights[0].shape[-1] or float(point.norm()) == 0:
        raise ValueError(f"point must be a non-zero vector of {model.weights[0].shape[-1]} "
                         "entries (the input size)")
    e1 = point / point.norm()
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(point.shape[0], generator=g, dtype=point.dtype).to(point.device)
    v = v - (v @ e1) * e1
    e2 = v / v.norm()
    r = r1 if label == 0 else r0
    phi = torch.linspace(-math.pi / 2, math.pi / 2, resolution, dtype=point.dtype)
    pts = r * (torch.cos(phi)[:, None].to(point.device) * e1 + torch.sin(phi)[:, None].to(point.device) * e2)
    with torch.no_grad():
        same = (_member_logits(model, member, pts).argmax(1) == label).cpu().numpy()
    c = resolution // 2
    if not same[c]:
        return 0.0
    lo, hi = c, c
    while lo > 0 and same[lo - 1]:
        lo -= 1
    while hi < resolution - 1 and same[hi + 1]:
        hi += 1
    return float(math.degrees(float(phi[hi] - phi[lo])))


@boundary(d=count(2), half_angle_deg=Interval(float, 0, 90))
def cap_fraction(d: int, half_angle_deg: float) -> float:
    """Fraction of the unit sphere in R^d within ``half_angle_deg`` of a fixed direction.

    Equals ``I_{sin^2 theta}((d - 1)/2, 1/2) / 2`` (regularized incomplete beta) for
    ``theta <= 90`` degrees; in R^3 it is ``(1 - cos theta) / 2``.

    Parameters
    ----------
    d : int
        Dimension; an int >= 2.
    half_angle_deg : float
        Half-angle of the cap, in degrees; a finite number in [0, 90].

    Returns
    -------
    float
        The fraction, in [0, 1].
    """
    from scipy.special import betainc

    d = check_int("d", d, minimum=2)
    if not isinstance(half_angle_deg, (int, float)) or not 0 <= half_angle_deg <= 90:
        raise ValueError(f"half_angle_deg must be a number in [0, 90], got {half_angle_deg!r}")
    theta = math.radians(half_angle_deg)
    return float(0.5 * betainc((d - 1) / 2, 0.5, math.sin(theta) ** 2))


@boundary(ax=_Axes(), a=Tensor("float", 1, numpy=True), b=Tensor("float", 1, numpy=True),
          f=Tensor("float", 2, numpy=True), radii=_RADII, point_radius=positive())
def plot_slice(ax, a, b, f, radii: tuple, point_radius: float, colors=("#56B4E9", "#E69F00")) -> None:
    """Draw one :func:`boundary_slice`.

    Draw one :func:`boundary_slice`: predicted class (shading), boundary (black), the two spheres
    (dashed arcs), the point (dot) and its projection onto the other sphere (cross).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The matplotlib axes to draw on; a matplotlib Axes.
    a : torch.Tensor
        Slice coordinates along the first axis; a torch.Tensor or numpy array (non-empty,
        floating-point, 1-dimensional, finite).
    b : torch.Tensor
        Slice coordinates along the second axis; a torch.Tensor or numpy array (non-empty,
        floating-point, 1-dimensional, finite).
    f : torch.Tensor
        The decision function on the grid; a torch.Tensor or numpy array (non-empty,
        floating-point, 2-dimensional, finite).
    radii : tuple
        Radii of the two spheres; a tuple (at least 2 items, strictly increasing) of items each a
        finite number > 0.
    point_radius : float
        Radius of the drawn point; a finite number > 0.
    colors : object, default ('#56B4E9', '#E69F00')
        Colours of the two classes.
    """
    r0, r1 = _radii(radii)
    if tuple(f.shape) != (len(b), len(a)):
        raise ValueError(f"f must have shape (len(b), len(a)) = {(len(b), len(a))}, got "
                         f"{tuple(f.shape)}")
    ax.contourf(a, b, f > 0, levels=[-0.5, 0.5, 1.5], colors=list(colors), alpha=0.4)
    ax.contour(a, b, f, levels=[0], colors="k", linewidths=1.5)
    for r in (r0, r1):
        ax.plot(np.sqrt(np.clip(r ** 2 - b ** 2, 0, None)), b, "--", color="grey", lw=1)
    ax.plot([point_radius], [0], "ko")
    ax.plot([r0 + r1 - point_radius], [0], "kx", ms=9, mew=2)


@boundary(ax=_Axes(), axis=Options(("x", "y")))
def log_ticks(ax, values, axis: str = "x") -> None:
    """Label a log axis at ``values`` with plain numbers.

    Label a log axis at ``values`` with plain numbers (no minor-tick clutter), and write the
    other axis's labels as plain numbers too (``0.3`` rather than ``3 x 10^-1``).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The matplotlib axes to draw on; a matplotlib Axes.
    values : object
        The tick positions.
    axis : str, default 'x'
        The log axis, ``"x"`` or ``"y"``; one of ('x', 'y').
    """
    from matplotlib.ticker import FixedFormatter, FixedLocator, FuncFormatter, NullFormatter, NullLocator

    arr = _float_array("values", values)
    if arr.ndim != 1 or arr.size == 0 or not np.all(np.isfinite(arr)) or not np.all(arr > 0):
        raise ValueError(f"values must be a non-empty 1-D sequence of positive finite numbers "
                         f"(ticks of a log axis), got {values!r}")
    target, other = (ax.xaxis, ax.yaxis) if axis == "x" else (ax.yaxis, ax.xaxis)
    target.set_major_locator(FixedLocator(list(values)))
    target.set_major_formatter(FixedFormatter([f"{v:g}" for v in values]))
    target.set_minor_locator(NullLocator())
    target.set_minor_formatter(NullFormatter())
    plain = FuncFormatter(lambda v, _: f"{v:.2g}")
    other.set_major_formatter(plain)
    other.set_minor_formatter(plain)
