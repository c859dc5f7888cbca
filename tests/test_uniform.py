"""Unit tests of gtlib.uniform: norms and bounds, power-law fits, the subset trainer, the linear
construction and the hyperspheres (known answers, invariances, tiny cases, bad input)."""
import math

import numpy as np
import pytest
import torch

from gtlib.ensemble import BatchedMLP
from gtlib.train import TrainConfig
from gtlib import uniform as U


# -- norms -------------------------------------------------------------------------------------
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
    assert ref[1] / ref[0] > 0.98                 # nearly degenerate: the hard case
    assert U.spectral_norm(w).item() == pytest.approx(ref[0].item(), rel=1e-6)
    assert U.spectral_norm(w.double()).item() == pytest.approx(ref[0].item(), rel=1e-12)


def test_spectral_norm_known_cases():
    w = torch.diag(torch.tensor([3.0, -7.0, 2.0]))
    assert U.spectral_norm(w).item() == pytest.approx(7.0, rel=1e-5)
    # rank one: ||a b^T|| = ||a|| ||b||
    a, b = torch.tensor([1.0, 2.0, 2.0]), torch.tensor([3.0, 4.0])
    assert U.spectral_norm(torch.outer(a, b)).item() == pytest.approx(15.0, rel=1e-5)


def test_norm_21_and_distance():
    w = torch.tensor([[3.0, 4.0], [0.0, 1.0], [6.0, 8.0]])   # rows have norms 5, 1, 10
    assert U.norm_21(w).item() == pytest.approx(16.0)
    w0 = torch.zeros(3, 2)
    d = U.distance_from_init([w, torch.ones(1, 3)], [w0, torch.ones(1, 3)])
    assert d.item() == pytest.approx(math.sqrt(25 + 1 + 100))


def test_bounds_by_hand_and_scaling():
    # one layer W = 2 I_2, init 0: ||W||_2 = 2, ||W^T||_{2,1} = 4, ||W||_F^2 = 8
    w, w0 = [2 * torch.eye(2)], [torch.zeros(2, 2)]
    # Bartlett et al.: ||X||_F / (gamma n) * 2 * ((4 / 2)^(2/3))^(3/2) with ||X||_F = 2, n = 4
    bft = U.bartlett_bound(w, w0, data_norm=2.0, gamma=1.0, n=4)
    assert bft == pytest.approx(2 / 4 * 2 * ((4 / 2) ** (2 / 3)) ** 1.5)          # = 2
    ney = U.neyshabur_bound(w, w0, input_norm=1.0, gamma=1.0, n=4)
    assert ney == pytest.approx(math.sqrt(1 * 1 * 2 * math.log(2) * 4 * (8 / 4) / 4))
    # invariances: proportional to the input norm / gamma; Bartlett's to 1/n at fixed ||X||_F,
    # Neyshabur's to 1/sqrt(n)
    g = torch.Generator().manual_seed(1)
    ws = [torch.randn(6, 4, generator=g), torch.randn(3, 6, generator=g)]
    w0s = [torch.randn(6, 4, generator=g), torch.randn(3, 6, generator=g)]
    b0 = U.bartlett_bound(ws, w0s, 1.0, 1.0, 100)
    assert U.bartlett_bound(ws, w0s, 3.0, 2.0, 100) == pytest.approx(1.5 * b0, rel=1e-5)
    assert U.bartlett_bound(ws, w0s, 1.0, 1.0, 400) == pytest.approx(0.25 * b0, rel=1e-5)
    n0 = U.neyshabur_bound(ws, w0s, 1.0, 1.0, 100)
    assert U.neyshabur_bound(ws, w0s, 3.0, 2.0, 100) == pytest.approx(1.5 * n0, rel=1e-5)
    assert U.neyshabur_bound(ws, w0s, 1.0, 1.0, 400) == pytest.approx(0.5 * n0, rel=1e-5)
    # network_measures takes the inputs: ||X||_F for Bartlett, the largest norm for Neyshabur
    x = torch.zeros(100, 4)
    x[:, 0] = 1.0
    x[0, 0] = 3.0                                   # max norm 3, ||X||_F = sqrt(99 + 9)
    m = U.network_measures(ws, w0s, x, 1.0)
    assert m.spectral_product == pytest.approx(np.prod(m.spectral))
    assert m.bartlett == pytest.approx(U.bartlett_bound(ws, w0s, math.sqrt(108), 1.0, 100))
    assert m.neyshabur == pytest.approx(U.neyshabur_bound(ws, w0s, 3.0, 1.0, 100))


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


