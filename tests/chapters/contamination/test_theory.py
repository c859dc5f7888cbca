"""Tests of gtlib.contamination.theory, one section per public function."""

import pytest
import torch
from gtlib import contamination as fc
from tests.chapters.contamination.helpers import nan_at, refused


# =================================================================================================
# contamination.VARIANTS
# =================================================================================================
@pytest.mark.reference
def test_constants_and_config_defaults_are_the_documented_ones():
    assert fc.KINDS == ("theory", "default") and fc.BINARY_LOSSES == (
        "hinge",
        "logistic",
    )
    assert fc.OPTIMIZERS == ("sgd", "adamw")
    assert fc.VARIANTS == (
        "GELU",
        "SiLU",
        "leaky ReLU",
        "tanh",
        "sigmoid",
        "AdamW",
        "logistic loss",
    )
    assert fc.ACT_LABELS["relu"] == "ReLU" and fc.ACT_LABELS["identity"] == "linear"
    toy = dict(
        n=1000,
        d_core=32,
        d_background=32,
        dim=256,
        width=256,
        weight_decay=1e-3,
        centred=False,
    )
    want = {
        fc.ToyConfig: toy,
        fc.TheoryConfig: dict(
            toy,
            n_test=1000,
            steps=400,
            lr=0.05,
            adamw_lr=2.5e-3,
            momentum=0.9,
            bias=True,
            seeds_per_variant=1,
            record_every=10,
            variants=fc.VARIANTS,
        ),
        fc.DefaultConfig: dict(
            toy,
            steps=1000,
            lr=1e-3,
            replicates=8,
            record_every=20,
            activations=("relu",),
        ),
        fc.DistillConfig: dict(
            toy,
            n_test=1000,
            teacher_steps=1000,
            student_steps=1000,
            lr=1e-3,
            record_every=25,
            target="hidden",
            longer_steps=0,
        ),
        fc.Mnist1dConfig: dict(
            n_train=4000,
            n_test=2000,
            n_background=40,
            width=256,
            depth=2,
            epochs=30,
            batch_size=128,
            lr=1e-3,
            weight_decay=1e-2,
            magnitudes=(0.0, 0.25, 0.5, 0.75, 1.0),
            centred_mlp=False,
            centred_linear=False,
            constant=False,
            null_replicates=0,
        ),
    }
    for cls, values in want.items():
        cfg = cls()
        got = {k: getattr(cfg, k) for k in values}
        assert got == values, cls.__name__
    full = {
        fc.TheoryConfig: dict(
            steps=20_000,
            lr=1e-3,
            adamw_lr=1e-3,
            seeds_per_variant=3,
            record_every=200,
        ),
        fc.DefaultConfig: dict(steps=20_000, replicates=16, record_every=250),
        fc.DistillConfig: dict(
            teacher_steps=5000, student_steps=5000, record_every=100
        ),
        fc.Mnist1dConfig: dict(width=1024, epochs=100),
    }
    for cls, values in full.items():
        cfg = cls.full()
        assert {k: getattr(cfg, k) for k in values} == values, cls.__name__
        assert cfg.n == 1000 if hasattr(cfg, "n") else cfg.n_train == 4000


# =================================================================================================
# contamination.theory_specs
# =================================================================================================
def test_presets_construct():
    for cls in (
        fc.TheoryConfig,
        fc.DefaultConfig,
        fc.DistillConfig,
        fc.Mnist1dConfig,
    ):
        q, f = cls.quick(), cls.full()
        assert type(q) is cls and type(f) is cls
    assert fc.TheoryConfig.full().steps * fc.TheoryConfig.full().lr == pytest.approx(
        fc.TheoryConfig.quick().steps * fc.TheoryConfig.quick().lr
    )
    assert [s.name for s in fc.theory_specs(fc.TheoryConfig())][:2] == [
        "ReLU",
        "linear",
    ]


