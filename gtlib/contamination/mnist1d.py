"""Feature contamination, experiment 4: MNIST-1D with background coordinates."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..checks import (
    Boolean,
    Interval,
    Tensor,
    boundary,
    count,
    nonnegative,
    positive,
    tuple_of,
)
from ..config import Config, param
from .common import _device, _int, _RUN_SEED
from .data import orthogonal_shifts

__all__ = ["Mnist1dConfig", "run_mnist1d"]


@dataclass
class Mnist1dConfig(Config):
    """MNIST-1D signals with ``n_background`` appended label-independent coordinates.

    MNIST-1D signals (40 coordinates) with ``n_background`` appended ``U[0,1]`` coordinates
    drawn independently of the label; at test time the background is shifted by ``-1``.

    ``centred_mlp`` adds a control: the same MLP (same initialization and batch order) trained
    and tested with the background centred, ``U[-1/2, 1/2]``, and shifted alike;
    ``centred_linear`` does the same for the linear classifier. ``constant`` adds the
    constant-padding variant: the MLP and the linear classifier (same initializations and
    batches) trained and tested with every background coordinate equal to ``1/2`` (the mean of
    ``U[0,1]``, no variance), shifted alike.

    Parameters
    ----------
    n_train : int, default 4000
        Number of training examples; an int >= 1.
    n_test : int, default 2000
        Number of test examples; an int >= 1.
    n_background : int, default 40
        Appended background coordinates; an int >= 1.
    width : int, default 256
        Hidden width; an int >= 1.
    depth : int, default 2
        Number of hidden layers; an int >= 1.
    epochs : int, default 30
        Number of training epochs; an int >= 1.
    batch_size : int, default 128
        Minibatch size; an int >= 1.
    lr : float, default 0.001
        Learning rate; a finite number > 0.
    weight_decay : float, default 0.01
        Weight decay; a finite number >= 0.
    magnitudes : tuple[float, ...], default (0.0, 0.25, 0.5, 0.75, 1.0)
        Background shifts at test time; a tuple (at least 1 item) of items each a finite number.
    centred_mlp : bool, default False
        Whether to add the MLP trained and tested with a centred background (the control); a bool.
    centred_linear : bool, default False
        Whether to add the same control for the linear classifier; a bool.
    constant : bool, default False
        Whether to add the constant-padding variant; a bool.
    null_replicates : int, default 0
        Replicates of the linear classifier's comparison, each on its own background draw: the
        classifier on the uniform and on the centred background (same initialization and
        batches), and once more on the centred one from another initialization and batch
        order (the null's spread); an int in [0, 100].
    mlp_replicates : int, default 0
        Replicates of the MLP, each on its own background draw, tested under the shift
        along the mean and under equal-norm shifts orthogonal to it, each with a linear
        classifier trained and tested alike on the same draw; an int in [0, 100].
    direction_magnitude : float, default 0.5
        The magnitude ``m`` of the MLP replicates' shifts; a finite number > 0.
    """

    FULL = dict(width=1024, epochs=100)

    n_train: int = param(4000, count())
    n_test: int = param(2000, count())
    n_background: int = param(40, count())
    width: int = param(256, count())
    depth: int = param(2, count())
    epochs: int = param(30, count())
    batch_size: int = param(128, count())
    lr: float = param(1e-3, positive())
    weight_decay: float = param(1e-2, nonnegative())
    magnitudes: tuple[float, ...] = param(
        (0.0, 0.25, 0.5, 0.75, 1.0), tuple_of(Interval(float))
    )
    centred_mlp: bool = param(False, Boolean())
    centred_linear: bool = param(False, Boolean())
    constant: bool = param(False, Boolean())
    null_replicates: int = param(0, Interval(int, 0, 100))
    mlp_replicates: int = param(0, Interval(int, 0, 100))
    direction_magnitude: float = param(0.5, positive())


@boundary(x=Tensor("float", 2), n_background=count())
def append_background(
    x: torch.Tensor, n_background: int, generator: torch.Generator
) -> torch.Tensor:
    """``x`` with ``n_background`` extra ``U[0,1]`` columns drawn independently of everything else."""
    return torch.cat(
        [x, torch.rand(x.shape[0], n_background, generator=generator)], 1
    )


@boundary(x=Tensor("float", 2), n_background=count())
def shift_last(x: torch.Tensor, n_background: int, magnitude: float) -> torch.Tensor:
    """Subtract ``magnitude`` from the last ``n_background`` columns of ``x`` (the MNIST-1D shift)."""
    if n_background > x.shape[1]:
        raise ValueError(f"n_background must be <= {x.shape[1]}, got {n_background}")
    out = x.clone()
    out[:, -n_background:] -= float(magnitude)
    return out


@boundary(seed=_RUN_SEED)
def run_mnist1d(cfg: Mnist1dConfig, seed: int = 0, device=None) -> dict:
    """Train classifiers on MNIST-1D with background coordinates and shift the background.

    Train a ReLU MLP and a linear classifier on MNIST-1D + background, and a classifier on the
    background alone; return their accuracies (train, ID test, test under each shift magnitude).

    Each model's entry also has ``"negated"``: the test accuracy with every background
    coordinate negated, ``z_b -> -z_b`` (for ``U[0,1]`` the paper's shift to ``-U[0,1]``; for a
    centred background a fresh-looking draw from the training distribution).

    With ``cfg.centred_mlp`` the result also has ``"ReLU MLP, centred"``: the MLP with the same
    seeds, trained and tested on a centred background; ``cfg.centred_linear`` adds
    ``"linear, centred"`` likewise, and ``cfg.constant`` adds ``"ReLU MLP, constant"`` and
    ``"linear, constant"``, trained and tested with the background held at ``1/2``.
    ``cfg.null_replicates = r`` adds ``"linear replicates"``: a list of ``r`` dicts, replicate
    ``j`` on its own background draw (generator seed ``1000 * seed + 400 + j``), each with three
    entries like ``"linear"``: ``"uniform"`` and ``"centred"`` (initialization seed
    ``1000 * seed + 200 + j``, batch seed ``1000 * seed + 300 + j``) and ``"centred, again"``
    (seeds ``1000 * seed + 600 + j`` and ``1000 * seed + 700 + j``).
    ``cfg.mlp_replicates = r`` adds ``"MLP replicates"``: a list of ``r`` dicts, replicate
    ``j`` an MLP on its own background draw (generator seed ``1000 * seed + 500 + j``,
    initialization ``1000 * seed + 800 + j``, batches ``1000 * seed + 900 + j``) with its test
    accuracy ``"ID"``, ``"along"`` under the shift by ``m = cfg.direction_magnitude`` along
    the mean and ``"orthogonal"``, a list of five accuracies under the shifts
    ``orthogonal_shifts(k, m, 5, seed=1000 * seed + 450 + j)``, and ``"linear"``: the same
    three entries for a linear classifier trained on the same draw with the same seeds.

    Parameters
    ----------
    cfg : Mnist1dConfig
        The experiment's settings; a Mnist1dConfig.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**32 - 1].
    device : object, default None
        Torch device of the run (default: ``GTLIB_DEVICE``).

    Returns
    -------
    dict
        The accuracies named above.
    """
    from ..data import mnist1d
    from ..models import MLP
    from ..train import TrainConfig, accuracy, train

    dev = _device(device)
    if 0.0 not in cfg.magnitudes or 1.0 not in cfg.magnitudes:
        raise ValueError(
            f"cfg.magnitudes must contain 0.0 and 1.0, got {cfg.magnitudes}"
        )
    ds = mnist1d(cfg.n_train, cfg.n_test, device="cpu")
    g = torch.Generator().manual_seed(1000 * seed + 8)
    x_tr = append_background(ds.x, cfg.n_background, g)
    x_te = append_background(ds.x_test, cfg.n_background, g)

    x_tr, x_te, y_tr, y_te = (
        x_tr.to(dev),
        x_te.to(dev),
        ds.y.to(dev),
        ds.y_test.to(dev),
    )
    k = cfg.n_background
    models = {
        "ReLU MLP": (cfg.depth, cfg.width, slice(None), 0, 0.0),
        "linear": (0, 1, slice(None), 1, 0.0),
        "background only": (0, 1, slice(x_tr.shape[1] - k, None), 2, 0.0),
    }
    if cfg.centred_mlp:
        models["ReLU MLP, centred"] = (cfg.depth, cfg.width, slice(None), 0, 0.5)
    if cfg.centred_linear:
        models["linear, centred"] = (0, 1, slice(None), 1, 0.5)
    if cfg.constant:
        models["ReLU MLP, constant"] = (cfg.depth, cfg.width, slice(None), 0, None)
        models["linear, constant"] = (0, 1, slice(None), 1, None)
    out = {"magnitudes": list(cfg.magnitudes), "chance": 1.0 / ds.num_classes}

    def one(depth, width, cols, offset, init_seed, batch_seed):
        if offset is None:  # constant padding: every background coordinate 1/2
            xtr, xte = x_tr.clone(), x_te.clone()
            xtr[:, -k:], xte[:, -k:] = 0.5, 0.5
        else:
            xtr, xte = shift_last(x_tr, k, offset), shift_last(x_te, k, offset)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(init_seed)
            model = MLP(xtr[:, cols].shape[1], width, depth, ds.num_classes).to(dev)
        tcfg = TrainConfig(
            optimizer="adamw",
            lr=cfg.lr,
            weight_decay=cfg.weight_decay,
            batch_size=cfg.batch_size,
            epochs=cfg.epochs,
            seed=batch_seed,
            check_every=10**9,
        )
        train(model, xtr[:, cols], y_tr, tcfg)
        with torch.no_grad():
            res = {
                "train": accuracy(model(xtr[:, cols]), y_tr),
                "shift": [
                    accuracy(model(shift_last(xte, k, m)[:, cols]), y_te)
                    for m in cfg.magnitudes
                ],
            }
            neg = xte.clone()
            neg[:, -k:] = -neg[:, -k:]  # the background negated: z_b -> -z_b
            res["negated"] = accuracy(model(neg[:, cols]), y_te)
        res["ID"] = res["shift"][list(cfg.magnitudes).index(0.0)]
        res["OOD"] = res["shift"][list(cfg.magnitudes).index(1.0)]
        return res

    for name, (depth, width, cols, i, offset) in models.items():
        out[name] = one(
            depth, width, cols, offset, 1000 * seed + 80 + i, 1000 * seed + 90 + i
        )
    reps = []
    for j in range(_int("null_replicates", cfg.null_replicates, minimum=0)):
        gj = torch.Generator().manual_seed(
            1000 * seed + 400 + j
        )  # a fresh background draw
        x_tr = append_background(ds.x, k, gj).to(dev)
        x_te = append_background(ds.x_test, k, gj).to(dev)
        init, batches = 1000 * seed + 200 + j, 1000 * seed + 300 + j
        reps.append(
            {
                "uniform": one(0, 1, slice(None), 0.0, init, batches),
                "centred": one(0, 1, slice(None), 0.5, init, batches),
                "centred, again": one(
                    0, 1, slice(None), 0.5, init + 400, batches + 400
                ),
            }
        )
    if reps:
        out["linear replicates"] = reps
    mlps, m = [], cfg.direction_magnitude
    for j in range(_int("mlp_replicates", cfg.mlp_replicates, minimum=0)):
        gj = torch.Generator().manual_seed(
            1000 * seed + 500 + j
        )  # a fresh background draw
        x_tr = append_background(ds.x, k, gj).to(dev)
        x_te = append_background(ds.x_test, k, gj).to(dev)
        dirs = orthogonal_shifts(k, m, 5, seed=1000 * seed + 450 + j).to(x_te)

        def pad(v):  # a shift in the background coordinates, zero on the signal
            return torch.cat([torch.zeros(x_te.shape[1] - k).to(x_te), v])

        rep = {}
        for name, depth, width in (("MLP", cfg.depth, cfg.width), ("linear", 0, 1)):
            with torch.random.fork_rng(
                devices=[]
            ):  # same seeds: the linear classifier
                torch.manual_seed(1000 * seed + 800 + j)  # sees the MLP's batches
                model = MLP(x_tr.shape[1], width, depth, ds.num_classes).to(dev)
            tcfg = TrainConfig(
                optimizer="adamw",
                lr=cfg.lr,
                weight_decay=cfg.weight_decay,
                batch_size=cfg.batch_size,
                epochs=cfg.epochs,
                seed=1000 * seed + 900 + j,
                check_every=10**9,
            )
            train(model, x_tr, y_tr, tcfg)
            with torch.no_grad():
                rep[name] = {
                    "ID": accuracy(model(x_te), y_te),
                    "along": accuracy(model(shift_last(x_te, k, m)), y_te),
                    "orthogonal": [
                        accuracy(model(x_te - pad(v)), y_te) for v in dirs
                    ],
                }
        mlps.append({**rep["MLP"], "linear": rep["linear"]})
    if mlps:
        out["MLP replicates"] = mlps
    return out
