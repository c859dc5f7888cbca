"""MLP width sweep on MNIST-1D with label noise (gtlib.soft, section 4).

Deep double descent (Nakkiran et al. 2020), batched over widths with
:class:`gtlib.models.BatchedMLP`'s ``hidden_mask``, and the summaries of its peak.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from ..checks import (
    SEED,
    Boolean,
    boundary,
    check_int,
    count,
    fraction,
    nonnegative,
    positive,
    tuple_of,
)
from ..config import Config, Result, param
from ..data import Dataset, corrupt_labels
from ..models import BatchedMLP, MLP
from ..train import TrainConfig, train_ensemble
from .common import _ARR, _Array, _fits

__all__ = [
    # configs and results
    "MLPSweepConfig",
    # functions
    "interpolation_threshold",
    "run_mlp_sweep",
    "split_peak_test",
]


@dataclass
class MLPSweepConfig(Config):
    """Two-hidden-layer MLPs of many widths on MNIST-1D with label noise.

    After Nakkiran et al. (2020). ``FULL``: more data, epochs, replicates and widths.

    Parameters
    ----------
    n_train : int, default 2000
        Number of training examples; an int >= 1.
    label_noise : float, default 0.15
        Fraction of training labels replaced by random ones; a finite number in [0, 1].
    width_groups : tuple, optional
        Widths trained together in one batched stack; a tuple (at least 1 item) of items each a
        tuple (at least 1 item) of items each an int >= 1.
    epochs : int, default 300
        Number of training epochs; an int >= 1.
    lr : float, default 0.01
        Learning rate; a finite number > 0.
    momentum : float, default 0.9
        SGD momentum; a finite number in [0, 1).
    batch_size : int, default 100
        Minibatch size; an int >= 1.
    replicates : int, default 8
        Independent repetitions; an int >= 1.
    check_epochs : int, default 10
        Epochs between two recordings of the errors (0: at the end only); an int >= 0.
    """

    FULL = dict(
        n_train=4000,
        epochs=500,
        replicates=16,
        width_groups=(
            (4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 47, 52, 56, 61),
            (64, 72, 80, 96, 112, 128),
            (160, 200, 250, 300),
        ),
    )

    n_train: int = param(2000, count())
    label_noise: float = param(0.15, fraction())
    width_groups: tuple = param(
        ((8, 16, 24, 32, 40, 48), (128,)), tuple_of(tuple_of(count()))
    )
    epochs: int = param(300, count())
    lr: float = param(0.01, positive())
    momentum: float = param(0.9, fraction("left"))
    batch_size: int = param(100, count())
    replicates: int = param(8, count())
    check_epochs: int = param(
        10, count(0)
    )  # > 0: record the errors every so many epochs

    @property
    def widths(self) -> list[int]:
        return [w for g in self.width_groups for w in g]


@boundary(
    widths=tuple_of(count()),
    seeds=tuple_of(SEED),
    in_dim=count(),
    out_dim=count(),
    depth=count(),
)
def masked_ensemble(
    widths, seeds, in_dim: int, out_dim: int, depth: int = 2
) -> BatchedMLP:
    """A :class:`BatchedMLP` of common width ``max(widths)`` whose member ``i`` uses ``widths[i]`` units."""
    widths = [check_int("widths[i]", w, 1) for w in widths]
    if len(seeds) != len(widths):
        raise ValueError("seeds must have one entry per width")
    W = max(widths)
    mask = torch.zeros(len(widths), W)
    for i, w in enumerate(widths):
        mask[i, :w] = 1
    return BatchedMLP.init(list(seeds), in_dim, W, depth, out_dim, hidden_mask=mask)


@boundary(i=count(0), width=count())
def member_at_width(model: BatchedMLP, i: int, width: int) -> MLP:
    """Member ``i`` of a masked ensemble as a stand-alone MLP of its true ``width``.

    Unlike :meth:`BatchedMLP.member`, the masked units are cut out, so the parameter count (and the
    Hessian) is that of a ``width``-unit network.
    """
    if i >= model.size:
        raise ValueError(f"i must lie in [0, {model.size}), got {i}")
    units = (
        int(model.weights[0].shape[1])
        if model.hidden_mask is None
        else int(model.hidden_mask[i].sum())
    )
    if width > units:
        raise ValueError(
            f"width must be <= member {i}'s {units} hidden units, got {width}"
        )
    full = model.member(i)
    depth = full.depth
    m = MLP(
        full.layers[0].in_features,
        width,
        depth,
        full.layers[-1].out_features,
        bias=full.layers[0].bias is not None,
        activation=full.act_name,
    )
    with torch.no_grad():
        for l, (src, dst) in enumerate(zip(full.layers, m.layers)):
            rows = slice(None) if l == depth else slice(0, width)
            cols = slice(None) if l == 0 else slice(0, width)
            dst.weight.copy_(src.weight[rows, cols])
            if dst.bias is not None:
                dst.bias.copy_(src.bias[rows])
    return m


@dataclass
class MLPSweepResult(Result):
    """What :func:`run_mlp_sweep` measured, per width: the parameter count, the train error (on the
    noisy labels) and test error (on the clean test labels) averaged over replicates, and per
    replicate (``(replicates, widths)``); the noisy labels ``y_noisy``, the first replicate's
    trained networks ``nets`` (stand-alone MLPs at their true widths) and ``n_train``."""

    widths: np.ndarray
    params: np.ndarray
    train_err: np.ndarray
    test_err: np.ndarray
    test_err_reps: np.ndarray
    train_err_reps: np.ndarray
    y_noisy: torch.Tensor
    nets: list
    n_train: int
    hist_epochs: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    train_err_hist: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0)))
    test_err_hist: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0)))
    train_loss_hist: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0)))
    nets_hist: list = field(default_factory=list)


@boundary(seed=SEED)
def run_mlp_sweep(cfg: MLPSweepConfig, ds: Dataset, seed: int = 0) -> MLPSweepResult:
    """Train ``cfg.replicates`` MLPs per width on labels with noise.

    Train ``cfg.replicates`` MLPs per width on ``ds`` with ``cfg.label_noise`` of its labels corrupted.

    Each group of widths (times the replicates) is one masked :class:`gtlib.models.BatchedMLP` whose members
    share the group's maximum width, trained with SGD + momentum exactly as separate networks
    would be. Errors are averaged over the replicates (different initializations and minibatch
    orders). Returns widths, parameter counts, train error (on the noisy labels), test error (on
    clean test labels), per-replicate test errors, the noisy labels, and the first replicate's
    trained networks (stand-alone, at their true widths).

    With ``cfg.check_epochs > 0`` the sweep also keeps its history: every ``check_epochs``
    epochs (and at the end) the train error, test error and mean training cross-entropy (on the
    noisy labels) of every member, as ``(checks, replicates, widths)`` arrays, their epochs in
    ``hist_epochs``, and the first replicate's networks at each check in ``nets_hist`` (one list
    of stand-alone MLPs per check). Recording does not change the training.

    Parameters
    ----------
    cfg : MLPSweepConfig
        The experiment's settings; an MLPSweepConfig.
    ds : Dataset
        The dataset; a Dataset.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].

    Returns
    -------
    MLPSweepResult
        The measurements listed above.

    References
    ----------
    Nakkiran et al. (2020), "Deep Double Descent: Where Bigger Models and More Data Hurt".
    """
    import copy

    _fits(ds, cfg.n_train)
    ds = ds.subset(torch.arange(cfg.n_train))
    y = corrupt_labels(ds.y, cfg.label_noise, ds.num_classes, seed=seed)
    steps_per_epoch = -(-cfg.n_train // cfg.batch_size)
    every = 10**9 if not cfg.check_epochs else cfg.check_epochs * steps_per_epoch
    tcfg = TrainConfig(
        lr=cfg.lr,
        momentum=cfg.momentum,
        batch_size=cfg.batch_size,
        epochs=cfg.epochs,
        check_every=every,
        seed=seed,
    )
    R = check_int("replicates", cfg.replicates, 1)
    widths, tr, te, nets, hist, steps = [], [], [], [], [], None

    def errors(model, g):
        with torch.no_grad():
            out = model(ds.x)
            a = (1 - (out.argmax(-1) == y).float().mean(1)).view(R, len(g))
            b = (
                1 - (model(ds.x_test).argmax(-1) == ds.y_test).float().mean(1)
            ).view(R, len(g))
            loss = (
                F.cross_entropy(
                    out.transpose(1, 2), y.expand(out.shape[0], -1), reduction="none"
                )
                .mean(1)
                .view(R, len(g))
            )
        return a, b, loss

    for g in cfg.width_groups:
        ws = [w for _ in range(R) for w in g]
        tags = [1000 * (seed * R + r) + w for r in range(R) for w in g]
        model = masked_ensemble(ws, tags, ds.dim, ds.num_classes).to(ds.x.device)
        probes = {"snap": copy.deepcopy} if cfg.check_epochs else None
        h = train_ensemble(
            model, ds.x, y, tcfg, seeds=[7919 + t for t in tags], probes=probes
        )
        a, b, _ = errors(model, g)
        tr.append(a)
        te.append(b)
        nets += [member_at_width(model, i, w) for i, w in enumerate(g)]
        widths += list(g)
        if cfg.check_epochs:
            steps = h.step
            hist.append(
                [
                    (
                        *errors(m, g),
                        [member_at_width(m, i, w) for i, w in enumerate(g)],
                    )
                    for m in h.probes["snap"]
                ]
            )
    tr, te = torch.cat(tr, 1).numpy(), torch.cat(te, 1).numpy()
    params = [sum(p.numel() for p in m.parameters()) for m in nets]
    extra = {}
    if cfg.check_epochs:
        T = len(steps)

        def cat(k):
            return np.stack(
                [torch.cat([grp[t][k] for grp in hist], 1).numpy() for t in range(T)]
            )

        extra = dict(
            hist_epochs=np.array([-(-s // steps_per_epoch) for s in steps]),
            train_err_hist=cat(0),
            test_err_hist=cat(1),
            train_loss_hist=cat(2),
            nets_hist=[[n for grp in hist for n in grp[t][3]] for t in range(T)],
        )
    return MLPSweepResult(
        widths=np.array(widths),
        params=np.array(params),
        train_err=tr.mean(0),
        test_err=te.mean(0),
        test_err_reps=te,
        train_err_reps=tr,
        y_noisy=y,
        nets=nets,
        n_train=cfg.n_train,
        **extra,
    )


def _width_reps(widths, err_reps, least: int):
    """Widths and a (replicates, widths) error array, checked for a peak test."""
    widths = np.asarray(widths)
    e = np.asarray(err_reps, dtype=np.float64)
    if e.ndim != 2 or e.shape[1] != widths.size or e.shape[0] < least:
        raise ValueError(
            f"err_reps must be (replicates >= {least}, len(widths) = {widths.size}), "
            f"got {e.shape}"
        )
    if widths.size < 3:
        raise ValueError(
            f"widths must hold at least 3 widths (a peak between two ends), got "
            f"{widths.size}"
        )
    return widths, e


@boundary(widths=_ARR, err_reps=_Array(2), threshold=positive(optional=True))
def width_peak_summary(
    widths, err_reps, threshold: float | None = None, keys_only: bool = False
) -> dict:
    """Where a width sweep's mean error peaks, and by how much it stands out from replicate noise.

    ``err_reps`` is ``(replicates, widths)``. The peak is the largest mean error among widths
    within a factor 2 of ``threshold`` (default: all widths but the first and last); ``left`` is
    the lowest mean error at a smaller width, ``right`` the mean error of the widest network, and
    ``se_diff`` the standard error of a difference of two widths' means,
    ``sqrt(2) * median_w(sd_w) / sqrt(R)``. With ``keys_only`` only ``peak``, ``left``, ``right``
    and ``se_diff`` are returned (for a claim's control).
    """
    widths, e = _width_reps(widths, err_reps, 2)
    m = e.mean(0)
    inner = np.arange(1, widths.size - 1)
    if threshold is not None:
        near = inner[
            (widths[inner] >= threshold / 2) & (widths[inner] <= 2 * threshold)
        ]
        inner = near if near.size else inner
    i = int(inner[np.argmax(m[inner])])
    j = int(np.argmin(m[:i]))
    se = float(np.sqrt(2) * np.median(e.std(0, ddof=1)) / np.sqrt(e.shape[0]))
    out = {
        "peak": float(m[i]),
        "left": float(m[j]),
        "right": float(m[-1]),
        "se_diff": se,
    }
    if not keys_only:
        out.update(peak_width=int(widths[i]), left_width=int(widths[j]))
    return out


@boundary(
    widths=_ARR,
    err_reps=_Array(2),
    threshold=positive(optional=True),
    at_threshold=Boolean(),
)
def split_peak_test(
    widths, err_reps, threshold: float | None = None, at_threshold: bool = False
) -> dict:
    """A width sweep's peak, chosen on one half of the replicates and measured on the other.

    Picking the largest of several noisy means (the peak) and the smallest of several others
    (the best smaller width) biases their difference upwards: under a sweep with no bump at all
    it is positive on average, so "twice the standard error" is too lax. Sample splitting removes
    the bias. ``err_reps`` is ``(replicates >= 4, widths)``; the first ``R // 2`` replicates
    *select*: the peak is the width of largest mean error among the inner widths within a factor
    2 of ``threshold`` (all inner widths if none is, or without a threshold), ``left`` the width
    of smallest mean error below it, ``right`` the widest. The other replicates *measure*:
    ``gap_left`` and ``gap_right`` are the differences of their means (peak minus left, peak
    minus right), with standard errors ``se_left`` and ``se_right`` from the same replicates
    (``sqrt(s_a^2 / m + s_b^2 / m)``). Given the selection, the held-out differences are
    unbiased, so ``gap > 2 se`` is a one-sided test at about 2.5% under no bump.

    With ``at_threshold`` the peak is not chosen at all: it is the width ``threshold`` itself
    (which must be one of the inner widths), the place where Nakkiran et al. (2020) put the
    peak. Only the best smaller width is then chosen on the first half.

    Returns ``peak_width``, ``left_width``, ``gap_left``, ``gap_right``, ``se_left``,
    ``se_right`` and ``measured`` (the number of held-out replicates).

    Parameters
    ----------
    widths : array_like
        Hidden widths; a non-empty 1-D array (list or numpy array) of finite numbers.
    err_reps : array_like
        Test errors, replicates by widths; a non-empty 2-D array (list or numpy array) of finite
        numbers.
    threshold : float | None, default None
        The interpolation threshold, a width: the candidate peaks lie within a factor 2 of it
        (see above); a finite number > 0 or None.
    at_threshold : bool, default False
        Take the peak at the width ``threshold`` instead of choosing it; a bool (True needs a
        ``threshold`` equal to an inner width).

    Returns
    -------
    dict
        The keys listed above.

    References
    ----------
    Nakkiran et al. (2020), "Deep Double Descent: Where Bigger Models and More Data Hurt", Fig. 1.
    """
    widths, e = _width_reps(widths, err_reps, 4)
    half = e.shape[0] // 2
    sel, mea = e[:half].mean(0), e[half:]
    inner = np.arange(1, widths.size - 1)
    if at_threshold:
        if threshold is None or not np.any(widths[inner] == threshold):
            raise ValueError(
                f"threshold must be one of the inner widths "
                f"{widths[inner].tolist()} when at_threshold is True, got "
                f"{threshold}"
            )
        inner = inner[widths[inner] == threshold]
    elif threshold is not None:
        near = inner[
            (widths[inner] >= threshold / 2) & (widths[inner] <= 2 * threshold)
        ]
        inner = near if near.size else inner
    i = int(inner[np.argmax(sel[inner])])
    j = int(np.argmin(sel[:i]))
    m, v, k = mea.mean(0), mea.var(0, ddof=1), mea.shape[0]

    def se(a, b):
        return float(np.sqrt(v[a] / k + v[b] / k))

    return {
        "peak_width": int(widths[i]),
        "left_width": int(widths[j]),
        "gap_left": float(m[i] - m[j]),
        "gap_right": float(m[i] - m[-1]),
        "se_left": se(i, j),
        "se_right": se(i, -1),
        "measured": int(k),
    }


@boundary(widths=_ARR, train_err=_ARR, tol=nonnegative())
def interpolation_threshold(widths, train_err, tol: float = 0.01):
    """The smallest width whose training error is at most ``tol`` (None if no model interpolates).

    Parameters
    ----------
    widths : array_like
        Hidden widths; a non-empty 1-D array (list or numpy array) of finite numbers.
    train_err : array_like
        Training error at each width; a non-empty 1-D array (list or numpy array) of finite
        numbers.
    tol : float, default 0.01
        Tolerance; a finite number >= 0.

    Returns
    -------
    int or None
        The width, or None.
    """
    widths, train_err = np.asarray(widths), np.asarray(train_err)
    if train_err.shape != widths.shape:
        raise ValueError(
            f"train_err must have one entry per width ({widths.size}), got "
            f"{train_err.size}"
        )
    ok = np.nonzero(train_err <= tol)[0]
    return None if ok.size == 0 else int(widths[ok[0]])
