"""Tests of gtlib.contrastive: the data model, the encoder, InfoNCE, pruning and the metrics."""
import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from gtlib import contrastive as C


def test_dictionary_is_orthonormal_and_seeded():
    M = C.feature_dictionary(10, 4, seed=3)
    assert M.shape == (10, 4)
    assert torch.allclose(M.T @ M, torch.eye(4), atol=1e-5)
    assert torch.equal(M, C.feature_dictionary(10, 4, seed=3))
    with pytest.raises(ValueError, match="n_features"):
        C.feature_dictionary(3, 4)


def test_frequencies_and_codes():
    p = C.feature_frequencies(6, 2, 0.3, 3.0)
    assert torch.allclose(p, torch.tensor([0.3, 0.3, 0.3, 0.3, 0.1, 0.1]))
    g = torch.Generator().manual_seed(0)
    z = C.sample_codes(p, 20000, g)
    assert set(torch.unique(z).tolist()) <= {-1.0, 0.0, 1.0}
    assert torch.allclose((z != 0).float().mean(0), p, atol=0.015)
    zz = C.sample_codes(torch.stack([p, p]), 50, g)
    assert zz.shape == (2, 50, 6) and torch.equal(zz[0], zz[1])  # common random numbers
    with pytest.raises(ValueError, match="ratio"):
        C.feature_frequencies(6, 2, 0.3, 0.5)
    with pytest.raises(ValueError, match="n_minority"):
        C.feature_frequencies(6, 6, 0.3, 2.0)
    with pytest.raises(TypeError, match="freqs"):
        C.sample_codes([0.1, 0.2], 5, g)


def test_views_share_the_signal():
    M = C.feature_dictionary(8, 3, seed=0)
    g = torch.Generator().manual_seed(1)
    z = torch.tensor([[1.0, 0.0, -1.0]])
    X = C.make_views(M, z, n_tokens=5, n_signal=2, noise=0.0, generator=g)
    signal = z @ M.T
    carriers = [l for l in range(5) if X[0, l].norm() > 0]
    assert len(carriers) == 2
    for l in carriers:
        assert torch.allclose(X[0, l], signal[0])
    with pytest.raises(ValueError, match="n_signal"):
        C.make_views(M, z, 2, 3, 0.1, g)


def test_brelu_is_odd_with_a_dead_zone():
    s = torch.linspace(-3, 3, 13)
    out = C.brelu(s, 1.0)
    assert torch.allclose(out, -C.brelu(-s, 1.0))
    assert torch.all(out[s.abs() <= 1] == 0)
    assert torch.allclose(out[s > 1], s[s > 1] - 1)


def test_infonce_matches_direct_formula():
    torch.manual_seed(0)
    f, g = torch.randn(5, 3), torch.randn(5, 3)
    tau = 0.7
    direct = 0.0
    for i in range(5):
        num = math.exp(float(f[i] @ g[i]) / tau)
        den = sum(math.exp(float(f[i] @ g[j]) / tau) for j in range(5))
        direct += -math.log(num / den) / 5
    assert math.isclose(float(C.infonce(f, g, tau)), direct, rel_tol=1e-5)
    batched = C.infonce(torch.stack([f, g]), torch.stack([g, f]), tau)
    assert batched.shape == (2,)
    with pytest.raises(ValueError, match="tau"):
        C.infonce(f, g, 0.0)
    with pytest.raises(ValueError, match="same shape"):
        C.infonce(f, g[:4], 1.0)


def test_infonce_identical_orthogonal_views_closed_form():
    n, a, tau = 6, 2.5, 0.8
    f = math.sqrt(a) * torch.eye(n)[:, :n]
    assert math.isclose(float(C.infonce(f, f.clone(), tau)),
                        C.infonce_orthogonal_closed_form(a, n, tau), rel_tol=1e-6)


def test_infonce_stops_gradient_on_target():
    f = torch.randn(4, 3, requires_grad=True)
    g = torch.randn(4, 3, requires_grad=True)
    C.infonce(f, g, 1.0).backward()
    assert f.grad is not None and g.grad is None


