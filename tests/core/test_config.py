"""Tests of gtlib.config, one section per public function: unit tests, checks against
independent reference implementations (marker ``reference``), bad input refused at the boundary
(``boundary``), equivalence of the engine with the loops it replaced (``engine``) and tests pinned
by mutation testing (``mutation``)."""

from __future__ import annotations
import importlib
import math
import matplotlib
import numpy as np
import os
import pkgutil
import platform
import pytest
import random
import sys
import torch
from dataclasses import dataclass, replace, FrozenInstanceError, field, fields
from pathlib import Path
from typing import Any, Callable, Optional, Sequence as Sequence_ref

from gtlib import config, config as G
from gtlib.checks import (
    Interval,
    Options,
    Sequence,
    InstanceOf,
    boundary,
    count,
    fraction,
    positive,
    tuple_of,
)
from gtlib.config import Config, Result, param, Settings, preset, setup, read_seed
import gtlib


@dataclass
class _Toy(Config):
    """A config used only by these tests."""

    FULL = {"n": 100, "widths": (8, 16, 32)}
    n: int = param(10, Interval(int, 1))
    lr: float = param(0.1, Interval(float, 0, None, "neither"))
    opt: str = param("sgd", Options(("sgd", "adamw")))
    widths: tuple = param(
        (8, 16), Sequence(Interval(int, 1), min_len=2, increasing="strict")
    )
    frac: float | None = param(None, Interval(float, 0, 1, "right", optional=True))

    def _check_together(self):
        if self.n < len(self.widths):
            self._refuse("n", f">= len(widths) = {len(self.widths)}")


@pytest.fixture
def keep_rngs():
    """Restore the global generators and torch's thread count after a test that seeds them."""
    threads = torch.get_num_threads()
    py, npy, tt = random.getstate(), np.random.get_state(), torch.get_rng_state()
    yield
    torch.set_num_threads(threads)
    random.setstate(py)
    np.random.set_state(npy)
    torch.set_rng_state(tt)


class _Later:  # named in an annotation before it is used (annotations are strings here)
    pass


@boundary()
def _annotated(
    a: int = 0,
    b: float = 0.0,
    c: bool = False,
    d: str = "",
    e: list[int] = (0,),
    f: Sequence_ref[float] = (0.0,),
    g: dict = None,
    h: Callable = None,
    i: torch.Tensor = None,
    j: np.ndarray = None,
    k: int | None = 0,
    m: int | str = 0,
    n: Optional[float] = None,
    o: _Later = None,
    p: torch.nn.Module = None,
    q: Any = None,
    r: int | Path = 0,
    s: list = (0,),
    t: tuple[int, ...] = (0,),
    u: dict[str, int] = None,
    v: Settings = None,
):
    return "ok"


@pytest.fixture
def clean_env(monkeypatch):
    for k in (
        "GTLIB_SCALE",
        "GTLIB_SEED",
        "GTLIB_THREADS",
        "GTLIB_DEVICE",
        "GTLIB_RESULTS_DIR",
        "GTLIB_CACHE_DIR",
    ):
        monkeypatch.delenv(k, raising=False)
    return monkeypatch


def _settings(**kw):
    base = dict(
        scale="quick",
        seed=0,
        results_dir="r",
        device="cpu",
        threads=1,
        cache_dir="c",
    )
    base.update(kw)
    return Settings(**base)


def _draws():
    return random.random(), float(np.random.rand()), float(torch.rand(()))


def _reference_draws(py_seed, np_seed, torch_seed):
    r = random.Random(py_seed).random()
    n = float(np.random.RandomState(np_seed).rand())
    t = float(torch.rand((), generator=torch.Generator().manual_seed(torch_seed)))
    return r, n, t


@dataclass
class _Inner(Config):
    k: int = param(2, count())


@dataclass
class _Cfg(Config):
    """A config with every kind of field, a FULL preset and a cross-field rule."""

    FULL = {"n": 50, "lr": 0.5, "widths": [16, 32, 64]}
    n: int = param(6, count(), doc="rows")
    lr: float = param(0.1, positive())
    opt: str = param("sgd", Options(("sgd", "adamw")))
    widths: tuple = param((4, 8), tuple_of(count(), increasing="strict"))
    inner: _Inner = param(constraint=InstanceOf(_Inner), factory=_Inner)
    frac: float | None = param(None, fraction(optional=True))

    def _check_together(self):
        if self.n < len(self.widths):
            self._refuse("n", f"at least len(widths) = {len(self.widths)}")


def _configs():
    for mod in pkgutil.iter_modules(gtlib.__path__):
        importlib.import_module(f"gtlib.{mod.name}")
    seen, todo = [], list(Config.__subclasses__())
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("gtlib."):
            seen.append(cls)
    return sorted(seen, key=lambda c: c.__name__)


CONFIGS = _configs()


matplotlib.use("Agg")


BAD = (TypeError, ValueError)


@dataclass
class _Toy_mut(Config):
    """A config with a `full` preset, for the preset tests."""

    FULL = {"a": 5, "b": 0.5}
    a: int = param(1, Interval(int, 1))
    b: float = param(0.1, Interval(float, 0, 1))


