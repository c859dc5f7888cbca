"""Run settings shared by every chapter, and the one base class of every experiment config.

Settings
--------
Every knob is read from the environment, so the same notebook runs at laptop scale in CI and at
paper-like scale on a GPU without editing a cell:

``GTLIB_SCALE``
    ``quick`` (default; minutes on 2 CPU cores) or ``full`` (closer to the papers; meant for a GPU).
``GTLIB_SEED``
    Base seed (default 0), an integer in ``[0, 2**32)`` (chapters derive further seeds from it by
    adding offsets). Every claim in the book must hold for any seed, not one lucky one.
``GTLIB_RESULTS_DIR``
    Where executing a chapter writes ``<chapter-slug>.json`` (default ``_build/results`` at the
    repository root, or ``./_build/results`` when gtlib is installed elsewhere, e.g. on Colab).
``GTLIB_DEVICE``
    ``cuda``, ``mps`` or ``cpu``; by default the first available in that order. Naming a device
    this machine does not have is an error.
``GTLIB_THREADS``
    torch intra-op threads (default 1: on a small shared machine more threads are slower), at most
    four times the number of CPU cores.
``GTLIB_CACHE_DIR``
    Where generated datasets are cached (default ``~/.cache/gtlib``).

Each variable is read (and checked) only by the functions that need it: a bad ``GTLIB_DEVICE``
does not stop ``gtlib.data.mnist1d(device="cpu")``.

Configs
-------
An experiment's sizes and hyperparameters live in a dataclass derived from :class:`Config`. Each
field declares what it accepts once, with :func:`param` and a constraint from :mod:`gtlib.checks`::

    @dataclass
    class SweepConfig(Config):
        '''What the sweep trains.'''
        FULL = dict(n_train=16000, epochs=60)  # the `full` preset: overrides
        n_train: int = param(4000, Interval(int, 1))
        lr: float = param(0.1, Interval(float, 0, None, closed="neither"))
        optimizer: str = param("sgd", Options(("sgd", "adamw")))

The dataclass's constructor validates every field (and the cross-field rules of
:meth:`Config._check_together`), so no config exists in an invalid state; the error names the
config, the field, the value and what is accepted. The defaults are the ``quick`` preset and the
class attribute ``FULL`` maps fields to their ``full`` values; chapters build configs with
``preset(SweepConfig)`` (the scale in force) or ``preset(SweepConfig, "full", lr=0.05)``.

Results returned by experiments derive from :class:`Result`, whose :meth:`Result.to_dict` turns
them into plain JSON-ready values.
"""

from __future__ import annotations

import copy
import ctypes
import html
import os
import platform
import random
import sys
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any, ClassVar, Mapping

import numpy as np
import torch

from .checks import SEED, Constraint, Interval

__all__ = [
    # configs and results
    "Config",
    "Result",
    "by_scale",
    "param",
    "preset",
    # run settings
    "DEVICES",
    "SCALES",
    "Settings",
    "max_threads",
    "read_cache_dir",
    "read_device",
    "read_results_dir",
    "read_scale",
    "read_seed",
    "read_threads",
    "seed_everything",
    "settings",
    "setup",
]


#: The scales of a run (``GTLIB_SCALE``): ``quick`` for a laptop, ``full`` for a GPU.
SCALES = ("quick", "full")
#: The device types ``GTLIB_DEVICE`` may name.
DEVICES = ("cuda", "mps", "cpu")
SEED_MAX = (
    2**32 - 1
)  # GTLIB_SEED; chapters add offsets, seed_everything accepts up to 2**63 - 1


# ================================================================================================
# settings (environment)
# ================================================================================================


def _repo_root() -> Path | None:
    """The repository root when gtlib is imported from a checkout, else None."""
    here = Path(__file__).resolve().parent.parent
    return (
        here
        if (here / "_config.yml").exists() and (here / "gtlib").is_dir()
        else None
    )


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def _auto_device() -> str:
    if torch.cuda.is_available():
        return "cuda"
    if _mps_available():
        return "mps"
    return "cpu"


def _short_path(path: Path) -> str:
    """``path`` relative to the repository, or with ``~`` for the home folder (no machine paths)."""
    path = Path(path)
    root = _repo_root()
    candidates = []
    if root is not None:
        candidates.append((root, ""))
    candidates.append((Path.home(), "~/"))
    for base, prefix in candidates:
        try:
            rel = path.resolve().relative_to(base.resolve())
        except (ValueError, OSError):
            continue
        return prefix + (str(rel) if str(rel) != "." else "") or "."
    return str(path)


