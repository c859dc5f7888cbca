"""Unit tests of gtlib.contamination: the data model, the metrics, the batched training."""
import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from gtlib import contamination as fc


@pytest.fixture(scope="module")
def emb():
    return fc.random_embedding(4, 3, 12, seed=1)


def test_embedding_is_orthonormal(emb):
    P = torch.cat([emb.core, emb.background], 1)
    assert torch.allclose(P.T @ P, torch.eye(7), atol=1e-5)
    assert torch.allclose(emb.core.T @ emb.background, torch.zeros(4, 3), atol=1e-6)


def test_projections_recover_known_components(emb):
    # a weight built from known core / background coordinates plus a part outside both subspaces
    u, v = torch.tensor([3.0, 0.0, 4.0, 0.0]), torch.tensor([0.0, 1.0, 0.0])
    P = torch.cat([emb.core, emb.background], 1)
    outside = torch.randn(12)
    outside = outside - P @ (P.T @ outside)
    w = emb.core @ u + emb.background @ v + outside
    core, bg = fc.projection_norms(torch.stack([w, 2 * w]), emb)
    assert torch.allclose(core, torch.tensor([5.0, 10.0]), atol=1e-4)
    assert torch.allclose(bg, torch.tensor([1.0, 2.0]), atol=1e-4)
    core3, bg3 = fc.projection_norms(torch.stack([w, 2 * w])[None], emb)
    assert core3.shape == (1, 2)


def test_shift_leaves_core_and_maps_uniform_to_negative_uniform(emb):
    d = fc.sample_toy(500, emb, "theory", seed=0)
    xs = fc.shift_background(d.x, emb, 1.0)
    assert torch.allclose(xs @ emb.core, d.x @ emb.core, atol=1e-5)
    assert torch.allclose(xs @ emb.background, d.background - 1.0, atol=1e-5)
    zb = xs @ emb.background
    assert zb.max() <= 1e-5 and zb.min() >= -1 - 1e-5
    assert torch.equal(fc.shift_background(d.x, emb, 0.0), d.x)


def test_sample_toy_configurations(emb):
    th = fc.sample_toy(100, emb, "theory", seed=3)
    assert th.y.sum() == 0 and th.x.shape == (100, 12)
    assert torch.all(th.core * th.y[:, None] >= 0)  # core sign equals the label
    assert torch.all((th.background >= 0) & (th.background <= 1))
    df = fc.sample_toy(100, emb, "default", seed=3)
    radius = df.core.norm(dim=1)
    assert torch.allclose(radius, torch.where(df.y > 0, 1.0, 2.0), atol=1e-5)
    assert torch.allclose(emb.embed(df.core, df.background), df.x)
    again = fc.sample_toy(100, emb, "default", seed=3)
    assert torch.equal(again.x, df.x)


def test_label_correlations_known_cases():
    y = torch.tensor([1.0, 1.0, -1.0, -1.0])
    feats = torch.stack([y, -2 * y, torch.ones(4), torch.tensor([1.0, -1.0, 1.0, -1.0])], 1)
    c = fc.label_correlations(feats, y)
    assert torch.allclose(c, torch.tensor([1.0, -1.0, 0.0, 0.0]), atol=1e-6)


def test_activation_asymmetry_brute_force():
    y = torch.tensor([1.0, 1.0, -1.0, -1.0])
    pre = torch.tensor([[1.0, 1.0, -1.0, 2.0],
                        [1.0, -1.0, -1.0, 2.0],
                        [-1.0, 1.0, 1.0, 2.0],
                        [-1.0, -1.0, 1.0, 2.0]])
    a = fc.activation_asymmetry(pre, y)
    assert torch.allclose(a, torch.tensor([1.0, 0.0, 1.0, 0.0]))
    assert fc.activation_asymmetry(pre[None].repeat(3, 1, 1), y).shape == (3, 4)


