"""Bad input refused at gtlib.contrastive's boundary (issue 19): every public function checks its
arguments with gtlib.checks.boundary and raises TypeError/ValueError naming the argument, and the
training loops call the unchecked building blocks (``_f`` for a public ``f``) every step."""
import math
from dataclasses import replace

import matplotlib
import numpy as np
import pytest
import torch

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from gtlib import contrastive as C  # noqa: E402

NAN, INF = float("nan"), float("inf")


def gen():
    return torch.Generator().manual_seed(0)


def nanify(t):
    t = t.clone()
    t.view(-1)[0] = NAN
    return t


M = C.feature_dictionary(12, 6, seed=0)
FREQS = C.feature_frequencies(6, 3, 0.2, 2.0)
W = torch.randn(8, 12, generator=gen())
Z = C.sample_codes(FREQS, 10, gen())
X4 = torch.randn(1, 5, 4, 12, generator=gen())
A = torch.randn(1, 12, 12, generator=gen())
TINY = C.ContrastiveConfig(steps=2, neurons=8, batch=8, dim=12, n_features=6, n_minority=3,
                           bias_ramp=1, probe_samples=20, log_every=1)

# (call, the argument the error must name): each was silent (ran on, often returning NaN) before
SILENT = [
    (lambda: C.feature_dictionary(12, True), "n_features"),
    (lambda: C.feature_dictionary(12, 6, seed=-1), "seed"),
    (lambda: C.feature_dictionary(12, 6, seed=1.5), "seed"),
    (lambda: C.feature_frequencies(6, True, 0.2, 2.0), "n_minority"),
    (lambda: C.sample_codes(nanify(FREQS), 10, gen()), "freqs"),
    (lambda: C.sample_codes(FREQS, 0, gen()), "n"),
    (lambda: C.sample_codes(FREQS, 10, None), "generator"),
    (lambda: C.make_views(nanify(M), Z, 4, 2, 1.0, gen()), "M"),
    (lambda: C.make_views(M, Z[:0], 4, 2, 1.0, gen()), "z"),
    (lambda: C.make_views(M, Z, 4, 0, 1.0, gen()), "n_signal"),
    (lambda: C.make_views(M, Z, 4, 2.5, 1.0, gen()), "n_signal"),
    (lambda: C.make_views(M, Z, 4, 2, -0.5, gen()), "noise"),
    (lambda: C.make_views(M, Z, 4, 2, INF, gen()), "noise"),
    (lambda: C.single_feature_samples(M, 0, 4, 2, 1.0, gen()), "n"),
    (lambda: C.single_feature_samples(M, 10, 4, 2, NAN, gen()), "noise"),
    (lambda: C.brelu(nanify(torch.randn(5, 8)), 0.1), "s"),
    (lambda: C.brelu(torch.randn(5, 8), NAN), "b"),
    (lambda: C.straight_through_mask(torch.randn(5, 8), nanify(torch.ones(8))), "mask"),
    (lambda: C.encode(nanify(X4), W[None], A, 0.1), "X"),
    (lambda: C.encode(X4, W[None], A[:0], 0.1), "A"),
    (lambda: C.encode(X4, W[None], A, INF), "beta"),
    (lambda: C.infonce(torch.randn(5, 8), torch.randn(5, 8), INF), "tau"),
    (lambda: C.infonce(torch.randn(5, 8), torch.randn(5, 8), True), "tau"),
    (lambda: C.infonce_orthogonal_closed_form(-0.5, 5, 0.5), "sq_norm"),
    (lambda: C.infonce_orthogonal_closed_form(1.0, 0, 0.5), "n"),
    (lambda: C.infonce_orthogonal_closed_form(1.0, 5, -1.0), "tau"),
    (lambda: C.magnitude_mask(nanify(W), 0.5), "W"),
    (lambda: C.alignment(W[0], M), "W"),
    (lambda: C.alignment(W, nanify(M)), "M"),
    (lambda: C.strong_specialists(W, M, ratio=INF), "ratio"),
    (lambda: C.energy_ratio(W[:0], M, 3), "W"),
    (lambda: C.learning_margin(TINY, INF), "ratio"),
    (lambda: C.feature_summary(W[None], M, 3, specialist_ratio=True), "specialist_ratio"),
    (lambda: C.bias_schedule(-1, TINY), "step"),
    (lambda: C.bias_schedule(2.5, TINY), "step"),
    (lambda: C.train_encoders(TINY, [1.0], [NAN]), "fractions"),
    (lambda: C.train_encoders(TINY, [1.0], [0.0], seed=-1), "seed"),
    (lambda: C.train_encoders(TINY, [1.0], [0.0], replicates=2.5), "replicates"),
    (lambda: C.train_encoders(TINY, [1.0], [0.0], hard_mask="yes"), "hard_mask"),
    (lambda: C.stage_boundaries(np.arange(5), np.linspace(0, 1, 5), np.linspace(1, 3, 5),
                                level=1.5), "level"),
    (lambda: C.ridge_probe(torch.randn(30, 5), torch.arange(30) % 3, torch.randn(12, 5).long(),
                           3), "f_test"),
    (lambda: C.ridge_probe(torch.randn(30, 5), torch.arange(30) % 3, torch.randn(12, 5), -1),
     "n_classes"),
    (lambda: C.augment_1d(torch.zeros(3, 8).long(), gen(), 2, 0.1, 0.1), "x"),
    (lambda: C.augment_1d(torch.zeros(3, 8), None, 2, 0.1, 0.1), "generator"),
    (lambda: C.draw_alignment(plt.gca(), torch.rand(8, 6).tolist(), 3), "proj"),
    (lambda: C.draw_alignment(plt.gca(), torch.rand(8, 6), -1), "n_minority"),
    (lambda: C.draw_alignment(plt.gca(), torch.rand(8, 6), 3, vmax=NAN), "vmax"),
]


