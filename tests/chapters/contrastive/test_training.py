"""Tests of gtlib.contrastive.training, one section per public function."""

import numpy as np
import pytest
import sys
import torch
from dataclasses import replace
from gtlib import contrastive as C
from gtlib.contrastive import ContrastiveConfig
import gtlib.contrastive as C_eng
from tests.oracles import contrastive_loops as ref
from tests.chapters.contrastive.helpers import (
    _encode_reference,
    _hand_run,
    DT,
    NAN,
    rng,
    TINY,
    tiny_cfg,
)
from gtlib.contrastive.alignment import _alignment
from gtlib.contrastive.data import _make_views, _sample_codes
from gtlib.contrastive.encoder import _encode
from gtlib.contrastive.training import _bias_schedule, _stage_boundaries


def _stages_reference(step, top, ratio, level):
    i1 = next(i for i in range(len(top)) if top[i] >= level * max(top))
    later_max = max(ratio[i1:])
    i2 = next(i for i in range(i1, len(ratio)) if ratio[i] >= level * later_max)
    return step[i1], step[i2]


def _ridge_reference(ftr, ytr, fte, C_, ridge):
    ftr, fte = ftr.astype(np.float64), fte.astype(np.float64)
    mu, sd = ftr.mean(0), np.maximum(ftr.std(0, ddof=1), 1e-6)
    a = np.hstack([(ftr - mu) / sd, np.ones((len(ftr), 1))])
    b = np.hstack([(fte - mu) / sd, np.ones((len(fte), 1))])
    Y = np.eye(C_)[ytr] * 2 - 1
    coef = np.linalg.solve(a.T @ a + ridge * len(a) * np.eye(a.shape[1]), a.T @ Y)
    return (b @ coef).argmax(-1)


def _one_step_reference(cfg, ratio, seed=0):
    """One SGD step (no pruning) written out from the docstring: W1 = W0 - lr (grad + wd W0)."""
    M = C.feature_dictionary(cfg.dim, cfg.n_features, seed=seed)
    W = (
        torch.randn(cfg.neurons, cfg.dim, generator=rng(seed * 1000))
        * cfg.init_scale
    )[None]
    W = W.requires_grad_()
    A = torch.zeros(1, cfg.dim, cfg.dim, requires_grad=True)
    g = rng(seed * 1000 + 999)
    freqs = C.feature_frequencies(
        cfg.n_features, cfg.n_minority, cfg.base_freq, ratio
    )[None]
    z = _sample_codes(freqs, cfg.batch, g)
    X1 = _make_views(M, z, cfg.n_tokens, cfg.n_signal, cfg.noise, g)
    X2 = _make_views(M, z, cfg.n_tokens, cfg.n_signal, cfg.noise, g)
    f1 = _encode(X1, W, A, 0.0)
    f2 = _encode(X2, W, A, 0.0).detach()
    logits = f1 @ f2.transpose(1, 2) / cfg.tau
    loss = torch.nn.functional.cross_entropy(logits[0], torch.arange(cfg.batch))
    gW, gA = torch.autograd.grad(loss, [W, A])
    with torch.no_grad():
        wd = cfg.weight_decay
        return W - cfg.lr * (gW + wd * W), A - cfg.lr * (gA + wd * A)


class _Refuse:
    """A checked public function's stand-in: calling it fails."""

    def __init__(self, func):
        self.name = func.__name__

    def __call__(self, *args, **kwargs):
        raise AssertionError(f"the per-step code called the checked {self.name}")


# the training loops call the unchecked building blocks; infonce is the one with a checked public
# twin (the page calls it), so the loops must not reach the checked one.
PER_STEP = ["infonce"]


# train_encoders: the old loop decayed by hand, W <- W * (1 - lr * wd) - lr * g; the engine's SGD
# (torch.optim.SGD's rule) computes W <- W - lr * (g + wd * W). The two round differently in
# float32 (a few ulps per step); over 40 steps the measured gap is below 3e-7 on weights of size
# ~0.3 (1e-6 on the top/second ratios), so 1e-5 relative and 1e-6 absolute is tight.
RTOL, ATOL = 1e-5, 1e-6


def _tiny_encoders():
    return replace(
        C_eng.ContrastiveConfig.quick(),
        dim=8,
        n_features=4,
        n_minority=2,
        neurons=6,
        batch=16,
        steps=40,
        log_every=10,
        bias_ramp=20,
        prune_every=10,
        replicates=2,
        probe_samples=40,
    )


# =================================================================================================
# _bias_schedule
# =================================================================================================
@pytest.mark.reference
def test_bias_schedule_by_hand_at_non_default_settings():
    cfg = C.ContrastiveConfig.quick(bias_ramp=8, bias_max=0.4)
    got = [_bias_schedule(s, cfg) for s in (0, 1, 3, 7, 8, 9, 1000)]
    assert got == pytest.approx([0.0, 0.05, 0.15, 0.35, 0.4, 0.4, 0.4], rel=1e-12)
    flat = C.ContrastiveConfig.quick(bias_ramp=0, bias_max=0.7)
    assert [_bias_schedule(s, flat) for s in (0, 5)] == [0.7, 0.7]
    assert (
        _bias_schedule(3, C.ContrastiveConfig.quick(bias_ramp=8, bias_max=0.0))
        == 0.0
    )


