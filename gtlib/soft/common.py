"""Input checks shared by the sections of gtlib.soft: array and dataset constraints."""

from __future__ import annotations

import numpy as np
import torch

from ..checks import Constraint, Tensor, check_positive
from ..data import Dataset

__all__: list[str] = []


_pos = check_positive


class _Array(Constraint):
    """An array-like of numbers (list, tuple, numpy array or CPU tensor): not None, not a string,
    not empty, with ``ndim`` dimensions (any if None), finite (``finite``), integer-valued
    (``integer``: int dtype, or floats that are whole numbers); ``optional`` also accepts None."""

    def __init__(
        self,
        ndim=1,
        finite: bool = True,
        integer: bool = False,
        optional: bool = False,
        empty: bool = False,
    ):
        self.ndim = (ndim,) if isinstance(ndim, int) else ndim
        self.finite, self.integer, self.optional, self.empty = (
            finite,
            integer,
            optional,
            empty,
        )

    def describe(self) -> str:
        dims = "" if self.ndim is None else "/".join(map(str, self.ndim)) + "-D "
        what = (
            "integers"
            if self.integer
            else ("finite numbers" if self.finite else "numbers")
        )
        text = f"a {'' if self.empty else 'non-empty '}{dims}array (list or numpy array) of {what}"
        return text + (" or None" if self.optional else "")

    def check(self, name: str, value):
        if value is None and self.optional:
            return value
        if value is None or isinstance(value, (str, bytes, dict, set)):
            self._fail(name, value, TypeError)
        try:
            arr = np.asarray(
                value.detach().cpu() if isinstance(value, torch.Tensor) else value
            )
        except (TypeError, ValueError, RuntimeError):
            self._fail(name, value, TypeError)
        if arr.dtype.kind not in "iuf" and not (
            arr.dtype.kind == "O" and arr.size == 0
        ):
            self._fail(
                name, value, TypeError
            )  # strings, bools, objects, ragged lists
        if self.ndim is not None and arr.ndim not in self.ndim:
            self._fail(name, value)
        if arr.size == 0 and not self.empty:
            self._fail(name, value)
        if arr.size and arr.dtype.kind == "f":
            if self.finite and not np.isfinite(arr).all():
                raise ValueError(
                    f"{name} must hold finite values only, got NaN or inf"
                )
            if self.integer and not (
                np.isfinite(arr).all() and np.all(arr == np.round(arr))
            ):
                self._fail(name, value, TypeError)
        return value


_ARR = _Array()


def _vec(name: str, x) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(
            f"{name} must be a non-empty 1-D array, got shape {x.shape}"
        )
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be finite")
    return x


def _fits(ds: Dataset, n_train: int, n_test: int | None = None) -> None:
    """Refuse a config that asks for more points than ``ds`` holds."""
    if n_train > ds.n:
        raise ValueError(
            f"cfg.n_train must be <= the dataset's {ds.n} training points, got "
            f"{n_train}"
        )
    if n_test is not None and n_test > ds.x_test.shape[0]:
        raise ValueError(
            f"cfg.n_test must be <= the dataset's {ds.x_test.shape[0]} test points, "
            f"got {n_test}"
        )


_XY = dict(x=Tensor("float", 2), y=Tensor("int", 1))
