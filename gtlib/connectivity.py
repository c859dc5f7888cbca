"""Mode connectivity: interpolation paths, barriers, permutation alignment, spawning, LLFC and CTL.

The chapter *Mode connectivity* re-runs, on MNIST-1D MLPs, the results of

* Frankle, Dziugaite, Roy and Carbin, "Linear mode connectivity and the lottery ticket hypothesis"
  (ICML 2020): the *instability* of a pair, the largest test error along the straight line minus
  the mean of the endpoints' errors (:func:`barrier_mean`), and *spawning* (their Section 3:
  train for k steps, copy, continue the copies with different SGD noise);
* Entezari et al. (ICLR 2022) and Ainsworth, Hayase and Srinivasa, "Git Re-Basin" (ICLR 2023):
  hidden units can be permuted without changing the function; the loss barrier above the chord
  between the endpoints (Entezari et al.'s definition, :func:`barrier`); *weight matching* (Git
  Re-Basin, Section 3.2 and Algorithm 1: one linear assignment problem per layer, coordinate
  descent over the layers) and activation matching align two independently trained networks;
* Jordan et al., "REPAIR" (ICLR 2023): renormalizing the interpolated network's units
  (:func:`repair_stack`); Garipov et al. (NeurIPS 2018): low-loss quadratic Bezier curves between
  unaligned networks (:func:`fit_bezier`);
* Zhou et al., "Layerwise Linear Feature Connectivity" (NeurIPS 2023): when two networks are
  linearly connected, the features of the interpolated network equal (up to scale) the interpolated
  features at every layer (their LLFC definition), which follows from *weak additivity* of ReLU
  (:func:`weak_additivity`) and *commutativity* ``W_A H_A + W_B H_B = W_A H_B + W_B H_A``; and
  LLFC implies linear connectivity (:func:`logit_interpolation`). The paper's numbering of these
  statements is not checked here;
* Zhou, Chen, Chen, Zhang and Yan, "Cross-Task Linearity" (ICML 2024): models fine-tuned from one
  pretrained model on different tasks are layerwise linear in the same sense,
  which explains weight averaging (model soups) and task arithmetic (Ilharco et al., ICLR 2023).

The module reads top to bottom: (1) stacking and training networks (compositions of
:mod:`gtlib.engine`), (2) interpolation and barriers, (3) permutations and matching, (4)
feature-level metrics (LLFC, weak additivity, commutativity), (4b) REPAIR and Bezier curves, (5)
fine-tuning, averaging and task vectors, (6) the chapter's experiments, each a function of a
config dataclass.

Conventions. A network is a :class:`gtlib.models.MLP` (for one net) or a
:class:`gtlib.models.BatchedMLP` (for a stack). ``theta(alpha) = (1 - alpha) theta_A + alpha
theta_B``, so ``alpha = 0`` is network A. A permutation of a hidden layer is an index array ``p``:
unit ``i`` of the permuted network is unit ``p[i]`` of the original.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F
from scipy.optimize import linear_sum_assignment

from .checks import (SEED, Constraint, InstanceOf, Interval, Options, Tensor, boundary,
                     check_labels, check_seeds, count, fraction, nonnegative, positive, tuple_of)
from .config import Config, Result, param
from . import engine
from .engine import EpochBatches, StackedOptimizer, _member_batch
from .models import ACTIVATIONS, BatchedMLP, MLP, make_mlp

__all__ = [
    # configs and results
    "ConnectivityConfig",
    # functions
    "accuracy", "activation_matching", "align", "apply_task_vectors", "barrier",
    "barrier_vs_epoch", "commutativity_bound_ratio", "commutativity_residual",
    "cross_task_experiment", "depth_sweep", "endpoint_dissimilarity", "evaluate_bezier",
    "evaluate_path", "fit_bezier", "llfc_dissimilarity", "llfc_profile", "logit_interpolation",
    "permute", "perturb", "planted_permutation_check", "pretraining_sweep", "random_perms",
    "repair_path", "spawn_experiment", "task_labels", "task_vector", "train_nets", "train_pairs",
    "weak_additivity", "weight_distance", "weight_matching",
]


# ---------------------------------------------------------------------------------------------
# 0. Argument checks shared by the public functions (see gtlib.checks.boundary)
# ---------------------------------------------------------------------------------------------

#: Inputs: a non-empty, finite, floating-point ``(n, d)`` tensor.
INPUTS = Tensor("float", 2)
#: Class labels: a non-empty integer ``(n,)`` tensor (the range is checked against the network).
LABELS = Tensor("int", 1)
#: Base seed of an experiment: its parts use ``1_000_003 * seed + 1000 * tag + i`` (< 2**63).
EXPERIMENT_SEED = Interval(int, 0, 2**63 // 1_000_003 - 1)


class _Numbers(Constraint):
    """A non-empty 1-D list, tuple, array or tensor of finite numbers, in ``[low, high]`` if given;
    with ``grid=True`` also an int >= 2 (that many points evenly spaced in [0, 1])."""

    def __init__(self, low: float | None = None, high: float | None = None, grid: bool = False):
        self.low, self.high, self.grid = low, high, grid

    def describe(self) -> str:
        what = "a non-empty 1-D sequence of finite numbers"
        if self.low is not None:
            what += f" in [{self.low}, {self.high}]"
        return ("an int >= 2 (evenly spaced points in [0, 1]) or " + what) if self.grid else what

    def check(self, name: str, value):
        if isinstance(value, (bool, np.bool_)):
            self._fail(name, value, TypeError)
        if isinstance(value, (int, np.integer)):
            if not self.grid:
                self._fail(name, value, TypeError)
            if value < 2:
                self._fail(name, value)
            return value
        if value is None or isinstance(value, (str, bytes, dict, float, np.floating)):
            self._fail(name, value, TypeError)
        try:
            arr = np.asarray(value.detach().cpu() if isinstance(value, torch.Tensor) else value)
        except (TypeError, ValueError, RuntimeError):
            self._fail(name, value, TypeError)
        if arr.dtype.kind not in "iuf":
            self._fail(name, value, TypeError)
        if arr.ndim != 1 or arr.size == 0 or not np.isfinite(arr).all():
            self._fail(name, value)
        if self.low is not None and (arr.min() < self.low or arr.max() > self.high):
            self._fail(name, value)
        return value


#: Points along a path: a sequence of finite numbers, or a number of evenly spaced points.
GRID = _Numbers(grid=True)


def _check_mlp(name: str, model) -> MLP:
    if not isinstance(model, MLP):
        raise TypeError(f"{name} must be a gtlib.models.MLP, got {type(model).__name__}")
    return model


def _check_same_shape(a: MLP, b: MLP, body_only: bool = False, names: tuple = ("a", "b")) -> None:
    na, nb = names
    _check_mlp(na, a)
    _check_mlp(nb, b)
    cut = -1 if body_only else None
    sa = [tuple(l.weight.shape) for l in a.layers[:cut]]
    sb = [tuple(l.weight.shape) for l in b.layers[:cut]]
    if sa != sb:
        raise ValueError(f"{na} and {nb} must have the same layer shapes, got {sa} and {sb}")
    if (a.layers[0].bias is None) != (b.layers[0].bias is None):
        raise ValueError(f"{na} and {nb} must both have biases or both not")
    if a.act_name != b.act_name:
        raise ValueError(f"{na} and {nb} must share the activation, got {a.act_name!r} and "
                         f"{b.act_name!r}")


def _sizes(model) -> tuple[int, int, torch.dtype]:
    """Input size, number of classes and dtype of an MLP or a stack."""
    if isinstance(model, BatchedMLP):
        return (int(model.weights[0].shape[2]), int(model.weights[-1].shape[1]),
                model.weights[0].dtype)
    return model.layers[0].in_features, model.layers[-1].out_features, model.layers[0].weight.dtype


def _check_inputs(name: str, x: torch.Tensor, model, min_rows: int = 1) -> None:
    """``x`` (already a finite float tensor) fits ``model``: its columns and its dtype."""
    d, _, dtype = _sizes(model)
    if x.shape[-1] != d:
        raise ValueError(f"{name} must have {d} columns (the networks' input size), got shape "
                         f"{tuple(x.shape)}")
    if x.dtype != dtype:
        raise TypeError(f"{name} must have the networks' dtype {dtype}, got {x.dtype}")
    if x.shape[-2] < min_rows:
        raise ValueError(f"{name} must have at least {min_rows} rows, got shape {tuple(x.shape)}")


def _check_data(model, x: torch.Tensor, y: torch.Tensor, xname: str = "x",
                yname: str = "y") -> None:
    """Inputs that fit ``model`` and one label per row in ``[0, number of outputs)``."""
    _check_inputs(xname, x, model)
    check_labels(yname, y, _sizes(model)[1], n=x.shape[0])


def _check_train_labels(name: str, y: torch.Tensor, n: int) -> int:
    """Labels of a training set whose number of classes is read off them: ``max(y) + 1``."""
    check_labels(name, y, n=n)
    if int(y.min()) < 0:
        raise ValueError(f"{name} must hold labels >= 0, got minimum {int(y.min())}")
    if len(torch.unique(y)) < 2:
        raise ValueError(f"{name} must hold at least two classes, got only label {int(y[0])}")
    return int(y.max()) + 1


# ---------------------------------------------------------------------------------------------
# 1. Stacks of networks and their training
# ---------------------------------------------------------------------------------------------


@boundary()
def params(model: MLP) -> tuple[list[torch.Tensor], list[torch.Tensor] | None]:
    """The weights ``[W_1, ..., W_{L+1}]`` and biases (or None) of an MLP, detached."""
    ws = [l.weight.detach() for l in model.layers]
    bs = None if model.layers[0].bias is None else [l.bias.detach() for l in model.layers]
    return ws, bs


@boundary(weights=tuple_of(Tensor("float", 2), min_len=2),
          biases=None,  # checked below, layer by layer
          act=Options(tuple(ACTIVATIONS)))
def from_params(weights: Sequence[torch.Tensor], biases: Sequence[torch.Tensor] | None,
                act: str = "relu") -> MLP:
    """An :class:`MLP` with the given weights (``(out, in)`` each) and biases."""
    width = weights[0].shape[0]
    if any(w.shape[0] != width for w in weights[:-1]):
        raise ValueError("weights: every hidden layer must have the same width")
    for l in range(1, len(weights)):
        if weights[l].shape[1] != weights[l - 1].shape[0]:
            raise ValueError(f"weights[{l}] must have {weights[l - 1].shape[0]} columns (the "
                             f"previous layer's outputs), got shape {tuple(weights[l].shape)}")
    if biases is not None:
        if isinstance(biases, (str, bytes)) or not isinstance(biases, (list, tuple)):
            raise TypeError(f"biases must be a list of tensors (one per layer) or None, got "
                            f"{type(biases).__name__}")
        if len(biases) != len(weights):
            raise ValueError(f"biases must hold one tensor per layer ({len(weights)}), got "
                             f"{len(biases)}")
        for l, (b, w) in enumerate(zip(biases, weights)):
            Tensor("float", 1).check(f"biases[{l}]", b)
            if b.shape[0] != w.shape[0]:
                raise ValueError(f"biases[{l}] must have shape ({w.shape[0]},), got "
                                 f"{tuple(b.shape)}")
    m = MLP(weights[0].shape[1], width, len(weights) - 1, weights[-1].shape[0],
            bias=biases is not None, activation=act).to(weights[0].device)
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
    ``warmup=0`` starts at the peak). ``epochs`` counts passes over the training points.
    """

    lr: float = param(0.05, positive())
    momentum: float = param(0.9, fraction("left"))
    batch_size: int = param(100, count())
    epochs: int = param(30, count())
    warmup: float = param(0.2, fraction("left"))
    start_factor: float = param(0.05, fraction("right"))
    weight_decay: float = param(0.0, nonnegative())

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
        return max(0.0, (total - step) / max(1, total - w))

    @boundary(step=count(0), total=count())
    def lr_at(self, step: int, total: int) -> float:
        """Learning rate of update number ``step`` (0-based, at most ``total``) out of ``total``."""
        _check_step(step, total)
        return self.lr * self._lr_factor(step, total)


def _check_step(step: int, total: int) -> None:
    if step > total:
        raise ValueError(f"step must lie in [0, total] = [0, {total}], got {step}")


@boundary(x=Tensor("float", (2, 3), empty=True), y=Tensor("int", (1, 2), empty=True),
          stop_step=count(optional=True), snapshot_steps=tuple_of(count(0), min_len=0))
def fit(model: BatchedMLP, x: torch.Tensor, y: torch.Tensor, recipe: Recipe,
        seeds: Sequence[int], start_steps: Sequence[int] | None = None,
        stop_step: int | None = None, only_last_layer: bool = False, freeze_last_layer: bool = False,
        snapshot_steps: Sequence[int] = ()) -> dict[int, list[MLP]]:
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
        Train only the output layer (a linear probe on frozen features).
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
    return _fit(model, x, y, recipe, seeds, start_steps, stop_step, only_last_layer,
                freeze_last_layer, snapshot_steps)