def test_mean_direction_components_split_known_weights(emb):
    # background part 2 * (1, 1, 1) / sqrt(3) along the mean direction plus (1, -1, 0) orthogonal
    u = torch.ones(3) / math.sqrt(3)
    v = 2 * u + torch.tensor([1.0, -1.0, 0.0])
    w = emb.core @ torch.tensor([1.0, 2.0, 0.0, 0.0]) + emb.background @ v
    along, orth = fc.mean_direction_components(torch.stack([w, -w]), emb)
    assert torch.allclose(along, torch.tensor([2.0, -2.0]), atol=1e-5)
    assert torch.allclose(orth, torch.full((2,), math.sqrt(2)), atol=1e-5)
    # the two parts make up the background norm, and a shift by m moves w . x by -m sqrt(k) along
    bg = fc.projection_norms(torch.stack([w, -w]), emb)[1]
    assert torch.allclose(bg ** 2, along ** 2 + orth ** 2, atol=1e-4)
    x = torch.randn(5, 12)
    moved = fc.shift_background(x, emb, 0.5) @ w - x @ w
    assert torch.allclose(moved, torch.full((5,), -0.5 * math.sqrt(3) * 2.0), atol=1e-4)
    assert fc.mean_direction_components(torch.stack([w, w])[None], emb)[0].shape == (1, 2)


def test_signed_asymmetry_uses_output_sign_and_gates():
    y = torch.tensor([1.0, 1.0, -1.0, -1.0])
    pre = torch.tensor([[1.0, 1.0, -1.0],
                        [1.0, 1.0, -1.0],
                        [-1.0, -1.0, 1.0],
                        [-1.0, 1.0, 1.0]])
    a = torch.tensor([1.0, -1.0, 1.0])
    s = fc.signed_asymmetry(pre, y, a)
    assert torch.allclose(s, torch.tensor([1.0, -0.5, -1.0]))
    assert torch.allclose(s.abs(), fc.activation_asymmetry(pre, y) * torch.tensor([1, 1, 1.0]))
    # tanh' is even: mirror-image pre-activations of the two classes give no asymmetry
    mirror = torch.tensor([[0.3], [2.0], [-0.3], [-2.0]])
    assert torch.allclose(fc.signed_asymmetry(mirror, y, torch.ones(1), act="tanh"),
                          torch.zeros(1), atol=1e-6)
    # ... but different magnitudes do: the small pre-activations have the larger gate
    near_far = torch.tensor([[0.1], [0.1], [3.0], [3.0]])
    assert fc.signed_asymmetry(near_far, y, torch.ones(1), act="tanh") > 0.9
    with pytest.raises(ValueError, match="one entry per neuron"):
        fc.signed_asymmetry(pre, y, torch.ones(2))


def test_centred_background_is_the_same_draw_minus_half(emb):
    d = fc.sample_toy(50, emb, "theory", seed=4)
    c = fc.sample_toy(50, emb, "theory", seed=4, centred=True)
    assert torch.allclose(c.background, d.background - 0.5)
    assert torch.equal(c.core, d.core)


def test_losses_and_accuracy():
    f = torch.tensor([2.0, 0.5, -1.0])
    y = torch.tensor([1.0, 1.0, 1.0])
    assert math.isclose(float(fc.binary_loss("hinge", f, y)), (0 + 0.5 + 2.0) / 3, rel_tol=1e-6)
    expect = np.mean(np.log1p(np.exp(-np.array([2.0, 0.5, -1.0]))))
    assert math.isclose(float(fc.binary_loss("logistic", f, y)), expect, rel_tol=1e-6)
    assert math.isclose(float(fc.binary_accuracy(f, y)), 2 / 3, rel_tol=1e-6)
    assert fc.relative_error(torch.ones(2, 2), 2 * torch.ones(2, 2)) == pytest.approx(0.25)


def test_frozen_output_layer_and_forward():
    net = fc.init_two_layer(["relu", "identity"], 5, 4, [0, 1], frozen_output=True, bias=False)
    assert torch.allclose(net.a[0], torch.tensor([0.25, 0.25, -0.25, -0.25]))
    assert not net.a.requires_grad and [n for n, _ in net.named_parameters()] == ["W"]
    x = torch.randn(7, 5)
    out = net(x)
    W = net.W.detach()
    assert torch.allclose(out[0], torch.relu(x @ W[0].T) @ net.a[0], atol=1e-6)
    assert torch.allclose(out[1], (x @ W[1].T) @ net.a[1], atol=1e-6)