# =================================================================================================
# config.SEED_MAX
# =================================================================================================
@pytest.mark.reference
def test_public_names():
    assert set(G.__all__) >= {
        "Config",
        "Result",
        "Settings",
        "by_scale",
        "param",
        "preset",
        "seed_everything",
        "settings",
        "setup",
        "max_threads",
    }
    assert G.SCALES == ("quick", "full") and G.DEVICES == ("cuda", "mps", "cpu")
    assert G.SEED_MAX == 2**32 - 1 and math.isclose(G.SEED_MAX + 1, 2**32)
    assert (
        os.environ.get("GTLIB_DEVICE") == "cpu"
    )  # the suite's conftest, which these tests keep
    assert field is not None


# =================================================================================================
# config.Settings
# =================================================================================================
@pytest.mark.reference
@pytest.mark.parametrize(
    "kw",
    [
        dict(a=-5),
        dict(a=np.int64(2)),
        dict(b=3),
        dict(b=-2.5),
        dict(c=np.bool_(False)),
        dict(d="x"),
        dict(e=[1, 2]),
        dict(e=(3,)),
        dict(e=np.array([0.5])),
        dict(e=torch.tensor([0.5])),
        dict(f=[1, 2.5]),
        dict(g={}),
        dict(h=len),
        dict(h=_Later),
        dict(i=torch.ones(1)),
        dict(j=np.ones(1)),
        dict(j=torch.ones(1)),
        dict(k=None),
        dict(k=3),
        dict(m=3),
        dict(m="x"),
        dict(n=None),
        dict(n=1),
        dict(o=_Later()),
        dict(p=torch.nn.Linear(1, 1)),
        dict(q=object()),
        dict(r=Path("x")),
        dict(r="anything"),
        dict(s="ab"),
        dict(s=None),
        dict(t=(1, 2.5)),
        dict(u={"a": 1}),
        dict(o=object()),  # a class outside gtlib and torch: not checked
        dict(v=Settings("quick", 0, "r", "cpu", 1, "c")),
    ],
)
def test_annotations_accept(kw):
    assert _annotated(**kw) == "ok"


@pytest.mark.reference
def test_settings_record_edges():
    s = _settings(seed=2**32 - 1, threads=64, results_dir=Path("a"), cache_dir="b/c")
    assert (
        s.seed == 2**32 - 1
        and s.results_dir == Path("a")
        and s.cache_dir == Path("b/c")
    )
    assert isinstance(s.cache_dir, Path)
    assert _settings(scale="full", device="cuda").device == "cuda"
    with pytest.raises(FrozenInstanceError):
        s.seed = 3


@pytest.mark.reference
@pytest.mark.parametrize(
    "kw,err",
    [
        (dict(scale="Quick"), ValueError),
        (dict(scale="medium"), ValueError),
        (dict(scale=None), ValueError),
        (dict(seed=-1), ValueError),
        (dict(seed=2**32), ValueError),
        (dict(seed=True), TypeError),
        (dict(seed=1.0), TypeError),
        (dict(device="gpu"), ValueError),
        (dict(device=None), ValueError),
        (dict(threads=0), ValueError),
        (dict(threads=True), TypeError),
        (dict(results_dir=""), TypeError),
        (dict(results_dir=" "), TypeError),
        (dict(cache_dir=3), TypeError),
        (dict(cache_dir=None), TypeError),
    ],
)
def test_settings_record_refuses(kw, err):
    with pytest.raises(err, match=list(kw)[0]):
        _settings(**kw)


@pytest.mark.boundary
@pytest.mark.parametrize(
    "kw,name",
    [
        ({"seed": -1}, "seed"),
        ({"scale": "huge"}, "scale"),
        ({"threads": 0}, "threads"),
        ({"device": "gpu9"}, "device"),
        ({"cache_dir": None}, "cache_dir"),
    ],
)
def test_settings_cannot_hold_invalid_values(kw, name):
    good = dict(
        scale="quick",
        seed=0,
        results_dir="/tmp",
        device="cpu",
        threads=1,
        cache_dir="/tmp",
    )
    with pytest.raises(BAD, match=name):
        config.Settings(**{**good, **kw})


# =================================================================================================
# config.read_scale
# =================================================================================================
@pytest.mark.reference
@pytest.mark.parametrize("raw", ["medium", "fullx", "quick,full", "0"])
def test_gtlib_scale_garbage(clean_env, raw):
    clean_env.setenv("GTLIB_SCALE", raw)
    with pytest.raises(ValueError, match="^GTLIB_SCALE must be one of"):
        G.read_scale()


# =================================================================================================
# config.read_seed
# =================================================================================================
@pytest.mark.reference
@pytest.mark.parametrize(
    "raw,expected",
    [
        (None, 0),
        ("", 0),
        ("   ", 0),
        ("\t\n", 0),
        ("7", 7),
        (" 7 ", 7),
        ("+3", 3),
        ("0", 0),
        ("4294967295", 2**32 - 1),
        ("007", 7),
    ],
)
def test_gtlib_seed_parsing(clean_env, raw, expected):
    if raw is not None:
        clean_env.setenv("GTLIB_SEED", raw)
    assert G.read_seed() == expected
    assert G.settings().seed == expected