def _fit(model: BatchedMLP, x: torch.Tensor, y: torch.Tensor, recipe: Recipe,
         seeds: Sequence[int], start_steps: Sequence[int] | None = None,
         stop_step: int | None = None, only_last_layer: bool = False, freeze_last_layer: bool = False,
         snapshot_steps: Sequence[int] = ()) -> dict[int, list[MLP]]:
    """:func:`fit` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    E = model.size
    seeds = check_seeds("seeds", seeds)
    if len(seeds) != E:
        raise ValueError(f"seeds must have one entry per member ({E}), got {len(seeds)}")
    if x.ndim == 3 and x.shape[0] != E:
        raise ValueError(f"x must have shape (n, d) or ({E}, n, d), got {tuple(x.shape)}")
    n = x.shape[-2]
    if n == 0:
        raise ValueError("x must hold at least one training signal, got n = 0")
    if x.ndim == 2 and y.shape not in ((n,), (E, n)):
        raise ValueError(f"y must have shape ({n},) or ({E}, {n}), got {tuple(y.shape)}")
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
        if isinstance(start_steps, (str, bytes)) or not isinstance(start_steps, (list, tuple)):
            raise TypeError(f"start_steps must be a list of {E} ints or None, got "
                            f"{type(start_steps).__name__}")
        if len(start_steps) != E:
            raise ValueError(f"start_steps must hold {E} ints (one per member), got "
                             f"{len(start_steps)}")
        for i, k in enumerate(start_steps):
            count(0).check(f"start_steps[{i}]", k)
        start = torch.as_tensor([int(k) for k in start_steps], dtype=torch.long)
    snaps = {int(k) for k in snapshot_steps}
    if snaps and max(snaps) > total:
        raise ValueError(f"snapshot_steps must lie in [0, {total}] (the recipe's steps), got "
                         f"{max(snaps)}")
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
    opt = StackedOptimizer(trainable, "sgd", lr=recipe.lr, momentum=recipe.momentum,
                           weight_decay=recipe.weight_decay, members=E)
    batches = EpochBatches(n, recipe.batch_size, seeds, device=x.device)

    def loss(step: int, idx: torch.Tensor) -> torch.Tensor:
        xb, yb = _member_batch(x, y, idx)
        logits = model(xb)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), yb.reshape(-1),
                               reduction="none").view(E, -1).mean(1)

    out: dict[int, list[MLP]] = {}

    def snapshot(step: int, due: torch.Tensor) -> None:
        if step in snaps:  # ``step`` updates made: the members before update number ``step``
            out[step] = members(model)

    engine.fit(loss, opt, last, batches, check=snapshot if snaps else None, every=1,
               start=start.tolist(), schedule=lambda step: recipe._lr_factor(step, total))
    return out



@boundary(x=Tensor("float", (2, 3)), y=Tensor("int", (1, 2)), width=count(), depth=count(0),
          num_classes=count())
def train_nets(seeds: Sequence[int], x: torch.Tensor, y: torch.Tensor, width: int, depth: int,
               num_classes: int, recipe: Recipe) -> list[MLP]:
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
    model = BatchedMLP.init(seeds, x.shape[-1], width, depth, num_classes,
                            device=x.device)
    _fit(model, x, y, recipe, seeds=[10_000 + int(s) for s in seeds])
    return members(model)


# ---------------------------------------------------------------------------------------------
# 2. Interpolation paths and barriers
# ---------------------------------------------------------------------------------------------


@boundary()
def lerp(a: MLP, b: MLP, alpha: float) -> MLP:
    """The network ``(1 - alpha) * theta_A + alpha * theta_B`` (every weight and bias)."""
    _check_same_shape(a, b)
    alpha = float(alpha)
    (wa, ba), (wb, bb) = params(a), params(b)
    ws = [(1 - alpha) * u + alpha * v for u, v in zip(wa, wb)]
    bs = None if ba is None else [(1 - alpha) * u + alpha * v for u, v in zip(ba, bb)]
    return from_params(ws, bs, a.act_name)


@boundary(alphas=_Numbers())
def path_stack(a: MLP, b: MLP, alphas: Sequence[float]) -> BatchedMLP:
    """All networks on the segment from ``a`` to ``b`` at ``alphas``, as one stack."""
    _check_same_shape(a, b)
    al = torch.as_tensor(np.asarray(alphas, dtype=np.float32)).to(a.layers[0].weight.device)
    if al.ndim != 1 or len(al) == 0 or not bool(torch.isfinite(al).all()):
        raise ValueError("alphas must be a non-empty 1-D sequence of finite numbers")
    (wa, ba), (wb, bb) = params(a), params(b)
    ws = [(1 - al).view(-1, 1, 1) * u + al.view(-1, 1, 1) * v for u, v in zip(wa, wb)]
    bs = None if ba is None else [(1 - al).view(-1, 1) * u + al.view(-1, 1) * v
                                  for u, v in zip(ba, bb)]
    return BatchedMLP(ws, bs, act=a.act_name)


@dataclass
class Path:
    """Loss and accuracy along a linear path, with the barrier summaries."""

    alphas: np.ndarray
    loss: np.ndarray
    acc: np.ndarray

    def __post_init__(self):
        for name in ("alphas", "loss", "acc"):
            value = getattr(self, name)
            _Numbers().check(f"Path.{name}", value)
            setattr(self, name, np.asarray(value))
        if not len(self.alphas) == len(self.loss) == len(self.acc):
            raise ValueError(f"Path.alphas, loss and acc must have the same length, got "
                             f"{len(self.alphas)}, {len(self.loss)} and {len(self.acc)}")

    @property
    def loss_barrier(self) -> float:
        """Largest rise of the loss above the straight line between the endpoint losses."""
        return barrier(self.alphas, self.loss)

    @property
    def error_barrier(self) -> float:
        """Largest rise of the error (1 - accuracy) above the line between the endpoint errors."""
        return barrier(self.alphas, 1 - self.acc)

    @property
    def error_barrier_mean(self) -> float:
        """Frankle et al.'s error barrier: largest error minus the mean endpoint error."""
        return barrier_mean(self.alphas, 1 - self.acc)

    @property
    def mid_acc(self) -> float:
        """Accuracy at the point of the path closest to alpha = 0.5."""
        return float(self.acc[np.argmin(np.abs(self.alphas - 0.5))])

    @property
    def end_acc(self) -> float:
        """Mean accuracy of the two endpoints."""
        return float((self.acc[0] + self.acc[-1]) / 2)


def _curve(alphas, values) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(alphas, dtype=float)
    v = np.asarray(values, dtype=float)
    if a.ndim != 1 or v.shape != a.shape or len(a) < 2:
        raise ValueError(f"alphas and values must be 1-D of the same length >= 2, got "
                         f"{len(a)} and {len(v)}")
    if not (np.isclose(a[0], 0.0) and np.isclose(a[-1], 1.0)) or np.any(np.diff(a) <= 0):
        raise ValueError("alphas must increase from 0 to 1")
    return a, v


@boundary(alphas=_Numbers(), values=_Numbers())
def barrier(alphas: Sequence[float], values: Sequence[float]) -> float:
    r"""Barrier of a curve above its chord (Entezari et al. 2022, loss barrier).

    ``max_alpha [v(alpha) - ((1 - alpha) v(0) + alpha v(1))]`` over the sampled
    ``alphas``, which must start at 0 and end at 1. It is 0 for a curve that never
    rises above its chord (a convex or flat curve), and negative only if the curve
    lies strictly below its chord.

    .. math::

       B = \max_\alpha \big[L(\alpha) - ((1 - \alpha) L(0) + \alpha L(1))\big]

    Parameters
    ----------
    alphas : Sequence[float]
        Interpolation points; a non-empty 1-D sequence of
        finite numbers.
    values : Sequence[float]
        The curve's values at evenly spaced points; a non-empty 1-D sequence of
        finite numbers.

    Returns
    -------
    float
        The barrier (0 for a curve on or below its chord).

    References
    ----------
    Entezari, Sedghi, Saukh and Neyshabur (2022), "The Role of Permutation Invariance
    in Linear Mode Connectivity of Neural Networks".
    """
    a, v = _curve(alphas, values)
    chord = (1 - a) * v[0] + a * v[-1]
    return float(np.max(v - chord))


@boundary(alphas=_Numbers(), values=_Numbers())
def barrier_mean(alphas: Sequence[float], values: Sequence[float]) -> float:
    """Barrier above the mean of the endpoints (Frankle et al. 2020, error barrier height).

    ``max_alpha v(alpha) - (v(0) + v(1)) / 2``: Frankle et al.'s instability of a pair of
    networks, computed on the test error. It equals :func:`barrier` when both endpoints have the
    same value and differs from it by at most half the endpoints' difference.
    """
    a, v = _curve(alphas, values)
    return float(np.max(v) - (v[0] + v[-1]) / 2)


@boundary(x=INPUTS, y=LABELS, alphas=GRID)
@torch.no_grad()
def evaluate_path(a: MLP, b: MLP, x: torch.Tensor, y: torch.Tensor,
                  alphas: Sequence[float] | int = 25) -> Path:
    """Cross-entropy loss and accuracy of the interpolated networks on ``(x, y)``.

    ``alphas`` is a sequence from 0 to 1 or a number of evenly spaced points (Git Re-Basin uses 25).

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP.
    b : MLP
        The second network (the path ends here); an MLP.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).
    y : torch.Tensor
        Integer labels of ``x``; a torch.Tensor (non-empty, integer, 1-dimensional).
    alphas : Sequence[float] | int, default 25
        Number of interpolation points; an int >= 2 (evenly spaced
        points in [0, 1]) or a non-empty 1-D sequence of finite numbers.

    Returns
    -------
    Path
        Cross-entropy loss and accuracy of the interpolated networks on ``(x, y)``.
    """
    _check_same_shape(a, b)
    _check_data(a, x, y)
    alphas = _alpha_grid(alphas)
    return _evaluate_stack(path_stack(a, b, alphas), alphas, x, y)


def _alpha_grid(alphas) -> np.ndarray:
    if isinstance(alphas, (int, np.integer)) and not isinstance(alphas, bool):
        return np.linspace(0, 1, int(alphas))
    return np.asarray(alphas.detach().cpu() if isinstance(alphas, torch.Tensor) else alphas,
                      dtype=float)


@boundary(alphas=_Numbers(), x=INPUTS, y=LABELS)
def evaluate_stack(model: BatchedMLP, alphas: Sequence[float], x: torch.Tensor,
                   y: torch.Tensor) -> Path:
    """Loss and accuracy of the members of a stack of networks along a path (one per alpha)."""
    alphas = np.asarray(alphas, dtype=float)
    if model.size != len(alphas):
        raise ValueError(f"alphas must have one entry per member of the stack ({model.size}), "
                         f"got {len(alphas)}")
    _check_data(model, x, y)
    return _evaluate_stack(model, alphas, x, y)


@torch.no_grad()
def _evaluate_stack(model: BatchedMLP, alphas: np.ndarray, x: torch.Tensor,
                    y: torch.Tensor) -> Path:
    return _path_from_logits(model(x), alphas, y)


def _path_from_logits(logits: torch.Tensor, alphas: np.ndarray, y: torch.Tensor) -> Path:
    """Loss and accuracy at every point of a path from its logits, ``(len(alphas), n, C)``."""
    C = logits.shape[-1]
    loss = F.cross_entropy(logits.reshape(-1, C), y.repeat(len(alphas)),
                           reduction="none").view(len(alphas), -1).mean(1)
    acc = (logits.argmax(-1) == y).float().mean(1)
    return Path(alphas, loss.cpu().numpy(), acc.cpu().numpy())


# ---------------------------------------------------------------------------------------------
# 3. Permutations and matching
# ---------------------------------------------------------------------------------------------


def _check_perm_list(name: str, perms, widths: list[int] | None = None) -> list[np.ndarray]:
    """A list with one permutation (1-D integer array) per hidden layer (of ``widths`` if given)."""
    if isinstance(perms, (str, bytes)) or not isinstance(perms, (list, tuple)):
        raise TypeError(f"{name} must be a list of permutations (one integer array per hidden "
                        f"layer), got {type(perms).__name__}")
    if widths is not None and len(perms) != len(widths):
        raise ValueError(f"{name} must be a list of {len(widths)} permutations (one per hidden "
                         f"layer), got {len(perms)}")
    if not perms:
        raise ValueError(f"{name} must hold at least one permutation, got []")
    out = []
    for l, p in enumerate(perms):
        p = np.asarray(p.detach().cpu() if isinstance(p, torch.Tensor) else p)
        if p.dtype.kind not in "iu":
            raise TypeError(f"{name}[{l}] must be an integer array (a permutation), got dtype "
                            f"{p.dtype}")
        w = len(p) if widths is None or p.ndim != 1 else widths[l]
        if p.ndim != 1 or p.shape != (w,) or not np.array_equal(np.sort(p), np.arange(w)):
            raise ValueError(f"{name}[{l}] must be a permutation of range({w}), got shape "
                             f"{p.shape}")
        out.append(p.astype(np.int64))
    return out


def _check_perms(model: MLP, perms) -> list[np.ndarray]:
    return _check_perm_list("perms", perms, [l.weight.shape[0] for l in model.layers[:-1]])


@boundary(perms=None)  # checked against the model's widths below
def permute(model: MLP, perms: Sequence[np.ndarray]) -> MLP:
    """The same function with its hidden units reordered.

    The same function with hidden units reordered: unit ``i`` of layer ``l`` becomes ``perms[l][i]``.

    Rows of ``W_l`` and entries of ``b_l`` are permuted by ``perms[l]``; columns of ``W_{l+1}`` by
    the same permutation, so the network computes exactly the same function (Entezari et al. 2022,
    Section 2; Git Re-Basin, Section 2).

    Parameters
    ----------
    model : MLP
        The network; an MLP.
    perms : Sequence[np.ndarray]
        One permutation per hidden layer.

    Returns
    -------
    MLP
        The permuted network.
    """
    perms = _check_perms(model, perms)
    ws, bs = params(model)
    ws, bs = [w.clone() for w in ws], None if bs is None else [b.clone() for b in bs]
    for l, p in enumerate(perms):
        pt = torch.as_tensor(p, device=ws[l].device)
        ws[l] = ws[l][pt]
        ws[l + 1] = ws[l + 1][:, pt]
        if bs is not None:
            bs[l] = bs[l][pt]
    return from_params(ws, bs, model.act_name)


@boundary(seed=SEED)
def random_perms(model: MLP, seed: int = 0) -> list[np.ndarray]:
    """One uniformly random permutation per hidden layer of ``model``.

    Parameters
    ----------
    model : MLP
        The network; an MLP.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].

    Returns
    -------
    list[np.ndarray]
        One uniformly random permutation per hidden layer of ``model``.
    """
    rng = np.random.default_rng(seed)
    return [rng.permutation(l.weight.shape[0]) for l in model.layers[:-1]]


def _check_finite_weights(name: str, model: MLP) -> None:
    if not all(bool(torch.isfinite(p).all()) for p in model.parameters()):
        raise ValueError(f"{name} must have finite weights, got NaN or inf")


@boundary(max_iter=count(), seed=SEED)
def weight_matching(a: MLP, b: MLP, max_iter: int = 100,
                    seed: int = 0) -> list[np.ndarray]:
    """Permutations aligning ``b`` to ``a`` by weight matching (Git Re-Basin Alg. 1).

    Maximizes ``sum_l <W_l^A, P_l W_l^B P_{l-1}^T> + <b_l^A, P_l b_l^B>`` over one
    permutation ``P_l`` per hidden layer by coordinate descent: each pass visits the
    hidden layers in a random order and solves the linear assignment problem of one
    layer (its incoming and outgoing weights) with the others fixed, using
    :func:`scipy.optimize.linear_sum_assignment`. Stops when a pass improves nothing
    or after ``max_iter`` passes. Apply the result with ``permute(b, perms)``.

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP.
    b : MLP
        The second network (the path ends here); an MLP.
    max_iter : int, default 100
        Most iterations; an int >= 1.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].

    Returns
    -------
    list[np.ndarray]
        One permutation per hidden layer.

    References
    ----------
    Ainsworth, Hayase and Srinivasa (2023), "Git Re-Basin: Merging Models modulo
    Permutation Symmetries", Algorithm 1.
    """
    _check_same_shape(a, b)
    _check_finite_weights("a", a)
    _check_finite_weights("b", b)
    (wa, ba), (wb, bb) = params(a), params(b)
    wa = [w.cpu().double().numpy() for w in wa]
    wb = [w.cpu().double().numpy() for w in wb]
    ba = None if ba is None else [v.cpu().double().numpy() for v in ba]
    bb = None if bb is None else [v.cpu().double().numpy() for v in bb]
    L = len(wa) - 1
    perms = [np.arange(wa[l].shape[0]) for l in range(L)]
    rng = np.random.default_rng(seed)
    for _ in range(max_iter):
        improved = False
        for l in rng.permutation(L):
            w_in = wb[l] if l == 0 else wb[l][:, perms[l - 1]]
            cost = wa[l] @ w_in.T
            if ba is not None:
                cost += np.outer(ba[l], bb[l])
            w_out = wb[l + 1] if l + 1 == L else wb[l + 1][perms[l + 1]]
            cost += wa[l + 1].T @ w_out
            _, col = linear_sum_assignment(cost, maximize=True)
            old = cost[np.arange(len(col)), perms[l]].sum()
            new = cost[np.arange(len(col)), col].sum()
            if new > old + 1e-12 * max(1.0, abs(old)):
                improved = True
                perms[l] = col
        if not improved:
            break
    return perms


