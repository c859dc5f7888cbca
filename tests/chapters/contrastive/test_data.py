"""Tests of gtlib.contrastive.data, one section per public function."""

import math
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from gtlib import contrastive as C, contrastive as CL
from gtlib.contrastive.encoder import _encode
from gtlib.contrastive.encoder import _infonce
from gtlib.contrastive.data import _make_views
from tests.chapters.contrastive.helpers import (
    _alignment_reference,
    A,
    DT,
    gen,
    M,
    rng,
    W,
    X4,
    Z,
)
from gtlib.contrastive.alignment import _alignment
from gtlib.contrastive.data import _sample_codes


def _gram_schmidt(a):
    """Classical Gram-Schmidt on the columns of ``a`` (numpy float64)."""
    q = np.zeros_like(a)
    for k in range(a.shape[1]):
        v = a[:, k] - q[:, :k] @ (q[:, :k].T @ a[:, k])
        q[:, k] = v / np.linalg.norm(v)
    return q


def _views_reference(M, z, L, Ls, noise, g):
    n, d = z.shape[0], M.shape[0]
    order = torch.rand(n, L, generator=g).argsort(-1)
    eps = torch.randn(n, L, d, generator=g) * (noise / math.sqrt(d))
    X = eps.to(M.dtype).clone()
    for i in range(n):
        for l in range(L):
            if order[i, l] < Ls:
                X[i, l] += M @ z[i]
    return X


# =================================================================================================
# contrastive.feature_dictionary
# =================================================================================================
def test_dictionary_is_orthonormal_and_seeded():
    M = C.feature_dictionary(10, 4, seed=3)
    assert M.shape == (10, 4)
    assert torch.allclose(M.T @ M, torch.eye(4), atol=1e-5)
    assert torch.equal(M, C.feature_dictionary(10, 4, seed=3))
    with pytest.raises(ValueError, match="n_features"):
        C.feature_dictionary(3, 4)


@pytest.mark.reference
def test_feature_dictionary_is_gram_schmidt_of_its_seeded_gaussian_matrix():
    """QR with a positive diagonal of R is Gram-Schmidt of the columns: the first K columns of
    Q come from the first K columns of ``randn(dim, dim)`` drawn under ``seed``."""
    for dim, K, seed in ((9, 4, 5), (6, 6, 0)):
        a = torch.randn(dim, dim, generator=rng(seed)).double().numpy()
        M = C.feature_dictionary(dim, K, seed=seed)
        assert M.shape == (dim, K) and M.dtype == torch.float32 and M.is_contiguous()
        np.testing.assert_allclose(
            M.double().numpy(), _gram_schmidt(a)[:, :K], atol=2e-5
        )
    M5 = C.feature_dictionary(9, 4, seed=5)
    assert not torch.allclose(M5, C.feature_dictionary(9, 4, seed=6))
    # a prefix: fewer features are the first columns of more
    assert torch.equal(C.feature_dictionary(9, 2, seed=5), M5[:, :2])
    assert torch.equal(
        C.feature_dictionary(9, 4), C.feature_dictionary(9, 4, seed=0)
    )


@pytest.mark.reference
def test_make_views_noise_has_the_stated_expected_norm_and_batches():
    M = C.feature_dictionary(10, 3, seed=0)
    z = torch.zeros(2, 400, 3)
    X = _make_views(M, z, 3, 1, 2.5, rng(0))  # (E, n, K) codes -> (E, n, L, d)
    assert X.shape == (2, 400, 3, 10)
    # E ||eps||^2 = noise^2 (std noise / sqrt(d) per coordinate)
    assert float((X**2).sum(-1).mean()) == pytest.approx(2.5**2, rel=0.03)
    assert float(X.std()) == pytest.approx(2.5 / math.sqrt(10), rel=0.03)


@pytest.mark.reference
def test_alignment_against_numpy_on_batched_random_weights():
    M = C.feature_dictionary(7, 4, seed=3).double()
    W = torch.randn(2, 5, 7, generator=rng(0), dtype=DT)
    got = _alignment(W, M)
    ref = _alignment_reference(W, M)
    assert set(got) == set(ref)
    for k in ref:
        assert got[k].shape == ((2, 5, 4) if k == "proj" else (2, 5)), k
        if k == "dominant":
            np.testing.assert_array_equal(got[k].numpy(), ref[k])
        else:
            np.testing.assert_allclose(got[k].numpy(), ref[k], rtol=1e-10, err_msg=k)
    # second is the second largest, not the smallest: with K = 4 they differ
    assert not np.allclose(ref["second"], np.sort(ref["proj"], -1)[..., 0])


