"""Unit tests of gtlib.connectivity: symmetries, matching, barriers, feature metrics, bad inputs."""
import numpy as np
import pytest
import torch

from gtlib import connectivity as C
from gtlib.models import BatchedMLP, make_mlp


def net(seed=0, width=16, depth=3, d=6, out=4, bias=True):
    return make_mlp(seed, d, width, depth, out, bias=bias)


X = torch.randn(50, 6, generator=torch.Generator().manual_seed(1))
Y = torch.randint(0, 4, (50,), generator=torch.Generator().manual_seed(2))


@pytest.mark.parametrize("bias", [True, False])
def test_permuted_net_computes_same_function(bias):
    m = net(bias=bias)
    p = C.permute(m, C.random_perms(m, seed=3))
    assert torch.allclose(p(X), m(X), atol=1e-5)
    assert not torch.allclose(p.layers[0].weight, m.layers[0].weight)


def test_permute_with_identity_is_a_copy_and_inverse_undoes():
    m = net()
    ident = [np.arange(16)] * 3
    assert all(torch.equal(u.weight, v.weight) for u, v in zip(C.permute(m, ident).layers, m.layers))
    perms = C.random_perms(m, seed=5)
    back = C.permute(C.permute(m, perms), [np.argsort(p) for p in perms])
    assert all(torch.equal(u.weight, v.weight) for u, v in zip(back.layers, m.layers))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_weight_matching_recovers_planted_permutation(seed):
    m = net(seed=seed, width=24)
    planted = C.random_perms(m, seed=seed + 10)
    found = C.weight_matching(m, C.permute(m, planted))
    assert C.perm_recovery(found, planted) == [1.0, 1.0, 1.0]


def test_activation_matching_recovers_planted_permutation():
    m = make_mlp(0, 6, 12, 3, 4, act="tanh")  # no dead units, so no ties between silent units
    planted = C.random_perms(m, seed=4)
    found = C.activation_matching(m, C.permute(m, planted), X)
    assert C.perm_recovery(found, planted) == [1.0, 1.0, 1.0]


def test_weight_matching_does_not_lower_the_objective():
    a, b = net(0), net(1)

    def score(bb):
        return sum(float(((u.weight * v.weight).sum() + (u.bias * v.bias).sum()).detach())
                   for u, v in zip(a.layers, bb.layers))
    assert score(C.permute(b, C.weight_matching(a, b))) >= score(b) - 1e-6


def test_planted_check_reports_exact_symmetry():
    r = C.planted_permutation_check(net(width=20), X, Y, seed=0)
    assert r["max_logit_diff"] <= 1e-10 and r["recovered"] == [1.0] * 3 and r["barrier"] <= 1e-6


def test_barrier_of_a_net_with_itself_is_zero():
    m = net()
    p = C.evaluate_path(m, m, X, Y, 9)
    assert abs(p.loss_barrier) < 1e-6 and abs(p.error_barrier) < 1e-9
    assert np.allclose(p.loss, p.loss[0], atol=1e-6)


def test_barrier_closed_forms():
    a = np.linspace(0, 1, 5)
    assert C.barrier(a, 1 + a) == 0.0                   # a line has no barrier
    assert C.barrier(a, a * (1 - a)) == pytest.approx(0.25)  # a bump of height 1/4
    assert C.barrier(a, (a - 0.5) ** 2) == pytest.approx(0.0)  # convex: at most the chord
    assert C.barrier(a, -a * (1 - a)) == pytest.approx(0.0)


def test_path_endpoints_are_the_networks():
    a, b = net(0), net(1)
    stack = C.path_stack(a, b, [0.0, 0.25, 1.0])
    out = stack(X)
    assert torch.allclose(out[0], a(X), atol=1e-5) and torch.allclose(out[2], b(X), atol=1e-5)
    assert torch.allclose(out[1], C.lerp(a, b, 0.25)(X), atol=1e-5)