def test_magnitude_mask_removes_exact_fraction_of_smallest():
    W = torch.tensor([[[3.0, 0.0], [0.1, 0.0], [2.0, 0.0], [0.5, 0.0]]])
    mask = C.magnitude_mask(W, 0.5)
    assert mask.tolist() == [[1.0, 0.0, 1.0, 0.0]]
    W2 = torch.randn(3, 10, 4)
    masks = C.magnitude_mask(W2, [0.0, 0.3, 1.0])
    assert masks.sum(1).tolist() == [10.0, 7.0, 0.0]
    with pytest.raises(ValueError, match="fraction"):
        C.magnitude_mask(W2, 1.5)
    with pytest.raises(ValueError, match="one entry per model"):
        C.magnitude_mask(W2, [0.1, 0.2])


def test_pruned_forward_but_gradients_reach_masked_neurons():
    torch.manual_seed(0)
    X = torch.randn(1, 8, 3, 5)
    W = torch.randn(1, 4, 5, requires_grad=True)
    A = torch.zeros(1, 5, 5)
    mask = torch.tensor([[1.0, 0.0, 1.0, 0.0]])
    f = C.encode(X, W, A, beta=0.0, mask=mask)
    assert torch.all(f[..., 1] == 0) and torch.all(f[..., 3] == 0)
    W2 = W.detach().clone().requires_grad_()
    C.encode(X, W2, A, beta=0.0, mask=mask).sum().backward()
    assert W2.grad[0, 1].abs().sum() > 0 and W2.grad[0, 3].abs().sum() > 0
    W3 = W.detach().clone().requires_grad_()
    loss = C.encode(X, W3, A, beta=0.0).sum()
    loss.backward()
    assert torch.allclose(W2.grad, W3.grad)  # straight-through: same gradient as unmasked


def test_alignment_recovers_known_neurons():
    M = C.feature_dictionary(10, 4, seed=0)
    noise_dir = torch.linalg.qr(torch.cat([M, torch.randn(10, 1)], 1))[0][:, 4]
    W = torch.stack([3 * M[:, 2] + 0.5 * M[:, 0] + 0.2 * noise_dir,  # specialist of feature 2
                     M[:, 1] + M[:, 3]])                               # an even mixture
    a = C.alignment(W, M)
    assert a["dominant"][0] == 2
    assert torch.allclose(a["proj"][0], torch.tensor([0.5, 0.0, 3.0, 0.0]), atol=1e-5)
    assert math.isclose(float(a["noise"][0]), 0.2, rel_tol=1e-4)
    assert math.isclose(float(a["ratio"][0]), 6.0, rel_tol=1e-4)
    assert math.isclose(float(a["purity"][0]), 9 / 9.25, rel_tol=1e-4)
    assert math.isclose(float(a["ratio"][1]), 1.0, rel_tol=1e-4)
    s = C.feature_summary(W[None], M, n_minority=2)
    assert s["single_fraction"][0] == 0.5
    assert s["spec_major"][0] == 0.0 and s["spec_minor"][0] == 0.5  # feature 2 is a minority one
    with pytest.raises(ValueError, match="last dimension"):
        C.alignment(W[:, :5], M)


def test_stage_boundaries_on_synthetic_curves():
    step = np.arange(0, 100, 10)
    top = np.array([0.1, 0.5, 0.9, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0])
    ratio = np.array([1.2, 1.2, 1.3, 2.0, 3.0, 4.0, 4.5, 5.0, 5.0, 5.0])
    assert C.stage_boundaries(step, top, ratio) == (20, 60)  # 4.5 >= 0.9 * 5
    with pytest.raises(ValueError):
        C.stage_boundaries(step[:2], top[:2], ratio[:2])


def test_ridge_probe_separates_separable_data():
    g = torch.Generator().manual_seed(0)
    y = torch.randint(0, 3, (300,), generator=g)
    f = torch.nn.functional.one_hot(y, 3).float() * 3 + 0.1 * torch.randn(300, 3, generator=g)
    pred = C.ridge_probe(f[:200], y[:200], f[200:], 3)
    assert (pred == y[200:]).float().mean() == 1.0
    with pytest.raises(ValueError, match="ridge"):
        C.ridge_probe(f[:200], y[:200], f[200:], 3, ridge=0)


def test_augment_1d_shift_is_circular():
    g = torch.Generator().manual_seed(0)
    x = torch.arange(10.0)[None].repeat(4, 1)
    out = C.augment_1d(x, g, shift=3, scale=0.0, jitter=0.0)
    for row in out:
        assert sorted(row.tolist()) == list(range(10))
    with pytest.raises(ValueError):
        C.augment_1d(torch.zeros(3), g, 1, 0.0, 0.0)


