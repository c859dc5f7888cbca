"""Tests of gtlib.uniform.spheres, one section per public function: unit tests, checks against
independent reference implementations (marker ``reference``), bad input refused at the boundary
(``boundary``), equivalence of the engine with the loops it replaced (``engine``) and tests pinned
by mutation testing (``mutation``)."""

import math
import numpy as np
import pytest
import torch
from scipy import stats

from gtlib import uniform as U
from gtlib.uniform.margin import _member_logits
from gtlib.models import BatchedMLP

from tests.chapters.uniform.helpers import (
    NAN,
    _acc,
    _hand_margins,
    _nan_at,
    _np,
    _raises,
)


def _plane(point, seed):
    """The slice's orthonormal basis: the point's direction and a seeded Gaussian direction
    orthogonalized against it (the construction both references below rebuild)."""
    e1 = point / point.norm()
    v = torch.randn(
        point.shape[0],
        generator=torch.Generator().manual_seed(seed),
        dtype=point.dtype,
    )
    v = v - (v @ e1) * e1
    return e1, v / v.norm()


def _slice_ref(model, member, point, radii, half_width, resolution, seed):
    e1, e2 = _plane(point, seed)
    a = np.linspace(radii[0] - 0.3, radii[1] + 0.3, resolution)
    b = np.linspace(-half_width, half_width, resolution)
    f = np.zeros((resolution, resolution))
    ws = [w[member].detach().double() for w in model.weights]
    bs = [p[member].detach().double() for p in model.biases]
    for j, bj in enumerate(b):
        for k, ak in enumerate(a):
            h = (ak * e1 + bj * e2).double()
            for l, (w, c) in enumerate(zip(ws, bs)):
                h = w @ h + c
                if l < len(ws) - 1:
                    h = torch.relu(h)
            f[j, k] = float(h[1] - h[0])
    return a, b, f


def _one_unit_model(direction, logit_for_dot: int, threshold: float):
    """A 1-hidden-unit ReLU net: logit ``logit_for_dot`` is relu(direction . x), the other logit
    is the constant ``threshold``; it predicts ``logit_for_dot`` where direction . x > threshold."""
    d = len(direction)
    w1 = torch.tensor(direction, dtype=torch.float64).reshape(1, 1, d)
    w2 = torch.zeros(1, 2, 1, dtype=torch.float64)
    w2[0, logit_for_dot, 0] = 1.0
    b2 = torch.zeros(1, 2, dtype=torch.float64)
    b2[0, 1 - logit_for_dot] = threshold
    return BatchedMLP([w1, w2], [torch.zeros(1, 1, dtype=torch.float64), b2])


def _bulge_ref(model, member, point, label, radii, seed, resolution):
    e1, e2 = _plane(point, seed)
    r = radii[1] if label == 0 else radii[0]
    phis = np.linspace(-90.0, 90.0, resolution)
    m = model.member(member).double()
    same = []
    for p in phis:
        q = r * (math.cos(math.radians(p)) * e1 + math.sin(math.radians(p)) * e2)
        with torch.no_grad():
            same.append(int(m(q.double()[None]).argmax(1)) == label)
    c = resolution // 2
    if not same[c]:
        return 0.0
    lo = c
    while lo - 1 >= 0 and same[lo - 1]:
        lo -= 1
    hi = c
    while hi + 1 < resolution and same[hi + 1]:
        hi += 1
    return phis[hi] - phis[lo]


class _RecordingAxes:
    """Stands in for a matplotlib Axes and records what is drawn."""

    def __init__(self):
        self.calls = []
        self.xaxis = self.yaxis = None

    def __getattr__(self, name):
        if name in ("contourf", "contour", "plot"):
            return lambda *a, **k: self.calls.append((name, a, k))
        raise AttributeError(name)


# =================================================================================================
# uniform.sphere_data
# =================================================================================================
def test_sphere_bad_input():
    x, y = U.sphere_data(10, 5)
    with pytest.raises(ValueError):
        U.sphere_sprime(x * 1.1, y)  # off the spheres
    with pytest.raises(ValueError):
        U.sphere_sprime(x, y + 1)
    with pytest.raises(ValueError):
        U.sphere_data(10, 5, radii=(1.2, 1.0))
    with pytest.raises(TypeError):
        U.sphere_data(10.0, 5)


