import pytest
import torch

import gtlib
from gtlib import config


def test_defaults(monkeypatch):
    monkeypatch.delenv("GTLIB_SEED", raising=False)
    s = config.settings()
    assert s.scale == "quick" and s.seed == 0 and s.device == "cpu" and s.threads >= 1
    assert "<table>" in s._repr_html_()


def test_env_is_read(monkeypatch, tmp_path):
    monkeypatch.setenv("GTLIB_SCALE", "full")
    monkeypatch.setenv("GTLIB_SEED", "7")
    monkeypatch.setenv("GTLIB_RESULTS_DIR", str(tmp_path))
    s = config.settings()
    assert (s.scale, s.seed, s.results_dir) == ("full", 7, tmp_path)
    assert config.by_scale(1, 2) == 2


@pytest.mark.parametrize("name,value", [("GTLIB_SCALE", "huge"), ("GTLIB_SEED", "-1"),
                                        ("GTLIB_SEED", "abc"), ("GTLIB_DEVICE", "tpu"),
                                        ("GTLIB_THREADS", "0")])
def test_bad_settings_name_the_variable(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=name):
        config.settings()


def test_setup_seeds_and_threads(monkeypatch):
    monkeypatch.setenv("GTLIB_SEED", "3")
    gtlib.setup()
    a = torch.rand(3)
    gtlib.setup()
    assert torch.equal(a, torch.rand(3))
    assert torch.get_num_threads() == 1
    with pytest.raises(ValueError, match="seed_offset"):
        gtlib.setup(-1)


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


# -- the config base -------------------------------------------------------------------------------
from dataclasses import dataclass, replace  # noqa: E402

from gtlib.checks import Interval, Options, Sequence  # noqa: E402
from gtlib.config import Config, Result, param  # noqa: E402


@dataclass
class _Toy(Config):
    """A config used only by these tests."""

    FULL = {"n": 100, "widths": (8, 16, 32)}
    n: int = param(10, Interval(int, 1))
    lr: float = param(0.1, Interval(float, 0, None, "neither"))
    opt: str = param("sgd", Options(("sgd", "adamw")))
    widths: tuple = param((8, 16), Sequence(Interval(int, 1), min_len=2, increasing="strict"))
    frac: float | None = param(None, Interval(float, 0, 1, "right", optional=True))

    def _check_together(self):
        if self.n < len(self.widths):
            self._refuse("n", f">= len(widths) = {len(self.widths)}")


@pytest.mark.parametrize("kw,err,words", [
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
    ({"n": 1}, ValueError, ["_Toy.n", "len(widths)"])])
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


def test_presets_and_overrides(monkeypatch):
    assert _Toy.quick() == _Toy() and _Toy.full().n == 100 and _Toy.full().widths == (8, 16, 32)
    assert config.preset(_Toy, "full", lr=0.5) == _Toy(n=100, widths=(8, 16, 32), lr=0.5)
    monkeypatch.setenv("GTLIB_SCALE", "full")
    assert config.preset(_Toy).n == 100
    with pytest.raises(TypeError, match="no field 'm'"):
        config.preset(_Toy, "quick", m=3)
    with pytest.raises(ValueError, match="_Toy.lr"):
        config.preset(_Toy, "quick", lr=float("nan"))


def test_config_shows_compactly():
    c = _Toy(lr=0.5)
    assert str(c) == "_Toy(lr=0.5)" and str(_Toy()) == "_Toy()"
    html = c._repr_html_()
    assert html.startswith("<table>") and "<caption>_Toy</caption>" in html and "(8, 16, 32)" in html
    assert c.to_dict() == {"n": 10, "lr": 0.5, "opt": "sgd", "widths": [8, 16], "frac": None}


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
            assert "constraint" in f.metadata, f"{cls.__name__}.{f.name} has no constraint"
        assert set(cls.FULL) <= {f.name for f in dataclasses.fields(cls)}, cls.__name__
        cls.quick(), cls.full()  # both presets are valid


# -- settings read from the environment --------------------------------------------------------------

@pytest.mark.parametrize("name,value", [("GTLIB_SEED", "99999999999999999999999"),
                                        ("GTLIB_THREADS", "100000"), ("GTLIB_DEVICE", "mps"),
                                        ("GTLIB_DEVICE", "cuda"), ("GTLIB_THREADS", "1.5")])
def test_out_of_range_settings_name_the_variable(monkeypatch, name, value):
    if name == "GTLIB_DEVICE" and getattr(config, f"_{'mps' if value == 'mps' else 'cuda'}"
                                          "_available", lambda: torch.cuda.is_available())():
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


def test_seed_everything_bounds():
    config.seed_everything(2**63 - 1)
    for bad, err in ((2**70, ValueError), (-1, ValueError), (1.5, TypeError), (True, TypeError)):
        with pytest.raises(err, match="seed"):
            config.seed_everything(bad)


def test_settings_table_shows_no_machine_paths(monkeypatch):
    from pathlib import Path
    monkeypatch.delenv("GTLIB_RESULTS_DIR", raising=False)
    monkeypatch.delenv("GTLIB_CACHE_DIR", raising=False)
    html = config.settings()._repr_html_()
    assert str(Path.home()) not in html and "~/.cache/gtlib" in html
    root = config._repo_root()
    if root is not None:
        assert str(root) not in html and "_build/results" in html


def test_seed_everything_seeds_every_generator():
    import random

    import numpy as np
    draws = []
    for _ in range(2):
        config.seed_everything(5)
        draws.append((random.random(), float(np.random.rand()), float(torch.rand(1))))
    assert draws[0] == draws[1]
    config.seed_everything(6)
    assert all(a != b for a, b in zip(draws[0], (random.random(), float(np.random.rand()),
                                                 float(torch.rand(1)))))


def test_preset_refuses_a_non_config():
    with pytest.raises(TypeError, match="cls must be a config class"):
        config.preset(int, "quick")
