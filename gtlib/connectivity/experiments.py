"""Mode connectivity: the chapter's experiments, each a function of a config."""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np
import torch

from ..checks import (
    SEED,
    InstanceOf,
    Interval,
    Tensor,
    boundary,
    check_labels,
    count,
    fraction,
    nonnegative,
    tuple_of,
)
from ..config import Config, Result, param
from ..models import BatchedMLP, MLP, make_mlp
from .common import (
    _check_data,
    _check_inputs,
    _check_mlp,
    _check_same_shape,
    _check_train_labels,
    _Numbers,
    EXPERIMENT_SEED,
    INPUTS,
    LABELS,
)
from .training import fit, from_params, members, params, Recipe, stack, train_nets
from .paths import _alpha_grid, evaluate_path, lerp, Path
from .permutations import perm_recovery, permute, random_perms, weight_matching
from .features import endpoint_dissimilarity, llfc_dissimilarity
from .finetuning import (
    accuracy,
    apply_task_vectors,
    average,
    task_vector,
    weight_distance,
    with_head,
)

__all__ = [
    "ConnectivityConfig",
    "align",
    "barrier_vs_epoch",
    "cross_task_experiment",
    "depth_sweep",
    "llfc_profile",
    "perturb",
    "planted_permutation_check",
    "pretraining_sweep",
    "spawn_experiment",
    "task_labels",
    "train_pairs",
]


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
        Recipe of the Bezier control point's training (default: peak lr 0.1, 60 epochs, no
        warm-up); a Recipe.
    pretrain_epochs : tuple[float, ...], default (0, 3, 30)
        Pretraining lengths compared, in epochs (the last is the full run); a tuple (at least 2
        items, strictly increasing) of items each a finite number >= 0.
    ft_runs : int, default 3
        Fine-tunings per task; an int >= 2.
    """

    FULL = dict(
        n_train=16000,
        n_test=4000,
        widths=(32, 64, 128, 256, 512, 1024, 2048),
        recipe=Recipe(lr=0.1, epochs=60, warmup=0.2),
        spawn_width=512,
        spawn_pairs=3,
        spawn_recipe=Recipe(lr=0.2, epochs=60, warmup=0.0),
        ctl_width=1024,
        ft_recipe=Recipe(lr=0.05, epochs=20, warmup=0.0),
        epoch_width=512,
        epoch_snapshots=(0, 1, 2, 4, 8, 15, 30),
        depth_width=512,
        bezier_width=512,
        n_pretrain=16000,
        pretrain_epochs=(0, 6, 60),
    )

    n_train: int = param(4000, count())
    n_test: int = param(1000, count())
    depth: int = param(3, count())
    widths: tuple[int, ...] = param(
        (32, 64, 128, 256, 512), tuple_of(count(), min_len=2, increasing="weak")
    )
    alphas: int = param(25, count())
    max_iter: int = param(100, count())
    recipe: Recipe = param(
        constraint=InstanceOf(Recipe),
        factory=lambda: Recipe(lr=0.1, epochs=30, warmup=0.2),
    )
    spawn_width: int = param(128, count())
    spawn_fractions: tuple[float, ...] = param(
        (0.0, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3), tuple_of(fraction("left"))
    )
    spawn_pairs: int = param(2, count())
    spawn_recipe: Recipe = param(
        constraint=InstanceOf(Recipe),
        factory=lambda: Recipe(lr=0.2, epochs=30, warmup=0.0),
    )
    ctl_width: int = param(256, count())
    probe_recipe: Recipe = param(
        constraint=InstanceOf(Recipe),
        factory=lambda: Recipe(lr=0.1, epochs=30, warmup=0.0),
    )
    ft_recipe: Recipe = param(
        constraint=InstanceOf(Recipe),
        factory=lambda: Recipe(lr=0.05, epochs=10, warmup=0.0),
    )
    lambdas: tuple[float, ...] = param(
        tuple(round(0.1 * i, 1) for i in range(16)), tuple_of(Interval(float))
    )
    n_pretrain: int = param(4000, count())
    epoch_width: int = param(256, count())
    epoch_snapshots: tuple[float, ...] = param(
        (0, 1, 2, 4, 8, 15), tuple_of(Interval(float, 0, None))
    )
    depths: tuple[int, ...] = param((1, 2, 4, 6), tuple_of(count()))
    depth_width: int = param(128, count())
    bezier_width: int = param(128, count())
    bezier_recipe: Recipe = param(
        constraint=InstanceOf(Recipe),
        factory=lambda: Recipe(lr=0.1, epochs=60, warmup=0.0),
    )
    pretrain_epochs: tuple[float, ...] = param(
        (0, 3, 30),
        tuple_of(Interval(float, 0, None), min_len=2, increasing="strict"),
    )
    ft_runs: int = param(3, count(2))


def _seeds(seed: int, tag: int, k: int) -> list[int]:
    """``k`` distinct seeds for experiment part ``tag`` under base ``seed``."""
    return [1_000_003 * int(seed) + 1_000 * tag + i for i in range(k)]


@boundary(
    x=INPUTS,
    y=LABELS,
    seed=EXPERIMENT_SEED,
    snapshots=InstanceOf(dict, optional=True),
    twin=InstanceOf(dict, optional=True),
)
def train_pairs(
    cfg: ConnectivityConfig,
    x: torch.Tensor,
    y: torch.Tensor,
    seed: int = 0,
    snapshots: dict | None = None,
    twin: dict | None = None,
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
        model = BatchedMLP.init(
            init, x.shape[-1], int(w), cfg.depth, C, device=x.device
        )
        snap = (
            [int(e * per_epoch) for e in cfg.epoch_snapshots]
            if (snapshots is not None and int(w) == cfg.epoch_width)
            else []
        )
        order = [10_000 + int(v) for v in s] + (
            [20_000 + int(s[0])] if extra else []
        )
        got = fit(model, x, y, cfg.recipe, seeds=order, snapshot_steps=snap)
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


@boundary(
    x=INPUTS,
    y=LABELS,
    x_test=INPUTS,
    y_test=LABELS,
    alphas=count(2),
    max_iter=count(),
    seed=SEED,
)
def align(
    a: MLP,
    b: MLP,
    x: torch.Tensor,
    y: torch.Tensor,
    x_test: torch.Tensor,
    y_test: torch.Tensor,
    alphas: int = 25,
    max_iter: int = 100,
    seed: int = 0,
) -> Alignment:
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
    return Alignment(
        a,
        b,
        bm,
        perms,
        evaluate_path(a, b, x_test, y_test, alphas),
        evaluate_path(a, bm, x_test, y_test, alphas),
        evaluate_path(a, b, x, y, alphas),
        evaluate_path(a, bm, x, y, alphas),
    )


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
    error_barrier: (
        np.ndarray
    )  # (len(steps), pairs), in accuracy points (0-100), on the test set
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


@boundary(
    x=INPUTS,
    y=LABELS,
    x_test=INPUTS,
    y_test=LABELS,
    seed=EXPERIMENT_SEED,
    unshared=InstanceOf(bool),
)
def spawn_experiment(
    cfg: ConnectivityConfig,
    x: torch.Tensor,
    y: torch.Tensor,
    x_test: torch.Tensor,
    y_test: torch.Tensor,
    seed: int = 0,
    recipe: Recipe | None = None,
    control: bool = True,
    unshared: bool = False,
) -> Spawning:
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
        raise ValueError(
            f"x_test must have x's columns ({x.shape[1]}) and dtype ({x.dtype}), "
            f"got shape {tuple(x_test.shape)} and dtype {x_test.dtype}"
        )
    check_labels("y_test", y_test, C, n=len(x_test))
    recipe = recipe or cfg.spawn_recipe
    total = recipe.steps(x.shape[0])
    steps = sorted({int(round(f * total)) for f in cfg.spawn_fractions})
    parent = BatchedMLP.init(
        _seeds(seed, 30, 1),
        x.shape[1],
        cfg.spawn_width,
        cfg.depth,
        C,
        device=x.device,
    )
    snaps = fit(
        parent,
        x,
        y,
        recipe,
        seeds=_seeds(seed, 31, 1),
        stop_step=max(steps),
        snapshot_steps=steps,
    )
    per = 2 * cfg.spawn_pairs
    nets = [snaps[k][0] for k in steps for _ in range(per)]
    seeds = _seeds(seed, 32, per * len(steps))
    starts = [k for k in steps for _ in range(per)]
    if control:
        nets += [
            make_mlp(s, x.shape[1], cfg.spawn_width, cfg.depth, C).to(x.device)
            for s in _seeds(seed, 33, 2)
        ]
        seeds += _seeds(seed, 34, 2)
        starts += [0, 0]
    kids = stack(nets)
    fit(kids, x, y, recipe, seeds=seeds, start_steps=starts)
    kids = members(kids)
    children, err, loss = {}, [], []
    for i, k in enumerate(steps):
        pairs = [
            (kids[per * i + 2 * j], kids[per * i + 2 * j + 1])
            for j in range(cfg.spawn_pairs)
        ]
        children[k] = pairs
        paths = [evaluate_path(a, b, x_test, y_test, cfg.alphas) for a, b in pairs]
        err.append([100 * p.error_barrier_mean for p in paths])
        loss.append([p.loss_barrier for p in paths])
    ind, ind_err = None, float("nan")
    if control:
        ind = (kids[-2], kids[-1])
        ind_err = (
            100 * evaluate_path(*ind, x_test, y_test, cfg.alphas).error_barrier_mean
        )
    uns = None
    if unshared:
        k = steps[-1]
        other = BatchedMLP.init(
            _seeds(seed, 35, 1),
            x.shape[1],
            cfg.spawn_width,
            cfg.depth,
            C,
            device=x.device,
        )
        osnaps = fit(
            other,
            x,
            y,
            recipe,
            seeds=_seeds(seed, 36, 1),
            stop_step=k,
            snapshot_steps=[k],
        )
        okids = stack([osnaps[k][0] for _ in range(cfg.spawn_pairs)])
        fit(
            okids,
            x,
            y,
            recipe,
            seeds=_seeds(seed, 37, cfg.spawn_pairs),
            start_steps=[k] * cfg.spawn_pairs,
        )
        okids = members(okids)
        uns = np.array(
            [
                100
                * evaluate_path(
                    children[k][j][0], okids[j], x_test, y_test, cfg.alphas
                ).error_barrier_mean
                for j in range(cfg.spawn_pairs)
            ]
        )
    return Spawning(
        steps,
        [k / total for k in steps],
        total,
        children,
        np.array(err),
        np.array(loss),
        ind,
        ind_err,
        uns,
    )


@dataclass
class SweepPoint:
    """Naive and weight-matched barriers of one pair (on the training signals)."""

    label: float
    naive: Path
    matched: Path


@boundary(
    snapshots=InstanceOf(dict),
    steps_per_epoch=count(),
    x=INPUTS,
    y=LABELS,
    alphas=count(2),
    max_iter=count(),
    seed=SEED,
)
def barrier_vs_epoch(
    snapshots: dict[int, list[MLP]],
    steps_per_epoch: int,
    x: torch.Tensor,
    y: torch.Tensor,
    alphas: int = 25,
    max_iter: int = 100,
    seed: int = 0,
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
            raise ValueError(
                f"snapshots[{k}] must be a list of the two runs' networks, got "
                f"{nets!r:.80}"
            )
        for i in (0, 1):
            _check_mlp(f"snapshots[{k}][{i}]", nets[i])
        _check_same_shape(
            nets[0], nets[1], names=(f"snapshots[{k}][0]", f"snapshots[{k}][1]")
        )
        _check_data(nets[0], x, y)
    out = []
    for k in sorted(snapshots):
        a, b = snapshots[k][:2]
        bm = permute(b, weight_matching(a, b, max_iter=max_iter, seed=seed))
        out.append(
            SweepPoint(
                k / steps_per_epoch,
                evaluate_path(a, b, x, y, alphas),
                evaluate_path(a, bm, x, y, alphas),
            )
        )
    return out


@boundary(x=INPUTS, y=LABELS, seed=EXPERIMENT_SEED)
def depth_sweep(
    cfg: ConnectivityConfig, x: torch.Tensor, y: torch.Tensor, seed: int = 0
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
        a, b = train_nets(
            _seeds(seed, 50 + j, 2), x, y, cfg.depth_width, int(dep), C, cfg.recipe
        )
        bm = permute(b, weight_matching(a, b, max_iter=cfg.max_iter, seed=seed))
        out.append(
            SweepPoint(
                int(dep),
                evaluate_path(a, b, x, y, cfg.alphas),
                evaluate_path(a, bm, x, y, cfg.alphas),
            )
        )
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
    probes: list[MLP]  # pretrained body + linear-probe head, per task
    finetuned: list[list[MLP]]  # finetuned[t] = two fine-tuning runs of task t
    init: MLP  # the control's shared random initialization
    scratch: list[
        MLP
    ]  # control: one model per task, both from ``init``, no pretraining
    acc_pre: list[float]
    acc_ft: list[list[float]]
    acc_scratch: list[float]
    acc_init: list[
        float
    ]  # accuracy of ``init``'s body with each scratch model's head
    ctl: list[float]  # per hidden layer, fine-tuned task-0 vs task-1 models
    ctl_base: list[
        float
    ]  # per hidden layer, 1 - cos of their own features (baseline)
    ctl_scratch: list[float]  # the same for the control pair
    ctl_scratch_base: list[float]
    avg_acc: list[float]  # per task: weight average of the two runs
    ens_acc: list[float]  # per task: logit ensemble of the two runs
    agreement: list[float]  # per task: agreement(weight average, ensemble)
    single_agreement: list[float]  # per task: best agreement(single run, ensemble)
    lambdas: np.ndarray
    arith_acc: (
        np.ndarray
    )  # (len(lambdas), 2) test accuracy of the merged model per task
    arith_train_acc: np.ndarray
    best_lambda: float
    scratch_arith_acc: (
        np.ndarray
    )  # the same task addition from ``init`` with the control's vectors
    scratch_best_lambda: float
    scratch_arith_train_acc: np.ndarray = None
    train_ends: dict = (
        None  # training accuracy of "pre", "ft", "init", "scratch" per task
    )
    #: the same task addition from the sweep's shuffled-label body (its probes and first runs);
    #: ``train_ends`` then also holds its "shuf_pre" and "shuf_ft"
    shuffled_arith_train_acc: np.ndarray | None = None
    shuffled_best_lambda: float = float("nan")

    @staticmethod
    def _gain(acc, lam, best, start, end) -> list[float]:
        i = int(np.argmin(np.abs(lam - best)))
        return [
            float((acc[i, t] - start[t]) / (end[t] - start[t]))
            if end[t] != start[t]
            else float("nan")
            for t in (0, 1)
        ]

    @property
    def gain_recovered(self) -> list[float]:
        """Per task: (merged - pretrained) / (fine-tuned - pretrained) test accuracy, at best_lambda."""
        return self._gain(
            self.arith_acc,
            self.lambdas,
            self.best_lambda,
            self.acc_pre,
            [a[0] for a in self.acc_ft],
        )

    @property
    def train_gain_recovered(self) -> list[float]:
        """Per task, on the training signals: (merged - pretrained) / (fine-tuned - pretrained)
        at best_lambda (the gains are large there, so the ratio is stable; on the test signals
        a fine-tuning gain of a few points makes it noisy)."""
        e = self.train_ends
        return self._gain(
            self.arith_train_acc, self.lambdas, self.best_lambda, e["pre"], e["ft"]
        )

    @property
    def scratch_train_gain_recovered(self) -> list[float]:
        """The same on the training signals for the control (from ``init`` to the scratch models)."""
        e = self.train_ends
        return self._gain(
            self.scratch_arith_train_acc,
            self.lambdas,
            self.scratch_best_lambda,
            e["init"],
            e["scratch"],
        )

    @property
    def shuffled_train_gain_recovered(self) -> list[float]:
        """The same on the training signals for the shuffled-label body (nan without it)."""
        if self.shuffled_arith_train_acc is None:
            return [float("nan"), float("nan")]
        e = self.train_ends
        return self._gain(
            self.shuffled_arith_train_acc,
            self.lambdas,
            self.shuffled_best_lambda,
            e["shuf_pre"],
            e["shuf_ft"],
        )

    @property
    def scratch_gain_recovered(self) -> list[float]:
        """The same for the control: (merged - init) / (scratch - init), at its own best lambda."""
        return self._gain(
            self.scratch_arith_acc,
            self.lambdas,
            self.scratch_best_lambda,
            self.acc_init,
            self.acc_scratch,
        )


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
    lo = [
        accuracy(
            with_head(base, ends[t].layers[-1].weight, ends[t].layers[-1].bias),
            *tr[t],
        )
        for t in (0, 1)
    ]
    hi = [accuracy(ends[t], *tr[t]) for t in (0, 1)]
    norm = np.stack(
        [(acc_tr[:, t] - lo[t]) / max(1e-9, hi[t] - lo[t]) for t in (0, 1)], 1
    )
    return acc_te, acc_tr, float(lam[int(np.argmax(norm.min(1)))]), lo, hi


def _ctl_data(x, y, x_test, y_test, x_pre, y_pre):
    """Check the data of a cross-task experiment; the pretraining set (default: ``x`` with the
    pretraining labels of :func:`task_labels`) and its number of classes."""
    d = x.shape[1]
    check_labels("y", y, 10, n=len(x))  # MNIST-1D's digits (see task_labels)
    if x_test.shape[1] != d or x_test.dtype != x.dtype:
        raise ValueError(
            f"x_test must have x's columns ({d}) and dtype ({x.dtype}), got shape "
            f"{tuple(x_test.shape)} and dtype {x_test.dtype}"
        )
    check_labels("y_test", y_test, 10, n=len(x_test))
    if (x_pre is None) != (y_pre is None):
        raise ValueError(
            "x_pre and y_pre must be given together (or both left None)"
        )
    if x_pre is None:
        y_pre = task_labels(y, "pretrain")
        return x, y_pre, int(y_pre.max()) + 1
    if x_pre.shape[1] != d or x_pre.dtype != x.dtype:
        raise ValueError(
            f"x_pre must have x's columns ({d}) and dtype ({x.dtype}), got "
            f"shape {tuple(x_pre.shape)} and dtype {x_pre.dtype}"
        )
    return x_pre, y_pre, _check_train_labels("y_pre", y_pre, len(x_pre))


@boundary(
    x=INPUTS,
    y=LABELS,
    x_test=INPUTS,
    y_test=LABELS,
    seed=EXPERIMENT_SEED,
    x_pre=Tensor("float", 2, optional=True),
    y_pre=Tensor("int", 1, optional=True),
    sweep=None,
)  # sweep is checked below
def cross_task_experiment(
    cfg: ConnectivityConfig,
    x: torch.Tensor,
    y: torch.Tensor,
    x_test: torch.Tensor,
    y_test: torch.Tensor,
    seed: int = 0,
    x_pre: torch.Tensor | None = None,
    y_pre: torch.Tensor | None = None,
    sweep: "PretrainingSweep | None" = None,
) -> CrossTask:
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
        raise TypeError(
            f"sweep must be a PretrainingSweep or None, got {type(sweep).__name__}"
        )
    x_pre, y_pre, n_pre_classes = _ctl_data(x, y, x_test, y_test, x_pre, y_pre)
    tr = [(x, task_labels(y, t)) for t in (0, 1)]
    te = [(x_test, task_labels(y_test, t)) for t in (0, 1)]
    X, Y = x, torch.stack([tr[0][1], tr[1][1]])
    if (
        sweep is not None
    ):  # its fully pretrained arm: the same pretraining, probes, fine-tunings
        if (
            sweep.pretrained is None
            or sweep.pretrained.layers[0].out_features != width
        ):
            raise ValueError(
                f"sweep must come from pretraining_sweep with ctl_width {width}"
            )
        pre, probes = sweep.pretrained, list(sweep.probes)
        ft = [list(sweep.finetuned[t][:2]) for t in (0, 1)]
    else:
        pre = BatchedMLP.init(
            _seeds(seed, 40, 1), d, width, cfg.depth, n_pre_classes, device=x.device
        )
        fit(pre, x_pre, y_pre, cfg.spawn_recipe, seeds=_seeds(seed, 41, 1))
        pre = pre.member(0)
        heads = [
            make_mlp(s, d, width, cfg.depth, 5).to(x.device)
            for s in _seeds(seed, 42, 2)
        ]
        probes = stack(
            [with_head(pre, h.layers[-1].weight, h.layers[-1].bias) for h in heads]
        )
        fit(
            probes,
            X,
            Y,
            cfg.probe_recipe,
            seeds=_seeds(seed, 43, 2),
            only_last_layer=True,
        )
        probes = members(probes)
        ft = stack([probes[0], probes[0], probes[1], probes[1]])
        fit(
            ft,
            X,
            Y[[0, 0, 1, 1]],
            cfg.ft_recipe,
            seeds=_seeds(seed, 44, 4),
            freeze_last_layer=True,
        )
        ft = members(ft)
        ft = [ft[0:2], ft[2:4]]
    if (
        sweep is not None and sweep.start is not None
    ):  # budget-matched: arm 0 of the sweep
        init, sc = sweep.start, [sweep.start_finetuned[t][0] for t in (0, 1)]
    else:
        init = make_mlp(_seeds(seed, 45, 1)[0], d, width, cfg.depth, 5).to(x.device)
        sc = stack([init, init])
        fit(sc, X, Y, cfg.spawn_recipe, seeds=_seeds(seed, 46, 2))
        sc = members(sc)

    acc_pre = [accuracy(probes[t], *te[t]) for t in (0, 1)]
    acc_ft = [[accuracy(m, *te[t]) for m in ft[t]] for t in (0, 1)]
    acc_sc = [accuracy(sc[t], *te[t]) for t in (0, 1)]
    acc_init = [
        accuracy(
            with_head(init, sc[t].layers[-1].weight, sc[t].layers[-1].bias), *te[t]
        )
        for t in (0, 1)
    ]
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
            single.append(
                max(float((r.argmax(-1) == le).float().mean()) for r in runs)
            )
    lam = np.asarray(cfg.lambdas, dtype=float)
    acc_te, acc_tr, best, pre_tr, ft_tr = _task_arithmetic(
        pre, [ft[0][0], ft[1][0]], lam, tr, te
    )
    sc_te, sc_tr, sc_best, init_tr, sc_end_tr = _task_arithmetic(
        init, sc, lam, tr, te
    )
    ends = {"pre": pre_tr, "ft": ft_tr, "init": init_tr, "scratch": sc_end_tr}
    sh_tr, sh_best = None, float("nan")
    if (
        sweep is not None and sweep.shuffled_body is not None
    ):  # the shuffled-label body's arm
        sh_ends = [sweep.shuffled_finetuned[t][0] for t in (0, 1)]
        _, sh_tr, sh_best, ends["shuf_pre"], ends["shuf_ft"] = _task_arithmetic(
            sweep.shuffled_body, sh_ends, lam, tr, te
        )
    return CrossTask(
        pre,
        probes,
        ft,
        init,
        sc,
        acc_pre,
        acc_ft,
        acc_sc,
        acc_init,
        ctl,
        ctl_base,
        ctl_sc,
        ctl_sc_base,
        avg_acc,
        ens_acc,
        agree,
        single,
        lam,
        acc_te,
        acc_tr,
        best,
        sc_te,
        sc_best,
        sc_tr,
        ends,
        sh_tr,
        sh_best,
    )


@dataclass
class PretrainingSweep(Result):
    """Cross-task linearity and weight averaging at one fine-tuning budget, over pretraining lengths.

    Every arm fine-tunes ``runs`` models per task with the same recipe (equal learning rate times
    epochs) from a starting body: a snapshot of one pretraining run after ``epochs[i]`` epochs
    (``0``: its random initialization), a *second random initialization* (``null_*``: a
    no-pretraining arm that shares nothing with the first, the spread between two arms without
    pretraining), and a *second, independently pretrained* model (for the averaging null). The
    untrained body is fine-tuned once more at half the peak learning rate (``matched_*``): it
    then moves about as far as the fully pretrained arm does in L2 distance; the second random
    initialization too (``matched_null_*``, the null of that comparison). The trained body's
    hidden weights are larger than the untrained body's, so relative to its weights the
    half-rate arm still moves further. The ``scale_*`` arm removes that: it fine-tunes, at half
    the peak rate, the fully pretrained body with its hidden weights and biases shuffled within
    each tensor (its scale and each tensor's values, in random places), and the second
    pretrained model shuffled the same way (``scale_null_*``, the null of a comparison with
    it).
    """

    epochs: list[float]
    ctl: (
        np.ndarray
    )  # (lengths, runs, layers): task-0 run r vs task-1 run r, at alpha 1/2
    ctl_base: (
        np.ndarray
    )  # (lengths, runs, layers): their endpoint baseline 1 - cos(f_0, f_1)
    null_ctl: (
        np.ndarray
    )  # (runs, layers): the same from a second random initialization
    null_ctl_base: np.ndarray
    displacement: (
        np.ndarray
    )  # (lengths, 2, runs): ||theta_ft - theta_start|| over the hidden layers
    acc: np.ndarray  # (lengths, 2, runs): test accuracy of the fine-tuned models
    acc_probe: (
        np.ndarray
    )  # (lengths, 2): test accuracy of the starting body with its probe
    disagree: (
        np.ndarray
    )  # (lengths, 2, pairs): soup-vs-ensemble disagreement ratio per arm
    unshared_disagree: (
        np.ndarray
    )  # (2, runs): the same for runs from two different pretrained models
    pretrained: MLP | None = (
        None  # the fully pretrained model (its pretraining head)
    )
    probes: list | None = None  # its probes, one per task
    finetuned: list | None = (
        None  # finetuned[t]: its ``runs`` fine-tunings of task t
    )
    start: MLP | None = (
        None  # arm 0's body: the pretraining run's random initialization
    )
    start_finetuned: list | None = (
        None  # start_finetuned[t]: arm 0's fine-tunings of task t
    )
    shuffled_ctl: np.ndarray | None = (
        None  # (runs, layers): from a shuffled-label body
    )
    shuffled_ctl_base: np.ndarray | None = None
    shuffled_disagree: np.ndarray | None = (
        None  # (2, pairs): its disagreement ratios
    )
    shuffled_displacement: np.ndarray | None = (
        None  # (2, runs): how far its runs moved
    )
    shuffled_acc: np.ndarray | None = None  # (2, runs): their test accuracy
    shuffled_body: MLP | None = (
        None  # the shuffled-label body (its pretraining head)
    )
    shuffled_finetuned: list | None = (
        None  # shuffled_finetuned[t]: its runs of task t
    )
    matched_ctl: np.ndarray | None = (
        None  # (runs, layers): the untrained body fine-tuned at half the peak lr
    )
    matched_ctl_base: np.ndarray | None = None
    matched_displacement: np.ndarray | None = (
        None  # (2, runs): how far its runs moved
    )
    matched_acc: np.ndarray | None = None  # (2, runs): their test accuracy
    matched_disagree: np.ndarray | None = (
        None  # (2, pairs): their disagreement ratios
    )
    #: (runs, layers): the second random initialization at half the peak lr (the null of the
    #: comparison with ``matched_*``: no pretraining on either side)
    matched_null_ctl: np.ndarray | None = None
    matched_null_ctl_base: np.ndarray | None = None
    matched_null_displacement: np.ndarray | None = None  # (2, runs)
    #: (runs, layers): the fully pretrained body with its hidden weights shuffled within each
    #: tensor (its scale and each tensor's values, in random places), fine-tuned at half the
    #: peak lr
    scale_ctl: np.ndarray | None = None
    scale_ctl_base: np.ndarray | None = None
    scale_displacement: np.ndarray | None = None  # (2, runs)
    scale_acc: np.ndarray | None = None  # (2, runs)
    scale_hidden_norm: float = float("nan")
    #: (runs, layers): the second pretrained model shuffled the same way (its null)
    scale_null_ctl: np.ndarray | None = None
    scale_null_ctl_base: np.ndarray | None = None
    scale_null_displacement: np.ndarray | None = None  # (2, runs)
    #: (lengths,): L2 norm of each starting body's hidden layers (what a task vector moves)
    hidden_norm: np.ndarray | None = None
    null_hidden_norm: float = float(
        "nan"
    )  # the same for the second random initialization
    shuffled_hidden_norm: float = float("nan")  # and for the shuffled-label body

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

    @property
    def matched_ctl_ratio(self) -> np.ndarray:
        """The same for the untrained body at half the peak learning rate, (runs, layers)."""
        return self.matched_ctl / np.maximum(self.matched_ctl_base, 1e-12)

    @property
    def matched_null_ctl_ratio(self) -> np.ndarray:
        """The same for the second random initialization at half the peak lr, (runs, layers)."""
        return self.matched_null_ctl / np.maximum(self.matched_null_ctl_base, 1e-12)

    @property
    def scale_ctl_ratio(self) -> np.ndarray:
        """The same for the shuffled-weights body at half the peak lr, (runs, layers)."""
        return self.scale_ctl / np.maximum(self.scale_ctl_base, 1e-12)

    @property
    def scale_null_ctl_ratio(self) -> np.ndarray:
        """The same for the shuffled second pretrained model, (runs, layers)."""
        return self.scale_null_ctl / np.maximum(self.scale_null_ctl_base, 1e-12)


@boundary(m1=InstanceOf(MLP), m2=InstanceOf(MLP), x=INPUTS)
@torch.no_grad()
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
    ens = (m1(x) + m2(x)) / 2
    le = ens.argmax(-1)
    soup = (average([m1, m2])(x).argmax(-1) == le).float().mean()
    single = max(float((m(x).argmax(-1) == le).float().mean()) for m in (m1, m2))
    return float((1 - soup) / max(1 - single, 1 / len(x)))


def _displacement(start: MLP, end: MLP) -> float:
    return float(torch.sqrt(sum((t**2).sum() for t in task_vector(start, end))))


@torch.no_grad()
def _hidden_norm(m: MLP) -> float:
    """L2 norm of the hidden layers' weights and biases (the part a task vector moves)."""
    return float(
        torch.sqrt(sum((p**2).sum() for l in m.layers[:-1] for p in l.parameters()))
    )


@torch.no_grad()
def _shuffled_weights(m: MLP, seed: int) -> MLP:
    """A copy of ``m`` whose hidden layers' weights and biases are each shuffled within their
    tensor: the same scale and distribution of values per tensor, in random places."""
    out = copy.deepcopy(m)
    g = torch.Generator().manual_seed(seed)
    for layer in out.layers[:-1]:
        for p in layer.parameters():
            flat = p.detach().reshape(-1)
            idx = torch.randperm(flat.numel(), generator=g).to(flat.device)
            p.copy_(flat[idx].reshape(p.shape))
    return out


def _pair_ctl(ms: Sequence[MLP], R: int, x_test) -> tuple[np.ndarray, np.ndarray]:
    """CTL dissimilarity of ``ms[r]`` (task 0) against ``ms[R + r]`` (task 1) and its baseline,
    (runs, hidden layers) each."""
    c = [llfc_dissimilarity(ms[r], ms[R + r], x_test)[:-1] for r in range(R)]
    e = [endpoint_dissimilarity(ms[r], ms[R + r], x_test)[:-1] for r in range(R)]
    return np.array(c), np.array(e)


def _moves(starts: Sequence[MLP], ms: Sequence[MLP], R: int) -> np.ndarray:
    """(2, runs): how far ``ms[t * R + r]`` moved from ``starts[t]``."""
    return np.array(
        [[_displacement(starts[t], ms[t * R + r]) for r in range(R)] for t in (0, 1)]
    )


@boundary(
    x=INPUTS,
    y=LABELS,
    x_test=INPUTS,
    y_test=LABELS,
    seed=EXPERIMENT_SEED,
    x_pre=Tensor("float", 2, optional=True),
    y_pre=Tensor("int", 1, optional=True),
)
def pretraining_sweep(
    cfg: ConnectivityConfig,
    x: torch.Tensor,
    y: torch.Tensor,
    x_test: torch.Tensor,
    y_test: torch.Tensor,
    seed: int = 0,
    x_pre: torch.Tensor | None = None,
    y_pre: torch.Tensor | None = None,
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
        raise ValueError(
            f"cfg.pretrain_epochs must end at the pretraining run's length "
            f"({rec.epochs} epochs), got {cfg.pretrain_epochs}"
        )
    pre = BatchedMLP.init(
        _seeds(seed, 40, 1) + _seeds(seed, 60, 1) + _seeds(seed, 65, 1),
        d,
        cfg.ctl_width,
        cfg.depth,
        k_pre,
        device=x.device,
    )
    g = torch.Generator().manual_seed(_seeds(seed, 66, 1)[0])
    y_shuf = y_pre[torch.randperm(len(y_pre), generator=g).to(y_pre.device)]
    snaps = fit(
        pre,
        x_pre,
        torch.stack([y_pre, y_pre, y_shuf]),
        rec,
        seeds=_seeds(seed, 41, 1) + _seeds(seed, 61, 1) + _seeds(seed, 67, 1),
        snapshot_steps=[k for k in steps if k < total],
    )
    full = members(pre)
    L = len(steps)
    bodies = [snaps[k][0] if k < total else full[0] for k in steps]
    bodies += [
        make_mlp(_seeds(seed, 62, 1)[0], d, cfg.ctl_width, cfg.depth, k_pre).to(
            x.device
        ),
        full[1],
        full[2],
    ]  # L: second random init; L + 1: second pretrained model;
    # L + 2: pretrained on shuffled labels (the same budget, nothing to learn from the labels)
    heads = [
        make_mlp(s, d, cfg.ctl_width, cfg.depth, 5).to(x.device)
        for s in _seeds(seed, 42, 2)
    ]
    labels = torch.stack([task_labels(y, t) for t in (0, 1)])
    probes = stack(
        [
            with_head(b, h.layers[-1].weight, h.layers[-1].bias)
            for b in bodies
            for h in heads
        ]
    )
    fit(
        probes,
        x,
        labels.repeat(len(bodies), 1),
        cfg.probe_recipe,
        seeds=_seeds(seed, 43, 2 * len(bodies)),
        only_last_layer=True,
    )
    probes = members(probes)
    ft = stack([p for p in probes for _ in range(R)])
    fit(
        ft,
        x,
        labels.repeat_interleave(R, 0).repeat(len(bodies), 1),
        cfg.ft_recipe,
        seeds=_seeds(seed, 64, 2 * R * len(bodies)),
        freeze_last_layer=True,
    )
    ft = members(ft)
    net = lambda b, t, r: ft[(2 * b + t) * R + r]  # noqa: E731
    te = [task_labels(y_test, t) for t in (0, 1)]

    def ctl_of(b):
        c = [
            llfc_dissimilarity(net(b, 0, r), net(b, 1, r), x_test)[:-1]
            for r in range(R)
        ]
        e = [
            endpoint_dissimilarity(net(b, 0, r), net(b, 1, r), x_test)[:-1]
            for r in range(R)
        ]
        return np.array(c), np.array(e)

    ctl = [ctl_of(b) for b in range(L + 1)] + [ctl_of(L + 2)]
    # half the peak learning rate (same probes and minibatch orders as at the full rate): the
    # untrained body (it moves about as far as the fully pretrained arm, in L2 distance) and
    # the second random initialization (the null of that comparison)
    s64 = _seeds(seed, 64, 2 * R * len(bodies))
    half = stack(
        [probes[2 * b + t] for b in (0, L) for t in (0, 1) for _ in range(R)]
    )
    fit(
        half,
        x,
        labels.repeat_interleave(R, 0).repeat(2, 1),
        replace(cfg.ft_recipe, lr=cfg.ft_recipe.lr / 2),
        seeds=s64[: 2 * R] + s64[2 * R * L : 2 * R * (L + 1)],
        freeze_last_layer=True,
    )
    half = members(half)
    m_ctl, m_base = _pair_ctl(half[: 2 * R], R, x_test)
    mn_ctl, mn_base = _pair_ctl(half[2 * R :], R, x_test)
    m_disp = _moves([probes[0], probes[1]], half[: 2 * R], R)
    mn_disp = _moves([probes[2 * L], probes[2 * L + 1]], half[2 * R :], R)
    # the fully pretrained body with its hidden weights shuffled within each tensor (its
    # scale and values, in random places), and the second pretrained model shuffled the
    # same way (the null of a comparison with it): own probes, then half the rate, the half
    # arms' orders
    norms = [_hidden_norm(b) for b in bodies]
    shuf = [
        _shuffled_weights(bodies[b], s)
        for b, s in zip((L - 1, L + 1), _seeds(seed, 68, 2))
    ]
    sprobes = stack(
        [
            with_head(b, h.layers[-1].weight, h.layers[-1].bias)
            for b in shuf
            for h in heads
        ]
    )
    fit(
        sprobes,
        x,
        labels.repeat(2, 1),
        cfg.probe_recipe,
        seeds=_seeds(seed, 69, 4),
        only_last_layer=True,
    )
    sprobes = members(sprobes)
    sc = stack([p for p in sprobes for _ in range(R)])
    fit(
        sc,
        x,
        labels.repeat_interleave(R, 0).repeat(2, 1),
        replace(cfg.ft_recipe, lr=cfg.ft_recipe.lr / 2),
        seeds=s64[: 2 * R] + s64[2 * R * L : 2 * R * (L + 1)],
        freeze_last_layer=True,
    )
    sc, sc_null = members(sc)[: 2 * R], members(sc)[2 * R :]
    s_ctl, s_base = _pair_ctl(sc, R, x_test)
    sn_ctl, sn_base = _pair_ctl(sc_null, R, x_test)
    s_disp = _moves(sprobes[:2], sc, R)
    sn_disp = _moves(sprobes[2:], sc_null, R)
    te_acc = lambda ms: np.array(  # noqa: E731
        [[accuracy(ms[t * R + r], x_test, te[t]) for r in range(R)] for t in (0, 1)]
    )
    disp = np.array(
        [
            [
                [_displacement(probes[2 * b + t], net(b, t, r)) for r in range(R)]
                for t in (0, 1)
            ]
            for b in list(range(L)) + [L + 2]
        ]
    )
    acc = np.array(
        [
            [
                [accuracy(net(b, t, r), x_test, te[t]) for r in range(R)]
                for t in (0, 1)
            ]
            for b in list(range(L)) + [L + 2]
        ]
    )
    acc_probe = np.array(
        [
            [accuracy(probes[2 * b + t], x_test, te[t]) for t in (0, 1)]
            for b in range(L)
        ]
    )
    top = L - 1
    dis = np.array(
        [
            [
                [
                    disagreement_ratio(net(b, t, i), net(b, t, j), x_test)
                    for i in range(R)
                    for j in range(i + 1, R)
                ]
                for t in (0, 1)
            ]
            for b in list(range(L)) + [L + 2]
        ]
    )
    uns = np.array(
        [
            [
                disagreement_ratio(net(top, t, r), net(L + 1, t, r), x_test)
                for r in range(R)
            ]
            for t in (0, 1)
        ]
    )
    return PretrainingSweep(
        [float(e) for e in cfg.pretrain_epochs],
        np.array([c for c, _ in ctl[:L]]),
        np.array([e for _, e in ctl[:L]]),
        ctl[L][0],
        ctl[L][1],
        disp[:L],
        acc[:L],
        acc_probe,
        dis[:L],
        uns,
        full[0],
        [probes[2 * top + t] for t in (0, 1)],
        [[net(top, t, r) for r in range(R)] for t in (0, 1)],
        bodies[0],
        [[net(0, t, r) for r in range(R)] for t in (0, 1)],
        ctl[L + 1][0],
        ctl[L + 1][1],
        dis[L],
        disp[L],
        acc[L],
        full[2],
        [[net(L + 2, t, r) for r in range(R)] for t in (0, 1)],
        m_ctl,
        m_base,
        m_disp,
        matched_acc=te_acc(half[: 2 * R]),
        matched_disagree=np.array(
            [
                [
                    disagreement_ratio(half[t * R + i], half[t * R + j], x_test)
                    for i in range(R)
                    for j in range(i + 1, R)
                ]
                for t in (0, 1)
            ]
        ),
        matched_null_ctl=mn_ctl,
        matched_null_ctl_base=mn_base,
        matched_null_displacement=mn_disp,
        scale_ctl=s_ctl,
        scale_ctl_base=s_base,
        scale_displacement=s_disp,
        scale_acc=te_acc(sc),
        scale_hidden_norm=_hidden_norm(shuf[0]),
        scale_null_ctl=sn_ctl,
        scale_null_ctl_base=sn_base,
        scale_null_displacement=sn_disp,
        hidden_norm=np.array(norms[:L]),
        null_hidden_norm=norms[L],
        shuffled_hidden_norm=norms[L + 2],
    )


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

    return from_params(
        [noisy(w) for w in ws],
        None if bs is None else [noisy(v) for v in bs],
        model.act_name,
    )


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


@boundary(
    x=INPUTS,
    y=LABELS,
    seed=Interval(int, 0, 2**63 - 2),
    max_iter=count(),
    noise=nonnegative(),
)
@torch.no_grad()
def planted_permutation_check(
    model: MLP,
    x: torch.Tensor,
    y: torch.Tensor,
    seed: int = 0,
    max_iter: int = 100,
    noise: float = 0.0,
) -> dict:
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
    logit_diff = float(
        (copy.deepcopy(shuffled).double()(x64) - copy.deepcopy(model).double()(x64))
        .abs()
        .max()
    )
    if noise > 0:
        shuffled = add_noise(shuffled, noise, seed + 1)
    found = weight_matching(model, shuffled, max_iter=max_iter, seed=seed)
    aligned = permute(shuffled, found)
    path = evaluate_path(model, aligned, x, y, 11)
    unaligned = evaluate_path(model, shuffled, x, y, 11)
    ident = [np.arange(len(p)) for p in planted]
    return {
        "max_logit_diff": logit_diff,
        "recovered": perm_recovery(found, planted),
        "recovered_identity": perm_recovery(ident, planted),
        "barrier": float(path.loss_barrier),
        "unaligned_barrier": float(unaligned.loss_barrier),
        "path": path,
        "unaligned_path": unaligned,
    }


@boundary(x=INPUTS, alphas=_Numbers(0, 1))
def llfc_profile(
    a: MLP, b: MLP, x: torch.Tensor, alphas: Sequence[float]
) -> np.ndarray:
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