@boundary(x=INPUTS, method=Options(("cross", "pearson")))
@torch.no_grad()
def activation_matching(a: MLP, b: MLP, x: torch.Tensor, method: str = "cross") -> list[np.ndarray]:
    """Permutations that align ``b`` to ``a`` by matching hidden activations on inputs ``x``.

    For each hidden layer, solves one linear assignment problem that maximizes the summed
    similarity between unit ``i`` of ``a`` and its partner in ``b`` (Git Re-Basin, Section 3.1).
    ``method="cross"`` (default) uses the raw cross moment ``E[a_i b_j]`` of the post-ReLU
    activations, which is what the authors' MNIST MLP script matches on (a Pearson-correlation
    variant is present there but commented out); ``method="pearson"`` uses the correlation
    (Entezari et al. 2022 and Li et al. 2015 match on correlations). Layers are independent
    because the features depend only on the inputs.

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP.
    b : MLP
        The second network (the path ends here); an MLP.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).
    method : str, default 'cross'
        ``"cross"`` (raw cross moment of the activations) or ``"pearson"`` (their correlation); one
        of ('cross', 'pearson').

    Returns
    -------
    list[np.ndarray]
        One permutation per hidden layer.

    References
    ----------
    Ainsworth, Hayase and Srinivasa (2023), "Git Re-Basin: Merging Models modulo Permutation
    Symmetries".
    """
    _check_same_shape(a, b)
    _check_inputs("x", x, a, min_rows=2 if method == "pearson" else 1)
    perms = []
    for fa, fb in zip(a.features(x)[:-1], b.features(x)[:-1]):
        if method == "pearson":
            fa = (fa - fa.mean(0)) / (fa.std(0) + 1e-8)
            fb = (fb - fb.mean(0)) / (fb.std(0) + 1e-8)
        sim = (fa.T @ fb / len(x)).cpu().double().numpy()
        perms.append(linear_sum_assignment(sim, maximize=True)[1])
    return perms


@boundary(found=None, planted=None)  # checked below (lists or arrays)
def perm_recovery(found: Sequence[np.ndarray], planted: Sequence[np.ndarray]) -> list[float]:
    """Fraction of units per layer for which matching undid a planted permutation.

    If ``b = permute(a, planted)`` then aligning ``b`` back to ``a`` needs ``found[l] =
    argsort(planted[l])`` (the inverse permutation); this returns the fraction of agreeing entries.
    """
    found = _check_perm_list("found", found)
    planted = _check_perm_list("planted", planted, [len(p) for p in found])
    return [float(np.mean(np.asarray(f) == np.argsort(np.asarray(p))))
            for f, p in zip(found, planted)]


# ---------------------------------------------------------------------------------------------
# 4. Feature-level metrics: LLFC and commutativity
# ---------------------------------------------------------------------------------------------


@boundary(u=INPUTS, v=INPUTS)
def cosine_dissimilarity(u: torch.Tensor, v: torch.Tensor) -> float:
    """Mean over rows of ``1 - cos(u_i, v_i)`` (0 for identical rows, including two zero rows)."""
    return _cosine_dissimilarity(u, v)


def _cosine_dissimilarity(u: torch.Tensor, v: torch.Tensor) -> float:
    if u.shape != v.shape or u.ndim != 2:
        raise ValueError(f"u and v must be 2-D of the same shape, got {tuple(u.shape)}, "
                         f"{tuple(v.shape)}")
    nu, nv = u.norm(dim=1), v.norm(dim=1)
    cos = (u * v).sum(1) / (nu * nv).clamp_min(1e-12)
    both_zero = (nu < 1e-12) & (nv < 1e-12)
    cos = torch.where(both_zero, torch.ones_like(cos), cos)
    return float((1 - cos).mean())


@boundary(x=INPUTS, alpha=fraction())
@torch.no_grad()
def llfc_dissimilarity(a: MLP, b: MLP, x: torch.Tensor, alpha: float = 0.5) -> list[float]:
    """Per-layer LLFC dissimilarity (Zhou et al. 2023: their definition and metric).

    For every hidden layer and the logits, ``mean_x [1 - cos(f_l(theta(alpha); x),
    (1 - alpha) f_l(theta_A; x) + alpha f_l(theta_B; x))]``: 0 when the interpolated network's
    features are (up to a positive scale) the interpolated features. The same quantity between two
    models fine-tuned on different tasks is the cross-task linearity (CTL) dissimilarity of Zhou
    et al. (2024).

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP.
    b : MLP
        The second network (the path ends here); an MLP.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).
    alpha : float, default 0.5
        Regularization constant of ``N_eff``; a finite number in [0, 1].

    Returns
    -------
    list[float]
        Per-layer LLFC dissimilarity (Zhou et al. 2023: their definition and metric).

    References
    ----------
    Zhou, Yang, Yang, Yan and Hu (2023), "Going Beyond Linear Mode Connectivity: The Layerwise
    Linear Feature Connectivity".
    """
    _check_same_shape(a, b)
    _check_inputs("x", x, a)
    fa, fb, fm = a.features(x), b.features(x), lerp(a, b, alpha).features(x)
    return [_cosine_dissimilarity(m, (1 - alpha) * u + alpha * v) for u, v, m in zip(fa, fb, fm)]


def _hidden_layers(a: MLP, b: MLP, x: torch.Tensor):
    """For each hidden layer: both networks' features on ``x`` and the next layer's weights."""
    _check_same_shape(a, b)
    _check_inputs("x", x, a)
    fa, fb = a.features(x)[:-1], b.features(x)[:-1]
    (wa, _), (wb, _) = params(a), params(b)
    return [(ha, hb, wa[l + 1], wb[l + 1]) for l, (ha, hb) in enumerate(zip(fa, fb))]


@boundary(x=INPUTS)
@torch.no_grad()
def commutativity_residual(a: MLP, b: MLP, x: torch.Tensor) -> list[float]:
    """Relative commutativity residual per hidden layer (Zhou et al. 2023).

    For hidden layer ``l`` with features ``H_A, H_B`` (rows = inputs ``x``) and the next layer's
    weights ``W_A, W_B``: ``||W_A H_A + W_B H_B - W_A H_B - W_B H_A||_F / ||W_A H_A + W_B H_B||_F``,
    i.e. ``||(W_A - W_B)(H_A - H_B)|| / ||W_A H_A + W_B H_B||``. Commutativity (residual 0) plus
    weak additivity of ReLU implies LLFC.

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP.
    b : MLP
        The second network (the path ends here); an MLP.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).

    Returns
    -------
    list[float]
        Relative commutativity residual per hidden layer (Zhou et al. 2023).

    References
    ----------
    Zhou, Yang, Yang, Yan and Hu (2023), "Going Beyond Linear Mode Connectivity: The Layerwise
    Linear Feature Connectivity".
    """
    out = []
    for ha, hb, A, B in _hidden_layers(a, b, x):
        same = ha @ A.T + hb @ B.T
        resid = (ha - hb) @ (A - B).T
        out.append(float(resid.norm() / same.norm().clamp_min(1e-12)))
    return out


@boundary(x=INPUTS)
@torch.no_grad()
def commutativity_bound_ratio(a: MLP, b: MLP, x: torch.Tensor) -> list[float]:
    """The commutativity residual per hidden layer divided by its trivial upper bound.

    ``||(H_A - H_B)(W_A - W_B)^T||_F / (||W_A - W_B||_2 ||H_A - H_B||_F)``, in ``[0, 1]``: the
    residual of :func:`commutativity_residual` can be small only because one of its two factors
    is small (a weight difference or a feature difference), and this ratio takes both factors
    out. It is 1 when the feature differences lie along the top right-singular vector of the
    weight difference and small when they avoid the directions that ``W_A - W_B`` amplifies (a
    layer with ``W_A = W_B`` or ``H_A = H_B`` gives 0/0, reported as 0).

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP.
    b : MLP
        The second network (the path ends here); an MLP.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).

    Returns
    -------
    list[float]
        The commutativity residual per hidden layer divided by its trivial upper bound.
    """
    out = []
    for ha, hb, A, B in _hidden_layers(a, b, x):
        dw, dh = A - B, ha - hb
        bound = torch.linalg.matrix_norm(dw, ord=2) * dh.norm()
        out.append(float((dh @ dw.T).norm() / bound) if float(bound) > 1e-12 else 0.0)
    return out


@boundary(x=INPUTS, y=LABELS, alphas=GRID)
@torch.no_grad()
def logit_interpolation(a: MLP, b: MLP, x: torch.Tensor, y: torch.Tensor,
                        alphas: Sequence[float] | int = 25) -> dict:
    """The lemma "LLFC implies LMC" of Zhou et al. (2023), measured on ``(x, y)``.

    If the interpolated network's logits were the interpolated logits, ``f_alpha = (1 - alpha)
    f_A + alpha f_B``, its error could not exceed ``err_A + err_B``: an input that both ends
    classify correctly has ``f_y - f_j > 0`` at both ends for every ``j != y``, so at every
    convex combination too. Returns the largest error along the network path (``path_error``),
    along the interpolated logits (``lerp_error``, at most ``either_wrong`` by the argument
    above), the exact per-example bound ``either_wrong``, the fraction of inputs that ``a`` or
    ``b`` misclassifies, the looser bound ``err_A + err_B`` (``bound``) and the two endpoint
    errors.

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP.
    b : MLP
        The second network (the path ends here); an MLP.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).
    y : torch.Tensor
        Integer labels of ``x``; a torch.Tensor (non-empty, integer, 1-dimensional).
    alphas : Sequence[float] | int, default 25
        Number of interpolation points; an int >= 2 (evenly spaced
        points in [0, 1]) or a non-empty 1-D sequence of finite numbers.

    Returns
    -------
    dict
        The errors named above.

    References
    ----------
    Zhou, Yang, Yang, Yan and Hu (2023), "Going Beyond Linear Mode Connectivity: The Layerwise
    Linear Feature Connectivity".
    """
    _check_same_shape(a, b)
    _check_data(a, x, y)
    alphas = _alpha_grid(alphas)
    la, lb = a(x), b(x)
    net = path_stack(a, b, alphas)(x).argmax(-1) != y
    al = torch.as_tensor(alphas, dtype=la.dtype).view(-1, 1, 1)
    mix = ((1 - al) * la + al * lb).argmax(-1) != y
    wa, wb = la.argmax(-1) != y, lb.argmax(-1) != y
    ea, eb = float(wa.float().mean()), float(wb.float().mean())
    return {"path_error": float(net.float().mean(1).max()),
            "lerp_error": float(mix.float().mean(1).max()),
            "either_wrong": float((wa | wb).float().mean()),
            "bound": ea + eb, "err_a": ea, "err_b": eb}


@boundary(x=INPUTS)
@torch.no_grad()
def endpoint_dissimilarity(a: MLP, b: MLP, x: torch.Tensor) -> list[float]:
    """Per-layer ``mean_x [1 - cos(f_l(theta_A; x), f_l(theta_B; x))]``, hidden layers and logits.

    The baseline against which Zhou et al. (2023) read an LLFC dissimilarity: how different the
    two networks' own features are. LLFC is informative only when the interpolated network's
    features are much closer to the interpolated features than the two endpoints are to each
    other (two networks with identical features satisfy LLFC trivially).

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP.
    b : MLP
        The second network (the path ends here); an MLP.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).

    Returns
    -------
    list[float]
        Per-layer ``mean_x [1 - cos(f_l(theta_A; x), f_l(theta_B; x))]``, hidden layers and logits.
    """
    _check_same_shape(a, b)
    _check_inputs("x", x, a)
    return [_cosine_dissimilarity(u, v) for u, v in zip(a.features(x), b.features(x))]


@boundary(x=INPUTS)
def preactivations(model: MLP, x: torch.Tensor) -> list[torch.Tensor]:
    """The pre-activations ``W_l h_{l-1} + b_l`` of every hidden layer (rows = inputs)."""
    _check_inputs("x", x, model)
    return _preactivations(model, x)


@torch.no_grad()
def _preactivations(model: MLP, x: torch.Tensor) -> list[torch.Tensor]:
    out, h = [], x
    for layer in model.layers[:-1]:
        z = layer(h)
        out.append(z)
        h = model.act(z)
    return out


@boundary(x=INPUTS)
@torch.no_grad()
def weak_additivity(a: MLP, b: MLP, x: torch.Tensor) -> list[float]:
    """Weak-additivity dissimilarity of ReLU per hidden layer (Zhou et al. 2023, Sec. 5).

    With ``z_A, z_B`` the two networks' own pre-activations of layer ``l`` on ``x``,
    ``mean_x [1 - cos(sigma(z_A) + sigma(z_B), sigma(z_A + z_B))]``, as the authors'
    ``weak_additivity.py`` measures it: 0 when the two pre-activations agree in sign unit by unit
    (then the ReLU of the sum is the sum of the ReLUs), large when the networks' units switch on
    for different inputs.

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP.
    b : MLP
        The second network (the path ends here); an MLP.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).

    Returns
    -------
    list[float]
        Weak-additivity dissimilarity of ReLU per hidden layer (Zhou et al. 2023, Sec. 5).

    References
    ----------
    Zhou, Yang, Yang, Yan and Hu (2023), "Going Beyond Linear Mode Connectivity: The Layerwise
    Linear Feature Connectivity", Section 5.
    """
    _check_same_shape(a, b)
    _check_inputs("x", x, a)
    act = a.act
    return [_cosine_dissimilarity(act(u) + act(v), act(u + v))
            for u, v in zip(_preactivations(a, x), _preactivations(b, x))]


# ---------------------------------------------------------------------------------------------
# 4b. Repairing the interpolated network, and curved paths
# ---------------------------------------------------------------------------------------------


REPAIR_MODES = ("full", "mean", "layer", "norm")


@boundary(alphas=_Numbers(), x=INPUTS, eps=positive(),
          stats_b=InstanceOf(MLP, optional=True), mode=Options(REPAIR_MODES))
