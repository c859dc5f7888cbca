"""Argument checks shared by every gtlib module.

Public functions validate their arguments at the boundary and raise ``TypeError`` (wrong type) or
``ValueError`` (wrong value), always naming the argument and the accepted values, so that a reader
who passes a bad value learns which one and why.
"""
from __future__ import annotations

import math

import numpy as np


def check_int(name: str, value, minimum: int = 1) -> int:
    """``value`` as an ``int`` (bools refused), at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_positive(name: str, value, allow_zero: bool = False) -> float:
    """``value`` as a finite ``float`` that is > 0 (or >= 0 with ``allow_zero``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'} and finite, got {value}")
    return value


def check_fraction(name: str, value, open_interval: bool = False) -> float:
    """``value`` as a ``float`` in [0, 1] (or in (0, 1) with ``open_interval``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{name} must be a number in [0, 1], got {type(value).__name__}")
    value = float(value)
    if open_interval and not 0.0 < value < 1.0:
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {value}")
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must lie in [0, 1], got {value}")
    return value
