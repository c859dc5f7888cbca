"""Feature contamination: the names the sections share and their argument checks."""

from __future__ import annotations

import numpy as np
import torch

from ..checks import Device, Interval, Options, Tensor, check_int, tuple_of
from ..models import ACTIVATIONS

__all__ = []


KINDS = ("theory", "default")
BINARY_LOSSES = ("hinge", "logistic")
OPTIMIZERS = ("sgd", "adamw")


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
            raise ValueError(
                f"{name} must hold the labels -1.0 and +1.0 only, got "
                f"{float(bad[0])!r} among its values"
            )
        return value


_X = Tensor("float", (2, 3))  # inputs (n, d), or one sample per member (E, n, d)
_RUN_SEED = Interval(
    int, 0, 2**32 - 1
)  # an experiment derives its seeds as 1000 * seed + k
_ACT = Options(tuple(ACTIVATIONS))
_ACTS = tuple_of(_ACT)
_REAL = Interval(float)


def _tensor(name: str, value, ndim: int | tuple[int, ...]) -> torch.Tensor:
    # kept for tests/oracles/contamination_loops.py (the loops before gtlib.engine)
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    dims = (ndim,) if isinstance(ndim, int) else ndim
    if value.ndim not in dims:
        raise ValueError(
            f"{name} must have {' or '.join(map(str, dims))} dimensions, "
            f"got shape {tuple(value.shape)}"
        )
    return value


def _same_dtype(
    name: str, value: torch.Tensor, like: torch.Tensor, what: str
) -> None:
    if value.dtype != like.dtype:
        raise TypeError(
            f"{name} must have the dtype of {what} ({like.dtype}), got {value.dtype}"
        )


def _check_device(name: str, device) -> torch.device:
    """``device`` as a ``torch.device`` this machine has, or an error naming ``name``."""
    return torch.device(Device().check(name, device))


def _device(device) -> torch.device:
    """``device``, or the device of the run settings (``GTLIB_DEVICE``) when None."""
    if device is None:
        from ..config import settings

        return torch.device(settings().device)
    return _check_device("device", device)


def _reals(name: str, values) -> list[float]:
    """A non-empty list, tuple or 1-D array of finite numbers, as a list of floats."""
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__len__"):
        raise TypeError(
            f"{name} must be a non-empty sequence of finite numbers, got "
            f"{type(values).__name__}"
        )
    if isinstance(values, (np.ndarray, torch.Tensor)) and values.ndim != 1:
        raise ValueError(
            f"{name} must be one-dimensional, got shape {tuple(values.shape)}"
        )
    values = (
        values.tolist()
        if isinstance(values, (np.ndarray, torch.Tensor))
        else list(values)
    )
    if not values:
        raise ValueError(
            f"{name} must be a non-empty sequence of finite numbers, got []"
        )
    return [float(_REAL.check(f"{name}[{i}]", v)) for i, v in enumerate(values)]