@torch.no_grad()
def repair_stack(a: MLP, b: MLP, alphas: Sequence[float], x: torch.Tensor,
                 eps: float = 1e-6, stats_b: MLP | None = None,
                 mode: str = "full") -> BatchedMLP:
    """REPAIR (Jordan et al., ICLR 2023): interpolated nets with renormalized units.

    For every ``alpha`` and every hidden layer, in order from the input, each unit's
    pre-activation in the interpolated network is rescaled and shifted so that its
    mean and standard deviation over ``x`` become the interpolation of the endpoints'
    statistics, ``mu = (1 - alpha) mu_A + alpha mu_B`` and
    ``sd = (1 - alpha) sd_A + alpha sd_B`` (REPAIR undoes the "variance collapse" of
    the interpolated network). The correction is folded into the layer's weights and
    bias, so the result is again a plain MLP per alpha. ``x`` should be training
    inputs (the statistics are part of the repaired model). ``stats_b`` (default
    ``b``) is the network whose unit statistics stand in for ``b``'s: a randomly
    permuted copy of ``b`` aims the same corrections at the wrong units.

    ``mode`` picks what is restored: ``"full"`` (REPAIR) each unit's mean and
    standard deviation; ``"mean"`` each unit's mean only, with no rescaling (a
    partial repair: the shift without the variance restoration); ``"layer"`` each
    unit's mean and one common rescaling per layer, the ratio of the layer's mean
    target deviation to its mean deviation (variance restored per layer, not per
    unit); ``"norm"`` a data-free rescaling that reads no statistics from ``x``: each
    unit's incoming weights and bias are scaled so that their joint L2 norm becomes
    the interpolation of the endpoints' norms (the weight-space analogue of restoring
    the spread; ``x`` is then used only for its shape check).

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP with biases.
    b : MLP
        The second network (the path ends here); an MLP of ``a``'s shape.
    alphas : Sequence[float]
        Interpolation coefficients; a sequence of finite numbers.
    x : torch.Tensor
        Inputs on which the statistics are measured; a torch.Tensor (at least two
        rows, floating-point, 2-dimensional, finite).
    eps : float, default 1e-6
        Units whose interpolated deviation is at most ``eps`` are shifted but not
        rescaled; a number > 0.
    stats_b : MLP | None, default None
        The network whose unit statistics stand in for ``b``'s; an MLP of ``b``'s
        shape or None.
    mode : str, default "full"
        What is restored; one of ``"full"``, ``"mean"``, ``"layer"``, ``"norm"``.

    Returns
    -------
    BatchedMLP
        One repaired interpolated network per alpha.

    References
    ----------
    Jordan, Sedghi, Saukh, Entezari and Neyshabur (2023), "REPAIR: REnormalizing
    Permuted Activations for Interpolation Repair", ICLR.
    """
    _check_same_shape(a, b)
    if stats_b is not None:
        _check_same_shape(b, stats_b, names=("b", "stats_b"))
    if a.layers[0].bias is None:
        raise ValueError("a and b must have biases (REPAIR shifts them)")
    _check_inputs("x", x, a, min_rows=2)  # a standard deviation needs two rows
    return _repair(a, b, _alpha_grid(alphas), x, eps, stats_b, mode)[0]


@torch.no_grad()
def _repair(a: MLP, b: MLP, alphas: np.ndarray, x: torch.Tensor, eps: float,
            stats_b: MLP | None, mode: str) -> tuple[BatchedMLP, torch.Tensor]:
    """The REPAIRed stack and its last hidden features on ``x`` (reused by ``repair_path``)."""
    al = torch.as_tensor(np.asarray(alphas, dtype=np.float32))
    al = al.to(x.device).view(-1, 1)
    stk = path_stack(a, b, alphas)
    ws = [w.detach().clone() for w in stk.weights]
    bs = [v.detach().clone() for v in stk.biases]
    if mode == "norm":  # data-free: each unit's (weights, bias) norm, interpolated
        (wa, ba), (wb, bb) = params(a), params(b)
        for l in range(len(ws) - 1):
            rows = lambda w, v: torch.cat([w, v.unsqueeze(-1)], -1).norm(dim=-1)
            tgt = (1 - al) * rows(wa[l], ba[l]) + al * rows(wb[l], bb[l])
            cur = rows(ws[l], bs[l])
            scale = torch.where(cur > eps, tgt / cur.clamp_min(eps), torch.ones_like(cur))
            ws[l], bs[l] = ws[l] * scale.unsqueeze(2), bs[l] * scale
        stk = BatchedMLP(ws, bs, act=a.act_name)
        h = x.unsqueeze(0)
        for w, v in zip(ws[:-1], bs[:-1]):
            h = a.act(torch.matmul(h, w.transpose(1, 2)) + v.unsqueeze(1))
        return stk, h
    za = _preactivations(a, x)
    zb = _preactivations(b if stats_b is None else stats_b, x)
    h = x.unsqueeze(0)
    for l in range(len(ws) - 1):
        z = torch.matmul(h, ws[l].transpose(1, 2)) + bs[l].unsqueeze(1)
        mu, sd = z.mean(1), z.std(1)
        mu_t = (1 - al) * za[l].mean(0) + al * zb[l].mean(0)
        sd_t = (1 - al) * za[l].std(0) + al * zb[l].std(0)
        if mode == "mean":
            scale = torch.ones_like(sd)
        elif mode == "layer":
            mean_sd = sd.mean(1, keepdim=True).clamp_min(eps)
            scale = (sd_t.mean(1, keepdim=True) / mean_sd).expand_as(sd)
        else:
            ratio = sd_t / sd.clamp_min(eps)
            scale = torch.where(sd > eps, ratio, torch.ones_like(sd))
        ws[l] = ws[l] * scale.unsqueeze(2)
        bs[l] = (bs[l] - mu) * scale + mu_t
        h = a.act(torch.matmul(h, ws[l].transpose(1, 2)) + bs[l].unsqueeze(1))
    return BatchedMLP(ws, bs, act=a.act_name), h


@boundary(x_stats=INPUTS, x=INPUTS, y=LABELS, alphas=GRID,
          stats_b=InstanceOf(MLP, optional=True), mode=Options(REPAIR_MODES))
def repair_path(a: MLP, b: MLP, x_stats: torch.Tensor, x: torch.Tensor, y: torch.Tensor,
                alphas: Sequence[float] | int = 25, stats_b: MLP | None = None,
                mode: str = "full") -> Path:
    """Loss and accuracy on ``(x, y)`` of the REPAIRed interpolations.

    Loss and accuracy on ``(x, y)`` of the REPAIRed interpolations (statistics on ``x_stats``;
    ``stats_b`` as in :func:`repair_stack`).

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP.
    b : MLP
        The second network (the path ends here); an MLP.
    x_stats : torch.Tensor
        Inputs on which REPAIR measures the activation statistics; a torch.Tensor (non-empty,
        floating-point, 2-dimensional, finite).
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).
    y : torch.Tensor
        Integer labels of ``x``; a torch.Tensor (non-empty, integer, 1-dimensional).
    alphas : Sequence[float] | int, default 25
        Number of interpolation points; an int >= 2 (evenly spaced
        points in [0, 1]) or a non-empty 1-D sequence of finite numbers.
    stats_b : MLP | None, default None
        The network whose unit statistics stand in for ``b``'s (default ``b``; see
        :func:`repair_stack`); an MLP or None.
    mode : str, default "full"
        What is restored (see :func:`repair_stack`); one of ``"full"``, ``"mean"``,
        ``"layer"``, ``"norm"`` (data-free).

    Returns
    -------
    Path
        Loss and accuracy on ``(x, y)`` of the REPAIRed interpolations.
    """
    _check_same_shape(a, b)
    if stats_b is not None:
        _check_same_shape(b, stats_b, names=("b", "stats_b"))
    _check_inputs("x_stats", x_stats, a, min_rows=2)
    _check_data(a, x, y)
    alphas = _alpha_grid(alphas)
    stk, h = _repair(a, b, alphas, x_stats, 1e-6, stats_b, mode)
    if x_stats is not x:
        return _evaluate_stack(stk, alphas, x, y)
    # statistics on the evaluation inputs: the repair's own forward pass gives the features
    with torch.no_grad():
        logits = torch.matmul(h, stk.weights[-1].transpose(1, 2)) + stk.biases[-1].unsqueeze(1)
        return _path_from_logits(logits, alphas, y)


@boundary(ts=_Numbers())
def bezier_stack(a: MLP, m: MLP, b: MLP, ts: Sequence[float] | torch.Tensor) -> BatchedMLP:
    """Networks on the quadratic Bezier curve ``(1-t)^2 theta_A + 2t(1-t) theta_M + t^2 theta_B``.

    Garipov et al. (2018), Section 3.2: the curve starts at A, ends at B and bends towards the
    control point ``theta_M``; with ``theta_M = (theta_A + theta_B) / 2`` it is the straight line.
    """
    _check_same_shape(a, m, names=("a", "m"))
    _check_same_shape(a, b)
    t = torch.as_tensor(_alpha_grid(ts), dtype=torch.float32).to(a.layers[0].weight.device).view(-1)
    ws, bs = _bezier_params([params(n) for n in (a, m, b)], t)
    return BatchedMLP(ws, bs, act=a.act_name)


def _bezier_params(pts, t):
    c = [(1 - t) ** 2, 2 * t * (1 - t), t ** 2]
    ws = [sum(ci.view(-1, 1, 1) * p[0][l] for ci, p in zip(c, pts)) for l in range(len(pts[0][0]))]
    bs = None if pts[0][1] is None else [sum(ci.view(-1, 1) * p[1][l] for ci, p in zip(c, pts))
                                         for l in range(len(pts[0][1]))]
    return ws, bs


@boundary(x=INPUTS, y=LABELS, seed=SEED, samples=count())
def fit_bezier(a: MLP, b: MLP, x: torch.Tensor, y: torch.Tensor, recipe: Recipe, seed: int = 0,
               samples: int = 4) -> MLP:
    r"""Train the control point of a quadratic Bezier curve from ``a`` to ``b``.

    Train the control point of a quadratic Bezier curve from ``a`` to ``b`` (Garipov et al. 2018).

    The endpoints stay fixed; the control point starts at the midpoint of the straight line and
    minimizes the training loss averaged over the curve, ``E_{t ~ U(0,1)} L(theta(t))``, with
    ``samples`` values of ``t`` drawn afresh for every minibatch (Garipov et al. draw one; a few
    per step average the same objective with less noise). Returns the control point as an MLP.

    The control point is trained by :func:`gtlib.engine.fit` with SGD as ``recipe`` says
    (momentum, weight decay, the warm-up-then-decay schedule); one generator seeded with ``seed``
    draws each epoch's minibatch order and, at every step after it, the ``samples`` values of t.

    .. math::

       \phi(t) = (1 - t)^2 \theta_a + 2 t (1 - t)\, m + t^2 \theta_b

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP.
    b : MLP
        The second network (the path ends here); an MLP.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).
    y : torch.Tensor
        Integer labels of ``x``; a torch.Tensor (non-empty, integer, 1-dimensional).
    recipe : Recipe
        The training recipe; a Recipe.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    samples : int, default 4
        Curve points sampled per training step; an int >= 1.

    Returns
    -------
    MLP
        The control point, as an MLP.

    References
    ----------
    Garipov, Izmailov, Podoprikhin, Vetrov and Wilson (2018), "Loss Surfaces, Mode Connectivity,
    and Fast Ensembling of DNNs".
    """
    _check_same_shape(a, b)
    _check_data(a, x, y)
    mid = lerp(a, b, 0.5)
    pa, pb = params(a), params(b)
    wm = [w.clone().requires_grad_(True) for w in params(mid)[0]]
    bm = None if pa[1] is None else [v.clone().requires_grad_(True) for v in params(mid)[1]]
    trainable = wm + (bm or [])
    opt = StackedOptimizer(trainable, "sgd", lr=recipe.lr, momentum=recipe.momentum,
                           weight_decay=recipe.weight_decay)
    # one generator draws each epoch's order (in the batches) and each step's t (in the loss),
    # in that order
    gen = torch.Generator().manual_seed(int(seed))
    n = x.shape[0]
    total = recipe.steps(n)

    def loss(step: int, batch: torch.Tensor) -> torch.Tensor:
        idx = batch[0]
        t = torch.rand(samples, generator=gen).to(x.device)
        ws, bs = _bezier_params([pa, (wm, bm), pb], t)
        h = x[idx].unsqueeze(0)
        for l in range(len(ws)):
            h = torch.matmul(h, ws[l].transpose(1, 2))
            if bs is not None:
                h = h + bs[l].unsqueeze(1)
            if l < len(ws) - 1:
                h = a.act(h)
        return F.cross_entropy(h.reshape(-1, h.shape[-1]), y[idx].repeat(samples))

    engine.fit(loss, opt, total, EpochBatches(n, recipe.batch_size, [gen], device=x.device),
               schedule=lambda step: recipe._lr_factor(step, total))
    return from_params([w.detach() for w in wm], None if bm is None else [v.detach() for v in bm],
                       a.act_name)


@boundary(x=INPUTS, y=LABELS, ts=GRID)
def evaluate_bezier(a: MLP, m: MLP, b: MLP, x: torch.Tensor, y: torch.Tensor,
                    ts: Sequence[float] | int = 25) -> Path:
    """Loss and accuracy along the Bezier curve with control point ``m`` (``alphas`` = ``t``).

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP.
    m : MLP
        The Bezier control point, as a network; an MLP.
    b : MLP
        The second network (the path ends here); an MLP.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).
    y : torch.Tensor
        Integer labels of ``x``; a torch.Tensor (non-empty, integer, 1-dimensional).
    ts : Sequence[float] | int, default 25
        Curve parameters in [0, 1]; an int >= 2 (evenly spaced points in [0, 1]) or a non-empty 1-D
        sequence of finite numbers.

    Returns
    -------
    Path
        Loss and accuracy along the Bezier curve with control point ``m`` (``alphas`` = ``t``).
    """
    _check_same_shape(a, m, names=("a", "m"))
    _check_same_shape(a, b)
    _check_data(a, x, y)
    ts = _alpha_grid(ts)
    return _evaluate_stack(bezier_stack(a, m, b, ts), ts, x, y)


# ---------------------------------------------------------------------------------------------
# 5. Fine-tuning, weight averaging and task vectors
# ---------------------------------------------------------------------------------------------


@boundary()
def average(models: Sequence[MLP]) -> MLP:
    """The uniform weight average of identically shaped MLPs (a "uniform soup", Wortsman et al. 2022)."""
    for i, m in enumerate(models):
        _check_same_shape(models[0], m, names=("models[0]", f"models[{i}]"))
    ps = [params(m) for m in models]
    ws = [torch.stack([p[0][l] for p in ps]).mean(0) for l in range(len(ps[0][0]))]
    bs = None if ps[0][1] is None else [torch.stack([p[1][l] for p in ps]).mean(0)
                                        for l in range(len(ps[0][1]))]
    return from_params(ws, bs, models[0].act_name)


@boundary(a=InstanceOf(MLP), b=InstanceOf(MLP))
def weight_distance(a: MLP, b: MLP) -> float:
    """The Euclidean distance ``||theta_A - theta_B||`` over all weights and biases.

    Parameters
    ----------
    a : MLP
        The first network; an MLP.
    b : MLP
        The second network, of the same shape; an MLP.

    Returns
    -------
    float
        The distance between the two parameter vectors.

    References
    ----------
    Zhou et al. (2024), "On the Emergence of Cross-Task Linearity in the Pretraining-Finetuning
    Paradigm" (they relate linearity to how far apart the weights are).
    """
    _check_same_shape(a, b)
    return float(torch.sqrt(sum(((p - q).detach() ** 2).sum()
                                for p, q in zip(a.parameters(), b.parameters()))))


@boundary()
def task_vector(pretrained: MLP, finetuned: MLP) -> list[torch.Tensor]:
    """``theta_ft - theta_pre`` for every hidden layer's weights and biases (Ilharco et al. 2023).

    The output layer is not part of the vector: each task keeps its own head. The list holds
    ``W_1, b_1, W_2, b_2, ...`` for the hidden layers (weights only without biases).

    Parameters
    ----------
    pretrained : MLP
        The pretrained network; an MLP.
    finetuned : MLP
        The fine-tuned network; an MLP.

    Returns
    -------
    list[torch.Tensor]
        ``theta_ft - theta_pre`` for every hidden layer's weights and biases (Ilharco et al. 2023).

    References
    ----------
    Ilharco et al. (2023), "Editing Models with Task Arithmetic".
    """
    _check_same_shape(pretrained, finetuned, body_only=True, names=("pretrained", "finetuned"))
    out = []
    for lp, lf in zip(pretrained.layers[:-1], finetuned.layers[:-1]):
        out.append((lf.weight - lp.weight).detach())
        if lp.bias is not None:
            out.append((lf.bias - lp.bias).detach())
    return out


