"""Tests of gtlib.uniform.norms, one section per public function: unit tests, checks against
independent reference implementations (marker ``reference``), bad input refused at the boundary
(``boundary``), equivalence of the engine with the loops it replaced (``engine``) and tests pinned
by mutation testing (``mutation``)."""

import math
import numpy as np
import pytest
import torch

from gtlib import uniform as U
from gtlib.uniform import bartlett_bound, neyshabur_bound

from tests.chapters.uniform.helpers import (
    NAN,
    _bartlett_np,
    _nan_at,
    _neyshabur_np,
    _np,
    _raises,
    _spec_np,
)


def _layers(seed=14):
    """Three non-square layers 3 -> 5 -> 4 -> 11 and their initializations (float64)."""
    g = torch.Generator().manual_seed(seed)
    shapes = [(5, 3), (4, 5), (11, 4)]
    ws = [torch.randn(*s, generator=g, dtype=torch.float64) for s in shapes]
    w0s = [torch.randn(*s, generator=g, dtype=torch.float64) * 0.5 for s in shapes]
    return ws, w0s


# =================================================================================================
# uniform.spectral_norm
# =================================================================================================
def test_spectral_norm_matches_torch():
    g = torch.Generator().manual_seed(0)
    for shape in [(5, 3), (3, 5), (40, 40), (4, 20, 30)]:
        w = torch.randn(*shape, generator=g, dtype=torch.float64)
        ref = torch.linalg.matrix_norm(w, ord=2)
        got = U.spectral_norm(w)
        assert torch.allclose(got, ref, rtol=1e-12), (shape, got, ref)


def test_spectral_norm_near_degenerate_spectrum():
    # a Gaussian-like 64x256 matrix whose top two singular values are close: s2/s1 = 0.993
    # (power iteration with a 100-step cap was off by 3.6e-3 here)
    g = torch.Generator().manual_seed(3)
    q1, _ = torch.linalg.qr(torch.randn(64, 64, generator=g, dtype=torch.float64))
    q2, _ = torch.linalg.qr(torch.randn(256, 64, generator=g, dtype=torch.float64))
    s = torch.linspace(1.0, 0.2, 64, dtype=torch.float64)
    s[1] = 0.993
    w = q1 @ torch.diag(s) @ q2.T
    assert U.spectral_norm(w).item() == pytest.approx(1.0, rel=1e-12)
    assert U.spectral_norm(w.float()).item() == pytest.approx(1.0, rel=1e-6)
    # a default-initialized 1024x1024 layer (the full preset's width), against float64 svdvals
    with torch.random.fork_rng():
        torch.manual_seed(0)
        layer = torch.nn.Linear(1024, 1024, bias=False)
    w = layer.weight.detach()
    ref = torch.linalg.svdvals(w.double())
    assert ref[1] / ref[0] > 0.98  # nearly degenerate: the hard case
    assert U.spectral_norm(w).item() == pytest.approx(ref[0].item(), rel=1e-6)
    assert U.spectral_norm(w.double()).item() == pytest.approx(
        ref[0].item(), rel=1e-12
    )


def test_spectral_norm_known_cases():
    w = torch.diag(torch.tensor([3.0, -7.0, 2.0]))
    assert U.spectral_norm(w).item() == pytest.approx(7.0, rel=1e-5)
    # rank one: ||a b^T|| = ||a|| ||b||
    a, b = torch.tensor([1.0, 2.0, 2.0]), torch.tensor([3.0, 4.0])
    assert U.spectral_norm(torch.outer(a, b)).item() == pytest.approx(15.0, rel=1e-5)


