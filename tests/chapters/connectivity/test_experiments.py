"""Tests of gtlib.connectivity.experiments, one section per public function."""

from __future__ import annotations
import numpy as np
import pytest
import torch
import types
from gtlib import connectivity as C
from gtlib.models import make_mlp
from gtlib.connectivity.experiments import (
    _shuffled_weights,
    _seeds,
    _task_arithmetic,
)
from tests.chapters.connectivity.helpers import (
    D,
    data,
    K,
    net,
    net_ref,
    ref_fit_member,
    same_params,
    tiny_cfg,
    X,
    X_ref,
    Y,
    Y_ref,
)


# =================================================================================================
# connectivity.ConnectivityConfig
# =================================================================================================
def test_configs_construct():
    assert C.ConnectivityConfig.quick().validate().widths[-1] == 512
    full = C.ConnectivityConfig.full().validate()
    assert (
        full.widths[-1] > 512
        and full.recipe.epochs > C.ConnectivityConfig.quick().recipe.epochs
    )


@pytest.mark.reference
def test_recipe_defaults_are_the_documented_ones():
    r = C.Recipe()
    assert (
        r.lr,
        r.momentum,
        r.batch_size,
        r.epochs,
        r.warmup,
        r.start_factor,
        r.weight_decay,
    ) == (0.05, 0.9, 100, 30, 0.2, 0.05, 0.0)
    cfg = C.ConnectivityConfig()
    assert cfg.alphas == 25 and cfg.max_iter == 100 and cfg.depth == 3
    assert (cfg.recipe.lr, cfg.recipe.warmup) == (0.1, 0.2)
    assert (cfg.spawn_recipe.lr, cfg.spawn_recipe.warmup) == (0.2, 0.0)
    assert (cfg.n_train, cfg.n_test) == (4000, 1000)  # MNIST-1D's default split
    assert cfg.widths == (32, 64, 128, 256, 512)
    assert (
        len(cfg.lambdas) == 16 and cfg.lambdas[0] == 0.0 and cfg.lambdas[-1] == 1.5
    )
    full = C.ConnectivityConfig.full()
    assert full.recipe.epochs == 2 * cfg.recipe.epochs and full.widths[-1] == 2048
    assert 512 in full.widths and full.alphas == 25


@pytest.mark.boundary
def test_cross_task_lambdas_must_not_be_empty():
    with pytest.raises((ValueError, TypeError), match="lambdas"):
        C.ConnectivityConfig(lambdas=())


# =================================================================================================
# connectivity.train_pairs
# =================================================================================================
@pytest.mark.reference
def test_train_pairs_seeds_and_snapshots():
    cfg = tiny_cfg()
    x, y = data(n=20, seed=8)
    snaps = {}
    out = C.train_pairs(cfg, x, y, seed=1, snapshots=snaps)
    assert sorted(out) == [3, 4]
    for j, w in enumerate((3, 4)):
        s = _seeds(1, 10 + j, 2)
        for i in range(2):
            want, _ = ref_fit_member(
                make_mlp(s[i], D, w, 1, K), x, y, cfg.recipe, 10_000 + s[i]
            )
            same_params(out[w][i], want, atol=1e-6)
    per_epoch = 3  # ceil(20 / 8)
    assert sorted(snaps) == [0, per_epoch, 2 * per_epoch]
    same_params(snaps[0][0], make_mlp(_seeds(1, 11, 2)[0], D, 4, 1, K))
    same_params(snaps[2 * per_epoch][1], out[4][1])
    assert C.train_pairs(cfg, x, y, seed=1).keys() == out.keys()


def test_train_pairs_twin_shares_a_s_init_not_its_minibatch_order():
    cfg = tiny_cfg()
    x, y = data(n=20, seed=8)
    twin, snaps = {}, {}
    out = C.train_pairs(cfg, x, y, seed=1, twin=twin, snapshots=snaps)
    assert sorted(twin) == [4]  # the widest width only
    s = _seeds(1, 11, 2)
    want, _ = ref_fit_member(
        make_mlp(s[0], D, 4, 1, K), x, y, cfg.recipe, 20_000 + s[0]
    )
    same_params(twin[4], want, atol=1e-6)
    for i in range(2):  # A and B are what they are without the twin
        want, _ = ref_fit_member(
            make_mlp(s[i], D, 4, 1, K), x, y, cfg.recipe, 10_000 + s[i]
        )
        same_params(out[4][i], want, atol=1e-6)
    assert all(len(v) == 2 for v in snaps.values())
    with pytest.raises(TypeError, match="twin"):
        C.train_pairs(cfg, x, y, seed=1, twin=[])