@pytest.mark.reference
@pytest.mark.parametrize(
    "raw,words",
    [
        ("4294967296", "got 4294967296"),
        ("-1", "got -1"),
        ("1.0", "got '1.0'"),
        ("abc", "got 'abc'"),
        ("1e3", "got '1e3'"),
        ("0x10", "got '0x10'"),
        ("3 4", "got '3 4'"),
        ("nan", "got 'nan'"),
    ],
)
def test_gtlib_seed_garbage_and_range(clean_env, raw, words):
    clean_env.setenv("GTLIB_SEED", raw)
    with pytest.raises(
        ValueError,
        match=r"^GTLIB_SEED must be an integer in \[0, 4294967295\], " + words,
    ):
        G.read_seed()


@pytest.mark.mutation
def test_an_empty_setting_means_its_default(monkeypatch):
    monkeypatch.setenv("GTLIB_SEED", "  ")
    assert read_seed() == 0


# =================================================================================================
# config.read_threads
# =================================================================================================
@pytest.mark.reference
def test_gtlib_threads_parsing_at_both_ends(clean_env):
    clean_env.setattr(G.os, "cpu_count", lambda: 3)
    assert G.max_threads() == 12
    assert G.read_threads() == 1  # unset
    for raw, want in (("", 1), (" ", 1), ("1", 1), ("12", 12), ("5", 5)):
        clean_env.setenv("GTLIB_THREADS", raw)
        assert G.read_threads() == want
    for raw in ("0", "13", "-2", "two", "1.5"):
        clean_env.setenv("GTLIB_THREADS", raw)
        with pytest.raises(
            ValueError, match=r"^GTLIB_THREADS must be an integer in \[1, 12\]"
        ):
            G.read_threads()
    clean_env.setattr(G.os, "cpu_count", lambda: None)
    assert G.max_threads() == 4
    clean_env.setenv("GTLIB_THREADS", "4")
    assert G.read_threads() == 4
    clean_env.setenv("GTLIB_THREADS", "5")
    with pytest.raises(ValueError, match=r"\[1, 4\]"):
        G.read_threads()


# =================================================================================================
# config.read_device
# =================================================================================================
@pytest.mark.reference
def test_gtlib_device_parsing(clean_env):
    clean_env.setattr(G.torch.cuda, "is_available", lambda: False)
    clean_env.setattr(G, "_mps_available", lambda: False)
    assert G.read_device() == "cpu"
    for raw, want in (("", "cpu"), ("  ", "cpu"), ("cpu", "cpu"), (" CPU ", "cpu")):
        clean_env.setenv("GTLIB_DEVICE", raw)
        assert G.read_device() == want
    for raw, words in (
        ("cuda", "no CUDA device"),
        ("mps", "no MPS device"),
        ("tpu", "one of"),
        ("cuda:0", "one of"),
        ("gpu", "one of"),
    ):
        clean_env.setenv("GTLIB_DEVICE", raw)
        with pytest.raises(ValueError, match="GTLIB_DEVICE"):
            G.read_device()
        with pytest.raises(ValueError, match=words):
            G.read_device()


@pytest.mark.reference
def test_gtlib_device_auto_is_what_torch_reports(clean_env):
    mps = getattr(torch.backends, "mps", None)
    has_mps = bool(mps is not None and mps.is_available())
    assert G._mps_available() is has_mps
    want = "cuda" if torch.cuda.is_available() else "mps" if has_mps else "cpu"
    assert G._auto_device() == want and G.read_device() == want
    clean_env.setattr(torch.backends, "mps", None, raising=False)
    assert G._mps_available() is False


@pytest.mark.reference
def test_gtlib_device_auto_prefers_cuda_then_mps(clean_env):
    clean_env.setattr(G.torch.cuda, "is_available", lambda: True)
    clean_env.setattr(G, "_mps_available", lambda: True)
    assert G.read_device() == "cuda"
    clean_env.setenv("GTLIB_DEVICE", "mps")
    assert G.read_device() == "mps"
    clean_env.setenv("GTLIB_DEVICE", " Cuda")
    assert G.read_device() == "cuda"
    clean_env.delenv("GTLIB_DEVICE")
    clean_env.setattr(G.torch.cuda, "is_available", lambda: False)
    assert G.read_device() == "mps"
    clean_env.setattr(G, "_mps_available", lambda: False)
    assert G.read_device() == "cpu"


# =================================================================================================
# config.read_results_dir
# =================================================================================================
@pytest.mark.reference
def test_results_and_cache_folders(clean_env, tmp_path):
    clean_env.setenv("HOME", str(tmp_path / "home"))
    root = Path(G.__file__).resolve().parent.parent
    assert G.read_results_dir() == root / "_build" / "results"
    assert G.read_cache_dir() == tmp_path / "home" / ".cache" / "gtlib"
    clean_env.setenv("GTLIB_RESULTS_DIR", "~/res")
    clean_env.setenv("GTLIB_CACHE_DIR", str(tmp_path / "not" / "yet" / "there"))
    assert G.read_results_dir() == tmp_path / "home" / "res"
    assert G.read_cache_dir() == tmp_path / "not" / "yet" / "there"
    clean_env.setenv("GTLIB_RESULTS_DIR", "  ")
    assert G.read_results_dir() == root / "_build" / "results"
    s = G.settings()
    assert isinstance(s.results_dir, Path) and isinstance(s.cache_dir, Path)


# =================================================================================================
# config.settings
# =================================================================================================
def test_defaults(monkeypatch):
    monkeypatch.delenv("GTLIB_SEED", raising=False)
    s = config.settings()
    assert (
        s.scale == "quick" and s.seed == 0 and s.device == "cpu" and s.threads >= 1
    )
    assert "<table>" in s._repr_html_()