@pytest.mark.parametrize("i", range(len(SILENT)))
def test_silent_input_is_refused_naming_the_argument(i):
    call, name = SILENT[i]
    with pytest.raises((TypeError, ValueError), match=rf"\b{name}\b"):
        call()
    plt.close("all")


# cases that the probe could not build (its good value is None, or it lacked a helper)
@pytest.mark.parametrize("mask,kind", [(torch.tensor([[1.0, NAN] + [1.0] * 6]), ValueError),
                                       (torch.ones(1, 0), ValueError),
                                       (torch.full((1, 8), 0.5), ValueError),
                                       (torch.ones(1, 7), ValueError),
                                       ([[1.0] * 8], TypeError)])
def test_encode_refuses_a_bad_mask(mask, kind):
    with pytest.raises(kind, match="mask"):
        C.encode(X4, W[None], A, 0.1, mask)


@pytest.mark.parametrize("name", ["step", "top", "ratio"])
def test_stage_boundaries_refuses_nan_curves(name):
    args = {"step": np.arange(5.0), "top": np.linspace(0, 1, 5), "ratio": np.linspace(1, 3, 5)}
    args[name][1] = NAN
    with pytest.raises(ValueError, match=name):
        C.stage_boundaries(**args)


# a representative set of the errors that did not say what was wrong
UNCLEAR = [
    (lambda: C.feature_dictionary(12, 6, seed=2**64), ValueError, "seed"),
    (lambda: C.feature_frequencies(None, 3, 0.2, 2.0), TypeError, "n_features"),
    (lambda: C.sample_codes(FREQS[:0], 10, gen()), ValueError, "freqs"),
    (lambda: C.make_views(M[:0], Z, 4, 2, 1.0, gen()), ValueError, "M"),
    (lambda: C.make_views(M.long(), Z, 4, 2, 1.0, gen()), TypeError, "M"),
    (lambda: C.make_views(M, Z.double(), 4, 2, 1.0, gen()), ValueError, "z"),
    (lambda: C.make_views(M, Z[:, :5], 4, 2, 1.0, gen()), ValueError, "z"),
    (lambda: C.single_feature_samples(M[0], 10, 4, 2, 1.0, gen()), ValueError, "M"),
    (lambda: C.brelu(torch.randn(5, 8), None), TypeError, "b"),
    (lambda: C.straight_through_mask(torch.randn(5, 8), torch.ones(7)), ValueError, "mask"),
    (lambda: C.encode(X4.long(), W[None], A, 0.1), TypeError, "X"),
    (lambda: C.encode(X4, W[None, :, :5], A, 0.1), ValueError, "W"),
    (lambda: C.infonce(torch.randn(5, 8).long(), torch.randn(5, 8), 0.5), TypeError, "f"),
    (lambda: C.infonce(torch.randn(5, 8), None, 0.5), TypeError, "f_target"),
    (lambda: C.magnitude_mask(W.long(), 0.5), TypeError, "W"),
    (lambda: C.alignment(W.double(), M), ValueError, "W"),
    (lambda: C.strong_specialists(W[0], M), ValueError, "W"),
    (lambda: C.energy_ratio(W, M[0], 3), ValueError, "M"),
    (lambda: C.energy_ratio(W, M, 2.5), TypeError, "n_minority"),
    (lambda: C.learning_margin({}, 2.0), TypeError, "cfg"),
    (lambda: C.feature_summary(W[None], M, 3, strong_floor=-0.5), ValueError, "strong_floor"),
    (lambda: C.bias_schedule(3, None), TypeError, "cfg"),
    (lambda: C.train_encoders(None, [1.0], [0.0]), TypeError, "cfg"),
    (lambda: C.train_encoders(TINY, None, [0.0]), TypeError, "ratios"),
    (lambda: C.train_encoders(TINY, [1.0], [0.0], seed="0"), TypeError, "seed"),
    (lambda: C.ridge_probe(torch.randn(30, 5), torch.full((30,), 99), torch.randn(12, 5), 3),
     ValueError, "y_train"),
    (lambda: C.ridge_probe(torch.randn(30, 5), (torch.arange(30) % 3).float(),
                           torch.randn(12, 5), 3), TypeError, "y_train"),
    (lambda: C.ridge_probe(torch.randn(30, 5), torch.arange(29) % 3, torch.randn(12, 5), 3),
     ValueError, "y_train"),
    (lambda: C.ridge_probe(torch.randn(30, 5), torch.arange(30) % 3, torch.randn(12, 4), 3),
     ValueError, "f_test"),
    (lambda: C.train_longtail(C.LongTailConfig(), prune_fractions=()), ValueError,
     "prune_fractions"),
    (lambda: C.train_longtail({}), TypeError, "cfg"),
    (lambda: C.draw_alignment(None, torch.rand(8, 6), 3), TypeError, "ax"),
    (lambda: C.draw_alignment(plt.gca(), torch.rand(0, 6), 3), ValueError, "proj"),
    (lambda: C.draw_alignment(plt.gca(), torch.rand(8, 6), 6), ValueError, "n_minority"),
]