@dataclass(frozen=True)
class Settings:
    """The settings in force for one run (read from the environment by :func:`settings`).

    Parameters
    ----------
    scale : str
        ``"quick"`` or ``"full"`` (``GTLIB_SCALE``).
    seed : int
        The base seed (``GTLIB_SEED``).
    results_dir : Path
        Where claims are written (``GTLIB_RESULTS_DIR``).
    device : str
        The torch device (``GTLIB_DEVICE``).
    threads : int
        Torch's CPU threads (``GTLIB_THREADS``).
    cache_dir : Path
        Where generated datasets are cached (``GTLIB_CACHE_DIR``).
    """

    scale: str
    seed: int
    results_dir: Path
    device: str
    threads: int
    cache_dir: Path

    def __post_init__(self) -> None:
        if self.scale not in SCALES or not isinstance(self.scale, str):
            raise ValueError(f"scale must be one of {SCALES}, got {self.scale!r}")
        Interval(int, 0, SEED_MAX).check("seed", self.seed)
        if not isinstance(self.device, str) or self.device not in DEVICES:
            raise ValueError(f"device must be one of {DEVICES}, got {self.device!r}")
        Interval(int, 1).check("threads", self.threads)
        for name in ("results_dir", "cache_dir"):
            value = getattr(self, name)
            if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
                raise TypeError(
                    f"{name} must be a path (str or pathlib.Path), got {value!r}"
                )
            object.__setattr__(self, name, Path(value))

    def _repr_html_(self) -> str:  # shown by the first cell of every chapter
        rows = []
        for f in fields(self):
            v = getattr(self, f.name)
            shown = _short_path(v) if isinstance(v, Path) else v
            rows.append(
                f"<tr><td><code>{f.name}</code></td>"
                f"<td>{html.escape(str(shown))}</td></tr>"
            )
        return (
            f"<table><tr><th>setting</th><th>value</th></tr>{''.join(rows)}</table>"
        )


def _env_int(name: str, default: int, minimum: int, maximum: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw.strip())
    except ValueError:
        raise ValueError(
            f"{name} must be an integer in [{minimum}, {maximum}], got {raw!r}"
        ) from None
    if not minimum <= value <= maximum:
        raise ValueError(
            f"{name} must be an integer in [{minimum}, {maximum}], got {value}"
        )
    return value


def _env_dir(name: str, default: Path) -> Path:
    """The folder named by the variable ``name`` (or ``default``); refused if a file is in the way."""
    raw = os.environ.get(name)
    path = Path(raw).expanduser() if raw and raw.strip() else default
    for p in (path, *path.parents):  # the first existing ancestor must be a folder
        if p.exists():
            if not p.is_dir():
                what = "is a file" if p == path else f"lies under the file {p}"
                raise ValueError(f"{name} must name a folder, but {path} {what}")
            break
    return path


def read_scale() -> str:
    """``GTLIB_SCALE`` (``quick`` or ``full``).

    Returns
    -------
    str
        ``"quick"`` or ``"full"``.
    """
    scale = os.environ.get("GTLIB_SCALE", "quick").strip().lower() or "quick"
    if scale not in SCALES:
        raise ValueError(f"GTLIB_SCALE must be one of {SCALES}, got {scale!r}")
    return scale


def read_seed() -> int:
    """``GTLIB_SEED``, an integer in ``[0, 2**32)``.

    Returns
    -------
    int
        The base seed.
    """
    return _env_int("GTLIB_SEED", 0, 0, SEED_MAX)


def max_threads() -> int:
    """The largest ``GTLIB_THREADS`` accepted: four times the CPU cores.

    Returns
    -------
    int
        Four times the number of CPU cores.
    """
    return 4 * max(1, os.cpu_count() or 1)


def read_threads() -> int:
    """``GTLIB_THREADS``, an integer in ``[1, 4 * cores]``.

    Returns
    -------
    int
        The number of torch threads.
    """
    return _env_int("GTLIB_THREADS", 1, 1, max_threads())


def read_device() -> str:
    """``GTLIB_DEVICE``, or the best available device; an unavailable device is refused.

    Returns
    -------
    str
        ``"cuda"``, ``"mps"`` or ``"cpu"`` (or an indexed device such as ``"cuda:1"``).
    """
    raw = os.environ.get("GTLIB_DEVICE", "").strip().lower()
    if not raw:
        return _auto_device()
    if raw not in DEVICES:
        raise ValueError(f"GTLIB_DEVICE must be one of {DEVICES}, got {raw!r}")
    if raw == "cuda" and not torch.cuda.is_available():
        raise ValueError(
            "GTLIB_DEVICE='cuda' but no CUDA device is available (use 'cpu')"
        )
    if raw == "mps" and not _mps_available():
        raise ValueError(
            "GTLIB_DEVICE='mps' but no MPS device is available (use 'cpu')"
        )
    return raw