def test_llfc_of_identical_features_is_zero_and_scale_invariant():
    m = net()
    assert max(C.llfc_dissimilarity(m, m, X, 0.3)) < 1e-6
    u = torch.rand(10, 5)
    assert C.cosine_dissimilarity(u, 3 * u) < 1e-6
    assert C.cosine_dissimilarity(torch.zeros(3, 4), torch.zeros(3, 4)) == 0.0
    assert C.cosine_dissimilarity(torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 1.0]])) == \
        pytest.approx(1.0)


def test_commutativity_residual_closed_form():
    m = net()
    assert max(C.commutativity_residual(m, m, X)) < 1e-7
    a, b = net(0), net(1)
    ha, hb = a.features(X)[0], b.features(X)[0]
    wa, wb = a.layers[1].weight, b.layers[1].weight
    want = ((ha @ wa.T + hb @ wb.T - hb @ wa.T - ha @ wb.T).norm() / (ha @ wa.T + hb @ wb.T).norm())
    assert C.commutativity_residual(a, b, X)[0] == pytest.approx(float(want), rel=1e-4)


def test_average_and_task_vectors():
    pre, ft1, ft2 = net(0), net(1), net(2)
    avg = C.average([ft1, ft2])
    assert torch.allclose(avg.layers[1].weight, (ft1.layers[1].weight + ft2.layers[1].weight) / 2)
    taus = [C.task_vector(pre, ft1)]
    merged = C.apply_task_vectors(pre, taus, 1.0, ft1)  # pre + tau = ft1
    assert all(torch.allclose(u.weight, v.weight, atol=1e-6) for u, v in zip(merged.layers, ft1.layers))
    same = C.apply_task_vectors(pre, taus, 0.0, pre)
    assert torch.allclose(same(X), pre(X))


def test_fit_trains_and_respects_start_steps_and_frozen_head():
    x = torch.randn(64, 6)
    y = (x[:, 0] > 0).long()
    model = BatchedMLP.init([0, 0], 6, 8, 1, 2)
    w0 = [w.detach().clone() for w in model.weights]
    rec = C.Recipe(lr=0.1, epochs=5, batch_size=16, warmup=0.0, weight_decay=0.01)
    C.fit(model, x, y, rec, seeds=[1, 2], start_steps=[0, rec.steps(64)], freeze_last_layer=True)
    assert torch.equal(model.weights[0][1], w0[0][1])          # member 1 never started (nor decayed)
    assert not torch.equal(model.weights[0][0], w0[0][0])      # member 0 trained
    assert torch.equal(model.weights[-1], w0[-1])              # head frozen for both


def test_spawn_snapshots_match_parent_prefix():
    x, y = torch.randn(40, 6), torch.randint(0, 3, (40,))
    model = BatchedMLP.init([3], 6, 8, 2, 3)
    rec = C.Recipe(lr=0.05, epochs=2, batch_size=10)
    snaps = C.fit(model, x, y, rec, seeds=[4], stop_step=5, snapshot_steps=[0, 5])
    assert sorted(snaps) == [0, 5]
    assert torch.equal(snaps[5][0].layers[0].weight, model.member(0).layers[0].weight)


def test_task_labels():
    y = torch.arange(10)
    assert C.task_labels(y, "pretrain").tolist() == [0] * 5 + [1] * 5
    assert C.task_labels(y, 0).tolist() == [0, 1, 2, 3, 4] * 2
    assert C.task_labels(y, 1).tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]


def test_recipe_schedule():
    r = C.Recipe(lr=1.0, warmup=0.5, start_factor=0.1)
    assert r.lr_at(0, 10) == pytest.approx(0.1) and r.lr_at(5, 10) == pytest.approx(1.0)
    assert r.lr_at(10, 10) == 0.0
    assert C.Recipe(lr=1.0, warmup=0.0).lr_at(0, 10) == 1.0