def test_tiny_training_run_and_config_validation():
    cfg = replace(C.ContrastiveConfig.quick(), dim=8, n_features=4, n_minority=2, neurons=6,
                  batch=16, steps=20, log_every=10, bias_ramp=10, replicates=1, probe_samples=40)
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
    assert torch.equal(torch.tensor(run2.history["proj"][0, 0]), torch.tensor(run2.history["proj"][0, 1]))
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


def test_strong_specialists_need_a_magnitude_floor():
    M = torch.eye(4)
    W = torch.tensor([[4.0, 0.5, 0.0, 0.0],    # strong specialist of feature 0
                      [0.0, 0.0, 2.0, 0.1],    # strong specialist of feature 2 (2 >= 0.25 * 4)
                      [0.0, 0.0, 0.0, 0.3],    # pure but tiny: top 0.3 < 0.25 * 4
                      [1.5, 1.5, 0.0, 0.0]])   # strong but mixed (ratio 1)
    counts = C.strong_specialists(W, M, ratio=2.0, floor=0.25)
    assert counts.tolist() == [1.0, 0.0, 1.0, 0.0]
    assert C.strong_specialists(W, M, ratio=2.0, floor=0.0).tolist() == [1.0, 0.0, 1.0, 1.0]
    batched = C.strong_specialists(torch.stack([W, 2 * W]), M)
    assert torch.equal(batched[0], batched[1])  # invariant to a common scale
    s = C.feature_summary(W[None], M, n_minority=2)
    assert s["spec_major"][0] == 0.5 and s["spec_minor"][0] == 0.5
    assert math.isclose(s["strong_purity"][0], 2 / 3, rel_tol=1e-6)  # 3 strong neurons, 1 of them mixed
    purities = [16 / 16.25, 4 / 4.01, 1.0, 0.5]  # top^2 / sum of squares, every neuron
    assert math.isclose(s["mean_purity"][0], sum(purities) / 4, rel_tol=1e-5)
    with pytest.raises(ValueError, match="floor"):
        C.strong_specialists(W, M, floor=1.5)
    with pytest.raises(ValueError, match="ratio"):
        C.strong_specialists(W, M, ratio=0.5)


def test_energy_ratio_closed_form_and_scale_invariance():
    M = C.feature_dictionary(6, 4, seed=1)
    W = torch.stack([3 * M[:, 0], 1 * M[:, 1] + 2 * M[:, 3], 1 * M[:, 2]])
    # majority energy per feature (9 + 1) / 2 = 5, minority (1 + 4) / 2 = 2.5
    assert math.isclose(float(C.energy_ratio(W, M, 2)), 0.5, rel_tol=1e-5)
    E = C.energy_ratio(torch.stack([W, 7 * W]), M, 2)
    assert E.shape == (2,) and torch.allclose(E[0], E[1])
    noise_dir = torch.linalg.qr(torch.cat([M, torch.randn(6, 1)], 1))[0][:, 4]
    assert torch.allclose(C.energy_ratio(W + 5 * noise_dir, M, 2), E[0], atol=1e-5)
    with pytest.raises(ValueError, match="n_minority"):
        C.energy_ratio(W, M, 4)


def test_learning_margin_matches_the_formula():
    cfg = C.ContrastiveConfig.quick()
    mu = C.learning_margin(cfg, 10.0)
    p_min = cfg.base_freq / 10
    assert math.isclose(mu, cfg.n_signal ** 2 * p_min / (cfg.tau * cfg.weight_decay))
    assert math.isclose(C.learning_margin(cfg, 2.0) / C.learning_margin(cfg, 4.0), 2.0)
    with pytest.raises(ValueError, match="ratio"):
        C.learning_margin(cfg, 0.5)
    with pytest.raises(ValueError, match="weight_decay"):
        C.learning_margin(replace(cfg, weight_decay=0.0), 2.0)


