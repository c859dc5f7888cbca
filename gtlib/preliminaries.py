"""The Preliminaries chapter: MNIST-1D, a linear baseline against an MLP, and batched ensembles.

Greydanus and Kobak (2024) report, on MNIST-1D's default 4000/1000 split, about 32% test accuracy
for logistic regression, 68% for an MLP and 94% for a CNN: a linear model cannot undo the random
translations, so the data set separates model classes that MNIST barely does.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import torch

from .checks import Interval, check_int, count, nonnegative, positive
from .config import Config, param
from .data import Dataset
from .models import BatchedMLP
from .train import TrainConfig, accuracy, train_ensemble, train_sequentially

__all__ = [
    "PrelimConfig",
    "ensemble_vs_loop",
    "sample_signals",
    "train_models",
]


@dataclass
class PrelimConfig(Config):
    """Sizes of the Preliminaries experiments.

    Sizes of the Preliminaries experiments (defaults: ``quick``, for a laptop; ``FULL``: the
    ``full`` preset's overrides, for a GPU: more seeds, epochs and ensemble members).

    Parameters
    ----------
    n_train : int, default 4000
        Training examples; an int >= 1.
    n_test : int, default 1000
        Test examples; an int >= 1.
    width : int, default 100
        Hidden width (the MNIST-1D README's MLP: 100); an int >= 1.
    depth : int, default 2
        Hidden layers; an int >= 0.
    seeds : int, default 3
        Independent runs of each model, trained as one batched ensemble; an int >= 1.
    epochs : int, default 60
        Training epochs; an int >= 1.
    batch_size : int, default 100
        Minibatch size; an int >= 1.
    lr : float, default 0.01
        AdamW learning rate; a finite number > 0.
    weight_decay : float, default 0.0
        AdamW weight decay; a finite number >= 0.
    ensemble_members : int, default 8
        Members of the batched-vs-loop comparison; an int >= 1.
    ensemble_steps : int, default 250
        Training steps of that comparison; an int >= 1.
    """

    FULL = dict(seeds=10, epochs=200, ensemble_members=32, ensemble_steps=1000)

    n_train: int = param(4000, count())
    n_test: int = param(1000, count())
    width: int = param(
        100, count()
    )  # the MNIST-1D README's MLP: two hidden layers of 100 units
    depth: int = param(2, count(0))
    seeds: int = param(
        3, count()
    )  # independent runs of each model, as one batched ensemble
    epochs: int = param(60, count())
    batch_size: int = param(100, count())
    lr: float = param(1e-2, positive())
    weight_decay: float = param(0.0, nonnegative())
    ensemble_members: int = param(8, count())  # for the batched-vs-loop comparison
    ensemble_steps: int = param(250, count())


_SEED = Interval(int, 0, 2**32 - 1)  # member seeds are seed * 1000 + i


def _check_run(ds, cfg, seed) -> int:
    if not isinstance(ds, Dataset):
        raise TypeError(f"ds must be a gtlib.data.Dataset, got {type(ds).__name__}")
    if not isinstance(cfg, PrelimConfig):
        raise TypeError(f"cfg must be a PrelimConfig, got {type(cfg).__name__}")
    return int(_SEED.check("seed", seed))


def train_models(
    ds: Dataset, cfg: PrelimConfig, depth: int, seed: int = 0
) -> tuple[BatchedMLP, dict]:
    """Train ``cfg.seeds`` MLPs of the given ``depth`` (0: linear) as one ensemble.

    AdamW, minibatches of ``cfg.batch_size``, ``cfg.epochs`` epochs; returns the
    trained stack and a dict with per-seed train and test accuracy.

    Parameters
    ----------
    ds : Dataset
        The dataset.
    cfg : PrelimConfig
        The sizes and the training recipe.
    depth : int
        Hidden layers of the MLP (0: a linear classifier).
    seed : int, default 0
        Seed of the first member.

    Returns
    -------
    tuple of (BatchedMLP, dict)
        The trained stack of ``cfg.seeds`` models, and a dict with each seed's train
        and test accuracy.
    """
    seed = _check_run(ds, cfg, seed)
    depth = check_int("depth", depth, minimum=0)
    seeds = [seed * 1000 + i for i in range(cfg.seeds)]
    model = BatchedMLP.init(
        seeds, ds.dim, cfg.width, depth, ds.num_classes, device=ds.x.device
    )
    tc = TrainConfig(
        optimizer="adamw",
        lr=cfg.lr,
        weight_decay=cfg.weight_decay,
        batch_size=cfg.batch_size,
        epochs=cfg.epochs,
        check_every=10**9,
    )
    hist = train_ensemble(model, ds.x, ds.y, tc, seeds=seeds)
    with torch.no_grad():
        out = {
            "train_acc": accuracy(model(ds.x), ds.y).cpu().numpy(),
            "test_acc": accuracy(model(ds.x_test), ds.y_test).cpu().numpy(),
            "history": hist,
        }
    return model, out


def ensemble_vs_loop(
    ds: Dataset, cfg: PrelimConfig, seed: int = 0, dtype: torch.dtype = torch.float64
) -> dict:
    """Train ``cfg.ensemble_members`` MLPs batched and one by one, from the same seeds.

    Both runs use the same initializations and the same minibatch order, so they compute the same
    algorithm; only the order of floating-point sums differs. In ``float64`` this leaves the
    test-set logits equal to about 1e-12. In ``float32``, a rounding difference occasionally flips
    the sign of a ReLU pre-activation near zero, which changes a gradient discretely, and training
    then amplifies the difference: the float32 comparison measures the chaos of training as much as
    the implementation.

    Returns the largest absolute difference between the two sets of test-set logits and the two
    wall-clock times (the batched one first).

    Parameters
    ----------
    ds : Dataset
        The dataset (MNIST-1D in the chapter).
    cfg : PrelimConfig
        The sizes (``ensemble_members``, ``ensemble_steps``, ``width``, ``depth``, ``lr``...).
    seed : int, default 0
        Seed of the first member; member ``e`` uses ``seed + e``.
    dtype : torch.dtype, default torch.float64
        The floating dtype both runs train in.

    Returns
    -------
    dict
        The largest absolute difference between the two runs' test-set logits and the wall-clock
        times of the two runs (see above).
    """
    seed = _check_run(ds, cfg, seed)
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(
            f"dtype must be torch.float32 or torch.float64, got {dtype!r}"
        )
    seeds = [seed * 1000 + i for i in range(cfg.ensemble_members)]
    tc = TrainConfig(
        optimizer="adamw",
        lr=cfg.lr,
        batch_size=cfg.batch_size,
        epochs=10**6,
        steps=cfg.ensemble_steps,
        check_every=10**9,
    )
    x, x_test = ds.x.to(dtype), ds.x_test.to(dtype)
    warm = BatchedMLP.init(
        seeds[:1], ds.dim, cfg.width, cfg.depth, ds.num_classes, device=x.device
    )
    train_ensemble(
        warm.to(dtype), x, ds.y, replace(tc, steps=2), seeds=seeds[:1]
    )  # one-off set-up
    t0 = time.perf_counter()
    batched = BatchedMLP.init(
        seeds, ds.dim, cfg.width, cfg.depth, ds.num_classes, device=x.device
    )
    train_ensemble(batched.to(dtype), x, ds.y, tc, seeds=seeds)
    t_batched = time.perf_counter() - t0
    t0 = time.perf_counter()
    models = train_sequentially(
        seeds, x, ds.y, tc, ds.dim, cfg.width, cfg.depth, ds.num_classes
    )
    t_loop = time.perf_counter() - t0
    with torch.no_grad():
        diff = (
            (batched(x_test) - torch.stack([m(x_test) for m in models]))
            .abs()
            .amax(dim=(1, 2))
        )
    return {
        "max_abs_diff": diff.max().item(),
        "per_member": diff.tolist(),
        "t_batched": t_batched,
        "t_loop": t_loop,
        "speedup": t_loop / t_batched,
        "members": len(seeds),
        "steps": cfg.ensemble_steps,
        "dtype": str(dtype).replace("torch.", ""),
    }


def sample_signals(
    corr_noise_scale: float = 0.25,
    iid_noise_scale: float = 2e-2,
    max_translation: int = 48,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """One MNIST-1D signal per digit, generated with the given transformation strengths.

    Uses the ``mnist1d`` package's own transform (pad, scale, translate, correlated and i.i.d.
    noise, shear, subsample). ``max_translation=0`` means no shift. Returns
    ``(signals (10, 40), labels (10,))``.

    Parameters
    ----------
    corr_noise_scale : float, default 0.25
        Scale of the correlated (smooth) noise.
    iid_noise_scale : float, default 0.02
        Scale of the independent per-position noise.
    max_translation : int, default 48
        Largest shift, in positions (0: no shift).
    seed : int, default 0
        Seed of the transformations.

    Returns
    -------
    tuple of numpy.ndarray
        ``(signals, labels)``: signals of shape (10, 40), one per digit, and their labels (10,).
    """
    from mnist1d.data import get_dataset_args, get_templates
    from mnist1d.transform import transform

    for name, v in (
        ("corr_noise_scale", corr_noise_scale),
        ("iid_noise_scale", iid_noise_scale),
    ):
        if (
            isinstance(v, bool)
            or not isinstance(v, (int, float, np.number))
            or not np.isfinite(v)
            or v < 0
        ):
            raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
    seed = int(_SEED.check("seed", seed))
    args = get_dataset_args()
    # the shift k is drawn from range(max_translation) and rolls the padded signal; a k of the
    # signal's padded length or more is no shift at all, so larger values only skew the draws
    longest = int(args.template_len + args.padding[-1])
    max_translation = check_int(
        "max_translation", max_translation, minimum=0, maximum=longest
    )
    args.corr_noise_scale, args.iid_noise_scale = corr_noise_scale, iid_noise_scale
    # mnist1d draws the shift k from range(max_translation): 1 already means "no shift", and 0
    # would make numpy's choice() fail, so both mean no shift here
    args.max_translation = max(1, int(max_translation))
    templates = get_templates()
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        xs = [
            transform(templates["x"][k], templates["t"], args)[0] for k in range(10)
        ]
    finally:
        np.random.set_state(state)
    return np.stack(xs), templates["y"].copy()
