"""Tests of gtlib.contrastive.longtail, one section per public function."""

import numpy as np
import pytest
import torch
from dataclasses import replace
from types import SimpleNamespace
from gtlib import contrastive as C
import gtlib.contrastive as C_eng
from gtlib.contrastive import longtail
from tests.oracles import contrastive_loops as ref
from gtlib.contrastive.longtail import _probe_per_class
from tests.chapters.contrastive.helpers import DT, rng
from gtlib.contrastive.longtail import _augment_1d


def _capture(monkeypatch, module, name):
    """Replace ``module.name`` (an optimizer class) by a subclass that keeps its parameters."""
    base = getattr(module, name)
    kept = []

    class Keeping(base):
        def __init__(self, params, *args, **kwargs):
            params = list(params)
            kept.append(params)
            super().__init__(params, *args, **kwargs)

    monkeypatch.setattr(module, name, Keeping)
    return kept


# =================================================================================================
# contrastive.LongTailConfig
# =================================================================================================
@pytest.mark.reference
def test_longtail_config_defaults_and_class_budget():
    q, f = C.LongTailConfig.quick(), C.LongTailConfig.full()
    assert (q.n_train, q.n_test, q.width, q.out_dim, q.steps, q.batch) == (
        4000,
        4000,
        256,
        64,
        4000,
        256,
    )
    assert (f.n_train, f.n_test, f.width, f.out_dim, f.steps, f.batch) == (
        10000,
        4000,
        1024,
        128,
        8000,
        512,
    )
    assert (q.imbalance, q.lr, q.momentum, q.weight_decay, q.tau) == (
        20.0,
        0.05,
        0.9,
        5e-4,
        0.2,
    )
    assert (q.shift, q.scale, q.jitter, q.head_classes, q.tail_classes) == (
        8,
        0.15,
        0.2,
        3,
        3,
    )
    assert C.LongTailConfig.quick(
        head_classes=4, tail_classes=6
    )  # exactly 10 classes
    with pytest.raises(ValueError, match="tail_classes"):
        C.LongTailConfig.quick(head_classes=5, tail_classes=6)


# =================================================================================================
# _augment_1d
# =================================================================================================
def test_augment_1d_shift_is_circular():
    g = torch.Generator().manual_seed(0)
    x = torch.arange(10.0)[None].repeat(4, 1)
    out = _augment_1d(x, g, shift=3, scale=0.0, jitter=0.0)
    for row in out:
        assert sorted(row.tolist()) == list(range(10))
    with pytest.raises(ValueError):
        _augment_1d(torch.zeros(3), g, 1, 0.0, 0.0)


@pytest.mark.reference
def test_augment_1d_matches_a_roll_scale_and_noise_reference():
    x = torch.randn(6, 11, generator=rng(0))
    got = _augment_1d(x, rng(4), shift=3, scale=0.2, jitter=0.3)
    g = rng(4)
    s = torch.randint(-3, 4, (6,), generator=g)
    fac = 1 + 0.2 * (2 * torch.rand(6, 1, generator=g) - 1)
    noise = torch.randn(6, 11, generator=g)
    ref = (
        torch.stack([torch.roll(x[i], int(s[i])) for i in range(6)]) * fac
        + 0.3 * noise
    )
    torch.testing.assert_close(got, ref)
    # the shift: x[i] moves to position i + s (mod L), both extremes +-shift occur
    x0 = torch.arange(7.0)[None].repeat(300, 1)
    out = _augment_1d(x0, rng(1), shift=2, scale=0.0, jitter=0.0)
    shifts = ((out[:, 0] * -1) % 7).long()  # out[:, 0] = x[-s] = -s mod 7
    shifts = torch.where(shifts > 3, shifts - 7, shifts)
    assert set(shifts.tolist()) == {-2, -1, 0, 1, 2}
    for row, sh in zip(out, shifts):
        assert torch.equal(row, torch.roll(torch.arange(7.0), int(sh)))
    # amplitude factors lie in [1 - scale, 1 + scale] and use most of it
    ones = torch.ones(400, 5)
    fac = _augment_1d(ones, rng(2), shift=0, scale=0.3, jitter=0.0)[:, 0]
    assert 0.7 <= float(fac.min()) < 0.72 and 1.28 < float(fac.max()) <= 1.3
    # jitter is the noise's standard deviation
    noisy = _augment_1d(
        torch.zeros(200, 50), rng(3), shift=0, scale=0.0, jitter=0.25
    )
    assert float(noisy.std()) == pytest.approx(0.25, rel=0.03)


