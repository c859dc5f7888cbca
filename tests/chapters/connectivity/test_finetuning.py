"""Tests of gtlib.connectivity.finetuning, one section per public function."""

from __future__ import annotations
import numpy as np
import pytest
import torch
from gtlib import connectivity as C
from gtlib.models import make_mlp
from gtlib.connectivity.experiments import _seeds
from gtlib.connectivity.experiments import _task_arithmetic
from tests.chapters.connectivity.helpers import (
    D,
    data,
    K,
    net,
    net_ref,
    np_features,
    npw,
    ref_fit_member,
    same_params,
    W,
    X,
    X_ref,
)


# =================================================================================================
# connectivity.average
# =================================================================================================
def test_disagreement_ratio_known_answers():
    a, b = net(0), net(1)
    assert C.disagreement_ratio(a, a, X) == 0.0  # the soup of a copy is the ensemble
    r = C.disagreement_ratio(a, b, X)
    assert r >= 0.0 and r == pytest.approx(C.disagreement_ratio(b, a, X))
    ens = (a(X) + b(X)).argmax(-1)
    soup = (C.average([a, b])(X).argmax(-1) == ens).float().mean()
    single = max(float((m(X).argmax(-1) == ens).float().mean()) for m in (a, b))
    assert r == pytest.approx(float((1 - soup) / max(1 - single, 1 / len(X))))


@pytest.mark.reference
def test_average_of_three_by_hand():
    ms = [net_ref(s, act="tanh") for s in (1, 2, 3)]
    avg = C.average(ms)
    ps = [npw(m) for m in ms]
    for l in range(3):
        np.testing.assert_allclose(
            npw(avg)[0][l], sum(p[0][l] for p in ps) / 3, rtol=1e-6, atol=1e-7
        )
        np.testing.assert_allclose(
            npw(avg)[1][l], sum(p[1][l] for p in ps) / 3, rtol=1e-6, atol=1e-7
        )
    assert avg.act_name == "tanh"
    nb = C.average([net_ref(1, bias=False), net_ref(2, bias=False)])
    assert nb.layers[0].bias is None


# =================================================================================================
# connectivity.task_vector
# =================================================================================================
@pytest.mark.reference
def test_task_vector_layout_and_values():
    pre, ft = (
        net_ref(1, depth=2),
        net_ref(2, depth=2, out=7),
    )  # heads may differ in size
    tau = C.task_vector(pre, ft)
    (wp, bp), (wf, bf) = npw(pre), npw(ft)
    want = [wf[0] - wp[0], bf[0] - bp[0], wf[1] - wp[1], bf[1] - bp[1]]
    assert len(tau) == 4
    for t, w in zip(tau, want):
        np.testing.assert_allclose(t.double().numpy(), w, rtol=1e-6, atol=1e-7)
    tb = C.task_vector(net_ref(1, bias=False), net_ref(2, bias=False))
    assert len(tb) == 2 and tuple(tb[1].shape) == (W, W)


# =================================================================================================
# connectivity.apply_task_vectors
# =================================================================================================
def test_average_and_task_vectors():
    pre, ft1, ft2 = net(0), net(1), net(2)
    avg = C.average([ft1, ft2])
    assert torch.allclose(
        avg.layers[1].weight, (ft1.layers[1].weight + ft2.layers[1].weight) / 2
    )
    taus = [C.task_vector(pre, ft1)]
    merged = C.apply_task_vectors(pre, taus, 1.0, ft1)  # pre + tau = ft1
    assert all(
        torch.allclose(u.weight, v.weight, atol=1e-6)
        for u, v in zip(merged.layers, ft1.layers)
    )
    same = C.apply_task_vectors(pre, taus, 0.0, pre)
    assert torch.allclose(same(X), pre(X))


