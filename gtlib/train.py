"""The training loop every chapter uses, with the book's three stop rules.

:func:`train` runs SGD (optionally with momentum) or AdamW, minibatch or full batch, and stops after
a number of epochs, or once the training accuracy reaches a target, or once a fraction of the
training points have margin at least ``gamma`` (Nagarajan and Kolter 2019 stop at "at most 1% of
points with margin below gamma"). It returns a :class:`History` with the loss, the accuracy and any
per-step probe the chapter passes in.

:func:`train_ensemble` trains E networks of the same shape at once (a
:class:`~gtlib.models.BatchedMLP`). Training the stack with a loss that is the *sum* of the members'
losses gives every member exactly the gradient it would get alone, and SGD, momentum, weight decay
and AdamW act elementwise, so it reproduces E calls of :func:`train` (same seeds, same minibatch
order) up to floating-point rounding, while paying the Python and kernel-launch overhead once
instead of E times. :func:`train_sequentially` is the plain PyTorch loop it is checked against.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from .checks import (
    SEED,
    Device,
    Interval,
    Options,
    Tensor,
    check_finite,
    check_int,
    check_labels,
    check_seeds,
)
from .config import Config, Result, param
from .engine import EpochBatches, StackedOptimizer, fit, member_margins, stop_rule
from .models import MLP, BatchedMLP, make_mlp

__all__ = [
    "TrainConfig",
    "History",
    "train",
    "train_ensemble",
    "train_sequentially",
    "loss_fn",
    "accuracy",
    "margins",
    "make_optimizer",
    "total_steps",
    "batch_indices",
    "check_data",
    "LOSSES",
    "OPTIMIZERS",
]

#: The names the ``optimizer`` field of a :class:`gtlib.train.TrainConfig` accepts.
OPTIMIZERS = ("sgd", "adamw")
#: The names the ``loss`` field of a :class:`gtlib.train.TrainConfig` accepts (see
#: :func:`gtlib.train.loss_fn`).
LOSSES = ("cross_entropy", "mse")


@dataclass
class TrainConfig(Config):
    r"""How to train: the optimizer, its hyperparameters, the minibatches and the stop rules.

    ``batch_size=None`` means full batch; ``steps`` caps the number of updates.

    Stop rules (the first one met ends training): ``epochs``/``steps``; ``target_train_acc``
    (fraction); ``margin_gamma`` with ``margin_fraction`` (stop once at least that fraction of the
    training points has margin ``f_y - max_{j != y} f_j >= margin_gamma``, that is

    .. math::

        \frac{1}{n} \sum_{i=1}^{n}
        \mathbb{1}\Big[f_{y_i}(x_i) - \max_{j \neq y_i} f_j(x_i) \geq \gamma\Big]
        \geq \rho

    with :math:`\gamma` = ``margin_gamma`` and :math:`\rho` = ``margin_fraction``). Rules are
    checked every ``check_every`` steps on the whole training set.

    Parameters
    ----------
    optimizer : str, default "sgd"
        ``"sgd"`` (optionally with momentum) or ``"adamw"``; one of ('sgd', 'adamw').
    lr : float, default 0.1
        Learning rate; a finite number > 0.
    momentum : float, default 0.0
        SGD's momentum (ignored by AdamW); a finite number in [0, 1).
    weight_decay : float, default 0.0
        Weight decay (coupled for SGD, decoupled for AdamW, as in PyTorch); a finite number >= 0.
    batch_size : int or None, default 64
        Minibatch size (None: full batch); an int >= 1 or None.
    epochs : int, default 10
        Number of passes over the training set; an int >= 1.
    steps : int or None, default None
        Cap on the number of updates (None: no cap); an int >= 1 or None.
    loss : str, default "cross_entropy"
        The loss, ``"cross_entropy"`` or ``"mse"`` (see :func:`gtlib.train.loss_fn`).
    target_train_acc : float or None, default None
        Training accuracy at which training stops (None: no such rule); a finite number in
        [0, 1] or None.
    margin_gamma : float or None, default None
        Margin that a fraction ``margin_fraction`` of the training points must reach for training
        to stop (None: no such rule); a finite number > 0 or None.
    margin_fraction : float, default 0.99
        See ``margin_gamma``; a finite number in [0, 1].
    check_every : int, default 50
        Steps between two checks of the stop rules (and two rows of the
        :class:`gtlib.train.History`); an int >= 1.
    seed : int, default 0
        Seed of the minibatch order; an int >= 0.

    References
    ----------
    Nagarajan, V. and Kolter, J. Z. (2019). Uniform convergence may be unable to explain
    generalization in deep learning. NeurIPS.
    """

    optimizer: str = param("sgd", Options(OPTIMIZERS))
    lr: float = param(0.1, Interval(float, 0, None, "neither"))
    momentum: float = param(0.0, Interval(float, 0, 1, "left"))
    weight_decay: float = param(0.0, Interval(float, 0, None))
    batch_size: int | None = param(
        64, Interval(int, 1, optional=True), doc="None: full batch"
    )
    epochs: int = param(10, Interval(int, 1))
    steps: int | None = param(
        None, Interval(int, 1, optional=True), doc="cap on the updates"
    )
    loss: str = param("cross_entropy", Options(LOSSES))
    target_train_acc: float | None = param(
        None, Interval(float, 0, 1, optional=True)
    )
    margin_gamma: float | None = param(
        None, Interval(float, 0, None, "neither", optional=True)
    )
    margin_fraction: float = param(0.99, Interval(float, 0, 1))
    check_every: int = param(50, Interval(int, 1))
    seed: int = param(0, SEED)


@dataclass
class History(Result):
    """What happened during training: one row per check (``step``), plus probe outputs.

    Parameters
    ----------
    step : list of int, optional
        The step of every check (the number of updates taken before it).
    loss : list, optional
        The training loss at every check: a float, or a ``(E,)`` tensor for an ensemble.
    train_acc : list, optional
        The training accuracy at every check: a float, or a ``(E,)`` tensor for an ensemble.
    probes : dict of str to list, optional
        Per probe name, the probe's value at every check (see :func:`gtlib.train.train`);
        :func:`gtlib.train.train_ensemble` adds ``"stop_step"``, each member's stopping step.
    stopped_by : str, default "epochs"
        The rule that ended training: ``"epochs"`` (the length of the run),
        ``"target_train_acc"``, ``"margin"`` or, for an ensemble, ``"all members met the stop
        rule"``.
    """

    step: list[int] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    train_acc: list[float] = field(default_factory=list)
    probes: dict[str, list] = field(default_factory=dict)
    stopped_by: str = "epochs"

    @property
    def steps_taken(self) -> int:
        """The step of the last check (0 before any)."""
        return self.step[-1] if self.step else 0


def margins(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    r"""Multiclass margins ``f_y(x) - max_{j != y} f_j(x)`` (positive means correctly classified).

    Works on ``(n, C)`` logits, or ``(E, n, C)`` for an ensemble:

    .. math::

        \gamma(x, y) = f_y(x) - \max_{j \neq y} f_j(x).

    Parameters
    ----------
    logits : torch.Tensor
        The outputs ``f(x)``, ``(n, C)`` or ``(E, n, C)``; floating point, finite, not empty.
    y : torch.Tensor
        Integer labels in ``[0, C)``, ``(n,)``, or ``(E, n)`` with ``(E, n, C)`` logits.

    Returns
    -------
    torch.Tensor
        The margins, ``(n,)`` or ``(E, n)``.

    Raises
    ------
    TypeError, ValueError
        If ``logits`` is not a finite non-empty float ``(n, C)`` or ``(E, n, C)`` tensor, or ``y``
        not labels that match it.

    References
    ----------
    Bartlett, P. L., Foster, D. J. and Telgarsky, M. (2017). Spectrally-normalized margin bounds
    for neural networks. NeurIPS.
    """
    _check_logits(logits, y, finite=True)
    return member_margins(logits, y)


def _check_logits(logits, y, finite: bool = False) -> None:
    """Public entry points: logits ``(n, C)`` or ``(E, n, C)``, non-empty (and finite if asked);
    labels in ``[0, C)``."""
    if not isinstance(logits, torch.Tensor) or not logits.is_floating_point():
        raise TypeError(
            f"logits must be a floating-point torch.Tensor, got "
            f"{getattr(logits, 'dtype', type(logits).__name__)}"
        )
    if logits.ndim not in (2, 3):
        raise ValueError(
            f"logits must have shape (n, C) or (E, n, C), got {tuple(logits.shape)}"
        )
    if logits.numel() == 0:
        raise ValueError(
            f"logits must not be empty, got shape {tuple(logits.shape)}"
        )
    if finite:
        check_finite("logits", logits)
    check_labels("y", y, logits.shape[-1], n=logits.shape[-2])
    if y.ndim == 2 and (logits.ndim != 3 or y.shape[0] != logits.shape[0]):
        raise ValueError(
            f"y must have shape ({logits.shape[-2]},) or "
            f"(E, {logits.shape[-2]}) matching (E, n, C) logits, got {tuple(y.shape)}"
        )


def accuracy(logits: torch.Tensor, y: torch.Tensor) -> float | torch.Tensor:
    r"""Fraction of rows whose arg-max equals the label (per member for ``(E, n, C)`` logits).

    .. math::

        \mathrm{acc} = \frac{1}{n} \sum_{i=1}^{n} \mathbb{1}\big[\arg\max_j f_j(x_i) = y_i\big]

    Parameters
    ----------
    logits : torch.Tensor
        The outputs, ``(n, C)`` or ``(E, n, C)``; floating point, finite, not empty.
    y : torch.Tensor
        Integer labels in ``[0, C)``, ``(n,)``, or ``(E, n)`` with ``(E, n, C)`` logits.

    Returns
    -------
    float or torch.Tensor
        The accuracy as a float for ``(n, C)`` logits, a ``(E,)`` tensor for ``(E, n, C)`` ones.

    Raises
    ------
    TypeError, ValueError
        If ``logits`` is not a finite non-empty float ``(n, C)`` or ``(E, n, C)`` tensor, or ``y``
        not labels that match it.
    """
    _check_logits(logits, y, finite=True)
    correct = (logits.argmax(-1) == y).float()
    return correct.mean().item() if logits.ndim == 2 else correct.mean(-1)


def loss_fn(name: str, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    r"""Mean loss over the points: cross-entropy, or MSE to one-hot targets.

    The mean is over the last-but-one axis (and over the members for ``(E, n, C)`` logits); MSE
    sums the squared error over the classes. With ``z = logits``,

    .. math::

        \mathrm{CE} = -\frac{1}{n} \sum_{i=1}^{n} \log \operatorname{softmax}(z_i)_{y_i},
        \qquad
        \mathrm{MSE} = \frac{1}{n} \sum_{i=1}^{n} \lVert z_i - \mathrm{onehot}(y_i) \rVert_2^2.

    Parameters
    ----------
    name : str
        ``"cross_entropy"`` or ``"mse"``.
    logits : torch.Tensor
        The outputs, ``(n, C)`` or ``(E, n, C)``; floating point, finite, not empty.
    y : torch.Tensor
        Integer labels in ``[0, C)``, ``(n,)``, or ``(E, n)`` with ``(E, n, C)`` logits.

    Returns
    -------
    torch.Tensor
        The mean loss, a scalar (differentiable).

    Raises
    ------
    TypeError, ValueError
        If ``name`` is not a known loss, ``logits`` is not a finite non-empty float tensor of
        shape ``(n, C)`` or ``(E, n, C)``, or ``y`` not labels that match it.
    """
    Options(LOSSES).check("name", name)
    _check_logits(logits, y, finite=True)
    return _loss(name, logits, y)


def _loss(name: str, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """:func:`loss_fn` without the checks (the training loop checked its data once)."""
    if name == "cross_entropy":
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    if name == "mse":
        onehot = F.one_hot(y, logits.shape[-1]).to(logits.dtype)
        return ((logits - onehot) ** 2).sum(-1).mean()
    raise ValueError(f"loss must be one of {LOSSES}, got {name!r}")


def make_optimizer(params, cfg: TrainConfig) -> torch.optim.Optimizer:
    """The optimizer named by ``cfg`` over ``params`` (``cfg.optimizer`` in :data:`OPTIMIZERS`).

    Parameters
    ----------
    params : iterable of torch.Tensor
        The tensors to optimize (e.g. ``model.parameters()``); at least one.
    cfg : TrainConfig
        Supplies ``optimizer``, ``lr``, ``momentum`` (SGD only) and ``weight_decay``.

    Returns
    -------
    torch.optim.Optimizer
        ``torch.optim.SGD`` or ``torch.optim.AdamW`` with the settings of ``cfg``.

    Raises
    ------
    TypeError, ValueError
        If ``cfg`` is not a valid :class:`gtlib.train.TrainConfig`, or ``params`` is not a
        non-empty iterable of tensors.

    References
    ----------
    Loshchilov, I. and Hutter, F. (2019). Decoupled weight decay regularization. ICLR.
    """
    _check_cfg(cfg)
    if isinstance(params, (torch.Tensor, str)) or not hasattr(params, "__iter__"):
        raise TypeError(
            f"params must be an iterable of tensors, got {type(params).__name__}"
        )
    params = list(params)
    if not params or not all(isinstance(p, torch.Tensor) for p in params):
        raise ValueError("params must hold at least one tensor, and only tensors")
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(
            params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay
        )
    if cfg.optimizer == "adamw":
        return torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    raise ValueError(
        f"TrainConfig.optimizer must be one of {OPTIMIZERS}, got {cfg.optimizer!r}"
    )


def _check_cfg(cfg) -> "TrainConfig":
    if not isinstance(cfg, TrainConfig):
        raise TypeError(f"cfg must be a TrainConfig, got {type(cfg).__name__}")
    return cfg.validate()


def total_steps(n: int, cfg: TrainConfig) -> int:
    """Number of updates ``cfg`` allows on ``n`` training points (before any early stop).

    That is ``cfg.epochs`` times the number of minibatches per epoch (``ceil(n / batch_size)``,
    1 for full batch), capped at ``cfg.steps``.

    Parameters
    ----------
    n : int
        Number of training points; an int >= 1.
    cfg : TrainConfig
        Supplies ``epochs``, ``batch_size`` and ``steps``.

    Returns
    -------
    int
        The number of updates.

    Raises
    ------
    TypeError, ValueError
        If ``n`` is not an int >= 1 or ``cfg`` not a valid :class:`gtlib.train.TrainConfig`.
    """
    n = check_int("n", n)
    _check_cfg(cfg)
    per_epoch = 1 if cfg.batch_size is None else -(-n // cfg.batch_size)
    steps = cfg.epochs * per_epoch
    return steps if cfg.steps is None else min(steps, cfg.steps)


def batch_indices(
    n: int, cfg: TrainConfig, generator: torch.Generator, device
) -> Iterator:
    """An endless iterator over the index tensors of the minibatches.

    A fresh permutation per epoch, the last batch short (``n`` must be >= 1: there is no batch to
    draw from no data); with ``cfg.batch_size=None`` every batch is the whole training set.

    Parameters
    ----------
    n : int
        Number of training points; an int >= 1.
    cfg : TrainConfig
        Supplies ``batch_size``.
    generator : torch.Generator
        The source of the permutations (seed it for a reproducible order).
    device : str or torch.device
        Where the index tensors live.

    Returns
    -------
    iterator of torch.Tensor
        The minibatches' index tensors (int64), without end.

    Raises
    ------
    TypeError, ValueError
        If ``n`` is not an int >= 1, ``cfg`` not a valid :class:`gtlib.train.TrainConfig`,
        ``generator`` not a ``torch.Generator`` or ``device`` not a device.
    """
    n = check_int("n", n)
    _check_cfg(cfg)
    if not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator must be a torch.Generator, got {type(generator).__name__}"
        )
    Device().check("device", device)
    return _batches(n, cfg.batch_size, generator, device)


def _batches(
    n: int, batch_size: int | None, generator: torch.Generator, device
) -> Iterator:
    if batch_size is None:
        full = torch.arange(n, device=device)
        while True:
            yield full
    while True:
        perm = torch.randperm(n, generator=generator).to(device)
        for start in range(0, n, batch_size):
            yield perm[start : start + batch_size]


def check_data(
    x: torch.Tensor,
    y: torch.Tensor,
    num_classes: int | None = None,
    per_member: int | None = None,
) -> None:
    """Refuse training data that cannot be trained on.

    ``x`` must be a non-empty finite float ``(n, d)`` tensor, ``y`` integer labels ``(n,)`` (or
    ``(per_member, n)``) in ``[0, num_classes)`` on the same device.

    Parameters
    ----------
    x : torch.Tensor
        Training inputs, ``(n, d)``.
    y : torch.Tensor
        Integer labels, ``(n,)`` or ``(per_member, n)``.
    num_classes : int or None, default None
        The number of classes C (None: any non-negative label).
    per_member : int or None, default None
        The number E of members that may each have their own labelling (None: ``y`` must be
        ``(n,)``).

    Raises
    ------
    TypeError, ValueError
        If the data are not as described (the message names ``x`` or ``y``).
    """
    if num_classes is not None:
        check_int("num_classes", num_classes)
    if per_member is not None:
        check_int("per_member", per_member)
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError(
            f"x must be a floating-point torch.Tensor, got "
            f"{getattr(x, 'dtype', type(x).__name__)}"
        )
    if x.ndim != 2:
        raise ValueError(f"x must have shape (n, d), got {tuple(x.shape)}")
    if x.shape[0] == 0 or x.shape[1] == 0:
        raise ValueError(
            f"x must hold at least one row and one column, got {tuple(x.shape)}"
        )
    check_finite("x", x)
    check_labels("y", y, num_classes, n=x.shape[0])
    if y.ndim == 2 and (per_member is None or y.shape[0] != per_member):
        raise ValueError(
            f"y must have shape ({x.shape[0]},)"
            + (f" or ({per_member}, {x.shape[0]})" if per_member else "")
            + f", got {tuple(y.shape)}"
        )
    if y.device != x.device:
        raise ValueError(
            f"x and y must be on the same device, got {x.device} and {y.device}"
        )


def _stop_reason(
    logits: torch.Tensor, y: torch.Tensor, cfg: TrainConfig
) -> str | None:
    """Which stop rule of ``cfg`` (if any) the training-set ``logits`` ``(n, C)`` meet:
    ``"target_train_acc"``, ``"margin"`` or None. Unchecked: :func:`train` calls it on data it
    checked once."""
    if (
        cfg.target_train_acc is not None
        and accuracy(logits, y) >= cfg.target_train_acc
    ):
        return "target_train_acc"
    if cfg.margin_gamma is not None:
        frac = (margins(logits, y) >= cfg.margin_gamma).float().mean().item()
        if frac >= cfg.margin_fraction:
            return "margin"
    return None


def _out_features(model: nn.Module) -> int | None:
    """The number of classes a model predicts, when it says (an MLP's last layer)."""
    layers = getattr(model, "layers", None)
    if (
        isinstance(layers, nn.ModuleList)
        and len(layers)
        and hasattr(layers[-1], "out_features")
    ):
        return int(layers[-1].out_features)
    return None


def train(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    cfg: TrainConfig,
    probes: dict[str, Callable[[nn.Module], object]] | None = None,
) -> History:
    r"""Train ``model`` on ``(x, y)`` in place and return its :class:`gtlib.train.History`.

    ``probes`` maps a name to a function of the model evaluated at every check (e.g. test accuracy
    or a weight norm); its values are stored in ``history.probes[name]``. Each update is a step of
    the optimizer of ``cfg`` on the mean loss of a minibatch ``B`` (see
    :func:`gtlib.train.loss_fn`),

    .. math::

        \theta \leftarrow \theta - \eta\, \nabla_\theta \frac{1}{|B|} \sum_{i \in B}
        \ell\big(f_\theta(x_i), y_i\big)

    for plain SGD with learning rate :math:`\eta`; training stops at the first rule of ``cfg``
    met (see :class:`gtlib.train.TrainConfig`).

    Parameters
    ----------
    model : torch.nn.Module
        One network (not a :class:`gtlib.models.BatchedMLP`: use
        :func:`gtlib.train.train_ensemble`), trained in place.
    x : torch.Tensor
        Training inputs ``(n, d)``; finite, the model's dtype.
    y : torch.Tensor
        Integer labels ``(n,)`` in ``[0, C)``.
    cfg : TrainConfig
        How to train (optimizer, learning rate, batch size, length, stop rules).
    probes : dict of str to callable or None, default None
        Functions of the model evaluated at every check; values in ``history.probes[name]``.

    Returns
    -------
    History
        The loss and training accuracy at every check, the probes' values and the rule that
        stopped training.

    Raises
    ------
    TypeError, ValueError
        If ``x`` is not a non-empty finite float ``(n, d)`` tensor, ``y`` not ``n`` integer labels
        in ``[0, C)`` for the model's ``C`` outputs, or ``cfg`` not a
        :class:`gtlib.train.TrainConfig`.

    References
    ----------
    Nagarajan, V. and Kolter, J. Z. (2019). Uniform convergence may be unable to explain
    generalization in deep learning. NeurIPS.
    """
    _check_cfg(cfg)
    if not isinstance(model, nn.Module):
        raise TypeError(
            f"model must be a torch.nn.Module, got {type(model).__name__}"
        )
    if isinstance(model, BatchedMLP):
        raise TypeError(
            f"model must be one network; a {type(model).__name__} holds a stack of "
            f"them: train it with gtlib.train.train_ensemble"
        )
    if probes is not None and (
        not isinstance(probes, dict)
        or not all(isinstance(k, str) and callable(f) for k, f in probes.items())
    ):
        raise TypeError("probes must map names (str) to functions of the model")
    if (
        isinstance(x, torch.Tensor)
        and isinstance(y, torch.Tensor)
        and x.ndim == 2
        and y.ndim == 1
        and x.shape[0] != y.shape[0]
    ):
        raise ValueError(
            f"x must be (n, d) and y (n,) with the same n; got {tuple(x.shape)}, "
            f"{tuple(y.shape)}"
        )
    check_data(x, y, _out_features(model))
    probes = probes or {}
    hist = History(probes={k: [] for k in probes})
    opt = StackedOptimizer(
        model.parameters(), cfg.optimizer, cfg.lr, cfg.momentum, cfg.weight_decay
    )
    batches = (
        None
        if cfg.batch_size is None
        else EpochBatches(len(y), cfg.batch_size, [cfg.seed], x.device)
    )

    # a gtlib MLP's forward checks its input; the training data were checked once above (and
    # the first check, before any update, calls the checked forward on them)
    forward = model._forward if type(model).forward is MLP.forward else model

    def loss(step: int, idx: torch.Tensor | None) -> torch.Tensor:
        if idx is None:
            return _loss(cfg.loss, forward(x), y)
        return _loss(cfg.loss, forward(x[idx[0]]), y[idx[0]])

    def check(step: int, due: torch.Tensor) -> bool:
        with torch.no_grad():
            logits = model(x)
            hist.step.append(step)
            hist.loss.append(_loss(cfg.loss, logits, y).item())
            hist.train_acc.append(accuracy(logits, y))
            for name, fn in probes.items():
                hist.probes[name].append(fn(model))
            reason = _stop_reason(logits, y, cfg)
            if reason is not None:
                hist.stopped_by = reason
            return torch.tensor([reason is not None])

    fit(loss, opt, total_steps(len(y), cfg), batches, check, every=cfg.check_every)
    return hist


def _ensemble_loss(name: str, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    r"""Per-member mean loss, shape ``(E,)``.

    Member ``e``'s entry equals :func:`loss_fn` on ``logits[e]``:

    .. math::

        \mathrm{CE}_e = -\frac{1}{n} \sum_{i=1}^{n} \log \operatorname{softmax}(z_{e,i})_{y_{e,i}},
        \qquad
        \mathrm{MSE}_e = \frac{1}{n} \sum_{i=1}^{n} \lVert z_{e,i} - \mathrm{onehot}(y_{e,i})
        \rVert_2^2,

    where ``z = logits`` (MSE sums the squared error over the classes and averages over the
    points). Unchecked: the training loops call it every step on data they checked once.

    Parameters
    ----------
    name : str
        ``"cross_entropy"`` or ``"mse"`` (see ``LOSSES``).
    logits : torch.Tensor
        The members' outputs, ``(E, n, C)``.
    y : torch.Tensor
        Integer labels in ``[0, C)``, ``(n,)`` shared or ``(E, n)`` one labelling per member.

    Returns
    -------
    torch.Tensor
        Each member's mean loss, ``(E,)``.
    """
    E, n, C = logits.shape
    y = y.expand(E, n)
    if name == "cross_entropy":
        return (
            F.cross_entropy(logits.reshape(-1, C), y.reshape(-1), reduction="none")
            .view(E, n)
            .mean(1)
        )
    if name == "mse":
        return ((logits - F.one_hot(y, C).to(logits.dtype)) ** 2).sum(-1).mean(1)
    raise ValueError(f"loss must be one of {LOSSES}, got {name!r}")


def train_ensemble(
    model: BatchedMLP,
    x: torch.Tensor,
    y: torch.Tensor,
    cfg: TrainConfig,
    seeds: Sequence[int] | None = None,
    probes: dict[str, Callable[[BatchedMLP], object]] | None = None,
) -> History:
    r"""Train every member of ``model`` in place, as :func:`train` would train each alone.

    Each step minimizes the sum of the members' mean losses on their own minibatches,

    .. math::

        L(\theta_1, \dots, \theta_E) = \sum_{e=1}^{E} \ell_e(\theta_e),
        \qquad \nabla_{\theta_e} L = \nabla_{\theta_e} \ell_e,

    so every member gets exactly the gradient it would get alone. Member ``i`` draws its
    minibatches from a generator seeded with ``seeds[i]``. The stop rules apply per member: a
    member that meets one is frozen at that step (later updates to it are discarded) and the
    others go on.

    Parameters
    ----------
    model : BatchedMLP
        The stack to train (in place).
    x : torch.Tensor
        Training inputs ``(n, d)``, finite, the model's dtype.
    y : torch.Tensor
        Shared labels ``(n,)``, or one labelling ``(E, n)`` per member (e.g. different corruption
        levels).
    cfg : TrainConfig
        How to train (optimizer, learning rate, batch size, length, stop rules).
    seeds : sequence of int or None, default None
        One minibatch seed per member; None: ``cfg.seed + i``.
    probes : dict of str to callable or None, default None
        Functions of the model evaluated at every check; values in ``history.probes[name]``.

    Returns
    -------
    History
        Per-member values: ``loss`` and ``train_acc`` rows are ``(E,)`` tensors, and
        ``history.probes['stop_step']`` holds each member's stopping step.

    Raises
    ------
    TypeError, ValueError
        If ``model`` is not a :class:`~gtlib.models.BatchedMLP`, the data do not fit it, or the
        seeds are not one per member.

    References
    ----------
    Nagarajan, V. and Kolter, J. Z. (2019). Uniform convergence may be unable to explain
    generalization in deep learning. NeurIPS (the margin stop rule).
    """
    _check_cfg(cfg)
    if not isinstance(model, BatchedMLP):
        raise TypeError(f"model must be a BatchedMLP, got {type(model).__name__}")
    Tensor("float", 2).check("x", x)
    if probes is not None and (
        not isinstance(probes, dict)
        or not all(isinstance(k, str) and callable(f) for k, f in probes.items())
    ):
        raise TypeError("probes must map names (str) to functions of the model")
    E = model.size
    seeds = (
        [cfg.seed + i for i in range(E)]
        if seeds is None
        else check_seeds("seeds", seeds)
    )
    if len(seeds) != E:
        raise ValueError(
            f"seeds must have one entry per member ({E}), got {len(seeds)}"
        )
    if isinstance(x, torch.Tensor) and x.ndim != 2:
        raise ValueError(f"x must have shape (n, d), got {tuple(x.shape)}")
    n = x.shape[0] if isinstance(x, torch.Tensor) else 0
    if isinstance(y, torch.Tensor) and y.shape not in ((n,), (E, n)):
        raise ValueError(
            f"y must have shape ({n},) or ({E}, {n}), got {tuple(y.shape)}"
        )
    check_data(x, y, int(model.weights[-1].shape[1]), per_member=E)
    y_full = y.expand(E, n)
    probes = probes or {}
    hist = History(probes={k: [] for k in probes})
    opt = StackedOptimizer(
        model.parameters(),
        cfg.optimizer,
        cfg.lr,
        cfg.momentum,
        cfg.weight_decay,
        members=E,
    )
    # the same draws as gtlib.train.train makes for each member alone
    batches = (
        None
        if cfg.batch_size is None
        else EpochBatches(n, cfg.batch_size, seeds, x.device)
    )

    def loss(step: int, idx: torch.Tensor | None) -> torch.Tensor:
        if idx is None:
            return _ensemble_loss(cfg.loss, model._logits(x), y_full)
        # shared labels: a plain index (faster than gathering from the expanded view)
        y_batch = y[idx] if y.ndim == 1 else y.gather(1, idx)
        return _ensemble_loss(cfg.loss, model._logits(x[idx]), y_batch)

    def check(step: int, due: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            logits = model._logits(x)  # the data were checked once, above
            hist.step.append(step)
            hist.loss.append(_ensemble_loss(cfg.loss, logits, y_full).cpu())
            acc = accuracy(logits, y_full)
            hist.train_acc.append(acc.cpu())
            for name, fn in probes.items():
                hist.probes[name].append(fn(model))
            return stop_rule(
                cfg.target_train_acc, cfg.margin_gamma, cfg.margin_fraction
            )(logits, y_full)

    done = fit(loss, opt, total_steps(n, cfg), batches, check, every=cfg.check_every)
    hist.probes["stop_step"] = done.stop_step
    if cfg.target_train_acc is not None or cfg.margin_gamma is not None:
        hist.stopped_by = (
            "all members met the stop rule" if all(done.met_rule) else "epochs"
        )
    return hist


def train_sequentially(
    seeds: Sequence[int],
    x: torch.Tensor,
    y: torch.Tensor,
    cfg: TrainConfig,
    in_dim: int,
    width: int,
    depth: int,
    out_dim: int,
    bias: bool = True,
    act: str = "relu",
) -> list[MLP]:
    """Train one MLP per seed with a plain PyTorch loop, the reference for the engine.

    This is the loop a reader would write with PyTorch alone, one model after another
    (``torch.optim``, ``loss.backward()``). Model ``i`` is ``make_mlp(seeds[i], ...)`` trained
    for the full length of ``cfg`` on the minibatches :func:`gtlib.train.batch_indices` draws from
    seed ``seeds[i]``: the initialization and the order :func:`gtlib.train.train_ensemble` gives
    member ``i``. It shares no code with :mod:`gtlib.engine`, so the two agreeing is evidence for
    both.

    Parameters
    ----------
    seeds : sequence of int
        One seed per model (initialization and minibatch order).
    x : torch.Tensor
        Training inputs ``(n, d)``.
    y : torch.Tensor
        Integer labels ``(n,)`` in ``[0, out_dim)``.
    cfg : TrainConfig
        How to train; must not set a stop rule (the reference has a fixed length).
    in_dim : int
        Input size, as for :func:`~gtlib.models.make_mlp`.
    width : int
        Hidden units per layer.
    depth : int
        Number of hidden layers.
    out_dim : int
        Number of classes.
    bias : bool, default True
        Whether the linear layers have biases.
    act : str, default "relu"
        The activation's name.

    Returns
    -------
    list of MLP
        The trained models, in the order of ``seeds``, on ``x``'s device and dtype.

    Raises
    ------
    TypeError, ValueError
        If ``cfg`` is not a valid :class:`gtlib.train.TrainConfig` or sets a stop rule, the data
        are refused by :func:`gtlib.train.check_data`, or the seeds or shape are invalid.
    """
    _check_cfg(cfg)
    out_dim = check_int("out_dim", out_dim)
    if cfg.target_train_acc is not None or cfg.margin_gamma is not None:
        raise ValueError(
            "cfg must not set a stop rule (target_train_acc, margin_gamma): "
            "train_sequentially is the fixed-length reference"
        )
    check_data(x, y, out_dim)
    models = []
    for s in check_seeds("seeds", seeds):
        m = make_mlp(int(s), in_dim, width, depth, out_dim, bias, act).to(
            x.device, x.dtype
        )
        opt = make_optimizer(m.parameters(), cfg)
        batches = batch_indices(
            len(y), cfg, torch.Generator().manual_seed(int(s)), x.device
        )
        for _ in range(total_steps(len(y), cfg)):
            idx = next(batches)
            loss = (
                F.cross_entropy(m(x[idx]), y[idx])
                if cfg.loss == "cross_entropy"
                else ((m(x[idx]) - F.one_hot(y[idx], out_dim).to(x.dtype)) ** 2)
                .sum(-1)
                .mean()
            )
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        models.append(m)
    return models