def test_env_is_read(monkeypatch, tmp_path):
    monkeypatch.setenv("GTLIB_SCALE", "full")
    monkeypatch.setenv("GTLIB_SEED", "7")
    monkeypatch.setenv("GTLIB_RESULTS_DIR", str(tmp_path))
    s = config.settings()
    assert (s.scale, s.seed, s.results_dir) == ("full", 7, tmp_path)
    assert config.by_scale(1, 2) == 2


@pytest.mark.parametrize(
    "name,value",
    [
        ("GTLIB_SCALE", "huge"),
        ("GTLIB_SEED", "-1"),
        ("GTLIB_SEED", "abc"),
        ("GTLIB_DEVICE", "tpu"),
        ("GTLIB_THREADS", "0"),
    ],
)
def test_bad_settings_name_the_variable(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=name):
        config.settings()


@pytest.mark.parametrize(
    "name,value",
    [
        ("GTLIB_SEED", "99999999999999999999999"),
        ("GTLIB_THREADS", "100000"),
        ("GTLIB_DEVICE", "mps"),
        ("GTLIB_DEVICE", "cuda"),
        ("GTLIB_THREADS", "1.5"),
    ],
)
def test_out_of_range_settings_name_the_variable(monkeypatch, name, value):
    if (
        name == "GTLIB_DEVICE"
        and getattr(
            config,
            f"_{'mps' if value == 'mps' else 'cuda'}_available",
            lambda: torch.cuda.is_available(),
        )()
    ):
        pytest.skip("the device exists here")
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=name):
        config.settings()


@pytest.mark.parametrize("name", ["GTLIB_RESULTS_DIR", "GTLIB_CACHE_DIR"])
def test_a_file_in_place_of_a_folder_names_the_variable(monkeypatch, tmp_path, name):
    f = tmp_path / "afile"
    f.write_text("x")
    for bad in (f, f / "sub"):
        monkeypatch.setenv(name, str(bad))
        with pytest.raises(ValueError, match=name):
            config.settings()


def test_settings_table_shows_no_machine_paths(monkeypatch):
    from pathlib import Path

    monkeypatch.delenv("GTLIB_RESULTS_DIR", raising=False)
    monkeypatch.delenv("GTLIB_CACHE_DIR", raising=False)
    html = config.settings()._repr_html_()
    assert str(Path.home()) not in html and "~/.cache/gtlib" in html
    root = config._repo_root()
    if root is not None:
        assert str(root) not in html and "_build/results" in html


# =================================================================================================
# config.setup
# =================================================================================================
def test_setup_seeds_and_threads(monkeypatch):
    monkeypatch.setenv("GTLIB_SEED", "3")
    gtlib.setup()
    a = torch.rand(3)
    gtlib.setup()
    assert torch.equal(a, torch.rand(3))
    assert torch.get_num_threads() == 1
    with pytest.raises(ValueError, match="seed_offset"):
        gtlib.setup(-1)


@pytest.mark.reference
@pytest.mark.parametrize(
    "seed,offset", [(0, 0), (2, 3), (3, 2), (0, 7), (4294967295, 4294967295)]
)
def test_setup_seeds_base_plus_offset_and_sets_threads(
    keep_rngs, clean_env, seed, offset
):
    clean_env.setenv("GTLIB_SEED", str(seed))
    clean_env.setenv("GTLIB_THREADS", "2")
    s = G.setup(offset)
    assert torch.get_num_threads() == 2
    assert _draws() == _reference_draws(
        seed + offset, (seed + offset) % 2**32, seed + offset
    )
    assert (s.seed, s.threads, s.scale) == (seed, 2, "quick")


@pytest.mark.reference
def test_setup_offsets_give_distinct_streams(keep_rngs, clean_env):
    clean_env.setenv("GTLIB_SEED", "1")
    G.setup()
    a = _draws()
    G.setup(1)
    b = _draws()
    clean_env.setenv("GTLIB_SEED", "2")
    G.setup(0)
    assert _draws() == b and a != b  # seed 1 + offset 1 is seed 2 + offset 0
    G.setup(np.int64(0))
    assert _draws() == b


@pytest.mark.reference
@pytest.mark.parametrize(
    "bad,err",
    [
        (-1, ValueError),
        (2**32, ValueError),
        (True, TypeError),
        (0.0, TypeError),
        (None, TypeError),
    ],
)
def test_setup_refuses_a_bad_offset_before_touching_anything(
    keep_rngs, clean_env, bad, err
):
    clean_env.setenv("GTLIB_THREADS", "2")
    torch.set_num_threads(1)
    with pytest.raises(err, match="seed_offset"):
        G.setup(bad)
    assert torch.get_num_threads() == 1


@pytest.mark.reference
def test_setup_refuses_bad_settings(keep_rngs, clean_env):
    clean_env.setenv("GTLIB_SEED", "x")
    with pytest.raises(ValueError, match="GTLIB_SEED"):
        G.setup()