def test_identity_net_is_linear_and_member_order_is_kept():
    net = fc.init_two_layer(["gelu", "identity", "gelu"], 3, 2, [0, 1, 2], bias=True)
    x = torch.randn(5, 3)
    assert torch.allclose(net(2 * x)[1] - net(x)[1], net(x)[1] - net(0 * x)[1], atol=1e-6)
    h = net.hidden(x)
    assert torch.allclose(h[2], torch.nn.functional.gelu(x @ net.W[2].T + net.b[2]), atol=1e-6)


@pytest.mark.parametrize("opt", ["sgd", "adamw"])
def test_the_specs_optimizer_matches_torch(opt):
    # the StackedOptimizer built from the members' specs steps each member as torch.optim would
    # alone; in float64 up to rounding (the hyperparameters are no longer held in float32)
    torch.manual_seed(0)
    w0 = torch.randn(2, 3, 4, dtype=torch.float64)
    x = torch.randn(6, 4, dtype=torch.float64)
    specs = [fc.NetSpec(optimizer=opt, lr=0.05, momentum=0.9, weight_decay=0.1),
             fc.NetSpec(optimizer=opt, lr=0.01, momentum=0.5, weight_decay=0.0)]
    W = torch.nn.Parameter(w0.clone())
    so = fc._optimizer([W, torch.zeros(2, requires_grad=False)], specs)
    assert so.params == [W]  # tensors that do not require grad are left out
    refs = [torch.nn.Parameter(w0[i].clone()) for i in range(2)]
    topts = [torch.optim.SGD([refs[i]], lr=s.lr, momentum=s.momentum, weight_decay=s.weight_decay)
             if opt == "sgd" else torch.optim.AdamW([refs[i]], lr=s.lr, weight_decay=s.weight_decay)
             for i, s in enumerate(specs)]
    for _ in range(5):
        so.step(torch.autograd.grad((torch.tanh(x @ W.transpose(1, 2)) ** 2).sum(), [W]))
        for r, o in zip(refs, topts):
            o.zero_grad()
            (torch.tanh(x @ r.T) ** 2).sum().backward()
            o.step()
    for i in range(2):
        torch.testing.assert_close(W[i].detach(), refs[i].detach(), rtol=1e-12, atol=1e-14)


def test_linear_net_background_only_decays_on_symmetric_data():
    # exact symmetry: each training point appears with its background paired to both labels, so
    # the linear net's background gradient is exactly zero and only weight decay acts
    emb = fc.random_embedding(2, 2, 6, seed=0)
    zc = torch.tensor([[1.0, 0.5], [-1.0, -0.5], [0.5, 1.0], [-0.5, -1.0]])
    zb = torch.tensor([[0.2, 0.9], [0.2, 0.9], [0.7, 0.1], [0.7, 0.1]])
    y = torch.tensor([1.0, -1.0, 1.0, -1.0])
    x = emb.embed(zc, zb)
    spec = fc.NetSpec(act="identity", lr=0.1, momentum=0.0, weight_decay=0.01)
    net = fc.init_two_layer(["identity"], 6, 4, [0], bias=False)
    bg0 = fc.projection_norms(net.W.detach(), emb)[1]
    hist = fc.train_two_layer(net, [spec], x, y, 10, emb, record_every=5)
    bg1 = fc.projection_norms(net.W.detach(), emb)[1]
    assert torch.allclose(bg1, bg0 * (1 - 0.1 * 0.01) ** 10, rtol=1e-4)
    assert hist.step == [0, 5, 10]


def test_shift_last_and_append_background():
    g = torch.Generator().manual_seed(0)
    x = fc.append_background(torch.zeros(3, 2), 4, g)
    assert x.shape == (3, 6) and torch.all(x[:, 2:] >= 0)
    s = fc.shift_last(x, 4, 1.0)
    assert torch.equal(s[:, :2], x[:, :2]) and torch.allclose(s[:, 2:], x[:, 2:] - 1)