def read_results_dir() -> Path:
    """``GTLIB_RESULTS_DIR`` (default ``_build/results`` at the repository root).

    Returns
    -------
    Path
        The results folder.
    """
    root = _repo_root()
    return _env_dir(
        "GTLIB_RESULTS_DIR",
        (root if root is not None else Path.cwd()) / "_build" / "results",
    )


def read_cache_dir() -> Path:
    """``GTLIB_CACHE_DIR`` (default ``~/.cache/gtlib``).

    Returns
    -------
    Path
        The cache folder.
    """
    return _env_dir("GTLIB_CACHE_DIR", Path.home() / ".cache" / "gtlib")


def settings() -> Settings:
    """Read the run settings from the environment (see the module docstring).

    Returns
    -------
    Settings
        The settings in force.

    Raises
    ------
    ValueError
        Naming the variable, if ``GTLIB_SCALE`` is not ``quick``/``full``, ``GTLIB_SEED`` is not an
        integer in ``[0, 2**32)``, ``GTLIB_THREADS`` is outside ``[1, 4 * cores]``,
        ``GTLIB_DEVICE`` names an unknown or unavailable device, or ``GTLIB_RESULTS_DIR`` /
        ``GTLIB_CACHE_DIR`` is a file.
    """
    return Settings(
        scale=read_scale(),
        seed=read_seed(),
        results_dir=read_results_dir(),
        device=read_device(),
        threads=read_threads(),
        cache_dir=read_cache_dir(),
    )


def setup(seed_offset: int = 0) -> Settings:
    """Apply the settings: set torch's thread count and seed every RNG; return the settings.

    Call once at the top of a chapter. ``seed_offset`` lets a chapter derive distinct but
    reproducible streams from the base seed. On Linux with glibc it also asks ``malloc`` to
    keep freed memory for reuse (``_keep_freed_memory``): a training step frees and
    reallocates the same large tensors, and without this every one of them comes back as
    fresh pages the kernel must zero, about a sixth of a chapter's CPU time. Results are
    unchanged; set ``GTLIB_KEEP_FREED_MEMORY=0`` to leave ``malloc`` as it is.

    Parameters
    ----------
    seed_offset : int, default 0
        Added to the base seed, so that a chapter has streams of its own.

    Returns
    -------
    Settings
        The settings in force.
    """
    Interval(int, 0, SEED_MAX).check("seed_offset", seed_offset)
    s = settings()
    torch.set_num_threads(s.threads)
    _keep_freed_memory()
    seed_everything(s.seed + int(seed_offset))
    return s


#: glibc ``mallopt`` parameters (``malloc.h``) and the values ``setup`` gives them: blocks
#: below 256 MiB come from the heap, not from ``mmap``, and up to 512 MiB of free heap is kept.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_BELOW, _TRIM_ABOVE = 256 << 20, 512 << 20