def test_norm_bad_input():
    with pytest.raises(TypeError):
        U.spectral_norm([[1.0, 2.0]])
    with pytest.raises(ValueError):
        U.spectral_norm(torch.ones(3))
    with pytest.raises(ValueError):
        U.spectral_norm(torch.tensor([[1.0, float("nan")]]))
    with pytest.raises(ValueError):
        U.network_measures([torch.eye(2)], [torch.zeros(2, 2)], torch.ones(3), 1.0)
    with pytest.raises(ValueError):
        U.distance_from_init([torch.ones(2, 2)], [torch.ones(2, 3)])
    with pytest.raises(ValueError):
        U.bartlett_bound([torch.eye(2)], [torch.zeros(2, 2)], 1.0, 0.0, 10)
    with pytest.raises(ValueError):
        U.neyshabur_bound([torch.eye(2)], [torch.zeros(2, 2)], 1.0, 1.0, 0)


@pytest.mark.reference
def test_spectral_norm_on_stacks_against_numpy_and_keeps_the_dtype():
    g = torch.Generator().manual_seed(11)
    w = torch.randn(
        2, 3, 4, 7, generator=g, dtype=torch.float64
    )  # (..., out, in), out != in
    got = U.spectral_norm(w)
    assert got.shape == (2, 3) and got.dtype == torch.float64
    ref = np.linalg.norm(_np(w), ord=2, axis=(-2, -1))
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-13)
    w32 = w[0, 0].float().requires_grad_()
    out = U.spectral_norm(w32)
    assert out.dtype == torch.float32 and not out.requires_grad
    assert out.item() == pytest.approx(_spec_np(w32), rel=1e-6)
    # transposing leaves the largest singular value unchanged; the smallest one differs here
    assert U.spectral_norm(w[1, 2].T).item() == pytest.approx(ref[1, 2], rel=1e-13)
    assert np.linalg.svd(_np(w[1, 2]), compute_uv=False)[-1] < 0.9 * ref[1, 2]


# =================================================================================================
# uniform.norm_21
# =================================================================================================
def test_norm_21_and_distance():
    w = torch.tensor(
        [[3.0, 4.0], [0.0, 1.0], [6.0, 8.0]]
    )  # rows have norms 5, 1, 10
    assert U.norm_21(w).item() == pytest.approx(16.0)
    w0 = torch.zeros(3, 2)
    d = U.distance_from_init([w, torch.ones(1, 3)], [w0, torch.ones(1, 3)])
    assert d.item() == pytest.approx(math.sqrt(25 + 1 + 100))


@pytest.mark.reference
def test_norm_21_sums_row_norms_on_stacks():
    g = torch.Generator().manual_seed(12)
    w = torch.randn(
        3, 5, 2, generator=g, dtype=torch.float64
    )  # 5 units with 2 inputs each
    got = U.norm_21(w)
    ref = [
        sum(math.sqrt(sum(v * v for v in row)) for row in w[e].tolist())
        for e in range(3)
    ]
    assert got.shape == (3,)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-13)
    # (W^T)'s (2,1)-norm is not W's: the columns give a different number
    assert U.norm_21(w[0].T).item() != pytest.approx(ref[0], rel=1e-3)


# =================================================================================================
# uniform.distance_from_init
# =================================================================================================
@pytest.mark.reference
def test_distance_from_init_is_per_member_on_stacks():
    g = torch.Generator().manual_seed(13)
    ws = [
        torch.randn(3, 4, 2, generator=g, dtype=torch.float64),
        torch.randn(3, 1, 4, generator=g, dtype=torch.float64),
    ]
    w0s = [
        torch.randn(3, 4, 2, generator=g, dtype=torch.float64),
        torch.randn(3, 1, 4, generator=g, dtype=torch.float64),
    ]
    got = U.distance_from_init(ws, w0s)
    assert got.shape == (3,)
    for e in range(3):
        ref = math.sqrt(
            sum(
                float(((_np(w[e]) - _np(w0[e])) ** 2).sum())
                for w, w0 in zip(ws, w0s)
            )
        )
        assert got[e].item() == pytest.approx(ref, rel=1e-13)
    # the order of the arguments does not matter; the second layer contributes
    assert torch.allclose(U.distance_from_init(w0s, ws), got)
    one = U.distance_from_init(ws[:1], w0s[:1])
    assert bool((one < got).all())
    with pytest.raises(ValueError):
        U.distance_from_init([], [])
    with pytest.raises(ValueError):
        U.distance_from_init(ws, w0s[:1])