@pytest.mark.reference
def test_apply_task_vectors_by_hand_with_two_vectors():
    pre, f1, f2 = net_ref(1, depth=2), net_ref(2, depth=2), net_ref(3, depth=2)
    head = net_ref(4, depth=2, out=6)
    taus = [C.task_vector(pre, f1), C.task_vector(pre, f2)]
    m = C.apply_task_vectors(pre, taus, 0.7, head)
    (wp, bp), (w1, b1), (w2, b2), (wh, bh) = npw(pre), npw(f1), npw(f2), npw(head)
    for l in range(2):
        np.testing.assert_allclose(
            npw(m)[0][l],
            wp[l] + 0.7 * (w1[l] - wp[l] + w2[l] - wp[l]),
            rtol=1e-5,
            atol=1e-6,
        )
        np.testing.assert_allclose(
            npw(m)[1][l],
            bp[l] + 0.7 * (b1[l] - bp[l] + b2[l] - bp[l]),
            rtol=1e-5,
            atol=1e-6,
        )
    np.testing.assert_array_equal(npw(m)[0][2], wh[2])
    np.testing.assert_array_equal(npw(m)[1][2], bh[2])
    nb = [net_ref(s, bias=False) for s in (1, 2, 3)]
    mb = C.apply_task_vectors(nb[0], [C.task_vector(nb[0], nb[1])], -0.4, nb[2])
    np.testing.assert_allclose(
        npw(mb)[0][1],
        1.4 * npw(nb[0])[0][1] - 0.4 * npw(nb[1])[0][1],
        rtol=1e-5,
        atol=1e-6,
    )
    np.testing.assert_array_equal(npw(mb)[0][2], npw(nb[2])[0][2])
    with pytest.raises(ValueError):
        C.apply_task_vectors(pre, [taus[0][:3]], 1.0, head)


# =================================================================================================
# connectivity.with_head
# =================================================================================================
@pytest.mark.reference
def test_with_head_replaces_only_the_output_layer():
    body = net_ref(5, depth=2)
    hw, hb = torch.randn(7, W), torch.randn(7)
    m = C.with_head(body, hw, hb)
    assert torch.equal(m.layers[-1].weight, hw) and torch.equal(
        m.layers[-1].bias, hb
    )
    for l in range(2):
        assert torch.equal(m.layers[l].weight, body.layers[l].weight)
        assert torch.equal(m.layers[l].bias, body.layers[l].bias)
    assert m(X_ref).shape == (len(X_ref), 7)
    with pytest.raises(ValueError):
        C.with_head(body, torch.randn(7, W + 1), hb)


# =================================================================================================
# connectivity.accuracy
# =================================================================================================
@pytest.mark.reference
def test_accuracy_by_hand():
    m = net_ref(6)
    pred = np_features(m, X_ref)[-1].argmax(1)
    y = torch.as_tensor(pred.copy())
    y[:5] = (y[:5] + 1) % K
    assert C.accuracy(m, X_ref, y) == pytest.approx((len(X_ref) - 5) / len(X_ref))


@pytest.mark.reference
def test_task_arithmetic_accuracies_and_best_lambda():
    base = net_ref(121, depth=1, out=5)
    ends = [net_ref(301, depth=1, out=5), net_ref(401, depth=1, out=5)]
    xt, _ = data(n=15, seed=13)
    with (
        torch.no_grad()
    ):  # each task's labels are its fine-tuned model's predictions
        tr = [(X_ref, ends[t](X_ref).argmax(1)) for t in range(2)]
        te = [(xt, ends[t](xt).argmax(1)) for t in range(2)]
    lam = np.array([0.0, 0.4, 0.7, 1.0, 1.3])
    acc_te, acc_tr, best, lo, hi = _task_arithmetic(base, ends, lam, tr, te)
    taus = [C.task_vector(base, m) for m in ends]
    for i, l in enumerate(lam):
        for t in (0, 1):
            m = C.apply_task_vectors(base, taus, float(l), ends[t])
            assert acc_te[i, t] == C.accuracy(m, *te[t])
            assert acc_tr[i, t] == C.accuracy(m, *tr[t])
    want_lo = [
        C.accuracy(
            C.with_head(base, ends[t].layers[-1].weight, ends[t].layers[-1].bias),
            *tr[t],
        )
        for t in (0, 1)
    ]
    want_hi = [C.accuracy(ends[t], *tr[t]) for t in (0, 1)]
    assert lo == want_lo and hi == want_hi
    assert hi == [1.0, 1.0] and lo[0] != lo[1]
    norm = np.stack([(acc_tr[:, t] - lo[t]) / (1 - lo[t]) for t in (0, 1)], 1)
    # the worse task decides: the best mean gain would be at another lambda
    assert (
        best == lam[int(np.argmax(norm.min(1)))] != lam[int(np.argmax(norm.mean(1)))]
    )