def test_configs_construct():
    assert C.ConnectivityConfig.quick().validate().widths[-1] == 512
    full = C.ConnectivityConfig.full().validate()
    assert full.widths[-1] > 512 and full.recipe.epochs > C.ConnectivityConfig.quick().recipe.epochs


def test_bad_inputs_raise():
    a = net()
    with pytest.raises(TypeError, match="a must be"):
        C.lerp("net", a, 0.5)
    with pytest.raises(ValueError, match="same layer shapes"):
        C.weight_matching(a, net(width=8))
    with pytest.raises(ValueError, match="perms"):
        C.permute(a, [np.arange(16)])
    with pytest.raises(ValueError, match=r"perms\[0\]"):
        C.permute(a, [np.zeros(16, int)] * 3)
    with pytest.raises(ValueError, match="max_iter"):
        C.weight_matching(a, a, max_iter=0)
    with pytest.raises(ValueError, match="alphas"):
        C.barrier([0.2, 1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="alphas"):
        C.evaluate_path(a, a, X, Y, 1)
    with pytest.raises(ValueError, match="alpha"):
        C.lerp(a, a, float("nan"))
    with pytest.raises(ValueError, match="u and v"):
        C.cosine_dissimilarity(torch.zeros(2, 3), torch.zeros(3, 2))
    with pytest.raises(ValueError, match="lr"):
        C.Recipe(lr=0).validate()
    with pytest.raises(ValueError, match="widths"):
        C.ConnectivityConfig(widths=(64, 32)).validate()
    with pytest.raises(ValueError, match="seeds"):
        C.fit(BatchedMLP.init([0], 6, 4, 1, 2), X, Y % 2, C.Recipe(), seeds=[1, 2])
    with pytest.raises(ValueError, match="task"):
        C.task_labels(Y, 2)
    with pytest.raises(TypeError, match="y must be"):
        C.task_labels(X[:, 0], 0)
    with pytest.raises(TypeError, match="model must be a BatchedMLP"):
        C.fit(a, X, Y, C.Recipe(), seeds=[0])


def test_barrier_mean_closed_forms():
    a = np.linspace(0, 1, 5)
    assert C.barrier_mean(a, 1 + a) == pytest.approx(0.5)     # max 2 minus mean 1.5
    assert C.barrier_mean(a, a * (1 - a)) == pytest.approx(0.25)
    v = 0.3 + a * (1 - a)                                      # equal endpoints: both forms agree
    assert C.barrier_mean(a, v) == pytest.approx(C.barrier(a, v))
    with pytest.raises(ValueError, match="alphas"):
        C.barrier_mean([0.0, 0.5], [1.0, 2.0])


def test_activation_matching_methods_and_bad_method():
    m = make_mlp(0, 6, 12, 3, 4, act="tanh")
    planted = C.random_perms(m, seed=4)
    found = C.activation_matching(m, C.permute(m, planted), X, method="pearson")
    assert C.perm_recovery(found, planted) == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="method"):
        C.activation_matching(m, m, X, method="cosine")


def test_endpoint_dissimilarity_and_weak_additivity():
    m = net()
    assert max(C.endpoint_dissimilarity(m, m, X)) < 1e-6
    assert max(C.weak_additivity(m, m, X)) < 1e-6          # relu(2z) = 2 relu(z)
    a, b = net(0), net(1)
    za, zb = C.preactivations(a, X)[0], C.preactivations(b, X)[0]
    want = C.cosine_dissimilarity(torch.relu(za) + torch.relu(zb), torch.relu(za + zb))
    assert C.weak_additivity(a, b, X)[0] == pytest.approx(want)
    assert C.weak_additivity(a, b, X)[0] > 0.01