# =================================================================================================
# uniform.bartlett_bound
# =================================================================================================
def test_bounds_by_hand_and_scaling():
    # one layer W = 2 I_2, init 0: ||W||_2 = 2, ||W^T||_{2,1} = 4, ||W||_F^2 = 8
    w, w0 = [2 * torch.eye(2)], [torch.zeros(2, 2)]
    # Bartlett et al.: ||X||_F / (gamma n) * 2 * ((4 / 2)^(2/3))^(3/2) with ||X||_F = 2, n = 4
    bft = U.bartlett_bound(w, w0, data_norm=2.0, gamma=1.0, n=4)
    assert bft == pytest.approx(2 / 4 * 2 * ((4 / 2) ** (2 / 3)) ** 1.5)  # = 2
    ney = U.neyshabur_bound(w, w0, input_norm=1.0, gamma=1.0, n=4)
    assert ney == pytest.approx(math.sqrt(1 * 1 * 2 * math.log(2) * 4 * (8 / 4) / 4))
    # invariances: proportional to the input norm / gamma; Bartlett's to 1/n at fixed ||X||_F,
    # Neyshabur's to 1/sqrt(n)
    g = torch.Generator().manual_seed(1)
    ws = [torch.randn(6, 4, generator=g), torch.randn(3, 6, generator=g)]
    w0s = [torch.randn(6, 4, generator=g), torch.randn(3, 6, generator=g)]
    b0 = U.bartlett_bound(ws, w0s, 1.0, 1.0, 100)
    assert U.bartlett_bound(ws, w0s, 3.0, 2.0, 100) == pytest.approx(
        1.5 * b0, rel=1e-5
    )
    assert U.bartlett_bound(ws, w0s, 1.0, 1.0, 400) == pytest.approx(
        0.25 * b0, rel=1e-5
    )
    n0 = U.neyshabur_bound(ws, w0s, 1.0, 1.0, 100)
    assert U.neyshabur_bound(ws, w0s, 3.0, 2.0, 100) == pytest.approx(
        1.5 * n0, rel=1e-5
    )
    assert U.neyshabur_bound(ws, w0s, 1.0, 1.0, 400) == pytest.approx(
        0.5 * n0, rel=1e-5
    )
    # network_measures takes the inputs: ||X||_F for Bartlett, the largest norm for Neyshabur
    x = torch.zeros(100, 4)
    x[:, 0] = 1.0
    x[0, 0] = 3.0  # max norm 3, ||X||_F = sqrt(99 + 9)
    m = U.network_measures(ws, w0s, x, 1.0)
    assert m.spectral_product == pytest.approx(np.prod(m.spectral))
    assert m.bartlett == pytest.approx(
        U.bartlett_bound(ws, w0s, math.sqrt(108), 1.0, 100)
    )
    assert m.neyshabur == pytest.approx(U.neyshabur_bound(ws, w0s, 3.0, 1.0, 100))


@pytest.mark.reference
def test_bartlett_bound_against_numpy_with_and_without_given_spectral_norms():
    ws, w0s = _layers()
    got = U.bartlett_bound(ws, w0s, data_norm=2.5, gamma=0.7, n=13)
    assert got == pytest.approx(_bartlett_np(ws, w0s, 2.5, 0.7, 13), rel=1e-12)
    # spectral norms passed in are used as given (here deliberately not the true ones)
    spec = [1.5, 2.0, 3.5]
    got2 = U.bartlett_bound(ws, w0s, 2.5, 0.7, 13, spectral=spec)
    assert got2 == pytest.approx(
        _bartlett_np(ws, w0s, 2.5, 0.7, 13, spec), rel=1e-12
    )
    assert got2 != pytest.approx(got, rel=1e-3)
    # the reference matrices are the initialization: from W0 = W the term vanishes
    assert U.bartlett_bound(ws, ws, 2.5, 0.7, 13) == 0.0
    with pytest.raises(ValueError):
        U.bartlett_bound(ws, w0s, 2.5, 0.7, 13, spectral=spec[:2])
    with pytest.raises(ValueError):
        U.bartlett_bound(ws, w0s, 0.0, 0.7, 13)