# =================================================================================================
# contrastive.feature_frequencies
# =================================================================================================
def test_frequencies_and_codes():
    p = C.feature_frequencies(6, 2, 0.3, 3.0)
    assert torch.allclose(p, torch.tensor([0.3, 0.3, 0.3, 0.3, 0.1, 0.1]))
    g = torch.Generator().manual_seed(0)
    z = _sample_codes(p, 20000, g)
    assert set(torch.unique(z).tolist()) <= {-1.0, 0.0, 1.0}
    assert torch.allclose((z != 0).float().mean(0), p, atol=0.015)
    zz = _sample_codes(torch.stack([p, p]), 50, g)
    assert zz.shape == (2, 50, 6) and torch.equal(
        zz[0], zz[1]
    )  # common random numbers
    with pytest.raises(ValueError, match="ratio"):
        C.feature_frequencies(6, 2, 0.3, 0.5)
    with pytest.raises(ValueError, match="n_minority"):
        C.feature_frequencies(6, 6, 0.3, 2.0)


@pytest.mark.reference
def test_feature_frequencies_by_hand_at_the_edges():
    p = C.feature_frequencies(5, 2, 0.2, 4.0)
    assert p.tolist() == pytest.approx([0.2, 0.2, 0.2, 0.05, 0.05])
    assert p.dtype == torch.float32
    assert C.feature_frequencies(5, 4, 0.4, 8.0).tolist() == pytest.approx(
        [0.4] + [0.05] * 4
    )
    assert C.feature_frequencies(3, 1, 0.3, 1.0).tolist() == pytest.approx(
        [0.3, 0.3, 0.3]
    )
    with pytest.raises(ValueError):
        C.feature_frequencies(5, 5, 0.2, 2.0)


@pytest.mark.boundary
@pytest.mark.parametrize("ratio", [float("nan"), float("inf"), 0.5])
def test_feature_frequencies_refuses_bad_ratio(ratio):
    with pytest.raises(ValueError, match="ratio"):
        CL.feature_frequencies(10, 2, 0.2, ratio)


# =================================================================================================
# _sample_codes
# =================================================================================================
@pytest.mark.reference
def test_sample_codes_is_threshold_of_shared_uniforms_times_a_random_sign():
    freqs = torch.tensor([0.9, 0.1, 0.5, 0.0, 1.0])
    z = _sample_codes(freqs, 40, rng(3))
    g = rng(3)
    u = torch.rand(40, 5, generator=g)
    sign = torch.randint(0, 2, (40, 5), generator=g) * 2 - 1
    expect = torch.where(u < freqs, sign, 0).float()
    assert z.dtype == torch.float32 and torch.equal(z, expect)
    assert (z[:, 3] == 0).all() and (z[:, 4] != 0).all()  # p = 0 never, p = 1 always
    assert (z[:, 4] == 1).any() and (z[:, 4] == -1).any()  # both signs
    # batched: the E profiles share the uniforms and signs (common random numbers)
    fr2 = torch.stack([freqs, torch.tensor([0.2, 0.6, 0.5, 1.0, 0.3])])
    zz = _sample_codes(fr2, 40, rng(3))
    assert zz.shape == (2, 40, 5) and torch.equal(zz[0], expect)
    assert torch.equal(zz[1], torch.where(u < fr2[1], sign, 0).float())
    assert not torch.equal(_sample_codes(freqs, 40, rng(4)), z)
    # a probability exactly equal to a uniform draw is not activated (u < p, not u <= p)
    at = u[0].clone()
    z_at = _sample_codes(at, 40, rng(3))
    assert (z_at[0] == 0).all()
    assert torch.equal(z_at[1:], torch.where(u[1:] < at, sign[1:], 0).float())
    with pytest.raises(ValueError, match="freqs"):
        _sample_codes(torch.tensor([0.5, 1.5]), 3, rng(0))
    with pytest.raises(ValueError, match="freqs"):
        _sample_codes(torch.tensor([-0.1, 0.5]), 3, rng(0))


@pytest.mark.reference
def test_sample_codes_empirical_rates_and_balanced_signs():
    freqs = torch.tensor([0.7, 0.05, 0.3])
    z = _sample_codes(freqs, 20000, rng(11))
    np.testing.assert_allclose(
        (z != 0).float().mean(0).numpy(), freqs.numpy(), atol=0.015
    )
    assert abs(float(z[:, 0].mean())) < 0.03  # signs are +-1 with probability 1/2


