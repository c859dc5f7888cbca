"""Feature contamination: the data model (Section 4.1 of the paper) and the toy settings."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..checks import SEED, Boolean, Options, Tensor, boundary, count, nonnegative
from ..config import Config, param
from .common import _check_device, _REAL, _same_dtype, _Signs, _X, KINDS

__all__ = [
    "label_correlations",
    "off_subspace_direction",
    "orthogonal_shifts",
    "shift_background",
]


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
            raise ValueError(
                f"Embedding.background must have as many rows as core "
                f"({self.core.shape[0]}), got {self.background.shape[0]}"
            )
        _same_dtype("Embedding.background", self.background, self.core, "core")
        if self.background.device != self.core.device:
            raise ValueError(
                f"Embedding.background must be on core's device "
                f"({self.core.device}), got {self.background.device}"
            )
        P = torch.cat([self.core, self.background], 1)
        if P.shape[1] > P.shape[0]:
            raise ValueError(
                f"Embedding.core and background must have at most {P.shape[0]} "
                f"columns together (orthonormal in R^{P.shape[0]}), got {P.shape[1]}"
            )
        gap = float(
            (P.T @ P - torch.eye(P.shape[1], dtype=P.dtype, device=P.device))
            .abs()
            .max()
        )
        if gap > 1e-4:
            raise ValueError(
                "Embedding.core and background must have orthonormal columns "
                f"together (P^T P = I), got max |P^T P - I| = {gap:.3g}"
            )

    @property
    def dim(self) -> int:
        return int(self.core.shape[0])

    def to(self, device) -> "Embedding":
        """The same bases on ``device``."""
        dev = _check_device("device", device)
        return Embedding(core=self.core.to(dev), background=self.background.to(dev))

    @boundary(z_core=Tensor("float", 2), z_background=Tensor("float", 2))
    def embed(
        self, z_core: torch.Tensor, z_background: torch.Tensor
    ) -> torch.Tensor:
        """``x = P_c z_c + P_b z_b`` for row vectors ``z_c`` (n, k_c) and ``z_b`` (n, k_b)."""
        _same_dtype("z_core", z_core, self.core, "the embedding")
        _same_dtype("z_background", z_background, self.core, "the embedding")
        if (
            z_core.shape[1] != self.core.shape[1]
            or z_background.shape[1] != self.background.shape[1]
        ):
            raise ValueError(
                f"z_core must have {self.core.shape[1]} columns and z_background "
                f"{self.background.shape[1]}, got {z_core.shape[1]} and "
                f"{z_background.shape[1]}"
            )
        if z_core.shape[0] != z_background.shape[0]:
            raise ValueError(
                "z_core and z_background must have the same number of rows"
            )
        return z_core @ self.core.T + z_background @ self.background.T


@boundary(d_core=count(), d_background=count(), dim=count(), seed=SEED)
def random_embedding(
    d_core: int = 32, d_background: int = 32, dim: int = 256, seed: int = 0
) -> Embedding:
    """A random orthonormal embedding of ``d_core + d_background`` coordinates into R^dim.

    The columns come from the QR decomposition of a Gaussian matrix (Haar-distributed up to signs),
    as in the authors' toy code.

    Raises
    ------
    TypeError, ValueError
        If a size is not a positive int or ``d_core + d_background > dim``.
    """
    if d_core + d_background > dim:
        raise ValueError(
            f"d_core + d_background must be <= dim, got {d_core} + {d_background} > {dim}"
        )
    g = torch.Generator().manual_seed(int(seed))
    q, _ = torch.linalg.qr(
        torch.randn(dim, d_core + d_background, generator=g, dtype=torch.float64)
    )
    q = q.float()
    return Embedding(
        core=q[:, :d_core].contiguous(), background=q[:, d_core:].contiguous()
    )


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
                raise ValueError(
                    f"ToyData.{name} must have one row per point of x "
                    f"{tuple(self.x.shape[:-1])}, got shape {tuple(v.shape)}"
                )


@boundary(n=count(2), kind=Options(KINDS), d_core=count())
def sample_core(n: int, kind: str, d_core: int, generator: torch.Generator):
    """Balanced core coordinates and labels of the ``"theory"`` or ``"default"`` configuration.

    Returns ``(z_core (n, d_core), y (n,))`` with the first half of the rows of class +1.
    """
    y = torch.ones(n)
    y[n // 2 :] = -1.0
    if kind == "theory":
        z = torch.rand(n, d_core, generator=generator) * y[:, None]
    else:
        z = torch.randn(n, d_core, generator=generator)
        z = z / z.norm(dim=1, keepdim=True)
        z = z * torch.where(y > 0, 1.0, 2.0)[:, None]
    return z, y


@boundary(n=count(2), kind=Options(KINDS), seed=SEED)
def sample_toy(
    n: int,
    emb: Embedding,
    kind: str = "theory",
    seed: int = 0,
    centred: bool = False,
) -> ToyData:
    """Draw ``n`` balanced training-distribution points: core by ``kind``, background ``U[0,1]``.

    With ``centred`` the background is ``U[-1/2, 1/2]`` instead (the same draw minus 1/2): the
    control that removes the background's mean and keeps everything else.

    Raises
    ------
    TypeError, ValueError
        If ``emb`` is not an :class:`Embedding`, ``n`` < 2 or ``kind`` is unknown.
    """
    g = torch.Generator().manual_seed(int(seed))
    z_c, y = sample_core(n, kind, emb.core.shape[1], g)
    z_b = torch.rand(len(y), emb.background.shape[1], generator=g)
    if centred:
        z_b = z_b - 0.5
    return ToyData(x=emb.embed(z_c, z_b), y=y, core=z_c, background=z_b)


@boundary(x=_X)
def shift_background(
    x: torch.Tensor, emb: Embedding, magnitude: float = 1.0
) -> torch.Tensor:
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
        raise ValueError(
            "emb: the core and background subspaces fill R^d (dim "
            f"{emb.dim} = d_core + d_background): no direction is left"
        )
    g = torch.Generator().manual_seed(int(seed))
    v = torch.randn(emb.dim, generator=g).to(P)
    v = v - P @ (P.T @ v)
    return v / v.norm()


@boundary(n_background=count(), magnitude=_REAL, count=count(), seed=SEED)
def orthogonal_shifts(
    n_background: int, magnitude: float, count: int, seed: int = 0
) -> torch.Tensor:
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
        raise ValueError(
            f"n_background must be >= 2 (a direction orthogonal to 1), "
            f"got {n_background}"
        )
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
    corr = (f * t[:, None]).sum(0) / torch.where(
        denom > 0, denom, torch.ones_like(denom)
    )
    return torch.where(denom > 0, corr, torch.zeros_like(corr)).float()


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
            self._refuse(
                "dim",
                f">= d_core + d_background = {self.d_core + self.d_background}",
            )
