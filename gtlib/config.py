"""Run settings shared by every chapter: scale, seed, results folder, device and threads.

Every knob is read from the environment, so the same notebook runs at laptop scale in CI and at
paper-like scale on a GPU without editing a cell:

``GTLIB_SCALE``
    ``quick`` (default; minutes on 2 CPU cores) or ``full`` (closer to the papers; meant for a GPU).
``GTLIB_SEED``
    Base seed (default 0). Every claim in the book must hold for any seed, not one lucky one.
``GTLIB_RESULTS_DIR``
    Where executing a chapter writes ``<chapter-slug>.json`` (default ``_build/results`` at the
    repository root, or ``./_build/results`` when gtlib is installed elsewhere, e.g. on Colab).
``GTLIB_DEVICE``
    ``cuda``, ``mps`` or ``cpu``; by default the first available in that order.
``GTLIB_THREADS``
    torch intra-op threads (default 1: on a small shared machine more threads are slower).
``GTLIB_CACHE_DIR``
    Where generated datasets are cached (default ``~/.cache/gtlib``).
"""
from __future__ import annotations

import os
import random
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import torch

SCALES = ("quick", "full")
DEVICES = ("cuda", "mps", "cpu")


def _repo_root() -> Path | None:
    """The repository root when gtlib is imported from a checkout, else None."""
    here = Path(__file__).resolve().parent.parent
    return here if (here / "_config.yml").exists() and (here / "gtlib").is_dir() else None


def _auto_device() -> str:
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


@dataclass(frozen=True)
class Settings:
    """The settings in force for one run (read from the environment by :func:`settings`)."""

    scale: str
    seed: int
    results_dir: Path
    device: str
    threads: int
    cache_dir: Path

    def _repr_html_(self) -> str:  # shown by the first cell of every chapter
        rows = "".join(f"<tr><td><code>{f.name}</code></td><td>{getattr(self, f.name)}</td></tr>"
                       for f in fields(self))
        return f"<table><tr><th>setting</th><th>value</th></tr>{rows}</table>"


def _env_int(name: str, default: int, minimum: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def settings() -> Settings:
    """Read the run settings from the environment (see the module docstring).

    Raises
    ------
    ValueError
        If ``GTLIB_SCALE`` is not ``quick``/``full``, ``GTLIB_SEED`` is not a non-negative integer,
        or ``GTLIB_DEVICE`` names an unknown or unavailable device.
    """
    scale = os.environ.get("GTLIB_SCALE", "quick").strip().lower() or "quick"
    if scale not in SCALES:
        raise ValueError(f"GTLIB_SCALE must be one of {SCALES}, got {scale!r}")
    seed = _env_int("GTLIB_SEED", 0, 0)
    threads = _env_int("GTLIB_THREADS", 1, 1)
    device = os.environ.get("GTLIB_DEVICE", "").strip().lower() or _auto_device()
    if device not in DEVICES:
        raise ValueError(f"GTLIB_DEVICE must be one of {DEVICES}, got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("GTLIB_DEVICE='cuda' but no CUDA device is available")
    root = _repo_root()
    default_results = (root if root is not None else Path.cwd()) / "_build" / "results"
    results_dir = Path(os.environ.get("GTLIB_RESULTS_DIR") or default_results)
    cache_dir = Path(os.environ.get("GTLIB_CACHE_DIR") or Path.home() / ".cache" / "gtlib")
    return Settings(scale=scale, seed=seed, results_dir=results_dir, device=device,
                    threads=threads, cache_dir=cache_dir)


def setup(seed_offset: int = 0) -> Settings:
    """Apply the settings: set torch's thread count and seed every RNG; return the settings.

    Call once at the top of a chapter. ``seed_offset`` lets a chapter derive distinct but
    reproducible streams from the base seed.
    """
    if not isinstance(seed_offset, int) or seed_offset < 0:
        raise ValueError(f"seed_offset must be a non-negative int, got {seed_offset!r}")
    s = settings()
    torch.set_num_threads(s.threads)
    seed_everything(s.seed + seed_offset)
    return s


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global generators."""
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    random.seed(int(seed))
    np.random.seed(int(seed) % 2**32)
    torch.manual_seed(int(seed))


def by_scale(quick: Any, full: Any, scale: str | None = None) -> Any:
    """Return ``quick`` or ``full`` according to ``scale`` (default: the ``GTLIB_SCALE`` in force)."""
    scale = settings().scale if scale is None else scale
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    return quick if scale == "quick" else full


def preset(cls, scale: str | None = None):
    """Instantiate a config dataclass from its ``quick()``/``full()`` classmethods by scale."""
    scale = settings().scale if scale is None else scale
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    return getattr(cls, scale)()
