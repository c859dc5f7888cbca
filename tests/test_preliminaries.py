import numpy as np
import pytest
import torch

from gtlib import preliminaries as prelim
from gtlib.data import Dataset


def tiny():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(200, 40, generator=g)
    y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
    return Dataset(x, y, x[:50], y[:50], num_classes=4)


def test_presets():
    assert prelim.PrelimConfig.full().epochs > prelim.PrelimConfig.quick().epochs


def test_train_models_learns_a_simple_rule():
    cfg = prelim.PrelimConfig(seeds=2, epochs=30, width=32)
    _, out = prelim.train_models(tiny(), cfg, depth=1)
    assert out["train_acc"].shape == (2,) and out["train_acc"].min() > 0.9
    with pytest.raises(ValueError, match="depth"):
        prelim.train_models(tiny(), cfg, depth=-1)


def test_ensemble_vs_loop_is_exact_in_float64():
    cfg = prelim.PrelimConfig(width=16, ensemble_members=3, ensemble_steps=20, batch_size=50)
    r = prelim.ensemble_vs_loop(tiny(), cfg)
    assert r["max_abs_diff"] < 1e-9 and len(r["per_member"]) == 3


def test_sample_signals():
    xs, ys = prelim.sample_signals(seed=1)
    assert xs.shape == (10, 40) and list(ys) == list(range(10))
    xs0, _ = prelim.sample_signals(corr_noise_scale=0.0, iid_noise_scale=0.0, seed=1)
    assert np.isfinite(xs0).all()
    with pytest.raises(ValueError, match="noise"):
        prelim.sample_signals(corr_noise_scale=-1)
    with pytest.raises(ValueError, match="max_translation"):
        prelim.sample_signals(max_translation=-2)


def test_sample_signals_without_shift():
    a, _ = prelim.sample_signals(max_translation=0, seed=3)
    b, _ = prelim.sample_signals(max_translation=1, seed=3)
    assert np.allclose(a, b)