@pytest.mark.mutation
def test_setup_seeds_with_the_base_seed_plus_the_offset(monkeypatch):
    """setup(k) under GTLIB_SEED=s draws what a generator seeded with s + k draws."""
    monkeypatch.setenv("GTLIB_SEED", "2")
    monkeypatch.setenv("GTLIB_THREADS", "1")
    threads, states = (
        torch.get_num_threads(),
        (random.getstate(), np.random.get_state()),
    )
    try:
        with torch.random.fork_rng(
            devices=[]
        ):  # leave the other tests' global streams alone
            setup(3)
            got = torch.rand(4)
    finally:
        torch.set_num_threads(threads)
        random.setstate(states[0])
        np.random.set_state(states[1])
    assert torch.equal(
        got, torch.rand(4, generator=torch.Generator().manual_seed(5))
    )


@pytest.mark.mutation
def test_setup_applies_the_thread_count(monkeypatch):
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        monkeypatch.setenv("GTLIB_THREADS", "1")
        setup()
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_setup_keeps_freed_memory_on_glibc(monkeypatch):
    calls = []
    monkeypatch.setattr(
        config, "_keep_freed_memory", lambda: calls.append(1) or True
    )
    setup()
    assert calls == [1]


def test_keep_freed_memory_takes_on_glibc_and_can_be_switched_off(monkeypatch):
    glibc = sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"
    monkeypatch.delenv("GTLIB_KEEP_FREED_MEMORY", raising=False)
    assert config._keep_freed_memory() is glibc
    monkeypatch.setenv("GTLIB_KEEP_FREED_MEMORY", "0")
    assert config._keep_freed_memory() is False
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.delenv("GTLIB_KEEP_FREED_MEMORY")
    assert config._keep_freed_memory() is False


# =================================================================================================
# config.seed_everything
# =================================================================================================
def test_seed_everything_bounds():
    config.seed_everything(2**63 - 1)
    for bad, err in (
        (2**70, ValueError),
        (-1, ValueError),
        (1.5, TypeError),
        (True, TypeError),
    ):
        with pytest.raises(err, match="seed"):
            config.seed_everything(bad)


def test_seed_everything_seeds_every_generator():
    import random

    import numpy as np

    draws = []
    for _ in range(2):
        config.seed_everything(5)
        draws.append(
            (random.random(), float(np.random.rand()), float(torch.rand(1)))
        )
    assert draws[0] == draws[1]
    config.seed_everything(6)
    assert all(
        a != b
        for a, b in zip(
            draws[0],
            (random.random(), float(np.random.rand()), float(torch.rand(1))),
        )
    )


@pytest.mark.reference
@pytest.mark.parametrize("seed", [0, 1, 12345, 2**32 - 1, 2**32 + 5, 2**63 - 1])
def test_seed_everything_seeds_each_generator_as_its_own_seeding_does(
    keep_rngs, seed
):
    G.seed_everything(seed)
    assert _draws() == _reference_draws(seed, seed % 2**32, seed)
    assert torch.initial_seed() == seed


@pytest.mark.reference
def test_seed_everything_seeds_differ_and_repeat(keep_rngs):
    G.seed_everything(3)
    a = _draws()
    G.seed_everything(4)
    b = _draws()
    G.seed_everything(3)
    assert _draws() == a and all(x != y for x, y in zip(a, b))
    G.seed_everything(np.int64(3))
    assert _draws() == a


@pytest.mark.reference
@pytest.mark.parametrize(
    "bad,err",
    [
        (-1, ValueError),
        (2**63, ValueError),
        (True, TypeError),
        (1.0, TypeError),
        ("3", TypeError),
        (None, TypeError),
    ],
)
def test_seed_everything_refuses(keep_rngs, bad, err):
    with pytest.raises(err, match="seed"):
        G.seed_everything(bad)


# =================================================================================================
# config.by_scale
# =================================================================================================
@pytest.mark.reference
@pytest.mark.parametrize(
    "raw,expected",
    [
        (None, "quick"),
        ("", "quick"),
        ("  ", "quick"),
        ("full", "full"),
        (" FULL ", "full"),
        ("Quick", "quick"),
    ],
)
def test_gtlib_scale_parsing(clean_env, raw, expected):
    if raw is not None:
        clean_env.setenv("GTLIB_SCALE", raw)
    assert G.read_scale() == expected and G.settings().scale == expected
    assert G.by_scale("q", "f") == ("q" if expected == "quick" else "f")


@pytest.mark.reference
def test_by_scale(clean_env):
    assert G.by_scale([1], [2]) == [1]
    assert G.by_scale(1, 2, "full") == 2 and G.by_scale(1, 2, "quick") == 1
    clean_env.setenv("GTLIB_SCALE", "full")
    assert G.by_scale(1, 2) == 2 and G.by_scale(1, 2, scale="quick") == 1
    for bad in ("FULL", "medium", "", 1):
        with pytest.raises(ValueError, match="scale must be one of"):
            G.by_scale(1, 2, bad)


# =================================================================================================
# config.param
# =================================================================================================
@pytest.mark.reference
def test_presets_refuse_unknown_fields_and_bad_values():
    with pytest.raises(
        TypeError, match=r"_Cfg has no field 'm'; its fields are \['n', 'lr'"
    ):
        _Cfg.quick(m=1)
    with pytest.raises(TypeError, match="no field 'm'"):
        _Cfg.full(m=1)
    with pytest.raises(
        ValueError, match="_Cfg.lr must be a finite number > 0, got 0"
    ):
        _Cfg.full(lr=0)
    with pytest.raises(
        ValueError, match=r"_Cfg.n must be at least len\(widths\) = 3, got 2"
    ):
        _Cfg.full(n=2)

    @dataclass
    class Typo(Config):
        FULL = {"nn": 3}
        n: int = param(1, count())

    assert Typo.quick().n == 1  # the typo shows only where FULL is used
    with pytest.raises(TypeError, match="Typo has no field 'nn'"):
        Typo.full()


