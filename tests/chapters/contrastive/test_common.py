"""Tests of gtlib.contrastive.common, one section per public function."""

import matplotlib.pyplot as plt
import pytest
import torch
from gtlib import contrastive as C
from gtlib.contrastive.training import _sample_codes_per_replicate
from gtlib.contrastive.training import _views_per_replicate
from tests.chapters.contrastive.helpers import (
    gen,
    INF,
    M,
    NAN,
    rng,
    TINY,
    tiny_cfg,
    W,
)
from gtlib.contrastive.data import _sample_codes


def nanify(t):
    t = t.clone()
    t.view(-1)[0] = NAN
    return t


# (call, the argument the error must name): each was silent (ran on, often returning NaN) before
SILENT = [
    (lambda: C.feature_dictionary(12, True), "n_features"),
    (lambda: C.feature_dictionary(12, 6, seed=-1), "seed"),
    (lambda: C.feature_dictionary(12, 6, seed=1.5), "seed"),
    (lambda: C.feature_frequencies(6, True, 0.2, 2.0), "n_minority"),
    (lambda: C.single_feature_samples(M, 0, 4, 2, 1.0, gen()), "n"),
    (lambda: C.single_feature_samples(M, 10, 4, 2, NAN, gen()), "noise"),
    (lambda: C.infonce(torch.randn(5, 8), torch.randn(5, 8), INF), "tau"),
    (lambda: C.infonce(torch.randn(5, 8), torch.randn(5, 8), True), "tau"),
    (lambda: C.infonce_orthogonal_closed_form(-0.5, 5, 0.5), "sq_norm"),
    (lambda: C.infonce_orthogonal_closed_form(1.0, 0, 0.5), "n"),
    (lambda: C.infonce_orthogonal_closed_form(1.0, 5, -1.0), "tau"),
    (lambda: C.strong_specialists(W, M, ratio=INF), "ratio"),
    (lambda: C.energy_ratio(W[:0], M, 3), "W"),
    (lambda: C.learning_margin(TINY, INF), "ratio"),
    (
        lambda: C.feature_summary(W[None], M, 3, specialist_ratio=True),
        "specialist_ratio",
    ),
    (lambda: C.train_encoders(TINY, [1.0], [NAN]), "fractions"),
    (lambda: C.train_encoders(TINY, [1.0], [0.0], seed=-1), "seed"),
    (lambda: C.train_encoders(TINY, [1.0], [0.0], replicates=2.5), "replicates"),
    (lambda: C.train_encoders(TINY, [1.0], [0.0], hard_mask="yes"), "hard_mask"),
    (lambda: C.train_encoders(TINY, [1.0], [0.0], stream=-1), "stream"),
    (
        lambda: C.ridge_probe(
            torch.randn(30, 5), torch.arange(30) % 3, torch.randn(12, 5).long(), 3
        ),
        "f_test",
    ),
    (
        lambda: C.ridge_probe(
            torch.randn(30, 5), torch.arange(30) % 3, torch.randn(12, 5), -1
        ),
        "n_classes",
    ),
    (lambda: C.draw_alignment(plt.gca(), torch.rand(8, 6).tolist(), 3), "proj"),
    (lambda: C.draw_alignment(plt.gca(), torch.rand(8, 6), -1), "n_minority"),
    (lambda: C.draw_alignment(plt.gca(), torch.rand(8, 6), 3, vmax=NAN), "vmax"),
]