# -- power-law fits ----------------------------------------------------------------------------
def test_power_law_fit_exact_and_noisy():
    x = np.array([100, 200, 400, 800, 1600])
    fit = U.power_law_fit(x, 3.0 * x ** -0.35)
    assert fit.slope == pytest.approx(-0.35)
    assert fit.slope_se == pytest.approx(0.0, abs=1e-9)
    assert fit(50) == pytest.approx(3.0 * 50 ** -0.35)
    rng = np.random.default_rng(0)
    slopes = []
    for _ in range(200):
        y = 2.0 * x ** 0.6 * np.exp(rng.normal(0, 0.05, len(x)))
        f = U.power_law_fit(x, y)
        slopes.append(f.slope)
        assert abs(f.slope - 0.6) < 6 * 0.05 / np.sqrt(((np.log(x) - np.log(x).mean()) ** 2).sum())
    assert np.mean(slopes) == pytest.approx(0.6, abs=0.01)
    assert math.isnan(U.power_law_fit([1, 2], [1, 4]).slope_se)


def test_power_law_fit_bad_input():
    with pytest.raises(ValueError):
        U.power_law_fit([1], [1])
    with pytest.raises(ValueError):
        U.power_law_fit([1, 2, 3], [1, 2])
    with pytest.raises(ValueError):
        U.power_law_fit([1, 2, 3], [1, 0, 2])
    with pytest.raises(ValueError):
        U.power_law_fit([2, 2, 2], [1, 2, 3])