@pytest.mark.reference
def test_sphere_data_reproduces_its_generator_and_uses_its_radii():
    n, d, radii = 300, 7, (0.6, 2.5)
    x, y = U.sphere_data(n, d, radii, torch.Generator().manual_seed(8))
    g = torch.Generator().manual_seed(8)
    yr = torch.randint(0, 2, (n,), generator=g)
    z = torch.randn(n, d, generator=g)
    z = z / z.norm(dim=1, keepdim=True)
    assert torch.equal(y, yr)
    assert torch.allclose(
        x, z * torch.where(yr == 1, 2.5, 0.6)[:, None], rtol=1e-6, atol=1e-7
    )
    assert x.shape == (n, d) and y.dtype == torch.int64
    r = x.norm(dim=1)
    assert torch.allclose(r[y == 0], torch.tensor(0.6)) and torch.allclose(
        r[y == 1], torch.tensor(2.5)
    )
    # directions uniform on the sphere: every coordinate has mean 0 and E[z_k^2] = 1/d
    dirs = x / r[:, None]
    assert float(dirs.mean(0).abs().max()) < 5 / math.sqrt(n * d)
    np.testing.assert_allclose(_np((dirs**2).mean(0)), 1 / d, rtol=0.35)
    # no generator: the fixed seed 0
    x0, y0 = U.sphere_data(5, 3)
    xr, yr0 = U.sphere_data(5, 3, (1.0, 1.2), torch.Generator().manual_seed(0))
    assert torch.equal(x0, xr) and torch.equal(y0, yr0)
    assert not torch.equal(
        U.sphere_data(5, 3, generator=torch.Generator().manual_seed(1))[0], x0
    )
    # the size cap is n * d <= 1e9 values (refused before anything is drawn)
    with pytest.raises(ValueError):
        U.sphere_data(500_000_001, 2)
    assert U.sphere_data(600_000, 2)[0].shape == (600_000, 2)


@pytest.mark.boundary
def test_sphere_helpers_refuse_bad_labels_tolerance_seed_and_point():
    x, y = U.sphere_data(20, 5, generator=torch.Generator().manual_seed(0))
    _raises(TypeError, "y", U.sphere_sprime, x, y.float())
    for atol in (0.0, math.inf, True):
        with pytest.raises((TypeError, ValueError), match="atol"):
            U.sphere_sprime(x, y, atol=atol)
    _raises(ValueError, "n", U.sphere_data, 10**12, 5)
    model = BatchedMLP.init([0], 5, 8, 1, 2)
    _raises(ValueError, "seed", U.boundary_slice, model, 0, x[0], seed=-1)
    _raises(TypeError, "member", U.boundary_slice, model, None, x[0])
    _raises(ValueError, "point", U.bulge_width, model, 0, _nan_at(x[0]), 0)
    _raises(TypeError, "label", U.bulge_width, model, 0, x[0], True)
    _raises(ValueError, "label", U.bulge_width, model, 0, x[0], 2)
    _raises(TypeError, "half_angle_deg", U.cap_fraction, 5, True)
    _raises(ValueError, "half_angle_deg", U.cap_fraction, 5, 400.0)


# =================================================================================================
# uniform.sphere_sprime
# =================================================================================================
def test_sphere_data_and_sprime():
    x, y = U.sphere_data(500, 20, (1.0, 1.2), torch.Generator().manual_seed(0))
    r = x.norm(dim=1)
    assert torch.allclose(r[y == 0], torch.tensor(1.0)) and torch.allclose(
        r[y == 1], torch.tensor(1.2)
    )
    assert 150 < int(y.sum()) < 350
    xs, ys = U.sphere_sprime(x, y, (1.0, 1.2))
    assert torch.equal(ys, 1 - y)  # labels flipped
    rs = xs.norm(dim=1)  # on the other sphere
    assert torch.allclose(rs[ys == 0], torch.tensor(1.0)) and torch.allclose(
        rs[ys == 1], torch.tensor(1.2)
    )
    cos = (xs * x).sum(1) / (rs * r)  # same direction
    assert torch.allclose(cos, torch.ones_like(cos), atol=1e-6)
    x2, y2 = U.sphere_sprime(xs, ys, (1.0, 1.2))  # an involution
    assert torch.allclose(x2, x, atol=1e-6) and torch.equal(y2, y)