# =================================================================================================
# connectivity.align
# =================================================================================================
@pytest.mark.reference
def test_align_is_matching_then_four_paths():
    a, b = net_ref(100, depth=2), net_ref(101, depth=2)
    xt, yt = data(n=19, seed=9)
    r = C.align(a, b, X_ref, Y_ref, xt, yt, alphas=6, max_iter=3, seed=2)
    perms = C.weight_matching(a, b, max_iter=3, seed=2)
    for u, v in zip(r.perms, perms):
        np.testing.assert_array_equal(u, v)
    bm = C.permute(b, perms)
    same_params(r.b_matched, bm)
    for got, (m, x, y) in zip(
        [r.naive, r.matched, r.naive_train, r.matched_train],
        [(b, xt, yt), (bm, xt, yt), (b, X_ref, Y_ref), (bm, X_ref, Y_ref)],
    ):
        want = C.evaluate_path(a, m, x, y, 6)
        assert len(got.alphas) == 6
        np.testing.assert_allclose(got.loss, want.loss, rtol=1e-6)


# =================================================================================================
# connectivity.spawn_experiment
# =================================================================================================
def test_spawn_control_first_stable_and_sweeps():
    x, y = torch.randn(60, 6), torch.randint(0, 3, (60,))
    cfg = C.ConnectivityConfig(
        widths=(8, 16),
        spawn_width=8,
        spawn_pairs=1,
        spawn_fractions=(0.0, 0.5),
        alphas=5,
        spawn_recipe=C.Recipe(lr=0.05, epochs=2, batch_size=20),
        recipe=C.Recipe(lr=0.05, epochs=2, batch_size=20),
        depths=(1,),
        depth_width=8,
        epoch_width=8,
        epoch_snapshots=(0, 1),
    )
    sp = C.spawn_experiment(cfg, x, y, x, y, seed=0)
    assert sp.independent is not None and np.isfinite(sp.independent_error_barrier)
    assert sp.error_barrier.shape == (2, 1)
    sp.error_barrier = np.array([[5.0], [1.0]])
    assert sp.first_stable == pytest.approx(sp.fractions[1])
    sp.error_barrier = np.array([[1.0], [5.0]])
    assert sp.first_stable is None
    snaps = {}
    pairs = C.train_pairs(cfg, x, y, seed=0, snapshots=snaps)
    assert sorted(snaps) == [0, 3, 6] and torch.equal(
        snaps[6][0].layers[0].weight, pairs[8][0].layers[0].weight
    )
    ev = C.barrier_vs_epoch(snaps, 3, x, y, alphas=5)
    assert [p.label for p in ev] == [0.0, 1.0, 2.0]
    assert [p.label for p in C.depth_sweep(cfg, x, y)] == [1]


def test_spawn_experiment_unshared_null():
    x, y = torch.randn(60, 6), torch.randint(0, 3, (60,))
    cfg = C.ConnectivityConfig(
        spawn_width=8,
        spawn_pairs=2,
        spawn_fractions=(0.0, 0.25, 0.5),
        alphas=5,
        spawn_recipe=C.Recipe(lr=0.05, epochs=2, batch_size=20),
    )
    plain = C.spawn_experiment(cfg, x, y, x, y, seed=1, control=False)
    sp = C.spawn_experiment(cfg, x, y, x, y, seed=1, control=False, unshared=True)
    assert plain.unshared_error_barrier is None
    assert sp.unshared_error_barrier.shape == (2,)
    np.testing.assert_array_equal(
        sp.error_barrier, plain.error_barrier
    )  # main run unchanged