# =================================================================================================
# _make_views
# =================================================================================================
def test_views_share_the_signal():
    M = C.feature_dictionary(8, 3, seed=0)
    g = torch.Generator().manual_seed(1)
    z = torch.tensor([[1.0, 0.0, -1.0]])
    X = _make_views(M, z, n_tokens=5, n_signal=2, noise=0.0, generator=g)
    signal = z @ M.T
    carriers = [l for l in range(5) if X[0, l].norm() > 0]
    assert len(carriers) == 2
    for l in carriers:
        assert torch.allclose(X[0, l], signal[0])
    with pytest.raises(ValueError, match="n_signal"):
        _make_views(M, z, 2, 3, 0.1, g)


@pytest.mark.reference
def test_make_views_matches_a_loop_and_places_exactly_n_signal_tokens():
    M = C.feature_dictionary(6, 3, seed=2).double()
    z = torch.tensor(
        [[1.0, 0.0, -1.0], [0.0, 1.0, 0.0], [-1.0, -1.0, 1.0], [0.0, 0.0, 0.0]],
        dtype=DT,
    )
    X = _make_views(M, z, 5, 2, 0.7, rng(8))
    assert X.shape == (4, 5, 6)
    torch.testing.assert_close(
        X, _views_reference(M, z, 5, 2, 0.7, rng(8)), rtol=1e-6, atol=1e-7
    )
    # noiseless: exactly n_signal tokens carry M z, the others are zero
    for Ls in (1, 3, 5):
        X0 = _make_views(M, z[:3], 5, Ls, 0.0, rng(1))
        for i in range(3):
            carriers = [l for l in range(5) if X0[i, l].abs().sum() > 0]
            assert len(carriers) == Ls
            for l in carriers:
                torch.testing.assert_close(X0[i, l], M @ z[i])
    # two calls: same code, new positions and noise
    g = rng(9)
    a, b = _make_views(M, z, 5, 2, 0.7, g), _make_views(M, z, 5, 2, 0.7, g)
    assert not torch.allclose(a, b)


@pytest.mark.boundary
def test_valid_calls_are_unchanged_by_the_checks():
    # the checked function returns exactly what the unchecked one returns
    f, g = torch.randn(5, 8, generator=gen()), torch.randn(5, 8, generator=gen())
    assert torch.equal(C.infonce(f, g, 0.5), _infonce(f, g, 0.5))
    assert torch.equal(
        _make_views(M, Z, 4, 2, 1.0, gen()), _make_views(M, Z, 4, 2, 1.0, gen())
    )
    assert torch.equal(
        _encode(X4, W[None], A, 0.1, torch.ones(1, 8)),
        _encode(X4, W[None], A, 0.1, torch.ones(1, 8)),
    )
    assert math.isclose(
        C.infonce_orthogonal_closed_form(1.0, 5, 0.5), math.log1p(4 * math.exp(-2))
    )
    # declared optional None and zero noise stay accepted
    assert (
        C.draw_alignment(plt.gca(), np.random.rand(8, 6), 3, title=None, vmax=None)
        is not None
    )
    plt.close("all")
    assert _make_views(M, Z, 4, 2, 0.0, gen()).shape == (10, 4, 12)


# =================================================================================================
# contrastive.single_feature_samples
# =================================================================================================
@pytest.mark.reference
def test_single_feature_samples_carry_one_positive_feature():
    M = C.feature_dictionary(8, 4, seed=1)
    X, y = C.single_feature_samples(M, 30, 4, 3, 0.0, rng(5))
    assert X.shape == (30, 4, 8) and y.shape == (30,) and y.dtype == torch.int64
    y_ref = torch.randint(0, 4, (30,), generator=rng(5))
    assert torch.equal(y, y_ref)
    assert set(y.tolist()) == {0, 1, 2, 3}  # every feature, including the last
    for i in range(30):
        carriers = X[i][X[i].abs().sum(-1) > 0]
        assert len(carriers) == 3
        torch.testing.assert_close(carriers, M[:, y[i]].expand(3, 8))  # sign +1
    # with noise: the same y, and the view drawn after y from the same generator
    g = rng(6)
    Xn, yn = C.single_feature_samples(M, 5, 4, 1, 0.5, g)
    g2 = rng(6)
    y2 = torch.randint(0, 4, (5,), generator=g2)
    Xr = _make_views(M, torch.nn.functional.one_hot(y2, 4).float(), 4, 1, 0.5, g2)
    assert torch.equal(yn, y2) and torch.equal(Xn, Xr)
    with pytest.raises(ValueError, match="n_signal"):
        C.single_feature_samples(M, 5, 2, 3, 0.5, rng(0))
