"""Tests of gtlib.uniform.linear, one section per public function: unit tests, checks against
independent reference implementations (marker ``reference``), bad input refused at the boundary
(``boundary``), equivalence of the engine with the loops it replaced (``engine``) and tests pinned
by mutation testing (``mutation``)."""

import math
import numpy as np
import pytest
import torch
from scipy import stats

from gtlib import uniform as U

from tests.chapters.uniform.helpers import _nan_at, _np, _raises


def _linear_errors_ref(cfg, seed):
    """Training, exact test, S' and fresh errors written out from the construction's definition."""
    x1, x2, y = cfg.sample(cfg.m, torch.Generator().manual_seed(seed))
    w1 = (y[:, None] * x1).sum(0)
    w2 = (y[:, None] * x2).sum(0)

    def err(a, b, lab):
        return float(
            np.mean(np.sign(_np(a) @ _np(w1) + _np(b) @ _np(w2)) != _np(lab))
        )

    mean = cfg.signal * float(
        w1 @ torch.full((cfg.K,), 1 / math.sqrt(cfg.K * cfg.m), dtype=torch.float64)
    )
    sd = float(w2.norm()) * math.sqrt(cfg.noise_var / cfg.D)
    test = float(stats.norm.cdf(-mean / sd))
    f1, f2, fy = cfg.sample(cfg.m, torch.Generator().manual_seed(10**6 + seed))
    sprime = err(x1, -x2, y)
    return dict(
        train=err(x1, x2, y),
        test=test,
        sprime=sprime,
        uc_lower_bound=max(0.0, sprime - test),
        fresh=err(f1, f2, fy),
    )


@pytest.fixture(scope="module")
def lin():
    cfg = U.LinearConstruction(D=50, m=8)
    return cfg, U.linear_data(cfg, seed=0)


# =================================================================================================
# uniform.LinearConstruction
# =================================================================================================
@pytest.mark.reference
def test_config_defaults_and_paper_presets():
    c = U.LinearConstruction()
    assert (c.K, c.D, c.m, c.noise_var, c.signal) == (1, 20_000, 64, 32.0, 2.0)
    s = U.SpheresConfig()
    assert (
        s.d,
        s.radii,
        s.sizes,
        s.n_test,
        s.width,
        s.lr,
        s.batch_size,
        s.gamma,
        s.margin_fraction,
        s.max_epochs,
    ) == (
        200,
        (1.0, 1.2),
        (256, 512, 1024, 2048),
        4000,
        2000,
        0.5,
        64,
        4.0,
        0.99,
        3000.0,
    )
    full = U.SpheresConfig.full()  # Nagarajan and Kolter 2019, Sec. 3.2
    assert (
        full.d,
        full.radii,
        full.width,
        full.gamma,
        full.lr,
        full.margin_fraction,
    ) == (1000, (1.0, 1.1), 100_000, 10.0, 0.5, 0.99)
    m = U.MarginSweepConfig()
    assert (
        m.sizes,
        m.n_test,
        m.width,
        m.depth,
        m.lr,
        m.batch_size,
        m.gamma,
        m.margin_fraction,
        m.check_every_epochs,
        m.max_epochs,
    ) == (
        (500, 1000, 2000, 4000, 8000),
        4000,
        256,
        2,
        0.1,
        64,
        4.0,
        0.99,
        1.0,
        2000.0,
    )
    mf = U.MarginSweepConfig.full()
    assert (mf.width, mf.depth, mf.gamma, mf.sizes[0], mf.sizes[-1]) == (
        1024,
        5,
        10.0,
        1000,
        32000,
    )
    k = U.CorruptionConfig()
    assert (
        k.n_train,
        k.n_test,
        k.levels,
        k.width,
        k.depth,
        k.lr,
        k.batch_size,
        k.target_train_acc,
        k.max_steps,
        k.check_every,
    ) == (4000, 4000, (0.0, 0.5, 1.0), 512, 1, 0.1, 64, 0.99, 40_000, 50)
    kf = U.CorruptionConfig.full()
    assert len(kf.levels) == 11 and kf.levels[0] == 0.0 and kf.levels[-1] == 1.0
    assert kf.levels[3] == pytest.approx(0.3) and kf.depth == 3
    n = U.CNNRandomizationConfig()
    assert (
        n.n_train,
        n.n_test,
        n.channels,
        n.hidden,
        n.lr,
        n.batch_size,
        n.target_train_acc,
        n.max_steps,
        n.check_every,
        n.true_runs,
        n.random_runs,
    ) == (4000, 4000, 32, 256, 0.1, 64, 0.99, 40_000, 50, 4, 2)