@pytest.mark.reference
def test_theory_specs_follow_the_config_and_the_variant_order():
    cfg = fc.TheoryConfig(
        lr=0.07,
        adamw_lr=0.004,
        momentum=0.3,
        weight_decay=0.02,
        variants=(
            "logistic loss",
            "AdamW",
            "sigmoid",
            "leaky ReLU",
            "SiLU",
            "tanh",
            "GELU",
        ),
    )
    specs = fc.theory_specs(cfg)
    got = [
        (s.name, s.act, s.loss, s.optimizer, s.lr, s.momentum, s.weight_decay)
        for s in specs
    ]
    sgd = (0.07, 0.3, 0.02)
    assert got == [
        ("ReLU", "relu", "hinge", "sgd") + sgd,
        ("linear", "identity", "hinge", "sgd") + sgd,
        ("logistic loss", "relu", "logistic", "sgd") + sgd,
        ("AdamW", "relu", "hinge", "adamw", 0.004, 0.3, 0.02),
        ("sigmoid", "sigmoid", "hinge", "sgd") + sgd,
        ("leaky ReLU", "leaky_relu", "hinge", "sgd") + sgd,
        ("SiLU", "silu", "hinge", "sgd") + sgd,
        ("tanh", "tanh", "hinge", "sgd") + sgd,
        ("GELU", "gelu", "hinge", "sgd") + sgd,
    ]
    assert [s.name for s in fc.theory_specs(fc.TheoryConfig(variants=()))] == [
        "ReLU",
        "linear",
    ]
    with pytest.raises(ValueError, match="variants"):
        fc.theory_specs(fc.TheoryConfig(variants=("linear",)))


# =================================================================================================
# contamination.run_theory
# =================================================================================================
def test_tiny_theory_run():
    cfg = fc.TheoryConfig(
        n=40,
        n_test=20,
        d_core=2,
        d_background=2,
        dim=8,
        width=4,
        steps=3,
        variants=("GELU",),
        record_every=1,
    )
    res = fc.run_theory(cfg, seed=0, device="cpu")
    assert res.net.W.device.type == "cpu"
    assert res.history.array("background_norm").shape == (4, 3)
    assert res.background_ratio("GELU") > 0
    sweep = fc.shift_sweep(
        res.net, res.specs, res.test.x, res.test.y, res.emb, [0.0, 1.0]
    )
    assert sweep["loss"].shape == (2, 3) and sweep["margins"].shape == (2, 3, 20)


@pytest.mark.reference
def test_run_theory_seed_and_device_defaults():
    cfg = fc.TheoryConfig(
        n=6,
        n_test=4,
        d_core=2,
        d_background=2,
        dim=5,
        width=2,
        steps=1,
        variants=(),
        record_every=1,
    )
    a, b = fc.run_theory(cfg), fc.run_theory(cfg, seed=0, device="cpu")
    assert torch.equal(a.net.W, b.net.W) and torch.equal(a.train.x, b.train.x)
    c = fc.run_theory(cfg, seed=3, device="cpu")
    assert not torch.equal(c.train.x, b.train.x) and not torch.equal(
        c.W_init, b.W_init
    )


@pytest.mark.boundary
def test_experiments_check_seed_device_and_config():
    cfg = fc.TheoryConfig(
        n=20,
        n_test=10,
        d_core=2,
        d_background=2,
        dim=6,
        width=4,
        steps=1,
        variants=(),
        record_every=1,
    )
    refused(ValueError, "seed", fc.run_theory, cfg, seed=2**64)
    refused(ValueError, "device", fc.run_theory, cfg, device="gpu9")
    refused(TypeError, "device", fc.run_default, fc.DefaultConfig(), device=3.5)
    refused(TypeError, "cfg", fc.run_distillation, {})
    refused(TypeError, "cfg", fc.run_mnist1d, None)
    refused(TypeError, "cfg", fc.theory_specs, None)
    res = fc.run_theory(cfg, seed=0, device="cpu")
    refused(ValueError, "label", res.members, "bogus")
    refused(TypeError, "label", res.final, "id_acc", 3)
    refused(ValueError, "name", res.final, "bogus", "ReLU")
    refused(ValueError, "name", res.history.array, "bogus")
    refused(
        TypeError, "initial", res.preactivations, res.train.x, "ReLU", initial="yes"
    )
    refused(ValueError, "x", res.preactivations, nan_at(res.train.x), "ReLU")
    refused(ValueError, "x", res.preactivations, res.train.x[:0], "ReLU")
    assert res.preactivations(res.train.x, "ReLU", initial=True).shape == (20, 4)