def test_hard_mask_starves_masked_neurons():
    cfg = replace(C.ContrastiveConfig.quick(), dim=8, n_features=4, n_minority=2, neurons=6,
                  batch=16, steps=3, log_every=1, bias_ramp=2, replicates=1, prune_every=100,
                  weight_decay=0.0)
    soft = C.train_encoders(cfg, [2.0], [0.5], seed=0)
    hard = C.train_encoders(cfg, [2.0], [0.5], seed=0, hard_mask=True)
    start = torch.tensor(soft.history["proj"][0, 0])
    assert torch.equal(start, torch.tensor(hard.history["proj"][0, 0]))  # same initialization
    moved_hard = (torch.tensor(hard.history["proj"][-1, 0]) - start).abs().sum(-1)
    moved_soft = (torch.tensor(soft.history["proj"][-1, 0]) - start).abs().sum(-1)
    assert int((moved_hard == 0).sum()) == 3  # the 3 masked neurons: no gradient, no decay
    assert int((moved_soft == 0).sum()) == 0  # straight-through: every neuron is trained


def test_longtail_reports_the_random_encoder_control():
    cfg = replace(C.LongTailConfig.quick(), n_train=600, n_test=200, width=16, out_dim=8,
                  batch=32, steps=3, prune_every=2)
    out = C.train_longtail(cfg, prune_fractions=(0.0, 0.5), seed=0)
    assert out["acc"].shape == (2, 10) and out["acc_random"].shape == (10,)
    assert np.all((0 <= out["acc_random"]) & (out["acc_random"] <= 1))
    assert out["counts"][0] > out["counts"][9]  # the long tail


def test_brelu_clamp_form_equals_the_relu_form():
    g = torch.Generator().manual_seed(3)
    s = torch.randn(4, 7, 5, generator=g)
    b = torch.rand(1, 1, 5, generator=g)
    relu_form = torch.relu(s - b) - torch.relu(-s - b)
    assert torch.equal(C.brelu(s, b), relu_form)  # exact, not just close
    assert torch.equal(C.brelu(s, 0.4), torch.relu(s - 0.4) - torch.relu(-s - 0.4))
    neg = torch.full((1, 1, 5), -0.3)  # a negative threshold keeps the defining formula
    assert torch.equal(C.brelu(s, neg), torch.relu(s + 0.3) - torch.relu(-s + 0.3))
    s.requires_grad_()
    C.brelu(s, b).sum().backward()
    assert torch.equal(s.grad, (s.detach().abs() > b).float())  # slope 1 outside the dead zone


def test_random_mask_counts_and_ignores_the_weights():
    W = torch.randn(3, 10, 4, generator=torch.Generator().manual_seed(0))
    m1 = C.random_mask(W, [0.5, 0.2, 0.0], torch.Generator().manual_seed(1))
    assert m1.shape == (3, 10) and (1 - m1).sum(1).tolist() == [5.0, 2.0, 0.0]
    m2 = C.random_mask(7 * W + 1, [0.5, 0.2, 0.0], torch.Generator().manual_seed(1))
    assert torch.equal(m1, m2)  # only the shape of W is read
    assert C.random_mask(W[0], 0.3, torch.Generator().manual_seed(1)).shape == (10,)
    draws = torch.stack([C.random_mask(W[:1], 0.5, torch.Generator().manual_seed(s))[0]
                         for s in range(200)])
    assert torch.allclose(draws.mean(0), torch.full((10,), 0.5), atol=0.12)  # uniform
    with pytest.raises(ValueError, match="fraction"):
        C.random_mask(W, 1.5, torch.Generator())
    with pytest.raises(ValueError, match="fraction"):
        C.random_mask(W, [0.5, 0.5], torch.Generator())
    with pytest.raises(TypeError, match="generator"):
        C.random_mask(W, 0.5, None)


