"""gtlib: the helper library of *Generalization in Deep Learning, Executed*.

Core modules (used by every chapter): :mod:`~gtlib.config` (scale, seed, device),
:mod:`~gtlib.data`, :mod:`~gtlib.models` (one MLP, or E of one shape stacked), :mod:`~gtlib.engine`
(the one training loop: E models at once), :mod:`~gtlib.train` (its standard compositions: one
model, or a stack of E),
:mod:`~gtlib.claims` and :mod:`~gtlib.plotting`. Each research chapter has one module of its own,
which composes the engine and never writes a training step of its own.
"""

from __future__ import annotations

__all__ = [
    "ClaimFailed",
    "Claims",
    "Config",
    "Result",
    "Settings",
    "by_scale",
    "param",
    "preset",
    "seed_everything",
    "settings",
    "setup",
    "setup_chapter",
]


__version__ = "0.1.0"

from .claims import ClaimFailed, Claims  # noqa: F401
from .config import (
    Config,
    Result,
    Settings,
    by_scale,
    param,
    preset,  # noqa: F401
    seed_everything,
    settings,
    setup,
)


def setup_chapter(seed_offset: int = 0) -> Settings:
    """Start a chapter: apply the run settings (threads, seeds) and the house plotting style.

    Returns the :class:`~gtlib.config.Settings` in force, which the first cell displays.

    Parameters
    ----------
    seed_offset : int, default 0
        Added to the base seed ``GTLIB_SEED`` (see :func:`gtlib.config.setup`).

    Returns
    -------
    Settings
        The settings in force, which the first cell displays.
    """
    from .plotting import use_style

    s = setup(seed_offset)
    use_style()
    return s