@pytest.mark.reference
def test_spawn_experiment_against_its_composition():
    cfg = tiny_cfg(spawn_pairs=2)
    x, y = data(n=20, seed=10)
    xt, yt = data(n=17, seed=11)
    r = C.spawn_experiment(cfg, x, y, xt, yt, seed=2)
    rec = cfg.spawn_recipe
    total = rec.steps(20)
    # spawn steps: round(f * total), sorted, duplicates merged (0.3 * 6 = 1.8 -> 2, 0.06 -> 0)
    assert r.total_steps == total == 6 and r.steps == [0, 2]
    assert r.fractions == [0.0, pytest.approx(1 / 3)] and r.error_barrier.shape == (
        2,
        2,
    )
    parent = make_mlp(_seeds(2, 30, 1)[0], D, 4, 1, K)
    _, psnaps = ref_fit_member(
        parent, x, y, rec, _seeds(2, 31, 1)[0], stop=2, snaps=(0, 2)
    )
    kid_seeds = _seeds(
        2, 32, 8
    )  # 4 children per spawn step, pair j = children 2j, 2j + 1
    for i, k in enumerate([0, 2]):
        assert len(r.children[k]) == 2
        for j, (c0, c1) in enumerate(r.children[k]):
            for c, kid in ((c0, 4 * i + 2 * j), (c1, 4 * i + 2 * j + 1)):
                want, _ = ref_fit_member(
                    psnaps[k], x, y, rec, kid_seeds[kid], start=k
                )
                same_params(c, want, atol=1e-6)
            p = C.evaluate_path(c0, c1, xt, yt, cfg.alphas)
            assert r.error_barrier[i, j] == pytest.approx(
                100 * p.error_barrier_mean, abs=1e-9
            )
            assert r.loss_barrier[i, j] == pytest.approx(p.loss_barrier, abs=1e-7)
    ctrl = _seeds(2, 33, 2)
    for j in range(2):
        want, _ = ref_fit_member(
            make_mlp(ctrl[j], D, 4, 1, K), x, y, rec, _seeds(2, 34, 2)[j]
        )
        same_params(r.independent[j], want, atol=1e-6)
    p = C.evaluate_path(*r.independent, xt, yt, cfg.alphas)
    assert r.independent_error_barrier == pytest.approx(
        100 * p.error_barrier_mean, abs=1e-9
    )
    other = C.Recipe(lr=0.3, batch_size=10, epochs=1, warmup=0.0)
    r2 = C.spawn_experiment(cfg, x, y, xt, yt, seed=2, recipe=other, control=False)
    assert (
        r2.total_steps == 2 and r2.steps == [0, 1] and r2.independent is None
    )  # 0.6 -> 1
    assert np.isnan(r2.independent_error_barrier)


# =================================================================================================
# connectivity.task_labels
# =================================================================================================
def test_task_labels():
    y = torch.arange(10)
    assert C.task_labels(y, "pretrain").tolist() == [0] * 5 + [1] * 5
    assert C.task_labels(y, 0).tolist() == [0, 1, 2, 3, 4] * 2
    assert C.task_labels(y, 1).tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]


@pytest.mark.reference
def test_task_labels_by_hand_and_bad_tasks():
    y = torch.tensor([7, 0, 9, 4, 5, 2])
    assert C.task_labels(y, "pretrain").tolist() == [1, 0, 1, 0, 1, 0]
    assert C.task_labels(y, 0).tolist() == [2, 0, 4, 4, 0, 2]
    assert C.task_labels(y, 1).tolist() == [3, 0, 4, 2, 2, 1]
    for bad in (2, True, "x", -1):
        with pytest.raises(ValueError):
            C.task_labels(y, bad)