@boundary()
def apply_task_vectors(pretrained: MLP, vectors: Sequence[Sequence[torch.Tensor]], scale: float,
                       head: MLP) -> MLP:
    """``theta_pre + scale * sum_t tau_t`` on the hidden layers, with the output layer of ``head``.

    Parameters
    ----------
    pretrained : MLP
        The pretrained network; an MLP.
    vectors : Sequence[Sequence[torch.Tensor]]
        Task vectors, as :func:`task_vector` returns them; a non-empty list or tuple whose items
        are each a non-empty list or tuple whose items are each a torch.Tensor (non-empty, finite).
    scale : float
        Scale of the summed task vectors; a finite number.
    head : MLP
        The network whose output layer the result uses; an MLP.

    Returns
    -------
    MLP
        The edited network.

    References
    ----------
    Ilharco et al. (2023), "Editing Models with Task Arithmetic".
    """
    _check_same_shape(pretrained, head, body_only=True, names=("pretrained", "head"))
    ws, bs = params(pretrained)
    ws, bs = [w.clone() for w in ws], None if bs is None else [b.clone() for b in bs]
    per = 2 if bs is not None else 1
    want = [p.shape for l in range(len(ws) - 1) for p in ([ws[l]] + ([bs[l]] if bs else []))]
    for i, tau in enumerate(vectors):
        got = [t.shape for t in tau]
        if got != want:
            raise ValueError(f"vectors[{i}] must match pretrained's hidden layers (shapes "
                             f"{[tuple(w) for w in want]}), got {[tuple(g) for g in got]}")
    for tau in vectors:
        for l in range(len(ws) - 1):
            ws[l] += scale * tau[per * l]
            if bs is not None:
                bs[l] += scale * tau[per * l + 1]
    hw, hb = params(head)
    ws[-1] = hw[-1].clone()
    if bs is not None:
        bs[-1] = hb[-1].clone()
    return from_params(ws, bs, pretrained.act_name)


@boundary(head_weight=Tensor("float", 2), head_bias=Tensor("float", 1, optional=True))
def with_head(body: MLP, head_weight: torch.Tensor, head_bias: torch.Tensor | None) -> MLP:
    """A copy of ``body`` whose output layer is replaced (its size may change)."""
    width = body.layers[-1].in_features
    if head_weight.shape[1] != width:
        raise ValueError(f"head_weight must have shape (classes, {width}), got "
                         f"{tuple(head_weight.shape)}")
    if (head_bias is None) != (body.layers[0].bias is None):
        raise ValueError("head_bias must be given exactly when body has biases, got "
                         + ("None" if head_bias is None else "a tensor for a body without biases"))
    if head_bias is not None and head_bias.shape != head_weight.shape[:1]:
        raise ValueError(f"head_bias must have shape ({head_weight.shape[0]},), got "
                         f"{tuple(head_bias.shape)}")
    ws, bs = params(body)
    ws = [w.clone() for w in ws[:-1]] + [head_weight.detach().clone()]
    bs = None if bs is None else [b.clone() for b in bs[:-1]] + [head_bias.detach().clone()]
    return from_params(ws, bs, body.act_name)


@boundary(x=INPUTS, y=LABELS)
@torch.no_grad()
def accuracy(model: MLP, x: torch.Tensor, y: torch.Tensor) -> float:
    """Test accuracy of one MLP.

    Parameters
    ----------
    model : MLP
        The network; an MLP.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).
    y : torch.Tensor
        Integer labels of ``x``; a torch.Tensor (non-empty, integer, 1-dimensional).

    Returns
    -------
    float
        Test accuracy of one MLP.
    """
    _check_data(model, x, y)
    return float((model(x).argmax(-1) == y).float().mean())


# ---------------------------------------------------------------------------------------------
# 6. The chapter's experiments
# ---------------------------------------------------------------------------------------------


@dataclass
class ConnectivityConfig(Config):
    """Sizes and recipes of the chapter's experiments (pick one with ``gtlib.preset``).

    ``recipe`` (warm-up, peak lr 0.1) trains the independent networks of the width sweep;
    ``spawn_recipe`` (no warm-up, peak lr 0.2) is the abrupt recipe under which spawning at
    initialization is unstable; it also pretrains the CTL model and trains its from-scratch controls.

    The defaults are the ``quick`` preset (minutes on one CPU thread: MNIST-1D's default 4000/1000
    split, 3 hidden layers). ``FULL`` is closer to the papers (for a GPU): more data, twice the
    epochs, widths up to 2048 (Git Re-Basin's MNIST MLP shape, three hidden layers of 512, and
    beyond).

    Parameters
    ----------
    n_train : int, default 4000
        Number of training examples; an int >= 1.
    n_test : int, default 1000
        Number of test examples; an int >= 1.
    depth : int, default 3
        Number of hidden layers; an int >= 1.
    widths : tuple[int, ...], default (32, 64, 128, 256, 512)
        Hidden widths; a tuple (at least 2 items, sorted) of items each an int >= 1.
    alphas : int, default 25
        Number of interpolation points; an int >= 1.
    max_iter : int, default 100
        Most iterations; an int >= 1.
    recipe : Recipe, optional
        The training recipe; a Recipe.
    spawn_width : int, default 128
        Width of the networks of the spawning experiment; an int >= 1.
    spawn_fractions : tuple[float, ...], optional
        Fractions of training after which children are spawned; a tuple (at least 1 item) of items
        each a finite number in [0, 1).
    spawn_pairs : int, default 2
        Pairs of children spawned at each point; an int >= 1.
    spawn_recipe : Recipe, optional
        Training recipe of the spawning experiment (also of the CTL pretraining and its controls);
        a Recipe.
    ctl_width : int, default 256
        Width of the cross-task linearity networks; an int >= 1.
    probe_recipe : Recipe, optional
        Recipe of the linear probes (frozen body); a Recipe.
    ft_recipe : Recipe, optional
        Recipe of the fine-tunings; a Recipe.
    lambdas : tuple[float, ...], optional
        Task-vector scales of the task-arithmetic sweep; a tuple (at least 1 item) of items each a
        finite number.
    n_pretrain : int, default 4000
        Pretraining examples; an int >= 1.
    epoch_width : int, default 256
        Width of the pair whose snapshots are taken during training; an int >= 1.
    epoch_snapshots : tuple[float, ...], default (0, 1, 2, 4, 8, 15)
        Epochs at which that pair is recorded; a tuple (at least 1 item) of items each a finite
        number >= 0.
    depths : tuple[int, ...], default (1, 2, 4, 6)
        Numbers of hidden layers; a tuple (at least 1 item) of items each an int >= 1.
    depth_width : int, default 128
        Width of the depth sweep's networks; an int >= 1.
    bezier_width : int, default 128
        Width of the networks joined by a Bezier curve; an int >= 1.
    bezier_recipe : Recipe, optional
        Recipe of the Bezier control point's training; a Recipe.
    pretrain_epochs : tuple[float, ...], default (0, 3, 30)
        Pretraining lengths compared, in epochs (the last is the full run); a tuple (at least 2
        items, strictly increasing) of items each a finite number >= 0.
    ft_runs : int, default 3
        Fine-tunings per task; an int >= 2.
    """

    FULL = dict(n_train=16000, n_test=4000, widths=(32, 64, 128, 256, 512, 1024, 2048),
                recipe=Recipe(lr=0.1, epochs=60, warmup=0.2),
                spawn_width=512, spawn_pairs=3,
                spawn_recipe=Recipe(lr=0.2, epochs=60, warmup=0.0),
                ctl_width=1024, ft_recipe=Recipe(lr=0.05, epochs=20, warmup=0.0),
                epoch_width=512, epoch_snapshots=(0, 1, 2, 4, 8, 15, 30), depth_width=512,
                bezier_width=512, n_pretrain=16000, pretrain_epochs=(0, 6, 60))

    n_train: int = param(4000, count())
    n_test: int = param(1000, count())
    depth: int = param(3, count())
    widths: tuple[int, ...] = param((32, 64, 128, 256, 512),
                                    tuple_of(count(), min_len=2, increasing="weak"))
    alphas: int = param(25, count())
    max_iter: int = param(100, count())
    recipe: Recipe = param(constraint=InstanceOf(Recipe),
                           factory=lambda: Recipe(lr=0.1, epochs=30, warmup=0.2))
    spawn_width: int = param(128, count())
    spawn_fractions: tuple[float, ...] = param((0.0, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3),
                                               tuple_of(fraction("left")))
    spawn_pairs: int = param(2, count())
    spawn_recipe: Recipe = param(constraint=InstanceOf(Recipe),
                                 factory=lambda: Recipe(lr=0.2, epochs=30, warmup=0.0))
    ctl_width: int = param(256, count())
    probe_recipe: Recipe = param(constraint=InstanceOf(Recipe),
                                 factory=lambda: Recipe(lr=0.1, epochs=30, warmup=0.0))
    ft_recipe: Recipe = param(constraint=InstanceOf(Recipe),
                              factory=lambda: Recipe(lr=0.05, epochs=10, warmup=0.0))
    lambdas: tuple[float, ...] = param(tuple(round(0.1 * i, 1) for i in range(16)),
                                       tuple_of(Interval(float)))
    n_pretrain: int = param(4000, count())
    epoch_width: int = param(256, count())
    epoch_snapshots: tuple[float, ...] = param((0, 1, 2, 4, 8, 15),
                                               tuple_of(Interval(float, 0, None)))
    depths: tuple[int, ...] = param((1, 2, 4, 6), tuple_of(count()))
    depth_width: int = param(128, count())
    bezier_width: int = param(128, count())
    bezier_recipe: Recipe = param(constraint=InstanceOf(Recipe),
                                  factory=lambda: Recipe(lr=0.1, epochs=30, warmup=0.0))
    pretrain_epochs: tuple[float, ...] = param((0, 3, 30), tuple_of(Interval(float, 0, None),
                                                                  min_len=2, increasing="strict"))
    ft_runs: int = param(3, count(2))


def _seeds(seed: int, tag: int, k: int) -> list[int]:
    """``k`` distinct seeds for experiment part ``tag`` under base ``seed``."""
    return [1_000_003 * int(seed) + 1_000 * tag + i for i in range(k)]


@boundary(x=INPUTS, y=LABELS, seed=EXPERIMENT_SEED, snapshots=InstanceOf(dict, optional=True),
          twin=InstanceOf(dict, optional=True))