def test_repair_keeps_endpoints_and_matches_target_statistics():
    a, b = net(0), net(1)
    stk = C.repair_stack(a, b, [0.0, 0.5, 1.0], X)
    out = stk(X)
    assert torch.allclose(out[0], a(X), atol=1e-4) and torch.allclose(out[2], b(X), atol=1e-4)
    mid = stk.member(1)
    z = C.preactivations(mid, X)
    za, zb = C.preactivations(a, X), C.preactivations(b, X)
    for l in range(3):
        live = (za[l].std(0) + zb[l].std(0)) > 1e-3
        assert torch.allclose(z[l].mean(0), (za[l].mean(0) + zb[l].mean(0)) / 2, atol=1e-4)
        assert torch.allclose(z[l].std(0)[live], ((za[l].std(0) + zb[l].std(0)) / 2)[live],
                              rtol=1e-3, atol=1e-4)
    with pytest.raises(ValueError, match="biases"):
        C.repair_stack(net(bias=False), net(1, bias=False), [0.5], X)


def test_bezier_curve_endpoints_and_straight_line_case():
    a, b = net(0), net(1)
    mid = C.lerp(a, b, 0.5)
    ts = [0.0, 0.3, 1.0]
    out = C.bezier_stack(a, mid, b, ts)(X)
    assert torch.allclose(out[0], a(X), atol=1e-5) and torch.allclose(out[2], b(X), atol=1e-5)
    assert torch.allclose(out[1], C.lerp(a, b, 0.3)(X), atol=1e-5)  # midpoint control = line
    x = torch.randn(64, 6)
    y = (x[:, 0] > 0).long()
    a2, b2 = C.train_nets([0, 1], x, y, 8, 1, 2, C.Recipe(lr=0.1, epochs=3, batch_size=16))
    m = C.fit_bezier(a2, b2, x, y, C.Recipe(lr=0.05, epochs=2, batch_size=16), seed=0)
    assert not torch.equal(m.layers[0].weight, C.lerp(a2, b2, 0.5).layers[0].weight)
    p = C.evaluate_bezier(a2, m, b2, x, y, 5)
    assert len(p.loss) == 5 and np.all(np.isfinite(p.loss))
    with pytest.raises(ValueError, match="samples"):
        C.fit_bezier(a2, b2, x, y, C.Recipe(), samples=0)


def test_add_noise_and_noisy_planted_check():
    m = net(width=20)
    assert all(torch.equal(u.weight, v.weight) for u, v in zip(C.add_noise(m, 0.0).layers,
                                                               m.layers))
    noisy = C.add_noise(m, 0.1, seed=3)
    rel = (noisy.layers[1].weight - m.layers[1].weight).std() / m.layers[1].weight.std()
    assert 0.05 < float(rel) < 0.2
    r = C.planted_permutation_check(m, X, Y, seed=0, noise=0.05)
    assert r["recovered"] == [1.0] * 3 and max(r["recovered_identity"]) < 0.5
    with pytest.raises(ValueError, match="scale"):
        C.add_noise(m, -1.0)


def test_spawn_control_first_stable_and_sweeps():
    x, y = torch.randn(60, 6), torch.randint(0, 3, (60,))
    cfg = C.ConnectivityConfig(widths=(8, 16), spawn_width=8, spawn_pairs=1,
                               spawn_fractions=(0.0, 0.5), alphas=5,
                               spawn_recipe=C.Recipe(lr=0.05, epochs=2, batch_size=20),
                               recipe=C.Recipe(lr=0.05, epochs=2, batch_size=20),
                               depths=(1,), depth_width=8, epoch_width=8,
                               epoch_snapshots=(0, 1))
    sp = C.spawn_experiment(cfg, x, y, x, y, seed=0)
    assert sp.independent is not None and np.isfinite(sp.independent_error_barrier)
    assert sp.error_barrier.shape == (2, 1)
    sp.error_barrier = np.array([[5.0], [1.0]])
    assert sp.first_stable == pytest.approx(sp.fractions[1])
    sp.error_barrier = np.array([[1.0], [5.0]])
    assert sp.first_stable is None
    snaps = {}
    pairs = C.train_pairs(cfg, x, y, seed=0, snapshots=snaps)
    assert sorted(snaps) == [0, 3, 6] and torch.equal(snaps[6][0].layers[0].weight,
                                                     pairs[8][0].layers[0].weight)
    ev = C.barrier_vs_epoch(snaps, 3, x, y, alphas=5)
    assert [p.label for p in ev] == [0.0, 1.0, 2.0]
    assert [p.label for p in C.depth_sweep(cfg, x, y)] == [1]