@pytest.mark.boundary
def test_norms_and_bounds_refuse_nan_empty_and_bad_spectral():
    w = torch.randn(4, 3)
    _raises(ValueError, "w", U.norm_21, _nan_at(w))
    _raises(ValueError, "w", U.norm_21, torch.zeros(0, 3))
    _raises(TypeError, "w", U.spectral_norm, torch.ones(3, 3, dtype=torch.long))
    ws, w0 = (
        [torch.randn(4, 3), torch.randn(2, 4)],
        [torch.randn(4, 3), torch.randn(2, 4)],
    )
    _raises(ValueError, "weights", U.distance_from_init, [_nan_at(ws[0]), ws[1]], w0)
    _raises(TypeError, "weights", U.distance_from_init, None, w0)
    for bound in (U.bartlett_bound, U.neyshabur_bound):
        _raises(ValueError, "spectral", bound, ws, w0, 3.0, 1.0, 10, [NAN, 1.0])
        _raises(ValueError, "spectral", bound, ws, w0, 3.0, 1.0, 10, [])
        _raises(ValueError, "spectral", bound, ws, w0, 3.0, 1.0, 10, [1.0])
        _raises(TypeError, "spectral", bound, ws, w0, 3.0, 1.0, 10, "ab")
    _raises(ValueError, "data_norm", U.bartlett_bound, ws, w0, 0.0, 1.0, 10)
    _raises(TypeError, "data_norm", U.bartlett_bound, ws, w0, None, 1.0, 10)
    _raises(
        TypeError,
        "x",
        U.network_measures,
        ws,
        w0,
        torch.ones(5, 3, dtype=torch.long),
        1.0,
    )


# =================================================================================================
# uniform.neyshabur_bound
# =================================================================================================
@pytest.mark.reference
def test_neyshabur_bound_against_numpy_and_its_width_is_the_largest_layer_size():
    ws, w0s = _layers()
    # h = 11, which only the last layer's *output* size reaches (inputs: 3, 5, 4)
    got = U.neyshabur_bound(ws, w0s, input_norm=1.7, gamma=0.3, n=21)
    assert got == pytest.approx(
        _neyshabur_np(ws, w0s, 1.7, 0.3, 21, h=11), rel=1e-12
    )
    # the same network read backwards: h = 11 is now only the first layer's *input* size
    rws = [w.T.contiguous() for w in reversed(ws)]
    rw0s = [w.T.contiguous() for w in reversed(w0s)]
    got_r = U.neyshabur_bound(rws, rw0s, 1.7, 0.3, 21)
    assert got_r == pytest.approx(
        _neyshabur_np(rws, rw0s, 1.7, 0.3, 21, h=11), rel=1e-12
    )
    spec = [2.0, 0.5, 3.0]
    got2 = U.neyshabur_bound(ws, w0s, 1.7, 0.3, 21, spectral=spec)
    assert got2 == pytest.approx(
        _neyshabur_np(ws, w0s, 1.7, 0.3, 21, spec, h=11), rel=1e-12
    )
    # depth enters as L^2 ln(L h): one layer alone, h = 5 there
    one = U.neyshabur_bound(ws[:1], w0s[:1], 1.7, 0.3, 21)
    assert one == pytest.approx(
        _neyshabur_np(ws[:1], w0s[:1], 1.7, 0.3, 21, h=5), rel=1e-12
    )
    assert U.neyshabur_bound(ws, ws, 1.7, 0.3, 21) == 0.0
    with pytest.raises(ValueError):
        U.neyshabur_bound(ws, w0s, 1.7, 0.3, 21, spectral=[1.0, 0.0, 1.0])
    with pytest.raises(ValueError):
        U.neyshabur_bound([torch.ones(2, 3, 4)], [torch.ones(2, 3, 4)], 1.0, 1.0, 3)