def _keep_freed_memory() -> bool:
    """Ask glibc's ``malloc`` to reuse freed blocks; True if it took the settings.

    By default glibc serves a block over a dynamic threshold with ``mmap`` and returns
    freed heap to the system beyond another; torch's CPU tensors then arrive as new pages
    at nearly every step, each zeroed by the kernel. Raising both thresholds keeps the
    blocks in the process. Both must be set: a trim threshold alone disables the dynamic
    mmap threshold and makes every block over 128 KiB an ``mmap``. A no-op (False) off
    glibc, or when ``GTLIB_KEEP_FREED_MEMORY`` is ``0``.
    """
    if os.environ.get("GTLIB_KEEP_FREED_MEMORY", "1").strip() == "0":
        return False
    if not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    return bool(
        mallopt(_M_MMAP_THRESHOLD, _MMAP_BELOW)
        and mallopt(_M_TRIM_THRESHOLD, _TRIM_ABOVE)
    )


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's global generators (``seed`` in ``[0, 2**63)``).

    Parameters
    ----------
    seed : int
        The seed, in ``[0, 2**63)``.
    """
    seed = int(SEED.check("seed", seed))
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _scale(scale: str | None) -> str:
    if scale is None:
        return read_scale()
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    return scale


def by_scale(quick: Any, full: Any, scale: str | None = None) -> Any:
    """Return ``quick`` or ``full`` according to ``scale`` (default: the ``GTLIB_SCALE`` in force).

    Parameters
    ----------
    quick : Any
        The value at the ``quick`` scale.
    full : Any
        The value at the ``full`` scale.
    scale : str | None, default None
        ``"quick"``, ``"full"`` or None (the ``GTLIB_SCALE`` in force).

    Returns
    -------
    object
        ``quick`` or ``full``.
    """
    return quick if _scale(scale) == "quick" else full


# ================================================================================================
# configs and results
# ================================================================================================


def param(
    default: Any = MISSING,
    constraint: Constraint | None = None,
    *,
    factory=None,
    doc: str = "",
):
    """A config field with its constraint (and an optional one-line ``doc``).

    ``factory`` builds a mutable default (e.g. a nested config) instead of ``default``.

    Parameters
    ----------
    default : Any, optional
        The default value (the ``quick`` preset's).
    constraint : Constraint | None, default None
        What the field must be; required.
    factory : object, default None
        Builds a mutable default (e.g. a nested config) instead of ``default``.
    doc : str, default ''
        A one-line description, shown as a tooltip of the config's table.

    Returns
    -------
    dataclasses.Field
        The field, carrying the constraint and ``doc`` in its metadata.

    Raises
    ------
    TypeError
        If ``constraint`` is missing or not a :class:`~gtlib.checks.Constraint`, ``doc`` is not a str or ``factory`` not callable.
    """
    if constraint is None or not isinstance(constraint, Constraint):
        raise TypeError(
            "param needs a constraint from gtlib.checks (Interval, Options, ...), got "
            f"constraint={constraint!r}"
        )
    if not isinstance(doc, str):
        raise TypeError(f"doc must be a str, got {type(doc).__name__}")
    if factory is not None and not callable(factory):
        raise TypeError(
            f"factory must be callable (it builds the default), got {factory!r}"
        )
    meta = {"constraint": constraint, "doc": doc}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


def _plain(value: Any) -> Any:
    """``value`` as plain Python (lists, dicts, numbers, strings) for JSON."""
    if isinstance(value, (Config, Result)):
        return value.to_dict()
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().tolist()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.generic,)):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _short(value: Any) -> str:
    if isinstance(value, Config):
        return str(value)
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, (tuple, list)):
        if len(value) > 8:
            return (
                f"({', '.join(_short(v) for v in value[:3])}, ..., {_short(value[-1])}) "
                f"[{len(value)} values]"
            )
        inner = ", ".join(_short(v) for v in value)
        return f"({inner}{',' if len(value) == 1 else ''})"
    if isinstance(value, np.generic):
        return _short(value.item())
    return repr(value)


class Config:
    """Base of every experiment config.

    Derive with ``@dataclass`` and declare fields with :func:`param`.

    * Construction validates every field against its constraint, then the cross-field rules of
      :meth:`_check_together`; assigning a field later re-validates it, and assigning a name that
      is not a field (a typo) raises ``TypeError``.
    * The defaults are the ``quick`` preset; the class attribute ``FULL`` maps field names to their
      values in the ``full`` preset (see :func:`preset`).
    * ``str(config)`` lists the fields that differ from the defaults; in a notebook a config shows
      as a compact table (field, value, ``full`` value).
    """

    FULL: ClassVar[Mapping[str, Any]] = {}

    # -- validation ------------------------------------------------------------------------------
    def __post_init__(self) -> None:
        self.validate()
        object.__setattr__(self, "_gtlib_ready", True)

    def validate(self):
        """Check every field and the cross-field rules; return ``self`` (raises otherwise)."""
        cls = type(self).__name__
        for f in fields(self):
            constraint = f.metadata.get("constraint")
            if constraint is None:
                raise TypeError(
                    f"{cls}.{f.name} declares no constraint (use gtlib.config.param)"
                )
            constraint.check(f"{cls}.{f.name}", getattr(self, f.name))
        self._check_together()
        return self

    def _check_together(self) -> None:
        """Rules that involve several fields (override; raise with :meth:`_refuse`)."""

    def _refuse(self, name: str, accepted: str) -> None:
        """Raise the standard error for field ``name``: it must be ``accepted``."""
        value = getattr(self, name)
        raise ValueError(
            f"{type(self).__name__}.{name} must be {accepted}, got {_short(value)}"
        )

    def __setattr__(self, name: str, value: Any) -> None:
        if not getattr(self, "_gtlib_ready", False):
            object.__setattr__(self, name, value)
            return
        spec = {f.name: f for f in fields(self)}.get(name)
        if spec is None:
            if not name.startswith(
                "_"
            ):  # a typo would otherwise be ignored silently
                raise TypeError(
                    f"{type(self).__name__} has no field {name!r}; its fields are "
                    f"{[f.name for f in fields(self)]}"
                )
            object.__setattr__(self, name, value)
            return
        spec.metadata["constraint"].check(f"{type(self).__name__}.{name}", value)
        old = getattr(self, name)
        object.__setattr__(self, name, value)
        try:
            self._check_together()
        except Exception:
            object.__setattr__(self, name, old)
            raise

    # -- presets ---------------------------------------------------------------------------------
    @classmethod
    def _build(cls, base: Mapping[str, Any], overrides: Mapping[str, Any]):
        names = [f.name for f in fields(cls)]
        for key in list(base) + list(overrides):
            if key not in names:
                raise TypeError(
                    f"{cls.__name__} has no field {key!r}; its fields are {names}"
                )
        return cls(**{**copy.deepcopy(dict(base)), **overrides})

    @classmethod
    def quick(cls, **overrides):
        """The ``quick`` preset (the field defaults), with ``overrides`` applied."""
        return cls._build({}, overrides)

    @classmethod
    def full(cls, **overrides):
        """The ``full`` preset: the defaults overridden by the class's ``FULL`` mapping, then by
        ``overrides``."""
        return cls._build(cls.FULL, overrides)

    # -- output ----------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """Every field as plain JSON-ready values (nested configs as dicts)."""
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}

    def changed(self) -> dict:
        """The fields whose value differs from the default (the ``quick`` preset)."""
        out = {}
        for f in fields(self):
            if f.default is not MISSING:
                default = f.default
            elif f.default_factory is not MISSING:
                default = f.default_factory()
            else:
                default = MISSING
            value = getattr(self, f.name)
            try:
                same = bool(value == default)
            except Exception:
                same = False
            if not same:
                out[f.name] = value
        return out

    def __str__(self) -> str:
        body = ", ".join(f"{k}={_short(v)}" for k, v in self.changed().items())
        return f"{type(self).__name__}({body})"

    def _repr_html_(self) -> str:
        full = dict(self.FULL)
        rows = []
        for f in fields(self):
            v = getattr(self, f.name)
            fv = _short(full[f.name]) if f.name in full else ""
            tip = html.escape(
                f.metadata.get("doc", "") or f.metadata["constraint"].describe()
            )
            rows.append(
                f"<tr title='{tip}'><td><code>{f.name}</code></td>"
                f"<td>{html.escape(_short(v))}</td><td>{html.escape(fv)}</td></tr>"
            )
        return (
            f"<table><caption>{type(self).__name__}</caption><tr><th>field</th>"
            f"<th>value</th><th><code>full</code> preset</th></tr>{''.join(rows)}</table>"
        )


class Result:
    """Base of the dataclasses that experiments return: one :meth:`to_dict` for all of them."""

    def to_dict(self) -> dict:
        """Every field as plain JSON-ready values (tensors and arrays as nested lists)."""
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}


def preset(cls, scale: str | None = None, **overrides):
    """Build config class ``cls`` at ``scale`` (default: ``GTLIB_SCALE``) with ``overrides``.

    For a :class:`Config` this is ``cls.quick(**overrides)`` or ``cls.full(**overrides)``: the
    defaults, then (for ``full``) the class's ``FULL`` mapping, then ``overrides``, validated once.
    Other classes with ``quick()``/``full()`` classmethods get ``dataclasses.replace`` for
    ``overrides``.

    Parameters
    ----------
    scale : str | None, default None
        ``"quick"``, ``"full"`` or None (``GTLIB_SCALE``).
    **overrides
        Field values that replace the preset's.

    Returns
    -------
    object
        The config.

    Raises
    ------
    TypeError
        If ``cls`` has no ``quick()``/``full()``, or an override names no field.
    """
    scale = _scale(scale)
    if isinstance(cls, type) and issubclass(cls, Config):
        return getattr(cls, scale)(**overrides)
    if not callable(getattr(cls, scale, None)):
        raise TypeError(
            f"cls must be a config class with quick()/full() (a gtlib.config.Config), "
            f"got {cls!r}"
        )
    out = getattr(cls, scale)()
    if overrides:
        from dataclasses import replace

        out = replace(out, **overrides)
    return out
