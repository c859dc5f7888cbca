"""Mode connectivity: the argument checks the sections share (see gtlib.checks.boundary)."""

from __future__ import annotations

import numpy as np
import torch

from ..checks import Constraint, Interval, Tensor, check_labels
from ..models import BatchedMLP, MLP

__all__ = []


#: Inputs: a non-empty, finite, floating-point ``(n, d)`` tensor.
INPUTS = Tensor("float", 2)
#: Class labels: a non-empty integer ``(n,)`` tensor (the range is checked against the network).
LABELS = Tensor("int", 1)
#: Base seed of an experiment: its parts use ``1_000_003 * seed + 1000 * tag + i`` (< 2**63).
EXPERIMENT_SEED = Interval(int, 0, 2**63 // 1_000_003 - 1)


class _Numbers(Constraint):
    """A non-empty 1-D list, tuple, array or tensor of finite numbers, in ``[low, high]`` if given;
    with ``grid=True`` also an int >= 2 (that many points evenly spaced in [0, 1])."""

    def __init__(
        self, low: float | None = None, high: float | None = None, grid: bool = False
    ):
        self.low, self.high, self.grid = low, high, grid

    def describe(self) -> str:
        what = "a non-empty 1-D sequence of finite numbers"
        if self.low is not None:
            what += f" in [{self.low}, {self.high}]"
        return (
            ("an int >= 2 (evenly spaced points in [0, 1]) or " + what)
            if self.grid
            else what
        )

    def check(self, name: str, value):
        if isinstance(value, (bool, np.bool_)):
            self._fail(name, value, TypeError)
        if isinstance(value, (int, np.integer)):
            if not self.grid:
                self._fail(name, value, TypeError)
            if value < 2:
                self._fail(name, value)
            return value
        if value is None or isinstance(
            value, (str, bytes, dict, float, np.floating)
        ):
            self._fail(name, value, TypeError)
        try:
            arr = np.asarray(
                value.detach().cpu() if isinstance(value, torch.Tensor) else value
            )
        except (TypeError, ValueError, RuntimeError):
            self._fail(name, value, TypeError)
        if arr.dtype.kind not in "iuf":
            self._fail(name, value, TypeError)
        if arr.ndim != 1 or arr.size == 0 or not np.isfinite(arr).all():
            self._fail(name, value)
        if self.low is not None and (arr.min() < self.low or arr.max() > self.high):
            self._fail(name, value)
        return value


#: Points along a path: a sequence of finite numbers, or a number of evenly spaced points.
GRID = _Numbers(grid=True)


def _check_mlp(name: str, model) -> MLP:
    if not isinstance(model, MLP):
        raise TypeError(
            f"{name} must be a gtlib.models.MLP, got {type(model).__name__}"
        )
    return model


def _check_same_shape(
    a: MLP, b: MLP, body_only: bool = False, names: tuple = ("a", "b")
) -> None:
    na, nb = names
    _check_mlp(na, a)
    _check_mlp(nb, b)
    cut = -1 if body_only else None
    sa = [tuple(l.weight.shape) for l in a.layers[:cut]]
    sb = [tuple(l.weight.shape) for l in b.layers[:cut]]
    if sa != sb:
        raise ValueError(
            f"{na} and {nb} must have the same layer shapes, got {sa} and {sb}"
        )
    if (a.layers[0].bias is None) != (b.layers[0].bias is None):
        raise ValueError(f"{na} and {nb} must both have biases or both not")
    if a.act_name != b.act_name:
        raise ValueError(
            f"{na} and {nb} must share the activation, got {a.act_name!r} and "
            f"{b.act_name!r}"
        )


def _sizes(model) -> tuple[int, int, torch.dtype]:
    """Input size, number of classes and dtype of an MLP or a stack."""
    if isinstance(model, BatchedMLP):
        return (
            int(model.weights[0].shape[2]),
            int(model.weights[-1].shape[1]),
            model.weights[0].dtype,
        )
    return (
        model.layers[0].in_features,
        model.layers[-1].out_features,
        model.layers[0].weight.dtype,
    )


def _check_inputs(name: str, x: torch.Tensor, model, min_rows: int = 1) -> None:
    """``x`` (already a finite float tensor) fits ``model``: its columns and its dtype."""
    d, _, dtype = _sizes(model)
    if x.shape[-1] != d:
        raise ValueError(
            f"{name} must have {d} columns (the networks' input size), got shape "
            f"{tuple(x.shape)}"
        )
    if x.dtype != dtype:
        raise TypeError(
            f"{name} must have the networks' dtype {dtype}, got {x.dtype}"
        )
    if x.shape[-2] < min_rows:
        raise ValueError(
            f"{name} must have at least {min_rows} rows, got shape {tuple(x.shape)}"
        )


def _check_data(
    model, x: torch.Tensor, y: torch.Tensor, xname: str = "x", yname: str = "y"
) -> None:
    """Inputs that fit ``model`` and one label per row in ``[0, number of outputs)``."""
    _check_inputs(xname, x, model)
    check_labels(yname, y, _sizes(model)[1], n=x.shape[0])


def _check_train_labels(name: str, y: torch.Tensor, n: int) -> int:
    """Labels of a training set whose number of classes is read off them: ``max(y) + 1``."""
    check_labels(name, y, n=n)
    if int(y.min()) < 0:
        raise ValueError(f"{name} must hold labels >= 0, got minimum {int(y.min())}")
    if len(torch.unique(y)) < 2:
        raise ValueError(
            f"{name} must hold at least two classes, got only label {int(y[0])}"
        )
    return int(y.max()) + 1
