"""Tests of gtlib.contamination.data, one section per public function."""

import math
import numpy as np
import pytest
import torch
from gtlib import contamination as fc
from gtlib.contamination import label_correlations
from tests.chapters.contamination.helpers import (
    _same_history,
    axis_embedding,
    NAN,
    nan_at,
    refused,
)


# =================================================================================================
# contamination.Embedding
# =================================================================================================
@pytest.mark.reference
def test_embedding_refuses_bases_that_are_not_orthonormal():
    eye = torch.eye(4)
    fc.Embedding(eye[:, :2], eye[:, 2:])
    with pytest.raises(ValueError, match="orthonormal"):
        fc.Embedding(eye[:, :2], eye[:, 1:3])  # overlapping columns
    with pytest.raises(ValueError, match="orthonormal"):
        fc.Embedding(eye[:, :2] * 1.001, eye[:, 2:])  # gap 2e-3 > 1e-4
    fc.Embedding(eye[:, :2] * (1 + 2e-5), eye[:, 2:])  # gap 4e-5 < 1e-4 passes
    with pytest.raises(ValueError, match="at most 4"):
        fc.Embedding(torch.eye(4), eye[:, :1])


@pytest.mark.boundary
def test_embedding_checks_its_bases(emb_bou):
    refused(
        ValueError, "core", fc.Embedding, nan_at(emb_bou.core), emb_bou.background
    )
    refused(ValueError, "core", fc.Embedding, emb_bou.core[:0], emb_bou.background)
    refused(ValueError, "core", fc.Embedding, emb_bou.core[0], emb_bou.background)
    refused(TypeError, "core", fc.Embedding, emb_bou.core.long(), emb_bou.background)
    refused(TypeError, "core", fc.Embedding, None, emb_bou.background)
    refused(
        TypeError,
        "background",
        fc.Embedding,
        emb_bou.core,
        emb_bou.background.tolist(),
    )
    refused(
        ValueError, "orthonormal", fc.Embedding, torch.ones(10, 3), torch.ones(10, 3)
    )
    same = fc.Embedding(
        emb_bou.core.double(), emb_bou.background.double()
    )  # float64 bases are fine
    assert same.dim == 10


# =================================================================================================
# contamination.random_embedding
# =================================================================================================
@pytest.mark.reference
def test_random_embedding_is_the_qr_of_a_seeded_gaussian_split_core_first():
    emb = fc.random_embedding(2, 3, 7, seed=5)
    g = torch.Generator().manual_seed(5)
    q = np.linalg.qr(torch.randn(7, 5, generator=g, dtype=torch.float64).numpy())[0]
    assert emb.core.shape == (7, 2) and emb.background.shape == (7, 3)
    assert emb.core.dtype == torch.float32 and emb.dim == 7
    np.testing.assert_allclose(np.abs(emb.core.numpy()), np.abs(q[:, :2]), atol=1e-6)
    np.testing.assert_allclose(
        np.abs(emb.background.numpy()), np.abs(q[:, 2:]), atol=1e-6
    )
    P = torch.cat([emb.core, emb.background], 1).double()
    np.testing.assert_allclose((P.T @ P).numpy(), np.eye(5), atol=1e-6)
    # the seed and every size matter; the default seed is 0
    assert not torch.allclose(fc.random_embedding(2, 3, 7, seed=6).core, emb.core)
    assert torch.equal(
        fc.random_embedding(2, 3, 7).core, fc.random_embedding(2, 3, 7, seed=0).core
    )
    d = fc.random_embedding()
    assert (d.core.shape, d.background.shape) == ((256, 32), (256, 32))
    # d_core + d_background == dim is allowed (the subspaces fill R^d)
    full = fc.random_embedding(2, 2, 4, seed=1)
    assert full.dim == 4
    with pytest.raises(ValueError, match="d_core"):
        fc.random_embedding(3, 2, 4)