@pytest.mark.reference
def test_neyshabur_bound_at_depth_two_by_hand():
    # two layers 2 I_2 from init 0: L = 2, h = 2, ||W_l||_2 = 2, ||W_l||_F^2 = 8
    w, w0 = [2 * torch.eye(2)] * 2, [torch.zeros(2, 2)] * 2
    got = U.neyshabur_bound(w, w0, input_norm=1.0, gamma=1.0, n=4)
    want = math.sqrt(
        1 * 2**2 * 2 * math.log(2 * 2) * (2 * 2) ** 2 * (8 / 4 + 8 / 4) / 4
    )
    assert got == pytest.approx(want) and got == pytest.approx(13.32, abs=0.01)


@pytest.mark.mutation
def test_norm_bounds_on_diagonal_matrices_by_hand():
    """Both complexity terms on matrices whose norms are read off by hand: W1 = diag(3, 1),
    W2 = [[2, 0]], initialization 0 (spectral norms 3 and 2, Frobenius^2 10 and 4, row-norm sums
    4 and 2), L = 2 layers, largest width h = 2."""
    w = [
        torch.tensor([[3.0, 0.0], [0.0, 1.0]], dtype=torch.float64),
        torch.tensor([[2.0, 0.0]], dtype=torch.float64),
    ]
    w0 = [torch.zeros_like(t) for t in w]
    B, gamma, n = 1.5, 0.5, 10
    ney = math.sqrt(
        B**2
        * 2**2
        * 2
        * math.log(2 * 2)
        * (3 * 2) ** 2
        * (10 / 9 + 4 / 4)
        / (gamma**2 * n)
    )
    assert neyshabur_bound(w, w0, B, gamma, n) == pytest.approx(ney, rel=1e-12)
    bart = (
        B * (3 * 2) * ((4 / 3) ** (2 / 3) + (2 / 2) ** (2 / 3)) ** 1.5 / (gamma * n)
    )
    assert bartlett_bound(w, w0, B, gamma, n) == pytest.approx(bart, rel=1e-12)


# =================================================================================================
# uniform.network_measures
# =================================================================================================
@pytest.mark.reference
def test_network_measures_against_numpy():
    ws, w0s = _layers(15)
    g = torch.Generator().manual_seed(16)
    x = torch.randn(9, 3, generator=g, dtype=torch.float64)
    x[4] *= 3.0  # one long input: max norm != rms norm
    m = U.network_measures(ws, w0s, x, gamma=0.4)
    spec = [_spec_np(w) for w in ws]
    np.testing.assert_allclose(m.spectral, spec, rtol=1e-13)
    assert m.spectral_product == pytest.approx(np.prod(spec), rel=1e-13)
    dist = math.sqrt(sum(((_np(w) - _np(w0)) ** 2).sum() for w, w0 in zip(ws, w0s)))
    assert m.distance == pytest.approx(dist, rel=1e-13)
    xf = float(np.sqrt((_np(x) ** 2).sum()))
    B = float(np.sqrt((_np(x) ** 2).sum(1)).max())
    assert m.bartlett == pytest.approx(_bartlett_np(ws, w0s, xf, 0.4, 9), rel=1e-12)
    assert m.neyshabur == pytest.approx(
        _neyshabur_np(ws, w0s, B, 0.4, 9, h=11), rel=1e-12
    )
    # gamma enters both terms as 1/gamma
    m2 = U.network_measures(ws, w0s, x, gamma=0.8)
    assert (m2.bartlett, m2.neyshabur) == (
        pytest.approx(m.bartlett / 2, rel=1e-12),
        pytest.approx(m.neyshabur / 2, rel=1e-12),
    )
    with pytest.raises(ValueError):
        U.network_measures(ws, w0s, x[:0], 0.4)