def test_random_mask_runs_pair_with_their_unpruned_partner():
    cfg = replace(C.ContrastiveConfig.quick(), dim=8, n_features=4, n_minority=2, neurons=6,
                  batch=16, steps=6, log_every=3, bias_ramp=3, replicates=2, prune_every=2,
                  probe_samples=40)
    run = C.train_encoders(cfg, [3.0, 3.0, 3.0], [0.0, 0.5, 0.5], seed=0,
                           masks=["magnitude", "magnitude", "random"])
    assert run.masks == ["magnitude", "magnitude", "random"] * 2
    assert run.select(3.0, 0.5) == [1, 4] and run.select(3.0, 0.5, "random") == [2, 5]
    assert run.select(3.0, 0.0, "random") == [0, 3]  # the unpruned partner of either mask
    base, rand = C.paired(run, np.arange(6.0), 3.0, 0.5, "random")
    assert base.tolist() == [0.0, 3.0] and rand.tolist() == [2.0, 5.0]
    assert not torch.equal(run.W[1], run.W[2])  # the two masks train differently
    assert set(C.condition_table(run)) == {(3.0, 0.0), (3.0, 0.5), (3.0, 0.5, "random")}
    plain = C.train_encoders(cfg, [3.0, 3.0, 3.0], [0.0, 0.5, 0.5], seed=0)
    assert torch.equal(plain.W[[0, 1]], run.W[[0, 1]])  # the random mask leaves the samples alone
    with pytest.raises(ValueError, match="masks"):
        C.train_encoders(cfg, [3.0], [0.5], masks=["random", "random"])
    with pytest.raises(ValueError, match="masks"):
        C.train_encoders(cfg, [3.0], [0.5], masks=["weights"])
    with pytest.raises(ValueError, match="mask"):
        run.select(3.0, 0.5, "weights")


def test_longtail_balanced_reference_has_the_same_size():
    cfg = replace(C.LongTailConfig.quick(), n_train=600, n_test=200, width=16, out_dim=8,
                  batch=32, steps=3, prune_every=2)
    lt = C.train_longtail(cfg, (0.0,), seed=0)
    bal = C.train_longtail(cfg, (0.0,), seed=0, balanced=True)
    assert len(set(bal["counts"].tolist())) == 1  # every class alike
    assert bal["counts"].sum() == 10 * (lt["counts"].sum() // 10)
    assert np.array_equal(bal["acc_random"], lt["acc_random"])  # same random encoder
    with pytest.raises(TypeError, match="balanced"):
        C.train_longtail(cfg, (0.0,), seed=0, balanced=1)


def test_longtail_random_mask_is_a_separate_member():
    cfg = replace(C.LongTailConfig.quick(), n_train=600, n_test=200, width=16, out_dim=8,
                  batch=32, steps=4, prune_every=2)
    two = C.train_longtail(cfg, (0.0, 0.5), seed=0)
    three = C.train_longtail(cfg, (0.0, 0.5, 0.5), seed=0,
                             masks=["magnitude", "magnitude", "random"])
    assert three["masks"] == ["magnitude", "magnitude", "random"]
    assert np.array_equal(three["acc"][:2], two["acc"])  # same minibatches for the others
    with pytest.raises(ValueError, match="masks"):
        C.train_longtail(cfg, (0.0, 0.5), seed=0, masks=["random"])


def test_best_alignment_curves_by_hand():
    cfg = replace(C.ContrastiveConfig.quick(), dim=8, n_features=4, n_minority=2, neurons=3,
                  batch=8, steps=4, log_every=2, bias_ramp=2, replicates=1)
    run = C.train_encoders(cfg, [2.0], [0.0], seed=0)
    proj = np.zeros((2, 1, 3, 4))
    proj[0, 0] = [[1, 0, 0.2, 0.0], [0, 3, 0.0, 0.4]]  + [[0, 0, 0, 0]]
    proj[1, 0] = [[2, 0, 0.1, 0.0], [0, 1, 0.0, 1.2]] + [[0, 0, 0, 0]]
    run.history["proj"] = proj
    c = C.best_alignment_curves(run)
    assert np.allclose(c["major"][:, 0], [2.0, 1.5]) and np.allclose(c["minor"][:, 0], [0.3, 0.65])
    assert np.allclose(c["growth"], [0.65 / 0.3])
    with pytest.raises(TypeError, match="run"):
        C.best_alignment_curves({"proj": proj})


def test_random_encoder_accuracy_is_train_longtails_starting_encoder():
    """The untrained encoder's probe equals train_longtail's acc_random at the same seed; another
    seed draws another encoder (the null of pretraining)."""
    import numpy as np

    import gtlib
    from gtlib import contrastive as C

    cfg = gtlib.preset(C.LongTailConfig, n_train=600, n_test=200, width=32, out_dim=8,
                       batch=16, steps=2, prune_every=1)
    ref = C.train_longtail(cfg, (0.0,), seed=3)["acc_random"]
    assert np.array_equal(C.random_encoder_accuracy(cfg, seed=3), ref)
    assert not np.array_equal(C.random_encoder_accuracy(cfg, seed=4), ref)
    with pytest.raises(TypeError, match="cfg"):
        C.random_encoder_accuracy("quick", seed=0)
