"""The training loop every chapter uses, with the book's three stop rules.

:func:`train` runs SGD (optionally with momentum) or AdamW, minibatch or full batch, and stops after
a number of epochs, or once the training accuracy reaches a target, or once a fraction of the
training points have margin at least ``gamma`` (Nagarajan and Kolter 2019 stop at "at most 1% of
points with margin below gamma"). It returns a :class:`History` with the loss, the accuracy and any
per-step probe the chapter passes in.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from .checks import check_fraction

OPTIMIZERS = ("sgd", "adamw")
LOSSES = ("cross_entropy", "mse")


@dataclass
class TrainConfig:
    """How to train. ``batch_size=None`` means full batch; ``steps`` caps the number of updates.

    Stop rules (the first one met ends training): ``epochs``/``steps``; ``target_train_acc``
    (fraction); ``margin_gamma`` with ``margin_fraction`` (stop once at least that fraction of the
    training points has margin ``f_y - max_{j != y} f_j >= margin_gamma``). Rules are checked every
    ``check_every`` steps on the whole training set.
    """

    optimizer: str = "sgd"
    lr: float = 0.1
    momentum: float = 0.0
    weight_decay: float = 0.0
    batch_size: int | None = 64
    epochs: int = 10
    steps: int | None = None
    loss: str = "cross_entropy"
    target_train_acc: float | None = None
    margin_gamma: float | None = None
    margin_fraction: float = 0.99
    check_every: int = 50
    seed: int = 0

    def validate(self) -> "TrainConfig":
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {self.loss!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if not 0 <= self.momentum < 1:
            raise ValueError(f"momentum must lie in [0, 1), got {self.momentum}")
        if self.weight_decay < 0:
            raise ValueError(f"weight_decay must be >= 0, got {self.weight_decay}")
        if self.batch_size is not None and (not isinstance(self.batch_size, int) or self.batch_size < 1):
            raise ValueError(f"batch_size must be a positive int or None, got {self.batch_size!r}")
        if not isinstance(self.epochs, int) or self.epochs < 1:
            raise ValueError(f"epochs must be a positive int, got {self.epochs!r}")
        if self.steps is not None and (not isinstance(self.steps, int) or self.steps < 1):
            raise ValueError(f"steps must be a positive int or None, got {self.steps!r}")
        if self.target_train_acc is not None:
            check_fraction("target_train_acc", self.target_train_acc)
        check_fraction("margin_fraction", self.margin_fraction)
        if self.margin_gamma is not None and self.margin_gamma < 0:
            raise ValueError(f"margin_gamma must be >= 0, got {self.margin_gamma}")
        if not isinstance(self.check_every, int) or self.check_every < 1:
            raise ValueError(f"check_every must be a positive int, got {self.check_every!r}")
        return self


@dataclass
class History:
    """What happened during training: one row per check (``step``), plus probe outputs."""

    step: list[int] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    train_acc: list[float] = field(default_factory=list)
    probes: dict[str, list] = field(default_factory=dict)
    stopped_by: str = "epochs"

    @property
    def steps_taken(self) -> int:
        return self.step[-1] if self.step else 0


def margins(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Multiclass margins ``f_y(x) - max_{j != y} f_j(x)`` (positive means correctly classified).

    Works on ``(n, C)`` logits, or ``(E, n, C)`` for an ensemble.
    """
    if logits.ndim not in (2, 3):
        raise ValueError(f"logits must have shape (n, C) or (E, n, C), got {tuple(logits.shape)}")
    if y.shape[-1] != logits.shape[-2]:
        raise ValueError("y must have one label per row of logits")
    yy = y.expand(logits.shape[:-1]) if logits.ndim == 3 and y.ndim == 1 else y
    true = logits.gather(-1, yy.unsqueeze(-1)).squeeze(-1)
    other = logits.scatter(-1, yy.unsqueeze(-1), float("-inf")).amax(-1)
    return true - other