# =================================================================================================
# contrastive.random_encoder_accuracy
# =================================================================================================
def test_random_encoder_accuracy_is_train_longtails_starting_encoder():
    """The untrained encoder's probe equals train_longtail's acc_random at the same seed; another
    seed draws another encoder (the null of pretraining)."""
    import numpy as np

    import gtlib
    from gtlib import contrastive as C

    cfg = gtlib.preset(
        C.LongTailConfig,
        n_train=600,
        n_test=200,
        width=32,
        out_dim=8,
        batch=16,
        steps=2,
        prune_every=1,
    )
    ref = C.train_longtail(cfg, (0.0,), seed=3)["acc_random"]
    assert np.array_equal(C.random_encoder_accuracy(cfg, seed=3), ref)
    assert not np.array_equal(C.random_encoder_accuracy(cfg, seed=4), ref)
    with pytest.raises(TypeError, match="cfg"):
        C.random_encoder_accuracy("quick", seed=0)


# =================================================================================================
# contrastive.train_longtail
# =================================================================================================
def test_longtail_reports_the_random_encoder_control():
    cfg = replace(
        C.LongTailConfig.quick(),
        n_train=600,
        n_test=200,
        width=16,
        out_dim=8,
        batch=32,
        steps=3,
        prune_every=2,
    )
    out = C.train_longtail(cfg, prune_fractions=(0.0, 0.5), seed=0)
    assert out["acc"].shape == (2, 10) and out["acc_random"].shape == (10,)
    assert np.all((0 <= out["acc_random"]) & (out["acc_random"] <= 1))
    assert out["counts"][0] > out["counts"][9]  # the long tail
    # per-item correctness, on the same test signals for every encoder
    ok, y = out["correct"], out["y_test"]
    assert ok.shape == (2, 200) and ok.dtype == bool and y.shape == (200,)
    for k in range(10):
        np.testing.assert_allclose(
            out["acc"][:, k], ok[:, y == k].mean(1), rtol=1e-6
        )