# =================================================================================================
# connectivity.CrossTask
# =================================================================================================
@pytest.mark.reference
def test_cross_task_gains_by_hand():
    lam = np.array([0.0, 0.5, 1.0])
    acc = np.array([[0.2, 0.3], [0.6, 0.5], [0.5, 0.9]])
    assert C.CrossTask._gain(
        acc, lam, 0.55, [0.2, 0.1], [1.0, 0.5]
    ) == pytest.approx([0.5, 1.0], rel=1e-12)  # 0.55 is nearest to 0.5, not to 1.0
    g = C.CrossTask._gain(acc, lam, 1.0, [0.3, 0.9], [0.3, 1.0])
    assert np.isnan(g[0]) and g[1] == pytest.approx(0.0)
    ns = types.SimpleNamespace(
        _gain=C.CrossTask._gain,
        lambdas=lam,
        best_lambda=0.5,
        scratch_best_lambda=1.0,
        arith_acc=acc,
        arith_train_acc=acc[::-1],
        scratch_arith_acc=acc * 0.5,
        scratch_arith_train_acc=acc * 0.9,
        acc_pre=[0.1, 0.2],
        acc_ft=[[0.9, 0.0], [0.7, 0.0]],
        acc_init=[0.0, 0.1],
        acc_scratch=[0.5, 0.6],
        train_ends={
            "pre": [0.2, 0.1],
            "ft": [0.7, 0.9],
            "init": [0.1, 0.2],
            "scratch": [0.6, 0.7],
        },
    )
    assert C.CrossTask.gain_recovered.fget(ns) == pytest.approx(
        [0.5 / 0.8, 0.3 / 0.5]
    )
    assert C.CrossTask.train_gain_recovered.fget(ns) == pytest.approx(
        [0.4 / 0.5, 0.4 / 0.8]
    )
    assert C.CrossTask.scratch_gain_recovered.fget(ns) == pytest.approx(
        [0.25 / 0.5, 0.35 / 0.5]
    )
    assert C.CrossTask.scratch_train_gain_recovered.fget(ns) == pytest.approx(
        [(0.45 - 0.1) / 0.5, (0.81 - 0.2) / 0.5]
    )


# =================================================================================================
# connectivity.cross_task_experiment
# =================================================================================================
def test_cross_task_experiment_tiny():
    x, y = torch.randn(80, 6), torch.randint(0, 10, (80,))
    r = C.Recipe(lr=0.05, epochs=1, batch_size=40, warmup=0.0)
    cfg = C.ConnectivityConfig(
        ctl_width=8,
        depth=2,
        spawn_recipe=r,
        probe_recipe=r,
        ft_recipe=r,
        lambdas=(0.0, 0.5, 1.0),
    )
    ct = C.cross_task_experiment(cfg, x, y, x, y, seed=0, x_pre=x, y_pre=y)
    assert len(ct.ctl) == len(ct.ctl_base) == len(ct.ctl_scratch) == 2
    assert ct.arith_acc.shape == (3, 2) and ct.scratch_arith_acc.shape == (3, 2)
    assert all(0 <= a <= 1 for a in ct.agreement + ct.single_agreement)
    assert ct.best_lambda in (0.0, 0.5, 1.0) and len(ct.scratch_gain_recovered) == 2
    assert sorted(ct.train_ends) == ["ft", "init", "pre", "scratch"]
    i = list(ct.lambdas).index(ct.best_lambda)
    e = ct.train_ends
    want = (ct.arith_train_acc[i, 0] - e["pre"][0]) / (e["ft"][0] - e["pre"][0])
    got = ct.train_gain_recovered[0]
    assert (np.isnan(got) and e["ft"][0] == e["pre"][0]) or got == pytest.approx(
        want
    )


