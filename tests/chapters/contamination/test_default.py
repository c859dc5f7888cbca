"""Tests of gtlib.contamination.default, one section per public function."""

import numpy as np
import pytest
import torch
from gtlib import contamination as fc
from tests.chapters.contamination.helpers import _same_history


# =================================================================================================
# contamination.run_default
# =================================================================================================
def test_tiny_default_and_distillation_runs():
    cfg = fc.DefaultConfig(
        n=40,
        d_core=3,
        d_background=2,
        dim=8,
        width=6,
        steps=3,
        replicates=2,
        record_every=1,
    )
    res = fc.run_default(cfg, seed=1, device="cpu")
    assert res.train.x.shape == (2, 40, 8) and res.history.array(
        "ood_acc"
    ).shape == (4, 2)
    assert res.members("ReLU (default)") == [0, 1]
    acts = fc.run_default(
        fc.DefaultConfig(
            n=40,
            d_core=3,
            d_background=2,
            dim=8,
            width=6,
            steps=2,
            replicates=2,
            record_every=1,
            activations=("relu", "tanh"),
        ),
        seed=1,
        device="cpu",
    )
    assert acts.members("tanh (default)") == [2, 3]
    # replicate r of every activation sees the same data and starts from the same weights
    assert torch.equal(acts.train.x[0], acts.train.x[2])
    assert torch.equal(acts.W_init[1], acts.W_init[3])
    assert acts.history.array("background_mean").shape == (3, 4)
    assert np.all(res.history.array("id_acc") <= 1)
    dcfg = fc.DistillConfig(
        n=40,
        n_test=20,
        d_core=3,
        d_background=2,
        dim=8,
        width=6,
        teacher_steps=2,
        student_steps=3,
        record_every=1,
    )
    d = fc.run_distillation(dcfg, seed=0, device="cpu")
    assert d.curve_step == [0, 1, 2, 3] and d.error_id >= 0
    assert (
        len(d.student_background_mean) == 2 and min(d.student_background_mean) >= 0
    )
    assert 0 <= d.probe_teacher["OOD"] <= 1
    # the teacher's representation ignores the background by construction: OOD accuracy = ID
    assert d.teacher_acc["ID"] == d.teacher_acc["OOD"]


@pytest.mark.reference
@pytest.mark.parametrize("seed,centred", [(2, False), (1, True)])
def test_run_default_is_its_recipe(seed, centred):
    cfg = fc.DefaultConfig(
        n=7,
        d_core=2,
        d_background=3,
        dim=6,
        width=4,
        steps=4,
        lr=0.02,
        weight_decay=0.03,
        replicates=2,
        record_every=3,
        centred=centred,
        activations=("tanh", "relu"),
    )
    res = fc.run_default(cfg, seed=seed, device="cpu")
    emb = fc.random_embedding(2, 3, 6, seed=seed)

    def stacked(offset):
        parts = [
            fc.sample_toy(
                7,
                emb,
                "default",
                seed=1000 * seed + 100 * r + offset,
                centred=centred,
            )
            for r in range(2)
        ] * 2
        return fc.ToyData(
            *(
                torch.stack([getattr(p, k) for p in parts])
                for k in ("x", "y", "core", "background")
            )
        )

    train, test = stacked(3), stacked(4)
    specs = [
        fc.NetSpec(
            act=a,
            loss="logistic",
            optimizer="adamw",
            lr=0.02,
            weight_decay=0.03,
            label=f"{lab} (default)",
        )
        for a, lab in (("tanh", "tanh"), ("relu", "ReLU"))
        for _ in range(2)
    ]
    assert res.specs == specs
    seeds = [1000 * seed + 50 + r for _ in range(2) for r in range(2)]
    net = fc.init_two_layer(
        ["tanh", "tanh", "relu", "relu"], 6, 4, seeds, frozen_output=False, bias=True
    )
    assert torch.equal(res.W_init, net.W.detach()) and torch.equal(
        res.b_init, net.b.detach()
    )
    hist = fc.train_two_layer(
        net, specs, train.x, train.y, 4, emb, train.x, train.y, record_every=3
    )
    for a, b in ((res.train, train), (res.test, test)):
        assert all(
            torch.equal(getattr(a, k), getattr(b, k))
            for k in ("x", "y", "core", "background")
        )
    for k in ("W", "b", "a", "c"):
        torch.testing.assert_close(
            getattr(res.net, k).detach(),
            getattr(net, k).detach(),
            rtol=1e-6,
            atol=1e-7,
        )
    assert res.net.a.requires_grad
    _same_history(res.history, hist)
    assert res.members("ReLU (default)") == [2, 3]
    with pytest.raises(ValueError, match="activations"):
        fc.run_default(
            fc.DefaultConfig(
                n=4,
                d_core=1,
                d_background=1,
                dim=3,
                width=2,
                steps=1,
                activations=(),
            )
        )
