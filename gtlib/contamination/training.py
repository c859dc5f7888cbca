"""Feature contamination: training with gtlib.engine's loop, full batch, E members."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch

from ..checks import Options, Tensor, boundary, count
from ..config import Result
from ..engine import StackedOptimizer, fit
from .common import _reals, _same_dtype, _Signs, _X
from .data import Embedding, shift_background
from .networks import NetSpec, TwoLayerNets
from .metrics import (
    _binary_accuracy,
    _binary_loss,
    projection_norms,
    mean_direction_components,
)

__all__ = ["shift_sweep", "train_two_layer"]


def _optimizer(params, specs: Sequence[NetSpec]) -> StackedOptimizer:
    """The core's :class:`~gtlib.engine.StackedOptimizer` with member ``e`` set by ``specs[e]``.

    Member ``e`` is updated as PyTorch's ``SGD(lr, momentum, weight_decay)`` or
    ``AdamW(lr, weight_decay=...)`` (betas 0.9/0.999) would update it alone, in the
    parameters' precision, so one stack mixes optimizers, learning rates and weight decays.
    ``params`` carry the member axis first; those that do not require grad (a frozen output
    layer) are left out.
    """
    return StackedOptimizer(
        [p for p in params if p.requires_grad],
        optimizer=[s.optimizer for s in specs],
        lr=[s.lr for s in specs],
        momentum=[s.momentum for s in specs],
        weight_decay=[s.weight_decay for s in specs],
        members=len(specs),
    )


@dataclass
class ToyHistory(Result):
    """Curves recorded during :func:`train_two_layer`, one row per record step, one column per member."""

    step: list[int] = field(default_factory=list)
    core_norm: list[torch.Tensor] = field(default_factory=list)
    background_norm: list[torch.Tensor] = field(default_factory=list)
    background_mean: list[torch.Tensor] = field(default_factory=list)
    background_orth: list[torch.Tensor] = field(default_factory=list)
    train_loss: list[torch.Tensor] = field(default_factory=list)
    id_loss: list[torch.Tensor] = field(default_factory=list)
    ood_loss: list[torch.Tensor] = field(default_factory=list)
    id_acc: list[torch.Tensor] = field(default_factory=list)
    ood_acc: list[torch.Tensor] = field(default_factory=list)

    def array(self, name: str) -> np.ndarray:
        """A recorded curve as a ``(records, E)`` array."""
        Options(_CURVES).check("name", name)
        if not getattr(self, name):
            raise ValueError(
                f"name: the curve {name!r} was not recorded (the ID and OOD curves "
                "need a test set)"
            )
        return torch.stack(getattr(self, name)).cpu().numpy()


_CURVES = tuple(f for f in ToyHistory.__dataclass_fields__ if f != "step")


def _member_losses(
    specs: Sequence[NetSpec], f: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    hinge = torch.tensor([s.loss == "hinge" for s in specs], device=f.device)
    if hinge.all():
        return _binary_loss("hinge", f, y)
    if not hinge.any():
        return _binary_loss("logistic", f, y)
    return torch.where(
        hinge, _binary_loss("hinge", f, y), _binary_loss("logistic", f, y)
    )


def _check_specs(specs: Sequence[NetSpec], net: TwoLayerNets) -> None:
    if len(specs) != net.size:
        raise ValueError(
            f"specs must have one entry per member ({net.size}), got {len(specs)}"
        )
    for e, s in enumerate(specs):
        if s.act != net.acts[e]:
            raise ValueError(
                f"specs[{e}].act is {s.act!r} but the net's member {e} uses "
                f"{net.acts[e]!r}"
            )


def _check_sample(
    net: TwoLayerNets,
    emb: Embedding,
    x: torch.Tensor,
    y: torch.Tensor,
    names: tuple[str, str] = ("x", "y"),
) -> None:
    """Inputs the members read and their labels, in the embedding's space."""
    net._check_input(x, names[0])
    if x.shape[:-1] != y.shape:
        raise ValueError(
            f"{names[0]} (n, d) or (E, n, d) and {names[1]} (n,) or (E, n) must "
            f"match, got {tuple(x.shape)} and {tuple(y.shape)}"
        )
    if emb.dim != x.shape[-1]:
        raise ValueError(
            f"emb must embed into the inputs' R^{x.shape[-1]}, got R^{emb.dim}"
        )
    _same_dtype("emb", emb.core, x, names[0])