# =================================================================================================
# connectivity.pretraining_sweep
# =================================================================================================
def test_pretraining_sweep_tiny():
    # seeded data: the comparison with cross_task_experiment below is on 80 points, and unseeded
    # draws (whatever the global generator holds after other tests) moved it by up to 8 points
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(80, 6, generator=g), torch.randint(0, 10, (80,), generator=g)
    r = C.Recipe(lr=0.05, epochs=2, batch_size=40, warmup=0.0)
    cfg = C.ConnectivityConfig(
        ctl_width=8,
        depth=2,
        spawn_recipe=r,
        probe_recipe=r,
        ft_recipe=r,
        pretrain_epochs=(0, 1, 2),
        ft_runs=3,
    )
    ps = C.pretraining_sweep(cfg, x, y, x, y, seed=0, x_pre=x, y_pre=y)
    assert ps.ctl.shape == ps.ctl_base.shape == (3, 3, 2)
    assert ps.null_ctl.shape == (3, 2) and ps.ctl_ratio.shape == (3, 3, 2)
    assert ps.displacement.shape == ps.acc.shape == (
        3,
        2,
        3,
    ) and ps.acc_probe.shape == (3, 2)
    assert ps.disagree.shape == (3, 2, 3) and ps.unshared_disagree.shape == (2, 3)
    assert (ps.displacement > 0).all() and ((ps.acc >= 0) & (ps.acc <= 1)).all()
    # the shuffled-label arm: same budget, its own CTL, averaging and displacement
    assert ps.shuffled_ctl.shape == ps.shuffled_ctl_base.shape == (3, 2)
    assert ps.shuffled_ctl_ratio.shape == (3, 2) and ps.shuffled_disagree.shape == (
        2,
        3,
    )
    assert ps.shuffled_displacement.shape == ps.shuffled_acc.shape == (2, 3)
    assert (ps.shuffled_displacement > 0).all()
    assert not np.allclose(ps.shuffled_ctl, ps.ctl[-1])
    # the untrained body at half the learning rate: same start and probes, a shorter move
    assert ps.matched_ctl.shape == ps.matched_ctl_ratio.shape == (3, 2)
    assert ps.matched_displacement.shape == (2, 3)
    assert (ps.matched_displacement > 0).all()
    assert (ps.matched_displacement < ps.displacement[0]).all()
    assert (
        ps.matched_acc.shape == (2, 3)
        and ((ps.matched_acc >= 0) & (ps.matched_acc <= 1)).all()
    )
    # its null: the second random initialization at half the learning rate
    assert ps.matched_null_ctl.shape == ps.matched_null_ctl_ratio.shape == (3, 2)
    assert ps.matched_null_displacement.shape == (2, 3)
    assert (ps.matched_null_displacement > 0).all()
    assert not np.allclose(ps.matched_null_ctl, ps.matched_ctl)
    norm = ps.hidden_norm
    assert norm.shape == (3,) and (norm > 0).all()
    assert ps.null_hidden_norm > 0 and ps.shuffled_hidden_norm > 0
    body = ps.pretrained.layers[:-1]
    want = float(torch.sqrt(sum((p**2).sum() for l in body for p in l.parameters())))
    assert norm[-1] == pytest.approx(want)
    assert ps.matched_disagree.shape == (2, 3) and (ps.matched_disagree >= 0).all()
    # the shuffled-weights arm: the trained body's scale (the same hidden norm), its null
    assert ps.scale_hidden_norm == pytest.approx(norm[-1], rel=1e-5)
    assert ps.scale_ctl.shape == ps.scale_ctl_ratio.shape == (3, 2)
    assert ps.scale_displacement.shape == ps.scale_acc.shape == (2, 3)
    assert ps.scale_null_ctl_ratio.shape == (3, 2)
    assert ps.scale_null_displacement.shape == (2, 3)
    assert not np.allclose(ps.scale_null_ctl, ps.scale_ctl)
    # the fully pretrained body is the one cross_task_experiment pretrains (same seeds)
    ct = C.cross_task_experiment(cfg, x, y, x, y, seed=0, x_pre=x, y_pre=y)
    assert ps.acc_probe[-1].tolist() == pytest.approx(ct.acc_pre, abs=0.05)
    reuse = C.cross_task_experiment(
        cfg, x, y, x, y, seed=0, x_pre=x, y_pre=y, sweep=ps
    )
    assert (
        reuse.pretrained is ps.pretrained
        and reuse.finetuned[1][1] is ps.finetuned[1][1]
    )
    assert reuse.acc_ft[0][0] == C.accuracy(
        ps.finetuned[0][0], x, C.task_labels(y, 0)
    )
    # with a sweep, the control is its arm without pretraining, at the same fine-tuning budget
    assert reuse.init is ps.start and reuse.scratch[1] is ps.start_finetuned[1][0]
    assert len(ps.start_finetuned) == 2 and len(ps.start_finetuned[0]) == 3
    w0 = C.params(ps.start)[0][0]
    assert not torch.equal(w0, C.params(ps.pretrained)[0][0])
    assert reuse.acc_scratch[0] == C.accuracy(
        ps.start_finetuned[0][0], x, C.task_labels(y, 0)
    )
    # the shuffled-label arm's task addition, from its body and its first run per task
    assert (
        ps.shuffled_finetuned[1][2] is not None
        and len(ps.shuffled_finetuned[0]) == 3
    )
    lam = np.asarray(cfg.lambdas, dtype=float)
    tr = [(x, C.task_labels(y, t)) for t in (0, 1)]
    _, acc, best, lo, hi = _task_arithmetic(
        ps.shuffled_body, [ps.shuffled_finetuned[t][0] for t in (0, 1)], lam, tr, tr
    )
    assert reuse.shuffled_best_lambda == best
    assert np.array_equal(reuse.shuffled_arith_train_acc, acc)
    i = list(lam).index(best)
    for t in (0, 1):
        g = reuse.shuffled_train_gain_recovered[t]
        assert (np.isnan(g) and hi[t] == lo[t]) or g == pytest.approx(
            (acc[i, t] - lo[t]) / (hi[t] - lo[t])
        )
    assert all(
        np.isnan(v) for v in ct.shuffled_train_gain_recovered
    )  # no sweep, no arm
    with pytest.raises(ValueError, match="pretrain_epochs"):
        C.pretraining_sweep(
            C.ConnectivityConfig(
                ctl_width=8, depth=2, spawn_recipe=r, pretrain_epochs=(0, 1)
            ),
            x,
            y,
            x,
            y,
            x_pre=x,
            y_pre=y,
        )