@pytest.mark.parametrize("i", range(len(UNCLEAR)))
def test_unclear_errors_now_name_the_argument(i):
    call, kind, name = UNCLEAR[i]
    with pytest.raises(kind, match=rf"\b{name}\b"):
        call()
    plt.close("all")


def test_results_helpers_check_their_arguments():
    run = C.train_encoders(TINY, [2.0, 2.0], [0.0, 0.5], seed=0, replicates=1)
    with pytest.raises(ValueError, match="values"):
        C.paired(run, np.arange(3.0), 2.0, 0.5)
    with pytest.raises(ValueError, match="fraction"):
        C.paired(run, np.arange(2.0), 2.0, 1.5)
    with pytest.raises(ValueError, match="values"):
        C.condition_means(run, np.arange(5.0))
    with pytest.raises(ValueError, match="fraction"):
        C.stage_curves(run, fraction=NAN)
    with pytest.raises(ValueError, match="X"):
        C.representations(run, torch.randn(3, 4, 5))
    with pytest.raises(ValueError, match="seed"):
        C.condition_table(run, seed=-1)
    with pytest.raises(ValueError, match="ratio"):
        run.select(0.5, 0.0)
    # valid calls still work and give the same numbers as the unchecked functions
    assert run.select(2.0, 0.5) == [1]
    assert C.condition_means(run, np.arange(2.0)) == {(2.0, 0.0): 0.0, (2.0, 0.5): 1.0}
    assert [v.tolist() for v in C.paired(run, np.arange(2.0), 2.0, 0.5)] == [[0.0], [1.0]]


