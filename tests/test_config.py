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