@pytest.mark.mutation
def test_bias_schedule_by_hand():
    cfg = ContrastiveConfig.quick(bias_ramp=10, bias_max=0.3)
    assert [_bias_schedule(s, cfg) for s in (0, 5, 10, 20)] == pytest.approx(
        [0.0, 0.15, 0.3, 0.3]
    )


# =================================================================================================
# contrastive.train_encoders
# =================================================================================================
def test_tiny_training_run_and_config_validation():
    cfg = replace(
        C.ContrastiveConfig.quick(),
        dim=8,
        n_features=4,
        n_minority=2,
        neurons=6,
        batch=16,
        steps=20,
        log_every=10,
        bias_ramp=10,
        replicates=1,
        probe_samples=40,
    )
    run = C.train_encoders(cfg, [1.0, 4.0], [0.0, 0.5], seed=0)
    assert run.W.shape == (2, 6, 8) and run.history["proj"].shape == (3, 2, 6, 4)
    tab = C.condition_table(run)
    assert set(tab) == {(1.0, 0.0), (4.0, 0.5)}
    assert 0 <= tab[(4.0, 0.5)]["probe_minor"] <= 1
    curves = C.stage_curves(run)
    assert curves["t1"] <= curves["t2"]
    run2 = C.train_encoders(cfg, [4.0, 4.0], [0.0, 0.5], seed=0, replicates=2)
    base, pruned = C.paired(run2, np.arange(4.0), 4.0, 0.5)
    assert base.tolist() == [0.0, 2.0] and pruned.tolist() == [1.0, 3.0]
    assert torch.equal(
        torch.tensor(run2.history["proj"][0, 0]),
        torch.tensor(run2.history["proj"][0, 1]),
    )
    with pytest.raises(ValueError, match="no unpruned"):
        C.paired(run2, np.arange(4.0), 2.0, 0.5)
    with pytest.raises(ValueError, match="n_minority"):
        replace(cfg, n_minority=4).validate()
    with pytest.raises(ValueError, match="ratios"):
        replace(cfg, ratios=(0.5,)).validate()
    with pytest.raises(ValueError, match="equal length"):
        C.train_encoders(cfg, [1.0], [0.0, 0.5])
    assert C.ContrastiveConfig.full().validate().neurons > cfg.neurons
    assert C.LongTailConfig.full().width > C.LongTailConfig.quick().width


def test_hard_mask_starves_masked_neurons():
    cfg = replace(
        C.ContrastiveConfig.quick(),
        dim=8,
        n_features=4,
        n_minority=2,
        neurons=6,
        batch=16,
        steps=3,
        log_every=1,
        bias_ramp=2,
        replicates=1,
        prune_every=100,
        weight_decay=0.0,
    )
    soft = C.train_encoders(cfg, [2.0], [0.5], seed=0)
    hard = C.train_encoders(cfg, [2.0], [0.5], seed=0, hard_mask=True)
    start = torch.tensor(soft.history["proj"][0, 0])
    assert torch.equal(
        start, torch.tensor(hard.history["proj"][0, 0])
    )  # same initialization
    moved_hard = (torch.tensor(hard.history["proj"][-1, 0]) - start).abs().sum(-1)
    moved_soft = (torch.tensor(soft.history["proj"][-1, 0]) - start).abs().sum(-1)
    assert (
        int((moved_hard == 0).sum()) == 3
    )  # the 3 masked neurons: no gradient, no decay
    assert (
        int((moved_soft == 0).sum()) == 0
    )  # straight-through: every neuron is trained


def test_random_mask_runs_pair_with_their_unpruned_partner():
    cfg = replace(
        C.ContrastiveConfig.quick(),
        dim=8,
        n_features=4,
        n_minority=2,
        neurons=6,
        batch=16,
        steps=6,
        log_every=3,
        bias_ramp=3,
        replicates=2,
        prune_every=2,
        probe_samples=40,
    )
    run = C.train_encoders(
        cfg,
        [3.0, 3.0, 3.0],
        [0.0, 0.5, 0.5],
        seed=0,
        masks=["magnitude", "magnitude", "random"],
    )
    assert run.masks == ["magnitude", "magnitude", "random"] * 2
    assert run.select(3.0, 0.5) == [1, 4] and run.select(3.0, 0.5, "random") == [
        2,
        5,
    ]
    assert run.select(3.0, 0.0, "random") == [
        0,
        3,
    ]  # the unpruned partner of either mask
    base, rand = C.paired(run, np.arange(6.0), 3.0, 0.5, "random")
    assert base.tolist() == [0.0, 3.0] and rand.tolist() == [2.0, 5.0]
    assert not torch.equal(run.W[1], run.W[2])  # the two masks train differently
    assert set(C.condition_table(run)) == {
        (3.0, 0.0),
        (3.0, 0.5),
        (3.0, 0.5, "random"),
    }
    plain = C.train_encoders(cfg, [3.0, 3.0, 3.0], [0.0, 0.5, 0.5], seed=0)
    assert torch.equal(
        plain.W[[0, 1]], run.W[[0, 1]]
    )  # the random mask leaves the samples alone
    with pytest.raises(ValueError, match="masks"):
        C.train_encoders(cfg, [3.0], [0.5], masks=["random", "random"])
    with pytest.raises(ValueError, match="masks"):
        C.train_encoders(cfg, [3.0], [0.5], masks=["weights"])
    with pytest.raises(ValueError, match="mask"):
        run.select(3.0, 0.5, "weights")


