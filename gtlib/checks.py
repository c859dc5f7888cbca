"""Argument checks shared by every gtlib module.

Public functions validate their arguments at the boundary and raise ``TypeError`` (wrong type) or
``ValueError`` (wrong value), always naming the argument, the value and what is accepted, so that
a reader who passes a bad value learns which one and why.

The checks are small *constraint* objects, in the spirit of scikit-learn's parameter constraints:
a constraint is declared once (on a config field, see :func:`gtlib.config.param`, or at the top of a
function) and its :meth:`Constraint.check` raises with a message built from its description::

    Interval(float, 0, None, closed="neither").check("lr", float("inf"))
    # ValueError: lr must be a finite number > 0, got inf

Each constraint can also propose values: :meth:`Constraint.valid_value` one it accepts and
:meth:`Constraint.invalid_values` those it refuses (in the spirit of scikit-learn's
``generate_invalid_param_val``), from which tests/core/test_public_functions.py generates a
bad-input test for every public function; :func:`boundary` exposes the constraints it checks as
``func.__gtlib_constraints__``.

The functions :func:`check_int`, :func:`check_positive` and :func:`check_fraction` are shorthands
for the three most common intervals; :func:`check_labels`, :func:`check_finite`,
:func:`check_indices` and :func:`check_seeds` check tensors and lists at a boundary.
"""

from __future__ import annotations

import collections.abc as collections_abc
import math
from typing import Any, Iterable

import numpy as np
import torch

__all__ = [
    # constraints
    "Boolean",
    "Constraint",
    "Device",
    "InstanceOf",
    "Interval",
    "Options",
    "Sequence",
    "Tensor",
    # shorthands
    "SEED",
    "count",
    "fraction",
    "nonnegative",
    "positive",
    "tuple_of",
    # checks at a boundary
    "boundary",
    "check",
    "check_finite",
    "check_fraction",
    "check_indices",
    "check_int",
    "check_labels",
    "check_positive",
    "check_real",
    "check_seed",
    "check_seeds",
]


CLOSED = ("both", "left", "right", "neither")


class Constraint:
    """What a value must be; :meth:`check` returns it unchanged or raises naming ``name``."""

    def describe(
        self,
    ) -> str:  # "a finite number > 0", "one of ('sgd', 'adamw')", ...
        """What an accepted value is, as the end of "x must be ...".

        Returns
        -------
        str
            The description, e.g. ``"a finite number > 0"``.
        """
        raise NotImplementedError

    def check(self, name: str, value: Any) -> Any:
        """Return ``value`` unchanged if it is accepted; raise naming ``name`` otherwise.

        Parameters
        ----------
        name : str
            The argument's name, shown in the error.
        value : object
            The value to check.

        Returns
        -------
        object
            ``value``.

        Raises
        ------
        TypeError
            If ``value`` has the wrong type.
        ValueError
            If ``value`` has the right type but a refused value.
        """
        raise NotImplementedError

    def _fail(self, name: str, value: Any, error: type = ValueError):
        raise error(f"{name} must be {self.describe()}, got {_show(value)}")

    # -- examples for generated tests (scikit-learn's generate_invalid_param_val in spirit) -------
    def refuses(self, value: Any) -> bool:
        """Whether :meth:`check` raises ``TypeError`` or ``ValueError`` for ``value``.

        Parameters
        ----------
        value : object
            The value to try.

        Returns
        -------
        bool
            True if the constraint refuses ``value``.
        """
        try:
            self.check("value", value)
        except (TypeError, ValueError):
            return True
        return False

    def _invalid_candidates(self) -> list:
        """Values a subclass expects to be refused (filtered by :meth:`refuses`)."""
        return []

    def invalid_values(self) -> list:
        """Values this constraint refuses, one for each way a value can be wrong.

        The values a subclass proposes (out of range, wrong type, NaN, None...) and a stock of
        common wrong values are each kept only if :meth:`check` does refuse them, so the list is
        right for any constraint, including ones defined outside this module. The generated
        bad-input test passes each of them to every public function.

        Returns
        -------
        list
            The refused values (no two of the same type and repr).
        """
        out, seen = [], set()
        for v in self._invalid_candidates() + _stock_invalid():
            key = (type(v).__name__, _show(v))
            if key not in seen and self.refuses(v):
                seen.add(key)
                out.append(v)
        return out

    def _valid_candidates(self) -> list:
        """Values a subclass expects to be accepted (filtered by :meth:`refuses`)."""
        return []

    def valid_value(self) -> Any:
        """A value this constraint accepts, for building a valid call in a generated test.

        Returns
        -------
        object
            The first accepted value among those the constraint proposes and a stock of common
            values.

        Raises
        ------
        LookupError
            If none of them is accepted (the test then needs an example of its own).
        """
        for v in self._valid_candidates() + _stock_valid():
            if not self.refuses(v):
                return v
        raise LookupError(f"no stock value is {self.describe()}")


def _check_name(name: Any) -> str:
    """The argument name an error message will show: a non-empty ``str``."""
    if not isinstance(name, str) or not name:
        raise TypeError(
            f"name must be a non-empty str (the name of the argument being checked), "
            f"got {name!r}"
        )
    return name