def test_presets_construct():
    for cls in (fc.TheoryConfig, fc.DefaultConfig, fc.DistillConfig, fc.Mnist1dConfig):
        q, f = cls.quick(), cls.full()
        assert type(q) is cls and type(f) is cls
    assert fc.TheoryConfig.full().steps * fc.TheoryConfig.full().lr == pytest.approx(
        fc.TheoryConfig.quick().steps * fc.TheoryConfig.quick().lr)
    assert [s.name for s in fc.theory_specs(fc.TheoryConfig())][:2] == ["ReLU", "linear"]


@pytest.mark.parametrize("cls", [fc.TheoryConfig, fc.DefaultConfig, fc.DistillConfig])
def test_toy_configs_share_the_data_model_fields(cls):
    import dataclasses

    shared = [f.name for f in dataclasses.fields(fc.ToyConfig)]
    assert {"n", "d_core", "d_background", "dim", "width", "centred"} <= set(shared)
    assert issubclass(cls, fc.ToyConfig)
    own = {k for k, v in vars(cls).get("__annotations__", {}).items()}
    assert not own & set(shared)  # declared once, in the base
    for name in shared:
        assert getattr(cls(), name) == getattr(fc.ToyConfig(), name)
    # the cross-field rule of the base names the config it runs on
    with pytest.raises(ValueError, match=rf"{cls.__name__}\.dim must be >= d_core \+ "
                                         r"d_background = 12"):
        cls(d_core=6, d_background=6, dim=10)
    cfg = cls(dim=64)
    with pytest.raises(ValueError, match=rf"{cls.__name__}\.dim"):
        cfg.dim = 32
    assert cfg.dim == 64


def test_tiny_theory_run():
    cfg = fc.TheoryConfig(n=40, n_test=20, d_core=2, d_background=2, dim=8, width=4, steps=3,
                          variants=("GELU",), record_every=1)
    res = fc.run_theory(cfg, seed=0, device="cpu")
    assert res.net.W.device.type == "cpu"
    assert res.history.array("background_norm").shape == (4, 3)
    assert res.background_ratio("GELU") > 0
    sweep = fc.shift_sweep(res.net, res.specs, res.test.x, res.test.y, res.emb, [0.0, 1.0])
    assert sweep["loss"].shape == (2, 3) and sweep["margins"].shape == (2, 3, 20)


def test_bad_inputs_raise(emb):
    with pytest.raises(ValueError, match="d_core"):
        fc.random_embedding(10, 10, 15)
    with pytest.raises(TypeError, match="d_core"):
        fc.random_embedding(2.5, 1, 8)
    with pytest.raises(ValueError, match="kind"):
        fc.sample_toy(10, emb, "other")
    with pytest.raises(TypeError, match="emb"):
        fc.sample_toy(10, "emb")
    with pytest.raises(ValueError, match="n"):
        fc.sample_toy(1, emb)
    with pytest.raises(ValueError, match="x"):
        fc.shift_background(torch.zeros(3, 5), emb)
    with pytest.raises(TypeError, match="magnitude"):
        fc.shift_background(torch.zeros(3, 12), emb, "1")
    with pytest.raises(ValueError, match="W"):
        fc.projection_norms(torch.zeros(3, 5), emb)
    with pytest.raises(ValueError, match="both classes"):
        fc.activation_asymmetry(torch.zeros(2, 3), torch.ones(2))
    with pytest.raises(ValueError, match="name must be one of"):
        fc.binary_loss("mse", torch.zeros(2), torch.ones(2))
    with pytest.raises(ValueError, match="loss"):
        fc.NetSpec(loss="mse").validate()
    with pytest.raises(ValueError, match="optimizer"):
        fc.NetSpec(optimizer="adam").validate()
    with pytest.raises(ValueError, match="lr"):
        fc.NetSpec(lr=0).validate()
    with pytest.raises(ValueError, match=r"acts\[0\] must be one of \('relu'"):
        fc.init_two_layer(["swish"], 3, 2, [0])
    with pytest.raises(ValueError, match="width"):
        fc.init_two_layer(["relu"], 3, 3, [0])
    with pytest.raises(ValueError, match="acts and seeds"):
        fc.init_two_layer(["relu"], 3, 2, [0, 1])
    net = fc.init_two_layer(["relu"], 12, 2, [0])
    with pytest.raises(ValueError, match="specs"):
        fc.train_two_layer(net, [fc.NetSpec(), fc.NetSpec()], torch.zeros(4, 12), torch.ones(4), 1, emb)
    with pytest.raises(ValueError, match="act"):
        fc.train_two_layer(net, [fc.NetSpec(act="gelu")], torch.zeros(4, 12), torch.ones(4), 1, emb)
    with pytest.raises(ValueError, match="x"):
        fc.train_two_layer(net, [fc.NetSpec()], torch.zeros(4, 12), torch.ones(5), 1, emb)
    with pytest.raises(ValueError, match="target"):
        fc.relative_error(torch.ones(2, 2), torch.zeros(2, 2))
    with pytest.raises(ValueError, match="variants"):
        fc.theory_specs(fc.TheoryConfig(variants=("swish",)))
    with pytest.raises(TypeError, match="cfg"):
        fc.run_theory(fc.DefaultConfig())
    with pytest.raises(ValueError, match="magnitudes"):
        fc.run_mnist1d(fc.Mnist1dConfig(magnitudes=(0.0, 0.5)))
    with pytest.raises(ValueError, match="n_background"):
        fc.shift_last(torch.zeros(2, 3), 4, 1.0)