@pytest.mark.reference
def test_train_encoders_initialization_seeds_and_pairing():
    cfg = tiny_cfg(steps=2, log_every=1, init_scale=0.3)
    run = C.train_encoders(cfg, [1.0, 3.0], [0.0, 0.5], seed=2, replicates=2)
    assert run.ratios == [1.0, 3.0, 1.0, 3.0] and run.fractions == [
        0.0,
        0.5,
        0.0,
        0.5,
    ]
    assert run.seeds == [2000, 2000, 2001, 2001]
    assert torch.equal(run.M, C.feature_dictionary(cfg.dim, cfg.n_features, seed=2))
    # the logged weights at step 0 are the initial ones: randn(m, d) * init_scale from seed*1000+j
    for e, j in enumerate([0, 0, 1, 1]):
        W0 = torch.randn(cfg.neurons, cfg.dim, generator=rng(2000 + j)) * 0.3
        a = _alignment(W0, run.M)
        np.testing.assert_allclose(
            run.history["proj"][0, e], a["proj"].numpy(), rtol=1e-6
        )
        np.testing.assert_allclose(
            run.history["neuron_noise"][0, e], a["noise"].numpy(), rtol=1e-6
        )
    assert run.history["step"].tolist() == [0, 1, 2]
    assert run.history["proj"].shape == (3, 4, 6, 5) and run.history[
        "noise"
    ].shape == (3, 4)
    a = _alignment(run.W, run.M)
    np.testing.assert_allclose(
        run.history["top"][-1], a["top"].mean(1).numpy(), rtol=1e-6
    )
    np.testing.assert_allclose(
        run.history["second"][-1], a["second"].mean(1).numpy(), rtol=1e-6
    )
    np.testing.assert_allclose(
        run.history["ratio"][-1], a["ratio"].median(1).values.numpy(), rtol=1e-6
    )
    np.testing.assert_allclose(
        run.history["noise"][-1], a["noise"].mean(1).numpy(), rtol=1e-6
    )
    # default replicates come from the config
    assert len(C.train_encoders(replace(cfg, replicates=3), [2.0], [0.0]).seeds) == 3
    # same seed, same numbers; another seed, other numbers
    again = C.train_encoders(cfg, [1.0, 3.0], [0.0, 0.5], seed=2, replicates=2)
    assert torch.equal(again.W, run.W) and torch.equal(again.A, run.A)
    other = C.train_encoders(cfg, [1.0, 3.0], [0.0, 0.5], seed=3, replicates=2)
    assert not torch.allclose(other.W, run.W)


def test_energy_curves_end_at_the_energy_ratio_and_start_at_the_initial_one():
    cfg = tiny_cfg(steps=3, log_every=1)
    run = C.train_encoders(cfg, [1.0, 3.0], [0.0, 0.5], seed=1, replicates=2)
    e = C.energy_curves(run)
    assert e.shape == (4, 4)
    np.testing.assert_allclose(
        e[-1], C.energy_ratio(run.W, run.M, 2).numpy(), rtol=1e-5
    )
    W0 = torch.randn(cfg.neurons, cfg.dim, generator=rng(1000)) * cfg.init_scale
    np.testing.assert_allclose(
        e[0, 0], float(C.energy_ratio(W0, run.M, 2)), rtol=1e-5
    )
    with pytest.raises(TypeError, match="EncoderRun"):
        C.energy_curves({"proj": e})