@pytest.mark.reference
def test_linear_construction_u_and_sample_by_hand_and_by_statistics():
    cfg = U.LinearConstruction(K=3, D=500, m=5, noise_var=7.0, signal=1.5)
    u = cfg.u
    assert u.dtype == torch.float64 and u.shape == (3,)
    assert u.tolist() == pytest.approx(
        [1 / math.sqrt(15)] * 3, rel=1e-15
    )  # ||u|| = 1/sqrt(m)
    x1, x2, y = cfg.sample(400, torch.Generator().manual_seed(4))
    assert (x1.shape, x2.shape, y.shape) == ((400, 3), (400, 500), (400,))
    assert x1.dtype == x2.dtype == y.dtype == torch.float64
    assert (
        set(y.tolist()) == {-1.0, 1.0} and abs(float(y.mean())) < 0.2
    )  # fair +-1 labels
    # x1 = signal * y * u exactly
    assert torch.equal(
        x1,
        1.5
        * y[:, None]
        * torch.full((1, 3), 1 / math.sqrt(15), dtype=torch.float64),
    )
    # x2 ~ N(0, noise_var / D): 200 000 draws, relative s.e. of the variance 0.3%
    assert float(x2.var()) == pytest.approx(7.0 / 500, rel=0.02)
    assert abs(float(x2.mean())) < 5 * math.sqrt(7.0 / 500 / x2.numel())
    # x2 is independent of the label
    assert abs(float((x2 * y[:, None]).mean())) < 5 * math.sqrt(
        7.0 / 500 / x2.numel()
    )
    # the same generator state gives the same sample, another seed another one
    again = cfg.sample(400, torch.Generator().manual_seed(4))
    assert all(torch.equal(a, b) for a, b in zip((x1, x2, y), again))
    other = cfg.sample(400, torch.Generator().manual_seed(5))
    assert not torch.equal(other[1], x2) and not torch.equal(other[2], y)


@pytest.mark.reference
@pytest.mark.parametrize(
    "cfg,seed",
    [
        (U.LinearConstruction(K=2, D=40, m=30, noise_var=5.0, signal=1.5), 3),
        (
            U.LinearConstruction(K=2, D=1, m=30, noise_var=5.0, signal=1.0),
            12,
        ),  # S' below test
    ],
)
def test_linear_errors_against_a_written_out_reference(cfg, seed):
    got = U.linear_errors(cfg, seed=seed)
    ref = _linear_errors_ref(cfg, seed)
    for k, v in ref.items():
        assert getattr(got, k) == pytest.approx(v, rel=1e-10, abs=1e-15), k
    # the errors are neither 0 nor 1 here, so a sign or a mask slip shows
    assert 0 < got.train < got.sprime < 1 or got.uc_lower_bound == 0.0
    assert 0 < got.test < 0.5 and 0 < got.fresh < 1


@pytest.mark.boundary
def test_experiments_refuse_wrong_config_seed_flag_and_device():
    _raises(TypeError, "cfg", U.corruption_experiment, None)
    _raises(TypeError, "cfg", U.cnn_randomization, {"lr": 0.1})
    _raises(TypeError, "cfg", U.margin_sweep, None)
    _raises(
        TypeError,
        "fixed_size",
        U.margin_sweep,
        U.MarginSweepConfig(sizes=(8, 16), n_test=20, width=8, max_epochs=1.0),
        fixed_size=1,
    )
    x = torch.zeros(4, 3)
    _raises(
        ValueError,
        "x must have 3 columns",
        U.nearest_neighbour_predict,
        x,
        torch.zeros(4, dtype=torch.long),
        torch.zeros(2, 5),
    )
    _raises(
        ValueError,
        "y_train",
        U.nearest_neighbour_predict,
        x,
        torch.zeros(3, dtype=torch.long),
        torch.zeros(2, 3),
    )
    _raises(
        ValueError,
        "chunk",
        U.nearest_neighbour_predict,
        x,
        torch.zeros(4, dtype=torch.long),
        torch.zeros(2, 3),
        chunk=0,
    )
    cfg = U.CorruptionConfig(
        n_train=30, n_test=20, levels=(0.0, 1.0), width=8, max_steps=3, check_every=1
    )
    _raises(TypeError, "replicate", U.corruption_experiment, cfg, replicate=None)
    _raises(TypeError, "replicate", U.corruption_experiment, cfg, replicate="yes")
    sph = U.SpheresConfig(d=5, sizes=(8, 16), n_test=20, width=8, max_epochs=2.0)
    _raises(ValueError, "device", U.spheres_sweep, sph, device="gpu9")
    _raises(ValueError, "seed", U.spheres_sweep, sph, seed=2**64)
    lin = U.LinearConstruction(D=50, m=8)
    _raises(ValueError, "seed", U.linear_errors, lin, seed=-1)
    _raises(TypeError, "cfg", U.linear_nn_errors, None)
    _raises(
        ValueError,
        "n_test",
        U.linear_nn_errors,
        U.LinearConstruction(D=10, m=4),
        n_test=0,
    )
    _raises(TypeError, "generator", lin.sample, 5, None)