@pytest.mark.reference
def test_sphere_sprime_by_hand_with_its_radii_and_tolerance():
    radii = (2.0, 3.0)
    x = torch.tensor(
        [[2.0, 0.0], [0.0, -3.0], [1.2, 1.6], [1.8, -2.4]], dtype=torch.float64
    )
    y = torch.tensor([0, 1, 0, 1])
    xs, ys = U.sphere_sprime(x, y, radii)
    assert ys.tolist() == [1, 0, 1, 0]
    assert xs.dtype == torch.float64
    assert xs.tolist() == [
        pytest.approx([3.0, 0.0]),
        pytest.approx([0.0, -2.0]),
        pytest.approx([1.8, 2.4]),
        pytest.approx([1.2, -1.6]),
    ]
    # atol: a point 5e-4 off its sphere is refused at the default 1e-4 and accepted at 1e-3
    off = x.clone()
    off[0, 0] = 2.0005
    with pytest.raises(ValueError):
        U.sphere_sprime(off, y, radii)
    assert U.sphere_sprime(off, y, radii, atol=1e-3)[0][
        0, 0
    ].item() == pytest.approx(3.00075)
    with pytest.raises(ValueError):  # the right radii, but for the other label
        U.sphere_sprime(x, 1 - y, radii)
    with pytest.raises(ValueError):
        U.sphere_sprime(x, y[:3], radii)


# =================================================================================================
# uniform.SpheresConfig
# =================================================================================================
def test_config_bad_input():
    with pytest.raises(ValueError):
        U.CorruptionConfig(levels=(0.5, 0.2)).validate()
    with pytest.raises(ValueError):
        U.MarginSweepConfig(sizes=(100,)).validate()
    with pytest.raises(TypeError):
        U.SpheresConfig(width=10.5).validate()
    with pytest.raises(ValueError):
        U.SpheresConfig(radii=(1.0, 1.0)).validate()


# =================================================================================================
# uniform.spheres_sweep
# =================================================================================================
@pytest.mark.reference
def test_spheres_sweep_reports_what_its_members_do():
    cfg = U.SpheresConfig(
        d=5,
        radii=(0.9, 1.3),
        sizes=(16, 32),
        n_test=50,
        width=16,
        lr=0.5,
        batch_size=8,
        gamma=0.5,
        margin_fraction=0.9,
        max_epochs=60,
    )
    seed = 3
    r = U.spheres_sweep(cfg, seed=seed)
    g = torch.Generator().manual_seed(seed * 7919 + 13)
    x, y = U.sphere_data(32, 5, (0.9, 1.3), g)
    xt, yt = U.sphere_data(50, 5, (0.9, 1.3), g)
    assert torch.equal(r.x_train, x) and torch.equal(r.y_train, y)
    fresh = BatchedMLP.init([370, 371], 5, 16, 1, 2, bias=True)
    model = r.model
    with torch.no_grad():
        assert r.init_test_error == pytest.approx(
            (1 - _acc(fresh(xt), yt)).tolist(), abs=1e-7
        )
        assert r.test_error == pytest.approx(
            (1 - _acc(model(xt), yt)).tolist(), abs=1e-7
        )
        xp, yp = U.sphere_sprime(xt, yt, (0.9, 1.3))
        assert r.projected_test_error == pytest.approx(
            (1 - _acc(model(xp), yp)).tolist(), abs=1e-7
        )
        for i, n in enumerate(cfg.sizes):
            logits = _member_logits(model, i, x[:n])
            assert r.train_error[i] == pytest.approx(
                1 - float(_acc(logits, y[:n])), abs=1e-7
            )
            xs = x[:n] * torch.where(y[:n] == 1, 0.9 / 1.3, 1.3 / 0.9)[:, None]
            assert r.sprime_error[i] == pytest.approx(
                1 - float(_acc(_member_logits(model, i, xs), 1 - y[:n])), abs=1e-7
            )
            if r.met_margin[i]:
                assert np.mean(_hand_margins(logits, y[:n]) >= 0.5) >= 0.9
            assert r.epochs[i] * n / 8 == pytest.approx(round(r.epochs[i] * n / 8))
    assert r.sizes == [16, 32] and any(r.met_margin)
    # another seed: other data, other initialization
    r4 = U.spheres_sweep(
        U.SpheresConfig(
            d=5,
            radii=(0.9, 1.3),
            sizes=(16, 32),
            n_test=50,
            width=16,
            batch_size=8,
            max_epochs=1,
        ),
        seed=4,
    )
    assert (
        not torch.equal(r4.x_train, r.x_train)
        and r4.init_test_error != r.init_test_error
    )
    # max_epochs = 1 cuts training at one epoch of each member (the default margin 4 is far)
    assert r4.epochs == [1.0, 1.0] and r4.met_margin == [False, False]