@boundary(
    steps=count(0),
    x=_X,
    y=_Signs((1, 2)),
    x_test=Tensor("float", (2, 3), optional=True),
    y_test=_Signs((1, 2), optional=True),
    record_every=count(),
)
def train_two_layer(
    net: TwoLayerNets,
    specs: Sequence[NetSpec],
    x: torch.Tensor,
    y: torch.Tensor,
    steps: int,
    emb: Embedding,
    x_test: torch.Tensor | None = None,
    y_test: torch.Tensor | None = None,
    shift: float = 1.0,
    record_every: int = 25,
) -> ToyHistory:
    """Train every member of ``net`` in place with full-batch steps; record the paper's curves.

    ``x`` (n, d) and ``y`` (n,) are shared by all members, or ``(E, n, d)`` and ``(E, n)`` give
    member ``e`` its own sample (independent replicates of an experiment); the same holds for the
    test set. Member ``e`` minimizes its own loss ``specs[e].loss`` with its own optimizer
    (``specs[e].optimizer``, ``lr``, ``momentum``, ``weight_decay``): the members are one
    :class:`~gtlib.engine.StackedOptimizer` trained by :func:`gtlib.engine.fit`. Every
    ``record_every`` steps the history stores the mean core and background projection norms of the
    first-layer weights (:func:`projection_norms`), the mean absolute component of the background
    weights along the background mean direction and the mean norm of the rest
    (:func:`mean_direction_components`), the training loss and, when a test set is given,
    the loss and accuracy on it (ID) and on its background-shifted copy (OOD, ``shift``).

    Parameters
    ----------
    net : TwoLayerNets
        The two-layer networks; a TwoLayerNets.
    specs : Sequence[NetSpec]
        One spec per network; a non-empty list or tuple whose items are each a NetSpec.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2 or 3-dimensional,
        finite).
    y : torch.Tensor
        Labels, -1.0 or +1.0; a torch.Tensor (non-empty, floating-point, 1 or 2-dimensional,
        finite) of labels -1.0 and +1.0.
    steps : int
        Number of optimizer steps; an int >= 0.
    emb : Embedding
        The embedding of core and background features; a Embedding.
    x_test : torch.Tensor | None, default None
        Test inputs; a torch.Tensor (non-empty, floating-point, 2 or 3-dimensional, finite).
    y_test : torch.Tensor | None, default None
        Test labels; a torch.Tensor (non-empty, floating-point, 1 or 2-dimensional, finite) of
        labels -1.0 and +1.0.
    shift : float, default 1.0
        The background shift applied to the test inputs; a finite number.
    record_every : int, default 25
        Steps between two recorded measurements; an int >= 1.

    Returns
    -------
    ToyHistory
        The recorded curves.

    References
    ----------
    Zhang, Zhao, Chen, Jiang and Chen (2024), "Feature Contamination: Neural Networks Learn
    Uncorrelated Features and Fail to Generalize".
    """
    _check_specs(specs, net)
    _check_sample(net, emb, x, y)
    if (x_test is None) != (y_test is None):
        raise ValueError(
            "x_test and y_test must be given together, got "
            f"{'x_test' if y_test is None else 'y_test'} alone"
        )
    if x_test is not None:
        _check_sample(net, emb, x_test, y_test, ("x_test", "y_test"))
    x_ood = None if x_test is None else shift_background(x_test, emb, shift)
    opt = _optimizer(net.parameters(), specs)
    hist = ToyHistory()
    norms, components = projection_norms, mean_direction_components

    def record(step: int, due: torch.Tensor) -> None:
        with torch.no_grad():
            core, bg = norms(net.W, emb)
            hist.step.append(step)
            hist.core_norm.append(core.mean(-1))
            hist.background_norm.append(bg.mean(-1))
            along, orth = components(net.W, emb)
            hist.background_mean.append(along.abs().mean(-1))
            hist.background_orth.append(orth.mean(-1))
            hist.train_loss.append(_member_losses(specs, net._forward(x), y))
            if x_test is not None:
                f_id, f_ood = net._forward(x_test), net._forward(x_ood)
                hist.id_loss.append(_member_losses(specs, f_id, y_test))
                hist.ood_loss.append(_member_losses(specs, f_ood, y_test))
                hist.id_acc.append(_binary_accuracy(f_id, y_test))
                hist.ood_acc.append(_binary_accuracy(f_ood, y_test))

    # full batch: no batch order; fit checks (records) at step 0, every record_every steps and last
    fit(
        lambda step, batch: _member_losses(specs, net._forward(x), y),
        opt,
        steps,
        check=record,
        every=record_every,
    )
    return hist