def test_tiny_default_and_distillation_runs():
    cfg = fc.DefaultConfig(n=40, d_core=3, d_background=2, dim=8, width=6, steps=3, replicates=2,
                           record_every=1)
    res = fc.run_default(cfg, seed=1, device="cpu")
    assert res.train.x.shape == (2, 40, 8) and res.history.array("ood_acc").shape == (4, 2)
    assert res.members("ReLU (default)") == [0, 1]
    acts = fc.run_default(fc.DefaultConfig(n=40, d_core=3, d_background=2, dim=8, width=6,
                                           steps=2, replicates=2, record_every=1,
                                           activations=("relu", "tanh")), seed=1, device="cpu")
    assert acts.members("tanh (default)") == [2, 3]
    # replicate r of every activation sees the same data and starts from the same weights
    assert torch.equal(acts.train.x[0], acts.train.x[2])
    assert torch.equal(acts.W_init[1], acts.W_init[3])
    assert acts.history.array("background_mean").shape == (3, 4)
    assert np.all(res.history.array("id_acc") <= 1)
    dcfg = fc.DistillConfig(n=40, n_test=20, d_core=3, d_background=2, dim=8, width=6,
                            teacher_steps=2, student_steps=3, record_every=1)
    d = fc.run_distillation(dcfg, seed=0, device="cpu")
    assert d.curve_step == [0, 1, 2, 3] and d.error_id >= 0
    assert len(d.student_background_mean) == 2 and min(d.student_background_mean) >= 0
    assert 0 <= d.probe_teacher["OOD"] <= 1
    # the teacher's representation ignores the background by construction: OOD accuracy = ID
    assert d.teacher_acc["ID"] == d.teacher_acc["OOD"]


def test_off_subspace_direction(emb):
    v = fc.off_subspace_direction(emb, seed=3)
    assert math.isclose(float(v.norm()), 1.0, rel_tol=1e-5)
    assert float((emb.core.T @ v).abs().max()) < 1e-5
    assert float((emb.background.T @ v).abs().max()) < 1e-5
    with pytest.raises(ValueError, match="fill"):
        fc.off_subspace_direction(fc.random_embedding(2, 2, 4))


def _weights_with_components(emb, along, rest_scale, seed):
    """Weights (h, d) whose component along the background mean direction is ``along``."""
    g = torch.Generator().manual_seed(seed)
    k = emb.background.shape[1]
    e = torch.ones(k) / math.sqrt(k)
    r = torch.randn(len(along), k, generator=g)
    r = r - (r @ e)[:, None] * e                      # orthogonal to e inside the background
    core = torch.randn(len(along), emb.core.shape[1], generator=g)
    return (along[:, None] * e + rest_scale * r) @ emb.background.T + core @ emb.core.T