@pytest.mark.reference
def test_param_declarations():
    f = param(3, count(), doc="d")
    assert f.default == 3 and f.metadata["doc"] == "d"
    assert isinstance(f.metadata["constraint"], Interval)
    g = param(constraint=count(), factory=list)
    assert g.default_factory is list and g.metadata["doc"] == ""
    with pytest.raises(TypeError, match="param needs a constraint"):
        param(3)
    with pytest.raises(TypeError, match="param needs a constraint"):
        param(3, int)
    with pytest.raises(TypeError, match="doc must be a str"):
        param(3, count(), doc=None)
    with pytest.raises(TypeError, match="factory must be callable"):
        param(constraint=count(), factory=3)


# =================================================================================================
# config.Config
# =================================================================================================
def test_every_gtlib_config_declares_every_field():
    import dataclasses
    import importlib
    import pkgutil

    for mod in pkgutil.iter_modules(gtlib.__path__):
        importlib.import_module(f"gtlib.{mod.name}")

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    found = [c for c in subclasses(Config) if c.__module__.startswith("gtlib.")]
    assert found, "no config derives from gtlib.config.Config"
    for cls in found:
        for f in dataclasses.fields(cls):
            assert "constraint" in f.metadata, (
                f"{cls.__name__}.{f.name} has no constraint"
            )
        assert set(cls.FULL) <= {f.name for f in dataclasses.fields(cls)}, (
            cls.__name__
        )
        cls.quick(), cls.full()  # both presets are valid


@pytest.mark.reference
def test_a_field_without_a_constraint_is_refused():
    @dataclass
    class Bad(Config):
        a: int = 1

    with pytest.raises(TypeError, match="Bad.a declares no constraint"):
        Bad()


# =================================================================================================
# config.Result
# =================================================================================================
def test_result_to_dict_is_plain():
    import json

    import numpy as np

    @dataclass
    class R(Result):
        a: torch.Tensor
        b: np.ndarray
        c: dict
        d: _Toy

    r = R(torch.tensor([1.0, 2.0]), np.arange(2), {"k": np.float64(0.5)}, _Toy())
    d = r.to_dict()
    assert d["a"] == [1.0, 2.0] and d["b"] == [0, 1] and d["c"] == {"k": 0.5}
    json.dumps(d)


@pytest.mark.reference
def test_result_to_dict_converts_every_kind_of_value(tmp_path):
    @dataclass
    class Plain:
        z: int

    @dataclass
    class Inner(Result):
        v: Any

    @dataclass
    class R(Result):
        t: Any
        a: Any
        g: Any
        p: Any
        m: Any
        tup: Any
        dc: Any
        res: Any
        cfg: Any
        s: Any = "x"

    r = R(
        t=torch.tensor([[1.5, 2.0]], requires_grad=True) * 1,
        a=np.array([1, 2], dtype=np.int8),
        g=np.float32(0.25),
        p=tmp_path / "f",
        m={1: np.int64(4), "k": (np.bool_(True),)},
        tup=(1, (2, np.float64(3.5))),
        dc=Plain(3),
        res=Inner(v=torch.tensor(7)),
        cfg=_Cfg(n=8),
    )
    d = r.to_dict()
    assert d == {
        "t": [[1.5, 2.0]],
        "a": [1, 2],
        "g": 0.25,
        "p": str(tmp_path / "f"),
        "m": {"1": 4, "k": [True]},
        "tup": [1, [2, 3.5]],
        "dc": {"z": 3},
        "res": {"v": 7},
        "cfg": _Cfg(n=8).to_dict(),
        "s": "x",
    }
    assert (
        type(d["g"]) is float
        and type(d["m"]["1"]) is int
        and type(d["m"]["k"][0]) is bool
    )
    assert list(d) == [f.name for f in fields(R)]
    import json

    json.dumps(d)


# =================================================================================================
# config.preset
# =================================================================================================
def test_preset_and_by_scale_validate():
    class C:
        @classmethod
        def quick(cls):
            return "q"

        @classmethod
        def full(cls):
            return "f"

    assert config.preset(C, "quick") == "q" and config.preset(C, "full") == "f"
    with pytest.raises(ValueError, match="scale"):
        config.preset(C, "medium")
    with pytest.raises(ValueError, match="scale"):
        config.by_scale(1, 2, scale="medium")
    with pytest.raises(ValueError, match="seed"):
        config.seed_everything(-5)


def test_presets_and_overrides(monkeypatch):
    assert (
        _Toy.quick() == _Toy()
        and _Toy.full().n == 100
        and _Toy.full().widths == (8, 16, 32)
    )
    assert config.preset(_Toy, "full", lr=0.5) == _Toy(
        n=100, widths=(8, 16, 32), lr=0.5
    )
    monkeypatch.setenv("GTLIB_SCALE", "full")
    assert config.preset(_Toy).n == 100
    with pytest.raises(TypeError, match="no field 'm'"):
        config.preset(_Toy, "quick", m=3)
    with pytest.raises(ValueError, match="_Toy.lr"):
        config.preset(_Toy, "quick", lr=float("nan"))