# a representative set of the errors that did not say what was wrong
UNCLEAR = [
    (lambda: C.feature_dictionary(12, 6, seed=2**64), ValueError, "seed"),
    (lambda: C.feature_frequencies(None, 3, 0.2, 2.0), TypeError, "n_features"),
    (lambda: C.single_feature_samples(M[0], 10, 4, 2, 1.0, gen()), ValueError, "M"),
    (
        lambda: C.infonce(torch.randn(5, 8).long(), torch.randn(5, 8), 0.5),
        TypeError,
        "f",
    ),
    (lambda: C.infonce(torch.randn(5, 8), None, 0.5), TypeError, "f_target"),
    (lambda: C.strong_specialists(W[0], M), ValueError, "W"),
    (lambda: C.energy_ratio(W, M[0], 3), ValueError, "M"),
    (lambda: C.energy_ratio(W, M, 2.5), TypeError, "n_minority"),
    (lambda: C.learning_margin({}, 2.0), TypeError, "cfg"),
    (
        lambda: C.feature_summary(W[None], M, 3, strong_floor=-0.5),
        ValueError,
        "strong_floor",
    ),
    (lambda: C.train_encoders(None, [1.0], [0.0]), TypeError, "cfg"),
    (lambda: C.train_encoders(TINY, None, [0.0]), TypeError, "ratios"),
    (lambda: C.train_encoders(TINY, [1.0], [0.0], seed="0"), TypeError, "seed"),
    (
        lambda: C.ridge_probe(
            torch.randn(30, 5), torch.full((30,), 99), torch.randn(12, 5), 3
        ),
        ValueError,
        "y_train",
    ),
    (
        lambda: C.ridge_probe(
            torch.randn(30, 5), (torch.arange(30) % 3).float(), torch.randn(12, 5), 3
        ),
        TypeError,
        "y_train",
    ),
    (
        lambda: C.ridge_probe(
            torch.randn(30, 5), torch.arange(29) % 3, torch.randn(12, 5), 3
        ),
        ValueError,
        "y_train",
    ),
    (
        lambda: C.ridge_probe(
            torch.randn(30, 5), torch.arange(30) % 3, torch.randn(12, 4), 3
        ),
        ValueError,
        "f_test",
    ),
    (
        lambda: C.train_longtail(C.LongTailConfig(), prune_fractions=()),
        ValueError,
        "prune_fractions",
    ),
    (lambda: C.train_longtail({}), TypeError, "cfg"),
    (lambda: C.draw_alignment(None, torch.rand(8, 6), 3), TypeError, "ax"),
    (lambda: C.draw_alignment(plt.gca(), torch.rand(0, 6), 3), ValueError, "proj"),
    (
        lambda: C.draw_alignment(plt.gca(), torch.rand(8, 6), 6),
        ValueError,
        "n_minority",
    ),
]


# =================================================================================================
# contrastive.ContrastiveConfig
# =================================================================================================
@pytest.mark.reference
def test_contrastive_config_cross_field_rules_at_their_edges():
    # equalities are allowed where the rule is <=, refused where it is <
    assert C.ContrastiveConfig.quick(
        dim=12, n_features=12, n_minority=11
    )  # K = d, K_min = K - 1
    assert C.ContrastiveConfig.quick(n_tokens=3, n_signal=3)
    with pytest.raises(ValueError, match="n_minority"):
        C.ContrastiveConfig.quick(n_features=6, n_minority=6)
    with pytest.raises(ValueError, match="n_features"):
        C.ContrastiveConfig.quick(dim=11, n_features=12)
    with pytest.raises(ValueError, match="n_signal"):
        C.ContrastiveConfig.quick(n_tokens=3, n_signal=4)


# =================================================================================================
# gtlib.contrastive as a whole
# =================================================================================================
@pytest.mark.boundary
@pytest.mark.parametrize("i", range(len(SILENT)))
def test_silent_input_is_refused_naming_the_argument(i):
    call, name = SILENT[i]
    with pytest.raises((TypeError, ValueError), match=rf"\b{name}\b"):
        call()
    plt.close("all")


@pytest.mark.boundary
@pytest.mark.parametrize("i", range(len(UNCLEAR)))
def test_unclear_errors_now_name_the_argument(i):
    call, kind, name = UNCLEAR[i]
    with pytest.raises(kind, match=rf"\b{name}\b"):
        call()
    plt.close("all")


def test_train_encoders_independent_replicates_draw_their_own_samples():
    cfg = tiny_cfg(steps=3, log_every=1, init_scale=0.3)
    # two copies of one condition in a replicate see the same samples: they stay identical;
    # the other replicate draws its own
    two = C.train_encoders(
        cfg, [3.0, 3.0], [0.0, 0.0], seed=2, replicates=2, independent=True
    )
    torch.testing.assert_close(two.W[0], two.W[1], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(two.W[2], two.W[3], rtol=1e-5, atol=1e-6)
    same_init = C.train_encoders(
        cfg, [3.0], [0.0], seed=2, replicates=1, stream=1, independent=True
    )
    assert not torch.allclose(two.W[2], same_init.W[0])  # same start, other samples
    # the models of one replicate share their codes; other replicates draw their own
    freqs = torch.full((4, 6), 0.5)
    z = _sample_codes_per_replicate(freqs, torch.tensor([0, 0, 1, 1]), 40, rng(0))
    assert (
        torch.equal(z[0], z[1])
        and torch.equal(z[2], z[3])
        and not torch.equal(z[0], z[2])
    )
    X = _views_per_replicate(M, z, torch.tensor([0, 0, 1, 1]), 4, 2, 1.0, rng(1))
    assert torch.equal(X[0], X[1]) and not torch.equal(X[0], X[2])
    assert ((X - X.mean()).abs().sum(-1) > 0).all()
    # the default couples the codes of every model and draws each model's own noise
    shared = _sample_codes(freqs, 40, rng(0))
    assert torch.equal(shared[0], shared[2])
    plain = C.train_encoders(cfg, [3.0, 3.0], [0.0, 0.0], seed=2, replicates=1)
    assert (plain.W[0] - plain.W[1]).abs().max() > 1e-3