def test_train_encoders_stream_is_an_independent_draw_with_the_same_dictionary():
    cfg = tiny_cfg(steps=3, log_every=1, init_scale=0.3)
    base = C.train_encoders(cfg, [1.0, 3.0], [0.0, 0.5], seed=2, replicates=2)
    zero = C.train_encoders(
        cfg, [1.0, 3.0], [0.0, 0.5], seed=2, replicates=2, stream=0
    )
    assert torch.equal(zero.W, base.W)  # stream 0 is the default draw
    one = C.train_encoders(
        cfg, [1.0, 3.0], [0.0, 0.5], seed=2, replicates=2, stream=1
    )
    assert one.seeds == [2002, 2002, 2003, 2003] and torch.equal(one.M, base.M)
    for e, j in enumerate(
        [0, 0, 1, 1]
    ):  # stream 1 starts where stream 0's replicates end
        W0 = torch.randn(cfg.neurons, cfg.dim, generator=rng(2002 + j)) * 0.3
        np.testing.assert_allclose(
            one.history["proj"][0, e],
            _alignment(W0, one.M)["proj"].numpy(),
            rtol=1e-6,
        )
    # replicates 2 and 3 of stream 0 start from the same weights but see other samples
    more = C.train_encoders(cfg, [1.0], [0.0], seed=2, replicates=4)
    same_start = C.train_encoders(cfg, [1.0], [0.0], seed=2, replicates=2, stream=1)
    np.testing.assert_array_equal(
        more.history["proj"][0, 2:], same_start.history["proj"][0]
    )
    assert not torch.allclose(more.W[2:], same_start.W)
    with pytest.raises(ValueError, match="runs out of seeds"):
        C.train_encoders(cfg, [1.0], [0.0], replicates=500, stream=1)