def test_preset_refuses_a_non_config():
    with pytest.raises(TypeError, match="cls must be a config class"):
        config.preset(int, "quick")


@pytest.mark.reference
def test_defaults_are_the_quick_preset():
    c = _Cfg()
    assert (c.n, c.lr, c.opt, c.widths, c.inner, c.frac) == (
        6,
        0.1,
        "sgd",
        (4, 8),
        _Inner(),
        None,
    )
    assert _Cfg.quick() == c and G.preset(_Cfg, "quick") == c
    assert (
        c.inner is not _Cfg().inner
    )  # the factory builds a fresh default each time


@pytest.mark.reference
def test_full_preset_precedence_defaults_then_full_then_overrides():
    f = _Cfg.full()
    assert (f.n, f.lr, f.opt, f.widths) == (50, 0.5, "sgd", [16, 32, 64])
    g = _Cfg.full(lr=0.25, opt="adamw")
    assert (g.n, g.lr, g.opt, g.widths) == (50, 0.25, "adamw", [16, 32, 64])
    assert _Cfg.full(n=3, widths=(1,)).n == 3
    q = _Cfg.quick(lr=0.25)
    assert (q.n, q.lr, q.widths) == (6, 0.25, (4, 8))  # quick ignores FULL
    assert preset(_Cfg, "full", n=70) == _Cfg(n=70, lr=0.5, widths=[16, 32, 64])
    assert preset(_Cfg, "quick", n=70) == _Cfg(n=70)


@pytest.mark.reference
def test_preset_reads_the_scale_in_force(clean_env):
    assert preset(_Cfg).n == 6
    clean_env.setenv("GTLIB_SCALE", "full")
    assert preset(_Cfg).n == 50 and preset(_Cfg, lr=0.3).lr == 0.3
    assert preset(_Cfg, "quick").n == 6


@pytest.mark.reference
def test_preset_for_other_classes_and_refusals():
    @dataclass(frozen=True)
    class Plain:
        a: int = 1
        b: int = 2

        @classmethod
        def quick(cls):
            return cls()

        @classmethod
        def full(cls):
            return cls(10, 20)

    assert preset(Plain, "full") == Plain(10, 20) and preset(
        Plain, "quick"
    ) == Plain(1, 2)
    assert preset(Plain, "full", b=5) == Plain(10, 5) and preset(
        Plain, "quick", a=0
    ) == Plain(0, 2)
    for bad in (int, object(), None, "x"):
        with pytest.raises(TypeError, match="cls must be a config class"):
            preset(bad, "quick")
    with pytest.raises(ValueError, match="scale"):
        preset(_Cfg, "Full")


@pytest.mark.mutation
def test_overrides_win_over_the_full_preset():
    """preset(cls, "full", **kw): defaults, then FULL, then the caller's overrides (by hand)."""
    assert (_Toy_mut.full().a, _Toy_mut.full().b) == (5, 0.5)
    c = preset(_Toy_mut, "full", a=7)
    assert (c.a, c.b) == (7, 0.5)
    assert (_Toy_mut.full(b=0.2).a, _Toy_mut.full(b=0.2).b) == (5, 0.2)
    assert preset(_Toy_mut, "quick", a=3).a == 3


# =================================================================================================
# config._repo_root
# =================================================================================================
@pytest.mark.reference
def test_repo_root_is_the_checkout():
    root = G._repo_root()
    assert root == Path(G.__file__).resolve().parent.parent
    assert (root / "_config.yml").exists()


# =================================================================================================
# config._short
# =================================================================================================
@pytest.mark.reference
def test_changed_str_and_to_dict():
    c = _Cfg(n=9, lr=0.123456789, widths=(1, 2), inner=_Inner(k=5))
    assert list(c.changed()) == ["n", "lr", "widths", "inner"]
    assert str(c) == "_Cfg(n=9, lr=0.123457, widths=(1, 2), inner=_Inner(k=5))"
    assert str(_Cfg()) == "_Cfg()" and _Cfg().changed() == {}
    assert str(_Cfg(lr=0.1)) == "_Cfg()"  # equal to the default
    assert str(_Cfg(widths=(3,))) == "_Cfg(widths=(3,))"
    long = _Cfg(n=20, widths=tuple(range(1, 10)))
    assert str(long) == "_Cfg(n=20, widths=(1, 2, 3, ..., 9) [9 values])"
    eight = _Cfg(n=20, widths=tuple(range(1, 9)))
    assert str(eight) == "_Cfg(n=20, widths=(1, 2, 3, 4, 5, 6, 7, 8))"
    assert c.to_dict() == {
        "n": 9,
        "lr": 0.123456789,
        "opt": "sgd",
        "widths": [1, 2],
        "inner": {"k": 5},
        "frac": None,
    }
    assert G._short(np.float64(0.5)) == "0.5" and G._short("a") == "'a'"
    assert G._short(np.int64(3)) == "3" and G._short(1e-7) == "1e-07"