def _check_flag(what: str, value: Any) -> bool:
    """A ``bool`` option of a check (numpy bools too)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what} must be a bool, got {_show(value)}")
    return bool(value)


def _check_bound(what: str, value: Any, kind: type) -> Any:
    """An interval end: None, or a finite number (an int for an int interval); bools refused."""
    if value is None:
        return None
    if not (_is_int(value) if kind is int else _is_real(value)):
        raise TypeError(
            f"{what} must be {'an int' if kind is int else 'a finite number'} or None, "
            f"got {_show(value)}"
        )
    if not _finite(value):
        raise ValueError(
            f"{what} must be a finite number or None, got {_show(value)}"
        )
    return value


def _show(value: Any) -> str:
    """A short rendering of a bad value for an error message."""
    if isinstance(value, (torch.Tensor, np.ndarray)):
        dtype = str(value.dtype).replace("torch.", "")
        return (
            f"{type(value).__name__} of shape {tuple(value.shape)} and dtype {dtype}"
        )
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(
        value, (bool, np.bool_)
    )


def _finite(value: Any) -> bool:
    """Whether a real number is finite and fits a float (a 400-digit int does not)."""
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _is_real(value: Any) -> bool:
    return isinstance(
        value, (int, float, np.integer, np.floating)
    ) and not isinstance(value, (bool, np.bool_))


class Interval(Constraint):
    """An ``int`` (``kind=int``) or a finite real number (``kind=float``) in an interval.

    ``low``/``high`` of ``None`` mean unbounded; ``closed`` says which ends belong to the interval
    (``"both"``, ``"left"``, ``"right"`` or ``"neither"``). Bools are refused; NaN and infinities are
    refused for every real interval. ``optional=True`` also accepts ``None``.

    Parameters
    ----------
    kind : type
        ``int`` or ``float``.
    low : float | None, default None
        The lower end (None: unbounded below).
    high : float | None, default None
        The upper end (None: unbounded above).
    closed : str, default 'both'
        Which ends belong to the interval: ``"both"``, ``"left"``, ``"right"`` or ``"neither"``.
    optional : bool, default False
        Whether ``None`` is also accepted.
    """

    def __init__(
        self,
        kind: type,
        low: float | None = None,
        high: float | None = None,
        closed: str = "both",
        optional: bool = False,
    ):
        if kind not in (int, float):
            raise ValueError(f"kind must be int or float, got {kind!r}")
        if not isinstance(closed, str) or closed not in CLOSED:
            raise ValueError(f"closed must be one of {CLOSED}, got {closed!r}")
        low, high = _check_bound("low", low, kind), _check_bound("high", high, kind)
        if low is not None and high is not None and low > high:
            raise ValueError(f"low must be <= high, got low={low!r}, high={high!r}")
        optional = _check_flag("optional", optional)
        self.kind, self.low, self.high, self.closed, self.optional = (
            kind,
            low,
            high,
            closed,
            optional,
        )

    def describe(self) -> str:
        what = "an int" if self.kind is int else "a finite number"
        lo_in = self.closed in ("both", "left")
        hi_in = self.closed in ("both", "right")
        if self.low is not None and self.high is not None:
            rng = f"in {'[' if lo_in else '('}{self.low}, {self.high}{']' if hi_in else ')'}"
        elif self.low is not None:
            rng = f"{'>=' if lo_in else '>'} {self.low}"
        elif self.high is not None:
            rng = f"{'<=' if hi_in else '<'} {self.high}"
        else:
            rng = ""
        text = f"{what} {rng}".strip()
        return text + " or None" if self.optional else text

    def contains(self, value: float) -> bool:
        """Whether the number ``value`` lies in the interval (NaN and infinities never do)."""
        if not _is_real(value):
            raise TypeError(f"value must be a real number, got {_show(value)}")
        if isinstance(value, (float, np.floating)) and not math.isfinite(value):
            return False  # an interval holds finite numbers only (see check)
        lo_in = self.closed in ("both", "left")
        hi_in = self.closed in ("both", "right")
        if self.low is not None and (
            value < self.low or (value == self.low and not lo_in)
        ):
            return False
        if self.high is not None and (
            value > self.high or (value == self.high and not hi_in)
        ):
            return False
        return True

    def check(self, name: str, value: Any) -> Any:
        _check_name(name)
        if value is None and self.optional:
            return value
        if not (_is_int(value) if self.kind is int else _is_real(value)):
            self._fail(name, value, TypeError)
        if self.kind is float and not _finite(value):
            self._fail(name, value)
        if not self.contains(value):
            self._fail(name, value)
        return value

    def _invalid_candidates(self) -> list:
        out = ["1", True, 1.5 if self.kind is int else float("nan"), float("inf")]
        if not self.optional:
            out.append(None)
        step = 1 if self.kind is int else 1e-3
        if self.low is not None:
            out.append(
                self.low if self.closed in ("right", "neither") else self.low - step
            )
            out.append(self.kind(self.low - 1))
        if self.high is not None:
            out.append(
                self.high if self.closed in ("left", "neither") else self.high + step
            )
            out.append(self.kind(self.high + 1))
        return out

    def _valid_candidates(self, k: int = 1) -> list:
        """``k`` increasing values inside the interval (fewer if it is too narrow)."""
        if self.low is not None and self.high is not None:
            if self.kind is int:
                grid = [
                    self.low + i
                    for i in range(min(k, int(self.high - self.low) + 1))
                ]
            else:
                grid = [
                    self.low + (self.high - self.low) * (i + 1) / (k + 1)
                    for i in range(k)
                ]
        elif self.low is not None:
            grid = [self.low + i for i in range(k + 1)]
        elif self.high is not None:
            grid = [self.high - k - 1 + i for i in range(k + 1)]
        else:
            grid = list(range(k))
        grid = [self.kind(v) for v in grid]
        return [v for v in grid if self.contains(v)][:k]


class Options(Constraint):
    """One of a fixed set of values (e.g. the names of the optimizers).

    Parameters
    ----------
    values : Iterable
        The accepted values (a tuple or list, at least one); a value must equal one and have its
        type.
    optional : bool, default False
        Whether ``None`` is also accepted.
    """

    def __init__(self, values: Iterable, optional: bool = False):
        if isinstance(values, (str, bytes)) or not isinstance(
            values, (tuple, list, set, frozenset)
        ):
            raise TypeError(
                f"values must be a tuple or list of the accepted values, got "
                f"{_show(values)}"
            )
        if not values:
            raise ValueError(
                "values must hold at least one accepted value, got none"
            )
        self.values = tuple(values)
        self.optional = _check_flag("optional", optional)

    def describe(self) -> str:
        return f"one of {self.values}" + (" or None" if self.optional else "")

    def check(self, name: str, value: Any) -> Any:
        _check_name(name)
        if value is None and self.optional:
            return value
        try:
            ok = any(value == v and type(value) is type(v) for v in self.values)
        except Exception:  # e.g. comparing an array
            ok = False
        if not ok:
            self._fail(
                name,
                value,
                TypeError
                if not isinstance(value, str)
                and all(isinstance(v, str) for v in self.values)
                else ValueError,
            )
        return value

    def _invalid_candidates(self) -> list:
        return ["not one of the options", 12345, b"bytes"] + (
            [] if self.optional else [None]
        )

    def _valid_candidates(self) -> list:
        return list(self.values)


class Boolean(Constraint):
    """A ``bool`` (numpy bools too)."""

    def describe(self) -> str:
        return "a bool"

    def check(self, name: str, value: Any) -> Any:
        _check_name(name)
        if not isinstance(value, (bool, np.bool_)):
            self._fail(name, value, TypeError)
        return value

    def _invalid_candidates(self) -> list:
        return [1, 0, "true", None, np.array([True])]

    def _valid_candidates(self) -> list:
        return [True, False]


class InstanceOf(Constraint):
    """An instance of ``cls`` (e.g. a nested config, which validated itself when it was built).

    Parameters
    ----------
    optional : bool, default False
        Whether ``None`` is also accepted.
    """

    def __init__(self, cls: type, optional: bool = False):
        if not isinstance(cls, type):
            raise TypeError(f"cls must be a class, got {_show(cls)}")
        self.cls, self.optional = cls, _check_flag("optional", optional)

    def describe(self) -> str:
        return f"a {self.cls.__name__}" + (" or None" if self.optional else "")

    def check(self, name: str, value: Any) -> Any:
        _check_name(name)
        if value is None and self.optional:
            return value
        if not isinstance(value, self.cls):
            self._fail(name, value, TypeError)
        return value

    def _invalid_candidates(self) -> list:
        return [object(), "x", 1] + ([] if self.optional else [None])

    def _valid_candidates(self) -> list:
        try:
            return [self.cls()]  # e.g. a config's quick preset
        except Exception:
            return []


class Sequence(Constraint):
    """A tuple or list whose items all satisfy ``item``.

    ``min_len`` is the least number of items; ``increasing="strict"`` (or ``"weak"``) asks for
    sorted items, ``distinct=True`` for items without repeats.

    Parameters
    ----------
    item : Constraint
        The constraint every item satisfies.
    min_len : int, default 1
        The least number of items.
    increasing : str | None, default None
        ``"strict"`` (strictly increasing), ``"weak"`` (sorted) or None (any order).
    distinct : bool, default False
        Whether repeated items are refused.
    """

    def __init__(
        self,
        item: Constraint,
        min_len: int = 1,
        increasing: str | None = None,
        distinct: bool = False,
    ):
        if increasing not in (None, "strict", "weak") or isinstance(
            increasing, bool
        ):
            raise ValueError(
                f"increasing must be None, 'strict' or 'weak', got {increasing!r}"
            )
        if not isinstance(item, Constraint):
            raise TypeError(
                f"item must be a Constraint (Interval, Options, ...), got {_show(item)}"
            )
        if not _is_int(min_len):
            raise TypeError(f"min_len must be an int >= 0, got {_show(min_len)}")
        if min_len < 0:
            raise ValueError(f"min_len must be an int >= 0, got {min_len!r}")
        distinct = _check_flag("distinct", distinct)
        self.item, self.min_len, self.increasing, self.distinct = (
            item,
            min_len,
            increasing,
            distinct,
        )

    def describe(self) -> str:
        parts = [f"at least {self.min_len} item{'s' if self.min_len != 1 else ''}"]
        if self.increasing:
            parts.append(
                "strictly increasing" if self.increasing == "strict" else "sorted"
            )
        if self.distinct:
            parts.append("without repeats")
        return f"a tuple ({', '.join(parts)}) of items each {self.item.describe()}"

    def check(self, name: str, value: Any) -> Any:
        _check_name(name)
        if not isinstance(value, (tuple, list)):
            self._fail(name, value, TypeError)
        for i, v in enumerate(value):
            self.item.check(f"{name}[{i}]", v)
        if len(value) < self.min_len:
            self._fail(name, value)
        if self.increasing and len(value) > 1:
            pairs = list(zip(value[:-1], value[1:]))
            if any(
                (b <= a) if self.increasing == "strict" else (b < a)
                for a, b in pairs
            ):
                self._fail(name, value)
        if self.distinct and len(set(value)) != len(value):
            self._fail(name, value)
        return value

    def _invalid_candidates(self) -> list:
        out = ["abc", None, 1, {1: 2}]
        try:
            good = self._valid_candidates()[0]
        except (IndexError, LookupError):
            return out
        if self.min_len > 0:
            out.append(type(good)(good[: self.min_len - 1]))
        for bad in self.item.invalid_values()[:3]:
            out.append(type(good)([bad] + list(good[1:])))
        if len(good) > 1 and (self.increasing or self.distinct):
            out.append(type(good)([good[1], good[0]] + list(good[2:])))
        return out

    def _valid_candidates(self) -> list:
        k = max(self.min_len, 1)
        if isinstance(self.item, Interval):
            items = self.item._valid_candidates(k)
        else:
            items = [self.item.valid_value()] * k
        return [tuple(items)] if len(items) == k else []


# -- short names for the constraints configs declare most often -----------------------------------


def count(minimum: int = 1, optional: bool = False) -> Interval:
    """An ``int`` >= ``minimum`` (sizes, steps, widths).

    Parameters
    ----------
    minimum : int, default 1
        The smallest accepted int.
    optional : bool, default False
        Whether ``None`` is also accepted.

    Returns
    -------
    Interval
        ``Interval(int, minimum, None)``.
    """
    if not _is_int(minimum):
        raise TypeError(f"minimum must be an int, got {_show(minimum)}")
    return Interval(int, minimum, None, "left", optional)


def positive(optional: bool = False) -> Interval:
    """A finite number > 0 (learning rates, temperatures, scales).

    Parameters
    ----------
    optional : bool, default False
        Whether ``None`` is also accepted.

    Returns
    -------
    Interval
        ``Interval(float, 0, None, "neither")``.
    """
    return Interval(float, 0, None, "neither", optional)


def nonnegative(optional: bool = False) -> Interval:
    """A finite number >= 0 (weight decay, noise levels).

    Parameters
    ----------
    optional : bool, default False
        Whether ``None`` is also accepted.

    Returns
    -------
    Interval
        ``Interval(float, 0, None, "left")``.
    """
    return Interval(float, 0, None, "left", optional)


def fraction(closed: str = "both", optional: bool = False) -> Interval:
    """A number in [0, 1] (``closed`` picks which ends are allowed).

    Parameters
    ----------
    closed : str, default 'both'
        Which of the ends 0 and 1 are accepted (see :class:`Interval`).
    optional : bool, default False
        Whether ``None`` is also accepted.

    Returns
    -------
    Interval
        ``Interval(float, 0, 1, closed)``.
    """
    return Interval(float, 0, 1, closed, optional)


def tuple_of(
    item: Constraint,
    min_len: int = 1,
    increasing: str | None = None,
    distinct: bool = False,
) -> Sequence:
    """A tuple/list whose items satisfy ``item`` (see :class:`Sequence`).

    Parameters
    ----------
    item : Constraint
        The constraint every item satisfies.
    min_len : int, default 1
        The least number of items.
    increasing : str | None, default None
        ``"strict"``, ``"weak"`` or None (see :class:`Sequence`).
    distinct : bool, default False
        Whether repeated items are refused.

    Returns
    -------
    Sequence
        The :class:`Sequence` constraint.
    """
    return Sequence(item, min_len, increasing, distinct)


def check(name: str, value: Any, constraint: Constraint) -> Any:
    """``constraint.check(name, value)``: the value unchanged, or an error naming ``name``.

    Parameters
    ----------
    name : str
        The argument's name, shown in the error.
    value : Any
        The value to check.
    constraint : Constraint
        What the value must be.

    Returns
    -------
    object
        ``value`` unchanged.

    Raises
    ------
    TypeError, ValueError
        If ``value`` does not satisfy ``constraint`` (the message names ``name``).
    """
    if not isinstance(constraint, Constraint):
        raise TypeError(
            f"constraint must be a gtlib.checks Constraint (Interval, Options, ...), "
            f"got {_show(constraint)}"
        )
    return constraint.check(name, value)


# -- shorthands for the common intervals (they also convert numpy scalars to Python numbers) ------


def check_int(name: str, value, minimum: int = 1, maximum: int | None = None) -> int:
    """``value`` as an ``int`` (bools refused), at least ``minimum`` (and at most ``maximum``).

    Parameters
    ----------
    name : str
        The argument's name, shown in the error.
    value : object
        The value to check.
    minimum : int, default 1
        The smallest accepted value.
    maximum : int | None, default None
        The largest accepted value (None: no bound).

    Returns
    -------
    int
        ``value`` as a Python int.

    Raises
    ------
    TypeError, ValueError
        If ``value`` is not an int in the range.
    """
    if not _is_int(minimum):
        raise TypeError(f"minimum must be an int, got {_show(minimum)}")
    return int(Interval(int, minimum, maximum).check(name, value))


def check_positive(name: str, value, allow_zero: bool = False) -> float:
    """``value`` as a finite ``float`` that is > 0 (or >= 0 with ``allow_zero``).

    Parameters
    ----------
    name : str
        The argument's name, shown in the error.
    value : object
        The value to check.
    allow_zero : bool, default False
        Whether 0 is accepted.

    Returns
    -------
    float
        ``value`` as a float.

    Raises
    ------
    TypeError, ValueError
        If ``value`` is not a finite real number > 0 (>= 0).
    """
    allow_zero = _check_flag("allow_zero", allow_zero)
    return float(
        Interval(float, 0, None, "left" if allow_zero else "neither").check(
            name, value
        )
    )


def check_fraction(name: str, value, open_interval: bool = False) -> float:
    """``value`` as a ``float`` in [0, 1] (or in (0, 1) with ``open_interval``).

    Parameters
    ----------
    name : str
        The argument's name, shown in the error.
    value : object
        The value to check.
    open_interval : bool, default False
        Whether 0 and 1 are refused.

    Returns
    -------
    float
        ``value`` as a float.

    Raises
    ------
    TypeError, ValueError
        If ``value`` is not a real number in the interval.
    """
    open_interval = _check_flag("open_interval", open_interval)
    return float(
        Interval(float, 0, 1, "neither" if open_interval else "both").check(
            name, value
        )
    )


def check_real(name: str, value) -> float:
    """``value`` as a finite ``float`` (any sign).

    Parameters
    ----------
    name : str
        The argument's name, shown in the error.
    value : object
        The value to check.

    Returns
    -------
    float
        ``value`` as a float.

    Raises
    ------
    TypeError, ValueError
        If ``value`` is not a finite real number.
    """
    return float(Interval(float).check(name, value))


# -- tensors and lists at a boundary ----------------------------------------------------------------


def check_finite(name: str, x) -> Any:
    """Refuse a float tensor/array holding NaN or infinities (an integer one passes).

    Parameters
    ----------
    name : str
        The argument's name, shown in the error.
    x : object
        A tensor or array (anything else passes).

    Returns
    -------
    object
        ``x`` unchanged.

    Raises
    ------
    ValueError
        If ``x`` holds NaN or an infinity.
    """
    _check_name(name)
    if isinstance(x, torch.Tensor):
        if x.is_floating_point() and x.numel() and not bool(torch.isfinite(x).all()):
            raise ValueError(f"{name} must hold finite values only, got NaN or inf")
    elif isinstance(x, np.ndarray):
        if (
            np.issubdtype(x.dtype, np.floating)
            and x.size
            and not np.isfinite(x).all()
        ):
            raise ValueError(f"{name} must hold finite values only, got NaN or inf")
    else:
        raise TypeError(
            f"{name} must be a torch.Tensor or numpy array, got {type(x).__name__}"
        )
    return x


def check_labels(
    name: str, y, num_classes: int | None = None, n: int | None = None
) -> Any:
    """Refuse labels that are not a 1-D (or 2-D per-member) integer tensor in ``[0, num_classes)``.

    ``n`` is the number of rows the labels must match (the last axis of ``y``).

    Parameters
    ----------
    name : str
        The argument's name, shown in the error.
    y : object
        The labels.
    num_classes : int | None, default None
        The number of classes (None: not checked).
    n : int | None, default None
        The number of rows the labels must match (None: not checked).

    Returns
    -------
    torch.Tensor
        ``y`` unchanged.

    Raises
    ------
    TypeError, ValueError
        If ``y`` is not such a tensor.
    """
    _check_name(name)
    if num_classes is not None:
        num_classes = check_int("num_classes", num_classes)
    if n is not None:
        n = check_int("n", n, minimum=0)
    if not isinstance(y, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor of integer labels, got {type(y).__name__}"
        )
    if y.is_floating_point() or y.is_complex() or y.dtype == torch.bool:
        raise TypeError(
            f"{name} must hold integer class labels (torch.int64), got dtype {y.dtype}"
        )
    if y.ndim not in (1, 2):
        raise ValueError(
            f"{name} must have shape (n,) or (E, n), got {tuple(y.shape)}"
        )
    if n is not None and y.shape[-1] != n:
        raise ValueError(
            f"{name} must have {n} labels (one per row of x), got {tuple(y.shape)}"
        )
    if y.numel() == 0:
        raise ValueError(f"{name} must not be empty")
    if num_classes is not None:
        lo, hi = int(y.min()), int(y.max())
        if lo < 0 or hi >= num_classes:
            raise ValueError(
                f"{name} must hold labels in [0, {num_classes}), got range "
                f"[{lo}, {hi}]"
            )
    return y


def check_indices(name: str, idx, size: int) -> torch.Tensor:
    """``idx`` as a 1-D int64 tensor of indices in ``[0, size)`` (floats and bools refused).

    Parameters
    ----------
    name : str
        The argument's name, shown in the error.
    idx : object
        The indices (a tensor, array, list or range).
    size : int
        The length of what they index.

    Returns
    -------
    torch.Tensor
        The indices as a 1-D int64 tensor.

    Raises
    ------
    TypeError, ValueError
        If ``idx`` is not 1-D integers in ``[0, size)``.
    """
    _check_name(name)
    size = check_int("size", size, minimum=0)
    if idx is None:
        raise TypeError(f"{name} must hold integer indices, got None")
    if isinstance(idx, torch.Tensor):
        t = idx
    else:
        arr = np.asarray(idx)
        if arr.dtype.kind not in "biuf":  # strings, objects, ...
            raise TypeError(f"{name} must hold integer indices, got {_show(idx)}")
        t = (
            torch.from_numpy(arr.copy())
            if arr.size
            else torch.zeros(0, dtype=torch.int64)
        )
    if t.dtype == torch.bool or t.is_floating_point() or t.is_complex():
        raise TypeError(f"{name} must hold integer indices, got dtype {t.dtype}")
    if t.ndim != 1:
        raise ValueError(
            f"{name} must be one-dimensional, got shape {tuple(t.shape)}"
        )
    if t.numel() and (int(t.min()) < 0 or int(t.max()) >= size):
        raise ValueError(
            f"{name} must hold indices in [0, {size}), got range "
            f"[{int(t.min())}, {int(t.max())}]"
        )
    return t.to(torch.int64)


#: A seed: an int in ``[0, 2**63)``, what every torch generator accepts.
SEED = Interval(int, 0, 2**63 - 1)


def check_seed(name: str, value) -> int:
    """``value`` as an int seed in ``[0, 2**63)`` (what every generator of torch accepts).

    Parameters
    ----------
    name : str
        The argument's name, shown in the error.
    value : object
        The value to check.

    Returns
    -------
    int
        ``value`` as a Python int.

    Raises
    ------
    TypeError, ValueError
        If ``value`` is not an int in ``[0, 2**63)``.
    """
    return int(SEED.check(name, value))


def check_seeds(name: str, seeds) -> list[int]:
    """A non-empty list of non-negative int seeds (a bare int is refused: pass ``range(k)``).

    Parameters
    ----------
    name : str
        The argument's name, shown in the error.
    seeds : object
        The seeds (a list, tuple or range).

    Returns
    -------
    list[int]
        The seeds as a list of Python ints.

    Raises
    ------
    TypeError, ValueError
        If ``seeds`` is empty, a bare int, or holds a bad seed.
    """
    _check_name(name)
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise TypeError(
            f"{name} must be a non-empty sequence of non-negative ints "
            f"(e.g. range(3)), got {_show(seeds)}"
        )
    seeds = list(seeds)
    if not seeds:
        raise ValueError(
            f"{name} must be a non-empty sequence of non-negative ints, got []"
        )
    return [int(SEED.check(f"{name}[{i}]", s)) for i, s in enumerate(seeds)]


# -- one decorator for a public function's boundary ---------------------------------------------


class Tensor(Constraint):
    """A finite, non-empty torch tensor of a given kind of dtype and number of dimensions.

    A torch tensor (or, with ``numpy=True``, also a numpy array) that is not empty, holds only
    finite values (``finite``), has a floating dtype (``dtype="float"``) or an integer one
    (``dtype="int"``), and has one of the allowed numbers of dimensions (``ndim``).

    Parameters
    ----------
    dtype : str | None, default None
        ``"float"``, ``"int"`` or None (any dtype).
    ndim : int | tuple[int, ...] | None, default None
        The allowed numbers of dimensions (None: any).
    finite : bool, default True
        Whether NaN and infinities are refused.
    empty : bool, default False
        Whether an empty tensor is accepted.
    numpy : bool, default False
        Whether a numpy array is accepted too.
    optional : bool, default False
        Whether ``None`` is also accepted.
    """

    def __init__(
        self,
        dtype: str | None = None,
        ndim: int | tuple[int, ...] | None = None,
        finite: bool = True,
        empty: bool = False,
        numpy: bool = False,
        optional: bool = False,
    ):
        if dtype not in (None, "float", "int"):
            raise ValueError(f"dtype must be None, 'float' or 'int', got {dtype!r}")
        self.dtype, self.finite, self.empty, self.numpy, self.optional = (
            dtype,
            finite,
            empty,
            numpy,
            optional,
        )
        self.ndim = (ndim,) if isinstance(ndim, int) else ndim

    def describe(self) -> str:
        kind = "a torch.Tensor" + (" or numpy array" if self.numpy else "")
        parts = [] if self.empty else ["non-empty"]
        if self.dtype:
            parts.append("floating-point" if self.dtype == "float" else "integer")
        if self.ndim:
            parts.append(f"{' or '.join(map(str, self.ndim))}-dimensional")
        if self.finite and self.dtype != "int":
            parts.append("finite")
        return f"{kind} ({', '.join(parts)})" if parts else kind

    def check(self, name: str, value: Any) -> Any:
        if value is None and self.optional:
            return value
        if isinstance(value, torch.Tensor):
            floating, integer = (
                value.is_floating_point(),
                not value.is_floating_point()
                and not value.is_complex()
                and value.dtype != torch.bool,
            )
            size, ndim = value.numel(), value.ndim
        elif self.numpy and isinstance(value, np.ndarray):
            floating = np.issubdtype(value.dtype, np.floating)
            integer = np.issubdtype(value.dtype, np.integer)
            size, ndim = value.size, value.ndim
        else:
            self._fail(name, value, TypeError)
        if (self.dtype == "float" and not floating) or (
            self.dtype == "int" and not integer
        ):
            self._fail(name, value, TypeError)
        if self.ndim is not None and ndim not in self.ndim:
            self._fail(name, value)
        if not self.empty and size == 0:
            self._fail(name, value)
        if self.finite and floating:
            check_finite(name, value)
        return value

    def _shape(self) -> tuple:
        return (3,) * (1 if self.ndim is None else self.ndim[0])

    def _valid_candidates(self) -> list:
        if self.dtype == "int":
            return [torch.ones(self._shape(), dtype=torch.int64)]
        return [torch.rand(self._shape(), dtype=torch.float32)]

    def _invalid_candidates(self) -> list:
        shape = self._shape()
        good = self._valid_candidates()[0]
        out = [good.tolist(), "tensor", 1.0]
        if not self.optional:
            out.append(None)
        if self.dtype == "float":
            out.append(torch.ones(shape, dtype=torch.int64))
        elif self.dtype == "int":
            out.append(torch.rand(shape))
        if self.ndim is not None:
            out.append(torch.ones((3,) * (max(self.ndim) + 1), dtype=good.dtype))
        if not self.empty:
            out.append(torch.ones((0,) * len(shape), dtype=good.dtype))
        if self.finite and good.is_floating_point():
            out.append(torch.full(shape, float("nan")))
            out.append(torch.full(shape, float("inf")))
        return out


class Device(Constraint):
    """A torch device that this machine has.

    A torch device (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"`` or a ``torch.device``) that
    this machine has.
    """

    def describe(self) -> str:
        return "an available torch device ('cpu', 'cuda', 'cuda:<k>', 'mps' or a torch.device)"

    def check(self, name: str, value: Any) -> Any:
        if not isinstance(value, (str, torch.device)):
            self._fail(name, value, TypeError)
        try:
            dev = torch.device(value)
        except RuntimeError:
            self._fail(name, value)
        if dev.type == "cuda":
            if (
                not torch.cuda.is_available()
                or (dev.index or 0) >= torch.cuda.device_count()
            ):
                raise ValueError(
                    f"{name} must be {self.describe()}: {value!r} is not available "
                    "on this machine (use 'cpu')"
                )
        elif dev.type == "mps":
            mps = getattr(torch.backends, "mps", None)
            if mps is None or not mps.is_available():
                raise ValueError(
                    f"{name} must be {self.describe()}: 'mps' is not available on "
                    "this machine (use 'cpu')"
                )
        elif dev.type != "cpu":
            self._fail(name, value)
        return value

    def _valid_candidates(self) -> list:
        return ["cpu", torch.device("cpu")]

    def _invalid_candidates(self) -> list:
        return ["tpu", "not a device", 3, None, "cuda:99"]


def _stock_invalid() -> list:
    """Wrong values that most constraints refuse: wrong types, None, non-finite numbers, empties."""
    return [
        None,
        "not a value",
        True,
        1.5,
        -1,
        float("nan"),
        float("inf"),
        [],
        (),
        {},
        object(),
        torch.empty(0),
        torch.tensor([float("nan")]),
        np.array([]),
        [float("nan")],
    ]


def _stock_valid() -> list:
    """Common right values, tried in turn when a constraint proposes none of its own."""
    return [
        1,
        0.5,
        True,
        "cpu",
        [0.1, 0.5, 0.9],
        np.array([0.1, 0.5, 0.9]),
        torch.rand(4, 3),
        torch.rand(4),
        torch.zeros(4, dtype=torch.int64),
        torch.tensor([1.0, -1.0, 1.0, -1.0]),
        (1, 2),
        (0.1, 0.5),
        "magnitude",
        lambda *args, **kwargs: None,
    ]


def _from_annotation(hint) -> Constraint | None:
    """The constraint an annotation implies (None: nothing to check)."""
    import types
    import typing

    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        optional = type(None) in args
        rest = [a for a in args if a is not type(None)]
        parts = [_from_annotation(a) for a in rest]
        if any(p is None for p in parts):
            return None
        return _Either(parts, optional)
    if hint is bool:
        return Boolean()
    if hint is int:
        return Interval(int)
    if hint is float:
        return Interval(float)
    if hint is str:
        return InstanceOf(str)
    if hint is torch.Tensor:
        return Tensor()
    if hint is np.ndarray:
        return Tensor(numpy=True)
    if origin in (list, tuple, collections_abc.Sequence):
        return _SequenceOf(hint)
    if origin is dict or hint is dict:
        return InstanceOf(dict)
    if origin is collections_abc.Callable or hint is collections_abc.Callable:
        return _Callable()
    if isinstance(hint, type) and hint.__module__.split(".")[0] in (
        "gtlib",
        "torch",
    ):
        return InstanceOf(hint)
    return None


class _Either(Constraint):
    def __init__(self, parts, optional):
        self.parts, self.optional = parts, optional

    def describe(self) -> str:
        return " or ".join(p.describe() for p in self.parts) + (
            " or None" if self.optional else ""
        )

    def check(self, name: str, value: Any) -> Any:
        if value is None and self.optional:
            return value
        errors = []
        for p in self.parts:
            try:
                return p.check(name, value)
            except (TypeError, ValueError) as e:
                errors.append(e)
        if len(errors) == 1:
            raise errors[0]
        self._fail(
            name,
            value,
            TypeError
            if all(isinstance(e, TypeError) for e in errors)
            else ValueError,
        )


class _SequenceOf(Constraint):
    """A list/tuple (or array/tensor) of items; ``Sequence[int]`` checks each item."""

    def __init__(self, hint):
        import typing

        args = typing.get_args(hint)
        self.item = (
            _from_annotation(args[0])
            if len(args) == 1 and args[0] is not Any
            else None
        )

    def describe(self) -> str:
        return "a non-empty list or tuple" + (
            f" whose items are each {self.item.describe()}" if self.item else ""
        )

    def check(self, name: str, value: Any) -> Any:
        if (
            isinstance(value, (str, bytes, dict))
            or value is None
            or not hasattr(value, "__len__")
        ):
            self._fail(name, value, TypeError)
        if len(value) == 0:
            self._fail(name, value)
        if self.item is not None and isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                self.item.check(f"{name}[{i}]", v)
        return value


class _Callable(Constraint):
    def describe(self) -> str:
        return "a function"

    def check(self, name: str, value: Any) -> Any:
        if not callable(value):
            self._fail(name, value, TypeError)
        return value


def boundary(**declared):
    """Check a public function's arguments where a reader's call enters gtlib.

    Each argument is checked against a constraint: the one declared here by name (a
    :class:`Constraint`, e.g. ``x=Tensor("float", 2)``, ``n=count()``, or None for no check), else
    the one its type annotation implies: ``int`` and ``float`` refuse bools, other types, NaN and
    infinities; ``torch.Tensor`` refuses anything else, empty tensors and NaN/inf; ``X | None``
    also accepts None; ``Sequence[...]``/``list``/``tuple`` refuse strings, None and empty ones
    (and check their items); a gtlib or torch class is an ``isinstance`` check. Arguments without
    a usable annotation are not checked. The error names the function and the argument::

        @boundary(x=Tensor("float", 2), y=Tensor("int", 1))
        def fit_probe(x: torch.Tensor, y: torch.Tensor, ridge: float = 1e-3): ...

    Annotations are read at the first call (so they may name classes defined later). The
    wrapped function exposes what it checks as ``__gtlib_constraints__``, a mapping from argument
    name to :class:`Constraint` that is resolved the same way, once, when it is first read or
    the function first called.

    Parameters
    ----------
    **declared
        Argument name -> :class:`Constraint` (or None: not checked), overriding the annotation.

    Returns
    -------
    callable
        The decorator; the function it returns checks the arguments and then calls the original,
        which stays reachable as ``__wrapped__``.

    Raises
    ------
    TypeError
        If a declared constraint is not a :class:`Constraint` or names an argument the function does not have.
    """
    for k, v in declared.items():
        if v is not None and not isinstance(v, Constraint):
            raise TypeError(
                f"the constraint for {k} must be a gtlib.checks Constraint or None, "
                f"got {_show(v)}"
            )

    def wrap(func):
        import functools
        import inspect
        import typing

        sig = inspect.signature(func)
        unknown = set(declared) - set(sig.parameters)
        if unknown:
            raise TypeError(
                f"boundary({', '.join(sorted(unknown))}): {func.__qualname__} has no "
                "such argument"
            )

        def constraints() -> list:
            hints = typing.get_type_hints(func)
            out = []
            for name, p in sig.parameters.items():
                if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or name in (
                    "self",
                    "cls",
                ):
                    continue
                c = (
                    declared[name]
                    if name in declared
                    else (_from_annotation(hints[name]) if name in hints else None)
                )
                if c is not None:
                    out.append((name, c, p.default))
            return out

        plan = _Plan(constraints)

        @functools.wraps(func)
        def checked(*args, **kwargs):
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError as e:
                raise TypeError(f"{func.__qualname__}(): {e}") from None
            values = bound.arguments
            for name, c, default in plan.resolve():
                if name in values:
                    v = values[name]
                    if v is default and default is not inspect.Parameter.empty:
                        continue  # the function's own default is trusted
                    try:
                        c.check(name, v)
                    except (TypeError, ValueError) as e:
                        raise type(e)(f"{func.__qualname__}(): {e}") from None
            return func(*args, **kwargs)

        checked.__wrapped__ = func
        checked.__gtlib_constraints__ = plan
        return checked

    return wrap


class _Plan(collections_abc.Mapping):
    """The constraints :func:`boundary` checks, by argument name, resolved at first use.

    The wrapper resolves them at its first call (annotations may name classes defined later);
    reading ``func.__gtlib_constraints__`` resolves them the same way, once, for both.
    """

    def __init__(self, resolve):
        self._resolve, self._plan = resolve, None

    def resolve(self) -> list:
        """``(name, constraint, default)`` for every checked argument, in signature order."""
        if self._plan is None:
            self._plan = self._resolve()
        return self._plan

    def __getitem__(self, name: str) -> Constraint:
        for n, c, _ in self.resolve():
            if n == name:
                return c
        raise KeyError(name)

    def __iter__(self):
        return iter([n for n, _, _ in self.resolve()])

    def __len__(self) -> int:
        return len(self.resolve())
