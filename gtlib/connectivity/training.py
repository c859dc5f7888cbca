"""Mode connectivity: stacks of networks and their training (compositions of gtlib.engine)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
import torch.nn.functional as F

from ..checks import (
    Boolean,
    Options,
    Tensor,
    boundary,
    check_labels,
    check_seeds,
    count,
    fraction,
    nonnegative,
    positive,
    tuple_of,
)
from ..config import Config, param
from .. import engine
from ..engine import EpochBatches, StackedOptimizer, _member_batch
from ..models import ACTIVATIONS, BatchedMLP, MLP
from .common import _check_inputs, _check_same_shape, _sizes

__all__ = ["train_nets"]


@boundary()
def params(model: MLP) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
    """The weights ``[W_1, ..., W_{L+1}]`` and biases (or None) of an MLP, detached."""
    ws = [l.weight.detach() for l in model.layers]
    bs = (
        None
        if model.layers[0].bias is None
        else [l.bias.detach() for l in model.layers]
    )
    return ws, bs


@boundary(
    weights=tuple_of(Tensor("float", 2), min_len=2),
    biases=None,  # checked below, layer by layer
    act=Options(tuple(ACTIVATIONS)),
)
def from_params(
    weights: Sequence[torch.Tensor],
    biases: Sequence[torch.Tensor] | None,
    act: str = "relu",
) -> MLP:
    """An :class:`MLP` with the given weights (``(out, in)`` each) and biases."""
    width = weights[0].shape[0]
    if any(w.shape[0] != width for w in weights[:-1]):
        raise ValueError("weights: every hidden layer must have the same width")
    for l in range(1, len(weights)):
        if weights[l].shape[1] != weights[l - 1].shape[0]:
            raise ValueError(
                f"weights[{l}] must have {weights[l - 1].shape[0]} columns (the "
                f"previous layer's outputs), got shape {tuple(weights[l].shape)}"
            )
    if biases is not None:
        if isinstance(biases, (str, bytes)) or not isinstance(biases, (list, tuple)):
            raise TypeError(
                f"biases must be a list of tensors (one per layer) or None, got "
                f"{type(biases).__name__}"
            )
        if len(biases) != len(weights):
            raise ValueError(
                f"biases must hold one tensor per layer ({len(weights)}), got "
                f"{len(biases)}"
            )
        for l, (b, w) in enumerate(zip(biases, weights)):
            Tensor("float", 1).check(f"biases[{l}]", b)
            if b.shape[0] != w.shape[0]:
                raise ValueError(
                    f"biases[{l}] must have shape ({w.shape[0]},), got "
                    f"{tuple(b.shape)}"
                )
    m = MLP(
        weights[0].shape[1],
        width,
        len(weights) - 1,
        weights[-1].shape[0],
        bias=biases is not None,
        activation=act,
    ).to(weights[0].device)
    with torch.no_grad():
        for l, layer in enumerate(m.layers):
            layer.weight.copy_(weights[l])
            if biases is not None:
                layer.bias.copy_(biases[l])
    return m


@boundary()
def stack(models: Sequence[MLP]) -> BatchedMLP:
    """Stack identically shaped MLPs into a :class:`BatchedMLP` (copies the weights)."""
    for i, m in enumerate(models):
        _check_same_shape(models[0], m, names=("models[0]", f"models[{i}]"))
    return BatchedMLP.from_models(list(models))


@boundary()
def members(model: BatchedMLP) -> list[MLP]:
    """Every member of a stack as a stand-alone MLP."""
    return [model.member(i) for i in range(model.size)]


@dataclass
class Recipe(Config):
    """How a stack is trained: SGD with momentum, minibatches, a warm-up-then-linear-decay schedule.

    The learning rate rises linearly from ``lr * start_factor`` to ``lr`` over the first
    ``warmup`` fraction of the steps and then decays linearly to 0 (a one-cycle-like triangle;
    ``warmup=0`` starts at the peak), or, with ``decay=False``, stays at ``lr`` after the
    warm-up. ``epochs`` counts passes over the training points. ``optimizer="adam"`` trains
    with Adam (default betas and eps of :class:`~gtlib.engine.StackedOptimizer`; ``momentum``
    is then unused) in place of SGD with momentum.
    """

    lr: float = param(0.05, positive())
    momentum: float = param(0.9, fraction("left"))
    batch_size: int = param(100, count())
    epochs: int = param(30, count())
    warmup: float = param(0.2, fraction("left"))
    start_factor: float = param(0.05, fraction("right"))
    weight_decay: float = param(0.0, nonnegative())
    optimizer: str = param("sgd", Options(("sgd", "adam")))
    decay: bool = param(True, Boolean())

    @boundary(n=count())
    def steps(self, n: int) -> int:
        """Number of SGD steps on ``n`` training points."""
        return self.epochs * -(-n // self.batch_size)

    @boundary(step=count(0), total=count())
    def lr_factor(self, step: int, total: int) -> float:
        """The schedule's factor at update number ``step`` (0-based, at most ``total``) out of
        ``total``: the learning rate is ``lr * lr_factor(step, total)``, bit for bit
        :meth:`lr_at`."""
        _check_step(step, total)
        return self._lr_factor(step, total)

    def _lr_factor(self, step: int, total: int) -> float:
        # unchecked: the training loops call it at every step with steps they counted themselves
        w = int(round(self.warmup * total))
        if step < w:
            return self.start_factor + (1 - self.start_factor) * step / w
        if not self.decay:
            return 1.0
        return max(0.0, (total - step) / max(1, total - w))

    @boundary(step=count(0), total=count())
    def lr_at(self, step: int, total: int) -> float:
        """Learning rate of update number ``step`` (0-based, at most ``total``) out of ``total``."""
        _check_step(step, total)
        return self.lr * self._lr_factor(step, total)


def _check_step(step: int, total: int) -> None:
    if step > total:
        raise ValueError(f"step must lie in [0, total] = [0, {total}], got {step}")


@boundary(
    x=Tensor("float", (2, 3), empty=True),
    y=Tensor("int", (1, 2), empty=True),
    stop_step=count(0, optional=True),
    snapshot_steps=tuple_of(count(0), min_len=0),
)
def fit(
    model: BatchedMLP,
    x: torch.Tensor,
    y: torch.Tensor,
    recipe: Recipe,
    seeds: Sequence[int],
    start_steps: Sequence[int] | None = None,
    stop_step: int | None = None,
    only_last_layer: bool = False,
    freeze_last_layer: bool = False,
    snapshot_steps: Sequence[int] = (),
) -> dict[int, list[MLP]]:
    """Train every member of a stack in place with its own minibatch order (its SGD noise).

    Parameters
    ----------
    model : BatchedMLP
        The stack; member ``i`` is trained as if alone (the summed loss gives each member its own
        gradient).
    x, y : tensors
        ``(n, d)`` and ``(n,)`` shared by all members; ``(n, d)`` and ``(E, n)``: shared inputs
        with one labelling per member (e.g. two tasks); or ``(E, n, d)`` and ``(E, n)``: one
        training set per member.
    recipe : Recipe
        Optimizer settings and learning-rate schedule (evaluated at the *global* step).
    seeds : sequence of int
        Member ``i`` draws its minibatches from a generator seeded with ``seeds[i]``.
    start_steps : sequence of int, optional
        Member ``i`` stays frozen until global step ``start_steps[i]`` (spawning: a child spawned
        at step ``k`` starts from the parent's weights at ``k`` and then follows the same schedule).
    stop_step : int, optional
        Stop after this many global steps (default: the recipe's full length); the schedule is
        still the one of the full run (used to train a parent up to the last spawn time).
    only_last_layer : bool
        Train only the output layer (a linear probe on frozen features, computed once).
    freeze_last_layer : bool
        Train every layer but the output layer (fine-tuning with a frozen head, as Ilharco et al.
        2023 do).
    snapshot_steps : sequence of int
        Global steps at which to copy the members (before that step's update).

    Returns
    -------
    dict
        ``{step: [member MLPs]}`` for every step of ``snapshot_steps`` that was reached.

    Notes
    -----
    A composition of :mod:`gtlib.engine`: a :class:`~gtlib.engine.StackedOptimizer` (SGD with
    the recipe's momentum and coupled weight decay, each member updated as PyTorch's SGD would
    update it alone; a member that has not started is not updated, not decayed, and keeps an
    empty momentum buffer) over the trainable layers, :class:`~gtlib.engine.EpochBatches`
    (member ``i``'s permutations from ``seeds[i]``), and :func:`gtlib.engine.fit` with
    ``start=start_steps``, the schedule :meth:`Recipe.lr_factor` and, for the snapshots, a check
    at every step.
    """
    E = model.size
    seeds = check_seeds("seeds", seeds)
    if len(seeds) != E:
        raise ValueError(
            f"seeds must have one entry per member ({E}), got {len(seeds)}"
        )
    if x.ndim == 3 and x.shape[0] != E:
        raise ValueError(
            f"x must have shape (n, d) or ({E}, n, d), got {tuple(x.shape)}"
        )
    n = x.shape[-2]
    if n == 0:
        raise ValueError("x must hold at least one training signal, got n = 0")
    if x.ndim == 2 and y.shape not in ((n,), (E, n)):
        raise ValueError(
            f"y must have shape ({n},) or ({E}, {n}), got {tuple(y.shape)}"
        )
    if x.ndim == 3 and y.shape != (E, n):
        raise ValueError(f"y must have shape ({E}, {n}), got {tuple(y.shape)}")
    _check_inputs("x", x, model)
    check_labels("y", y, _sizes(model)[1], n=n)
    total = recipe.steps(n)
    last = total if stop_step is None else int(stop_step)
    if not 0 <= last <= total:
        raise ValueError(f"stop_step must lie in [0, {total}], got {stop_step}")
    if start_steps is None:
        start = torch.zeros(E, dtype=torch.long)
    else:
        if isinstance(start_steps, (str, bytes)) or not isinstance(
            start_steps, (list, tuple)
        ):
            raise TypeError(
                f"start_steps must be a list of {E} ints or None, got "
                f"{type(start_steps).__name__}"
            )
        if len(start_steps) != E:
            raise ValueError(
                f"start_steps must hold {E} ints (one per member), got "
                f"{len(start_steps)}"
            )
        for i, k in enumerate(start_steps):
            count(0).check(f"start_steps[{i}]", k)
        start = torch.as_tensor([int(k) for k in start_steps], dtype=torch.long)
    snaps = {int(k) for k in snapshot_steps}
    if snaps and max(snaps) > total:
        raise ValueError(
            f"snapshot_steps must lie in [0, {total}] (the recipe's steps), got "
            f"{max(snaps)}"
        )
    if only_last_layer and freeze_last_layer:
        raise ValueError("only_last_layer and freeze_last_layer exclude each other")
    head = [model.weights[-1]] + ([model.biases[-1]] if model.has_bias else [])
    if only_last_layer:
        trainable = head
    elif freeze_last_layer:
        trainable = [p for p in model.parameters() if all(p is not h for h in head)]
    else:
        trainable = list(model.parameters())
    # the engine leaves a member that has not started yet untouched (no step, no weight decay)
    opt = StackedOptimizer(
        trainable,
        recipe.optimizer,
        lr=recipe.lr,
        momentum=recipe.momentum,
        weight_decay=recipe.weight_decay,
        members=E,
    )
    batches = EpochBatches(n, recipe.batch_size, seeds, device=x.device)

    feats = None
    if only_last_layer and len(model.weights) > 1:
        # a linear probe: the frozen body's last features are computed once, not every step
        with torch.no_grad():
            feats = model._features(x)[-2]
        rows = torch.arange(E, device=x.device).unsqueeze(1)

    def loss(step: int, idx: torch.Tensor) -> torch.Tensor:
        if feats is None:
            xb, yb = _member_batch(x, y, idx)
            logits = model(xb)
        else:
            yb = y[idx] if y.ndim == 1 else y[rows, idx]
            w, b = model.weights[-1], model.biases[-1] if model.has_bias else None
            hb = feats[rows, idx]
            logits = (
                torch.matmul(hb, w.transpose(1, 2))
                if b is None
                else torch.baddbmm(b.unsqueeze(1), hb, w.transpose(1, 2))
            )
        return (
            F.cross_entropy(
                logits.reshape(-1, logits.shape[-1]),
                yb.reshape(-1),
                reduction="none",
            )
            .view(E, -1)
            .mean(1)
        )

    out: dict[int, list[MLP]] = {}

    def snapshot(step: int, due: torch.Tensor) -> None:
        if (
            step in snaps
        ):  # ``step`` updates made: the members before update number ``step``
            out[step] = members(model)

    engine.fit(
        loss,
        opt,
        last,
        batches,
        check=snapshot if snaps else None,
        every=1,
        start=start.tolist(),
        schedule=lambda step: recipe._lr_factor(step, total),
    )
    return out


@boundary(
    x=Tensor("float", (2, 3)),
    y=Tensor("int", (1, 2)),
    width=count(),
    depth=count(0),
    num_classes=count(),
)
def train_nets(
    seeds: Sequence[int],
    x: torch.Tensor,
    y: torch.Tensor,
    width: int,
    depth: int,
    num_classes: int,
    recipe: Recipe,
) -> list[MLP]:
    """Train one MLP per seed (its initialization and its SGD noise), all in one stack.

    Parameters
    ----------
    seeds : Sequence[int]
        Seeds, one per model or run; a non-empty list or tuple whose items are each an int.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2 or 3-dimensional,
        finite).
    y : torch.Tensor
        Integer labels of ``x``; a torch.Tensor (non-empty, integer, 1 or 2-dimensional).
    width : int
        Hidden width; an int >= 1.
    depth : int
        Number of hidden layers; an int >= 0.
    num_classes : int
        Number of classes; an int >= 1.
    recipe : Recipe
        The training recipe; a Recipe.

    Returns
    -------
    list[MLP]
        The trained networks, one per seed.
    """
    seeds = check_seeds("seeds", seeds)
    check_labels("y", y, num_classes, n=x.shape[-2])
    model = BatchedMLP.init(
        seeds, x.shape[-1], width, depth, num_classes, device=x.device
    )
    fit(model, x, y, recipe, seeds=[10_000 + int(s) for s in seeds])
    return members(model)