@boundary(x=_X, y=_Signs((1, 2)), magnitudes=None)
@torch.no_grad()
def shift_sweep(
    net: TwoLayerNets,
    specs: Sequence[NetSpec],
    x: torch.Tensor,
    y: torch.Tensor,
    emb: Embedding,
    magnitudes: Sequence[float],
) -> dict[str, np.ndarray]:
    """Loss, accuracy and margins of every member under background shifts.

    Loss, accuracy and margins ``y f(x)`` of every member under background shifts of each magnitude.

    ``magnitudes`` is a non-empty list or 1-D array of finite numbers. Returns arrays ``loss``
    and ``acc`` of shape ``(M, E)`` and ``margins`` of shape ``(M, E, n)`` for the ``M``
    magnitudes (the interactive figure of the chapter).

    Parameters
    ----------
    net : TwoLayerNets
        The two-layer networks; a TwoLayerNets.
    specs : Sequence[NetSpec]
        One spec per network; a non-empty list or tuple whose items are each a NetSpec.
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2 or 3-dimensional,
        finite).
    y : torch.Tensor
        Labels, -1.0 or +1.0; a torch.Tensor (non-empty, floating-point, 1 or 2-dimensional,
        finite) of labels -1.0 and +1.0.
    emb : Embedding
        The embedding of core and background features; a Embedding.
    magnitudes : Sequence[float]
        The shift magnitudes.

    Returns
    -------
    dict[str, np.ndarray]
        ``loss``, ``acc`` and ``margins``, as described above.
    """
    magnitudes = _reals("magnitudes", magnitudes)
    _check_specs(specs, net)
    _check_sample(net, emb, x, y)
    loss, acc, marg = [], [], []
    for m in magnitudes:
        f = net._forward(shift_background(x, emb, m))
        loss.append(_member_losses(specs, f, y))
        acc.append(_binary_accuracy(f, y))
        marg.append(y * f)
    return {
        "magnitude": np.asarray(magnitudes, dtype=float),
        "loss": torch.stack(loss).cpu().numpy(),
        "acc": torch.stack(acc).cpu().numpy(),
        "margins": torch.stack(marg).cpu().numpy(),
    }


@boundary(h_train=Tensor("float", 2), y_train=_Signs(), max_iter=count())
def linear_probe(
    h_train: torch.Tensor,
    y_train: torch.Tensor,
    evaluations: Sequence[tuple[torch.Tensor, torch.Tensor]],
    max_iter: int = 3000,
) -> list[float]:
    """Fit a logistic-regression probe on representations ``h_train`` and score it elsewhere.

    Features are standardized with the training statistics. Returns the accuracy on each
    ``(h, y)`` of ``evaluations`` (the linear-probe protocol of the paper's Section 3); labels
    are -1.0 and +1.0, as everywhere in this module.
    """
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    if h_train.shape[0] != y_train.shape[0]:
        raise ValueError("h_train and y_train must have the same number of rows")
    if not (bool((y_train > 0).any()) and bool((y_train < 0).any())):
        raise ValueError("y_train must contain both classes -1 and +1")
    evaluations = list(evaluations)
    for i, pair in enumerate(evaluations):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(
                f"evaluations[{i}] must be a pair (h, y), got {type(pair).__name__}"
            )
        h, y = pair
        Tensor("float", 2).check(f"evaluations[{i}] h", h)
        _Signs().check(f"evaluations[{i}] y", y)
        if h.shape[1] != h_train.shape[1] or h.shape[0] != y.shape[0]:
            raise ValueError(
                f"evaluations[{i}] must pair h (m, {h_train.shape[1]}) with y (m,), "
                f"got {tuple(h.shape)} and {tuple(y.shape)}"
            )
    scaler = StandardScaler().fit(h_train.cpu().numpy())
    clf = LogisticRegression(max_iter=max_iter).fit(
        scaler.transform(h_train.cpu().numpy()), y_train.cpu().numpy()
    )

    out = []
    for h, y in evaluations:
        out.append(
            float(clf.score(scaler.transform(h.cpu().numpy()), y.cpu().numpy()))
        )
    return out