# -- the subset trainer ------------------------------------------------------------------------
def _tiny_problem(n=32, d=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    y = (x[:, 0] > 0).long()
    return x, y


def test_train_on_subsets_each_member_fits_its_prefix():
    x, y = _tiny_problem()
    y_bad = y.clone()
    y_bad[8:] = 1 - y_bad[8:]          # member 0 never sees these labels
    model = BatchedMLP.init([0, 1], 5, 32, 1, 2)
    cfg = TrainConfig(lr=0.5, batch_size=4, target_train_acc=1.0)
    run = U.train_on_subsets(model, x, y_bad, [8, 32], cfg, check_every_epochs=1, max_epochs=500)
    assert run.met_rule == [True, True]
    with torch.no_grad():
        assert (U.member_logits(model, 0, x[:8]).argmax(1) == y_bad[:8]).all()
        assert (U.member_logits(model, 1, x).argmax(1) == y_bad).all()
    assert all(e > 0 for e in run.epochs)


def test_train_on_subsets_frozen_member_keeps_weights():
    x, y = _tiny_problem()
    model = BatchedMLP.init([3, 4], 5, 16, 1, 2)
    before = [w.detach().clone() for w in model.weights]
    # any margin reached by 0% of points is always met: both members stop at step 0, untouched
    cfg = TrainConfig(lr=0.5, batch_size=4, margin_gamma=1.0, margin_fraction=0.0)
    run = U.train_on_subsets(model, x, y, [8, 16], cfg)
    assert run.stop_step == [0, 0] and run.met_rule == [True, True]
    for w, w0 in zip(model.weights, before):
        assert torch.equal(w.detach(), w0)


def test_train_on_subsets_bad_input():
    x, y = _tiny_problem()
    model = BatchedMLP.init([0, 1], 5, 8, 1, 2)
    ok = TrainConfig(lr=0.1, batch_size=4, target_train_acc=1.0)
    with pytest.raises(ValueError):
        U.train_on_subsets(model, x, y, [8, 64], ok)
    with pytest.raises(ValueError):
        U.train_on_subsets(model, x, y, [8], ok)
    with pytest.raises(ValueError):
        U.train_on_subsets(model, x, y, [8, 16], TrainConfig(lr=0.1, momentum=0.9, target_train_acc=1.0))
    with pytest.raises(ValueError):
        U.train_on_subsets(model, x, y, [8, 16], TrainConfig(lr=0.1, batch_size=4))
    with pytest.raises(TypeError):
        U.train_on_subsets(model, x, y, [8, 16.5], ok)


# -- the linear construction -------------------------------------------------------------------
def test_linear_construction_by_hand():
    # m = 2, K = 1 (u = 1/sqrt(2)), D = 2: x1 = 2 y u = y sqrt(2)
    y = torch.tensor([1.0, -1.0], dtype=torch.float64)
    x1 = (2 * y / math.sqrt(2))[:, None]
    x2 = torch.tensor([[3.0, 0.0], [0.0, 4.0]], dtype=torch.float64)
    w1, w2 = U.one_step_gd(x1, x2, y)
    assert w1.tolist() == pytest.approx([2 * math.sqrt(2)])         # sum y_i x1_i = 2 * sqrt(2)
    assert w2.tolist() == pytest.approx([3.0, -4.0])                # x2_1 - x2_2
    # on S: y h = 4 + ||x2_i||^2 > 0 (the cross terms vanish: x2_1 is orthogonal to x2_2)
    assert U.linear_predict(w1, w2, x1, x2).tolist() == [1.0, -1.0]
    # on S': y h = 4 - ||x2_i||^2 = 4 - 9 and 4 - 16, both negative: every point misclassified
    s1, s2, sy = U.linear_sprime(x1, x2, y)
    assert torch.equal(s2, -x2) and torch.equal(sy, y)
    yh = sy * (s1 @ w1 + s2 @ w2)
    assert yh.tolist() == pytest.approx([4 - 9, 4 - 16])


def test_linear_errors_exact_test_error_matches_monte_carlo():
    cfg = U.LinearConstruction(K=2, D=300, m=20)
    x1, x2, y = U.linear_data(cfg, seed=3)
    w1, w2 = U.one_step_gd(x1, x2, y)
    assert float(w1 @ cfg.u) * cfg.signal == pytest.approx(4.0)     # 2 m ||u||^2 * 2 = 4
    g = torch.Generator().manual_seed(9)
    t1, t2, ty = cfg.sample(200_000, g)
    mc = float((U.linear_predict(w1, w2, t1, t2) != ty).double().mean())
    e = U.linear_errors(cfg, seed=3)
    assert e.test == pytest.approx(mc, abs=0.005)
    assert e.uc_lower_bound == pytest.approx(max(0.0, e.sprime - e.test))


def test_linear_large_D_generalizes_but_fails_on_sprime():
    e = U.linear_errors(U.LinearConstruction(K=1, D=20_000, m=32), seed=0)
    assert e.train == 0.0 and e.test < 0.01 and e.sprime == 1.0


def test_linear_fresh_sample_is_not_sprime():
    # an independent sample has the law of S' but was not built from S: its error is near the
    # test error, far from the S' error
    e = U.linear_errors(U.LinearConstruction(K=1, D=20_000, m=64), seed=1)
    assert e.sprime == 1.0 and e.fresh <= 0.1


def test_nearest_neighbour_predict_known_answers():
    xt = torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 3.0]])
    yt = torch.tensor([5, 7, 9])
    x = torch.tensor([[0.1, 0.1], [0.9, -0.2], [0.2, 2.0], [0.5, 0.0]])
    # the last point is equidistant from the first two: the earlier training point wins
    assert U.nearest_neighbour_predict(xt, yt, x).tolist() == [5, 7, 9, 5]
    # every training point is its own nearest neighbour; block size does not matter
    assert torch.equal(U.nearest_neighbour_predict(xt, yt, xt, chunk=1), yt)
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(50, 4, generator=g), torch.randn(30, 4, generator=g)
    lab = torch.randint(0, 3, (50,), generator=g)
    brute = lab[torch.cdist(b, a).argmin(1)]
    assert torch.equal(U.nearest_neighbour_predict(a, lab, b, chunk=7), brute)
    # a rotation and a shift of every point leave the prediction unchanged
    q, _ = torch.linalg.qr(torch.randn(4, 4, generator=g))
    assert torch.equal(U.nearest_neighbour_predict(a @ q + 3, lab, b @ q + 3), brute)


def test_linear_nn_errors_on_the_same_draw():
    cfg = U.LinearConstruction(K=1, D=2000, m=16)
    r = U.linear_nn_errors(cfg, seed=3, n_test=400)
    x1, x2, y = U.linear_data(cfg, 3)
    xs = torch.cat([x1, -x2], 1)
    pred = U.nearest_neighbour_predict(torch.cat([x1, x2], 1), y, xs)
    assert r.sprime == pytest.approx(float((pred != y).double().mean()))
    # in the noise-dominated regime the 1-NN learner is near chance on fresh points
    assert 0.3 <= r.test <= 0.7
    assert U.linear_nn_errors(cfg, seed=3, n_test=400) == r


def test_corruption_nn_test_error_uses_the_experiment_labels():
    from gtlib.data import corrupt_labels, mnist1d
    cfg = U.CorruptionConfig(n_train=200, n_test=100, levels=(0.0, 0.5, 1.0))
    errs = U.corruption_nn_test_error(cfg, seed=4)
    ds = mnist1d(200, 100)
    for f, e in zip(cfg.levels, errs):
        y = corrupt_labels(ds.y, f, 10, seed=1004)
        nn = y[torch.cdist(ds.x_test, ds.x).argmin(1)]
        assert e == pytest.approx(float((nn != ds.y_test).float().mean()))
    assert errs[0] < errs[-1]          # true labels beat random ones
    assert errs[-1] >= 0.75            # random labels: near chance (0.9)