# =================================================================================================
# uniform.linear_data
# =================================================================================================
@pytest.mark.reference
def test_linear_data_is_cfg_m_draws_from_the_seed():
    cfg = U.LinearConstruction(K=2, D=7, m=9)
    x1, x2, y = U.linear_data(cfg, seed=6)
    r1, r2, ry = cfg.sample(9, torch.Generator().manual_seed(6))
    assert torch.equal(x1, r1) and torch.equal(x2, r2) and torch.equal(y, ry)
    assert not torch.equal(U.linear_data(cfg, seed=7)[1], x2)
    assert torch.equal(
        U.linear_data(cfg)[1], cfg.sample(9, torch.Generator().manual_seed(0))[1]
    )
    # m, K and D set the shapes
    assert [t.shape for t in U.linear_data(U.LinearConstruction(K=4, D=3, m=2))] == [
        (2, 4),
        (2, 3),
        (2,),
    ]


# =================================================================================================
# uniform.one_step_gd
# =================================================================================================
def test_linear_bad_input():
    with pytest.raises(ValueError):
        U.LinearConstruction(D=0).validate()
    with pytest.raises(ValueError):
        U.one_step_gd(torch.ones(2, 1), torch.ones(2, 3), torch.tensor([1.0, 0.0]))
    with pytest.raises(ValueError):
        U.one_step_gd(torch.ones(2, 1), torch.ones(3, 3), torch.tensor([1.0, -1.0]))
    with pytest.raises(TypeError):
        U.linear_sprime(np.ones((2, 1)), torch.ones(2, 3), torch.tensor([1.0, -1.0]))


# =================================================================================================
# uniform.linear_predict
# =================================================================================================
def test_linear_construction_by_hand():
    # m = 2, K = 1 (u = 1/sqrt(2)), D = 2: x1 = 2 y u = y sqrt(2)
    y = torch.tensor([1.0, -1.0], dtype=torch.float64)
    x1 = (2 * y / math.sqrt(2))[:, None]
    x2 = torch.tensor([[3.0, 0.0], [0.0, 4.0]], dtype=torch.float64)
    w1, w2 = U.one_step_gd(x1, x2, y)
    assert w1.tolist() == pytest.approx(
        [2 * math.sqrt(2)]
    )  # sum y_i x1_i = 2 * sqrt(2)
    assert w2.tolist() == pytest.approx([3.0, -4.0])  # x2_1 - x2_2
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
    assert float(w1 @ cfg.u) * cfg.signal == pytest.approx(
        4.0
    )  # 2 m ||u||^2 * 2 = 4
    g = torch.Generator().manual_seed(9)
    t1, t2, ty = cfg.sample(200_000, g)
    mc = float((U.linear_predict(w1, w2, t1, t2) != ty).double().mean())
    e = U.linear_errors(cfg, seed=3)
    assert e.test == pytest.approx(mc, abs=0.005)
    assert e.uc_lower_bound == pytest.approx(max(0.0, e.sprime - e.test))


@pytest.mark.reference
def test_one_step_gd_and_sprime_and_predict_against_loops():
    g = torch.Generator().manual_seed(17)
    x1 = torch.randn(5, 2, generator=g, dtype=torch.float64)
    x2 = torch.randn(5, 3, generator=g, dtype=torch.float64)
    y = torch.tensor([1.0, -1.0, -1.0, 1.0, -1.0], dtype=torch.float64)
    w1, w2 = U.one_step_gd(x1, x2, y)
    ref1 = [sum(y[i].item() * x1[i, k].item() for i in range(5)) for k in range(2)]
    ref2 = [sum(y[i].item() * x2[i, k].item() for i in range(5)) for k in range(3)]
    assert w1.tolist() == pytest.approx(ref1, rel=1e-14)
    assert w2.tolist() == pytest.approx(ref2, rel=1e-14)
    s1, s2, sy = U.linear_sprime(x1, x2, y)
    assert torch.equal(s1, x1) and torch.equal(s2, -x2) and torch.equal(sy, y)
    pred = U.linear_predict(w1, w2, x1, x2)
    score = [
        sum(w1[k].item() * x1[i, k].item() for k in range(2))
        + sum(w2[k].item() * x2[i, k].item() for k in range(3))
        for i in range(5)
    ]
    assert pred.tolist() == [math.copysign(1.0, s) for s in score]
    # a zero score predicts 0, an error for either label
    z = U.linear_predict(
        torch.tensor([1.0]),
        torch.tensor([2.0, 0.0]),
        torch.tensor([[2.0], [1.0], [-1.0]]),
        torch.tensor([[-1.0, 5.0], [1.0, 0.0], [0.0, 9.0]]),
    )
    assert z.tolist() == [0.0, 1.0, -1.0]
    with pytest.raises(ValueError):
        U.linear_predict(w1, w2, x1, x2[:4])
    with pytest.raises(ValueError):
        U.linear_predict(w1[:1], w2, x1, x2)
    with pytest.raises(ValueError):
        U.linear_predict(w1, w2[:2], x1, x2)


