"""Power-law fits with a standard error (gtlib.uniform, section 3).

Also the nearest-neighbour classifier that the other sections use as a baseline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ..checks import Tensor, boundary, count
from ..config import Result

__all__: list[str] = []


@dataclass
class PowerLawFit(Result):
    """``y ~ C x^slope`` fitted by least squares on ``log y`` against ``log x``."""

    slope: float
    slope_se: float  # standard error of the slope (nan with only two points)
    intercept: float  # log C (natural log)

    def __call__(self, x) -> np.ndarray:
        return np.exp(self.intercept) * np.asarray(x, dtype=float) ** self.slope


def _float_array(name: str, v) -> np.ndarray:
    if isinstance(v, (str, bytes, dict)) or v is None:
        raise TypeError(
            f"{name} must be a sequence of numbers, got {type(v).__name__}"
        )
    try:
        return np.asarray(v, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a sequence of numbers, got {v!r}") from None


def power_law_fit(x, y) -> PowerLawFit:
    """Fit ``y = C x^a`` by ordinary least squares in log-log coordinates.

    The standard error is the usual OLS one, ``sqrt(RSS / (k - 2) / sum (log x - mean)^2)`` for
    ``k`` points: it measures how well a straight line describes the points, not the seed-to-seed
    spread.

    Raises
    ------
    ValueError
        If fewer than two points are given, lengths differ, any value is not positive and finite,
        or all ``x`` are equal.
    """
    x, y = _float_array("x", x), _float_array("y", y)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(
            f"x and y must be 1-D of the same length, got {x.shape} and {y.shape}"
        )
    if len(x) < 2:
        raise ValueError("power_law_fit needs at least two points")
    for name, v in (("x", x), ("y", y)):
        if not (np.all(np.isfinite(v)) and np.all(v > 0)):
            raise ValueError(
                f"{name} must be positive and finite for a log-log fit, got {v}"
            )
    lx, ly = np.log(x), np.log(y)
    sxx = ((lx - lx.mean()) ** 2).sum()
    if sxx == 0:
        raise ValueError("x must not be constant")
    slope = float(((lx - lx.mean()) * (ly - ly.mean())).sum() / sxx)
    intercept = float(ly.mean() - slope * lx.mean())
    if len(x) > 2:
        rss = float(((ly - intercept - slope * lx) ** 2).sum())
        se = math.sqrt(rss / (len(x) - 2) / sxx)
    else:
        se = float("nan")
    return PowerLawFit(slope=slope, slope_se=se, intercept=intercept)


@boundary(
    x_train=Tensor("float", 2),
    y_train=Tensor(None, 1),
    x=Tensor("float", 2),
    chunk=count(),
)
def nearest_neighbour_predict(
    x_train: torch.Tensor, y_train: torch.Tensor, x: torch.Tensor, chunk: int = 2048
) -> torch.Tensor:
    """Labels that a 1-nearest-neighbour classifier trained on ``(x_train, y_train)`` gives ``x``.

    The chapter's measured null: a learner that interpolates every training set by construction
    and has no architecture, no optimizer and no norm. Euclidean distance, computed in blocks of
    ``chunk`` rows of ``x``; a tie goes to the training point that comes first.

    Raises
    ------
    ValueError
        If ``x`` and ``x_train`` have different numbers of columns, or ``y_train`` is not one label
        per training row.
    """
    if x.shape[1] != x_train.shape[1]:
        raise ValueError(
            f"x must have {x_train.shape[1]} columns (those of x_train), got "
            f"{x.shape[1]}"
        )
    if y_train.shape != (x_train.shape[0],):
        raise ValueError(
            f"y_train must hold one label per row of x_train ({x_train.shape[0]}), "
            f"got shape {tuple(y_train.shape)}"
        )
    xt = x_train.to(x.dtype)
    sq = (xt * xt).sum(1)
    out = []
    for i in range(0, len(x), chunk):
        block = x[i : i + chunk]
        # ||a - b||^2 = ||b||^2 - 2 a.b (+ ||a||^2, the same for every training point)
        d = sq[None, :] - 2 * block @ xt.T
        out.append(y_train[d.argmin(1)])
    return torch.cat(out) if out else y_train[:0]