def accuracy(logits: torch.Tensor, y: torch.Tensor) -> float | torch.Tensor:
    """Fraction of rows whose arg-max equals the label (per member for ``(E, n, C)`` logits)."""
    correct = (logits.argmax(-1) == y).float()
    return correct.mean().item() if logits.ndim == 2 else correct.mean(-1)


def loss_fn(name: str, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean loss over the last-but-one axis: cross-entropy, or MSE to one-hot targets."""
    if name == "cross_entropy":
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    if name == "mse":
        onehot = F.one_hot(y, logits.shape[-1]).to(logits.dtype)
        return ((logits - onehot) ** 2).sum(-1).mean()
    raise ValueError(f"loss must be one of {LOSSES}, got {name!r}")


def make_optimizer(params, cfg: TrainConfig) -> torch.optim.Optimizer:
    """The optimizer named by ``cfg`` over ``params``."""
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    return torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)


def total_steps(n: int, cfg: TrainConfig) -> int:
    """Number of updates ``cfg`` allows on ``n`` training points (before any early stop)."""
    per_epoch = 1 if cfg.batch_size is None else -(-n // cfg.batch_size)
    steps = cfg.epochs * per_epoch
    return steps if cfg.steps is None else min(steps, cfg.steps)


def batch_indices(n: int, cfg: TrainConfig, generator: torch.Generator, device) -> "Iterator":
    """Yield the index tensor of each minibatch: a fresh permutation per epoch, last batch short."""
    if cfg.batch_size is None:
        full = torch.arange(n, device=device)
        while True:
            yield full
    while True:
        perm = torch.randperm(n, generator=generator).to(device)
        for start in range(0, n, cfg.batch_size):
            yield perm[start:start + cfg.batch_size]


def stop_reason(logits: torch.Tensor, y: torch.Tensor, cfg: TrainConfig) -> str | None:
    """Which stop rule (if any) the training-set ``logits`` meet."""
    if cfg.target_train_acc is not None and accuracy(logits, y) >= cfg.target_train_acc:
        return "target_train_acc"
    if cfg.margin_gamma is not None:
        frac = (margins(logits, y) >= cfg.margin_gamma).float().mean().item()
        if frac >= cfg.margin_fraction:
            return "margin"
    return None


def train(model: nn.Module, x: torch.Tensor, y: torch.Tensor, cfg: TrainConfig,
          probes: dict[str, Callable[[nn.Module], object]] | None = None) -> History:
    """Train ``model`` on ``(x, y)`` in place and return its :class:`History`.

    ``probes`` maps a name to a function of the model evaluated at every check (e.g. test accuracy
    or a weight norm); its values are stored in ``history.probes[name]``.

    Raises
    ------
    ValueError
        If ``x`` and ``y`` disagree in length or the config is invalid.
    """
    cfg.validate()
    if x.ndim != 2 or y.ndim != 1 or x.shape[0] != y.shape[0]:
        raise ValueError(f"x must be (n, d) and y (n,) with the same n; got {tuple(x.shape)}, "
                         f"{tuple(y.shape)}")
    probes = probes or {}
    hist = History(probes={k: [] for k in probes})
    opt = make_optimizer(model.parameters(), cfg)
    gen = torch.Generator().manual_seed(cfg.seed)
    batches = batch_indices(len(y), cfg, gen, x.device)
    n_steps = total_steps(len(y), cfg)

    def check(step: int) -> str | None:
        with torch.no_grad():
            logits = model(x)
            hist.step.append(step)
            hist.loss.append(loss_fn(cfg.loss, logits, y).item())
            hist.train_acc.append(accuracy(logits, y))
            for name, fn in probes.items():
                hist.probes[name].append(fn(model))
            return stop_reason(logits, y, cfg)

    if (reason := check(0)) is not None:
        hist.stopped_by = reason
        return hist
    for step in range(1, n_steps + 1):
        idx = next(batches)
        loss = loss_fn(cfg.loss, model(x[idx]), y[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % cfg.check_every == 0 or step == n_steps:
            if (reason := check(step)) is not None:
                hist.stopped_by = reason
                return hist
    return hist