def test_valid_calls_are_unchanged_by_the_checks():
    # the checked function returns exactly what the unchecked one returns
    f, g = torch.randn(5, 8, generator=gen()), torch.randn(5, 8, generator=gen())
    assert torch.equal(C.infonce(f, g, 0.5), C._infonce(f, g, 0.5))
    assert torch.equal(C.make_views(M, Z, 4, 2, 1.0, gen()),
                       C._make_views(M, Z, 4, 2, 1.0, gen()))
    assert torch.equal(C.encode(X4, W[None], A, 0.1, torch.ones(1, 8)),
                       C._encode(X4, W[None], A, 0.1, torch.ones(1, 8)))
    assert math.isclose(C.infonce_orthogonal_closed_form(1.0, 5, 0.5), math.log1p(4 * math.exp(-2)))
    # declared optional None and zero noise stay accepted
    assert C.draw_alignment(plt.gca(), np.random.rand(8, 6), 3, title=None, vmax=None) is not None
    plt.close("all")
    assert C.make_views(M, Z, 4, 2, 0.0, gen()).shape == (10, 4, 12)


class _Refuse:
    """A checked public function's stand-in: calling it fails."""

    def __init__(self, func):
        self.name = func.__name__

    def __call__(self, *args, **kwargs):
        raise AssertionError(f"the per-step code called the checked {self.name}")


PER_STEP = ["bias_schedule", "magnitude_mask", "random_mask", "sample_codes", "make_views",
            "encode", "infonce",
            "alignment", "brelu", "straight_through_mask", "augment_1d"]


def test_training_steps_skip_the_boundary_checks(monkeypatch):
    for name in PER_STEP:
        monkeypatch.setattr(C, name, _Refuse(getattr(C, name)))
    cfg = replace(TINY, steps=4, prune_every=2)
    run = C.train_encoders(cfg, [1.0, 2.0], [0.0, 0.5], seed=0, replicates=1)
    hard = C.train_encoders(cfg, [2.0], [0.5], seed=0, replicates=1, hard_mask=True)
    rand = C.train_encoders(cfg, [2.0], [0.5], seed=0, replicates=1, masks=["random"])
    assert np.isfinite(run.history["proj"]).all() and np.isfinite(hard.history["proj"]).all()
    assert np.isfinite(rand.history["proj"]).all()
    lcfg = replace(C.LongTailConfig(), n_train=300, n_test=100, width=8, out_dim=4, batch=8,
                   steps=3, prune_every=2)
    out = C.train_longtail(lcfg, (0.0, 0.5), seed=0)
    assert out["acc"].shape == (2, 10)


def test_conditions_may_be_arrays_but_not_strings_or_nan():
    a = C.train_encoders(TINY, np.array([1.0, 2.0]), np.array([0.0, 0.5]), seed=0, replicates=1)
    b = C.train_encoders(TINY, [1.0, 2.0], (0.0, 0.5), seed=0, replicates=1)
    assert torch.equal(a.W, b.W) and a.ratios == b.ratios
    for bad, kind in (("abc", TypeError), (np.array([1.0, NAN]), ValueError),
                      (np.array([[1.0, 2.0]]), TypeError), ([True, 2.0], TypeError)):
        with pytest.raises(kind, match="ratios"):
            C.train_encoders(TINY, bad, [0.0, 0.5])
    with pytest.raises(ValueError, match=r"prune_fractions\[1\]"):
        C.train_longtail(C.LongTailConfig(), prune_fractions=np.array([0.0, 1.5]))
