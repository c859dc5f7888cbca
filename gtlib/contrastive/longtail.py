"""Contrastive imbalance: the real data, a long-tailed MNIST-1D."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from ..checks import (
    SEED,
    InstanceOf,
    Interval,
    boundary,
    count,
    fraction,
    nonnegative,
    positive,
)
from ..config import Config, param
from ..data import long_tailed, mnist1d
from ..engine import ReplacementBatches, StackedOptimizer, fit
from .common import _Numbers
from .encoder import _magnitude_mask, _random_mask, _straight_through_mask
from .training import MASKS, ridge_probe

__all__ = ["LongTailConfig", "random_encoder_accuracy", "train_longtail"]


@dataclass(frozen=True)
class LongTailConfig(Config):
    """Contrastive pretraining on long-tailed MNIST-1D, then a linear probe on balanced data.

    Parameters
    ----------
    n_train : int, default 4000
        Number of training examples; an int >= 1.
    n_test : int, default 4000
        Number of test examples; an int >= 1.
    imbalance : float, default 20.0
        Long-tail ratio (class 0 head, class 9 tail); a finite number >= 1.
    width : int, default 256
        Hidden neurons of the MLP encoder (the representation); an int >= 1.
    out_dim : int, default 64
        Projection dimension fed to InfoNCE; an int >= 1.
    batch : int, default 256
        Minibatch size; an int >= 2.
    steps : int, default 4000
        Number of optimizer steps; an int >= 1.
    lr : float, default 0.05
        Learning rate; a finite number > 0.
    momentum : float, default 0.9
        SGD momentum; a finite number in [0, 1).
    weight_decay : float, default 0.0005
        Weight decay; a finite number >= 0.
    tau : float, default 0.2
        Temperature of the InfoNCE loss; a finite number > 0.
    prune_fraction : float, default 0.5
        Fraction of neurons pruned; a finite number in [0, 1].
    prune_every : int, default 50
        Steps between two prunings; an int >= 1.
    shift : int, default 8
        Augmentation: random circular shift of up to +-shift samples; an int >= 0.
    scale : float, default 0.15
        Augmentation: amplitude scaled by 1 +- scale; a finite number in [0, 1).
    jitter : float, default 0.2
        Augmentation: added Gaussian noise std; a finite number >= 0.
    head_classes : int, default 3
        Classes counted as the head; an int >= 1.
    tail_classes : int, default 3
        Classes counted as the tail; an int >= 1.
    """

    FULL = dict(
        n_train=10000, n_test=4000, width=1024, out_dim=128, steps=8000, batch=512
    )

    n_train: int = param(4000, count())
    n_test: int = param(4000, count())
    #: long-tail ratio (class 0 head, class 9 tail)
    imbalance: float = param(20.0, Interval(float, 1))
    #: hidden neurons of the MLP encoder (the representation)
    width: int = param(256, count())
    out_dim: int = param(64, count())  #: projection dimension fed to InfoNCE
    batch: int = param(256, count(2))
    steps: int = param(4000, count())
    lr: float = param(0.05, positive())
    momentum: float = param(0.9, fraction("left"))
    weight_decay: float = param(5e-4, nonnegative())
    tau: float = param(0.2, positive())
    prune_fraction: float = param(0.5, fraction())
    prune_every: int = param(50, count())
    #: augmentation: random circular shift of up to +-shift samples
    shift: int = param(8, count(0))
    #: augmentation: amplitude scaled by 1 +- scale
    scale: float = param(0.15, fraction("left"))
    #: augmentation: added Gaussian noise std
    jitter: float = param(0.2, nonnegative())
    head_classes: int = param(3, count())
    tail_classes: int = param(3, count())

    def _check_together(self) -> None:
        if self.head_classes + self.tail_classes > 10:
            self._refuse(
                "tail_classes",
                f"<= 10 - head_classes = {10 - self.head_classes} "
                "(MNIST-1D has 10 classes)",
            )


def _augment_1d(
    x: torch.Tensor,
    generator: torch.Generator,
    shift: int,
    scale: float,
    jitter: float,
) -> torch.Tensor:
    """MNIST-1D-style augmentation: random circular shift, amplitude scaling and Gaussian noise.

    ``x`` is ``(n, length)``; ``scale`` in [0, 1) keeps the amplitude factor ``1 +- scale``
    positive.
    """
    n, L = x.shape
    s = torch.randint(-shift, shift + 1, (n,), generator=generator)
    idx = (torch.arange(L)[None, :] - s[:, None]) % L
    x = torch.gather(x, 1, idx)
    x = x * (1 + scale * (2 * torch.rand(n, 1, generator=generator) - 1))
    return x + jitter * torch.randn(x.shape, generator=generator)


def _encoder_init(cfg: LongTailConfig, dim: int, seed: int, E: int):
    """The encoders' shared initialization, drawn from a generator seeded with ``seed`` (which
    goes on to draw the minibatches and augmentations)."""
    h, o = cfg.width, cfg.out_dim
    g = torch.Generator().manual_seed(seed)
    W1 = (
        (torch.randn(h, dim, generator=g) / math.sqrt(dim)).expand(E, h, dim).clone()
    )
    W2 = (torch.randn(o, h, generator=g) / math.sqrt(h)).expand(E, o, h).clone()
    return g, W1, W2


@boundary(seed=SEED, bias_scale=Interval(float, 0))
def random_encoder_accuracy(
    cfg: LongTailConfig, seed: int = 0, bias_scale: float = 0.0
) -> np.ndarray:
    """Per-class linear-probe test accuracy of an untrained encoder of :func:`train_longtail`.

    The encoder is the one :func:`train_longtail` starts from with the same ``seed``
    (``acc_random`` there); another seed draws another random encoder, the null of "contrastive
    pretraining helps": two random encoders differ only by their draw.

    Parameters
    ----------
    cfg : LongTailConfig
        The long-tail configuration (width and data sizes are used).
    seed : int
        Seed of the initialization.
    bias_scale : float, default 0.0
        ``0`` keeps the zero biases that pretraining starts from. Above ``0``, every hidden
        neuron gets a random bias, ``bias_scale`` times a standard normal draw times the
        standard deviation of that neuron's pre-activation on the training inputs, so that each
        neuron fires on its own random share of the data: a random feature map that does not
        rely on the zero bias.

    Returns
    -------
    numpy.ndarray
        Shape ``(10,)``: test accuracy of the probe on each class.
    """
    if not isinstance(cfg, LongTailConfig):
        raise TypeError(f"cfg must be a LongTailConfig, got {type(cfg).__name__}")
    ds = mnist1d(cfg.n_train, cfg.n_test, device="cpu")
    g, W1, _ = _encoder_init(cfg, ds.dim, seed, 1)
    with torch.no_grad():
        pre = lambda x: torch.einsum("end,ehd->enh", x, W1)  # noqa: E731
        b = torch.zeros(cfg.width)
        if bias_scale > 0:  # drawn after the weights, from the same generator
            z = torch.randn(cfg.width, generator=g)
            b = bias_scale * z * pre(ds.x[None])[0].std(0)
        hid = lambda x: F.relu(pre(x) + b)  # noqa: E731
        return _probe_per_class(hid(ds.x[None]), hid(ds.x_test[None]), ds)[0]


@boundary(prune_fractions=_Numbers(fraction()), seed=SEED, balanced=InstanceOf(bool))
def train_longtail(
    cfg: LongTailConfig,
    prune_fractions=(0.0, 0.5),
    seed: int = 0,
    balanced: bool = False,
    masks=None,
) -> dict:
    """Contrastive pretraining on long-tailed MNIST-1D, then per-class linear probes.

    Contrastive pretraining of MLP encoders (one per pruning fraction, batched, same init and
    same minibatches) on long-tailed MNIST-1D; then per-class linear-probe test accuracy.

    The probe (ridge, :func:`ridge_probe`) is fit on the *balanced* training split and scored on the
    balanced test split. Returns ``{"acc": (E, 10), "acc_random": (10,), "counts": per-class
    pretraining counts, "fractions", "masks", "correct", "y_test"}``; ``acc_random`` is the same
    probe on the randomly initialized encoder (the shared starting point): the control that
    pretraining must beat. ``correct`` ``(E, n_test)`` says which test signals each encoder's
    probe labels correctly and ``y_test`` gives their labels: two encoders are scored on the
    same signals, so a difference of their accuracies can be paired item by item.

    Training is SGD with momentum and weight decay (:class:`gtlib.engine.StackedOptimizer`, one
    member per pruning fraction) for ``steps`` updates of :func:`gtlib.engine.fit`; each step draws
    a minibatch with replacement and its two augmented views from one generator, and the
    magnitude mask of Liao et al. (ICLR 2026) is refreshed every ``prune_every`` steps.

    ``balanced=True`` is the reference without imbalance: pretraining uses a *balanced* subsample
    of the same size as the long-tailed one (``n // 10`` points of every class, drawn with
    ``seed``), and everything else is unchanged. ``masks`` (one entry per pruning fraction,
    default all "magnitude") puts a ``_random_mask`` of the same size in place of the
    magnitude mask, redrawn as often, from a generator of its own.

    Parameters
    ----------
    cfg : LongTailConfig
        The experiment's settings; a LongTailConfig.
    prune_fractions : array_like, default (0.0, 0.5)
        Pruning fraction of each model; a tuple (at least 1 item) of items each a finite number in
        [0, 1].
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].
    balanced : bool, default False
        Whether to pretrain on a balanced subsample instead (the reference); a bool.
    masks : object, default None
        One entry per pruning fraction, ``"magnitude"`` or ``"random"`` (default: all
        ``"magnitude"``).

    Returns
    -------
    dict
        ``acc``, ``acc_random``, ``counts``, ``fractions``, ``masks``, ``correct`` and
        ``y_test``, as described above.

    References
    ----------
    Liao, Zhou, Zhang, Wang and Zhang (2026), "Theoretical Analysis of Contrastive Learning
    under Imbalanced Data: From Training Dynamics to a Pruning Solution".
    Jiang, Chen, Mortazavi and Wang (2021), "Self-Damaging Contrastive Learning".
    """
    kinds = ["magnitude"] * len(prune_fractions) if masks is None else list(masks)
    if len(kinds) != len(prune_fractions) or any(k not in MASKS for k in kinds):
        raise ValueError(
            f"masks must hold one of {MASKS} per pruning fraction "
            f"({len(prune_fractions)}), got {masks!r}"
        )
    ds = mnist1d(cfg.n_train, cfg.n_test, device="cpu")
    lt = long_tailed(ds, cfg.imbalance, seed=seed)
    if balanced:
        gb = torch.Generator().manual_seed(seed)
        per = lt.n // ds.num_classes
        idx = [torch.nonzero(ds.y == k).flatten() for k in range(ds.num_classes)]
        if min(len(i) for i in idx) < per:
            raise ValueError(
                f"balanced=True needs {per} training points of every class"
            )
        lt = ds.subset(
            torch.cat([i[torch.randperm(len(i), generator=gb)[:per]] for i in idx])
        )
    fr = [float(f) for f in prune_fractions]
    E, h = len(fr), cfg.width
    g, W1, W2 = _encoder_init(cfg, ds.dim, seed, E)
    params = [
        W1.requires_grad_(),
        torch.zeros(E, h, requires_grad=True),
        W2.requires_grad_(),
    ]
    opt = StackedOptimizer(
        params, "sgd", cfg.lr, cfg.momentum, cfg.weight_decay, members=E
    )

    def hidden(x, mask=None):
        hid = F.relu(
            torch.einsum("end,ehd->enh", x, params[0]) + params[1][:, None, :]
        )
        return hid if mask is None else _straight_through_mask(hid, mask[:, None, :])

    with torch.no_grad():
        acc_random = _probe_per_class(
            hidden(ds.x[None]), hidden(ds.x_test[None]), ds
        )[0]
    mask = None
    rand = [e for e, k in enumerate(kinds) if k == "random" and fr[e] > 0]
    g_mask = torch.Generator().manual_seed(seed * 1000 + 998)
    eye = torch.arange(cfg.batch).repeat(E)
    # one minibatch for all E encoders, drawn with replacement from g (one row)
    batches = ReplacementBatches(lt.n, cfg.batch, [g])

    def loss(step: int, idx: torch.Tensor) -> torch.Tensor:
        """Each encoder's InfoNCE on two augmented views of this step's minibatch."""
        nonlocal mask
        if (
            step % cfg.prune_every == 0
        ):  # per-step calls go to the unchecked building blocks
            mask = _magnitude_mask(params[0], fr)
            if rand:
                mask[rand] = _random_mask(
                    params[0][rand], [fr[e] for e in rand], g_mask
                )
        xb = lt.x[idx[0]]
        x1 = _augment_1d(xb, g, cfg.shift, cfg.scale, cfg.jitter)[None].expand(
            E, -1, -1
        )
        x2 = _augment_1d(xb, g, cfg.shift, cfg.scale, cfg.jitter)[None].expand(
            E, -1, -1
        )
        z1 = F.normalize(hidden(x1, mask) @ params[2].transpose(1, 2), dim=-1)
        with torch.no_grad():
            z2 = F.normalize(hidden(x2) @ params[2].transpose(1, 2), dim=-1)
        logits = z1 @ z2.transpose(1, 2) / cfg.tau
        ce = F.cross_entropy(logits.reshape(-1, cfg.batch), eye, reduction="none")
        return ce.view(E, cfg.batch).sum(1) / cfg.batch

    fit(loss, opt, cfg.steps, batches)
    with torch.no_grad():
        ftr = hidden(ds.x[None].expand(E, -1, -1))
        fte = hidden(ds.x_test[None].expand(E, -1, -1))
    pred = ridge_probe(ftr, ds.y, fte, ds.num_classes)
    return {
        "acc": _per_class(pred, ds),
        "correct": (pred == ds.y_test).numpy(),
        "y_test": ds.y_test.numpy(),
        "acc_random": acc_random,
        "counts": torch.bincount(lt.y, minlength=ds.num_classes).numpy(),
        "fractions": fr,
        "masks": kinds,
    }


def _probe_per_class(ftr: torch.Tensor, fte: torch.Tensor, ds) -> np.ndarray:
    """Per-class test accuracy ``(E, classes)`` of the ridge probe on features ``(E, n, h)``."""
    return _per_class(ridge_probe(ftr, ds.y, fte, ds.num_classes), ds)


def _per_class(pred: torch.Tensor, ds) -> np.ndarray:
    """Per-class recall ``(E, classes)`` of the predicted test labels ``pred`` ``(E, n_test)``."""
    return np.stack(
        [
            [
                (pred[e, ds.y_test == k] == k).float().mean().item()
                for k in range(ds.num_classes)
            ]
            for e in range(pred.shape[0])
        ]
    )