def test_cross_task_experiment_tiny():
    x, y = torch.randn(80, 6), torch.randint(0, 10, (80,))
    r = C.Recipe(lr=0.05, epochs=1, batch_size=40, warmup=0.0)
    cfg = C.ConnectivityConfig(ctl_width=8, depth=2, spawn_recipe=r, probe_recipe=r,
                               ft_recipe=r, lambdas=(0.0, 0.5, 1.0))
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
    assert (np.isnan(got) and e["ft"][0] == e["pre"][0]) or got == pytest.approx(want)


def test_commutativity_bound_ratio_known_answers():
    a, b = net(0), net(1)
    r = C.commutativity_bound_ratio(a, b, X)
    assert len(r) == 3 and all(0.0 <= v <= 1.0 + 1e-6 for v in r)
    assert C.commutativity_bound_ratio(a, a, X) == [0.0, 0.0, 0.0]  # no difference: 0/0 -> 0
    # residual / bound reproduces the residual of commutativity_residual up to the norms
    res = C.commutativity_residual(a, b, X)
    with torch.no_grad():
        fa, fb = a.features(X)[:-1], b.features(X)[:-1]
    for l in range(3):
        dw = (a.layers[l + 1].weight - b.layers[l + 1].weight).detach()
        same = fa[l] @ a.layers[l + 1].weight.detach().T + fb[l] @ b.layers[l + 1].weight.detach().T
        bound = torch.linalg.matrix_norm(dw, ord=2) * (fa[l] - fb[l]).norm()
        assert r[l] == pytest.approx(float(res[l] * same.norm() / bound), rel=1e-4)
    # permuting both networks the same way changes nothing
    p = C.random_perms(a, seed=3)
    assert C.commutativity_bound_ratio(C.permute(a, p), C.permute(b, p), X) == \
        pytest.approx(r, rel=1e-4)


def test_commutativity_bound_ratio_is_one_for_a_rank_one_case():
    # one hidden layer; the two nets differ in one output weight of one unit only, and the
    # feature difference lies in that unit: the residual equals its bound
    a = make_mlp(0, 6, 4, 1, 3)
    b = make_mlp(0, 6, 4, 1, 3)
    with torch.no_grad():
        b.layers[0].weight[1] += 1.0
        b.layers[1].weight[:, 1] += 1.0
    assert C.commutativity_bound_ratio(a, b, X)[0] == pytest.approx(1.0, abs=1e-5)


def test_logit_interpolation_obeys_its_bound():
    for s in range(3):
        a, b = net(s), net(s + 10)
        r = C.logit_interpolation(a, b, X, Y, 7)
        assert r["lerp_error"] <= r["bound"] + 1e-9
        assert r["bound"] == pytest.approx(r["err_a"] + r["err_b"])
    a = net(0)
    r = C.logit_interpolation(a, a, X, Y, 5)  # a pair of copies: the path is one network
    assert r["path_error"] == r["lerp_error"] == pytest.approx(r["err_a"])
    assert r["bound"] == pytest.approx(2 * r["err_a"])


def test_disagreement_ratio_known_answers():
    a, b = net(0), net(1)
    assert C.disagreement_ratio(a, a, X) == 0.0  # the soup of a copy is the ensemble
    r = C.disagreement_ratio(a, b, X)
    assert r >= 0.0 and r == pytest.approx(C.disagreement_ratio(b, a, X))
    ens = (a(X) + b(X)).argmax(-1)
    soup = (C.average([a, b])(X).argmax(-1) == ens).float().mean()
    single = max(float((m(X).argmax(-1) == ens).float().mean()) for m in (a, b))
    assert r == pytest.approx(float((1 - soup) / max(1 - single, 1 / len(X))))