@pytest.mark.boundary
def test_linear_functions_refuse_nan_and_int_inputs(lin):
    _, (x1, x2, y) = lin
    for func in (U.one_step_gd, U.linear_sprime):
        _raises(ValueError, "x1", func, _nan_at(x1), x2, y)
        _raises(ValueError, "x2", func, x1, _nan_at(x2), y)
        _raises(TypeError, "x1", func, x1.long(), x2, y)
        _raises(TypeError, "x2", func, x1, x2.long(), y)
    w1, w2 = U.one_step_gd(x1, x2, y)
    _raises(ValueError, "w1", U.linear_predict, _nan_at(w1), w2, x1, x2)
    _raises(ValueError, "x2", U.linear_predict, w1, w2, x1, _nan_at(x2))
    _raises(ValueError, "x1", U.linear_predict, w1, w2, x1[0], x2)
    _raises(ValueError, "w2", U.linear_predict, w1, w2[:3], x1, x2)
    _raises(TypeError, "w1", U.linear_predict, None, w2, x1, x2)


# =================================================================================================
# uniform.linear_errors
# =================================================================================================
def test_linear_large_D_generalizes_but_fails_on_sprime():
    e = U.linear_errors(U.LinearConstruction(K=1, D=20_000, m=32), seed=0)
    assert e.train == 0.0 and e.test < 0.01 and e.sprime == 1.0


def test_linear_fresh_sample_is_not_sprime():
    # an independent sample has the law of S' but was not built from S: its error is near the
    # test error, far from the S' error
    e = U.linear_errors(U.LinearConstruction(K=1, D=20_000, m=64), seed=1)
    assert e.sprime == 1.0 and e.fresh <= 0.1


@pytest.mark.reference
def test_linear_errors_parameters_each_change_the_result():
    base = dict(K=2, D=40, m=30, noise_var=5.0, signal=1.5)
    ref = U.linear_errors(U.LinearConstruction(**base), seed=3)
    for k, v in (("noise_var", 9.0), ("signal", 2.5), ("D", 60), ("m", 31)):
        other = U.linear_errors(U.LinearConstruction(**{**base, k: v}), seed=3)
        assert other.test != pytest.approx(ref.test, rel=1e-6), k
    # K alone changes nothing: w1.u = signal m ||u||^2 = signal whatever K, and the noise draws
    # do not depend on K
    k3 = U.linear_errors(U.LinearConstruction(**{**base, "K": 3}), seed=3)
    assert (k3.train, k3.sprime, k3.fresh) == (ref.train, ref.sprime, ref.fresh)
    assert k3.test == pytest.approx(ref.test, rel=1e-12)
    assert U.linear_errors(
        U.LinearConstruction(**base), seed=4
    ).test != pytest.approx(ref.test, rel=1e-6)


# =================================================================================================
# uniform.linear_nn_errors
# =================================================================================================
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


# =================================================================================================
# uniform.linear_sweep
# =================================================================================================
@pytest.mark.reference
def test_linear_sweep_is_the_mean_of_linear_errors():
    Ds, seeds = [3, 40, 9], [0, 5, 11]
    out = U.linear_sweep(17, Ds, seeds, K=2, noise_var=6.0)
    assert out["D"].tolist() == Ds
    for j, D in enumerate(Ds):
        errs = [
            _linear_errors_ref(
                U.LinearConstruction(K=2, D=D, m=17, noise_var=6.0), s
            )
            for s in seeds
        ]
        for k in ("train", "test", "sprime", "uc_lower_bound", "fresh"):
            assert out[k][j] == pytest.approx(
                np.mean([e[k] for e in errs]), rel=1e-10, abs=1e-15
            ), (k, D)
    # noise_var reaches the construction (default 32; K leaves the errors unchanged, above)
    default = U.linear_sweep(17, Ds, seeds, K=2)
    assert default["test"].tolist() != pytest.approx(out["test"].tolist(), rel=1e-6)
    assert U.linear_sweep(17, Ds, seeds, noise_var=32.0)[
        "test"
    ].tolist() == pytest.approx(default["test"].tolist(), rel=1e-12)
    with pytest.raises(ValueError):
        U.linear_sweep(17, [], seeds)
    with pytest.raises(ValueError):
        U.linear_sweep(17, Ds, [])