def test_linear_bad_input():
    with pytest.raises(ValueError):
        U.LinearConstruction(D=0).validate()
    with pytest.raises(ValueError):
        U.one_step_gd(torch.ones(2, 1), torch.ones(2, 3), torch.tensor([1.0, 0.0]))
    with pytest.raises(ValueError):
        U.one_step_gd(torch.ones(2, 1), torch.ones(3, 3), torch.tensor([1.0, -1.0]))
    with pytest.raises(TypeError):
        U.linear_sprime(np.ones((2, 1)), torch.ones(2, 3), torch.tensor([1.0, -1.0]))


# -- the hyperspheres --------------------------------------------------------------------------
def test_sphere_data_and_sprime():
    x, y = U.sphere_data(500, 20, (1.0, 1.2), torch.Generator().manual_seed(0))
    r = x.norm(dim=1)
    assert torch.allclose(r[y == 0], torch.tensor(1.0)) and torch.allclose(r[y == 1], torch.tensor(1.2))
    assert 150 < int(y.sum()) < 350
    xs, ys = U.sphere_sprime(x, y, (1.0, 1.2))
    assert torch.equal(ys, 1 - y)                                    # labels flipped
    rs = xs.norm(dim=1)                                              # on the other sphere
    assert torch.allclose(rs[ys == 0], torch.tensor(1.0)) and torch.allclose(rs[ys == 1], torch.tensor(1.2))
    cos = (xs * x).sum(1) / (rs * r)                                 # same direction
    assert torch.allclose(cos, torch.ones_like(cos), atol=1e-6)
    x2, y2 = U.sphere_sprime(xs, ys, (1.0, 1.2))                     # an involution
    assert torch.allclose(x2, x, atol=1e-6) and torch.equal(y2, y)


def test_sphere_bad_input():
    x, y = U.sphere_data(10, 5)
    with pytest.raises(ValueError):
        U.sphere_sprime(x * 1.1, y)                                  # off the spheres
    with pytest.raises(ValueError):
        U.sphere_sprime(x, y + 1)
    with pytest.raises(ValueError):
        U.sphere_data(10, 5, radii=(1.2, 1.0))
    with pytest.raises(TypeError):
        U.sphere_data(10.0, 5)


def test_boundary_slice_matches_the_member():
    model = BatchedMLP.init([0, 1], 6, 16, 1, 2)
    x, _ = U.sphere_data(3, 6)
    a, b, f = U.boundary_slice(model, 1, x[0], resolution=11)
    assert f.shape == (11, 11) and a.shape == (11,) and b.shape == (11,)
    # the centre row (b = 0) runs along the ray through x[0]
    with torch.no_grad():
        pts = torch.tensor(a, dtype=x.dtype)[:, None] * (x[0] / x[0].norm())
        ref = U.member_logits(model, 1, pts)
    assert np.allclose(f[5], (ref[:, 1] - ref[:, 0]).numpy(), atol=1e-5)
    with pytest.raises(ValueError):
        U.boundary_slice(model, 2, x[0])


# -- configs -----------------------------------------------------------------------------------
@pytest.mark.parametrize("cls", [U.CorruptionConfig, U.MarginSweepConfig, U.SpheresConfig])
def test_presets_construct_and_validate(cls):
    cls.quick().validate()
    cls.full().validate()


def test_config_bad_input():
    with pytest.raises(ValueError):
        U.CorruptionConfig(levels=(0.5, 0.2)).validate()
    with pytest.raises(ValueError):
        U.MarginSweepConfig(sizes=(100,)).validate()
    with pytest.raises(TypeError):
        U.SpheresConfig(width=10.5).validate()
    with pytest.raises(ValueError):
        U.SpheresConfig(radii=(1.0, 1.0)).validate()