def test_longtail_balanced_reference_has_the_same_size():
    cfg = replace(
        C.LongTailConfig.quick(),
        n_train=600,
        n_test=200,
        width=16,
        out_dim=8,
        batch=32,
        steps=3,
        prune_every=2,
    )
    lt = C.train_longtail(cfg, (0.0,), seed=0)
    bal = C.train_longtail(cfg, (0.0,), seed=0, balanced=True)
    assert len(set(bal["counts"].tolist())) == 1  # every class alike
    assert bal["counts"].sum() == 10 * (lt["counts"].sum() // 10)
    assert np.array_equal(bal["acc_random"], lt["acc_random"])  # same random encoder
    with pytest.raises(TypeError, match="balanced"):
        C.train_longtail(cfg, (0.0,), seed=0, balanced=1)


def test_longtail_random_mask_is_a_separate_member():
    cfg = replace(
        C.LongTailConfig.quick(),
        n_train=600,
        n_test=200,
        width=16,
        out_dim=8,
        batch=32,
        steps=4,
        prune_every=2,
    )
    two = C.train_longtail(cfg, (0.0, 0.5), seed=0)
    three = C.train_longtail(
        cfg, (0.0, 0.5, 0.5), seed=0, masks=["magnitude", "magnitude", "random"]
    )
    assert three["masks"] == ["magnitude", "magnitude", "random"]
    assert np.array_equal(
        three["acc"][:2], two["acc"]
    )  # same minibatches for the others
    with pytest.raises(ValueError, match="masks"):
        C.train_longtail(cfg, (0.0, 0.5), seed=0, masks=["random"])


@pytest.mark.reference
def test_train_longtail_counts_and_its_seed():
    cfg = C.LongTailConfig.quick(
        n_train=500,
        n_test=200,
        width=12,
        out_dim=6,
        batch=16,
        steps=2,
        prune_every=1,
        imbalance=10.0,
    )
    out = C.train_longtail(cfg, prune_fractions=np.array([0.25, 0.0, 0.75]), seed=1)
    assert out["fractions"] == [0.25, 0.0, 0.75] and out["acc"].shape == (3, 10)
    from gtlib.data import long_tailed, mnist1d

    lt = long_tailed(mnist1d(500, 200, device="cpu"), 10.0, seed=1)
    np.testing.assert_array_equal(
        out["counts"], np.bincount(lt.y.numpy(), minlength=10)
    )
    assert out["counts"][0] == pytest.approx(10 * out["counts"][9], rel=0.3)
    other = C.train_longtail(
        replace(cfg, lr=0.5), prune_fractions=np.array([0.25, 0.0, 0.75]), seed=1
    )
    np.testing.assert_array_equal(
        other["acc_random"], out["acc_random"]
    )  # same init
    assert out["acc_random"].min() >= 0 and out["acc_random"].max() <= 1
    assert C.train_longtail(replace(cfg, steps=1), seed=1)["fractions"] == [
        0.0,
        0.5,
    ]  # default


@pytest.mark.engine
def test_train_longtail_is_exactly_the_old_loop(monkeypatch):
    # same draw order from one generator (minibatch, then the two augmentations) and the same
    # arithmetic (torch.optim.SGD with momentum and coupled weight decay): bitwise equal
    cfg = replace(
        C_eng.LongTailConfig.quick(),
        n_train=600,
        n_test=200,
        width=16,
        out_dim=8,
        batch=24,
        steps=7,
        prune_every=3,
    )
    old_params = _capture(monkeypatch, torch.optim, "SGD")
    old = ref.old_train_longtail(cfg, (0.0, 0.5), seed=1)
    new_params = _capture(monkeypatch, longtail, "StackedOptimizer")
    new = C_eng.train_longtail(cfg, (0.0, 0.5), seed=1)
    assert len(old_params) == len(new_params) == 1
    for p, q in zip(new_params[0], old_params[0]):
        assert torch.equal(p.detach(), q.detach())
    # the mask kinds and the per-item scores are new; all else as before
    assert set(new) == set(old) | {"masks", "correct", "y_test"}
    assert new["masks"] == ["magnitude", "magnitude"]
    for k, v in old.items():
        assert np.array_equal(np.asarray(new[k]), np.asarray(v)), k


# =================================================================================================
# contrastive._probe_per_class
# =================================================================================================
@pytest.mark.reference
def test_probe_per_class_is_per_class_recall():
    ds = SimpleNamespace(
        y=torch.tensor([0, 1, 2, 0, 1, 2, 2, 2]),
        y_test=torch.tensor([0, 0, 1, 2, 2, 2, 1]),
        num_classes=3,
    )
    eye = torch.eye(3, dtype=DT)
    ftr = (eye[ds.y] * 5)[None]
    # test features: the first class-0 sample looks like class 1, one class-2 sample like 0
    looks = torch.tensor([1, 0, 1, 2, 0, 2, 1])
    fte = (eye[looks] * 5)[None]
    acc = _probe_per_class(ftr, fte, ds)
    assert acc.shape == (1, 3)
    np.testing.assert_allclose(acc[0], [1 / 2, 2 / 2, 2 / 3])