def test_spawn_experiment_unshared_null():
    x, y = torch.randn(60, 6), torch.randint(0, 3, (60,))
    cfg = C.ConnectivityConfig(spawn_width=8, spawn_pairs=2, spawn_fractions=(0.0, 0.25, 0.5),
                               alphas=5, spawn_recipe=C.Recipe(lr=0.05, epochs=2, batch_size=20))
    plain = C.spawn_experiment(cfg, x, y, x, y, seed=1, control=False)
    sp = C.spawn_experiment(cfg, x, y, x, y, seed=1, control=False, unshared=True)
    assert plain.unshared_error_barrier is None
    assert sp.unshared_error_barrier.shape == (2,)
    np.testing.assert_array_equal(sp.error_barrier, plain.error_barrier)  # main run unchanged


def test_pretraining_sweep_tiny():
    x, y = torch.randn(80, 6), torch.randint(0, 10, (80,))
    r = C.Recipe(lr=0.05, epochs=2, batch_size=40, warmup=0.0)
    cfg = C.ConnectivityConfig(ctl_width=8, depth=2, spawn_recipe=r, probe_recipe=r,
                               ft_recipe=r, pretrain_epochs=(0, 1, 2), ft_runs=3)
    ps = C.pretraining_sweep(cfg, x, y, x, y, seed=0, x_pre=x, y_pre=y)
    assert ps.ctl.shape == ps.ctl_base.shape == (3, 3, 2)
    assert ps.null_ctl.shape == (3, 2) and ps.ctl_ratio.shape == (3, 3, 2)
    assert ps.displacement.shape == ps.acc.shape == (3, 2, 3) and ps.acc_probe.shape == (3, 2)
    assert ps.disagree.shape == (3, 2, 3) and ps.unshared_disagree.shape == (2, 3)
    assert (ps.displacement > 0).all() and ((ps.acc >= 0) & (ps.acc <= 1)).all()
    # the fully pretrained body is the one cross_task_experiment pretrains (same seeds)
    ct = C.cross_task_experiment(cfg, x, y, x, y, seed=0, x_pre=x, y_pre=y)
    assert ps.acc_probe[-1].tolist() == pytest.approx(ct.acc_pre, abs=0.05)
    reuse = C.cross_task_experiment(cfg, x, y, x, y, seed=0, x_pre=x, y_pre=y, sweep=ps)
    assert reuse.pretrained is ps.pretrained and reuse.finetuned[1][1] is ps.finetuned[1][1]
    assert reuse.acc_ft[0][0] == C.accuracy(ps.finetuned[0][0], x, C.task_labels(y, 0))
    with pytest.raises(ValueError, match="pretrain_epochs"):
        C.pretraining_sweep(C.ConnectivityConfig(ctl_width=8, depth=2, spawn_recipe=r,
                                                 pretrain_epochs=(0, 1)), x, y, x, y,
                            x_pre=x, y_pre=y)


def test_repair_stats_b_default_and_null():
    a, b = net(0), net(1)
    al = [0.0, 0.5, 1.0]
    plain = C.repair_stack(a, b, al, X)
    same = C.repair_stack(a, b, al, X, stats_b=b)
    assert all(torch.equal(u, v) for u, v in zip(plain.weights, same.weights))
    # a permuted copy of b as stats_b: b's statistics go to the wrong units, a's stay
    shuffled = C.repair_stack(a, b, al, X, stats_b=C.permute(b, C.random_perms(b, seed=4)))
    assert torch.allclose(shuffled.weights[0][0], plain.weights[0][0])  # alpha = 0: a alone
    assert not torch.allclose(shuffled.weights[0][1], plain.weights[0][1])
    with pytest.raises(ValueError, match="stats_b"):
        C.repair_stack(a, b, al, X, stats_b=net(2, width=8))