# =================================================================================================
# uniform.boundary_slice
# =================================================================================================
def test_boundary_slice_matches_the_member():
    model = BatchedMLP.init([0, 1], 6, 16, 1, 2)
    x, _ = U.sphere_data(3, 6)
    a, b, f = U.boundary_slice(model, 1, x[0], resolution=11)
    assert f.shape == (11, 11) and a.shape == (11,) and b.shape == (11,)
    # the centre row (b = 0) runs along the ray through x[0]
    with torch.no_grad():
        pts = torch.tensor(a, dtype=x.dtype)[:, None] * (x[0] / x[0].norm())
        ref = _member_logits(model, 1, pts)
    assert np.allclose(f[5], (ref[:, 1] - ref[:, 0]).numpy(), atol=1e-5)
    with pytest.raises(ValueError):
        U.boundary_slice(model, 2, x[0])


@pytest.mark.reference
def test_boundary_slice_against_a_pointwise_reference():
    model = BatchedMLP.init([21, 22], 4, 12, 1, 2).double()
    point = torch.tensor([0.3, -1.1, 0.5, 0.2], dtype=torch.float64)
    radii = (0.8, 1.5)
    for resolution, seed, hw in ((7, 3, 0.45), (6, 0, 0.6)):
        a, b, f = U.boundary_slice(
            model, 1, point, radii, half_width=hw, resolution=resolution, seed=seed
        )
        ra, rb, rf = _slice_ref(model, 1, point, radii, hw, resolution, seed)
        np.testing.assert_allclose(a, ra, rtol=1e-12)
        np.testing.assert_allclose(b, rb, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(f, rf, rtol=1e-9, atol=1e-12)
        assert (a[0], a[-1], b[0], b[-1]) == (
            pytest.approx(0.5),
            pytest.approx(1.8),
            pytest.approx(-hw),
            pytest.approx(hw),
        )
    # the seed picks the direction e2 (rows away from b = 0 change), the member the network
    f3 = U.boundary_slice(model, 1, point, radii, 0.45, 7, seed=3)[2]
    f4 = U.boundary_slice(model, 1, point, radii, 0.45, 7, seed=4)[2]
    assert not np.allclose(f3[0], f4[0]) and np.allclose(f3[3], f4[3])
    f0 = U.boundary_slice(model, 0, point, radii, 0.45, 7, seed=3)[2]
    assert not np.allclose(f0, f3)
    # defaults: resolution 161, half width 0.6, radii (1, 1.2)
    a, b, f = U.boundary_slice(model, 0, point)
    assert (
        f.shape == (161, 161)
        and b[-1] == pytest.approx(0.6)
        and a[-1] == pytest.approx(1.5)
    )


# =================================================================================================
# uniform.slice_points
# =================================================================================================
@pytest.mark.reference
def test_slice_points_against_a_reference_search():
    d, radii = 4, (1.0, 1.4)
    x, y = U.sphere_data(12, d, radii, torch.Generator().manual_seed(2))  # float32
    # a member that says "outer sphere" everywhere: the S' image of a label-1 point (moved to the
    # inner sphere, label 0) is misclassified, that of a label-0 point is not; no fresh point has
    # both itself and its projection right
    const = BatchedMLP.init([0, 1], d, 3, 1, 2)
    with torch.no_grad():
        for w in const.weights:
            w.zero_()
        for b in const.biases:
            b.zero_()
        const.biases[-1][1] = torch.tensor([0.0, 1.0])
    res = U.SpheresResult(
        sizes=[6, 12],
        test_error=[0.5, 0.5],
        sprime_error=[0.5, 0.5],
        train_error=[0.5, 0.5],
        met_margin=[False, False],
        epochs=[1.0, 1.0],
        model=const,
        x_train=x,
        y_train=y,
    )
    first1 = int((y == 1).nonzero()[0])
    tp, fp = U.slice_points(res, 1, radii)
    assert torch.equal(tp, x[first1]) and fp is None
    # candidates: only the first `candidates` training points are searched
    tp, _ = U.slice_points(res, 1, radii, candidates=first1)
    assert tp is None
    # a random member, against the search written out
    model = BatchedMLP.init([4, 5], d, 16, 1, 2)
    res.model = model
    for member, seed, cand in ((0, 0, 200), (1, 3, 9)):
        k = min(cand, res.sizes[member])
        xs, ys = U.sphere_sprime(x[:k], y[:k], radii)
        m = model.member(member)
        with torch.no_grad():
            bad = [
                j for j in range(k) if int(m(xs[j : j + 1]).argmax()) != int(ys[j])
            ]
            xf, yf = U.sphere_data(
                cand, d, radii, torch.Generator().manual_seed(seed + 4242)
            )
            xp, yp = U.sphere_sprime(xf, yf, radii)
            good = [
                j
                for j in range(cand)
                if int(m(xf[j : j + 1]).argmax()) == int(yf[j])
                and int(m(xp[j : j + 1]).argmax()) == int(yp[j])
            ]
        tp, fp = U.slice_points(res, member, radii, seed=seed, candidates=cand)
        assert (tp is None) == (not bad) and (fp is None) == (not good)
        if bad:
            assert torch.equal(tp, x[bad[0]])
        if good:
            assert torch.allclose(fp, xf[good[0]])
    with pytest.raises(ValueError):
        U.slice_points(res, 2, radii)


# =================================================================================================
# uniform.bulge_width
# =================================================================================================
@pytest.mark.reference
def test_bulge_width_by_hand():
    e1 = [0.6, 0.8, 0.0]
    # label-0 point on the inner sphere (r0 = 1): the member predicts 0 on the outer circle
    # (r1 = 1.2) where 1.2 cos(phi) > 1.2 cos(35.1 deg): |phi| <= 35 deg on the 0.25-deg grid
    m0 = _one_unit_model(e1, 0, 1.2 * math.cos(math.radians(35.1)))
    p0 = torch.tensor(e1, dtype=torch.float64)
    assert U.bulge_width(m0, 0, p0, 0) == pytest.approx(70.0, abs=1e-9)
    # another resolution: 181 angles, one per degree: |phi| <= 35 again
    assert U.bulge_width(m0, 0, p0, 0, resolution=181) == pytest.approx(
        70.0, abs=1e-9
    )
    # 13 angles, 15 degrees apart: |phi| <= 30
    assert U.bulge_width(m0, 0, p0, 0, resolution=13) == pytest.approx(
        60.0, abs=1e-9
    )
    # label-1 point on the outer sphere, other circle r0 = 1: predicts 1 where cos(phi) > cos 20.1
    m1 = _one_unit_model(e1, 1, math.cos(math.radians(20.1)))
    assert U.bulge_width(m1, 0, 1.2 * p0, 1) == pytest.approx(40.0, abs=1e-9)
    # radii: with (1, 2) the label-0 point walks the circle of radius 2, where 2 cos(phi) > 1.2
    # cos(35.1 deg) for |phi| < 60.6 deg: 60.5 on the grid
    assert U.bulge_width(m0, 0, p0, 0, radii=(1.0, 2.0)) == pytest.approx(
        121.0, abs=1e-9
    )
    # the label everywhere on the walked half circle: both ends reached, 180 degrees
    everywhere = _one_unit_model(e1, 0, -1.0)
    assert U.bulge_width(everywhere, 0, p0, 0) == pytest.approx(180.0, abs=1e-9)
    # the projection itself classified correctly (as the other label): no bulge at all
    assert U.bulge_width(m1, 0, p0, 0) == 0.0
    with pytest.raises(ValueError):
        U.bulge_width(m0, 0, p0, 2)
    with pytest.raises(ValueError):
        U.bulge_width(m0, 1, p0, 0)


@pytest.mark.reference
def test_bulge_width_against_a_reference_walk_on_a_random_member():
    model = BatchedMLP.init([31, 32], 3, 24, 1, 2).double()
    with (
        torch.no_grad()
    ):  # tilt member 1 towards class 0: a bulge of class 1 remains
        model.biases[-1][1] += torch.tensor([0.6, 0.0], dtype=torch.float64)
    point = torch.tensor([0.2, -0.9, 0.4], dtype=torch.float64)
    point = 1.3 * point / point.norm()  # a label-1 point on the outer sphere
    widths = {}
    for seed in (0, 1):
        got = U.bulge_width(
            model, 1, point, 1, radii=(1.0, 1.3), seed=seed, resolution=91
        )
        ref = _bulge_ref(model, 1, point, 1, (1.0, 1.3), seed, 91)
        assert got == pytest.approx(ref, abs=1e-9)
        widths[seed] = got
    # neither end of the walk is reached, and the seed (the direction e2) matters
    assert 20 < widths[1] < widths[0] < 170


# =================================================================================================
# uniform.cap_fraction
# =================================================================================================
def test_linear_randomization_is_the_cnn_experiment_with_a_linear_model():
    cfg = U.CNNRandomizationConfig(
        n_train=200,
        n_test=50,
        lr=0.1,
        batch_size=20,
        max_steps=300,
        check_every=50,
        true_runs=2,
        random_runs=2,
    )
    r = U.linear_randomization(cfg, seed=0)
    assert r.labels == ["true", "true", "random", "random"] and len(r.stop_step) == 4
    # 410 parameters cannot fit 200 random labels: the random members run the whole budget
    assert r.stop_step[2:] == [300, 300] and not any(r.reached_target[2:])
    assert max(r.train_acc[2:]) < 0.9
    assert all(0 <= e <= 1 for e in r.test_error + r.init_test_error)
    # with more parameters than points the same model fits any labelling and stops at a check
    tiny = U.CNNRandomizationConfig(
        n_train=12,
        n_test=20,
        lr=0.5,
        batch_size=12,
        max_steps=4000,
        check_every=10,
        true_runs=2,
        random_runs=1,
    )
    t = U.linear_randomization(tiny, seed=0)
    assert (
        all(t.reached_target)
        and max(t.stop_step) < 4000
        and min(t.train_acc) >= 0.99
    )


def test_realized_margin_known_answers():
    # two classes; the margin of point i is logits[i, y_i] - logits[i, other]: 5 1 3 -2 4
    y = torch.tensor([0, 0, 0, 0, 1])
    logits = torch.tensor([[5.0, 0], [1, 0], [3, 0], [-2, 0], [0, 4]])
    assert (
        U.realized_margin(logits, y, 1.0) == -2.0
    )  # every point: the smallest margin
    assert U.realized_margin(logits, y, 0.8) == 1.0  # 4 of 5 points have margin >= 1
    assert U.realized_margin(logits, y, 0.6) == 3.0  # 3 of 5
    assert U.realized_margin(logits, y, 0.61) == 1.0  # 3.05 points: 4 must clear it
    # the stop rule at gamma = the realized margin is met, and just above it is not
    from gtlib.engine import stop_rule

    for f in (0.6, 0.61, 0.8):
        g = U.realized_margin(logits, y, f)
        assert bool(stop_rule(margin_gamma=g, margin_fraction=f)(logits, y))
        assert not bool(
            stop_rule(margin_gamma=g + 1e-3, margin_fraction=f)(logits, y)
        )
    with pytest.raises(ValueError):
        U.realized_margin(logits, y[:3])


def test_bulge_and_cap():
    assert U.cap_fraction(3, 60.0) == pytest.approx(0.25)  # (1 - cos 60) / 2
    assert U.cap_fraction(2, 90.0) == pytest.approx(0.5)
    assert U.cap_fraction(200, 15.0) < 1e-100
    with pytest.raises(ValueError):
        U.cap_fraction(3, 120.0)
    # a network predicting class 1 everywhere: a point of class 1 (outer sphere) keeps its
    # label all around the inner circle (width 180 degrees); a class-0 point gets 0 (its
    # projection, on the outer sphere, is classified correctly)
    model = BatchedMLP.init([0], 6, 4, 1, 2)
    with torch.no_grad():
        for w in model.weights:
            w.zero_()
        model.biases[-1][0] = torch.tensor([0.0, 1.0])
    x = torch.tensor([1.2, 0, 0, 0, 0, 0])
    assert U.bulge_width(model, 0, x, 1) == pytest.approx(180.0)
    assert U.bulge_width(model, 0, x / 1.2, 0) == 0.0


@pytest.mark.reference
def test_cap_fraction_closed_forms_scipy_and_monte_carlo():
    # d = 2: an arc of 2 theta out of 2 pi; d = 3: (1 - cos theta)/2; d = 4: (theta - sin cos)/pi
    for t in (0.0, 12.5, 37.0, 71.0, 90.0):
        th = math.radians(t)
        assert U.cap_fraction(2, t) == pytest.approx(th / math.pi, abs=1e-14)
        assert U.cap_fraction(3, t) == pytest.approx(
            (1 - math.cos(th)) / 2, abs=1e-14
        )
        assert U.cap_fraction(4, t) == pytest.approx(
            (th - math.sin(th) * math.cos(th)) / math.pi, abs=1e-14
        )
    for d in (5, 10, 40):  # a hemisphere is half of every sphere
        assert U.cap_fraction(d, 90) == pytest.approx(0.5, abs=1e-14)
        assert U.cap_fraction(d, 0) == 0.0
        assert U.cap_fraction(d, 35.0) == pytest.approx(
            0.5
            * stats.beta.cdf(math.sin(math.radians(35.0)) ** 2, (d - 1) / 2, 0.5),
            rel=1e-10,
        )
    # Monte Carlo in R^7 at 50 degrees: 400 000 directions, s.e. about 6e-4
    z = np.random.default_rng(3).standard_normal((400_000, 7))
    mc = np.mean(z[:, 0] / np.linalg.norm(z, axis=1) >= math.cos(math.radians(50)))
    assert U.cap_fraction(7, 50.0) == pytest.approx(mc, abs=3e-3)
    assert U.cap_fraction(7, 50.0) != pytest.approx(
        U.cap_fraction(8, 50.0), rel=1e-2
    )
    with pytest.raises(ValueError):
        U.cap_fraction(3, -1.0)
    with pytest.raises(ValueError):
        U.cap_fraction(3, 90.5)
    with pytest.raises((TypeError, ValueError)):
        U.cap_fraction(1, 30.0)


# =================================================================================================
# uniform.plot_slice
# =================================================================================================
@pytest.mark.reference
def test_plot_slice_draws_the_regions_boundary_spheres_point_and_projection():
    a = np.linspace(0.5, 1.8, 6)
    b = np.linspace(-0.9, 0.9, 5)  # reaches past the inner radius: arcs clipped
    f = np.outer(b, np.ones(6)) + (a - 1.1)[None, :]
    ax = _RecordingAxes()
    U.plot_slice(ax, a, b, f, (0.8, 1.5), 0.8, colors=("#000001", "#000002"))
    kinds = [c[0] for c in ax.calls]
    assert kinds == ["contourf", "contour", "plot", "plot", "plot", "plot"]
    _, args, kw = ax.calls[0]
    assert np.array_equal(args[2], f > 0) and kw["levels"] == [-0.5, 0.5, 1.5]
    assert kw["colors"] == ["#000001", "#000002"]
    _, args, kw = ax.calls[1]
    assert np.array_equal(args[2], f) and kw["levels"] == [0]
    for call, r in zip(ax.calls[2:4], (0.8, 1.5)):
        xs, ys = call[1][0], call[1][1]
        assert np.allclose(
            xs, np.sqrt(np.clip(r**2 - b**2, 0, None))
        ) and np.array_equal(ys, b)
    assert ax.calls[2][1][0][0] == 0.0 and ax.calls[3][1][0][0] > 0
    assert ax.calls[4][1][:2] == ([0.8], [0]) and ax.calls[4][1][2] == "ko"
    assert ax.calls[5][1][:2] == ([pytest.approx(1.5)], [0])  # r0 + r1 - 0.8
    assert ax.calls[5][1][2] == "kx"
    ax2 = _RecordingAxes()
    U.plot_slice(ax2, a, b, f, (0.8, 1.5), 1.5)
    assert ax2.calls[5][1][0] == [pytest.approx(0.8)]
    assert ax2.calls[0][2]["colors"] == ["#56B4E9", "#E69F00"]
    with pytest.raises(ValueError):
        U.plot_slice(_RecordingAxes(), a, b, f.T, (0.8, 1.5), 0.8)


# =================================================================================================
# uniform.log_ticks
# =================================================================================================
@pytest.mark.reference
def test_log_ticks_on_either_axis():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    try:
        ax.set_xscale("log")
        U.log_ticks(ax, [250, 1000, 4000])
        assert list(ax.xaxis.get_major_locator().tick_values(1, 1e4)) == [
            250,
            1000,
            4000,
        ]
        assert ax.xaxis.get_major_formatter().seq == ["250", "1000", "4000"]
        assert list(ax.xaxis.get_minor_locator()()) == []
        assert ax.yaxis.get_major_formatter()(0.3, 0) == "0.3"
        assert ax.yaxis.get_major_formatter()(0.1234, 0) == "0.12"
        assert ax.yaxis.get_minor_formatter()(0.0456, 0) == "0.046"
        fig2, ay = plt.subplots()
        U.log_ticks(ay, [0.5, 2.5], axis="y")
        assert ay.yaxis.get_major_formatter().seq == ["0.5", "2.5"]
        assert ay.xaxis.get_major_formatter()(1234.0, 0) == "1.2e+03"
        plt.close(fig2)
        for bad in ([], [1.0, -2.0], [[1.0, 2.0]], [1.0, float("nan")]):
            with pytest.raises(ValueError):
                U.log_ticks(ax, bad)
    finally:
        plt.close(fig)


@pytest.mark.boundary
def test_plot_helpers_refuse_bad_input():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    a = b = np.linspace(-1, 1, 5)
    f = np.zeros((5, 5))
    for r in (0.0, -1.0, NAN, math.inf, True):
        with pytest.raises((TypeError, ValueError), match="point_radius"):
            U.plot_slice(ax, a, b, f, (1.0, 1.2), r)
    _raises(TypeError, "ax", U.plot_slice, None, a, b, f, (1.0, 1.2), 1.0)
    _raises(
        ValueError, "f", U.plot_slice, ax, a, b, np.zeros((0, 5)), (1.0, 1.2), 1.0
    )
    _raises(ValueError, "values", U.log_ticks, ax, [])
    _raises(ValueError, "values", U.log_ticks, ax, [0, 10])
    _raises(TypeError, "values", U.log_ticks, ax, None)
    for axis in ("z", 1, None):
        with pytest.raises((TypeError, ValueError), match="axis"):
            U.log_ticks(ax, [1, 10], axis=axis)
    U.log_ticks(ax, np.array([1, 10, 100]))
    plt.close(fig)