# =================================================================================================
# contamination.ToyData
# =================================================================================================
@pytest.mark.reference
def test_toy_data_checks_rows():
    x = torch.zeros(3, 6)
    fc.ToyData(
        x, torch.tensor([1.0, -1.0, 1.0]), torch.zeros(3, 2), torch.zeros(3, 3)
    )
    with pytest.raises(ValueError, match="background"):
        fc.ToyData(
            x, torch.tensor([1.0, -1.0, 1.0]), torch.zeros(3, 2), torch.zeros(2, 3)
        )
    with pytest.raises(ValueError, match="y"):
        fc.ToyData(
            x, torch.tensor([1.0, 0.0, 1.0]), torch.zeros(3, 2), torch.zeros(3, 3)
        )


# =================================================================================================
# contamination.sample_core
# =================================================================================================
@pytest.mark.reference
@pytest.mark.parametrize("n", [5, 6])
def test_sample_core_theory_replays_the_generator(n):
    g = torch.Generator().manual_seed(3)
    z, y = fc.sample_core(n, "theory", 3, g)
    ref = torch.Generator().manual_seed(3)
    u = torch.rand(n, 3, generator=ref)
    want_y = torch.tensor([1.0] * (n // 2) + [-1.0] * (n - n // 2))
    assert torch.equal(y, want_y)
    assert torch.equal(z, u * want_y[:, None])


@pytest.mark.reference
def test_sample_core_default_lies_on_spheres_of_radius_one_and_two():
    g = torch.Generator().manual_seed(4)
    z, y = fc.sample_core(7, "default", 3, g)
    ref = torch.Generator().manual_seed(4)
    r = torch.randn(7, 3, generator=ref).double().numpy()
    r = r / np.linalg.norm(r, axis=1, keepdims=True)
    radius = np.array([1, 1, 1, 2, 2, 2, 2], dtype=float)
    np.testing.assert_allclose(z.numpy(), r * radius[:, None], rtol=1e-6, atol=1e-7)
    assert y.tolist() == [1, 1, 1, -1, -1, -1, -1]


@pytest.mark.boundary
def test_seeds_sizes_and_generators():
    refused(ValueError, "seed", fc.random_embedding, 3, 3, 10, seed=2**64)
    refused(ValueError, "seed", fc.random_embedding, 3, 3, 10, seed=-1)
    refused(ValueError, "d_core", fc.sample_core, 10, "theory", 0, torch.Generator())
    refused(
        TypeError, "d_core", fc.sample_core, 10, "theory", True, torch.Generator()
    )
    refused(TypeError, "generator", fc.sample_core, 10, "theory", 3, None)
    refused(ValueError, "kind", fc.sample_core, 10, "bogus", 3, torch.Generator())


# =================================================================================================
# contamination.sample_toy
# =================================================================================================
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


def test_centred_background_is_the_same_draw_minus_half(emb):
    d = fc.sample_toy(50, emb, "theory", seed=4)
    c = fc.sample_toy(50, emb, "theory", seed=4, centred=True)
    assert torch.allclose(c.background, d.background - 0.5)
    assert torch.equal(c.core, d.core)


@pytest.mark.reference
def test_sample_toy_draws_core_then_background_from_one_seeded_stream():
    emb = axis_embedding()
    d = fc.sample_toy(5, emb, seed=7)  # kind "theory" by default
    g = torch.Generator().manual_seed(7)
    u = torch.rand(5, 2, generator=g)
    zb = torch.rand(5, 3, generator=g)
    y = torch.tensor([1.0, 1.0, -1.0, -1.0, -1.0])
    assert torch.equal(d.y, y)
    assert torch.equal(d.core, u * y[:, None])
    assert torch.equal(d.background, zb)
    assert torch.equal(d.x, emb.embed(u * y[:, None], zb))
    c = fc.sample_toy(5, emb, seed=7, centred=True)
    assert torch.equal(c.background, zb - 0.5) and torch.equal(c.core, d.core)
    df = fc.sample_toy(5, emb, "default", seed=7)
    assert torch.allclose(
        df.core.norm(dim=1), torch.tensor([1.0, 1.0, 2.0, 2.0, 2.0])
    )
    # the default seed is 0; different seeds give different samples
    assert torch.equal(fc.sample_toy(5, emb).x, fc.sample_toy(5, emb, seed=0).x)
    assert not torch.equal(fc.sample_toy(5, emb, seed=8).x, d.x)


@pytest.mark.reference
@pytest.mark.parametrize("seed,centred,bias", [(1, False, True), (2, True, False)])
def test_run_theory_is_its_recipe(seed, centred, bias):
    cfg = fc.TheoryConfig(
        n=9,
        n_test=7,
        d_core=2,
        d_background=3,
        dim=7,
        width=4,
        steps=5,
        lr=0.2,
        adamw_lr=0.03,
        momentum=0.6,
        weight_decay=0.05,
        bias=bias,
        seeds_per_variant=2,
        record_every=2,
        centred=centred,
        variants=("tanh", "AdamW"),
    )
    res = fc.run_theory(cfg, seed=seed, device="cpu")
    emb = fc.random_embedding(2, 3, 7, seed=seed)
    train = fc.sample_toy(9, emb, "theory", seed=1000 * seed + 1, centred=centred)
    test = fc.sample_toy(7, emb, "theory", seed=1000 * seed + 2, centred=centred)
    specs = [s for s in fc.theory_specs(cfg) for _ in range(2)]
    seeds = [1000 * seed + 10 + i for i in range(8)]
    net = fc.init_two_layer(
        [s.act for s in specs], 7, 4, seeds, frozen_output=True, bias=bias
    )
    assert torch.equal(res.W_init, net.W.detach())
    assert (res.b_init is None) == (not bias)
    if bias:
        assert torch.equal(res.b_init, net.b.detach())
    hist = fc.train_two_layer(
        net, specs, train.x, train.y, 5, emb, test.x, test.y, record_every=2
    )
    assert torch.equal(res.emb.core, emb.core)
    for a, b in ((res.train, train), (res.test, test)):
        assert all(
            torch.equal(getattr(a, k), getattr(b, k))
            for k in ("x", "y", "core", "background")
        )
    assert res.specs == specs and res.cfg is cfg
    torch.testing.assert_close(
        res.net.W.detach(), net.W.detach(), rtol=1e-6, atol=1e-7
    )
    assert not res.net.a.requires_grad
    _same_history(res.history, hist)
    assert res.history.step == [0, 2, 4, 5]

    # the result's helpers against the history and weights read directly
    assert res.members("AdamW") == [6, 7] and res.members("linear") == [2, 3]
    bg = hist.array("background_norm")
    assert res.background_ratio("tanh") == pytest.approx(
        float(np.mean(bg[-1, 4:6] / bg[0, 4:6])), rel=1e-6
    )
    assert res.final("ood_loss", "ReLU") == pytest.approx(
        float(hist.array("ood_loss")[-1, :2].mean()), rel=1e-6
    )
    assert res.final("id_acc", "AdamW") == pytest.approx(
        float(hist.array("id_acc")[-1, 6:].mean())
    )
    x = test.x[:3]
    W0, W1 = res.W_init[4], res.net.W.detach()[4]
    b0 = res.b_init[4] if bias else 0.0
    b1 = res.net.b.detach()[4] if bias else 0.0
    torch.testing.assert_close(
        res.preactivations(x, "tanh", initial=True), x @ W0.T + b0
    )
    torch.testing.assert_close(res.preactivations(x, "tanh"), x @ W1.T + b1)
    torch.testing.assert_close(
        res.preactivations(x, "linear", initial=True),
        x @ res.W_init[2].T + (res.b_init[2] if bias else 0.0),
    )
    with pytest.raises(ValueError, match="label"):
        res.members("GELU")


# =================================================================================================
# contamination.shift_background
# =================================================================================================
def test_shift_leaves_core_and_maps_uniform_to_negative_uniform(emb):
    d = fc.sample_toy(500, emb, "theory", seed=0)
    xs = fc.shift_background(d.x, emb, 1.0)
    assert torch.allclose(xs @ emb.core, d.x @ emb.core, atol=1e-5)
    assert torch.allclose(xs @ emb.background, d.background - 1.0, atol=1e-5)
    zb = xs @ emb.background
    assert zb.max() <= 1e-5 and zb.min() >= -1 - 1e-5
    assert torch.equal(fc.shift_background(d.x, emb, 0.0), d.x)


@pytest.mark.reference
def test_shift_background_subtracts_the_magnitude_from_background_coordinates_only():
    emb = axis_embedding()
    x = torch.arange(12, dtype=torch.float32).reshape(2, 6)
    s = fc.shift_background(x, emb, 0.75)
    want = x.clone()
    want[:, [1, 5, 2]] -= 0.75
    assert torch.equal(s, want)
    assert torch.equal(
        fc.shift_background(x, emb), x - torch.tensor([0, 1, 1, 0, 0, 1.0])
    )
    # a stack (E, n, d) is shifted alike, member by member
    s3 = fc.shift_background(torch.stack([x, 2 * x]), emb, -0.5)
    assert torch.equal(s3[1], fc.shift_background(2 * x, emb, -0.5))


@pytest.mark.boundary
def test_sample_toy_flags_and_shift(emb_bou, toy):
    refused(TypeError, "centred", fc.sample_toy, 10, emb_bou, centred="yes")
    refused(TypeError, "centred", fc.sample_toy, 10, emb_bou, centred=None)
    refused(ValueError, "x", fc.shift_background, nan_at(toy.x), emb_bou)
    refused(ValueError, "x", fc.shift_background, toy.x[:0], emb_bou)
    refused(TypeError, "x", fc.shift_background, toy.x.long(), emb_bou)
    refused(ValueError, "magnitude", fc.shift_background, toy.x, emb_bou, math.inf)
    refused(
        ValueError, "emb", fc.off_subspace_direction, fc.random_embedding(5, 5, 10)
    )


# =================================================================================================
# contamination.off_subspace_direction
# =================================================================================================
def test_off_subspace_direction(emb):
    v = fc.off_subspace_direction(emb, seed=3)
    assert math.isclose(float(v.norm()), 1.0, rel_tol=1e-5)
    assert float((emb.core.T @ v).abs().max()) < 1e-5
    assert float((emb.background.T @ v).abs().max()) < 1e-5
    with pytest.raises(ValueError, match="fill"):
        fc.off_subspace_direction(fc.random_embedding(2, 2, 4))


@pytest.mark.reference
def test_off_subspace_direction_is_the_seeded_gaussian_projected_out_of_both_subspaces():
    emb = axis_embedding()
    v = fc.off_subspace_direction(emb, seed=2)
    g = torch.Generator().manual_seed(2)
    r = torch.randn(6, generator=g)
    # only coordinate 3 is outside both subspaces: the direction is sign(r_3) e_3
    want = torch.zeros(6)
    want[3] = float(torch.sign(r[3]))
    assert torch.allclose(v, want, atol=1e-7)
    emb2 = fc.random_embedding(2, 1, 6, seed=0)
    a, b = (
        fc.off_subspace_direction(emb2, seed=1),
        fc.off_subspace_direction(emb2, seed=4),
    )
    P = torch.cat([emb2.core, emb2.background], 1).double().numpy()
    g = torch.Generator().manual_seed(1)
    r = torch.randn(6, generator=g).double().numpy()
    r = r - P @ (P.T @ r)
    np.testing.assert_allclose(a.numpy(), r / np.linalg.norm(r), atol=1e-6)
    assert not torch.allclose(a, b)
    assert torch.equal(
        fc.off_subspace_direction(emb2), fc.off_subspace_direction(emb2, seed=0)
    )


# =================================================================================================
# contamination.label_correlations
# =================================================================================================
def test_label_correlations_known_cases():
    y = torch.tensor([1.0, 1.0, -1.0, -1.0])
    feats = torch.stack(
        [y, -2 * y, torch.ones(4), torch.tensor([1.0, -1.0, 1.0, -1.0])], 1
    )
    c = fc.label_correlations(feats, y)
    assert torch.allclose(c, torch.tensor([1.0, -1.0, 0.0, 0.0]), atol=1e-6)


@pytest.mark.reference
def test_label_correlations_are_pearsons_r():
    rng = np.random.default_rng(0)
    y = np.array(
        [1, 1, 1, 1, -1, -1, 1, -1, 1], dtype=np.float64
    )  # 6 vs 3: unbalanced
    feats = rng.normal(size=(9, 4)) + np.array([0.0, 3.0, -1.0, 0.5]) * y[:, None]
    feats[:, 2] *= 10.0
    c = fc.label_correlations(
        torch.tensor(feats, dtype=torch.float32),
        torch.tensor(y, dtype=torch.float32),
    )
    want = [np.corrcoef(feats[:, j], y)[0, 1] for j in range(4)]
    np.testing.assert_allclose(c.numpy(), want, rtol=1e-5, atol=1e-6)
    assert c.dtype == torch.float32
    const = fc.label_correlations(
        torch.full((3, 2), 2.5), torch.tensor([1.0, -1.0, -1.0])
    )
    assert torch.equal(const, torch.zeros(2))
    with pytest.raises(ValueError, match="rows"):
        fc.label_correlations(torch.zeros(3, 2), torch.tensor([1.0, -1.0]))


@pytest.mark.boundary
def test_labels_are_plus_minus_one_floats(toy):
    refused(ValueError, "y", fc.label_correlations, toy.x, (toy.y > 0).float())
    refused(ValueError, "y", fc.label_correlations, toy.x, nan_at(toy.y))
    refused(TypeError, "features", fc.label_correlations, toy.x.long(), toy.y)
    refused(ValueError, "features", fc.label_correlations, nan_at(toy.x), toy.y)
    refused(TypeError, "y", fc.binary_accuracy, torch.zeros(2, 20), toy.y.long())
    refused(
        ValueError,
        "ToyData.y",
        fc.ToyData,
        toy.x,
        2 * toy.y,
        toy.core,
        toy.background,
    )


@pytest.mark.mutation
def test_label_correlations_are_pearsons_on_unbalanced_labels():
    g = torch.Generator().manual_seed(0)
    f = torch.randn(9, 3, generator=g)
    y = torch.tensor([1.0, 1, 1, 1, 1, 1, 1, -1, -1])
    ref = [np.corrcoef(f[:, j].numpy(), y.numpy())[0, 1] for j in range(3)]
    np.testing.assert_allclose(
        label_correlations(f, y).numpy(), ref, rtol=1e-5, atol=1e-6
    )


# =================================================================================================
# contamination.ToyConfig
# =================================================================================================
@pytest.mark.parametrize(
    "cls", [fc.TheoryConfig, fc.DefaultConfig, fc.DistillConfig]
)
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
    with pytest.raises(
        ValueError,
        match=rf"{cls.__name__}\.dim must be >= d_core \+ "
        r"d_background = 12",
    ):
        cls(d_core=6, d_background=6, dim=10)
    cfg = cls(dim=64)
    with pytest.raises(ValueError, match=rf"{cls.__name__}\.dim"):
        cfg.dim = 32
    assert cfg.dim == 64


# =================================================================================================
# contamination.orthogonal_shifts
# =================================================================================================
@pytest.mark.reference
def test_orthogonal_shifts_match_the_mean_shift_in_norm_and_are_orthogonal_to_it():
    v = fc.orthogonal_shifts(6, 0.5, 3, seed=4)
    assert v.shape == (3, 6) and v.dtype == torch.float32
    assert torch.allclose(
        v.norm(dim=1), torch.full((3,), 0.5 * math.sqrt(6)), rtol=1e-5
    )
    assert float(v.sum(1).abs().max()) < 1e-5  # no component along 1
    r = (
        torch.randn(3, 6, generator=torch.Generator().manual_seed(4))
        .double()
        .numpy()
    )
    r = r - r.mean(1, keepdims=True)
    want = 0.5 * math.sqrt(6) * r / np.linalg.norm(r, axis=1, keepdims=True)
    np.testing.assert_allclose(v.numpy(), want, atol=1e-6)
    assert torch.equal(
        fc.orthogonal_shifts(6, 0.5, 3), fc.orthogonal_shifts(6, 0.5, 3, seed=0)
    )
    assert torch.allclose(
        fc.orthogonal_shifts(6, -1.0, 3, seed=4), -2 * v, atol=1e-6
    )


@pytest.mark.boundary
def test_orthogonal_shifts_refuse_bad_input():
    with pytest.raises(ValueError, match="n_background"):
        fc.orthogonal_shifts(1, 0.5, 3)
    refused(ValueError, "n_background", fc.orthogonal_shifts, 0, 0.5, 3)
    refused(ValueError, "magnitude", fc.orthogonal_shifts, 4, NAN, 3)
    refused(ValueError, "count", fc.orthogonal_shifts, 4, 0.5, 0)
    refused(ValueError, "seed", fc.orthogonal_shifts, 4, 0.5, 3, -1)


@pytest.mark.reference
def test_mnist1d_mlp_replicates_are_their_recipe():
    from gtlib.data import mnist1d
    from gtlib.models import MLP
    from gtlib.train import TrainConfig, accuracy, train

    seed = 2
    cfg = fc.Mnist1dConfig(
        n_train=60,
        n_test=30,
        n_background=5,
        width=8,
        depth=1,
        epochs=2,
        batch_size=16,
        lr=0.05,
        magnitudes=(0.0, 1.0),
        mlp_replicates=2,
        direction_magnitude=0.7,
    )
    out = fc.run_mnist1d(cfg, seed=seed, device="cpu")
    reps = out["MLP replicates"]
    assert len(reps) == 2 and "linear replicates" not in out
    ds = mnist1d(60, 30, device="cpu")
    for j, rep in enumerate(reps):
        g = torch.Generator().manual_seed(
            1000 * seed + 500 + j
        )  # its own background draw
        x_tr = fc.append_background(ds.x, 5, g)
        x_te = fc.append_background(ds.x_test, 5, g)
        dirs = fc.orthogonal_shifts(5, 0.7, 5, seed=1000 * seed + 450 + j)
        # the MLP, then a linear classifier on the same draw with the same seeds
        for got, width, depth in ((rep, 8, 1), (rep["linear"], 1, 0)):
            torch.manual_seed(1000 * seed + 800 + j)
            model = MLP(45, width, depth, 10)
            train(
                model,
                x_tr,
                ds.y,
                TrainConfig(
                    optimizer="adamw",
                    lr=0.05,
                    weight_decay=1e-2,
                    batch_size=16,
                    epochs=2,
                    seed=1000 * seed + 900 + j,
                    check_every=10**9,
                ),
            )
            with torch.no_grad():
                assert got["ID"] == pytest.approx(accuracy(model(x_te), ds.y_test))
                along = x_te.clone()
                along[:, -5:] -= 0.7
                assert got["along"] == pytest.approx(
                    accuracy(model(along), ds.y_test)
                )
                orth = []
                for v in dirs:
                    xs = x_te.clone()
                    xs[:, -5:] -= v
                    orth.append(accuracy(model(xs), ds.y_test))
            assert got["orthogonal"] == pytest.approx(orth)
    assert set(reps[0]["linear"]) == {"ID", "along", "orthogonal"}
