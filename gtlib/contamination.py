"""Feature contamination: networks learn label-uncorrelated features and fail to generalize.

This module re-runs the toy experiments of Zhang, Zhao, Chen, Jiang and Chen, *Feature
Contamination: Neural Networks Learn Uncorrelated Features and Fail to Generalize* (ICML 2024,
arXiv:2406.03345), in the setting of the authors' public code, plus two extensions that the book
adds (a representation-distillation experiment at toy scale and an MNIST-1D variant).

The data model (Section 4.1 of the paper). An input ``x`` in R^d is the sum of a *core* part and a
*background* part living in orthogonal subspaces,

    x = P_c z_c + P_b z_b,      P = [P_c P_b] with P^T P = I,

where ``z_c`` in R^{k_c} carries the label and ``z_b`` in R^{k_b} does not (it is drawn from the same
distribution for both classes). Two configurations:

* ``"theory"`` (matches the theorems): ``z_c ~ y * U[0,1]^{k_c}`` with ``y`` in {-1, +1};
* ``"default"`` (the authors' default script): ``z_c`` on the unit sphere for ``y = +1`` and on the
  radius-2 sphere for ``y = -1``, so no linear classifier separates the classes.

In both, ``z_b ~ U[0,1]^{k_b}`` during training (``centred=True``: ``U[-1/2, 1/2]^{k_b}``, the
control that removes the background's mean). The out-of-distribution (OOD) test set moves the
background: :func:`shift_background` subtracts ``magnitude`` from every background coordinate, so
``magnitude = 1`` maps ``U[0,1]`` onto ``U[-1,0]``, the paper's ``-U[0,1]``, while leaving the core
coordinates untouched.

The model is a two-layer network ``f(x) = sum_j a_j act(w_j . x + b_j) + c``. In the theory
configuration the output layer is frozen at ``a_j = +1/h`` on the first half of the ``h`` units and
``-1/h`` on the second half, with no output bias ``c`` (the authors' script keeps a random, frozen
``c``: a constant shift of ``f`` that we drop), the first layer has biases ``b_j`` as in that script
(``TheoryConfig.bias``), and training uses the hinge loss. The quantity the paper tracks
(Figure 3) is the mean norm of the projections of the first-layer weights ``w_j`` onto the core
and the background subspaces, :func:`projection_norms`; :func:`mean_direction_components` splits
the background part into its component along the background mean direction, the only part a
shift of every background coordinate sees, and the rest. :func:`bias_equivalence` measures the
identity behind the growth along that direction: the background mean is a second bias input,
so under SGD a neuron's weight along it moves ``sqrt(k_b)/2`` times as much as its bias (a
derivation of the book, not a statement of the paper).

Every experiment trains several configurations *at once*: :class:`TwoLayerNets` stacks E networks
(one batched matmul per layer), each member with its own activation, loss and optimizer, and
:func:`train_two_layer` updates them with full-batch steps of the core's training loop
(:func:`gtlib.engine.fit`).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from .checks import (SEED, Boolean, Device, InstanceOf, Interval, Options, Tensor, boundary,
                     check_int, count, fraction, nonnegative, positive, tuple_of)
from .config import Config, Result, param
from .engine import StackedOptimizer, fit
from .models import ACTIVATIONS, activation

__all__ = [
    # configs and results
    "DefaultConfig", "DistillConfig", "Mnist1dConfig", "TheoryConfig",
    # functions
    "activation_asymmetry", "bias_equivalence", "binary_accuracy", "init_two_layer",
    "label_correlations", "mean_direction_components", "off_subspace_direction",
    "orthogonal_shifts", "run_default",
    "run_distillation", "run_mnist1d", "run_theory", "shift_background", "shift_sweep",
    "signed_asymmetry", "theory_specs", "train_two_layer",
]


KINDS = ("theory", "default")
BINARY_LOSSES = ("hinge", "logistic")
OPTIMIZERS = ("sgd", "adamw")


# ---------------------------------------------------------------------------------------------
# Argument checks
# ---------------------------------------------------------------------------------------------
_int = check_int


class _Signs(Tensor):
    """Binary labels as this module uses them: a float tensor holding only -1.0 and +1.0."""

    def __init__(self, ndim: int | tuple[int, ...] = 1, optional: bool = False):
        super().__init__("float", ndim, optional=optional)

    def describe(self) -> str:
        return super().describe() + " of labels -1.0 and +1.0"

    def check(self, name: str, value):
        super().check(name, value)
        if value is None:
            return value
        if not bool(((value == 1) | (value == -1)).all()):
            bad = value[(value != 1) & (value != -1)]
            raise ValueError(f"{name} must hold the labels -1.0 and +1.0 only, got "
                             f"{float(bad[0])!r} among its values")
        return value


_X = Tensor("float", (2, 3))        # inputs (n, d), or one sample per member (E, n, d)
_RUN_SEED = Interval(int, 0, 2**32 - 1)  # an experiment derives its seeds as 1000 * seed + k
_ACT = Options(tuple(ACTIVATIONS))
_ACTS = tuple_of(_ACT)
_REAL = Interval(float)


def _tensor(name: str, value, ndim: int | tuple[int, ...]) -> torch.Tensor:
    # kept for tests/oracles/contamination_loops.py (the loops before gtlib.engine)
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    dims = (ndim,) if isinstance(ndim, int) else ndim
    if value.ndim not in dims:
        raise ValueError(f"{name} must have {' or '.join(map(str, dims))} dimensions, "
                         f"got shape {tuple(value.shape)}")
    return value


def _same_dtype(name: str, value: torch.Tensor, like: torch.Tensor, what: str) -> None:
    if value.dtype != like.dtype:
        raise TypeError(f"{name} must have the dtype of {what} ({like.dtype}), got {value.dtype}")


def _check_device(name: str, device) -> torch.device:
    """``device`` as a ``torch.device`` this machine has, or an error naming ``name``."""
    return torch.device(Device().check(name, device))


def _device(device) -> torch.device:
    """``device``, or the device of the run settings (``GTLIB_DEVICE``) when None."""
    if device is None:
        from .config import settings

        return torch.device(settings().device)
    return _check_device("device", device)


def _reals(name: str, values) -> list[float]:
    """A non-empty list, tuple or 1-D array of finite numbers, as a list of floats."""
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__len__"):
        raise TypeError(f"{name} must be a non-empty sequence of finite numbers, got "
                        f"{type(values).__name__}")
    if isinstance(values, (np.ndarray, torch.Tensor)) and values.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {tuple(values.shape)}")
    values = values.tolist() if isinstance(values, (np.ndarray, torch.Tensor)) else list(values)
    if not values:
        raise ValueError(f"{name} must be a non-empty sequence of finite numbers, got []")
    return [float(_REAL.check(f"{name}[{i}]", v)) for i, v in enumerate(values)]


# ---------------------------------------------------------------------------------------------
# The data model
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Embedding:
    """Orthonormal bases of the core and background subspaces of R^d.

    ``core`` is ``(d, k_c)`` and ``background`` is ``(d, k_b)``; together their columns are
    orthonormal, so the two subspaces are orthogonal (condition (iii) of the paper).
    """

    core: torch.Tensor
    background: torch.Tensor

    def __post_init__(self):
        for name in ("core", "background"):
            Tensor("float", 2).check(f"Embedding.{name}", getattr(self, name))
        if self.background.shape[0] != self.core.shape[0]:
            raise ValueError(f"Embedding.background must have as many rows as core "
                             f"({self.core.shape[0]}), got {self.background.shape[0]}")
        _same_dtype("Embedding.background", self.background, self.core, "core")
        if self.background.device != self.core.device:
            raise ValueError(f"Embedding.background must be on core's device "
                             f"({self.core.device}), got {self.background.device}")
        P = torch.cat([self.core, self.background], 1)
        if P.shape[1] > P.shape[0]:
            raise ValueError(f"Embedding.core and background must have at most {P.shape[0]} "
                             f"columns together (orthonormal in R^{P.shape[0]}), got {P.shape[1]}")
        gap = float((P.T @ P - torch.eye(P.shape[1], dtype=P.dtype, device=P.device)).abs().max())
        if gap > 1e-4:
            raise ValueError("Embedding.core and background must have orthonormal columns "
                             f"together (P^T P = I), got max |P^T P - I| = {gap:.3g}")

    @property
    def dim(self) -> int:
        return int(self.core.shape[0])

    def to(self, device) -> "Embedding":
        """The same bases on ``device``."""
        dev = _check_device("device", device)
        return Embedding(core=self.core.to(dev), background=self.background.to(dev))

    @boundary(z_core=Tensor("float", 2), z_background=Tensor("float", 2))
    def embed(self, z_core: torch.Tensor, z_background: torch.Tensor) -> torch.Tensor:
        """``x = P_c z_c + P_b z_b`` for row vectors ``z_c`` (n, k_c) and ``z_b`` (n, k_b)."""
        _same_dtype("z_core", z_core, self.core, "the embedding")
        _same_dtype("z_background", z_background, self.core, "the embedding")
        if z_core.shape[1] != self.core.shape[1] or z_background.shape[1] != self.background.shape[1]:
            raise ValueError(f"z_core must have {self.core.shape[1]} columns and z_background "
                             f"{self.background.shape[1]}, got {z_core.shape[1]} and "
                             f"{z_background.shape[1]}")
        if z_core.shape[0] != z_background.shape[0]:
            raise ValueError("z_core and z_background must have the same number of rows")
        return z_core @ self.core.T + z_background @ self.background.T


@boundary(d_core=count(), d_background=count(), dim=count(), seed=SEED)
def random_embedding(d_core: int = 32, d_background: int = 32, dim: int = 256,
                     seed: int = 0) -> Embedding:
    """A random orthonormal embedding of ``d_core + d_background`` coordinates into R^dim.

    The columns come from the QR decomposition of a Gaussian matrix (Haar-distributed up to signs),
    as in the authors' toy code.

    Raises
    ------
    TypeError, ValueError
        If a size is not a positive int or ``d_core + d_background > dim``.
    """
    if d_core + d_background > dim:
        raise ValueError(f"d_core + d_background must be <= dim, got {d_core} + {d_background} > {dim}")
    g = torch.Generator().manual_seed(int(seed))
    q, _ = torch.linalg.qr(torch.randn(dim, d_core + d_background, generator=g, dtype=torch.float64))
    q = q.float()
    return Embedding(core=q[:, :d_core].contiguous(), background=q[:, d_core:].contiguous())


@dataclass(frozen=True)
class ToyData:
    """A sample of the toy model: inputs ``x`` (n, d), labels ``y`` in {-1, +1} (float, (n,)),
    and the latent coordinates ``core`` (n, k_c) and ``background`` (n, k_b)."""

    x: torch.Tensor
    y: torch.Tensor
    core: torch.Tensor
    background: torch.Tensor

    def __post_init__(self):
        _X.check("ToyData.x", self.x)
        _Signs((1, 2)).check("ToyData.y", self.y)
        for name in ("core", "background"):
            _X.check(f"ToyData.{name}", getattr(self, name))
        for name in ("y", "core", "background"):
            v = getattr(self, name)
            rows = v.shape if name == "y" else v.shape[:-1]
            if rows != self.x.shape[:-1]:
                raise ValueError(f"ToyData.{name} must have one row per point of x "
                                 f"{tuple(self.x.shape[:-1])}, got shape {tuple(v.shape)}")


@boundary(n=count(2), kind=Options(KINDS), d_core=count())
def sample_core(n: int, kind: str, d_core: int, generator: torch.Generator):
    """Balanced core coordinates and labels of the ``"theory"`` or ``"default"`` configuration.

    Returns ``(z_core (n, d_core), y (n,))`` with the first half of the rows of class +1.
    """
    return _sample_core(n, kind, d_core, generator)


def _sample_core(n: int, kind: str, d_core: int, generator: torch.Generator):
    """:func:`sample_core` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    y = torch.ones(n)
    y[n // 2:] = -1.0
    if kind == "theory":
        z = torch.rand(n, d_core, generator=generator) * y[:, None]
    else:
        z = torch.randn(n, d_core, generator=generator)
        z = z / z.norm(dim=1, keepdim=True)
        z = z * torch.where(y > 0, 1.0, 2.0)[:, None]
    return z, y


@boundary(n=count(2), kind=Options(KINDS), seed=SEED)
def sample_toy(n: int, emb: Embedding, kind: str = "theory", seed: int = 0,
               centred: bool = False) -> ToyData:
    """Draw ``n`` balanced training-distribution points: core by ``kind``, background ``U[0,1]``.

    With ``centred`` the background is ``U[-1/2, 1/2]`` instead (the same draw minus 1/2): the
    control that removes the background's mean and keeps everything else.

    Raises
    ------
    TypeError, ValueError
        If ``emb`` is not an :class:`Embedding`, ``n`` < 2 or ``kind`` is unknown.
    """
    g = torch.Generator().manual_seed(int(seed))
    z_c, y = _sample_core(n, kind, emb.core.shape[1], g)
    z_b = torch.rand(len(y), emb.background.shape[1], generator=g)
    if centred:
        z_b = z_b - 0.5
    return ToyData(x=emb.embed(z_c, z_b), y=y, core=z_c, background=z_b)


@boundary(x=_X)
def shift_background(x: torch.Tensor, emb: Embedding,
                     magnitude: float = 1.0) -> torch.Tensor:
    """The OOD shift: subtract ``magnitude`` from every background coordinate.

    ``x - magnitude * P_b 1``. The core coordinates ``P_c^T x`` are unchanged, and at
    ``magnitude = 1`` a ``U[0,1]`` background becomes ``U[-1,0]``, distributed as the
    paper's test-time background ``-U[0,1]``.

    Parameters
    ----------
    x : torch.Tensor
        Inputs, one row per example; a torch.Tensor (non-empty, floating-point, 2 or
        3-dimensional, finite).
    emb : Embedding
        The embedding of core and background features; a Embedding.
    magnitude : float, default 1.0
        The shift subtracted from every background coordinate; a finite number.

    Returns
    -------
    torch.Tensor
        The shifted inputs (a new tensor).
    """
    if x.shape[-1] != emb.dim:
        raise ValueError(f"x must have {emb.dim} columns, got {x.shape[-1]}")
    return x - float(magnitude) * emb.background.sum(1)


@boundary(seed=SEED)
def off_subspace_direction(emb: Embedding, seed: int = 0) -> torch.Tensor:
    """A random unit vector of R^d orthogonal to both the core and the background subspaces.

    The training inputs never vary along it, so the first-layer weights there only decay. A
    shift of the inputs along it, with the norm ``magnitude * sqrt(k_b)`` of the background
    shift, is the control for that shift: as large a perturbation, in a direction training
    has not shaped.

    Parameters
    ----------
    emb : Embedding
        The embedding of core and background features; a Embedding.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**63 - 1].

    Returns
    -------
    torch.Tensor
        The unit vector.

    Raises
    ------
    ValueError
        If the two subspaces fill R^d (no direction is left).
    """
    P = torch.cat([emb.core, emb.background], 1)
    if P.shape[1] >= emb.dim:
        raise ValueError("emb: the core and background subspaces fill R^d (dim "
                         f"{emb.dim} = d_core + d_background): no direction is left")
    g = torch.Generator().manual_seed(int(seed))
    v = torch.randn(emb.dim, generator=g).to(P)
    v = v - P @ (P.T @ v)
    return v / v.norm()


@boundary(n_background=count(), magnitude=_REAL, count=count(), seed=SEED)
def orthogonal_shifts(n_background: int, magnitude: float, count: int,
                      seed: int = 0) -> torch.Tensor:
    """Random shifts of the background as large as the shift along its mean, orthogonal to it.

    Row ``r`` is ``magnitude * sqrt(k) * u_r`` with ``u_r`` a unit vector of ``R^k``
    orthogonal to ``1`` (a seeded Gaussian, centred and normalized): subtracted from the
    background it moves it as far as the shift ``z_b -> z_b - magnitude * 1`` does, in a
    direction with no component along the background's mean.

    Parameters
    ----------
    n_background : int
        Background coordinates ``k``; an int >= 2.
    magnitude : float
        The magnitude of the shift along the mean that the rows match in norm; a finite
        number.
    count : int
        Number of directions; an int >= 1.
    seed : int, default 0
        Seed of the Gaussian draws; an int in [0, 2**63 - 1].

    Returns
    -------
    torch.Tensor
        The shifts, shape ``(count, n_background)``, float32.
    """
    if n_background < 2:
        raise ValueError(f"n_background must be >= 2 (a direction orthogonal to 1), "
                         f"got {n_background}")
    g = torch.Generator().manual_seed(int(seed))
    r = torch.randn(count, n_background, generator=g)
    r = r - r.mean(1, keepdim=True)
    return float(magnitude) * np.sqrt(n_background) * r / r.norm(dim=1, keepdim=True)


@boundary(features=Tensor("float", 2), y=_Signs())
def label_correlations(features: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Pearson correlation of every column of ``features`` with the labels ``y``.

    Pearson correlation of every column of ``features`` (n, k) with the labels ``y`` (n,)
    of -1.0 and +1.0.

    A constant column gets correlation 0. Used to check condition (i) of the paper: the
    background is uncorrelated with the label.

    Parameters
    ----------
    features : torch.Tensor
        Features, one column each, ``(n, k)``; a torch.Tensor (non-empty, floating-point,
        2-dimensional, finite).
    y : torch.Tensor
        Labels, -1.0 or +1.0; a torch.Tensor (non-empty, floating-point, 1-dimensional, finite) of
        labels -1.0 and +1.0.

    Returns
    -------
    torch.Tensor
        One correlation per column.
    """
    if features.shape[0] != y.shape[0] or y.shape[0] < 2:
        raise ValueError("features and y must have the same number (>= 2) of rows")
    f = features.double() - features.double().mean(0)
    t = y.double() - y.double().mean()
    denom = f.norm(dim=0) * t.norm()
    corr = (f * t[:, None]).sum(0) / torch.where(denom > 0, denom, torch.ones_like(denom))
    return torch.where(denom > 0, corr, torch.zeros_like(corr)).float()


# ---------------------------------------------------------------------------------------------
# Two-layer networks, E at once
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NetSpec(Config):
    """How one member of a :class:`TwoLayerNets` stack is built and trained.

    ``act``: an activation of :data:`gtlib.models.ACTIVATIONS` (``"identity"`` gives the linear
    network of the paper's comparison); ``loss``: ``"hinge"`` (``max(0, 1 - y f)``) or
    ``"logistic"`` (``log(1 + exp(-y f))``); ``optimizer``: ``"sgd"`` (with ``momentum``, PyTorch's
    coupled weight decay) or ``"adamw"`` (decoupled weight decay, betas 0.9/0.999).
    """

    act: str = param("relu", Options(tuple(ACTIVATIONS)))
    loss: str = param("hinge", Options(BINARY_LOSSES))
    optimizer: str = param("sgd", Options(OPTIMIZERS))
    lr: float = param(1e-3, positive())
    momentum: float = param(0.9, fraction("left"))
    weight_decay: float = param(1e-3, nonnegative())
    label: str = param("", InstanceOf(str))

    @property
    def name(self) -> str:
        return self.label or f"{self.act}/{self.optimizer}/{self.loss}"


class TwoLayerNets(torch.nn.Module):
    """E two-layer networks ``f_e(x) = a_e . act_e(W_e x + b_e) + c_e`` evaluated together.

    Parameters
    ----------
    W : tensor (E, h, d)
        First-layer weights.
    acts : sequence of E activation names
        One per member; members are grouped by activation in the forward pass.
    a : tensor (E, h)
        Output weights.
    b : tensor (E, h) or None
        First-layer biases (None: no biases, as in the theory).
    c : tensor (E,) or None
        Output biases.
    train_output : bool
        If False, ``a`` (and ``c``) are frozen buffers, as in the paper's theory configuration.
    """

    @boundary(W=Tensor("float", 3), acts=_ACTS, a=Tensor("float", 2),
              b=Tensor("float", 2, optional=True), c=Tensor("float", 1, optional=True))
    def __init__(self, W: torch.Tensor, acts: Sequence[str], a: torch.Tensor,
                 b: torch.Tensor | None = None, c: torch.Tensor | None = None,
                 train_output: bool = False):
        super().__init__()
        E, h, _ = W.shape
        if len(acts) != E:
            raise ValueError(f"acts must have one entry per member ({E}), got {len(acts)}")
        for name, v, shape in (("a", a, (E, h)), ("b", b, (E, h)), ("c", c, (E,))):
            if v is None:
                continue
            if tuple(v.shape) != shape:
                raise ValueError(f"{name} must have shape {shape}, got {tuple(v.shape)}")
            _same_dtype(name, v, W, "W")
            if v.device != W.device:
                raise ValueError(f"{name} must be on W's device ({W.device}), got {v.device}")
        self.acts = list(acts)
        self.W = torch.nn.Parameter(W.detach().clone())
        self.b = None if b is None else torch.nn.Parameter(b.detach().clone())
        if train_output:
            self.a = torch.nn.Parameter(a.detach().clone())
            self.c = None if c is None else torch.nn.Parameter(c.detach().clone())
        else:
            self.register_buffer("a", a.detach().clone())
            self.register_buffer("c", None if c is None else c.detach().clone())
        groups: dict[str, list[int]] = {}
        for i, name in enumerate(self.acts):
            groups.setdefault(name, []).append(i)
        self._groups = [(name, torch.tensor(idx)) for name, idx in groups.items()]
        order = torch.cat([idx for _, idx in self._groups])
        self.register_buffer("_inverse", torch.argsort(order), persistent=False)
        for k, (_, idx) in enumerate(self._groups):
            self.register_buffer(f"_group{k}", idx, persistent=False)

    @property
    def size(self) -> int:
        return int(self.W.shape[0])

    @property
    def width(self) -> int:
        return int(self.W.shape[1])

    def _check_input(self, x: torch.Tensor, name: str = "x") -> torch.Tensor:
        """``x`` if the members can read it: a finite float tensor ``(n, d)`` or ``(E, n, d)``
        of the weights' dtype (else an error naming ``name``)."""
        _X.check(name, x)
        if x.shape[-1] != self.W.shape[2]:
            raise ValueError(f"{name} must have {self.W.shape[2]} columns, got {x.shape[-1]}")
        if x.ndim == 3 and x.shape[0] != self.W.shape[0]:
            raise ValueError(f"{name} (E, n, d) must have one sample per member "
                             f"({self.W.shape[0]}), got {x.shape[0]}")
        _same_dtype(name, x, self.W, "the weights")
        return x

    def preactivations(self, x: torch.Tensor) -> torch.Tensor:
        """``W_e x + b_e`` for every member, ``(E, n, h)``; ``x`` is ``(n, d)`` or ``(E, n, d)``."""
        return self._preactivations(self._check_input(x))

    def hidden(self, x: torch.Tensor) -> torch.Tensor:
        """The representation ``act_e(W_e x + b_e)``, ``(E, n, h)``."""
        return self._hidden(self._check_input(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Outputs ``(E, n)``."""
        return self._forward(self._check_input(x))

    # unchecked versions for the training steps (their inputs were checked once, on entry)
    def _preactivations(self, x: torch.Tensor) -> torch.Tensor:
        pre = torch.matmul(x, self.W.transpose(1, 2))
        return pre if self.b is None else pre + self.b.unsqueeze(1)

    def _hidden(self, x: torch.Tensor) -> torch.Tensor:
        pre = self._preactivations(x)
        if len(self._groups) == 1:
            return activation(self._groups[0][0])(pre)
        parts = [activation(name)(pre[getattr(self, f"_group{k}")])
                 for k, (name, _) in enumerate(self._groups)]
        return torch.cat(parts)[self._inverse]

    def _forward(self, x: torch.Tensor) -> torch.Tensor:
        out = (self._hidden(x) * self.a.unsqueeze(1)).sum(-1)
        return out if self.c is None else out + self.c.unsqueeze(1)


@boundary(acts=_ACTS, dim=count(), width=count(), seeds=tuple_of(SEED))
def init_two_layer(acts: Sequence[str], dim: int, width: int, seeds: Sequence[int],
                   frozen_output: bool = True, bias: bool = False) -> TwoLayerNets:
    """E freshly initialized two-layer networks, member ``e`` seeded by ``seeds[e]``.

    First-layer weights (and biases) use PyTorch's ``nn.Linear`` default, ``U(-1/sqrt(d), 1/sqrt(d))``.
    With ``frozen_output`` the output layer is fixed at ``+1/h`` on the first half of the units and
    ``-1/h`` on the second (the theory configuration of the paper, ``h`` even); otherwise it is
    trainable, initialized like ``nn.Linear(h, 1)``, with an output bias when ``bias``.

    Parameters
    ----------
    acts : Sequence[str]
        One activation per member; a tuple (at least 1 item) of items each one of ('relu', 'gelu',
        'silu', 'tanh', 'sigmoid', 'leaky_relu', 'identity').
    dim : int
        Input dimension; an int >= 1.
    width : int
        Hidden width; an int >= 1.
    seeds : Sequence[int]
        Seeds, one per model or run; a tuple (at least 1 item) of items each an int in [0, 2**63 -
        1].
    frozen_output : bool, default True
        Whether the output layer is frozen; a bool.
    bias : bool, default False
        Whether the first layer has biases; a bool.

    Returns
    -------
    TwoLayerNets
        The stack of networks.

    Raises
    ------
    TypeError, ValueError
        On a bad size, an unknown activation, seeds and acts of different lengths, or an odd
        ``width`` with ``frozen_output``.
    """
    if len(acts) != len(seeds):
        raise ValueError(f"acts and seeds must have equal lengths, got {len(acts)} "
                         f"and {len(seeds)}")
    if frozen_output and width % 2:
        raise ValueError(f"width must be even with a frozen output layer, got {width}")
    Ws, bs, as_, cs = [], [], [], []
    for s in seeds:
        g = torch.Generator().manual_seed(int(s))
        lim = 1.0 / np.sqrt(dim)
        Ws.append((torch.rand(width, dim, generator=g) * 2 - 1) * lim)
        bs.append((torch.rand(width, generator=g) * 2 - 1) * lim)
        if frozen_output:
            as_.append(torch.cat([torch.full((width // 2,), 1.0 / width),
                                  torch.full((width // 2,), -1.0 / width)]))
        else:
            lim2 = 1.0 / np.sqrt(width)
            as_.append((torch.rand(width, generator=g) * 2 - 1) * lim2)
            cs.append((torch.rand((), generator=g) * 2 - 1) * lim2)
    return TwoLayerNets(torch.stack(Ws), acts, torch.stack(as_),
                        b=torch.stack(bs) if bias else None,
                        c=torch.stack(cs) if (bias and not frozen_output) else None,
                        train_output=not frozen_output)


# ---------------------------------------------------------------------------------------------
# Losses and metrics
# ---------------------------------------------------------------------------------------------
def _check_outputs(f: torch.Tensor, y: torch.Tensor) -> None:
    """Outputs ``f`` and labels ``y`` that pair up over the last axis (``y`` broadcasts)."""
    if y.ndim > f.ndim or f.shape[f.ndim - y.ndim:] != y.shape:
        raise ValueError(f"y must have the shape of f {tuple(f.shape)} or of its last axes, "
                         f"got {tuple(y.shape)}")


@boundary(name=Options(BINARY_LOSSES), f=Tensor("float"), y=_Signs((1, 2)))
def binary_loss(name: str, f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean hinge ``max(0, 1 - y f)`` or logistic ``log(1 + exp(-y f))`` loss over the last axis.

    ``y`` holds the labels -1.0 and +1.0, with the shape of ``f`` or of its last axes."""
    _check_outputs(f, y)
    return _binary_loss(name, f, y)


def _binary_loss(name: str, f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    if name == "hinge":
        return F.relu(1.0 - y * f).mean(-1)
    if name == "logistic":
        return F.softplus(-y * f).mean(-1)
    raise ValueError(f"loss must be one of {BINARY_LOSSES}, got {name!r}")


@boundary(f=Tensor("float"), y=_Signs((1, 2)))
def binary_accuracy(f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Fraction of points with ``sign(f) == y`` (ties count as errors), over the last axis.

    Parameters
    ----------
    f : torch.Tensor
        The networks' outputs; a torch.Tensor (non-empty, floating-point, finite).
    y : torch.Tensor
        Labels, -1.0 or +1.0; a torch.Tensor (non-empty, floating-point, 1 or 2-dimensional,
        finite) of labels -1.0 and +1.0.

    Returns
    -------
    torch.Tensor
        The accuracy over the last axis.
    """
    _check_outputs(f, y)
    return _binary_accuracy(f, y)


def _binary_accuracy(f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (f * y > 0).float().mean(-1)


def _check_weights(W: torch.Tensor, emb: Embedding) -> None:
    if W.shape[-1] != emb.dim:
        raise ValueError(f"W must have {emb.dim} columns, got {W.shape[-1]}")
    _same_dtype("W", W, emb.core, "emb")


@boundary(W=Tensor("float", (2, 3)))
def projection_norms(W: torch.Tensor, emb: Embedding) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-neuron norms of the first-layer weights projected on the core and background subspaces.

    ``||P_c^T w_j||`` and ``||P_b^T w_j||`` for the rows ``w_j`` of ``W`` ((h, d) or (E, h, d)):
    the quantities whose means the paper plots in Figure 3.
    """
    return _projection_norms(W, emb)


def _projection_norms(W: torch.Tensor, emb: Embedding) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`projection_norms` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    _check_weights(W, emb)
    return (W @ emb.core).norm(dim=-1), (W @ emb.background).norm(dim=-1)


@boundary(W=Tensor("float", (2, 3)))
def mean_direction_components(W: torch.Tensor,
                              emb: Embedding) -> tuple[torch.Tensor, torch.Tensor]:
    """Split each neuron's background weights ``P_b^T w_j`` along the mean direction.

    With ``e = 1 / sqrt(k_b)`` (the unit vector along all ``k_b`` background
    coordinates), returns the signed components ``e . P_b^T w_j`` and the norms of
    the remainders ``||P_b^T w_j - (e . P_b^T w_j) e||``, each ``(h,)`` or
    ``(E, h)``. A shift of every background coordinate by ``-m`` moves neuron ``j``'s
    pre-activation by ``-m sqrt(k_b) (e . P_b^T w_j)``: the shift sees only the first
    part.

    Parameters
    ----------
    W : torch.Tensor
        First-layer weights; a torch.Tensor (non-empty, floating-point, 2 or
        3-dimensional, finite).
    emb : Embedding
        The embedding of core and background features; a Embedding.

    Returns
    -------
    tuple[torch.Tensor, torch.Tensor]
        The components along and off the mean direction (see above).

    References
    ----------
    Zhang, Zhao, Chen, Jiang and Chen (2024), "Feature Contamination: Neural Networks
    Learn Uncorrelated Features and Fail to Generalize".
    """
    _check_weights(W, emb)
    v = W @ emb.background                       # P_b^T w_j, (..., h, k_b)
    k = v.shape[-1]
    along = v.sum(-1) / np.sqrt(k)               # e . P_b^T w_j
    orth = (v - along[..., None] / np.sqrt(k)).norm(dim=-1)
    return along, orth


@boundary(W0=Tensor("float", 2), W1=Tensor("float", 2), b0=Tensor("float", 1),
          b1=Tensor("float", 1), decay=nonnegative())
def bias_equivalence(W0: torch.Tensor, W1: torch.Tensor, b0: torch.Tensor, b1: torch.Tensor,
                     emb: Embedding, decay: float = 1.0) -> dict[str, float]:
    """How closely each neuron's weight change along the background mean tracks its bias change.

    The gradient of a loss with respect to ``w_j``, projected on the background mean direction
    ``e``, is ``sqrt(k_b) / 2`` times the gradient with respect to ``b_j`` plus a term that
    averages the centred background coordinates (for a ``U[0,1]`` background, whose mean is
    ``sqrt(k_b)/2 e``). Under SGD with weight decay both move by the same linear recursion, so
    ``d_e = along_1 - decay * along_0`` and ``d_b = b_1 - decay * b_0`` satisfy
    ``d_e = sqrt(k_b) / 2 * d_b`` up to that centred term (``decay``: the factor by which weight
    decay alone would multiply a weight over the run; 1 for none).

    Parameters
    ----------
    W0, W1 : torch.Tensor
        First-layer weights ``(h, d)`` before and after training.
    b0, b1 : torch.Tensor
        First-layer biases ``(h,)`` before and after training.
    emb : Embedding
        The data's embedding (its background subspace defines ``e``).
    decay : float
        Weight decay's factor over the run (see above).

    Returns
    -------
    dict
        ``slope`` (least squares of ``d_e`` on ``d_b`` through the origin), ``corr`` (their
        correlation across neurons), ``bias_change`` (the mean ``|b_1 - b_0|``), ``bias_move``
        (the mean ``|d_b|``: what training moved the biases beyond weight decay's own shrinking)
        and ``weight_change`` (the mean ``|d_e|``).
    """
    if W0.shape != W1.shape:
        raise ValueError(f"W0 and W1 must have the same shape, got {tuple(W0.shape)} and "
                         f"{tuple(W1.shape)}")
    for name, b in (("b0", b0), ("b1", b1)):
        if b.shape[0] != W0.shape[0]:
            raise ValueError(f"{name} must have one entry per neuron ({W0.shape[0]}), "
                             f"got {b.shape[0]}")
    if W0.shape[0] < 2:
        raise ValueError(f"W0 must have at least two neurons (rows), got {W0.shape[0]}")
    a0, _ = mean_direction_components(W0, emb)
    a1, _ = mean_direction_components(W1, emb)
    de = (a1 - decay * a0).double()
    db = (b1 - decay * b0).double()
    if float(db.abs().max()) == 0.0 or float(db.std()) == 0.0 or float(de.std()) == 0.0:
        raise ValueError("b1: the corrected bias changes (and the weight changes along e) must "
                         "vary across neurons to define a slope and a correlation")
    corr = float(torch.corrcoef(torch.stack([de, db]))[0, 1])
    return {"slope": float((de * db).sum() / (db * db).sum()), "corr": corr,
            "bias_change": float((b1 - b0).abs().mean()), "bias_move": float(db.abs().mean()),
            "weight_change": float(de.abs().mean())}


@boundary(pre=Tensor("float", (2, 3)), y=_Signs())
def activation_asymmetry(pre: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Per-neuron ``|P(active | y=+1) - P(active | y=-1)|``.

    Per-neuron ``|P(active | y=+1) - P(active | y=-1)|`` with *active* meaning pre-activation > 0.

    ``pre`` is ``(n, h)`` or ``(E, n, h)``; ``y`` in {-1, +1} is ``(n,)``. Theorem 4.1 of the paper:
    after training, most neurons are active mostly on one ("positive") class.

    Parameters
    ----------
    pre : torch.Tensor
        Pre-activations of the first layer, ``(..., n, width)``; a torch.Tensor (non-empty,
        floating-point, 2 or 3-dimensional, finite).
    y : torch.Tensor
        Labels, -1.0 or +1.0; a torch.Tensor (non-empty, floating-point, 1-dimensional, finite) of
        labels -1.0 and +1.0.

    Returns
    -------
    torch.Tensor
        The asymmetry of every neuron.

    References
    ----------
    Zhang, Zhao, Chen, Jiang and Chen (2024), "Feature Contamination: Neural Networks Learn
    Uncorrelated Features and Fail to Generalize".
    """
    if pre.shape[-2] != y.shape[0]:
        raise ValueError(f"pre must have one row per label ({y.shape[0]}), got {pre.shape[-2]}")
    pos, neg = y > 0, y < 0
    if not pos.any() or not neg.any():
        raise ValueError("y must contain both classes -1 and +1")
    active = (pre > 0).float()
    return (active[..., pos, :].mean(-2) - active[..., neg, :].mean(-2)).abs()


@boundary(pre=Tensor("float", (2, 3)), y=_Signs(), a=Tensor("float", (1, 2)),
          act=_ACT)
def signed_asymmetry(pre: torch.Tensor, y: torch.Tensor, a: torch.Tensor,
                     act: str = "relu") -> torch.Tensor:
    """Per-neuron ``sign(a_j) (E[act'(pre_j) | y=+1] - E[act'(pre_j) | y=-1])``.

    For ReLU, ``act'`` is 1 on active units and 0 elsewhere, so this is
    ``sign(a_j) (P(active | y=+1) - P(active | y=-1))``: positive when neuron ``j``
    fires mostly on the class its output weight ``a_j`` votes for (its "positive"
    class, Theorem 4.1), negative when it fires mostly on the other class. For
    another activation it is the same class asymmetry of the gate ``act'`` through
    which the neuron's gradient flows. ``pre`` is ``(n, h)`` or ``(E, n, h)``, ``a``
    is ``(h,)`` or ``(E, h)``.

    Parameters
    ----------
    pre : torch.Tensor
        Pre-activations of the first layer, ``(..., n, width)``; a torch.Tensor
        (non-empty, floating-point, 2 or 3-dimensional, finite).
    y : torch.Tensor
        Labels, -1.0 or +1.0; a torch.Tensor (non-empty, floating-point,
        1-dimensional, finite) of labels -1.0 and +1.0.
    a : torch.Tensor
        Output weights, one per neuron; a torch.Tensor (non-empty, floating-point, 1
        or 2-dimensional, finite).
    act : str, default 'relu'
        The activation; one of ('relu', 'gelu', 'silu', 'tanh', 'sigmoid',
        'leaky_relu', 'identity').

    Returns
    -------
    torch.Tensor
        The signed asymmetry of every neuron.
    """
    if a.shape[-1] != pre.shape[-1]:
        raise ValueError(f"a must have one entry per neuron ({pre.shape[-1]}), "
                         f"got {a.shape[-1]}")
    if pre.shape[-2] != y.shape[0]:
        raise ValueError(f"pre must have one row per label ({y.shape[0]}), "
                         f"got {pre.shape[-2]}")
    pos, neg = y > 0, y < 0
    if not pos.any() or not neg.any():
        raise ValueError("y must contain both classes -1 and +1")
    if act == "relu":
        gate = (pre > 0).float()
    else:
        with torch.enable_grad():
            z = pre.detach().clone().requires_grad_(True)
            (gate,) = torch.autograd.grad(activation(act)(z).sum(), z)
    return torch.sign(a) * (gate[..., pos, :].mean(-2) - gate[..., neg, :].mean(-2))


@boundary(h=Tensor("float", (2, 3)), target=Tensor("float", (2, 3)))
def relative_error(h: torch.Tensor, target: torch.Tensor) -> float:
    """``sum ||h - target||^2 / sum ||target||^2``: the relative error of a representation fit."""
    return _relative_error(h, target)


def _relative_error(h: torch.Tensor, target: torch.Tensor) -> float:
    """:func:`relative_error` without its boundary checks (for callers whose arguments are
    already checked or built here)."""
    if h.shape != target.shape:
        raise ValueError(f"h and target must have the same shape, got {tuple(h.shape)} and "
                         f"{tuple(target.shape)}")
    denom = float((target ** 2).sum())
    if denom == 0:
        raise ValueError("target must not be identically zero")
    return float(((h - target) ** 2).sum()) / denom


# ---------------------------------------------------------------------------------------------
# Training: gtlib.engine's loop, full batch, E members with their own losses and optimizers
# ---------------------------------------------------------------------------------------------
def _optimizer(params, specs: Sequence[NetSpec]) -> StackedOptimizer:
    """The core's :class:`~gtlib.engine.StackedOptimizer` with member ``e`` set by ``specs[e]``.

    Member ``e`` is updated as PyTorch's ``SGD(lr, momentum, weight_decay)`` or
    ``AdamW(lr, weight_decay=...)`` (betas 0.9/0.999) would update it alone, in the
    parameters' precision, so one stack mixes optimizers, learning rates and weight decays.
    ``params`` carry the member axis first; those that do not require grad (a frozen output
    layer) are left out.
    """
    return StackedOptimizer([p for p in params if p.requires_grad],
                            optimizer=[s.optimizer for s in specs], lr=[s.lr for s in specs],
                            momentum=[s.momentum for s in specs],
                            weight_decay=[s.weight_decay for s in specs], members=len(specs))


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
            raise ValueError(f"name: the curve {name!r} was not recorded (the ID and OOD curves "
                             "need a test set)")
        return torch.stack(getattr(self, name)).cpu().numpy()


_CURVES = tuple(f for f in ToyHistory.__dataclass_fields__ if f != "step")


def _member_losses(specs: Sequence[NetSpec], f: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    hinge = torch.tensor([s.loss == "hinge" for s in specs], device=f.device)
    if hinge.all():
        return _binary_loss("hinge", f, y)
    if not hinge.any():
        return _binary_loss("logistic", f, y)
    return torch.where(hinge, _binary_loss("hinge", f, y), _binary_loss("logistic", f, y))


def _check_specs(specs: Sequence[NetSpec], net: TwoLayerNets) -> None:
    if len(specs) != net.size:
        raise ValueError(f"specs must have one entry per member ({net.size}), got {len(specs)}")
    for e, s in enumerate(specs):
        if s.act != net.acts[e]:
            raise ValueError(f"specs[{e}].act is {s.act!r} but the net's member {e} uses "
                             f"{net.acts[e]!r}")


def _check_sample(net: TwoLayerNets, emb: Embedding, x: torch.Tensor, y: torch.Tensor,
                  names: tuple[str, str] = ("x", "y")) -> None:
    """Inputs the members read and their labels, in the embedding's space."""
    net._check_input(x, names[0])
    if x.shape[:-1] != y.shape:
        raise ValueError(f"{names[0]} (n, d) or (E, n, d) and {names[1]} (n,) or (E, n) must "
                         f"match, got {tuple(x.shape)} and {tuple(y.shape)}")
    if emb.dim != x.shape[-1]:
        raise ValueError(f"emb must embed into the inputs' R^{x.shape[-1]}, got R^{emb.dim}")
    _same_dtype("emb", emb.core, x, names[0])


@boundary(steps=count(0), x=_X, y=_Signs((1, 2)), x_test=Tensor("float", (2, 3), optional=True),
          y_test=_Signs((1, 2), optional=True), record_every=count())
def train_two_layer(net: TwoLayerNets, specs: Sequence[NetSpec], x: torch.Tensor, y: torch.Tensor,
                    steps: int, emb: Embedding, x_test: torch.Tensor | None = None,
                    y_test: torch.Tensor | None = None, shift: float = 1.0,
                    record_every: int = 25) -> ToyHistory:
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
        raise ValueError("x_test and y_test must be given together, got "
                         f"{'x_test' if y_test is None else 'y_test'} alone")
    if x_test is not None:
        _check_sample(net, emb, x_test, y_test, ("x_test", "y_test"))
    x_ood = None if x_test is None else shift_background(x_test, emb, shift)
    opt = _optimizer(net.parameters(), specs)
    hist = ToyHistory()
    norms, components = _projection_norms, mean_direction_components

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
    fit(lambda step, batch: _member_losses(specs, net._forward(x), y), opt, steps, check=record,
        every=record_every)
    return hist


@boundary(x=_X, y=_Signs((1, 2)), magnitudes=None)
@torch.no_grad()
def shift_sweep(net: TwoLayerNets, specs: Sequence[NetSpec], x: torch.Tensor, y: torch.Tensor,
                emb: Embedding, magnitudes: Sequence[float]) -> dict[str, np.ndarray]:
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
    return {"magnitude": np.asarray(magnitudes, dtype=float), "loss": torch.stack(loss).cpu().numpy(),
            "acc": torch.stack(acc).cpu().numpy(), "margins": torch.stack(marg).cpu().numpy()}


@boundary(h_train=Tensor("float", 2), y_train=_Signs(), max_iter=count())
def linear_probe(h_train: torch.Tensor, y_train: torch.Tensor,
                 evaluations: Sequence[tuple[torch.Tensor, torch.Tensor]], max_iter: int = 3000
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
            raise TypeError(f"evaluations[{i}] must be a pair (h, y), got {type(pair).__name__}")
        h, y = pair
        Tensor("float", 2).check(f"evaluations[{i}] h", h)
        _Signs().check(f"evaluations[{i}] y", y)
        if h.shape[1] != h_train.shape[1] or h.shape[0] != y.shape[0]:
            raise ValueError(f"evaluations[{i}] must pair h (m, {h_train.shape[1]}) with y (m,), "
                             f"got {tuple(h.shape)} and {tuple(y.shape)}")
    scaler = StandardScaler().fit(h_train.cpu().numpy())
    clf = LogisticRegression(max_iter=max_iter).fit(
        scaler.transform(h_train.cpu().numpy()), y_train.cpu().numpy())

    out = []
    for h, y in evaluations:
        out.append(float(clf.score(scaler.transform(h.cpu().numpy()), y.cpu().numpy())))
    return out


# ---------------------------------------------------------------------------------------------
# The toy experiments' shared settings
# ---------------------------------------------------------------------------------------------
@dataclass
class ToyConfig(Config):
    """What the three toy experiments (:class:`TheoryConfig`, :class:`DefaultConfig`,
    :class:`DistillConfig`) share: the data model of Section 4.1 of the paper and the network.

    ``n`` training points in R^``dim``, with ``d_core`` label-carrying core coordinates and
    ``d_background`` background coordinates (the two subspaces must fit: ``d_core +
    d_background <= dim``); ``width`` hidden units; the optimizers' ``weight_decay``;
    ``centred`` draws the background from ``U[-1/2, 1/2]`` instead of ``U[0, 1]`` (see
    :func:`sample_toy`). Each experiment's config adds its own training settings.
    """

    n: int = param(1000, count())
    d_core: int = param(32, count())
    d_background: int = param(32, count())
    dim: int = param(256, count())
    width: int = param(256, count())
    weight_decay: float = param(1e-3, nonnegative())
    centred: bool = param(False, Boolean())

    def _check_together(self) -> None:
        if self.d_core + self.d_background > self.dim:
            self._refuse("dim", f">= d_core + d_background = {self.d_core + self.d_background}")


# ---------------------------------------------------------------------------------------------
# Experiment 1: the theory configuration, ReLU vs linear, and the variants of Figure 3(d)
# ---------------------------------------------------------------------------------------------
VARIANTS = ("GELU", "SiLU", "leaky ReLU", "tanh", "sigmoid", "AdamW", "logistic loss")


@dataclass
class TheoryConfig(ToyConfig):
    """The theory-matching toy configuration.

    The theory-matching toy configuration (authors' code: hinge loss, SGD with momentum 0.9,
    frozen output layer +-1/h, lr 1e-3, weight decay 1e-3, 20 000 full-batch steps).

    Full-batch SGD with a small step follows gradient flow, so what matters is the *time*
    ``lr * steps``: the quick preset takes 400 steps of lr 0.05 (time 20, as 20 000 x 1e-3).
    AdamW's steps are normalized, so it gets its own ``adamw_lr``. ``bias`` gives the first
    layer biases, as the authors' script does; the frozen output layer has no bias (the script
    keeps its random initial output bias, frozen: a constant shift of ``f``, which we drop).
    ``centred`` draws the background from ``U[-1/2, 1/2]`` (the control of the mechanism).

    Parameters
    ----------
    n : int, default 1000
        Training points; an int >= 1.
    d_core : int, default 32
        Label-carrying core coordinates; an int >= 1.
    d_background : int, default 32
        Background coordinates (independent of the label); an int >= 1.
    dim : int, default 256
        Ambient dimension (``d_core + d_background <= dim``); an int >= 1.
    width : int, default 256
        Hidden width; an int >= 1.
    weight_decay : float, default 0.001
        Weight decay; a finite number >= 0.
    centred : bool, default False
        Whether the background is drawn from ``U[-1/2, 1/2]`` instead of ``U[0, 1]``; a bool.
    n_test : int, default 1000
        Number of test examples; an int >= 1.
    steps : int, default 400
        Number of optimizer steps; an int >= 1.
    lr : float, default 0.05
        Learning rate; a finite number > 0.
    adamw_lr : float, default 0.0025
        Learning rate of the AdamW variants (their steps are normalized); a finite number > 0.
    momentum : float, default 0.9
        SGD momentum; a finite number in [0, 1).
    bias : bool, default True
        Whether the first layer has biases; a bool.
    seeds_per_variant : int, default 1
        Networks trained per variant; an int >= 1.
    record_every : int, default 10
        Steps between two recorded measurements; an int >= 1.
    variants : tuple[str, ...], optional
        The variants trained next to the ReLU and linear networks (see :func:`theory_specs`); a
        tuple (at least 0 items, without repeats) of items each a str.

    References
    ----------
    Zhang, Zhao, Chen, Jiang and Chen (2024), "Feature Contamination: Neural Networks Learn
    Uncorrelated Features and Fail to Generalize".
    """

    FULL = dict(steps=20_000, lr=1e-3, adamw_lr=1e-3, seeds_per_variant=3, record_every=200)

    n_test: int = param(1000, count())
    steps: int = param(400, count())
    lr: float = param(0.05, positive())
    adamw_lr: float = param(2.5e-3, positive())
    momentum: float = param(0.9, fraction("left"))
    bias: bool = param(True, Boolean())
    seeds_per_variant: int = param(1, count())
    record_every: int = param(10, count())
    variants: tuple[str, ...] = param(VARIANTS, tuple_of(InstanceOf(str), min_len=0, distinct=True))


@boundary()
def theory_specs(cfg: TheoryConfig) -> list[NetSpec]:
    """The configurations of the theory experiment: ReLU, linear, then ``cfg.variants``.

    Parameters
    ----------
    cfg : TheoryConfig
        The experiment's settings; a TheoryConfig.

    Returns
    -------
    list[NetSpec]
        One spec per network.
    """
    base = NetSpec(act="relu", loss="hinge", optimizer="sgd", lr=cfg.lr, momentum=cfg.momentum,
                   weight_decay=cfg.weight_decay, label="ReLU")
    table = {
        "linear": replace(base, act="identity", label="linear"),
        "GELU": replace(base, act="gelu", label="GELU"),
        "SiLU": replace(base, act="silu", label="SiLU"),
        "leaky ReLU": replace(base, act="leaky_relu", label="leaky ReLU"),
        "tanh": replace(base, act="tanh", label="tanh"),
        "sigmoid": replace(base, act="sigmoid", label="sigmoid"),
        "AdamW": replace(base, optimizer="adamw", lr=cfg.adamw_lr, label="AdamW"),
        "logistic loss": replace(base, loss="logistic", label="logistic loss"),
    }
    unknown = [v for v in cfg.variants if v not in table or v == "linear"]
    if unknown:
        raise ValueError(f"variants must be among {sorted(set(table) - {'linear'})}, got {unknown}")
    return [base, table["linear"]] + [table[v] for v in cfg.variants]


@dataclass
class ToyResult(Result):
    """What a toy experiment returns: the data, the trained stack and its history."""

    cfg: object
    emb: Embedding
    train: ToyData
    test: ToyData
    specs: list[NetSpec]
    net: TwoLayerNets
    W_init: torch.Tensor
    history: ToyHistory
    b_init: torch.Tensor | None = None

    @boundary(x=Tensor("float", 2))
    def preactivations(self, x: torch.Tensor, label: str, initial: bool = False) -> torch.Tensor:
        """Pre-activations ``(n, h)`` of the first member called ``label`` for inputs ``x``
        ``(n, d)``, trained or at initialization."""
        i = self.members(label)[0]
        self.net._check_input(x)
        with torch.no_grad():
            if not initial:
                return self.net._preactivations(x)[i]
            pre = x @ self.W_init[i].T
            return pre if self.b_init is None else pre + self.b_init[i]

    @boundary()
    def members(self, label: str) -> list[int]:
        """Indices of the members whose spec is called ``label``."""
        idx = [i for i, s in enumerate(self.specs) if s.name == label]
        if not idx:
            raise ValueError(f"label must name a member, one of "
                             f"{sorted({s.name for s in self.specs})}, got {label!r}")
        return idx

    @boundary()
    def background_ratio(self, label: str) -> float:
        """Final / initial mean background projection norm, averaged over ``label``'s members."""
        bg = self.history.array("background_norm")[:, self.members(label)]
        return float((bg[-1] / bg[0]).mean())

    @boundary()
    def final(self, name: str, label: str) -> float:
        """The last recorded value of curve ``name`` averaged over ``label``'s members."""
        return float(self.history.array(name)[-1, self.members(label)].mean())


@boundary(seed=_RUN_SEED)
def run_theory(cfg: TheoryConfig, seed: int = 0, device=None) -> ToyResult:
    """Train the ReLU net, the linear net and every variant of ``cfg`` as one batched stack.

    The data (embedding, training set, ID test set) and the initializations are fixed by ``seed``;
    the OOD test set is the ID test set with its background shifted by 1 (:func:`shift_background`).
    Training runs on ``device`` (default: the run settings'); the result lives on the CPU.

    Parameters
    ----------
    cfg : TheoryConfig
        The experiment's settings; a TheoryConfig.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**32 - 1].
    device : object, default None
        Torch device of the run (default: ``GTLIB_DEVICE``).

    Returns
    -------
    ToyResult
        The curves and accuracies of every network.

    References
    ----------
    Zhang, Zhao, Chen, Jiang and Chen (2024), "Feature Contamination: Neural Networks Learn
    Uncorrelated Features and Fail to Generalize".
    """
    dev = _device(device)
    emb = random_embedding(cfg.d_core, cfg.d_background, cfg.dim, seed=seed)
    train = sample_toy(cfg.n, emb, "theory", seed=1000 * seed + 1, centred=cfg.centred)
    test = sample_toy(cfg.n_test, emb, "theory", seed=1000 * seed + 2, centred=cfg.centred)
    specs = [s for s in theory_specs(cfg) for _ in range(_int("seeds_per_variant", cfg.seeds_per_variant))]
    net = init_two_layer([s.act for s in specs], cfg.dim, cfg.width,
                         [1000 * seed + 10 + i for i in range(len(specs))], frozen_output=True,
                         bias=cfg.bias)
    W_init = net.W.detach().clone()
    b_init = None if net.b is None else net.b.detach().clone()
    net.to(dev)
    hist = train_two_layer(net, specs, train.x.to(dev), train.y.to(dev), cfg.steps, emb.to(dev),
                           test.x.to(dev), test.y.to(dev), record_every=cfg.record_every)
    net.to("cpu")
    return ToyResult(cfg, emb, train, test, specs, net, W_init, hist, b_init)


# ---------------------------------------------------------------------------------------------
# Experiment 2: the default configuration (spheres, logistic loss, AdamW, trainable output)
# ---------------------------------------------------------------------------------------------
@dataclass
class DefaultConfig(ToyConfig):
    """The authors' default toy script.

    The authors' default toy script: core on spheres of radius 1 (y=+1) and 2 (y=-1), logistic
    loss, AdamW (lr 1e-3, weight decay 1e-3), trainable output layer, 20 000 full-batch steps.

    As in that script, the OOD evaluation keeps the training points' core features and moves
    only their background, so any change in accuracy is caused by the shift. The run trains
    ``replicates`` independent datasets and initializations at once (their outcomes vary a lot),
    for each activation of ``activations`` (replicate ``r`` of every activation sees the same
    data). ``centred`` draws the background from ``U[-1/2, 1/2]``; unlike in the theory
    configuration this is no control here: with a trained output layer and AdamW the background
    weights grow even when the background has mean zero. ``replicates`` is 8 at the quick scale,
    so that the spread of the OOD drop across replicates is itself measured.

    Parameters
    ----------
    n : int, default 1000
        Training points; an int >= 1.
    d_core : int, default 32
        Label-carrying core coordinates; an int >= 1.
    d_background : int, default 32
        Background coordinates (independent of the label); an int >= 1.
    dim : int, default 256
        Ambient dimension (``d_core + d_background <= dim``); an int >= 1.
    width : int, default 256
        Hidden width; an int >= 1.
    weight_decay : float, default 0.001
        Weight decay; a finite number >= 0.
    centred : bool, default False
        Whether the background is drawn from ``U[-1/2, 1/2]`` instead of ``U[0, 1]``; a bool.
    steps : int, default 1000
        Number of optimizer steps; an int >= 1.
    lr : float, default 0.001
        Learning rate; a finite number > 0.
    replicates : int, default 8
        Independent repetitions; an int >= 1.
    record_every : int, default 20
        Steps between two recorded measurements; an int >= 1.
    activations : tuple[str, ...], default ('relu',)
        The activations, one group of networks each; a tuple (at least 1 item) of items each one of
        ('relu', 'gelu', 'silu', 'tanh', 'sigmoid', 'leaky_relu', 'identity').
    """

    FULL = dict(steps=20_000, replicates=16, record_every=250)

    steps: int = param(1000, count())
    lr: float = param(1e-3, positive())
    replicates: int = param(8, count())
    record_every: int = param(20, count())
    activations: tuple[str, ...] = param(("relu",), tuple_of(Options(tuple(ACTIVATIONS))))


ACT_LABELS = {"relu": "ReLU", "gelu": "GELU", "silu": "SiLU", "leaky_relu": "leaky ReLU",
              "tanh": "tanh", "sigmoid": "sigmoid", "identity": "linear"}


@boundary(seed=_RUN_SEED)
def run_default(cfg: DefaultConfig, seed: int = 0, device=None) -> ToyResult:
    """Train ``cfg.replicates`` nets of the default configuration per activation, one sample each.

    Members are ordered activation by activation, replicate by replicate, and labelled
    ``"<activation> (default)"`` (e.g. ``"ReLU (default)"``). The history's ``id_*`` curves are
    measured on each replicate's training points and the ``ood_*`` curves on the same points with
    the background shifted by 1; ``result.test`` holds a fresh held-out ID sample per member
    (stacked, ``(E, n, d)``).

    Parameters
    ----------
    cfg : DefaultConfig
        The experiment's settings; a DefaultConfig.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**32 - 1].
    device : object, default None
        Torch device of the run (default: ``GTLIB_DEVICE``).

    Returns
    -------
    ToyResult
        The trained networks' curves and accuracies.

    References
    ----------
    Zhang, Zhao, Chen, Jiang and Chen (2024), "Feature Contamination: Neural Networks Learn
    Uncorrelated Features and Fail to Generalize".
    """
    dev = _device(device)
    R = _int("replicates", cfg.replicates)
    acts = list(cfg.activations)
    if not acts:
        raise ValueError("cfg.activations must not be empty")
    for a in acts:
        activation(a)
    emb = random_embedding(cfg.d_core, cfg.d_background, cfg.dim, seed=seed)

    def stacked(offset: int) -> ToyData:
        parts = [sample_toy(cfg.n, emb, "default", seed=1000 * seed + 100 * r + offset,
                            centred=cfg.centred) for r in range(R)] * len(acts)
        return ToyData(*(torch.stack([getattr(p, k) for p in parts])
                         for k in ("x", "y", "core", "background")))

    train, test = stacked(3), stacked(4)
    specs = [NetSpec(act=a, loss="logistic", optimizer="adamw", lr=cfg.lr,
                     weight_decay=cfg.weight_decay, label=f"{ACT_LABELS.get(a, a)} (default)")
             for a in acts for _ in range(R)]
    seeds = [1000 * seed + 50 + r for _ in acts for r in range(R)]
    net = init_two_layer([s.act for s in specs], cfg.dim, cfg.width, seeds,
                         frozen_output=False, bias=True)
    W_init = net.W.detach().clone()
    b_init = None if net.b is None else net.b.detach().clone()
    net.to(dev)
    x, y = train.x.to(dev), train.y.to(dev)
    hist = train_two_layer(net, specs, x, y, cfg.steps, emb.to(dev), x, y,
                           record_every=cfg.record_every)
    net.to("cpu")
    return ToyResult(cfg, emb, train, test, specs, net, W_init, hist, b_init)


# ---------------------------------------------------------------------------------------------
# Experiment 3: representation distillation from a background-blind teacher
# ---------------------------------------------------------------------------------------------
@dataclass
class DistillConfig(ToyConfig):
    """A toy analogue of the paper's motivating CLIP experiment (Section 3).

    The teacher is a two-layer ReLU net of the default configuration whose first layer lives in
    the core subspace (it is trained on the core coordinates and then embedded), so its
    representation ignores the background by construction. The student has the same architecture
    with an unconstrained first layer and is trained by MSE to reproduce the teacher's hidden
    representation on ID inputs. Linear probes are then fitted on each representation.
    ``centred`` draws the background from ``U[-1/2, 1/2]`` for teacher and student alike (the
    control: same shift, no background mean). ``target="preactivation"`` gives the *gate-free*
    student: the same initialization, optimizer and steps, but the loss compares the student's
    pre-activations ``W x + b`` with the teacher's (a linear regression, no ReLU gate in the
    gradient); its representation is still read out through the ReLU.

    Parameters
    ----------
    n : int, default 1000
        Training points; an int >= 1.
    d_core : int, default 32
        Label-carrying core coordinates; an int >= 1.
    d_background : int, default 32
        Background coordinates (independent of the label); an int >= 1.
    dim : int, default 256
        Ambient dimension (``d_core + d_background <= dim``); an int >= 1.
    width : int, default 256
        Hidden width; an int >= 1.
    weight_decay : float, default 0.001
        Weight decay; a finite number >= 0.
    centred : bool, default False
        Whether the background is drawn from ``U[-1/2, 1/2]`` instead of ``U[0, 1]``; a bool.
    n_test : int, default 1000
        Number of test examples; an int >= 1.
    teacher_steps : int, default 1000
        Training steps of the teacher; an int >= 1.
    student_steps : int, default 1000
        Distillation steps of the student; an int >= 1.
    lr : float, default 0.001
        Learning rate; a finite number > 0.
    record_every : int, default 25
        Steps between two recorded measurements; an int >= 1.
    target : str, default 'hidden'
        What the student matches: the teacher's ``"hidden"`` representation or its
        ``"preactivation"``; one of ('hidden', 'preactivation').
    longer_steps : int, default 0
        Further distillation steps after the student is probed at ``student_steps`` (same
        optimizer, continued), after which it is probed again (``DistillResult.longer``); 0 for
        none; an int >= 0.

    References
    ----------
    Zhang, Zhao, Chen, Jiang and Chen (2024), "Feature Contamination: Neural Networks Learn
    Uncorrelated Features and Fail to Generalize", Section 3.
    """

    FULL = dict(teacher_steps=5000, student_steps=5000, record_every=100)

    n_test: int = param(1000, count())
    teacher_steps: int = param(1000, count())
    student_steps: int = param(1000, count())
    lr: float = param(1e-3, positive())
    record_every: int = param(25, count())
    target: str = param("hidden", Options(("hidden", "preactivation")))
    longer_steps: int = param(0, Interval(int, 0, None))


@dataclass
class DistillResult(Result):
    """Outcome of :func:`run_distillation` (errors are relative, see :func:`relative_error`).

    ``student_background_norm`` is the paper's metric, the mean of ``||P_b^T w_j||`` over the
    student's neurons, and ``student_background_mean`` the mean of ``|u . P_b^T w_j|`` along the
    background mean direction (:func:`mean_direction_components`), each (before, after).
    ``probe_initial`` is the linear probe's accuracy (``"ID"``, ``"OOD"``) on the student's
    representation *before* distillation (at its initialization), and ``curve_id[0]`` its
    relative error then: the never-distilled student. ``longer`` (with ``cfg.longer_steps > 0``)
    holds the student's measurements after ``student_steps + longer_steps`` steps: ``"steps"``,
    ``"error_id"``, ``"probe_ID"``, ``"probe_OOD"`` and ``"background_mean"``.
    """

    teacher_acc: dict[str, float]
    probe_teacher: dict[str, float]
    probe_student: dict[str, float]
    error_id: float
    error_ood: float
    curve_step: list[int]
    curve_id: list[float]
    curve_ood: list[float]
    student_background_norm: tuple[float, float]
    student_background_mean: tuple[float, float] = (0.0, 0.0)
    probe_initial: dict[str, float] = field(default_factory=dict)
    longer: dict[str, float] = field(default_factory=dict)


@boundary(seed=_RUN_SEED)
def run_distillation(cfg: DistillConfig, seed: int = 0, device=None) -> DistillResult:
    """Train the teacher, distill its representation into the student, probe both.

    Train the teacher, distill its representation into the student, probe both (see
    :class:`DistillConfig`). Errors and probe accuracies are measured on a held-out ID sample
    and on its background-shifted copy.

    Parameters
    ----------
    cfg : DistillConfig
        The experiment's settings; a DistillConfig.
    seed : int, default 0
        Seed of the run's random draws; an int in [0, 2**32 - 1].
    device : object, default None
        Torch device of the run (default: ``GTLIB_DEVICE``).

    Returns
    -------
    DistillResult
        Errors and probe accuracies, in and out of distribution.

    References
    ----------
    Zhang, Zhao, Chen, Jiang and Chen (2024), "Feature Contamination: Neural Networks Learn
    Uncorrelated Features and Fail to Generalize", Section 3.
    """
    dev = _device(device)
    emb = random_embedding(cfg.d_core, cfg.d_background, cfg.dim, seed=seed)
    train = sample_toy(cfg.n, emb, "default", seed=1000 * seed + 5, centred=cfg.centred)
    test = sample_toy(cfg.n_test, emb, "default", seed=1000 * seed + 6, centred=cfg.centred)
    emb, train, test = emb.to(dev), ToyData(*(t.to(dev) for t in (train.x, train.y, train.core, train.background))), \
        ToyData(*(t.to(dev) for t in (test.x, test.y, test.core, test.background)))
    x_ood = shift_background(test.x, emb, 1.0)

    # teacher: trained on the core coordinates, then embedded (first layer inside the core subspace)
    tspec = NetSpec(act="relu", loss="logistic", optimizer="adamw", lr=cfg.lr,
                    weight_decay=cfg.weight_decay)
    core_net = init_two_layer(["relu"], cfg.d_core, cfg.width, [1000 * seed + 70],
                              frozen_output=False, bias=True).to(dev)
    fit(lambda step, batch: _binary_loss("logistic", core_net._forward(train.core), train.y),
        _optimizer(core_net.parameters(), [tspec]), _int("teacher_steps", cfg.teacher_steps))
    teacher = TwoLayerNets(core_net.W.detach() @ emb.core.T, ["relu"], core_net.a.detach(),
                           b=core_net.b.detach(), c=core_net.c.detach()).to(dev)

    # student: same architecture, fits the teacher's representation on ID inputs by MSE
    student = init_two_layer(["relu"], cfg.dim, cfg.width, [1000 * seed + 71], frozen_output=False,
                             bias=True).to(dev)
    sspec = NetSpec(act="relu", optimizer="adamw", lr=cfg.lr, weight_decay=0.0)
    with torch.no_grad():
        target, t_test, t_ood = (teacher._hidden(z)[0] for z in (train.x, test.x, x_ood))
        scale = (target ** 2).sum(-1).mean()
        if cfg.target == "preactivation":
            t_pre = teacher._preactivations(train.x)[0]
            scale_pre = (t_pre ** 2).sum(-1).mean()
    with torch.no_grad():                # the never-distilled student, probed as the others
        s0 = [student._hidden(z)[0] for z in (train.x, test.x, x_ood)]
    p0 = linear_probe(s0[0], train.y, [(s0[1], test.y), (s0[2], test.y)])
    bg0 = float(projection_norms(student.W.detach(), emb)[1].mean())
    mean0 = float(mean_direction_components(student.W.detach(), emb)[0].abs().mean())
    steps, cid, cood = [], [], []
    rel = _relative_error

    def record(step: int, due: torch.Tensor) -> None:
        with torch.no_grad():
            steps.append(step)
            cid.append(rel(student._hidden(test.x)[0], t_test))
            cood.append(rel(student._hidden(x_ood)[0], t_ood))

    # the student's output layer is not trained: only W and b go to the optimizer
    if cfg.target == "preactivation":    # gate-free: a linear regression on the pre-activations
        def loss(step, batch):
            return ((student._preactivations(train.x) - t_pre) ** 2).sum(-1).mean(-1) / scale_pre
    else:
        def loss(step, batch):
            return ((student._hidden(train.x) - target) ** 2).sum(-1).mean(-1) / scale
    opt = _optimizer([student.W, student.b], [sspec])
    fit(loss, opt, _int("student_steps", cfg.student_steps), check=record, every=cfg.record_every)
    with torch.no_grad():
        s_train, s_test, s_ood = (student.hidden(z)[0] for z in (train.x, test.x, x_ood))
        t_acc = {k: float(binary_accuracy(teacher(z)[0], test.y)) for k, z in (("ID", test.x), ("OOD", x_ood))}
    pt = linear_probe(target, train.y, [(t_test, test.y), (t_ood, test.y)])
    ps = linear_probe(s_train, train.y, [(s_test, test.y), (s_ood, test.y)])
    bg1 = float(projection_norms(student.W.detach(), emb)[1].mean())
    mean1 = float(mean_direction_components(student.W.detach(), emb)[0].abs().mean())
    longer = {}
    if _int("longer_steps", cfg.longer_steps, minimum=0):   # the same run, continued
        fit(loss, opt, cfg.longer_steps)
        with torch.no_grad():
            l_train, l_test, l_ood = (student.hidden(z)[0] for z in (train.x, test.x, x_ood))
            pl = linear_probe(l_train, train.y, [(l_test, test.y), (l_ood, test.y)])
            longer = {"steps": cfg.student_steps + cfg.longer_steps,
                      "error_id": rel(l_test, t_test), "probe_ID": pl[0], "probe_OOD": pl[1],
                      "background_mean": float(
                          mean_direction_components(student.W.detach(), emb)[0].abs().mean())}
    return DistillResult(teacher_acc=t_acc, probe_teacher={"ID": pt[0], "OOD": pt[1]},
                         probe_student={"ID": ps[0], "OOD": ps[1]},
                         probe_initial={"ID": p0[0], "OOD": p0[1]}, error_id=cid[-1],
                         error_ood=cood[-1], curve_step=steps, curve_id=cid, curve_ood=cood,
                         student_background_norm=(bg0, bg1), student_background_mean=(mean0, mean1),
                         longer=longer)


# ---------------------------------------------------------------------------------------------
# Experiment 4: MNIST-1D with label-independent background coordinates
# ---------------------------------------------------------------------------------------------
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
        along the mean and under equal-norm shifts orthogonal to it; an int in [0, 100].
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
    magnitudes: tuple[float, ...] = param((0.0, 0.25, 0.5, 0.75, 1.0), tuple_of(Interval(float)))
    centred_mlp: bool = param(False, Boolean())
    centred_linear: bool = param(False, Boolean())
    constant: bool = param(False, Boolean())
    null_replicates: int = param(0, Interval(int, 0, 100))
    mlp_replicates: int = param(0, Interval(int, 0, 100))
    direction_magnitude: float = param(0.5, positive())


@boundary(x=Tensor("float", 2), n_background=count())
def append_background(x: torch.Tensor, n_background: int, generator: torch.Generator) -> torch.Tensor:
    """``x`` with ``n_background`` extra ``U[0,1]`` columns drawn independently of everything else."""
    return torch.cat([x, torch.rand(x.shape[0], n_background, generator=generator)], 1)


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
    ``orthogonal_shifts(k, m, 5, seed=1000 * seed + 450 + j)``.

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
    from .data import mnist1d
    from .models import MLP
    from .train import TrainConfig, accuracy, train

    dev = _device(device)
    if 0.0 not in cfg.magnitudes or 1.0 not in cfg.magnitudes:
        raise ValueError(f"cfg.magnitudes must contain 0.0 and 1.0, got {cfg.magnitudes}")
    ds = mnist1d(cfg.n_train, cfg.n_test, device="cpu")
    g = torch.Generator().manual_seed(1000 * seed + 8)
    x_tr = append_background(ds.x, cfg.n_background, g)
    x_te = append_background(ds.x_test, cfg.n_background, g)

    x_tr, x_te, y_tr, y_te = x_tr.to(dev), x_te.to(dev), ds.y.to(dev), ds.y_test.to(dev)
    k = cfg.n_background
    models = {"ReLU MLP": (cfg.depth, cfg.width, slice(None), 0, 0.0),
              "linear": (0, 1, slice(None), 1, 0.0),
              "background only": (0, 1, slice(x_tr.shape[1] - k, None), 2, 0.0)}
    if cfg.centred_mlp:
        models["ReLU MLP, centred"] = (cfg.depth, cfg.width, slice(None), 0, 0.5)
    if cfg.centred_linear:
        models["linear, centred"] = (0, 1, slice(None), 1, 0.5)
    if cfg.constant:
        models["ReLU MLP, constant"] = (cfg.depth, cfg.width, slice(None), 0, None)
        models["linear, constant"] = (0, 1, slice(None), 1, None)
    out = {"magnitudes": list(cfg.magnitudes), "chance": 1.0 / ds.num_classes}

    def one(depth, width, cols, offset, init_seed, batch_seed):
        if offset is None:                   # constant padding: every background coordinate 1/2
            xtr, xte = x_tr.clone(), x_te.clone()
            xtr[:, -k:], xte[:, -k:] = 0.5, 0.5
        else:
            xtr, xte = shift_last(x_tr, k, offset), shift_last(x_te, k, offset)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(init_seed)
            model = MLP(xtr[:, cols].shape[1], width, depth, ds.num_classes).to(dev)
        tcfg = TrainConfig(optimizer="adamw", lr=cfg.lr, weight_decay=cfg.weight_decay,
                           batch_size=cfg.batch_size, epochs=cfg.epochs, seed=batch_seed,
                           check_every=10 ** 9)
        train(model, xtr[:, cols], y_tr, tcfg)
        with torch.no_grad():
            res = {"train": accuracy(model(xtr[:, cols]), y_tr),
                   "shift": [accuracy(model(shift_last(xte, k, m)[:, cols]), y_te)
                             for m in cfg.magnitudes]}
            neg = xte.clone()
            neg[:, -k:] = -neg[:, -k:]          # the background negated: z_b -> -z_b
            res["negated"] = accuracy(model(neg[:, cols]), y_te)
        res["ID"] = res["shift"][list(cfg.magnitudes).index(0.0)]
        res["OOD"] = res["shift"][list(cfg.magnitudes).index(1.0)]
        return res

    for name, (depth, width, cols, i, offset) in models.items():
        out[name] = one(depth, width, cols, offset, 1000 * seed + 80 + i, 1000 * seed + 90 + i)
    reps = []
    for j in range(_int("null_replicates", cfg.null_replicates, minimum=0)):
        gj = torch.Generator().manual_seed(1000 * seed + 400 + j)    # a fresh background draw
        x_tr = append_background(ds.x, k, gj).to(dev)
        x_te = append_background(ds.x_test, k, gj).to(dev)
        init, batches = 1000 * seed + 200 + j, 1000 * seed + 300 + j
        reps.append({"uniform": one(0, 1, slice(None), 0.0, init, batches),
                     "centred": one(0, 1, slice(None), 0.5, init, batches),
                     "centred, again": one(0, 1, slice(None), 0.5, init + 400, batches + 400)})
    if reps:
        out["linear replicates"] = reps
    mlps, m = [], cfg.direction_magnitude
    for j in range(_int("mlp_replicates", cfg.mlp_replicates, minimum=0)):
        gj = torch.Generator().manual_seed(1000 * seed + 500 + j)    # a fresh background draw
        x_tr = append_background(ds.x, k, gj).to(dev)
        x_te = append_background(ds.x_test, k, gj).to(dev)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(1000 * seed + 800 + j)
            model = MLP(x_tr.shape[1], cfg.width, cfg.depth, ds.num_classes).to(dev)
        tcfg = TrainConfig(optimizer="adamw", lr=cfg.lr, weight_decay=cfg.weight_decay,
                           batch_size=cfg.batch_size, epochs=cfg.epochs,
                           seed=1000 * seed + 900 + j, check_every=10 ** 9)
        train(model, x_tr, y_tr, tcfg)
        dirs = orthogonal_shifts(k, m, 5, seed=1000 * seed + 450 + j).to(x_te)
        pad = lambda v: torch.cat([torch.zeros(x_te.shape[1] - k).to(x_te), v])
        with torch.no_grad():
            mlps.append({"ID": accuracy(model(x_te), y_te),
                         "along": accuracy(model(shift_last(x_te, k, m)), y_te),
                         "orthogonal": [accuracy(model(x_te - pad(v)), y_te)
                                        for v in dirs]})
    if mlps:
        out["MLP replicates"] = mlps
    return out