# =================================================================================================
# connectivity.add_noise
# =================================================================================================
def test_add_noise_and_noisy_planted_check():
    m = net(width=20)
    assert all(
        torch.equal(u.weight, v.weight)
        for u, v in zip(C.add_noise(m, 0.0).layers, m.layers)
    )
    noisy = C.add_noise(m, 0.1, seed=3)
    rel = (noisy.layers[1].weight - m.layers[1].weight).std() / m.layers[
        1
    ].weight.std()
    assert 0.05 < float(rel) < 0.2
    r = C.planted_permutation_check(m, X, Y, seed=0, noise=0.05)
    assert r["recovered"] == [1.0] * 3 and max(r["recovered_identity"]) < 0.5
    with pytest.raises(ValueError, match="scale"):
        C.add_noise(m, -1.0)


@pytest.mark.reference
def test_add_noise_is_relative_gaussian_from_one_generator():
    m = net_ref(7, depth=2)
    got = C.add_noise(m, 0.3, seed=9)
    g = torch.Generator().manual_seed(9)
    ws, bs = C.params(m)
    want = [t + 0.3 * float(t.std()) * torch.randn(t.shape, generator=g) for t in ws]
    want += [
        t + 0.3 * float(t.std()) * torch.randn(t.shape, generator=g) for t in bs
    ]
    for p, q in zip(
        [l.weight for l in got.layers] + [l.bias for l in got.layers], want
    ):
        torch.testing.assert_close(p.detach(), q, rtol=1e-6, atol=1e-7)
    same_params(C.add_noise(m, 0.0, seed=9), m)
    assert not torch.equal(
        C.add_noise(m, 0.3, seed=10).layers[0].weight, got.layers[0].weight
    )
    same_params(C.add_noise(m, 0.3), C.add_noise(m, 0.3, seed=0))
    assert C.add_noise(net_ref(1, bias=False), 0.1).layers[0].bias is None


# =================================================================================================
# connectivity.planted_permutation_check
# =================================================================================================
def test_planted_check_reports_exact_symmetry():
    r = C.planted_permutation_check(net(width=20), X, Y, seed=0)
    assert (
        r["max_logit_diff"] <= 1e-10
        and r["recovered"] == [1.0] * 3
        and r["barrier"] <= 1e-6
    )


# =================================================================================================
# connectivity._seeds
# =================================================================================================
@pytest.mark.reference
def test_seeds_scheme_by_hand():
    assert _seeds(0, 10, 2) == [10_000, 10_001]
    assert _seeds(2, 31, 3) == [2_031_006, 2_031_007, 2_031_008]
    parts = [
        set(_seeds(s, t, 4)) for s in range(3) for t in (10, 30, 31, 32, 40, 50)
    ]
    assert len(set().union(*parts)) == sum(map(len, parts))


def test_shuffled_weights_keeps_each_tensors_values():
    m = make_mlp(0, 5, 8, 2, 3)
    s = _shuffled_weights(m, 1)
    for a, b in zip(m.layers[:-1], s.layers[:-1]):
        for p, q in zip(a.parameters(), b.parameters()):
            assert p.shape == q.shape
            assert torch.equal(
                p.detach().flatten().sort().values, q.flatten().sort().values
            )
            assert not torch.equal(p, q)
    for p, q in zip(m.layers[-1].parameters(), s.layers[-1].parameters()):
        assert torch.equal(p, q)  # the head is left alone
    assert torch.equal(_shuffled_weights(m, 1).layers[0].weight, s.layers[0].weight)