@pytest.mark.reference
def test_train_encoders_one_step_is_sgd_on_infonce_with_weight_decay():
    cfg = tiny_cfg(steps=1, lr=0.3, weight_decay=0.07, tau=0.9)
    run = C.train_encoders(cfg, [2.5], [0.0], seed=1)
    W1, A1 = _one_step_reference(cfg, 2.5, seed=1)
    torch.testing.assert_close(run.W, W1, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(run.A, A1, rtol=1e-5, atol=1e-7)
    assert run.A.abs().max() > 0  # the attention is trained too


@pytest.mark.reference
@pytest.mark.parametrize(
    "field, value",
    [
        ("lr", 0.05),
        ("weight_decay", 0.2),
        ("tau", 1.1),
        ("init_scale", 0.2),
        ("noise", 0.4),
        ("batch", 9),
        ("n_signal", 1),
        ("n_tokens", 4),
        ("base_freq", 0.4),
        ("bias_max", 0.05),
        ("bias_ramp", 1),
        ("prune_fraction", 0.25),
        ("prune_every", 3),
        ("n_minority", 3),
    ],
)
def test_every_training_parameter_changes_the_trained_weights(field, value):
    """Each field the training reads, changed alone, changes the weights after 4 steps.
    prune_fraction is passed as the pruned condition's fraction (the config's own is a default
    the chapter reads); prune_every is seen only with pruning on."""
    cfg = tiny_cfg(bias_max=0.3, bias_ramp=3, prune_every=1)
    fr = [0.5] if field in ("prune_every", "prune_fraction") else [0.0]
    if (
        field == "prune_every"
    ):  # the norm ranking must change between refreshes: a large step
        cfg = replace(cfg, lr=1.0)
    base = C.train_encoders(cfg, [3.0], fr, seed=0)
    if field == "prune_fraction":
        changed = C.train_encoders(cfg, [3.0], [value], seed=0)
    else:
        changed = C.train_encoders(replace(cfg, **{field: value}), [3.0], fr, seed=0)
    assert not torch.allclose(base.W, changed.W, rtol=1e-5, atol=1e-7), field


@pytest.mark.reference
def test_ratio_and_log_every_change_what_is_recorded():
    cfg = tiny_cfg()
    a = C.train_encoders(cfg, [1.0, 8.0], [0.0, 0.0])
    assert not torch.allclose(
        a.W[0], a.W[1]
    )  # same init, different minority frequency
    b = C.train_encoders(replace(cfg, log_every=3), [1.0], [0.0])
    assert b.seeds == [0]  # default seed 0
    assert b.history["step"].tolist() == [0, 3, 4]


@pytest.mark.boundary
def test_training_steps_skip_the_boundary_checks(monkeypatch):
    # every submodule that looks a name up gets the refusing stand-in
    subs = [m for k, m in sys.modules.items() if k.startswith("gtlib.contrastive.")]
    for name in PER_STEP:
        for m in [C] + [m for m in subs if hasattr(m, name)]:
            monkeypatch.setattr(m, name, _Refuse(getattr(m, name)))
    cfg = replace(TINY, steps=4, prune_every=2)
    run = C.train_encoders(cfg, [1.0, 2.0], [0.0, 0.5], seed=0, replicates=1)
    hard = C.train_encoders(cfg, [2.0], [0.5], seed=0, replicates=1, hard_mask=True)
    rand = C.train_encoders(
        cfg, [2.0], [0.5], seed=0, replicates=1, masks=["random"]
    )
    assert (
        np.isfinite(run.history["proj"]).all()
        and np.isfinite(hard.history["proj"]).all()
    )
    assert np.isfinite(rand.history["proj"]).all()
    lcfg = replace(
        C.LongTailConfig(),
        n_train=300,
        n_test=100,
        width=8,
        out_dim=4,
        batch=8,
        steps=3,
        prune_every=2,
    )
    out = C.train_longtail(lcfg, (0.0, 0.5), seed=0)
    assert out["acc"].shape == (2, 10)


@pytest.mark.boundary
def test_conditions_may_be_arrays_but_not_strings_or_nan():
    a = C.train_encoders(
        TINY, np.array([1.0, 2.0]), np.array([0.0, 0.5]), seed=0, replicates=1
    )
    b = C.train_encoders(TINY, [1.0, 2.0], (0.0, 0.5), seed=0, replicates=1)
    assert torch.equal(a.W, b.W) and a.ratios == b.ratios
    for bad, kind in (
        ("abc", TypeError),
        (np.array([1.0, NAN]), ValueError),
        (np.array([[1.0, 2.0]]), TypeError),
        ([True, 2.0], TypeError),
    ):
        with pytest.raises(kind, match="ratios"):
            C.train_encoders(TINY, bad, [0.0, 0.5])
    with pytest.raises(ValueError, match=r"prune_fractions\[1\]"):
        C.train_longtail(C.LongTailConfig(), prune_fractions=np.array([0.0, 1.5]))


@pytest.mark.engine
@pytest.mark.parametrize("hard_mask", [False, True])
def test_train_encoders_matches_the_old_loop(hard_mask):
    cfg = _tiny_encoders()
    old = ref.old_train_encoders(
        cfg, [1.0, 4.0], [0.0, 0.5], seed=0, hard_mask=hard_mask
    )
    new = C_eng.train_encoders(
        cfg, [1.0, 4.0], [0.0, 0.5], seed=0, hard_mask=hard_mask
    )
    torch.testing.assert_close(new.W, old.W, rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(new.A, old.A, rtol=RTOL, atol=ATOL)
    assert torch.equal(new.M, old.M)
    assert (new.ratios, new.fractions, new.seeds) == (
        old.ratios,
        old.fractions,
        old.seeds,
    )
    assert set(new.history) == set(old.history)
    # a check at step t sees the weights after t updates, as the old loop logged before update t
    assert (
        new.history["step"].tolist()
        == old.history["step"].tolist()
        == [0, 10, 20, 30, 40]
    )
    for k, v in old.history.items():
        assert new.history[k].shape == v.shape, k
        np.testing.assert_allclose(
            new.history[k], v, rtol=RTOL, atol=ATOL, err_msg=k
        )
    # before any update the two are the same numbers
    for k, v in old.history.items():
        assert np.array_equal(new.history[k][0], v[0]), k


@pytest.mark.engine
def test_train_encoders_logs_the_last_step_off_the_grid():
    cfg = replace(_tiny_encoders(), steps=25, replicates=1)
    old = ref.old_train_encoders(cfg, [2.0], [0.5], seed=3)
    new = C_eng.train_encoders(cfg, [2.0], [0.5], seed=3)
    assert (
        new.history["step"].tolist()
        == old.history["step"].tolist()
        == [0, 10, 20, 25]
    )
    np.testing.assert_allclose(
        new.history["proj"], old.history["proj"], rtol=RTOL, atol=ATOL
    )


# =================================================================================================
# _stage_boundaries
# =================================================================================================
def test_stage_boundaries_on_synthetic_curves():
    step = np.arange(0, 100, 10)
    top = np.array([0.1, 0.5, 0.9, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    ratio = np.array([1.2, 1.2, 1.3, 2.0, 3.0, 4.0, 4.5, 5.0, 5.0, 5.0])
    assert _stage_boundaries(step, top, ratio) == (20, 60)  # 4.5 >= 0.9 * 5
    with pytest.raises(ValueError):
        _stage_boundaries(step[:2], top[:2], ratio[:2])


@pytest.mark.reference
def test_stage_boundaries_exact_thresholds_and_the_later_maximum():
    step = [0, 5, 10, 15, 20, 25, 30]
    top = [0.2, 0.5, 0.9, 0.95, 1.0, 0.97, 1.0]
    # an early spike of the ratio (9) before stage I ends must not set stage II's target
    ratio = [9.0, 1.0, 2.0, 3.6, 4.0, 3.9, 3.0]
    assert _stage_boundaries(step, top, ratio) == (
        10,
        15,
    )  # 0.9 >= 0.9 * 1.0; 3.6 >= 0.9 * 4
    assert _stage_boundaries(step, top, ratio, level=0.5) == (
        5,
        10,
    )  # 0.5 = 0.5 * 1; 2 = 0.5 * 4
    assert _stage_boundaries(step, top, ratio, level=1.0) == (20, 20)
    assert _stage_boundaries(np.array(step) * 3, top, ratio) == (
        30,
        45,
    )  # steps, not indices
    r = np.random.default_rng(0)
    for _ in range(20):
        t, q = r.random(9), r.random(9) * 5
        for level in (0.3, 0.75, 0.9):
            assert _stage_boundaries(
                np.arange(9) * 7, t, q, level
            ) == _stages_reference(list(np.arange(9) * 7), list(t), list(q), level)


@pytest.mark.boundary
@pytest.mark.parametrize("name", ["step", "top", "ratio"])
def test_stage_boundaries_refuses_nan_curves(name):
    args = {
        "step": np.arange(5.0),
        "top": np.linspace(0, 1, 5),
        "ratio": np.linspace(1, 3, 5),
    }
    args[name][1] = NAN
    with pytest.raises(ValueError, match=name):
        _stage_boundaries(**args)


# =================================================================================================
# contrastive.representations
# =================================================================================================
@pytest.mark.reference
def test_representations_use_the_final_threshold_and_no_mask():
    cfg = tiny_cfg(
        neurons=9, steps=10, bias_ramp=40, bias_max=0.4
    )  # beta = 0.4 * 10 / 40 = 0.1
    run = _hand_run(cfg, [1.0, 3.0], [0.0, 0.5], [0, 0])
    X = torch.randn(4, cfg.n_tokens, cfg.dim, generator=rng(3))
    got = C.representations(run, X)
    assert got.shape == (2, 4, 9)
    ref = _encode_reference(
        X.double()[None].expand(2, -1, -1, -1), run.W.double(), run.A.double(), 0.1
    )
    torch.testing.assert_close(got.double(), ref, rtol=1e-4, atol=1e-5)
    assert not torch.allclose(
        got, _encode(X[None].expand(2, -1, -1, -1), run.W, run.A, 0.4)
    )
    with pytest.raises(ValueError, match="tokens"):
        C.representations(run, X.double())


# =================================================================================================
# contrastive.ridge_probe
# =================================================================================================
def test_ridge_probe_separates_separable_data():
    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, 3, (300,), generator=g)
    f = torch.nn.functional.one_hot(y, 3).float() * 3 + 0.1 * torch.randn(
        300, 3, generator=g
    )
    pred = C.ridge_probe(f[:200], y[:200], f[200:], 3)
    assert (pred == y[200:]).float().mean() == 1.0
    with pytest.raises(ValueError, match="ridge"):
        C.ridge_probe(f[:200], y[:200], f[200:], 3, ridge=0)


@pytest.mark.reference
def test_ridge_probe_against_numpy_normal_equations():
    r = np.random.default_rng(3)
    for ridge in (0.5, 3.0, 1e-2):
        # features on very different scales and offsets, labels unbalanced
        ftr = r.normal(size=(25, 4)) * [1.0, 10.0, 0.1, 3.0] + [5.0, -2.0, 0.0, 1.0]
        fte = r.normal(size=(400, 4)) * [1.0, 10.0, 0.1, 3.0] + [5.0, -2.0, 0.0, 1.0]
        ytr = r.choice(3, size=25, p=[0.6, 0.3, 0.1])
        ytr[:3] = [0, 1, 2]
        got = C.ridge_probe(
            torch.tensor(ftr), torch.tensor(ytr), torch.tensor(fte), 3, ridge
        )
        ref = _ridge_reference(ftr, ytr, fte, 3, ridge)
        assert got.shape == (400,)
        np.testing.assert_array_equal(got.numpy(), ref)
    assert len(set(ref.tolist())) >= 2  # not a constant predictor
    # batched: each model its own probe
    f2 = r.normal(size=(2, 25, 4))
    t2 = r.normal(size=(2, 60, 4))
    got = C.ridge_probe(
        torch.tensor(f2), torch.tensor(ytr), torch.tensor(t2), 4, 0.2
    )
    assert got.shape == (2, 60)
    for e in range(2):
        np.testing.assert_array_equal(
            got[e].numpy(), _ridge_reference(f2[e], ytr, t2[e], 4, 0.2)
        )
    # default ridge is 1e-2
    np.testing.assert_array_equal(
        C.ridge_probe(
            torch.tensor(f2[0]), torch.tensor(ytr), torch.tensor(t2[0]), 4
        ).numpy(),
        _ridge_reference(f2[0], ytr, t2[0], 4, 1e-2),
    )


@pytest.mark.reference
def test_ridge_probe_constant_feature_does_not_blow_up():
    ftr = torch.tensor([[1.0, 2.0], [1.0, -1.0], [1.0, 3.0], [1.0, -2.0]], dtype=DT)
    y = torch.tensor([1, 0, 1, 0])
    pred = C.ridge_probe(
        ftr, y, torch.tensor([[1.0, 5.0], [1.0, -5.0]], dtype=DT), 2
    )
    assert pred.tolist() == [1, 0]
    # a feature with a tiny spread is standardized like any other (the floor is 1e-6): it
    # outweighs the intercept of the unbalanced labels
    x = torch.tensor([3e-4, -1e-4, -2e-4, -1e-4, -2e-4, -1.5e-4, 2.5e-4], dtype=DT)
    ftr = torch.stack([torch.ones(7, dtype=DT), x], 1)
    y = torch.tensor([1, 0, 0, 0, 0, 0, 1])
    fte = torch.tensor([[1.0, 3e-4], [1.0, -2e-4], [1.0, 2e-4]], dtype=DT)
    assert C.ridge_probe(ftr, y, fte, 2).tolist() == [1, 0, 1]


# =================================================================================================
# contrastive.feature_probe_accuracy
# =================================================================================================
@pytest.mark.reference
def test_feature_probe_accuracy_is_per_feature_recall_on_seeded_fresh_samples():
    cfg = tiny_cfg(neurons=8, probe_samples=40, noise=1.5)
    run = _hand_run(cfg, [1.0, 2.0], [0.0, 0.0], [0, 0])
    got = C.feature_probe_accuracy(run, seed=3)
    assert got.shape == (2, 5)
    g = rng(10_003)
    args = (40, cfg.n_tokens, cfg.n_signal, cfg.noise, g)
    Xtr, ytr = C.single_feature_samples(run.M, *args)
    Xte, yte = C.single_feature_samples(run.M, *args)
    pred = C.ridge_probe(
        C.representations(run, Xtr), ytr, C.representations(run, Xte), 5
    )
    ref = np.zeros((2, 5))
    for e in range(2):
        for k in range(5):
            sel = [i for i in range(40) if yte[i] == k]
            ref[e, k] = sum(int(pred[e, i]) == k for i in sel) / len(sel)
    np.testing.assert_allclose(got, ref, rtol=1e-6)
    assert 0 < got.max() <= 1 and got.min() < 1  # informative, not saturated
    assert not np.array_equal(C.feature_probe_accuracy(run, seed=4), got)
    np.testing.assert_array_equal(
        C.feature_probe_accuracy(run), C.feature_probe_accuracy(run, 0)
    )


# =================================================================================================
# contrastive.best_alignment_curves
# =================================================================================================
def test_best_alignment_curves_by_hand():
    cfg = replace(
        C.ContrastiveConfig.quick(),
        dim=8,
        n_features=4,
        n_minority=2,
        neurons=3,
        batch=8,
        steps=4,
        log_every=2,
        bias_ramp=2,
        replicates=1,
    )
    run = C.train_encoders(cfg, [2.0], [0.0], seed=0)
    proj = np.zeros((2, 1, 3, 4))
    proj[0, 0] = [[1, 0, 0.2, 0.0], [0, 3, 0.0, 0.4]] + [[0, 0, 0, 0]]
    proj[1, 0] = [[2, 0, 0.1, 0.0], [0, 1, 0.0, 1.2]] + [[0, 0, 0, 0]]
    run.history["proj"] = proj
    c = C.best_alignment_curves(run)
    assert np.allclose(c["major"][:, 0], [2.0, 1.5]) and np.allclose(
        c["minor"][:, 0], [0.3, 0.65]
    )
    assert np.allclose(c["growth"], [0.65 / 0.3])
    with pytest.raises(TypeError, match="run"):
        C.best_alignment_curves({"proj": proj})


# =================================================================================================
# contrastive.paired
# =================================================================================================
@pytest.mark.reference
def test_encoder_run_select_paired_and_condition_means():
    cfg = tiny_cfg()
    ratios = [1.0, 3.0, 3.0, 1.0, 3.0, 3.0]
    fractions = [0.0, 0.0, 0.5, 0.0, 0.0, 0.5]
    seeds = [0, 0, 0, 1, 1, 1]
    run = _hand_run(cfg, ratios, fractions, seeds)
    assert run.select(3.0, 0.5) == [2, 5] and run.select(1.0, 0.0) == [0, 3]
    assert run.select(3.0, 0.0) == [1, 4] and run.select(1.0, 0.5) == []
    v = np.arange(12.0).reshape(6, 2) ** 2
    base, pruned = C.paired(run, v, 3.0, 0.5)
    assert base.tolist() == [[4.0, 9.0], [64.0, 81.0]] and pruned.tolist() == [
        [16.0, 25.0],
        [100.0, 121.0],
    ]
    means = C.condition_means(run, v)
    assert list(means) == [(1.0, 0.0), (3.0, 0.0), (3.0, 0.5)]  # first-seen order
    assert means[(1.0, 0.0)].tolist() == [(0 + 36) / 2, (1 + 49) / 2]
    assert means[(3.0, 0.5)].tolist() == [(16 + 100) / 2, (25 + 121) / 2]
    three = _hand_run(cfg, [2.0, 2.0, 2.0], [0.0, 0.0, 0.0], [0, 1, 2])
    assert C.condition_means(three, np.array([0.0, 1.0, 8.0])) == {
        (2.0, 0.0): 3.0
    }  # mean
    bad = _hand_run(cfg, [3.0, 3.0, 3.0, 3.0], [0.0, 0.5, 0.0, 0.5], [0, 0, 1, 2])
    with pytest.raises(ValueError, match="initializations"):
        C.paired(bad, np.zeros(4), 3.0, 0.5)
    with pytest.raises(ValueError, match="one row per model"):
        C.paired(run, np.zeros(5), 3.0, 0.5)
    with pytest.raises(ValueError, match="no unpruned"):
        C.paired(run, v, 1.0, 0.5)
    with pytest.raises(ValueError, match="one row per model"):
        C.condition_means(run, np.zeros(7))


@pytest.mark.boundary
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
    assert C.condition_means(run, np.arange(2.0)) == {
        (2.0, 0.0): 0.0,
        (2.0, 0.5): 1.0,
    }
    assert [v.tolist() for v in C.paired(run, np.arange(2.0), 2.0, 0.5)] == [
        [0.0],
        [1.0],
    ]


# =================================================================================================
# contrastive.continue_encoders
# =================================================================================================
def test_continue_encoders_goes_on_from_the_run_and_keeps_its_history():
    cfg = tiny_cfg(steps=4, log_every=2, init_scale=0.3)
    run = C.train_encoders(
        cfg, [1.0, 3.0, 3.0], [0.0, 0.0, 0.5], seed=1, replicates=2
    )
    keep = run.select(3.0, 0.0) + run.select(3.0, 0.5)
    more = C.continue_encoders(run, keep, 4, seed=1)
    assert more.config.steps == 8 and more.history["step"].tolist() == [
        0,
        2,
        4,
        6,
        8,
    ]
    np.testing.assert_array_equal(
        more.history["proj"][:3], run.history["proj"][:, keep]
    )
    assert more.ratios == [3.0] * 4 and more.fractions == [0.0, 0.0, 0.5, 0.5]
    assert more.seeds == [run.seeds[i] for i in keep]
    C.paired(
        more, more.history["proj"][-1], 3.0, 0.5
    )  # the pairs survive the continuation
    assert not torch.equal(more.W, run.W[keep])  # it trained
    again = C.continue_encoders(run, keep, 4, seed=1)
    assert torch.equal(again.W, more.W)  # deterministic
    other = C.continue_encoders(run, keep, 4, seed=1, stream=1)
    assert not torch.equal(other.W, more.W)  # another stream, other samples
    # it starts from the run's weights: with a vanishing step size they stay where they were
    frozen = C.continue_encoders(
        replace(run, config=replace(cfg, lr=1e-30)), keep, 2, seed=1
    )
    torch.testing.assert_close(frozen.W, run.W[keep])


def test_continue_encoders_rejects_bad_input():
    cfg = tiny_cfg(steps=2)
    run = C.train_encoders(cfg, [1.0], [0.0], seed=0, replicates=2)
    for bad in ([], [0, 0], [5], [True], "0", None):
        with pytest.raises(ValueError, match="models"):
            C.continue_encoders(run, bad, 2)
    with pytest.raises(TypeError, match="run"):
        C.continue_encoders({"W": run.W}, [0], 2)
    with pytest.raises((TypeError, ValueError), match="steps"):
        C.continue_encoders(run, [0], 0)


def test_random_encoder_accuracy_random_biases_change_the_encoder():
    """bias_scale > 0 draws per-neuron biases (deterministic per seed); 0 is the zero-bias start."""
    import gtlib

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
    plain = C.random_encoder_accuracy(cfg, seed=3)
    biased = C.random_encoder_accuracy(cfg, seed=3, bias_scale=1.0)
    assert biased.shape == (10,) and np.all((biased >= 0) & (biased <= 1))
    assert not np.array_equal(plain, biased)  # the biases are drawn and used
    assert np.array_equal(
        biased, C.random_encoder_accuracy(cfg, seed=3, bias_scale=1.0)
    )
    assert np.array_equal(
        plain, C.random_encoder_accuracy(cfg, seed=3, bias_scale=0.0)
    )
    with pytest.raises(ValueError, match="bias_scale"):
        C.random_encoder_accuracy(cfg, seed=3, bias_scale=-1.0)


def test_quiet_minority_leaves_the_minority_directions_untouched():
    # no input along the minority directions: without weight decay their projections
    # keep their initial values exactly; the majority ones move
    from tests.chapters.contrastive.helpers import tiny_cfg

    cfg = tiny_cfg(weight_decay=0.0, steps=6)
    run = C.train_encoders(
        cfg, [1.0], [0.0], seed=0, independent=True, quiet_minority=True
    )
    P = run.history["proj"]  # (T, E, m, K)
    np.testing.assert_allclose(P[-1, ..., -2:], P[0, ..., -2:], rtol=1e-5, atol=1e-7)
    assert not np.allclose(P[-1, ..., :-2], P[0, ..., :-2])
    loud = C.train_encoders(cfg, [1.0], [0.0], seed=0, independent=True)
    assert not np.allclose(loud.history["proj"][-1, ..., -2:], P[0, ..., -2:])
    with pytest.raises((TypeError, ValueError), match="quiet_minority"):
        C.train_encoders(cfg, [1.0], [0.0], quiet_minority=1)