# =================================================================================================
# config._short_path
# =================================================================================================
@pytest.mark.reference
def test_settings_table_rows_and_short_paths(clean_env, tmp_path):
    clean_env.setenv("HOME", str(tmp_path))
    root = G._repo_root()
    assert G._short_path(root / "_build" / "results") == "_build/results"
    assert G._short_path(root) == "."
    assert G._short_path(tmp_path / ".cache" / "gtlib") == "~/.cache/gtlib"
    assert G._short_path(Path("/nowhere/else")) == "/nowhere/else"
    assert G._short_path(tmp_path) == "~/"
    s = _settings(
        results_dir=root / "_build" / "x",
        cache_dir=tmp_path / "c",
        seed=17,
        scale="full",
        threads=3,
    )
    html_text = s._repr_html_()
    rows = html_text.split("<tr>")[2:]
    assert [r.split("<code>")[1].split("</code>")[0] for r in rows] == [
        "scale",
        "seed",
        "results_dir",
        "device",
        "threads",
        "cache_dir",
    ]
    cells = [r.split("<td>")[2].split("</td>")[0] for r in rows]
    assert cells == ["full", "17", "_build/x", "cpu", "3", "~/c"]
    assert html_text.startswith("<table><tr><th>setting</th><th>value</th></tr>")
    clean_env.setenv(
        "HOME", str(root.parent)
    )  # a checkout under home: the repository wins
    assert G._short_path(root / "_build") == "_build"


# =================================================================================================
# gtlib.config as a whole
# =================================================================================================
@pytest.mark.parametrize(
    "kw,err,words",
    [
        ({"n": 0}, ValueError, ["_Toy.n", ">= 1", "0"]),
        ({"n": 2.0}, TypeError, ["_Toy.n", "an int"]),
        ({"n": True}, TypeError, ["_Toy.n"]),
        ({"lr": float("inf")}, ValueError, ["_Toy.lr", "finite", "inf"]),
        ({"lr": float("nan")}, ValueError, ["_Toy.lr", "nan"]),
        ({"lr": 0.0}, ValueError, ["_Toy.lr", "> 0"]),
        ({"opt": "adam"}, ValueError, ["_Toy.opt", "'adam'", "'sgd'"]),
        ({"widths": (16, 8)}, ValueError, ["_Toy.widths", "increasing"]),
        ({"widths": (8, -1)}, ValueError, ["_Toy.widths[1]"]),
        ({"widths": 8}, TypeError, ["_Toy.widths"]),
        ({"frac": 0.0}, ValueError, ["_Toy.frac", "(0, 1]"]),
        ({"n": 1}, ValueError, ["_Toy.n", "len(widths)"]),
    ],
)
def test_config_refuses_bad_fields_naming_them(kw, err, words):
    with pytest.raises(err) as info:
        _Toy(**kw)
    for w in words:
        assert w in str(info.value), (w, str(info.value))


def test_config_cannot_be_made_invalid_later():
    c = _Toy()
    with pytest.raises(ValueError, match="_Toy.lr"):
        c.lr = float("inf")
    assert c.lr == 0.1
    with pytest.raises(ValueError, match="_Toy.n"):
        c.n = 1  # the cross-field rule, and the old value is kept
    assert c.n == 10
    with pytest.raises(ValueError, match="_Toy.lr"):
        replace(c, lr=-1.0)
    c.n = 12
    assert c.n == 12


def test_config_shows_compactly():
    c = _Toy(lr=0.5)
    assert str(c) == "_Toy(lr=0.5)" and str(_Toy()) == "_Toy()"
    html = c._repr_html_()
    assert (
        html.startswith("<table>")
        and "<caption>_Toy</caption>" in html
        and "(8, 16, 32)" in html
    )
    assert c.to_dict() == {
        "n": 10,
        "lr": 0.5,
        "opt": "sgd",
        "widths": [8, 16],
        "frac": None,
    }


@pytest.mark.reference
@pytest.mark.parametrize(
    "var,reader",
    [
        ("GTLIB_RESULTS_DIR", "read_results_dir"),
        ("GTLIB_CACHE_DIR", "read_cache_dir"),
    ],
)
def test_a_file_in_the_way_of_a_folder(clean_env, tmp_path, var, reader):
    f = tmp_path / "file"
    f.write_text("x")
    clean_env.setenv(var, str(f))
    with pytest.raises(
        ValueError, match=f"^{var} must name a folder, but .* is a file$"
    ):
        getattr(G, reader)()
    clean_env.setenv(var, str(f / "sub" / "deeper"))
    with pytest.raises(
        ValueError, match=f"^{var} must name a folder, .* lies under the file"
    ):
        getattr(G, reader)()
    clean_env.setenv(var, str(tmp_path / "sub" / "deeper"))
    assert getattr(G, reader)() == tmp_path / "sub" / "deeper"


@pytest.mark.boundary
def test_every_chapter_config_is_covered():
    names = {c.__name__ for c in CONFIGS}
    assert {
        "TrainConfig",
        "Recipe",
        "ContrastiveConfig",
        "PrelimConfig",
        "TheoryConfig",
        "DefaultConfig",
        "DistillConfig",
        "Mnist1dConfig",
        "PolyConfig",
        "GPConfig",
        "RFConfig",
        "MLPSweepConfig",
        "CompressionConfig",
        "LongTailConfig",
        "ConnectivityConfig",
        "CorruptionConfig",
        "MarginSweepConfig",
        "SpheresConfig",
    } <= names