@pytest.mark.reference
def test_cross_task_experiment_against_its_composition():
    rec = C.Recipe(lr=0.2, batch_size=16, epochs=1, warmup=0.0)
    cfg = C.ConnectivityConfig(
        ctl_width=W,
        depth=1,
        spawn_recipe=rec,
        probe_recipe=rec,
        ft_recipe=C.Recipe(lr=0.3, batch_size=10, epochs=1, warmup=0.0),
        lambdas=(0.0, 0.6, 1.0),
    ).validate()
    g = torch.Generator().manual_seed(14)
    x, y = torch.randn(30, D, generator=g), torch.randint(0, 10, (30,), generator=g)
    xt, yt = (
        torch.randn(21, D, generator=g),
        torch.randint(0, 10, (21,), generator=g),
    )
    s = 2
    r = C.cross_task_experiment(cfg, x, y, xt, yt, seed=s)
    ypre = y // 5
    pre, _ = ref_fit_member(
        make_mlp(_seeds(s, 40, 1)[0], D, W, 1, 2), x, ypre, rec, _seeds(s, 41, 1)[0]
    )
    same_params(r.pretrained, pre, atol=1e-6)
    tr = [(x, y % 5), (x, y // 2)]
    te = [(xt, yt % 5), (xt, yt // 2)]
    for t in (0, 1):
        head = make_mlp(_seeds(s, 42, 2)[t], D, W, 1, 5).layers[-1]
        probe, _ = ref_fit_member(
            C.with_head(pre, head.weight, head.bias),
            x,
            tr[t][1],
            rec,
            _seeds(s, 43, 2)[t],
            train="head",
        )
        same_params(r.probes[t], probe, atol=1e-6)
        for k in (0, 1):
            ft, _ = ref_fit_member(
                r.probes[t],
                x,
                tr[t][1],
                cfg.ft_recipe,
                _seeds(s, 44, 4)[2 * t + k],
                train="body",
            )
            same_params(r.finetuned[t][k], ft, atol=1e-6)
        sc, _ = ref_fit_member(
            make_mlp(_seeds(s, 45, 1)[0], D, W, 1, 5),
            x,
            tr[t][1],
            rec,
            _seeds(s, 46, 2)[t],
        )
        same_params(r.scratch[t], sc, atol=1e-6)
    same_params(r.init, make_mlp(_seeds(s, 45, 1)[0], D, W, 1, 5))
    ft, sc = r.finetuned, r.scratch
    assert r.acc_pre == [C.accuracy(r.probes[t], *te[t]) for t in (0, 1)]
    assert r.acc_ft == [[C.accuracy(m, *te[t]) for m in ft[t]] for t in (0, 1)]
    assert r.acc_scratch == [C.accuracy(sc[t], *te[t]) for t in (0, 1)]
    heads = [(m.layers[-1].weight, m.layers[-1].bias) for m in sc]
    assert r.acc_init == [
        C.accuracy(C.with_head(r.init, *heads[t]), *te[t]) for t in (0, 1)
    ]
    assert r.acc_init[1] != C.accuracy(C.with_head(r.init, *heads[0]), *te[1])
    assert r.ctl == C.llfc_dissimilarity(ft[0][0], ft[1][0], xt)[:-1]
    assert r.ctl_base == C.endpoint_dissimilarity(ft[0][0], ft[1][0], xt)[:-1]
    assert r.ctl_scratch == C.llfc_dissimilarity(sc[0], sc[1], xt)[:-1]
    assert r.ctl_scratch_base == C.endpoint_dissimilarity(sc[0], sc[1], xt)[:-1]
    for t in (0, 1):
        xt_, yt_ = te[t]
        la = np_features(C.average(ft[t]), xt_)[-1].argmax(1)
        runs = [np_features(m, xt_)[-1] for m in ft[t]]
        le = ((runs[0] + runs[1]) / 2).argmax(1)
        assert r.avg_acc[t] == pytest.approx(np.mean(la == yt_.numpy()))
        assert r.ens_acc[t] == pytest.approx(np.mean(le == yt_.numpy()))
        assert r.agreement[t] == pytest.approx(np.mean(la == le))
        assert r.single_agreement[t] == pytest.approx(
            max(np.mean(u.argmax(1) == le) for u in runs)
        )
    acc_te, acc_tr, best, lo, hi = _task_arithmetic(
        r.pretrained, [ft[0][0], ft[1][0]], np.array([0.0, 0.6, 1.0]), tr, te
    )
    np.testing.assert_array_equal(r.arith_acc, acc_te)
    np.testing.assert_array_equal(r.arith_train_acc, acc_tr)
    assert (
        r.best_lambda == best
        and r.train_ends["pre"] == lo
        and r.train_ends["ft"] == hi
    )
    acc_te, acc_tr, best, lo, hi = _task_arithmetic(
        r.init, sc, np.array([0.0, 0.6, 1.0]), tr, te
    )
    np.testing.assert_array_equal(r.scratch_arith_acc, acc_te)
    np.testing.assert_array_equal(r.scratch_arith_train_acc, acc_tr)
    assert r.scratch_best_lambda == best
    assert r.train_ends["init"] == lo and r.train_ends["scratch"] == hi


# =================================================================================================
# connectivity.weight_distance and perturb
# =================================================================================================
def test_weight_distance_by_hand_and_perturb_moves_exactly_that_far():
    a, b = make_mlp(0, 5, 4, 2, 3), make_mlp(1, 5, 4, 2, 3)
    want = float(
        np.sqrt(
            sum(
                ((p - q) ** 2).sum().item()
                for p, q in zip(a.parameters(), b.parameters())
            )
        )
    )
    assert C.weight_distance(a, b) == pytest.approx(want, rel=1e-6)
    assert C.weight_distance(a, a) == 0.0
    assert C.weight_distance(a, b) == pytest.approx(C.weight_distance(b, a))
    for d in (0.0, 0.5, 3.0):
        m = C.perturb(a, d, seed=4)
        assert C.weight_distance(a, m) == pytest.approx(d, abs=1e-5)
    # the direction is add_noise's, rescaled: same seed, same direction
    n = C.add_noise(a, 1.0, 4)
    m = C.perturb(a, 2.0, seed=4)
    u = torch.cat(
        [(q - p).flatten() for p, q in zip(a.parameters(), n.parameters())]
    )
    v = torch.cat(
        [(q - p).flatten() for p, q in zip(a.parameters(), m.parameters())]
    )
    assert torch.allclose(v, u * (2.0 / u.norm()), atol=1e-5)
    with pytest.raises(ValueError):
        C.weight_distance(a, make_mlp(1, 5, 6, 2, 3))
    with pytest.raises(ValueError, match="distance"):
        C.perturb(a, -1.0)


# =================================================================================================
# connectivity.addition_gains
# =================================================================================================
@pytest.mark.reference
def test_addition_gains_by_hand():
    base = net_ref(121, depth=1, out=5)
    ends = [net_ref(301, depth=1, out=5), net_ref(401, depth=1, out=5)]
    with (
        torch.no_grad()
    ):  # each task's labels are its fine-tuned model's predictions
        lab = [ends[t](X_ref).argmax(1) for t in range(2)]
    taus = [C.task_vector(base, m) for m in ends]
    for mode, lam in (("both", 1.0), ("own", 0.6), ("other", 1.0), ("both", 0.4)):
        got = C.addition_gains(base, ends, X_ref, lab, lam, mode)
        for t in (0, 1):
            vecs = {"both": taus, "own": [taus[t]], "other": [taus[1 - t]]}[mode]
            m = C.apply_task_vectors(base, vecs, lam, ends[t])
            h = ends[t].layers[-1]
            lo = C.accuracy(C.with_head(base, h.weight, h.bias), X_ref, lab[t])
            want = (C.accuracy(m, X_ref, lab[t]) - lo) / (1.0 - lo)
            assert got[t] == pytest.approx(want)
    # lambda = 1 with the own vector alone is the fine-tuned body itself
    assert C.addition_gains(base, ends, X_ref, lab, 1.0, "own") == pytest.approx(
        [1, 1]
    )
    # the random step: seeded, and of the other vector's norm
    r1 = C.addition_gains(base, ends, X_ref, lab, 1.0, "random", seed=3)
    assert r1 == C.addition_gains(base, ends, X_ref, lab, 1.0, "random", seed=3)
    assert C.addition_gains(base, ends, X_ref, lab, 0.0, "random") == [0.0, 0.0]


def test_addition_gains_validates():
    base, ends = net(0), [net(1), net(2)]
    lab = [torch.zeros(len(X), dtype=torch.long)] * 2
    with pytest.raises(ValueError, match="mode"):
        C.addition_gains(base, ends, X, lab, mode="sum")
    with pytest.raises(ValueError, match="ends"):
        C.addition_gains(base, ends[:1], X, lab)
    with pytest.raises(ValueError, match="labels"):
        C.addition_gains(base, ends, X, lab[:1])
    with pytest.raises((TypeError, ValueError), match="scale"):
        C.addition_gains(base, ends, X, lab, scale=float("nan"))