def train_pairs(cfg: ConnectivityConfig, x: torch.Tensor, y: torch.Tensor, seed: int = 0,
                snapshots: dict | None = None, twin: dict | None = None
                ) -> dict[int, tuple[MLP, MLP]]:
    """Two independently initialized and trained MLPs per width of ``cfg.widths`` (one stack each).

    If ``snapshots`` is a dict, it receives the pair of width ``cfg.epoch_width`` at the epochs
    ``cfg.epoch_snapshots`` (``{global step: [net A, net B]}``), taken during the same training.
    If ``twin`` is a dict, it receives ``{width: net}`` for the widest width: a third network
    in the same stack with network A's initialization and its own minibatch order (the pair
    (A, twin) shares everything but the SGD noise, Frankle et al.'s spawning at step 0).

    Parameters
    ----------
    cfg : ConnectivityConfig
        The experiment's settings; a ConnectivityConfig.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).
    y : torch.Tensor
        Integer labels of ``x``; a torch.Tensor (non-empty, integer, 1-dimensional).
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    snapshots : dict | None, default None
        Epochs at which the networks are recorded; a dict or None.
    twin : dict | None, default None
        Receives the widest width's twin of network A (same initialization, another
        minibatch order); a dict or None.

    Returns
    -------
    dict[int, tuple[MLP, MLP]]
        Width -> the two trained networks.

    References
    ----------
    Frankle, Dziugaite, Roy and Carbin (2020), "Linear Mode Connectivity and the Lottery Ticket
    Hypothesis" (the twin).
    """
    C = _check_train_labels("y", y, len(x))
    out = {}
    per_epoch = -(-x.shape[0] // cfg.recipe.batch_size)
    widest = max(int(w) for w in cfg.widths)
    for j, w in enumerate(cfg.widths):
        s = _seeds(seed, 10 + j, 2)
        extra = twin is not None and int(w) == widest
        init = s + [s[0]] if extra else s  # the twin starts where network A starts
        model = BatchedMLP.init(init, x.shape[-1], int(w), cfg.depth, C, device=x.device)
        snap = [int(e * per_epoch) for e in cfg.epoch_snapshots] if (
            snapshots is not None and int(w) == cfg.epoch_width) else []
        order = [10_000 + int(v) for v in s] + ([20_000 + int(s[0])] if extra else [])
        got = _fit(model, x, y, cfg.recipe, seeds=order, snapshot_steps=snap)
        nets = members(model)
        out[int(w)] = tuple(nets[:2])
        if extra:
            twin[int(w)] = nets[2]
        if snap:
            snapshots.update({k: v[:2] for k, v in got.items()})
            snapshots[cfg.recipe.steps(x.shape[0])] = list(out[int(w)])
    return out


@dataclass
class Alignment(Result):
    """Two networks, ``b`` aligned to ``a`` by weight matching, and their paths on train and test."""

    a: MLP
    b: MLP
    b_matched: MLP
    perms: list
    naive: Path
    matched: Path
    naive_train: Path
    matched_train: Path


@boundary(x=INPUTS, y=LABELS, x_test=INPUTS, y_test=LABELS, alphas=count(2), max_iter=count(),
          seed=SEED)
def align(a: MLP, b: MLP, x: torch.Tensor, y: torch.Tensor, x_test: torch.Tensor,
          y_test: torch.Tensor, alphas: int = 25, max_iter: int = 100, seed: int = 0) -> Alignment:
    """Weight-match ``b`` to ``a`` and evaluate the naive and the matched paths.

    Weight-match ``b`` to ``a`` and evaluate the naive and the matched paths (Git Re-Basin, Fig. 2).

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP.
    b : MLP
        The second network (the path ends here); an MLP.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).
    y : torch.Tensor
        Integer labels of ``x``; a torch.Tensor (non-empty, integer, 1-dimensional).
    x_test : torch.Tensor
        Test inputs; a torch.Tensor (non-empty, floating-point, 2-dimensional, finite).
    y_test : torch.Tensor
        Test labels; a torch.Tensor (non-empty, integer, 1-dimensional).
    alphas : int, default 25
        Number of interpolation points; an int >= 2.
    max_iter : int, default 100
        Most iterations; an int >= 1.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].

    Returns
    -------
    Alignment
        Both paths and the permutations.

    References
    ----------
    Ainsworth, Hayase and Srinivasa (2023), "Git Re-Basin: Merging Models modulo Permutation
    Symmetries", Figure 2.
    """
    _check_same_shape(a, b)
    _check_data(a, x, y)
    _check_data(a, x_test, y_test, "x_test", "y_test")
    perms = weight_matching(a, b, max_iter=max_iter, seed=seed)
    bm = permute(b, perms)
    return Alignment(a, b, bm, perms,
                     evaluate_path(a, b, x_test, y_test, alphas),
                     evaluate_path(a, bm, x_test, y_test, alphas),
                     evaluate_path(a, b, x, y, alphas),
                     evaluate_path(a, bm, x, y, alphas))


@dataclass
class Spawning(Result):
    """Children spawned from one parent at several steps (Frankle et al. 2020, Figure 1).

    ``error_barrier`` is Frankle et al.'s instability: the largest test error along the path
    minus the mean test error of the two children (:func:`barrier_mean`), in points (0-100).
    ``independent`` holds the same barrier for a control pair that shares nothing: two networks
    from two random initializations trained with the same recipe and width.
    """

    steps: list[int]
    fractions: list[float]
    total_steps: int
    children: dict[int, list[tuple[MLP, MLP]]]
    error_barrier: np.ndarray  # (len(steps), pairs), in accuracy points (0-100), on the test set
    loss_barrier: np.ndarray
    independent: tuple[MLP, MLP] | None = None
    independent_error_barrier: float = float("nan")
    #: with ``unshared``: (pairs,) error barriers at the last spawn step of pairs whose two
    #: children come from two *different* parents trained to that step
    unshared_error_barrier: np.ndarray | None = None

    @property
    def mean_error_barrier(self) -> np.ndarray:
        return self.error_barrier.mean(1)

    @property
    def first_stable(self) -> float | None:
        """Fraction of training of the first spawn step from which every later step's mean error
        barrier is at most 2 points (Frankle et al.'s threshold), or None."""
        eb = self.mean_error_barrier
        for i in range(len(eb)):
            if np.all(eb[i:] <= 2.0):
                return float(self.fractions[i])
        return None


@boundary(x=INPUTS, y=LABELS, x_test=INPUTS, y_test=LABELS, seed=EXPERIMENT_SEED,
          unshared=InstanceOf(bool))
def spawn_experiment(cfg: ConnectivityConfig, x: torch.Tensor, y: torch.Tensor,
                     x_test: torch.Tensor, y_test: torch.Tensor, seed: int = 0,
                     recipe: Recipe | None = None, control: bool = True,
                     unshared: bool = False) -> Spawning:
    """Instability analysis: train a parent, spawn ``2 * spawn_pairs`` children at each spawn step.

    The parent is trained with ``recipe`` (default ``cfg.spawn_recipe``) up to the latest spawn
    step; at step ``k`` its weights are copied into children that finish the same schedule, each
    with its own minibatch order. The error barrier of each pair of children is measured on the
    test set (Frankle et al. call a network stable at ``k`` when it is at most 2 points). With
    ``control``, two independently initialized networks are trained in the same stack. With
    ``unshared``, the measured null of spawning: a second parent from another initialization is
    trained to the last spawn step, ``spawn_pairs`` children are spawned from it there, and each
    is paired with the first child of a pair of the main parent spawned at the same step (same
    step, same schedule, nothing shared), in a separate stack, so the main results do not change.

    Parameters
    ----------
    cfg : ConnectivityConfig
        The experiment's settings; a ConnectivityConfig.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).
    y : torch.Tensor
        Integer labels of ``x``; a torch.Tensor (non-empty, integer, 1-dimensional).
    x_test : torch.Tensor
        Test inputs; a torch.Tensor (non-empty, floating-point, 2-dimensional, finite).
    y_test : torch.Tensor
        Test labels; a torch.Tensor (non-empty, integer, 1-dimensional).
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    recipe : Recipe | None, default None
        The training recipe; a Recipe or None.
    control : bool, default True
        Whether to also train two independently initialized networks in the same stack (the
        control); a bool.
    unshared : bool, default False
        Whether to add the measured null of spawning: a second parent from another initialization;
        a bool.

    Returns
    -------
    Spawning
        The barriers by spawn step.

    References
    ----------
    Frankle, Dziugaite, Roy and Carbin (2020), "Linear Mode Connectivity and the Lottery Ticket
    Hypothesis".
    """
    C = _check_train_labels("y", y, len(x))
    if x_test.shape[1] != x.shape[1] or x_test.dtype != x.dtype:
        raise ValueError(f"x_test must have x's columns ({x.shape[1]}) and dtype ({x.dtype}), "
                         f"got shape {tuple(x_test.shape)} and dtype {x_test.dtype}")
    check_labels("y_test", y_test, C, n=len(x_test))
    recipe = recipe or cfg.spawn_recipe
    total = recipe.steps(x.shape[0])
    steps = sorted({int(round(f * total)) for f in cfg.spawn_fractions})
    parent = BatchedMLP.init(_seeds(seed, 30, 1), x.shape[1], cfg.spawn_width, cfg.depth, C,
                             device=x.device)
    snaps = _fit(parent, x, y, recipe, seeds=_seeds(seed, 31, 1), stop_step=max(steps),
                snapshot_steps=steps)
    per = 2 * cfg.spawn_pairs
    nets = [snaps[k][0] for k in steps for _ in range(per)]
    seeds = _seeds(seed, 32, per * len(steps))
    starts = [k for k in steps for _ in range(per)]
    if control:
        nets += [make_mlp(s, x.shape[1], cfg.spawn_width, cfg.depth, C).to(x.device)
                 for s in _seeds(seed, 33, 2)]
        seeds += _seeds(seed, 34, 2)
        starts += [0, 0]
    kids = stack(nets)
    _fit(kids, x, y, recipe, seeds=seeds, start_steps=starts)
    kids = members(kids)
    children, err, loss = {}, [], []
    for i, k in enumerate(steps):
        pairs = [(kids[per * i + 2 * j], kids[per * i + 2 * j + 1]) for j in range(cfg.spawn_pairs)]
        children[k] = pairs
        paths = [evaluate_path(a, b, x_test, y_test, cfg.alphas) for a, b in pairs]
        err.append([100 * p.error_barrier_mean for p in paths])
        loss.append([p.loss_barrier for p in paths])
    ind, ind_err = None, float("nan")
    if control:
        ind = (kids[-2], kids[-1])
        ind_err = 100 * evaluate_path(*ind, x_test, y_test, cfg.alphas).error_barrier_mean
    uns = None
    if unshared:
        k = steps[-1]
        other = BatchedMLP.init(_seeds(seed, 35, 1), x.shape[1], cfg.spawn_width, cfg.depth, C,
                                device=x.device)
        osnaps = _fit(other, x, y, recipe, seeds=_seeds(seed, 36, 1), stop_step=k,
                      snapshot_steps=[k])
        okids = stack([osnaps[k][0] for _ in range(cfg.spawn_pairs)])
        _fit(okids, x, y, recipe, seeds=_seeds(seed, 37, cfg.spawn_pairs),
             start_steps=[k] * cfg.spawn_pairs)
        okids = members(okids)
        uns = np.array([100 * evaluate_path(children[k][j][0], okids[j], x_test, y_test,
                                            cfg.alphas).error_barrier_mean
                        for j in range(cfg.spawn_pairs)])
    return Spawning(steps, [k / total for k in steps], total, children, np.array(err),
                    np.array(loss), ind, ind_err, uns)


@dataclass
class SweepPoint:
    """Naive and weight-matched barriers of one pair (on the training signals)."""

    label: float
    naive: Path
    matched: Path


@boundary(snapshots=InstanceOf(dict), steps_per_epoch=count(), x=INPUTS, y=LABELS,
          alphas=count(2), max_iter=count(), seed=SEED)
def barrier_vs_epoch(snapshots: dict[int, list[MLP]], steps_per_epoch: int, x: torch.Tensor,
                     y: torch.Tensor, alphas: int = 25, max_iter: int = 100, seed: int = 0
                     ) -> list[SweepPoint]:
    """Naive and matched training-loss paths between two runs' snapshots (Git Re-Basin, Fig. 5).

    ``snapshots`` maps a global step to the two runs' networks at that step (as returned by
    :func:`fit` with ``snapshot_steps``); each point is labelled by its epoch.

    Parameters
    ----------
    snapshots : dict[int, list[MLP]]
        Epochs at which the networks are recorded; a dict.
    steps_per_epoch : int
        Optimizer steps per epoch of the runs; an int >= 1.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).
    y : torch.Tensor
        Integer labels of ``x``; a torch.Tensor (non-empty, integer, 1-dimensional).
    alphas : int, default 25
        Number of interpolation points; an int >= 2.
    max_iter : int, default 100
        Most iterations; an int >= 1.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].

    Returns
    -------
    list[SweepPoint]
        One point per snapshot.

    References
    ----------
    Ainsworth, Hayase and Srinivasa (2023), "Git Re-Basin: Merging Models modulo Permutation
    Symmetries", Figure 5.
    """
    if not snapshots:
        raise ValueError("snapshots must hold at least one step, got {}")
    for k, nets in snapshots.items():
        count(0).check("snapshots (a key, a global step)", k)
        if not isinstance(nets, (list, tuple)) or len(nets) < 2:
            raise ValueError(f"snapshots[{k}] must be a list of the two runs' networks, got "
                             f"{nets!r:.80}")
        for i in (0, 1):
            _check_mlp(f"snapshots[{k}][{i}]", nets[i])
        _check_same_shape(nets[0], nets[1], names=(f"snapshots[{k}][0]", f"snapshots[{k}][1]"))
        _check_data(nets[0], x, y)
    out = []
    for k in sorted(snapshots):
        a, b = snapshots[k][:2]
        bm = permute(b, weight_matching(a, b, max_iter=max_iter, seed=seed))
        out.append(SweepPoint(k / steps_per_epoch, evaluate_path(a, b, x, y, alphas),
                              evaluate_path(a, bm, x, y, alphas)))
    return out


@boundary(x=INPUTS, y=LABELS, seed=EXPERIMENT_SEED)
def depth_sweep(cfg: ConnectivityConfig, x: torch.Tensor, y: torch.Tensor, seed: int = 0
                ) -> list[SweepPoint]:
    """Naive and matched training-loss paths of two independent nets per depth in ``cfg.depths``.

    Width ``cfg.depth_width``, recipe ``cfg.recipe``: Entezari et al. (2022) vary depth at a
    fixed width and find the barrier grows with depth, where width shrinks it.

    Parameters
    ----------
    cfg : ConnectivityConfig
        The experiment's settings; a ConnectivityConfig.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).
    y : torch.Tensor
        Integer labels of ``x``; a torch.Tensor (non-empty, integer, 1-dimensional).
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].

    Returns
    -------
    list[SweepPoint]
        One point per depth.
    """
    C = _check_train_labels("y", y, len(x))
    out = []
    for j, dep in enumerate(cfg.depths):
        a, b = train_nets(_seeds(seed, 50 + j, 2), x, y, cfg.depth_width, int(dep), C,
                          cfg.recipe)
        bm = permute(b, weight_matching(a, b, max_iter=cfg.max_iter, seed=seed))
        out.append(SweepPoint(int(dep), evaluate_path(a, b, x, y, cfg.alphas),
                              evaluate_path(a, bm, x, y, cfg.alphas)))
    return out


@boundary(y=LABELS, task=None)  # task is checked below
def task_labels(y: torch.Tensor, task: int | str) -> torch.Tensor:
    """Labels of the chapter's cross-task experiment, all five-way except the two-way pretext task.

    ``"pretrain"``: which half the digit is in (``y // 5``); task ``0``: the digit modulo 5
    (``y % 5``: 0 and 5 share a label, 1 and 6, ...); task ``1``: the digit pair (``y // 2``: 0 and
    1 share a label, 2 and 3, ...). Both need finer digit features than the pretext task teaches,
    and they group the digits differently.

    Parameters
    ----------
    y : torch.Tensor
        Integer labels of ``x``; a torch.Tensor (non-empty, integer, 1-dimensional).
    task : int | str
        The task's name.

    Returns
    -------
    torch.Tensor
        Labels of the chapter's cross-task experiment, all five-way except the two-way pretext
        task.
    """
    check_labels("y", y, 10)  # MNIST-1D's digits
    if isinstance(task, str) and task == "pretrain":
        return y // 5
    if task == 0 and not isinstance(task, bool):
        return y % 5
    if task == 1 and not isinstance(task, bool):
        return y // 2
    raise ValueError(f"task must be 'pretrain', 0 or 1, got {task!r}")


@dataclass
class CrossTask(Result):
    """Pretraining, two fine-tuned tasks, a same-initialization control, averaging, task arithmetic."""

    pretrained: MLP
    probes: list[MLP]            # pretrained body + linear-probe head, per task
    finetuned: list[list[MLP]]   # finetuned[t] = two fine-tuning runs of task t
    init: MLP                    # the control's shared random initialization
    scratch: list[MLP]           # control: one model per task, both from ``init``, no pretraining
    acc_pre: list[float]
    acc_ft: list[list[float]]
    acc_scratch: list[float]
    acc_init: list[float]        # accuracy of ``init``'s body with each scratch model's head
    ctl: list[float]             # per hidden layer, fine-tuned task-0 vs task-1 models
    ctl_base: list[float]        # per hidden layer, 1 - cos of their own features (baseline)
    ctl_scratch: list[float]     # the same for the control pair
    ctl_scratch_base: list[float]
    avg_acc: list[float]         # per task: weight average of the two runs
    ens_acc: list[float]         # per task: logit ensemble of the two runs
    agreement: list[float]       # per task: agreement(weight average, ensemble)
    single_agreement: list[float]  # per task: best agreement(single run, ensemble)
    lambdas: np.ndarray
    arith_acc: np.ndarray        # (len(lambdas), 2) test accuracy of the merged model per task
    arith_train_acc: np.ndarray
    best_lambda: float
    scratch_arith_acc: np.ndarray  # the same task addition from ``init`` with the control's vectors
    scratch_best_lambda: float
    scratch_arith_train_acc: np.ndarray = None
    train_ends: dict = None      # training accuracy of "pre", "ft", "init", "scratch" per task
    #: the same task addition from the sweep's shuffled-label body (its probes and first runs);
    #: ``train_ends`` then also holds its "shuf_pre" and "shuf_ft"
    shuffled_arith_train_acc: np.ndarray | None = None
    shuffled_best_lambda: float = float("nan")
    #: per task: the training gain kept at ``best_lambda`` when the *other* task's vector is
    #: replaced by a random vector of the same norm, tensor by tensor (no interference)
    random_vector_gain: list | None = None

    @staticmethod
    def _gain(acc, lam, best, start, end) -> list[float]:
        i = int(np.argmin(np.abs(lam - best)))
        return [float((acc[i, t] - start[t]) / (end[t] - start[t])) if end[t] != start[t]
                else float("nan") for t in (0, 1)]

    @property
    def gain_recovered(self) -> list[float]:
        """Per task: (merged - pretrained) / (fine-tuned - pretrained) test accuracy, at best_lambda."""
        return self._gain(self.arith_acc, self.lambdas, self.best_lambda, self.acc_pre,
                          [a[0] for a in self.acc_ft])

    @property
    def train_gain_recovered(self) -> list[float]:
        """Per task, on the training signals: (merged - pretrained) / (fine-tuned - pretrained)
        at best_lambda (the gains are large there, so the ratio is stable; on the test signals
        a fine-tuning gain of a few points makes it noisy)."""
        e = self.train_ends
        return self._gain(self.arith_train_acc, self.lambdas, self.best_lambda, e["pre"], e["ft"])

    @property
    def scratch_train_gain_recovered(self) -> list[float]:
        """The same on the training signals for the control (from ``init`` to the scratch models)."""
        e = self.train_ends
        return self._gain(self.scratch_arith_train_acc, self.lambdas, self.scratch_best_lambda,
                          e["init"], e["scratch"])

    @property
    def shuffled_train_gain_recovered(self) -> list[float]:
        """The same on the training signals for the shuffled-label body (nan without it)."""
        if self.shuffled_arith_train_acc is None:
            return [float("nan"), float("nan")]
        e = self.train_ends
        return self._gain(self.shuffled_arith_train_acc, self.lambdas, self.shuffled_best_lambda,
                          e["shuf_pre"], e["shuf_ft"])

    @property
    def scratch_gain_recovered(self) -> list[float]:
        """The same for the control: (merged - init) / (scratch - init), at its own best lambda."""
        return self._gain(self.scratch_arith_acc, self.lambdas, self.scratch_best_lambda,
                          self.acc_init, self.acc_scratch)


def _task_arithmetic(base: MLP, ends: Sequence[MLP], lam: np.ndarray, tr, te):
    """Test/train accuracy of ``base + l * sum_t (ends[t] - base)`` per lambda and task, and the
    lambda whose worse task recovers the largest fraction of its gain on the training signals."""
    taus = [task_vector(base, m) for m in ends]
    acc_te = np.zeros((len(lam), 2))
    acc_tr = np.zeros((len(lam), 2))
    for i, l in enumerate(lam):
        for t in (0, 1):
            m = apply_task_vectors(base, taus, float(l), ends[t])
            acc_te[i, t] = accuracy(m, *te[t])
            acc_tr[i, t] = accuracy(m, *tr[t])
    lo = [accuracy(with_head(base, ends[t].layers[-1].weight, ends[t].layers[-1].bias), *tr[t])
          for t in (0, 1)]
    hi = [accuracy(ends[t], *tr[t]) for t in (0, 1)]
    norm = np.stack([(acc_tr[:, t] - lo[t]) / max(1e-9, hi[t] - lo[t]) for t in (0, 1)], 1)
    return acc_te, acc_tr, float(lam[int(np.argmax(norm.min(1)))]), lo, hi


@torch.no_grad()
def _random_vector_gain(base: MLP, ends: Sequence[MLP], lam: float, tr, lo, hi,
                        seed: int) -> list[float]:
    """Per task ``t``: the training gain kept by ``base + lam (tau_t + r)``, where ``r`` is a
    Gaussian vector with the norm of the other task's vector, tensor by tensor."""
    gen = torch.Generator().manual_seed(int(seed))
    taus = [task_vector(base, m) for m in ends]
    out = []
    for t in (0, 1):
        rnd = []
        for v in taus[1 - t]:
            z = torch.randn(v.shape, generator=gen).to(v.device)
            rnd.append(z * (v.norm() / z.norm().clamp_min(1e-12)))
        acc = accuracy(apply_task_vectors(base, [taus[t], rnd], float(lam), ends[t]), *tr[t])
        out.append(float((acc - lo[t]) / max(1e-9, hi[t] - lo[t])))
    return out


def _ctl_data(x, y, x_test, y_test, x_pre, y_pre):
    """Check the data of a cross-task experiment; the pretraining set (default: ``x`` with the
    pretraining labels of :func:`task_labels`) and its number of classes."""
    d = x.shape[1]
    check_labels("y", y, 10, n=len(x))  # MNIST-1D's digits (see task_labels)
    if x_test.shape[1] != d or x_test.dtype != x.dtype:
        raise ValueError(f"x_test must have x's columns ({d}) and dtype ({x.dtype}), got shape "
                         f"{tuple(x_test.shape)} and dtype {x_test.dtype}")
    check_labels("y_test", y_test, 10, n=len(x_test))
    if (x_pre is None) != (y_pre is None):
        raise ValueError("x_pre and y_pre must be given together (or both left None)")
    if x_pre is None:
        y_pre = task_labels(y, "pretrain")
        return x, y_pre, int(y_pre.max()) + 1
    if x_pre.shape[1] != d or x_pre.dtype != x.dtype:
        raise ValueError(f"x_pre must have x's columns ({d}) and dtype ({x.dtype}), got "
                         f"shape {tuple(x_pre.shape)} and dtype {x_pre.dtype}")
    return x_pre, y_pre, _check_train_labels("y_pre", y_pre, len(x_pre))


@boundary(x=INPUTS, y=LABELS, x_test=INPUTS, y_test=LABELS, seed=EXPERIMENT_SEED,
          x_pre=Tensor("float", 2, optional=True), y_pre=Tensor("int", 1, optional=True),
          sweep=None)  # sweep is checked below
def cross_task_experiment(cfg: ConnectivityConfig, x: torch.Tensor, y: torch.Tensor,
                          x_test: torch.Tensor, y_test: torch.Tensor, seed: int = 0,
                          x_pre: torch.Tensor | None = None, y_pre: torch.Tensor | None = None,
                          sweep: "PretrainingSweep | None" = None) -> CrossTask:
    """Pretrain, fine-tune on two other labelings (:func:`task_labels`), compare with a control.

    * pretraining: on ``(x_pre, y_pre)`` (default: the training signals with the two-way
      "which half" labels), one network of width ``cfg.ctl_width``;
    * task 0 / task 1: the 5-way labelings ``y % 5`` and ``y // 2`` of the training signals, each
      with its own head, a linear probe on the pretrained features that stays frozen while the
      hidden layers are fine-tuned (Ilharco et al. 2023 also freeze the heads); two fine-tuning
      runs per task differ only in their minibatch order;
    * control (Zhou et al. 2024, Sec. 6: no pretraining): the two tasks trained from one shared
      random initialization, so that the permutation symmetry cannot explain a difference.

    Measures the CTL dissimilarity of the hidden layers and its endpoint baseline (1 - cos of
    the two models' own features), weight averaging against logit ensembling of the two runs of
    each task, and task arithmetic ``theta_0 + lambda (tau_0 + tau_1)`` with ``lambda`` chosen on
    the *training* signals, for the pretrained model and for the control.

    With ``sweep`` (a :func:`pretraining_sweep` of the same config, data and seed), its fully
    pretrained model, probes and first two fine-tuning runs per task are used instead of being
    trained again (the pretraining is the same run; the fine-tuning runs differ only in their
    minibatch seeds), and the control is the sweep's arm without pretraining instead: the
    pretraining run's random initialization, with its probes, fine-tuned with the same recipe
    as the pretrained model (the same learning rate and epochs; its first run per task).

    Parameters
    ----------
    cfg : ConnectivityConfig
        The experiment's settings; a ConnectivityConfig.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).
    y : torch.Tensor
        Integer labels of ``x``; a torch.Tensor (non-empty, integer, 1-dimensional).
    x_test : torch.Tensor
        Test inputs; a torch.Tensor (non-empty, floating-point, 2-dimensional, finite).
    y_test : torch.Tensor
        Test labels; a torch.Tensor (non-empty, integer, 1-dimensional).
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    x_pre : torch.Tensor | None, default None
        Pretraining inputs; a torch.Tensor (non-empty, floating-point, 2-dimensional, finite).
    y_pre : torch.Tensor | None, default None
        Pretraining labels; a torch.Tensor (non-empty, integer, 1-dimensional).
    sweep : 'PretrainingSweep | None', default None
        Whether to add the sweep over ``lambdas``.

    Returns
    -------
    CrossTask
        The accuracies of the experiment.

    References
    ----------
    Zhou, Chen, Chen, Zhang and Yan (2024), "On the Emergence of Cross-Task Linearity in the
    Pretraining-Finetuning Paradigm".
    """
    width, d = cfg.ctl_width, x.shape[1]
    if sweep is not None and not isinstance(sweep, PretrainingSweep):
        raise TypeError(f"sweep must be a PretrainingSweep or None, got {type(sweep).__name__}")
    x_pre, y_pre, n_pre_classes = _ctl_data(x, y, x_test, y_test, x_pre, y_pre)
    tr = [(x, task_labels(y, t)) for t in (0, 1)]
    te = [(x_test, task_labels(y_test, t)) for t in (0, 1)]
    X, Y = x, torch.stack([tr[0][1], tr[1][1]])
    if sweep is not None:  # its fully pretrained arm: the same pretraining, probes, fine-tunings
        if sweep.pretrained is None or sweep.pretrained.layers[0].out_features != width:
            raise ValueError(f"sweep must come from pretraining_sweep with ctl_width {width}")
        pre, probes = sweep.pretrained, list(sweep.probes)
        ft = [list(sweep.finetuned[t][:2]) for t in (0, 1)]
    else:
        pre = BatchedMLP.init(_seeds(seed, 40, 1), d, width, cfg.depth, n_pre_classes,
                              device=x.device)
        _fit(pre, x_pre, y_pre, cfg.spawn_recipe, seeds=_seeds(seed, 41, 1))
        pre = pre.member(0)
        heads = [make_mlp(s, d, width, cfg.depth, 5).to(x.device) for s in _seeds(seed, 42, 2)]
        probes = stack([with_head(pre, h.layers[-1].weight, h.layers[-1].bias) for h in heads])
        _fit(probes, X, Y, cfg.probe_recipe, seeds=_seeds(seed, 43, 2), only_last_layer=True)
        probes = members(probes)
        ft = stack([probes[0], probes[0], probes[1], probes[1]])
        _fit(ft, X, Y[[0, 0, 1, 1]], cfg.ft_recipe, seeds=_seeds(seed, 44, 4),
             freeze_last_layer=True)
        ft = members(ft)
        ft = [ft[0:2], ft[2:4]]
    if sweep is not None and sweep.start is not None:  # budget-matched: arm 0 of the sweep
        init, sc = sweep.start, [sweep.start_finetuned[t][0] for t in (0, 1)]
    else:
        init = make_mlp(_seeds(seed, 45, 1)[0], d, width, cfg.depth, 5).to(x.device)
        sc = stack([init, init])
        _fit(sc, X, Y, cfg.spawn_recipe, seeds=_seeds(seed, 46, 2))
        sc = members(sc)

    acc_pre = [accuracy(probes[t], *te[t]) for t in (0, 1)]
    acc_ft = [[accuracy(m, *te[t]) for m in ft[t]] for t in (0, 1)]
    acc_sc = [accuracy(sc[t], *te[t]) for t in (0, 1)]
    acc_init = [accuracy(with_head(init, sc[t].layers[-1].weight, sc[t].layers[-1].bias), *te[t])
                for t in (0, 1)]
    ctl = llfc_dissimilarity(ft[0][0], ft[1][0], x_test)[:-1]
    ctl_base = endpoint_dissimilarity(ft[0][0], ft[1][0], x_test)[:-1]
    ctl_sc = llfc_dissimilarity(sc[0], sc[1], x_test)[:-1]
    ctl_sc_base = endpoint_dissimilarity(sc[0], sc[1], x_test)[:-1]
    avg_acc, ens_acc, agree, single = [], [], [], []
    with torch.no_grad():
        for t in (0, 1):
            la = average(ft[t])(te[t][0]).argmax(-1)
            runs = [m(te[t][0]) for m in ft[t]]
            le = ((runs[0] + runs[1]) / 2).argmax(-1)
            avg_acc.append(float((la == te[t][1]).float().mean()))
            ens_acc.append(float((le == te[t][1]).float().mean()))
            agree.append(float((la == le).float().mean()))
            single.append(max(float((r.argmax(-1) == le).float().mean()) for r in runs))
    lam = np.asarray(cfg.lambdas, dtype=float)
    acc_te, acc_tr, best, pre_tr, ft_tr = _task_arithmetic(pre, [ft[0][0], ft[1][0]], lam, tr,
                                                           te)
    sc_te, sc_tr, sc_best, init_tr, sc_end_tr = _task_arithmetic(init, sc, lam, tr, te)
    ends = {"pre": pre_tr, "ft": ft_tr, "init": init_tr, "scratch": sc_end_tr}
    sh_tr, sh_best = None, float("nan")
    if sweep is not None and sweep.shuffled_body is not None:  # the shuffled-label body's arm
        sh_ends = [sweep.shuffled_finetuned[t][0] for t in (0, 1)]
        _, sh_tr, sh_best, ends["shuf_pre"], ends["shuf_ft"] = _task_arithmetic(
            sweep.shuffled_body, sh_ends, lam, tr, te)
    rnd = _random_vector_gain(pre, [ft[0][0], ft[1][0]], best, tr, pre_tr, ft_tr,
                              _seeds(seed, 47, 1)[0])
    return CrossTask(pre, probes, ft, init, sc, acc_pre, acc_ft, acc_sc, acc_init, ctl, ctl_base,
                     ctl_sc, ctl_sc_base, avg_acc, ens_acc, agree, single, lam, acc_te, acc_tr,
                     best, sc_te, sc_best, sc_tr, ends, sh_tr, sh_best, rnd)


@dataclass
class PretrainingSweep(Result):
    """Cross-task linearity and weight averaging at one fine-tuning budget, over pretraining lengths.

    Every arm fine-tunes ``runs`` models per task with the same recipe (equal learning rate times
    epochs) from a starting body: a snapshot of one pretraining run after ``epochs[i]`` epochs
    (``0``: its random initialization), a *second random initialization* (``null_*``: a
    no-pretraining arm that shares nothing with the first, the spread between two arms without
    pretraining), and a *second, independently pretrained* model (for the averaging null).
    """

    epochs: list[float]
    ctl: np.ndarray           # (lengths, runs, layers): task-0 run r vs task-1 run r, at alpha 1/2
    ctl_base: np.ndarray      # (lengths, runs, layers): their endpoint baseline 1 - cos(f_0, f_1)
    null_ctl: np.ndarray      # (runs, layers): the same from a second random initialization
    null_ctl_base: np.ndarray
    displacement: np.ndarray  # (lengths, 2, runs): ||theta_ft - theta_start|| over the hidden layers
    acc: np.ndarray           # (lengths, 2, runs): test accuracy of the fine-tuned models
    acc_probe: np.ndarray     # (lengths, 2): test accuracy of the starting body with its probe
    disagree: np.ndarray      # (lengths, 2, pairs): soup-vs-ensemble disagreement ratio per arm
    unshared_disagree: np.ndarray  # (2, runs): the same for runs from two different pretrained models
    pretrained: MLP | None = None  # the fully pretrained model (its pretraining head)
    probes: list | None = None     # its probes, one per task
    finetuned: list | None = None  # finetuned[t]: its ``runs`` fine-tunings of task t
    start: MLP | None = None       # arm 0's body: the pretraining run's random initialization
    start_finetuned: list | None = None  # start_finetuned[t]: arm 0's fine-tunings of task t
    shuffled_ctl: np.ndarray | None = None       # (runs, layers): from a shuffled-label body
    shuffled_ctl_base: np.ndarray | None = None
    shuffled_disagree: np.ndarray | None = None  # (2, pairs): its disagreement ratios
    shuffled_displacement: np.ndarray | None = None  # (2, runs): how far its runs moved
    shuffled_acc: np.ndarray | None = None       # (2, runs): their test accuracy
    shuffled_body: MLP | None = None             # the shuffled-label body (its pretraining head)
    shuffled_finetuned: list | None = None       # shuffled_finetuned[t]: its runs of task t

    @property
    def ctl_ratio(self) -> np.ndarray:
        """CTL dissimilarity over its endpoint baseline, (lengths, runs, layers)."""
        return self.ctl / np.maximum(self.ctl_base, 1e-12)

    @property
    def null_ctl_ratio(self) -> np.ndarray:
        """The same for the second random initialization, (runs, layers)."""
        return self.null_ctl / np.maximum(self.null_ctl_base, 1e-12)

    @property
    def shuffled_ctl_ratio(self) -> np.ndarray:
        """The same for the body pretrained on shuffled labels, (runs, layers)."""
        return self.shuffled_ctl / np.maximum(self.shuffled_ctl_base, 1e-12)


@torch.no_grad()
def _disagreement_ratio(m1: MLP, m2: MLP, x: torch.Tensor) -> float:
    """``(1 - agree(soup, ensemble)) / (1 - best agree(single run, ensemble))`` on ``x``.

    Below 1 when the weight average of the two models predicts like their logit ensemble more
    often than either model alone does. A denominator of 0 (both runs always agree with the
    ensemble) is floored at one signal, ``1 / len(x)``.
    """
    ens = (m1(x) + m2(x)) / 2
    le = ens.argmax(-1)
    soup = (average([m1, m2])(x).argmax(-1) == le).float().mean()
    single = max(float((m(x).argmax(-1) == le).float().mean()) for m in (m1, m2))
    return float((1 - soup) / max(1 - single, 1 / len(x)))


@boundary(m1=InstanceOf(MLP), m2=InstanceOf(MLP), x=INPUTS)
def disagreement_ratio(m1: MLP, m2: MLP, x: torch.Tensor) -> float:
    """How much less often a weight average departs from the logit ensemble than a single run does.

    ``(1 - agree(average(m1, m2), ensemble)) / (1 - max_i agree(m_i, ensemble))`` on ``x``, where
    ``agree`` is the fraction of inputs with the same predicted class and the ensemble averages
    the two models' logits (Zhou et al. 2024 read model averaging as ensembling through
    cross-task linearity). 0: the average predicts exactly like the ensemble; 1: as often off
    as the better single run; above 1: the average is no ensemble.
    """
    _check_same_shape(m1, m2, names=("m1", "m2"))
    _check_inputs("x", x, m1)
    return _disagreement_ratio(m1, m2, x)


def _displacement(start: MLP, end: MLP) -> float:
    return float(torch.sqrt(sum((t ** 2).sum() for t in task_vector(start, end))))


@boundary(x=INPUTS, y=LABELS, x_test=INPUTS, y_test=LABELS, seed=EXPERIMENT_SEED,
          x_pre=Tensor("float", 2, optional=True), y_pre=Tensor("int", 1, optional=True))
def pretraining_sweep(cfg: ConnectivityConfig, x: torch.Tensor, y: torch.Tensor,
                      x_test: torch.Tensor, y_test: torch.Tensor, seed: int = 0,
                      x_pre: torch.Tensor | None = None, y_pre: torch.Tensor | None = None
                      ) -> PretrainingSweep:
    """Budget-matched arms for cross-task linearity and averaging (Zhou et al. 2024, Sec. 6).

    One pretraining run (``cfg.spawn_recipe`` on ``(x_pre, y_pre)``, the initialization and
    minibatch seeds of :func:`cross_task_experiment`) is snapshotted after each of
    ``cfg.pretrain_epochs`` epochs (0: its random initialization; the last must be the full
    run). A second pretraining run from another initialization is trained alongside, and a
    third on the same inputs with their labels shuffled (the same budget of pretraining, nothing
    to learn from the labels: the ``shuffled_*`` arm); a second random initialization is
    drawn. From every starting body, a linear probe per task
    (``cfg.probe_recipe``, frozen body) and then ``cfg.ft_runs`` fine-tunings per task
    (``cfg.ft_recipe``, frozen head, each its own minibatch order) are trained: the same
    learning rate and number of epochs in every arm. Measures, per arm, the CTL dissimilarity of
    task-0 run ``r`` against task-1 run ``r`` and its endpoint baseline, the distance each
    fine-tuning moved the weights, the test accuracies, the soup-versus-ensemble
    :func:`disagreement_ratio` of every pair of runs of one task, and the same ratio for run ``r``
    from the fully pretrained model and run ``r`` from the second pretrained model (nothing
    shared, same budget).

    Parameters
    ----------
    cfg : ConnectivityConfig
        The experiment's settings; a ConnectivityConfig.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).
    y : torch.Tensor
        Integer labels of ``x``; a torch.Tensor (non-empty, integer, 1-dimensional).
    x_test : torch.Tensor
        Test inputs; a torch.Tensor (non-empty, floating-point, 2-dimensional, finite).
    y_test : torch.Tensor
        Test labels; a torch.Tensor (non-empty, integer, 1-dimensional).
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    x_pre : torch.Tensor | None, default None
        Pretraining inputs; a torch.Tensor (non-empty, floating-point, 2-dimensional, finite).
    y_pre : torch.Tensor | None, default None
        Pretraining labels; a torch.Tensor (non-empty, integer, 1-dimensional).

    Returns
    -------
    PretrainingSweep
        The arms' accuracies and dissimilarities.

    References
    ----------
    Zhou, Chen, Chen, Zhang and Yan (2024), "On the Emergence of Cross-Task Linearity in the
    Pretraining-Finetuning Paradigm", Section 6.
    """
    d, R = x.shape[1], cfg.ft_runs
    x_pre, y_pre, k_pre = _ctl_data(x, y, x_test, y_test, x_pre, y_pre)
    rec = cfg.spawn_recipe
    total = rec.steps(len(x_pre))
    per_epoch = -(-len(x_pre) // rec.batch_size)
    steps = [int(round(e * per_epoch)) for e in cfg.pretrain_epochs]
    if steps[-1] != total:
        raise ValueError(f"cfg.pretrain_epochs must end at the pretraining run's length "
                         f"({rec.epochs} epochs), got {cfg.pretrain_epochs}")
    pre = BatchedMLP.init(_seeds(seed, 40, 1) + _seeds(seed, 60, 1) + _seeds(seed, 65, 1), d,
                          cfg.ctl_width, cfg.depth, k_pre, device=x.device)
    g = torch.Generator().manual_seed(_seeds(seed, 66, 1)[0])
    y_shuf = y_pre[torch.randperm(len(y_pre), generator=g).to(y_pre.device)]
    snaps = _fit(pre, x_pre, torch.stack([y_pre, y_pre, y_shuf]), rec,
                 seeds=_seeds(seed, 41, 1) + _seeds(seed, 61, 1) + _seeds(seed, 67, 1),
                 snapshot_steps=[k for k in steps if k < total])
    full = members(pre)
    L = len(steps)
    bodies = [snaps[k][0] if k < total else full[0] for k in steps]
    bodies += [make_mlp(_seeds(seed, 62, 1)[0], d, cfg.ctl_width, cfg.depth, k_pre).to(x.device),
               full[1], full[2]]  # L: second random init; L + 1: second pretrained model;
    # L + 2: pretrained on shuffled labels (the same budget, nothing to learn from the labels)
    heads = [make_mlp(s, d, cfg.ctl_width, cfg.depth, 5).to(x.device) for s in _seeds(seed, 42, 2)]
    labels = torch.stack([task_labels(y, t) for t in (0, 1)])
    probes = stack([with_head(b, h.layers[-1].weight, h.layers[-1].bias)
                    for b in bodies for h in heads])
    _fit(probes, x, labels.repeat(len(bodies), 1), cfg.probe_recipe,
         seeds=_seeds(seed, 43, 2 * len(bodies)), only_last_layer=True)
    probes = members(probes)
    ft = stack([p for p in probes for _ in range(R)])
    _fit(ft, x, labels.repeat_interleave(R, 0).repeat(len(bodies), 1), cfg.ft_recipe,
         seeds=_seeds(seed, 64, 2 * R * len(bodies)), freeze_last_layer=True)
    ft = members(ft)
    net = lambda b, t, r: ft[(2 * b + t) * R + r]  # noqa: E731
    te = [task_labels(y_test, t) for t in (0, 1)]

    def ctl_of(b):
        c = [llfc_dissimilarity(net(b, 0, r), net(b, 1, r), x_test)[:-1] for r in range(R)]
        e = [endpoint_dissimilarity(net(b, 0, r), net(b, 1, r), x_test)[:-1] for r in range(R)]
        return np.array(c), np.array(e)

    ctl = [ctl_of(b) for b in range(L + 1)] + [ctl_of(L + 2)]
    disp = np.array([[[_displacement(probes[2 * b + t], net(b, t, r)) for r in range(R)]
                      for t in (0, 1)] for b in list(range(L)) + [L + 2]])
    acc = np.array([[[accuracy(net(b, t, r), x_test, te[t]) for r in range(R)] for t in (0, 1)]
                    for b in list(range(L)) + [L + 2]])
    acc_probe = np.array([[accuracy(probes[2 * b + t], x_test, te[t]) for t in (0, 1)]
                          for b in range(L)])
    top = L - 1
    dis = np.array([[[_disagreement_ratio(net(b, t, i), net(b, t, j), x_test)
                      for i in range(R) for j in range(i + 1, R)] for t in (0, 1)]
                    for b in list(range(L)) + [L + 2]])
    uns = np.array([[_disagreement_ratio(net(top, t, r), net(L + 1, t, r), x_test)
                     for r in range(R)] for t in (0, 1)])
    return PretrainingSweep([float(e) for e in cfg.pretrain_epochs],
                            np.array([c for c, _ in ctl[:L]]), np.array([e for _, e in ctl[:L]]),
                            ctl[L][0], ctl[L][1], disp[:L], acc[:L], acc_probe, dis[:L], uns,
                            full[0],
                            [probes[2 * top + t] for t in (0, 1)],
                            [[net(top, t, r) for r in range(R)] for t in (0, 1)],
                            bodies[0], [[net(0, t, r) for r in range(R)] for t in (0, 1)],
                            ctl[L + 1][0], ctl[L + 1][1], dis[L], disp[L], acc[L], full[2],
                            [[net(L + 2, t, r) for r in range(R)] for t in (0, 1)])


@boundary(scale=nonnegative(), seed=SEED)
@torch.no_grad()
def add_noise(model: MLP, scale: float, seed: int = 0) -> MLP:
    """A copy of ``model`` with Gaussian noise added to every weight and bias.

    The noise of a layer has standard deviation ``scale`` times the standard deviation of that
    layer's weights (resp. biases), so ``scale = 0.1`` is a 10% perturbation at every layer.
    """
    gen = torch.Generator().manual_seed(int(seed))
    ws, bs = params(model)

    def noisy(t):
        z = torch.randn(t.shape, generator=gen).to(t.device)
        return t + scale * float(t.std()) * z

    return from_params([noisy(w) for w in ws], None if bs is None else [noisy(v) for v in bs],
                       model.act_name)


@boundary(model=InstanceOf(MLP), distance=nonnegative(), seed=SEED)
@torch.no_grad()
def perturb(model: MLP, distance: float, seed: int = 0) -> MLP:
    """A copy of ``model`` moved a Euclidean ``distance`` in a random direction.

    The direction is the Gaussian noise of :func:`add_noise` (every layer's weights and biases
    in proportion to their own spread), rescaled so that ``weight_distance(model, result)`` is
    ``distance``. A pair ``(model, perturb(model, d))`` is as far apart as a pair at distance
    ``d`` and shares everything else: the null of "the two networks are close in weights".

    Parameters
    ----------
    model : MLP
        The network; an MLP.
    distance : float
        How far to move it; a finite number >= 0.
    seed : int, default 0
        Seed of the direction; an int in [0, 2**63 - 1].

    Returns
    -------
    MLP
        The perturbed copy.

    References
    ----------
    Zhou et al. (2023), "Going Beyond Linear Mode Connectivity: The Layerwise Linear Feature
    Connectivity" (the properties this null is read against).
    """
    noisy = add_noise(model, 1.0, seed)
    d = weight_distance(model, noisy)
    return lerp(model, noisy, distance / d) if d > 0 else copy.deepcopy(model)


@boundary(x=INPUTS, y=LABELS, seed=Interval(int, 0, 2**63 - 2), max_iter=count(),
          noise=nonnegative())
@torch.no_grad()
def planted_permutation_check(model: MLP, x: torch.Tensor, y: torch.Tensor, seed: int = 0,
                              max_iter: int = 100, noise: float = 0.0) -> dict:
    """Permute ``model``'s hidden units at random, perturb the copy, then weight-match it back.

    Returns the largest logit change caused by the permutation alone (should be ~0: the symmetry;
    computed in float64, so that it measures the symmetry rather than float32 rounding, which
    alone moves logits by about 1e-6 relative), the fraction of units recovered per layer by
    weight matching and, as the control, by no matching (the identity), and the loss barriers
    from ``model`` to the aligned and to the unaligned copy on ``(x, y)``, with both paths
    (``path``, ``unaligned_path``). With ``noise > 0`` the shuffled copy also gets Gaussian
    weight noise of that relative size (:func:`add_noise`), so that matching has to find the
    permutation among near-ties instead of reading off an exact copy.

    Parameters
    ----------
    model : MLP
        The network; an MLP.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).
    y : torch.Tensor
        Integer labels of ``x``; a torch.Tensor (non-empty, integer, 1-dimensional).
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    max_iter : int, default 100
        Most iterations; an int >= 1.
    noise : float, default 0.0
        Noise level; a finite number >= 0.

    Returns
    -------
    dict
        The measurements named above.
    """
    _check_data(model, x, y)
    planted = random_perms(model, seed)
    shuffled = permute(model, planted)
    x64 = x.double()
    logit_diff = float((copy.deepcopy(shuffled).double()(x64)
                        - copy.deepcopy(model).double()(x64)).abs().max())
    if noise > 0:
        shuffled = add_noise(shuffled, noise, seed + 1)
    found = weight_matching(model, shuffled, max_iter=max_iter, seed=seed)
    aligned = permute(shuffled, found)
    path = evaluate_path(model, aligned, x, y, 11)
    unaligned = evaluate_path(model, shuffled, x, y, 11)
    ident = [np.arange(len(p)) for p in planted]
    return {"max_logit_diff": logit_diff, "recovered": perm_recovery(found, planted),
            "recovered_identity": perm_recovery(ident, planted),
            "barrier": float(path.loss_barrier), "unaligned_barrier": float(unaligned.loss_barrier),
            "path": path, "unaligned_path": unaligned}


@boundary(x=INPUTS, alphas=_Numbers(0, 1))
def llfc_profile(a: MLP, b: MLP, x: torch.Tensor, alphas: Sequence[float]) -> np.ndarray:
    """LLFC dissimilarity of every hidden layer (columns) at every ``alpha`` (rows).

    Parameters
    ----------
    a : MLP
        The first network (the path starts here); an MLP.
    b : MLP
        The second network (the path ends here); an MLP.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2-dimensional,
        finite).
    alphas : Sequence[float]
        Interpolation points; a non-empty 1-D sequence of
        finite numbers in [0, 1].

    Returns
    -------
    np.ndarray
        LLFC dissimilarity of every hidden layer (columns) at every ``alpha`` (rows).
    """
    alphas = _alpha_grid(alphas)
    return np.array([llfc_dissimilarity(a, b, x, float(al))[:-1] for al in alphas])