def test_bias_equivalence_known_slope(emb):
    # a change along e that is exactly c times the bias change, after weight decay's factor
    g = torch.Generator().manual_seed(0)
    b0, db = torch.randn(6, generator=g), torch.randn(6, generator=g)
    a0 = torch.randn(6, generator=g)
    rho, c = 0.8, 2.5
    W0 = _weights_with_components(emb, a0, 1.0, 1)
    W1 = _weights_with_components(emb, rho * a0 + c * db, 3.0, 2)   # the rest may change freely
    b1 = rho * b0 + db
    out = fc.bias_equivalence(W0, W1, b0, b1, emb, decay=rho)
    assert out["slope"] == pytest.approx(c, rel=1e-4)
    assert out["corr"] == pytest.approx(1.0, abs=1e-5)
    assert out["bias_change"] == pytest.approx(float((b1 - b0).abs().mean()), rel=1e-6)
    assert out["weight_change"] == pytest.approx(c * float(db.abs().mean()), rel=1e-4)
    # a sign flip of the relation flips slope and correlation; scaling both changes keeps corr
    W1n = _weights_with_components(emb, rho * a0 - c * db, 3.0, 2)
    neg = fc.bias_equivalence(W0, W1n, b0, b1, emb, decay=rho)
    assert neg["slope"] == pytest.approx(-c, rel=1e-4) and neg["corr"] == pytest.approx(-1, abs=1e-5)
    # without the weight-decay correction the same run does not show the identity
    raw = fc.bias_equivalence(W0, W1, b0, b1, emb, decay=1.0)
    assert abs(raw["slope"] - c) > 0.05


def test_bias_equivalence_bad_inputs(emb):
    W = _weights_with_components(emb, torch.arange(4.0), 1.0, 0)
    b = torch.arange(4.0)
    with pytest.raises(ValueError, match="W1"):
        fc.bias_equivalence(W, W[:3], b, b + 1, emb)
    with pytest.raises(ValueError, match="b0"):
        fc.bias_equivalence(W, W, b[:3], b, emb)
    with pytest.raises(ValueError, match="decay"):
        fc.bias_equivalence(W, W, b, b + 1, emb, decay=-0.5)
    with pytest.raises(ValueError, match="b1"):                 # nothing moved: no slope
        fc.bias_equivalence(W, W, b, b, emb)
    with pytest.raises(ValueError, match="W0"):
        fc.bias_equivalence(W[:1], W[:1], b[:1], b[:1] + 1, emb)


def test_gate_free_distillation_student():
    base = fc.DistillConfig(n=40, n_test=20, d_core=3, d_background=2, dim=8, width=6,
                            teacher_steps=3, student_steps=4, record_every=2)
    hid = fc.run_distillation(base, seed=0, device="cpu")
    pre = fc.run_distillation(replace(base, target="preactivation"), seed=0, device="cpu")
    # same teacher (its probe and accuracy), different student fits
    assert pre.probe_teacher == hid.probe_teacher and pre.teacher_acc == hid.teacher_acc
    assert pre.curve_id[0] == pytest.approx(hid.curve_id[0])    # same initialization
    assert pre.curve_id[-1] != hid.curve_id[-1]
    with pytest.raises((ValueError, TypeError), match="target"):
        replace(base, target="logits")


def test_mnist1d_constant_padding_and_centred_linear():
    cfg = fc.Mnist1dConfig(n_train=60, n_test=30, n_background=5, width=8, depth=1, epochs=2,
                           batch_size=16, magnitudes=(0.0, 1.0), centred_linear=True,
                           constant=True)
    out = fc.run_mnist1d(cfg, seed=1, device="cpu")
    assert {"linear, centred", "ReLU MLP, constant", "linear, constant"} <= set(out)
    assert "ReLU MLP, centred" not in out
    for name in ("linear, centred", "ReLU MLP, constant", "linear, constant"):
        assert 0 <= out[name]["OOD"] <= 1 and len(out[name]["shift"]) == 2