# -- the batched CNN ---------------------------------------------------------------------------
def test_batched_cnn_equals_each_member_alone():
    import torch.nn.functional as F
    model = U.BatchedCNN1d([0, 1, 2], channels=4, hidden=8)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 5, 40, generator=g)              # one batch per member
    out = model(x)
    assert out.shape == (3, 5, 10)
    # every parameter has the member axis first (what gtlib.engine.StackedOptimizer steps)
    assert all(p.shape[0] == 3 for p in model.parameters())
    for e in range(3):
        h = x[e][:, None, :]
        for w, pad in zip(model.convs, (2, 1, 1)):
            h = F.relu(F.conv1d(h, w[e], stride=2, padding=pad))
        h = F.relu(h.reshape(5, -1) @ model.fcs[0][e])
        assert torch.allclose(out[e], h @ model.fcs[1][e], atol=1e-5)
    # a subset of members: their rows of the whole ensemble (up to the order of summation that
    # the convolution kernel picks for that many groups)
    for members in ([2], [0, 2]):
        rows = torch.tensor(members)
        torch.testing.assert_close(model(x[rows], rows), out[rows], rtol=1e-5, atol=1e-6)
    # a shared input gives every member the same x
    assert torch.allclose(model(x[0])[1], model(x[0][None].expand(3, 5, 40))[1])
    with pytest.raises(ValueError):
        model(torch.randn(5, 41))
    with pytest.raises(ValueError):
        U.BatchedCNN1d([])


def test_cnn_randomization_tiny_run():
    cfg = U.CNNRandomizationConfig(n_train=60, n_test=50, channels=8, hidden=32, lr=0.2,
                                   batch_size=20, max_steps=600, check_every=20, true_runs=2,
                                   random_runs=1)
    r = U.cnn_randomization(cfg, seed=0)
    assert r.names[2] == "random labels, run 1" and len(r.stop_step) == 3
    # 60 signals: every member (random labels included) fits its labels and stops early
    assert all(r.reached_target) and max(r.stop_step) < 600
    assert all(0 <= e <= 1 for e in r.test_error + r.init_test_error)


def test_linear_randomization_is_the_cnn_experiment_with_a_linear_model():
    cfg = U.CNNRandomizationConfig(n_train=200, n_test=50, lr=0.1, batch_size=20,
                                   max_steps=300, check_every=50, true_runs=2, random_runs=2)
    r = U.linear_randomization(cfg, seed=0)
    assert r.labels == ["true", "true", "random", "random"] and len(r.stop_step) == 4
    # 410 parameters cannot fit 200 random labels: the random members run the whole budget
    assert r.stop_step[2:] == [300, 300] and not any(r.reached_target[2:])
    assert max(r.train_acc[2:]) < 0.9
    assert all(0 <= e <= 1 for e in r.test_error + r.init_test_error)
    # with more parameters than points the same model fits any labelling and stops at a check
    tiny = U.CNNRandomizationConfig(n_train=12, n_test=20, lr=0.5, batch_size=12,
                                    max_steps=4000, check_every=10, true_runs=2, random_runs=1)
    t = U.linear_randomization(tiny, seed=0)
    assert all(t.reached_target) and max(t.stop_step) < 4000 and min(t.train_acc) >= 0.99


def test_realized_margin_known_answers():
    # two classes; the margin of point i is logits[i, y_i] - logits[i, other]: 5 1 3 -2 4
    y = torch.tensor([0, 0, 0, 0, 1])
    logits = torch.tensor([[5.0, 0], [1, 0], [3, 0], [-2, 0], [0, 4]])
    assert U.realized_margin(logits, y, 1.0) == -2.0       # every point: the smallest margin
    assert U.realized_margin(logits, y, 0.8) == 1.0        # 4 of 5 points have margin >= 1
    assert U.realized_margin(logits, y, 0.6) == 3.0        # 3 of 5
    assert U.realized_margin(logits, y, 0.61) == 1.0       # 3.05 points: 4 must clear it
    # the stop rule at gamma = the realized margin is met, and just above it is not
    from gtlib.engine import stop_rule
    for f in (0.6, 0.61, 0.8):
        g = U.realized_margin(logits, y, f)
        assert bool(stop_rule(margin_gamma=g, margin_fraction=f)(logits, y))
        assert not bool(stop_rule(margin_gamma=g + 1e-3, margin_fraction=f)(logits, y))
    with pytest.raises(ValueError):
        U.realized_margin(logits, y[:3])


def test_bulge_and_cap():
    assert U.cap_fraction(3, 60.0) == pytest.approx(0.25)            # (1 - cos 60) / 2
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


def test_one_integer_check():
    # one integer check for every chapter (issue 19): uniform's own _int helper is gone, and every
    # call of gtlib.checks.check_int states its minimum
    import inspect
    import re
    assert not hasattr(U, "_int")
    calls = re.findall(r"check_int\(([^()]*(?:\([^()]*\)[^()]*)*)\)", inspect.getsource(U))
    assert len(calls) > 10
    assert all("minimum=" in c for c in calls), [c for c in calls if "minimum=" not in c]
